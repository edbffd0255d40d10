"""The TLS proxy in front of the gateway, as configured (compose: deploy/compose/tls.yml;
Kubernetes: deploy/k8s/components/tls-proxy, in the e2e overlay): the gateway trusts exactly
the proxy's address, the proxy is the only way in, and nginx forwards what the gateway's
client-address and public-URL rules read. The live checks are tests/e2e/test_behind_proxy.py
and tests/k8s/test_behind_proxy.py."""

from __future__ import annotations

import ipaddress
import re

import yaml

from petstore_gateway.settings import KEEPALIVE_TIMEOUT_SECONDS

from .support import K8S, PROD_SETTINGS, REPO, ComposeLoader, Doc, of_kind, rendered

NGINX_CONF = (REPO / "deploy" / "docker" / "tls-proxy" / "nginx.conf").read_text()
PROXY_PORT = 8443
PRIVATE_RANGES = [ipaddress.ip_network(n) for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16")]


def tls_override() -> Doc:
    with (REPO / "deploy" / "compose" / "tls.yml").open() as handle:
        doc: Doc = yaml.load(handle, ComposeLoader)  # noqa: S506 - a safe loader plus !reset
    return doc


def directives(name: str) -> list[str]:
    """The arguments of every `name ...;` directive in nginx.conf."""
    return [match.strip() for match in re.findall(rf"^\s*{name}\s+([^;]*);", NGINX_CONF, re.MULTILINE)]


def test_nginx_forwards_the_client_address_scheme_and_host_the_gateway_reads() -> None:
    headers = directives("proxy_set_header")
    assert "X-Forwarded-For $proxy_add_x_forwarded_for" in headers
    assert "X-Forwarded-Proto https" in headers
    assert "Host $host" in headers
    # api_key is the API's own header: nginx drops underscored names without this.
    assert directives("underscores_in_headers") == ["on"]
    # The gateway's body budget and head limits decide, not nginx's: no body limit, no buffering.
    assert directives("client_max_body_size") == ["0"]
    assert directives("proxy_request_buffering") == ["off"]
    assert f"{PROXY_PORT} ssl" in directives("listen")


def test_nginx_refusals_are_api_response_bodies() -> None:
    for status in ("400", "404", "405", "414", "431", "503"):
        body = re.search(rf"return {status} '(\{{.*\}})';", NGINX_CONF)
        assert body is not None, status
        assert yaml.safe_load(body[1]) == {
            "code": int(status),
            "type": "error",
            "message": yaml.safe_load(body[1])["message"],
        }


def test_compose_gateway_trusts_exactly_the_proxy_and_publishes_nothing() -> None:
    override = tls_override()
    gateway, proxy = override["services"]["gateway"], override["services"]["tls-proxy"]
    subnet = ipaddress.ip_network(override["networks"]["edge"]["ipam"]["config"][0]["subnet"])
    proxy_address = ipaddress.ip_address(proxy["networks"]["edge"]["ipv4_address"])
    assert proxy_address in subnet
    assert ipaddress.ip_address(gateway["networks"]["edge"]["ipv4_address"]) in subnet
    assert gateway["environment"]["TRUSTED_PROXIES"] == f"{proxy_address}/32"
    assert gateway["ports"] is None  # !reset: the gateway's own port is published nowhere
    assert proxy["ports"] == [f"${{TLS_PUBLISH:-127.0.0.1:443}}:{PROXY_PORT}"]
    assert proxy["read_only"] is True
    assert proxy["cap_drop"] == ["ALL"]
    assert proxy["user"] == "10001:10001"


def gateway_pod(docs: list[Doc]) -> Doc:
    (deployment,) = [d for d in of_kind(docs, "Deployment") if d["metadata"]["name"] == "gateway"]
    pod: Doc = deployment["spec"]["template"]["spec"]
    return pod


def gateway_config(docs: list[Doc]) -> dict[str, str]:
    (config,) = [c for c in of_kind(docs, "ConfigMap") if c["metadata"]["name"].startswith("gateway-config")]
    data: dict[str, str] = config["data"]
    return data


def test_the_k8s_proxy_sits_in_the_gateway_pod_and_is_the_only_trusted_proxy() -> None:
    docs = rendered("overlays/e2e")
    pod = gateway_pod(docs)
    gateway, proxy = pod["containers"]
    assert gateway["name"] == "gateway"  # still containers[0], which overlays address
    assert proxy["name"] == "tls-proxy"
    assert proxy["image"].startswith("petstore/tls-proxy:")
    assert [p["containerPort"] for p in proxy["ports"]] == [PROXY_PORT]
    assert proxy["securityContext"]["readOnlyRootFilesystem"] is True
    assert pod["hostAliases"] == [{"ip": "127.0.0.1", "hostnames": ["gateway"]}]
    assert gateway_config(docs)["TRUSTED_PROXIES"] == "127.0.0.1/32"
    (service,) = [s for s in of_kind(docs, "Service") if s["metadata"]["name"] == "gateway"]
    assert {
        "name": "https",
        "port": 443,
        "targetPort": "https",
        "protocol": "TCP",
        "appProtocol": "https",
    } in (service["spec"]["ports"])
    (policy,) = [p for p in of_kind(docs, "NetworkPolicy") if p["metadata"]["name"] == "gateway"]
    # The proxy's port admits anyone; the gateway's own (http) no one.
    assert policy["spec"]["ingress"] == [{"ports": [{"protocol": "TCP", "port": "https"}]}]


def test_no_base_or_overlay_trusts_every_private_range() -> None:
    """TRUSTED_PROXIES names the proxies' addresses only: a wide range makes every pod in it a
    proxy whose X-Forwarded-For is believed, so any of them could pick its rate-limit bucket."""
    for name in ("base/gateway", "overlays/dev", "overlays/prod", "overlays/e2e"):
        value = gateway_config(rendered(name)).get("TRUSTED_PROXIES", "")
        for item in filter(None, (part.strip() for part in value.split(","))):
            network = ipaddress.ip_network(item)
            assert not any(network.overlaps(wide) and network.prefixlen <= 16 for wide in PRIVATE_RANGES), (
                name,
                item,
            )


def test_the_component_file_is_where_the_e2e_overlay_takes_it() -> None:
    kustomization = yaml.safe_load((K8S / "overlays" / "e2e" / "kustomization.yaml").read_text())
    assert "../../components/tls-proxy" in kustomization["components"]


def test_prod_public_base_url_is_https_on_the_public_host() -> None:
    """Image URLs are stored: in production they name the configured host, not a header's."""
    config = gateway_config(rendered("overlays/prod"))
    assert config["PUBLIC_BASE_URL"] == f"https://{PROD_SETTINGS['PUBLIC_HOST']}"


def test_nginx_closes_idle_gateway_connections_before_the_gateway_does() -> None:
    """Else nginx may send a request on a connection the gateway is closing: a 502."""
    (upstream_idle,) = directives("keepalive_timeout")
    assert upstream_idle.endswith("s")
    assert float(upstream_idle[:-1]) < KEEPALIVE_TIMEOUT_SECONDS
