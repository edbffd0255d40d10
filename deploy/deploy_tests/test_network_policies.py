"""NetworkPolicies: default deny, and exactly the paths of the design, in the full overlays
(dev with the in-namespace MongoDB stand-in, prod with a MongoDB outside the cluster)."""

from __future__ import annotations

import ipaddress

import pytest

from .support import (
    APPS,
    PROD_SETTINGS,
    Doc,
    name_of,
    of_kind,
    pod_labels,
    rendered,
    selected_apps,
    workloads,
)

# Who may open connections to whom (in-namespace pods), as designed.
EXPECTED_INGRESS = {
    "gateway": set(),  # only from the Ingress controller's namespace (checked separately)
    "pet-service": {"gateway", "order-service", "webhook-service"},
    "order-service": {"gateway", "webhook-service"},
    "user-service": {"gateway"},
    "webhook-service": {"gateway"},
    "mongodb": {"pet-service", "order-service", "user-service", "webhook-service", "mongodb"},
}
EXPECTED_EGRESS = {
    "gateway": {"pet-service", "order-service", "user-service", "webhook-service"},
    "pet-service": {"mongodb"},
    "order-service": {"mongodb", "pet-service"},
    "user-service": {"mongodb"},
    "webhook-service": {"mongodb", "pet-service", "order-service"},
    "mongodb": {"mongodb"},
}
DELIVERIES = {("webhook-service", "0.0.0.0/0", 443), ("webhook-service", "::/0", 443)}
"""The only way out of the cluster besides the prod database: webhooks, over https."""
NOT_PUBLIC = [
    ipaddress.ip_address(address)
    for address in (
        "10.0.0.1",  # the usual pod and service networks
        "172.16.0.1",
        "192.168.1.1",
        "100.64.0.1",  # carrier-grade NAT, some clusters' pod network
        "127.0.0.1",
        "169.254.169.254",  # the cloud's metadata service
        "0.0.0.0",
        "224.0.0.1",
        "::1",
        "fd00::1",
        "fe80::1",
        "ff02::1",
    )
]


