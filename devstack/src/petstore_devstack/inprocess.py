"""The pet, order and user services' real servicers in this process, for tests of what calls
them (the gateway). Not the webhook service: nothing on the shop's path waits for it, the
gateway's tests stand a fake in for it, and the e2e suite runs the real one.

Each service is built the way its own `service.py` builds it (`build_definition`, over its
embedded in-memory store) and started the way `serve` starts it (`start_service`: the shared
interceptor, health and readiness), on a grpc.aio server of its own on 127.0.0.1 with a port the
OS picks. The order service asks the pet service over gRPC, as deployed; the user service signs
session tokens with the secret it is given, as the gateway's settings must hold the same one.
Each service trusts the callers it trusts when deployed (petstore_devstack.signing), by key pairs
made for the stack: a test calls as the gateway with `stack.gateway_signer`, and a call without a
caller token is refused, as deployed.

Compared with `petstore_devstack.stack` (the same services as processes), this starts in
milliseconds, lets a test stop and start one service, and lets it add server interceptors to
observe the calls that arrive (or to make one method misbehave).

    async with in_process_stack(SESSION_SECRET) as stack:
        clients = ServiceClients.connect(
            pet_addr=stack.pet.address, order_addr=stack.order.address, user_addr=stack.user.address,
            webhook_addr=...,  # a stand-in's, or an address nothing serves
            signer=stack.gateway_signer,
        )
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import grpc
from argon2 import Parameters, Type
from grpc_health.v1 import health

from petstore_common.caller_keys import KeyPair
from petstore_common.caller_tokens import CallerSigner
from petstore_common.grpc_server import RunningService, ServiceDefinition, start_service
from petstore_common.settings import ServiceSettings
from petstore_common.watch import HEARTBEAT_SECONDS
from petstore_devstack.signing import SIGNER_PROCESSES, TRUSTED_ISSUERS, new_keys, trusted_caller_keys
from petstore_order import service as order_service
from petstore_order.pets import grpc_pet_directory
from petstore_order.settings import DEFAULT_PET_SERVICE_TIMEOUT_SECONDS
from petstore_order.storage.memory import MemoryOrderStore
from petstore_pet import service as pet_service
from petstore_pet.changes import ChangeHub
from petstore_pet.storage.memory import MemoryPetStore
from petstore_user import service as user_service
from petstore_user.passwords import Passwords
from petstore_user.sessions import SessionTokens
from petstore_user.settings import DEFAULT_SESSION_TTL_SECONDS
from petstore_user.storage.memory import MemoryUserStore

LOOPBACK = "127.0.0.1"
ORDER_ISSUER = SIGNER_PROCESSES["order"]
QUICK_PASSWORD_HASHES = Parameters(
    type=Type.ID, version=19, salt_len=16, hash_len=32, time_cost=1, memory_cost=8, parallelism=1
)
"""argon2id at its cheapest: the deployed parameters cost tens of milliseconds a hash, and a
test that signs up and logs in a few users would spend most of its time hashing. Every rule of
the user service (who may log in, with which password) is the same at any cost."""

StoreT = TypeVar("StoreT")


@dataclass(eq=False)
class InProcessService(Generic[StoreT]):
    """One service on a server of its own. Its store outlives a stop and a start, as a
    database outlives a restart of the process that uses it; the port stays the same, so
    callers reconnect to it by themselves."""

    name: str
    """The full gRPC service name, e.g. petstore.pet.v1.PetService."""
    store: StoreT
    """The embedded store: for a test to seed or inspect state it cannot reach through the API."""
    _build: Callable[[], ServiceDefinition]
    _interceptors: tuple[grpc.aio.ServerInterceptor, ...]
    _env: Mapping[str, str] = field(default_factory=dict)
    """Settings beyond the address (the callers it trusts), as its environment would hold them."""
    _port: int = 0
    _running: RunningService | None = field(default=None, repr=False)

    @property
    def address(self) -> str:
        """host:port, the same before a stop and after the next start."""
        if not self._port:
            raise RuntimeError(f"{self.name} has never been started")
        return f"{LOOPBACK}:{self._port}"

    @property
    def running(self) -> bool:
        return self._running is not None

    @property
    def health(self) -> health.aio.HealthServicer:
        """What the service reports to health checks (its readiness keeps it in step with the store)."""
        if self._running is None:
            raise RuntimeError(f"{self.name} is stopped")
        return self._running.health

    async def start(self) -> None:
        """Serve again, on the port it had (a free one the first time)."""
        if self._running is not None:
            return
        settings = ServiceSettings.from_env(
            default_port=0,
            default_database="unused",
            env={**self._env, "GRPC_LISTEN_ADDR": f"{LOOPBACK}:{self._port}"},
        )
        self._running = await start_service(self._build(), settings, interceptors=self._interceptors)
        self._port = self._running.port

    async def stop(self, grace: float | None = None) -> None:
        """Stop as on SIGTERM: NOT_SERVING, then calls in flight get `grace` seconds (None: none).
        Nothing listens on its address until start()."""
        running, self._running = self._running, None
        if running is not None:
            await running.stop(grace)


@dataclass(eq=False)
class InProcessStack:
    """The pet, order and user services; the order service asks the pet service at `pet.address`."""

    pet: InProcessService[MemoryPetStore]
    order: InProcessService[MemoryOrderStore]
    user: InProcessService[MemoryUserStore]
    session_secret: str
    caller_keys: Mapping[str, KeyPair]
    """Issuer -> the key pair it signs with; the services trust the public keys."""

    @property
    def gateway_signer(self) -> CallerSigner:
        """Signs calls as the gateway does (what ServiceClients.connect takes)."""
        return self.signer(SIGNER_PROCESSES["gateway"])

    def signer(self, issuer: str) -> CallerSigner:
        return CallerSigner(issuer, self.caller_keys[issuer].seed)


@asynccontextmanager
async def in_process_stack(
    session_secret: str,
    *,
    interceptors: Sequence[grpc.aio.ServerInterceptor] = (),
    pet_heartbeat_seconds: float = HEARTBEAT_SECONDS,
    session_ttl_seconds: int = DEFAULT_SESSION_TTL_SECONDS,
    caller_keys: Mapping[str, KeyPair] | None = None,
) -> AsyncIterator[InProcessStack]:
    """The pet, order and user services, started in that order and stopped on exit (every store
    is empty at the start). `interceptors` are added to all three servers, ahead of the shared
    one; `session_secret` signs the user service's tokens; `caller_keys` (fresh ones unless
    given) sign the callers' tokens, which the services check."""
    added = tuple(interceptors)
    keys = dict(caller_keys) if caller_keys is not None else new_keys()
    trust = {
        name: {"TRUSTED_CALLER_KEYS": trusted_caller_keys(TRUSTED_ISSUERS[name], keys)}
        for name in TRUSTED_ISSUERS
    }
    pet_store = MemoryPetStore()
    order_store = MemoryOrderStore()
    user_store = MemoryUserStore()
    pet_starts = 0

    def build_pet() -> ServiceDefinition:
        nonlocal pet_starts
        if pet_starts:
            # A restarted process streams its changes as a new epoch, so watchers cannot resume
            # across it; and stopping closed the old hub for good.
            pet_store.changes = ChangeHub()
        pet_starts += 1
        return pet_service.build_definition(pet_store, heartbeat_seconds=pet_heartbeat_seconds)

    async with AsyncExitStack() as cleanup:
        pet = InProcessService(pet_service.SERVICE_NAME, pet_store, build_pet, added, trust["pet"])
        cleanup.push_async_callback(pet.stop)
        await pet.start()

        pets = await cleanup.enter_async_context(
            grpc_pet_directory(
                pet.address,
                timeout_seconds=DEFAULT_PET_SERVICE_TIMEOUT_SECONDS,
                signer=CallerSigner(ORDER_ISSUER, keys[ORDER_ISSUER].seed),  # as the order service signs
            )
        )
        order = InProcessService(
            order_service.SERVICE_NAME,
            order_store,
            lambda: order_service.build_definition(order_store, pets),
            added,
            trust["order"],
        )
        cleanup.push_async_callback(order.stop)
        await order.start()

        passwords = Passwords(QUICK_PASSWORD_HASHES)
        cleanup.callback(passwords.close)
        tokens = SessionTokens(session_secret, session_ttl_seconds)
        user = InProcessService(
            user_service.SERVICE_NAME,
            user_store,
            lambda: user_service.build_definition(user_store, passwords, tokens),
            added,
            trust["user"],
        )
        cleanup.push_async_callback(user.stop)
        await user.start()

        yield InProcessStack(pet, order, user, session_secret, keys)
