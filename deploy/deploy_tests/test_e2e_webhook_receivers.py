"""The e2e runs' way from the webhook service to the test process's receivers (compose:
deploy/compose/webhook-receiver.yml; k3s: deploy/k8s/overlays/e2e/webhook-receiver*.yaml) is
one address and its ports, in the e2e files only: dev and prod allow no private target."""

from __future__ import annotations

import ipaddress
import re

import yaml

from .support import K8S, REPO, ComposeLoader, Doc, name_of, of_kind, rendered, selected_apps

CA_VOLUME = "webhook-receiver-ca"
"""The ConfigMap deploy/k8s/e2e.sh makes with the receivers' CA, and the volume it becomes."""


def webhook_config(docs: list[Doc]) -> dict[str, str]:
    (config,) = [
        c for c in of_kind(docs, "ConfigMap") if c["metadata"]["name"].startswith("webhook-service-config")
    ]
    data: dict[str, str] = config["data"]
    return data


def pod_subnet() -> ipaddress.IPv4Network:
    """The e2e node's pod subnet, as deploy/k8s/cluster.sh gives it to the CNI bridge."""
    conflist = (K8S / "cluster.sh").read_text()
    (subnet,) = re.findall(r'"subnet": "([0-9./]+)"', conflist)
    return ipaddress.IPv4Network(subnet)


def receiver_rules(docs: list[Doc]) -> list[tuple[str, Doc]]:
    """(policy name, egress rule) of the rules of the webhook service's own policies that open an
    ipBlock other than 0.0.0.0/0 or ::/0 (the deliveries to public addresses, private excepted)."""
    return [
        (name_of(policy), rule)
        for policy in of_kind(docs, "NetworkPolicy")
        if selected_apps(policy["spec"]["podSelector"], docs) == {"webhook-service"}
        for rule in policy["spec"].get("egress", [])
        if any(peer.get("ipBlock", {}).get("cidr") not in (None, "0.0.0.0/0", "::/0") for peer in rule["to"])
    ]


def test_the_k3s_e2e_overlay_opens_one_address_and_its_two_ports_to_the_webhook_service_alone() -> None:
    docs = rendered("overlays/e2e")
    ((policy_name, rule),) = receiver_rules(docs)
    (policy,) = [p for p in of_kind(docs, "NetworkPolicy") if name_of(p) == policy_name]
    assert selected_apps(policy["spec"]["podSelector"], docs) == {"webhook-service"}
    assert policy["spec"]["policyTypes"] == ["Egress"]
    (peer,) = rule["to"]
    assert set(peer) == {"ipBlock"}, peer
    receiver = ipaddress.IPv4Network(peer["ipBlock"]["cidr"])
    assert receiver.prefixlen == 32, receiver
    # The bridge's own address (cni0, the subnet's gateway): on the node, in no pod's hands.
    assert receiver.network_address == next(pod_subnet().hosts())
    ports = [port["port"] for port in rule["ports"]]
    assert len(ports) == 2, ports  # the steady receiver's and the scripted one's
    assert 443 not in ports, ports
    assert all(isinstance(port, int) for port in ports), ports
    assert all(port["protocol"] == "TCP" for port in rule["ports"])
    config = webhook_config(docs)
    assert config["WEBHOOK_ALLOWED_NETWORKS"] == str(receiver)  # the same /32, no wider
    # The CA file is in the volume of the run's ConfigMap.
    (deployment,) = [d for d in of_kind(docs, "Deployment") if name_of(d) == "webhook-service"]
    spec = deployment["spec"]["template"]["spec"]
    (mount,) = [m for m in spec["containers"][0]["volumeMounts"] if m["name"] == CA_VOLUME]
    assert mount["readOnly"] is True
    assert config["WEBHOOK_CA_FILE"] == f"{mount['mountPath']}/ca.pem"
    (volume,) = [v for v in spec["volumes"] if v["name"] == CA_VOLUME]
    assert volume["configMap"]["name"] == CA_VOLUME


def test_dev_and_prod_name_no_receiver_and_allow_no_private_network() -> None:
    for overlay in ("dev", "prod"):
        docs = rendered(f"overlays/{overlay}")
        assert receiver_rules(docs) == [], overlay
        config = webhook_config(docs)
        assert config["WEBHOOK_ALLOWED_NETWORKS"] == "", overlay
        assert "WEBHOOK_CA_FILE" not in config, overlay


def test_the_compose_e2e_override_allows_the_receivers_address_alone_and_mounts_only_its_ca() -> None:
    with (REPO / "deploy" / "compose" / "webhook-receiver.yml").open() as handle:
        override: Doc = yaml.load(handle, Loader=ComposeLoader)  # noqa: S506 - the safe loader plus !reset
    assert set(override["services"]) == {"webhook-service"}
    service = override["services"]["webhook-service"]
    assert set(service) == {"environment", "volumes"}
    env = service["environment"]
    assert re.fullmatch(r"\$\{PETSTORE_E2E_WEBHOOK_HOST:\?[^}]+\}/32", env["WEBHOOK_ALLOWED_NETWORKS"])
    (volume,) = service["volumes"]
    source, target, mode = volume.rsplit(":", 2)
    assert source.startswith("${PETSTORE_E2E_WEBHOOK_TLS_DIR:?")
    assert source.endswith("}/ca.pem")  # the CA alone, not the key beside it
    assert (target, mode) == (env["WEBHOOK_CA_FILE"], "ro")
    script = (REPO / "deploy" / "compose" / "e2e.sh").read_text()
    assert 'COMPOSE_FILE+=":$ROOT/deploy/compose/webhook-receiver.yml"' in script


def test_the_k3s_script_reads_the_receivers_address_and_ports_from_the_overlay() -> None:
    """One source: e2e.sh serves the receivers where the policy lets the webhook service go."""
    script = (K8S / "e2e.sh").read_text()
    assert "deploy/k8s/overlays/e2e/webhook-receiver.yaml)" in script
    assert f"create configmap {CA_VOLUME} " in script
    assert "18443" not in script  # no second copy of the ports
