"""docker-compose.yml: health checks everywhere, ordered start, secrets only by interpolation."""

from __future__ import annotations

import re

import yaml

from petstore_common.caller_keys import generate
from petstore_devstack.ferretdb import VERSION as FERRETDB_VERSION
from petstore_devstack.releases import DEPLOYABLES
from petstore_devstack.signing import SIGNER_PROCESSES, TRUSTED_ISSUERS
from petstore_gateway.settings import GatewaySettings
from petstore_webhook.settings import WebhookSettings

from .support import REPO, SERVICES, SINGLE_REPLICA, ComposeLoader, Doc

SECRET_VARS = ("PETSTORE_SESSION_SECRET", "PETSTORE_API_KEYS")
REQUIRED = re.compile(r"^\$\{(?P<name>[A-Z_]+):\?[^}]+\}$")
FROM_ENV_FILE = re.compile(r"^\$\{(?P<name>[A-Z_]+):-(?P<default>[^}]*)\}$")
"""`${NAME:-default}`: a setting .env may set, else the default."""
GATEWAY_TUNABLES = (
    "LOG_LEVEL",
    "GRPC_TIMEOUT_SECONDS",
    "GATEWAY_WORKERS",
    "CORS_ALLOW_ORIGINS",
    "RATE_LIMIT_PER_SECOND",
    "RATE_LIMIT_BURST",
    "LOGIN_RATE_LIMIT_PER_MINUTE",
    "SIGNUP_RATE_LIMIT_PER_HOUR",
    "TRUSTED_PROXIES",
    "PUBLIC_BASE_URL",
    "MAX_BODY_BYTES",
    "BODY_BUFFER_BYTES",
    "HEADER_TIMEOUT_SECONDS",
    "BODY_TIMEOUT_SECONDS",
    "KEEPALIVE_TIMEOUT_SECONDS",
    "PET_CACHE_MAX_ENTRIES",
    "PET_CACHE_MAX_BYTES",
    "PET_WATCH_SILENCE_SECONDS",
    "PETSTORE_SESSION_SECRETS_PREVIOUS",
)
"""The gateway settings a deployer may set in .env (the rest are fixed by the file: ports,
addresses, GRACE_SECONDS below stop_grace_period)."""
WEBHOOK_TUNABLES = (
    "WEBHOOK_ALLOWED_NETWORKS",
    "WEBHOOK_MAX_ATTEMPTS",
    "WEBHOOK_RETRY_BASE_SECONDS",
    "WEBHOOK_RETRY_MAX_SECONDS",
    "WEBHOOK_TIMEOUT_SECONDS",
    "WEBHOOK_POLL_SECONDS",
)
"""The webhook service's settings a deployer may set in .env."""
DATABASES = {
    "pet-service": "petstore_pet",
    "order-service": "petstore_order",
    "user-service": "petstore_user",
    "webhook-service": "petstore_webhook",
}


def test_every_service_has_a_healthcheck(compose: Doc) -> None:
    assert set(compose["services"]) == {"mongo", "gateway", *SERVICES}
    for name, service in compose["services"].items():
        check = service.get("healthcheck", {})
        assert not check.get("disable"), name
        assert check.get("test"), f"{name} has no healthcheck"


def test_dependencies_wait_for_healthy(compose: Doc) -> None:
    expected = {
        "mongo": set(),
        "pet-service": {"mongo"},
        "order-service": {"mongo", "pet-service"},
        "user-service": {"mongo"},
        # Reads the pet and order services' outboxes.
        "webhook-service": {"mongo", "pet-service", "order-service"},
        # Not the webhook service: webhooks are off the shop's critical path.
        "gateway": {"pet-service", "order-service", "user-service"},
    }
    for name, service in compose["services"].items():
        depends = service.get("depends_on", {})
        assert isinstance(depends, dict), f"{name}: depends_on must use the long form with conditions"
        assert set(depends) == expected[name], name
        for dependency, condition in depends.items():
            assert condition.get("condition") == "service_healthy", f"{name} -> {dependency}"


def test_secrets_are_required_interpolations_never_values(compose: Doc) -> None:
    seen: set[str] = set()
    for name, service in compose["services"].items():
        environment = service.get("environment", {})
        assert isinstance(environment, dict), name
        for var in SECRET_VARS:
            if var in environment:
                match = REQUIRED.match(str(environment[var]))
                assert match, f"{name}: {var} must be ${{{var}:?...}}"
                assert match["name"] == var, name
                seen.add(var)
    assert seen == set(SECRET_VARS)