@pytest.fixture(scope="module", params=["dev", "prod"])
def overlay(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def docs(overlay: str) -> list[Doc]:
    return rendered(f"overlays/{overlay}")


def expected(paths: dict[str, set[str]], overlay: str) -> dict[str, set[str]]:
    """Prod has no in-namespace database: no path to or from it."""
    if overlay == "dev":
        return paths
    return {app: peers - {"mongodb"} for app, peers in paths.items() if app != "mongodb"}


def _policies(docs: list[Doc]) -> list[Doc]:
    policies = of_kind(docs, "NetworkPolicy")
    assert policies
    return policies


def test_there_is_one_default_deny_for_both_directions(docs: list[Doc]) -> None:
    deny = [
        p
        for p in _policies(docs)
        if p["spec"]["podSelector"] == {} and not p["spec"].get("ingress") and not p["spec"].get("egress")
    ]
    assert len(deny) == 1
    assert set(deny[0]["spec"]["policyTypes"]) == {"Ingress", "Egress"}


def test_every_policy_selects_a_workload_or_is_namespace_wide(docs: list[Doc]) -> None:
    for policy in _policies(docs):
        selector = policy["spec"]["podSelector"]
        if selector == {}:
            continue
        assert selected_apps(selector, docs), f"NetworkPolicy {name_of(policy)} selects no pods"


def test_every_in_namespace_peer_selects_a_workload(docs: list[Doc]) -> None:
    """A typo in a peer's labels would silently cut a path: every peer must match pods."""
    for policy in _policies(docs):
        for rule in policy["spec"].get("ingress", []) + policy["spec"].get("egress", []):
            for peer in rule.get("from", []) + rule.get("to", []):
                if "podSelector" in peer and "namespaceSelector" not in peer:
                    assert selected_apps(peer["podSelector"], docs), f"{name_of(policy)}: {peer}"


def _allowed(docs: list[Doc], direction: str) -> dict[str, set[str]]:
    """app -> the in-namespace apps it accepts from ('ingress') or may reach ('egress')."""
    peers_key = "from" if direction == "ingress" else "to"
    result: dict[str, set[str]] = {pod_app: set() for pod_app in (selected_apps({}, docs))}
    for policy in _policies(docs):
        targets = selected_apps(policy["spec"]["podSelector"], docs)
        for rule in policy["spec"].get(direction, []):
            peers = rule.get(peers_key)
            assert peers, f"{name_of(policy)}: a {direction} rule without peers allows everyone"
            for peer in peers:
                if "podSelector" in peer and "namespaceSelector" not in peer:
                    for target in targets:
                        result[target] |= selected_apps(peer["podSelector"], docs)
    return result


def test_ingress_paths_are_exactly_the_designed_ones(docs: list[Doc], overlay: str) -> None:
    assert _allowed(docs, "ingress") == expected(EXPECTED_INGRESS, overlay)


def test_egress_paths_are_exactly_the_designed_ones(docs: list[Doc], overlay: str) -> None:
    assert _allowed(docs, "egress") == expected(EXPECTED_EGRESS, overlay)


def test_only_the_gateway_admits_the_ingress_controller(docs: list[Doc]) -> None:
    controller = {"kubernetes.io/metadata.name": "ingress-nginx"}
    admitting: set[str] = set()
    for policy in _policies(docs):
        for rule in policy["spec"].get("ingress", []):
            for peer in rule.get("from", []):
                if peer.get("namespaceSelector", {}).get("matchLabels") == controller:
                    admitting |= selected_apps(policy["spec"]["podSelector"], docs)
    assert admitting == {"gateway"}


def test_every_pod_may_resolve_dns_and_only_the_services_reach_the_prod_database(
    docs: list[Doc], overlay: str
) -> None:
    dns_ports: set[tuple[str, int]] = set()
    outside: set[tuple[str, str, int]] = set()
    for policy in _policies(docs):
        for rule in policy["spec"].get("egress", []):
            for peer in rule.get("to", []):
                if "ipBlock" in peer:
                    outside |= {
                        (app, peer["ipBlock"]["cidr"], int(port["port"]))
                        for app in selected_apps(policy["spec"]["podSelector"], docs)
                        for port in rule["ports"]
                    }
                if (
                    peer.get("namespaceSelector", {})
                    .get("matchLabels", {})
                    .get("kubernetes.io/metadata.name")
                    == "kube-system"
                    and policy["spec"]["podSelector"] == {}
                ):
                    dns_ports |= {(p["protocol"], p["port"]) for p in rule["ports"]}
    assert dns_ports == {("UDP", 53), ("TCP", 53)}
    database = (PROD_SETTINGS["MONGODB_CIDR"], int(PROD_SETTINGS["MONGODB_PORT"]))
    services = {"pet-service", "order-service", "user-service", "webhook-service"}
    assert outside == DELIVERIES | (set() if overlay == "dev" else {(app, *database) for app in services})


def test_webhook_deliveries_reach_no_private_loopback_link_local_or_cluster_address(docs: list[Doc]) -> None:
    """Beside the service's own refusal of such endpoints (at registration and at every
    connection), the policy lets deliveries out to public addresses only: a rebinding that got
    past the service still reaches no pod, node or metadata service."""
    blocks = [
        peer["ipBlock"]
        for policy in _policies(docs)
        if selected_apps(policy["spec"]["podSelector"], docs) == {"webhook-service"}
        for rule in policy["spec"].get("egress", [])
        for peer in rule.get("to", [])
        if "ipBlock" in peer
    ]
    assert {block["cidr"] for block in blocks} == {"0.0.0.0/0", "::/0"}

    def allowed(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
        return any(
            address in ipaddress.ip_network(block["cidr"])
            and not any(address in ipaddress.ip_network(cut) for cut in block.get("except", []))
            for block in blocks
            if ipaddress.ip_network(block["cidr"]).version == address.version
        )

    assert [address for address in NOT_PUBLIC if allowed(address)] == []
    assert allowed(ipaddress.ip_address("93.184.215.14"))  # a public address: the point of the rule
    assert allowed(ipaddress.ip_address("2606:2800:21f:cb07:6820:80da:af6b:8b2c"))


def test_workloads_are_labelled_for_the_policies(docs: list[Doc], overlay: str) -> None:
    names = {pod_labels(w).get("app.kubernetes.io/name") for w in workloads(docs)}
    assert names == ({*APPS, "mongodb"} if overlay == "dev" else set(APPS))
