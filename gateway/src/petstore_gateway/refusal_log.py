"""What the access-log line of a refused request (4xx, 5xx) carries for on-call: the reason
the client was told, the client address as the gateway derived it, the kind of caller (never
its credential), and for a 429 which limit refused. Gathered on that path alone: a 2xx line
costs what it did."""

from __future__ import annotations

from dataclasses import dataclass
from http import HTTPStatus

from aiohttp import web

from petstore.auth.v1 import caller_pb2
from petstore_gateway.keys import PRINCIPAL

CLIENT_CLOSED_REQUEST = 499
"""The status logged and counted when the client went away before its answer (nginx's code):
nobody receives it, and it is no server error."""
CLIENT_GONE_REASON = "the client closed its connection before the answer"
"""The reason logged for CLIENT_CLOSED_REQUEST: nobody was told anything."""

_CALLER_KINDS = {
    caller_pb2.CALLER_KIND_STAFF: "staff",
    caller_pb2.CALLER_KIND_CUSTOMER: "customer",
}
"""Any other kind, and a request refused before its caller was known (a 401), is anonymous."""


@dataclass(frozen=True, slots=True)
class Refusal:
    """What the client was answered with: the ApiResponse message, and the rate limit that
    refused it (429) if one of the gateway's did."""

    reason: str
    limit: str | None = None


REFUSAL = web.RequestKey("refusal", Refusal)
"""Set by the error step (pipeline.py) on the request it answers with an error."""


def caller_kind(request: web.Request) -> str:
    """anonymous, customer or staff: as far as the gateway had decided when it refused."""
    principal = request.get(PRINCIPAL)
    return "anonymous" if principal is None else _CALLER_KINDS.get(principal.kind, "anonymous")


def refusal_fields(request: web.Request, status: int, client: str) -> dict[str, str]:
    """The fields a refused request's access line adds: reason, [limit,] client, caller."""
    refusal = request.get(REFUSAL)
    if refusal is None:  # no error body was made: the client left, or an answer not of ours
        reason = CLIENT_GONE_REASON if status == CLIENT_CLOSED_REQUEST else _phrase(status)
        refusal = Refusal(reason)
    fields = {"reason": refusal.reason}
    if refusal.limit is not None:
        fields["limit"] = refusal.limit
    fields["client"] = client
    fields["caller"] = caller_kind(request)
    return fields


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase.lower()
    except ValueError:
        return f"status {status}"
