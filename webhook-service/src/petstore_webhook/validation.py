"""The service is the authority on values and bounds: each check raises InvalidArgument.

The field rules (a URL's length, one to 32 event types of at most 64 characters, positive ids)
are annotations in the protos, checked on every request by the shared server interceptor before
a servicer method runs. What is left here: event types that exist, and a URL the service may
send to (targets.py: https, public addresses). Messages name fields as clients write them
(`url`, `eventTypes[1]`).
"""

from __future__ import annotations

from collections.abc import Sequence

from petstore.webhook.v1 import webhook_service_pb2
from petstore_common.errors import InvalidArgument
from petstore_common.field_violations import FieldViolation
from petstore_common.request_validation import RequestValidator
from petstore_webhook.event_types import event_type_names
from petstore_webhook.targets import IPNetwork, Resolve, UnsafeTarget, check_target, resolve_host

REQUEST_RULES = RequestValidator()

UNKNOWN_EVENT_TYPE = "event_type.known"
"""The rule id of an event type the service does not know."""
UNSAFE_TARGET = "url.target"
"""The rule id of a URL the service will not send to."""


def event_types(requested: Sequence[str]) -> tuple[str, ...]:
    """The requested types, each known, repeats dropped (first place kept)."""
    known = event_type_names()
    for index, name in enumerate(requested):
        if name not in known:
            raise _refused(
                FieldViolation(
                    f"event_types[{index}]",
                    UNKNOWN_EVENT_TYPE,
                    f"unknown event type {name!r}: the known ones are {', '.join(known)}",
                )
            )
    return tuple(dict.fromkeys(requested))


async def target_url(
    url: str, allowed_networks: Sequence[IPNetwork], *, resolve: Resolve = resolve_host
) -> str:
    """`url` when the service may send to it (resolving its host)."""
    try:
        await check_target(url, allowed_networks, resolve=resolve)
    except UnsafeTarget as exc:
        raise _refused(FieldViolation("url", UNSAFE_TARGET, str(exc))) from None
    return url


def _refused(violation: FieldViolation) -> InvalidArgument:
    return REQUEST_RULES.refused(webhook_service_pb2.CreateEndpointRequest.DESCRIPTOR, violation)