def _caller_var(issuer: str, what: str) -> str:
    """The .env variable of an issuer's key: GATEWAY_CALLER_SIGNING_KEY, ORDER_SERVICE_CALLER_PUBLIC_KEY..."""
    return f"{issuer.upper().replace('-', '_')}_CALLER_{what}"


def test_callers_sign_and_services_trust_as_the_local_stack_does(compose: Doc) -> None:
    """Each caller signs with its own required key; each service trusts, by required public
    keys, exactly the issuers petstore_devstack.signing says (what the local stacks run), plus
    EXTRA_TRUSTED_CALLER_KEYS during a rotation; CALLER_TOKENS is required unless set."""
    for name in ("gateway", *SERVICES):
        env = compose["services"][name]["environment"]
        process = DEPLOYABLES[name].process
        if process in SIGNER_PROCESSES:
            match = REQUIRED.match(str(env["CALLER_SIGNING_KEY"]))
            assert match, f"{name}: CALLER_SIGNING_KEY must be a required interpolation"
            assert match["name"] == _caller_var(SIGNER_PROCESSES[process], "SIGNING_KEY"), name
        else:
            assert "CALLER_SIGNING_KEY" not in env, name
        trusted = TRUSTED_ISSUERS.get(process, ())
        if not trusted:
            assert "TRUSTED_CALLER_KEYS" not in env, name
            continue
        value, extra = str(env["TRUSTED_CALLER_KEYS"]).split("${EXTRA_TRUSTED_CALLER_KEYS:+", 1)
        assert extra == ",${EXTRA_TRUSTED_CALLER_KEYS}}", name
        entries = [entry.split("=", 1) for entry in value.split(",")]
        assert [issuer for issuer, _ in entries] == list(trusted), name
        for issuer, reference in entries:
            match = REQUIRED.match(reference)
            assert match, f"{name}: {issuer}'s public key must be a required interpolation"
            assert match["name"] == _caller_var(issuer, "PUBLIC_KEY"), name
        assert env["CALLER_TOKENS"] == "${CALLER_TOKENS:-required}", name


def test_each_service_uses_its_own_database_on_the_replica_set(compose: Doc) -> None:
    for name, database in DATABASES.items():
        env = compose["services"][name]["environment"]
        uri = env["MONGODB_URI"]
        assert uri.startswith(f"mongodb://mongo:27017/{database}?"), uri
        assert "replicaSet=rs0" in uri, uri
        assert "w=majority" in uri, uri
        assert env["MONGODB_DATABASE"] == database
    mongo = compose["services"]["mongo"]
    assert mongo["command"][:3] == ["mongod", "--replSet", "rs0"]
    assert "rs.initiate" in " ".join(mongo["healthcheck"]["test"])


def test_one_named_volume_for_the_database(compose: Doc) -> None:
    assert list(compose.get("volumes", {})) == ["mongo-data"]
    assert compose["services"]["mongo"]["volumes"] == ["mongo-data:/data/db"]
    for name in ("gateway", *SERVICES):
        assert "volumes" not in compose["services"][name], name


def test_application_containers_are_hardened_and_built_from_the_repo(compose: Doc) -> None:
    for name in ("gateway", *SERVICES):
        service = compose["services"][name]
        assert service["build"] == {"context": ".", "dockerfile": f"{name}/Dockerfile"}, name
        assert service["read_only"] is True, name
        assert service["cap_drop"] == ["ALL"], name
        assert service["user"] == "10001:10001", name
        assert int(service["stop_grace_period"].rstrip("s")) > 10, name  # > GRACE_SECONDS


def test_only_the_gateway_publishes_a_port(compose: Doc) -> None:
    published = {name for name, service in compose["services"].items() if service.get("ports")}
    assert published == {"gateway"}
    assert compose["services"]["gateway"]["ports"] == ["${GATEWAY_PUBLISH:-127.0.0.1:8080}:8080"]


