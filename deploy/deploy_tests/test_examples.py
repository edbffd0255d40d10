"""deploy/k8s/examples render and do what deploy/k8s/README.md says they do: the Ingress class
and cert-manager patches for ingress-nginx and Traefik, and a deployment repository of one's
own that takes the prod overlay as a remote base pinned with ?ref= (rendered from a folder
outside this repository, the remote URL replaced by a relative path: the offline equivalent)."""

from __future__ import annotations

import os
import re
from pathlib import Path

from .support import K8S, PROD_SETTINGS, Doc, of_kind, render, rendered

EXAMPLES = K8S / "examples"
REMOTE = re.compile(r"https://github\.com/[^/\s]+/petstore//deploy/k8s/overlays/prod\?ref=[0-9a-f]{40}")


def one(docs: list[Doc], kind: str, name: str) -> Doc:
    (found,) = [doc for doc in of_kind(docs, kind) if doc["metadata"]["name"].startswith(name)]
    return found


def test_ingress_nginx_example_sets_the_class_and_the_issuer() -> None:
    ingress = one(render(EXAMPLES / "ingress-nginx"), "Ingress", "gateway")
    assert ingress["spec"]["ingressClassName"] == "nginx"
    assert ingress["metadata"]["annotations"]["cert-manager.io/cluster-issuer"] == "letsencrypt"
    assert ingress["spec"]["tls"] == [{"hosts": [PROD_SETTINGS["PUBLIC_HOST"]], "secretName": "petstore-tls"}]


def test_traefik_example_sets_the_class_and_admits_traefiks_namespace() -> None:
    docs = render(EXAMPLES / "traefik")
    ingress = one(docs, "Ingress", "gateway")
    assert ingress["spec"]["ingressClassName"] == "traefik"
    annotations = ingress["metadata"]["annotations"]
    assert annotations["traefik.ingress.kubernetes.io/router.tls"] == "true"
    assert not any(key.startswith("nginx.ingress") for key in annotations)
    policy = one(docs, "NetworkPolicy", "gateway")
    assert policy["spec"]["ingress"][0]["from"] == [
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "traefik"}}}
    ]


def test_own_repository_renders_from_outside_with_its_settings(tmp_path: Path) -> None:
    source = (EXAMPLES / "own-repo" / "kustomization.yaml").read_text()
    assert REMOTE.search(source), "the example names the prod overlay remotely, pinned to a commit"
    outside = tmp_path / "shop-deploy" / "petstore"
    outside.mkdir(parents=True)
    relative = os.path.relpath(K8S / "overlays" / "prod", outside)
    assert relative.startswith(".."), relative
    (outside / "kustomization.yaml").write_text(REMOTE.sub(relative, source))

    docs = render(outside)
    prod = rendered("overlays/prod")
    assert sorted((d["kind"], d["metadata"]["name"].split("-")[0]) for d in docs) == sorted(
        (d["kind"], d["metadata"]["name"].split("-")[0]) for d in prod
    )
    for deployment in of_kind(docs, "Deployment"):
        image = deployment["spec"]["template"]["spec"]["containers"][0]["image"]
        assert image.startswith("registry.shop.example/petstore/"), image
    assert all(
        sa["imagePullSecrets"] == [{"name": "registry-credentials"}] for sa in of_kind(docs, "ServiceAccount")
    )
    ingress = one(docs, "Ingress", "gateway")
    assert ingress["spec"]["rules"][0]["host"] == "pets.shop.example"
    assert ingress["spec"]["tls"][0]["hosts"] == ["pets.shop.example"]
    config = one(docs, "ConfigMap", "gateway-config")["data"]
    assert (config["PUBLIC_BASE_URL"], config["TRUSTED_PROXIES"]) == (
        "https://pets.shop.example",
        "10.96.200.0/29",
    )
    egress = one(docs, "NetworkPolicy", "services-to-mongodb")["spec"]["egress"][0]
    assert egress["to"][0]["ipBlock"]["cidr"] == "10.30.4.0/24"
    # The merged ConfigMap has a new name (hash), and the gateway reads that one: pods roll.
    gateway = one(docs, "Deployment", "gateway")["spec"]["template"]["spec"]["containers"][0]
    assert (
        gateway["envFrom"][0]["configMapRef"]["name"]
        == one(docs, "ConfigMap", "gateway-config")["metadata"]["name"]
    )
