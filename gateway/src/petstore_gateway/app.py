"""The application factory, used by __main__ and by the tests."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Sequence

from aiohttp import web

from petstore.user.v1 import user_service_pb2
from petstore_common.caller_gate import GATEWAY
from petstore_common.caller_tokens import CallerSigner
from petstore_common.settings import SettingsError
from petstore_gateway import caching, health
from petstore_gateway.apidoc.routes import build_documents, entry_routes
from petstore_gateway.apidoc.routes import routes as apidoc_routes
from petstore_gateway.auth import Authenticator
from petstore_gateway.bodies import MAX_FORM_FIELDS
from petstore_gateway.body_budget import BodyBudget
from petstore_gateway.clients import ServiceClients, open_clients
from petstore_gateway.keys import (
    API_DOCUMENTS,
    AUTHENTICATOR,
    BODY_BUDGET,
    CLIENTS,
    METRICS,
    PET_CACHE,
    RATE_LIMITS,
    SETTINGS,
)
from petstore_gateway.metrics import GatewayMetrics
from petstore_gateway.middlewares import unrouted_middleware
from petstore_gateway.operations import API_PREFIX, OPERATION_OF_ROUTE, Operation, api_app
from petstore_gateway.pet_cache import PetCache
from petstore_gateway.pet_watch import PetWatcher
from petstore_gateway.pipeline import build_pipeline
from petstore_gateway.ratelimit import RateLimits
from petstore_gateway.routes import OPERATIONS
from petstore_gateway.rpc import call_service
from petstore_gateway.settings import GatewaySettings


def create_app(
    settings: GatewaySettings,
    *,
    clients: ServiceClients | None = None,
    operations: Sequence[Operation] = OPERATIONS,
) -> web.Application:
    """The gateway: the probes, and `operations` with their description under API_PREFIX.
    Without `clients` it opens channels to the configured services on start-up, their calls
    signed with CALLER_SIGNING_KEY (SettingsError without one), and closes them on clean-up;
    tests pass clients of their own (and close them)."""
    app = web.Application(client_max_size=settings.max_body_bytes, client_max_fields=MAX_FORM_FIELDS)
    app[BODY_BUDGET] = BodyBudget(settings.body_buffer_bytes, settings.max_body_bytes)
    app[SETTINGS] = settings
    caching.install(app)
    app[METRICS] = GatewayMetrics()
    app[API_DOCUMENTS] = build_documents(operations, max_body_bytes=settings.max_body_bytes)
    app[RATE_LIMITS] = RateLimits.create(
        per_second=settings.rate_limit_per_second,
        burst=settings.rate_limit_burst,
        login_per_minute=settings.login_rate_limit_per_minute,
        signup_per_hour=settings.signup_rate_limit_per_hour,
    )

    async def check_session(session_id: str) -> bool:
        reply = await call_service(
            app[CLIENTS].user.CheckSession,
            user_service_pb2.CheckSessionRequest(session_id=session_id),
            service="user",
            deadline_seconds=settings.grpc_timeout_seconds,
        )
        return reply.active

    app[AUTHENTICATOR] = Authenticator(
        static_keys=settings.api_keys, session_keys=settings.session_keys, check_session=check_session
    )
    app[PET_CACHE] = PetCache(
        max_entries=settings.pet_cache_max_entries, max_bytes=settings.pet_cache_max_bytes
    )
    app[METRICS].watch_cache(app[PET_CACHE])
    if clients is None:
        app.cleanup_ctx.append(_service_clients(caller_signer(settings)))
    else:
        app[CLIENTS] = clients
    app.cleanup_ctx.append(_pet_watch)
    app.add_routes(health.routes)
    app.add_routes(entry_routes)  # before the API: API_PREFIX itself is one of them
    # Each operation's request steps are built once, here, from its declaration (pipeline.py);
    # the app's one middleware runs the lean steps for whatever no operation serves.
    api = api_app(operations, wrap=lambda op: build_pipeline(op, app).serving(op.handler))
    pipelined: dict[web.AbstractRoute, Operation] = api[OPERATION_OF_ROUTE]
    app.middlewares.append(unrouted_middleware(build_pipeline(None, app).run, pipelined))
    api.add_routes(apidoc_routes)
    # What a cached read looks up on every request, on the API's app too (the same object):
    # request.config_dict finds it in its first map rather than after a KeyError there.
    api[PET_CACHE] = app[PET_CACHE]
    app.add_subapp(API_PREFIX, api)
    return app


def caller_signer(settings: GatewaySettings) -> CallerSigner:
    """What signs the gateway's gRPC calls; SettingsError without CALLER_SIGNING_KEY."""
    if not settings.caller_signing_key:
        raise SettingsError(
            "CALLER_SIGNING_KEY must be set: the base64url Ed25519 seed the gateway signs its gRPC "
            "calls with (`python -m petstore_common.caller_keys` makes one)"
        )
    return CallerSigner(GATEWAY, settings.caller_signing_key)


def _service_clients(signer: CallerSigner) -> Callable[[web.Application], AsyncIterator[None]]:
    async def service_clients(app: web.Application) -> AsyncIterator[None]:
        settings = app[SETTINGS]
        async with open_clients(
            pet_addr=settings.pet_service_addr,
            order_addr=settings.order_service_addr,
            user_addr=settings.user_service_addr,
            webhook_addr=settings.webhook_service_addr,
            signer=signer,
        ) as clients:
            app[CLIENTS] = clients
            yield

    return service_clients


async def _pet_watch(app: web.Application) -> AsyncIterator[None]:
    """Follow the pet service's changes while the app runs; without it the cache stays off."""
    cache = app[PET_CACHE]
    if not cache.enabled:
        yield
        return
    watcher = PetWatcher(
        cache,
        lambda request: app[CLIENTS].pet.WatchPets(request),
        fallback_silence_seconds=app[SETTINGS].pet_watch_silence_seconds,
    )
    task = asyncio.create_task(watcher.run())
    yield
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
