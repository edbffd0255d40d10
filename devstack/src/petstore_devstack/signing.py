"""Who signs the gRPC calls of a local stack, and whom each service trusts.

Every gRPC call carries a short-lived token signed by the deployable that makes it (the issuer:
`gateway`, `order-service`, `webhook-service`, each the name of its deployable); a service
accepts the tokens of the issuers it trusts, by their public keys (TRUSTED_CALLER_KEYS). A
local stack makes a fresh key pair per issuer for each run, as `make run` makes a fresh session
secret: nothing to configure, and nothing that outlives the run.
"""

from __future__ import annotations

from collections.abc import Mapping

from packaging.version import Version

from petstore_common.caller_keys import KeyPair, generate

SIGNER_PROCESSES = {"gateway": "gateway", "order": "order-service", "webhook": "webhook-service"}
"""Local process (petstore_devstack.stack) -> the issuer it signs as (CALLER_SIGNING_KEY)."""
TRUSTED_ISSUERS = {
    "pet": ("gateway", "order-service", "webhook-service"),
    "order": ("gateway", "webhook-service"),
    "user": ("gateway",),
    "webhook": ("gateway",),
}
"""Service process -> the issuers it trusts: the order service calls the pet service, the
webhook service reads the pet and order services' event outboxes, and the gateway calls all
four. The same in docker-compose.yml and deploy/k8s (deploy_tests check)."""
SIGNS_SINCE = {
    "gateway": Version("1.1.0"),
    "order-service": Version("1.1.0"),
    "webhook-service": Version("1.0.0"),
}
"""The first release of each issuer that signs its calls: an older one (a version-skew run,
`make e2e-skew`) sends none, so the services beside it must accept calls without a token."""


def new_keys() -> dict[str, KeyPair]:
    """A fresh key pair per issuer."""
    return {issuer: generate() for issuer in SIGNS_SINCE}


def trusted_caller_keys(issuers: tuple[str, ...], keys: Mapping[str, KeyPair]) -> str:
    """TRUSTED_CALLER_KEYS for a service trusting `issuers`: `issuer=<public key>`, comma-separated."""
    return ",".join(f"{issuer}={keys[issuer].public}" for issuer in issuers)


def caller_env(process: str, keys: Mapping[str, KeyPair]) -> dict[str, str]:
    """The signing key of a process that calls services, the trusted keys of one that serves
    (the order service does both)."""
    env: dict[str, str] = {}
    if process in SIGNER_PROCESSES:
        env["CALLER_SIGNING_KEY"] = keys[SIGNER_PROCESSES[process]].seed
    if process in TRUSTED_ISSUERS:
        env["TRUSTED_CALLER_KEYS"] = trusted_caller_keys(TRUSTED_ISSUERS[process], keys)
    return env


def sends_unsigned_calls(deployable: str, version: str) -> bool:
    """Whether that release of the deployable calls services without a caller token."""
    since = SIGNS_SINCE.get(deployable)
    return since is not None and Version(version) < since
