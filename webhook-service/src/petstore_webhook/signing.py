"""The Standard Webhooks headers of one request: the receiver checks the body came from us."""

from __future__ import annotations

from datetime import datetime

from standardwebhooks import Webhook

USER_AGENT = "petstore-webhook-service"


def signed_headers(*, secret: str, message_id: str, body: bytes, now: datetime) -> dict[str, str]:
    """webhook-id (the event's id: the same on every retry, so receivers can drop repeats),
    webhook-timestamp (this attempt's, seconds) and webhook-signature over both and the body."""
    return {
        "content-type": "application/json",
        "user-agent": USER_AGENT,
        "webhook-id": message_id,
        "webhook-timestamp": str(int(now.timestamp())),
        "webhook-signature": Webhook(secret).sign(message_id, now, body.decode()),
    }