def test_grpc_services_run_two_replicas_reached_by_dns_round_robin(compose: Doc) -> None:
    """Docker's DNS answers a service name with every replica; callers use dns:/// targets.
    The webhook service runs one: its worker per endpoint orders that endpoint's deliveries."""
    for name in SERVICES:
        service = compose["services"][name]
        assert service["deploy"]["replicas"] == (1 if name in SINGLE_REPLICA else 2), name
        assert "container_name" not in service, name  # would forbid a second replica
        age = service["environment"]["GRPC_MAX_CONNECTION_AGE_SECONDS"]
        assert age == "${GRPC_MAX_CONNECTION_AGE_SECONDS:-30}", name
    ports = {
        "PET_SERVICE_ADDR": 50051,
        "ORDER_SERVICE_ADDR": 50052,
        "USER_SERVICE_ADDR": 50053,
        "WEBHOOK_SERVICE_ADDR": 50054,
    }
    gateway = compose["services"]["gateway"]["environment"]
    order = compose["services"]["order-service"]["environment"]
    webhook = compose["services"]["webhook-service"]["environment"]
    outboxes = {"PET_SERVICE_ADDR": 50051, "ORDER_SERVICE_ADDR": 50052}
    for env, names in ((gateway, ports), (order, {"PET_SERVICE_ADDR": 50051}), (webhook, outboxes)):
        for var, port in names.items():
            service = var.removesuffix("_SERVICE_ADDR").lower() + "-service"
            assert env[var] == f"dns:///{service}:{port}", var


def test_ferretdb_override_replaces_the_database_only() -> None:
    """deploy/compose/ferretdb.yml: the mongo service and the services' connection strings."""
    with (REPO / "deploy" / "compose" / "ferretdb.yml").open() as handle:
        override = yaml.load(handle, ComposeLoader)  # noqa: S506 - a safe loader plus !reset
    mongo = override["services"]["mongo"]
    assert mongo["image"] == f"petstore/ferretdb-standin:{FERRETDB_VERSION}"
    assert "command" in mongo
    assert mongo["command"] is None  # !reset: the image's own command, not mongod's
    assert mongo["healthcheck"]["test"][0] == "CMD"
    for name, database in DATABASES.items():
        assert set(override["services"][name]) == {"environment"}, name
        uri = override["services"][name]["environment"]["MONGODB_URI"]
        assert uri == f"mongodb://mongo:27017/{database}", uri  # FerretDB has no replica set


def test_the_gateway_takes_every_tunable_setting_from_env_with_its_own_default(compose: Doc) -> None:
    """Each as ${NAME:-default}, the default what the gateway itself would use: starting the
    gateway with every default written out changes nothing."""
    env = compose["services"]["gateway"]["environment"]
    defaults = {}
    for name in GATEWAY_TUNABLES:
        match = FROM_ENV_FILE.match(str(env.get(name)))
        assert match, f"gateway: {name} must be ${{{name}:-<default>}}, got {env.get(name)!r}"
        assert match["name"] == name
        defaults[name] = match["default"]
    required = {"PETSTORE_SESSION_SECRET": "s" * 32}
    assert GatewaySettings.from_env({**required, **defaults}) == GatewaySettings.from_env(required)


def test_the_webhook_service_takes_its_tunable_settings_from_env_with_its_own_defaults(compose: Doc) -> None:
    """As the gateway's: every default written out changes nothing; no private network is
    allowed unless the deployer says so."""
    env = compose["services"]["webhook-service"]["environment"]
    defaults = {}
    for name in WEBHOOK_TUNABLES:
        match = FROM_ENV_FILE.match(str(env.get(name)))
        assert match, f"webhook-service: {name} must be ${{{name}:-<default>}}, got {env.get(name)!r}"
        defaults[name] = match["default"]
    assert defaults["WEBHOOK_ALLOWED_NETWORKS"] == ""
    required = {"CALLER_SIGNING_KEY": generate().seed}
    assert WebhookSettings.from_env({**required, **defaults}) == WebhookSettings.from_env(required)


def test_previous_session_secrets_reach_both_processes_that_read_tokens(compose: Doc) -> None:
    """The gateway verifies sessions and the user service reads them at Logout: both must take
    the same list, or a rotation logs somebody out (docs/rotating-secrets.md)."""
    for name in ("gateway", "user-service"):
        env = compose["services"][name]["environment"]
        assert env["PETSTORE_SESSION_SECRETS_PREVIOUS"] == "${PETSTORE_SESSION_SECRETS_PREVIOUS:-}", name
        assert (
            env["PETSTORE_SESSION_SECRET"]
            == compose["services"]["gateway"]["environment"]["PETSTORE_SESSION_SECRET"]
        )


def test_env_example_lists_every_setting_compose_reads(compose: Doc) -> None:
    """A deployer finds in .env.example every variable docker-compose.yml takes from .env."""
    example = (REPO / ".env.example").read_text()
    listed = set(re.findall(r"^#? ?([A-Z][A-Z0-9_]+)=", example, re.MULTILINE))
    used = set(re.findall(r"\$\{([A-Z][A-Z0-9_]+)[:}]", (REPO / "docker-compose.yml").read_text()))
    assert used - listed == set()
