"""What each environment variable means, for the settings table in docs/configuration.md.

Names, defaults and which process reads each are read from the settings code itself
(petstore_devstack.doc_tables records them); only the meaning is written here, once. A setting
the code reads without a meaning here, or a meaning for a name no process reads, fails
`make docs` and tests/test_readme.py, naming it.

`default` is only for a setting whose code has no literal default (required, or decided by
whether it is set at all): everywhere else the code's default is shown, so it cannot drift.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Meaning:
    text: str
    default: str = ""
    """Shown when the code passes no default of its own (else it must stay empty)."""


MEANINGS: dict[str, Meaning] = {
    # -- every process --
    "LOG_LEVEL": Meaning("the least severe level written (DEBUG, INFO, WARNING, ERROR)"),
    "LOG_FORMAT": Meaning(
        "`json` (one object per line), `text` (one readable line), or `auto`: text on a terminal, else JSON"
    ),
    "GRACE_SECONDS": Meaning("how long in-flight calls and requests may finish after SIGTERM"),
    "METRICS_PORT": Meaning(
        "port of the Prometheus `/metrics` listener, never the API's; 0: none. Gateway worker i "
        "serves its own on `METRICS_PORT` + i, none of them `GATEWAY_PORT` (refused at start-up)"
    ),
    "OTEL_TRACING": Meaning(
        "`1` turns OpenTelemetry tracing on (OTLP/HTTP; the standard `OTEL_*` variables say where)",
        default="off",
    ),
    # -- secrets and caller tokens --
    "PETSTORE_API_KEYS": Meaning("comma-separated static api keys: the staff's (secret)"),
    "PETSTORE_SESSION_SECRET": Meaning(
        "HMAC key of session tokens, at least 32 characters; the gateway and user service share it (secret)",
        default="none: required (`make run` makes one per run)",
    ),
    "PETSTORE_SESSION_SECRETS_PREVIOUS": Meaning(
        "comma-separated earlier session secrets (at most 4) that still verify tokens while a rotation "
        "runs (secret; [rotating-secrets.md](rotating-secrets.md))"
    ),
    "CALLER_SIGNING_KEY": Meaning(
        "Ed25519 seed (base64url) signing the caller token of every gRPC call this process makes "
        "(secret; [access.md](access.md#caller-tokens))",
        default="none: required (`make run` makes one per run)",
    ),
    "TRUSTED_CALLER_KEYS": Meaning(
        "comma-separated `issuer=<public key>`: whose caller tokens the service accepts. pet: "
        "`gateway`, `order-service` and `webhook-service`; order: `gateway` and `webhook-service`; "
        "user, webhook: `gateway`. Several keys per issuer while rotating",
        default="none: required unless `CALLER_TOKENS=optional`",
    ),
    "CALLER_TOKENS": Meaning(
        "`required`: a call without a valid caller token is UNAUTHENTICATED; `optional`: such a "
        "call is served and counted (only while upgrading callers that sign none)"
    ),
    # -- gateway --
    "GATEWAY_HOST": Meaning("HTTP listen address"),
    "GATEWAY_PORT": Meaning("HTTP listen port"),
    "GATEWAY_WORKERS": Meaning(
        "gateway processes sharing the port (SO_REUSEPORT), each with its own channels and cache. "
        "The first starts the others, passes SIGTERM on, and exits 1 when one ends unasked. "
        "Kubernetes keeps 1 and scales by replicas"
    ),
    "GATEWAY_INSTANCE_ID": Meaning(
        "echoed by `/livez` as `X-Instance-ID` (at most 64 of `A-Za-z0-9._-`); `make run` sets one "
        "per run, to know the gateway on its port is its own"
    ),
    "PET_SERVICE_ADDR": Meaning(
        "where the pet service is: `host:port`, or `dns:///name:port` for every address the name "
        "resolves to (`round_robin`)"
    ),
    "ORDER_SERVICE_ADDR": Meaning("where the order service is (as `PET_SERVICE_ADDR`)"),
    "USER_SERVICE_ADDR": Meaning("where the user service is (as `PET_SERVICE_ADDR`)"),
    "WEBHOOK_SERVICE_ADDR": Meaning(
        "where the webhook service is (as `PET_SERVICE_ADDR`); the gateway's readiness does not wait for it"
    ),
    "GRPC_TIMEOUT_SECONDS": Meaning("deadline of every gRPC call the gateway makes; past it, 503"),
    "MAX_BODY_BYTES": Meaning("larger request bodies are 413"),
    "BODY_BUFFER_BYTES": Meaning(
        "request-body bytes one gateway process holds at once (at least `MAX_BODY_BYTES`); shares "
        "per caller in [operating.md](operating.md#limits); a body that does not fit is 503"
    ),
    "HEADER_TIMEOUT_SECONDS": Meaning(
        "from a request's first byte to the end of its headers; then 408, closed"
    ),
    "BODY_TIMEOUT_SECONDS": Meaning(
        "a body silent this long, or not complete this long plus its length at 64 KiB/s, is 408 "
        "and closed; an unread body is drained at most this long after the answer"
    ),
    "KEEPALIVE_TIMEOUT_SECONDS": Meaning(
        "an idle connection is closed after this long. Behind a proxy, set it above the proxy's idle "
        "upstream timeout, so the proxy closes first (the Kubernetes base does, for ingress-nginx)"
    ),
    "RATE_LIMIT_PER_SECOND": Meaning(
        "requests per second per client: a customer's user id (all its sessions share it), a static "
        "key, else the address (also for an invalid, expired or logged-out token); 0: off"
    ),
    "RATE_LIMIT_BURST": Meaning("requests a client may make at once before that rate applies"),
    "LOGIN_RATE_LIMIT_PER_MINUTE": Meaning("password logins per minute per address; 0: off"),
    "SIGNUP_RATE_LIMIT_PER_HOUR": Meaning(
        "sign-ups (`POST /user` by anybody but staff) per hour per address; 0: off"
    ),
    "TRUSTED_PROXIES": Meaning(
        "comma-separated networks of proxies whose `X-Forwarded-*` the gateway believes: `X-Forwarded-For` "
        "walked from the right past trusted hops names the client (per-address limits)"
    ),
    "PUBLIC_BASE_URL": Meaning(
        "`http(s)://host[:port][/prefix]` clients reach the gateway at, for stored image URLs; "
        "empty: a trusted proxy's `X-Forwarded-Proto`/`-Host`, else the upload's own scheme and `Host`"
    ),
    "CORS_ALLOW_ORIGINS": Meaning(
        "origins browsers may call from (comma-separated `scheme://host[:port]`); set but empty: "
        "CORS off ([behaviour.md](behaviour.md#cors))",
        default="`*` (any origin)",
    ),
    "PET_CACHE_MAX_ENTRIES": Meaning("pet representations the read cache holds per process; 0: no cache"),
    "PET_CACHE_MAX_BYTES": Meaning("bytes the read cache holds at most (bodies plus 256 per entry)"),
    "PET_WATCH_SILENCE_SECONDS": Meaning(
        "the fallback silence limit. A `WatchPets` stream counts as lost after three of the heartbeat "
        "intervals its messages announce (the pet service sends every 2 s); this applies before its "
        "first message, or when none is announced"
    ),
    # -- services --
    "GRPC_LISTEN_ADDR": Meaning("gRPC listen address"),
    "MONGODB_URI": Meaning("MongoDB connection string; empty: the embedded in-memory store"),
    "MONGODB_DATABASE": Meaning("the database the service owns"),
    "MONGODB_TIMEOUT_MS": Meaning(
        "server selection and connect timeout: how fast a lost database becomes 503"
    ),
    "MONGODB_MAX_POOL_SIZE": Meaning("database connections per service process"),
    "MAX_CONCURRENT_RPCS": Meaning("calls served at once before RESOURCE_EXHAUSTED (429)"),
    "GRPC_MAX_CONNECTION_AGE_SECONDS": Meaning(
        "clients are asked to reconnect after this long, so they re-resolve names and reach new "
        "replicas; 0: never"
    ),
    "IDEMPOTENCY_TTL_SECONDS": Meaning("how long an `Idempotency-Key` is remembered after its first request"),
    # -- order service --
    "PET_SERVICE_TIMEOUT_SECONDS": Meaning(
        "deadline of the order service's calls to the pet service (never longer than its caller's)"
    ),
    "ORDER_RESERVES_PET": Meaning(
        "an order reserves its pet, delivery sells it, cancelling frees it; `false`: every order stands alone"
    ),
    "SALE_RECOVER_AFTER_SECONDS": Meaning("a sale step left unfinished this long is finished or undone"),
    "SALE_RECOVERY_INTERVAL_SECONDS": Meaning("how often recovery looks for unfinished sale steps"),
    "MAX_OPEN_ORDERS_PER_CUSTOMER": Meaning(
        "placed or approved orders one customer may hold at once, else 429; 0: no bound; staff are not bound"
    ),
    # -- user service --
    "SESSION_TTL_SECONDS": Meaning("session lifetime"),
    # -- webhook service --
    "WEBHOOK_ALLOWED_NETWORKS": Meaning(
        "comma-separated networks (CIDR) an endpoint may resolve into although not public (private, "
        "loopback...: refused otherwise, at registration and at every connection); `make run` sets "
        "`127.0.0.0/8`"
    ),
    "WEBHOOK_CA_FILE": Meaning(
        "a PEM file of certificate authorities trusted for deliveries beside the system's "
        "(https stays required)"
    ),
    "WEBHOOK_MAX_ATTEMPTS": Meaning(
        "attempts of one delivery; when the last fails the endpoint is disabled, with the reason"
    ),
    "WEBHOOK_RETRY_BASE_SECONDS": Meaning(
        "the longest wait before the first retry; doubled for each later one (full jitter)"
    ),
    "WEBHOOK_RETRY_MAX_SECONDS": Meaning("the longest wait between two attempts, however many failed"),
    "WEBHOOK_TIMEOUT_SECONDS": Meaning("how long one delivery request may take, connecting included"),
    "WEBHOOK_POLL_SECONDS": Meaning(
        "how often the order and pet event outboxes are read while they hold nothing"
    ),
}
