"""The webhook receiver the tests and developers use: it tells a genuine delivery from a forged
one, answers as scripted, and serves TLS only to a client trusting its own CA."""

from __future__ import annotations

import asyncio
import base64
import ssl
from datetime import UTC, datetime

import aiohttp
import pytest
from standardwebhooks import Webhook

from petstore_devstack.webhook_receiver import HANG, WebhookReceiver

SECRET = "whsec_" + base64.b64encode(b"devstack receiver secret").decode()
BODY = '{"type":"order.placed"}'


def headers(secret: str, message_id: str = "evt_1") -> dict[str, str]:
    now = datetime.now(UTC)
    return {
        "webhook-id": message_id,
        "webhook-timestamp": str(int(now.timestamp())),
        "webhook-signature": Webhook(secret).sign(message_id, now, BODY),
    }


async def test_genuine_and_forged_requests_are_told_apart_and_answered_as_scripted() -> None:
    forger = "whsec_" + base64.b64encode(b"not the receiver's secret").decode()
    async with WebhookReceiver(SECRET) as receiver, aiohttp.ClientSession() as session:
        receiver.answers.extend([500, HANG])
        trust = ssl.create_default_context(cafile=receiver.ca_file)
        statuses = []
        for sent in (headers(SECRET), headers(forger, "evt_2"), {}):
            async with session.post(receiver.url, data=BODY, headers=sent, ssl=trust) as answer:
                statuses.append(answer.status)
            if len(statuses) == 1:  # the second request is held: send it on its own
                held = asyncio.create_task(
                    session.post(receiver.url, data=BODY, headers=headers(SECRET, "evt_h"), ssl=trust)
                )
                await receiver.wait_for(2)
        received = list(receiver.received)
        held.cancel()

    assert statuses == [500, 204, 204]
    assert [(item.id, item.verified, item.answer) for item in received] == [
        ("evt_1", True, 500),
        ("evt_h", True, HANG),
        ("evt_2", False, 204),
        ("", False, 204),
    ]
    assert "signature" in received[2].error.lower()
    assert received[0].json() == {"type": "order.placed"}


async def test_a_client_that_does_not_trust_its_ca_is_refused() -> None:
    async with WebhookReceiver(SECRET) as receiver, aiohttp.ClientSession() as session:
        with pytest.raises(aiohttp.ClientConnectorCertificateError):
            await session.post(receiver.url, data=BODY, headers=headers(SECRET))
        assert receiver.received == []
