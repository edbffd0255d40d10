"""A local stack's callers sign with keys of its own, and each service trusts exactly the callers
it trusts when deployed; a version-skew run with a caller that signs nothing relaxes the
services, and only then."""

from __future__ import annotations

from pathlib import Path

import pytest

from petstore_common.caller_keys import public_of
from petstore_common.settings import ServiceSettings, trusted_caller_keys
from petstore_devstack.releases import DEPLOYABLES, current_version
from petstore_devstack.signing import SIGNS_SINCE, TRUSTED_ISSUERS, sends_unsigned_calls
from petstore_devstack.stack import SERVICES, Stack


def test_each_process_gets_its_key_and_the_services_trust_the_right_public_keys(tmp_path: Path) -> None:
    stack = Stack(log_dir=tmp_path)
    env = {name: spec.env for name, spec in stack.processes.items()}
    keys = stack.caller_keys

    assert public_of(env["gateway"]["CALLER_SIGNING_KEY"]) == keys["gateway"].public
    assert public_of(env["order"]["CALLER_SIGNING_KEY"]) == keys["order-service"].public
    assert public_of(env["webhook"]["CALLER_SIGNING_KEY"]) == keys["webhook-service"].public
    assert "CALLER_SIGNING_KEY" not in env["pet"]
    assert "CALLER_SIGNING_KEY" not in env["user"]
    for name in SERVICES:
        trusted = trusted_caller_keys(env[name])  # as the service reads it
        assert [(key.issuer, key.public) for key in trusted] == [
            (issuer, keys[issuer].public) for issuer in TRUSTED_ISSUERS[name]
        ]
        assert "CALLER_TOKENS" not in env[name]  # the services' default: required
        ServiceSettings.from_env(default_port=0, default_database="x", env=env[name]).check_caller_trust()
    assert TRUSTED_ISSUERS == {
        "pet": ("gateway", "order-service", "webhook-service"),
        "order": ("gateway", "webhook-service"),
        "user": ("gateway",),
        "webhook": ("gateway",),
    }


def test_every_stack_makes_key_pairs_of_its_own(tmp_path: Path) -> None:
    first, second = Stack(log_dir=tmp_path), Stack(log_dir=tmp_path)
    assert (
        first.processes["gateway"].env["CALLER_SIGNING_KEY"]
        != second.processes["gateway"].env["CALLER_SIGNING_KEY"]
    )
    assert (
        first.processes["pet"].env["TRUSTED_CALLER_KEYS"]
        != second.processes["pet"].env["TRUSTED_CALLER_KEYS"]
    )


def test_accepting_unsigned_calls_relaxes_the_services_only(tmp_path: Path) -> None:
    stack = Stack(log_dir=tmp_path)
    stack.accept_unsigned_calls()
    assert {name: spec.env.get("CALLER_TOKENS") for name, spec in stack.processes.items()} == {
        "pet": "optional",
        "order": "optional",
        "user": "optional",
        "webhook": "optional",
        "gateway": None,
    }
    assert stack.processes["pet"].env["TRUSTED_CALLER_KEYS"]  # a token sent must still be valid


@pytest.mark.parametrize(
    ("deployable", "version", "unsigned"),
    [
        ("gateway", "1.0.0", True),
        ("order-service", "1.0.0", True),
        ("gateway", "1.1.0", False),
        ("order-service", "1.2.0", False),
        ("webhook-service", "1.0.0", False),  # signs from its first release
        ("pet-service", "1.0.0", False),  # a service calls nobody: nothing to relax
        ("user-service", "1.0.0", False),
    ],
)
def test_only_a_caller_from_before_signing_sends_unsigned_calls(
    deployable: str, version: str, unsigned: bool
) -> None:
    assert sends_unsigned_calls(deployable, version) is unsigned


def test_the_signers_are_deployables_and_sign_from_their_current_version() -> None:
    """SIGNS_SINCE names deployables by the name they sign as; no release it names is in the
    future of the working tree (which signs)."""
    for issuer, since in SIGNS_SINCE.items():
        assert issuer in DEPLOYABLES
        assert not sends_unsigned_calls(issuer, current_version(DEPLOYABLES[issuer])), since
