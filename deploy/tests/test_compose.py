"""docker-compose.yml: health checks everywhere, ordered start, secrets only by interpolation."""

from __future__ import annotations

import re

from .support import SERVICES, Doc

SECRET_VARS = ("PETSTORE_SESSION_SECRET", "PETSTORE_API_KEYS")
REQUIRED = re.compile(r"^\$\{(?P<name>[A-Z_]+):\?[^}]+\}$")
DATABASES = {
    "pet-service": "petstore_pet",
    "order-service": "petstore_order",
    "user-service": "petstore_user",
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
        "gateway": set(SERVICES),
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
