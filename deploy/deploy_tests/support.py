"""What the deployment tests share: paths, kustomize renders, small manifest helpers.

The renders come from the same kustomize that deploy/check.sh uses (PETSTORE_KUSTOMIZE, which
check.sh sets), else `kubectl kustomize`, else the kustomize check.sh caches in
.cache/deploy-tools. When none exists and check.sh did not start the run, the tests that need
renders are skipped with the reason; check.sh itself never runs without one.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
K8S = REPO / "deploy" / "k8s"
BASES = (
    "gateway",
    "pet-service",
    "order-service",
    "user-service",
    "webhook-service",
    "mongodb",
    "network-policies",
)
OVERLAYS = ("dev", "prod")
SERVICES = ("pet-service", "order-service", "user-service", "webhook-service")
APPS = ("gateway", *SERVICES)
SINGLE_REPLICA = ("webhook-service",)
"""Exactly one pod, never two at once (it orders each endpoint's deliveries): no HPA, no PDB."""
SCALED = tuple(app for app in APPS if app not in SINGLE_REPLICA)
"""Replicas owned by an HPA, a PDB for drains; two replicas in compose."""
PROD_SETTINGS = dict(
    line.split("=", 1)
    for line in (K8S / "overlays" / "prod" / "settings.env").read_text().splitlines()
    if line and not line.startswith("#")
)
"""What deploy/k8s/overlays/prod/settings.env sets (the prod overlay's replacements read it)."""

Doc = dict[str, Any]


class ComposeLoader(yaml.SafeLoader):
    """The safe loader, plus Compose's `!reset` tag (an override file drops what the base set)."""


ComposeLoader.add_constructor("!reset", lambda loader, node: None)


def kustomize_command() -> list[str] | None:
    given = os.environ.get("PETSTORE_KUSTOMIZE", "").strip()
    if given:
        return shlex.split(given)
    if shutil.which("kubectl"):
        return ["kubectl", "kustomize"]
    cached = sorted((REPO / ".cache" / "deploy-tools").glob("kustomize-*"))
    if cached:
        return [str(cached[-1]), "build"]
    return None


def render(path: Path) -> list[Doc]:
    """The objects kustomize renders from `path` (a folder with a kustomization.yaml)."""
    command = kustomize_command()
    if command is None:
        pytest.skip("no kustomize (kubectl or .cache/deploy-tools): deploy/check.sh provides one")
    result = subprocess.run([*command, str(path)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, f"kustomize failed for {path}:\n{result.stderr}"
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


_cache: dict[str, list[Doc]] = {}


def rendered(name: str) -> list[Doc]:
    """`base/<name>` or `overlays/<name>` rendered once per session."""
    if name not in _cache:
        _cache[name] = render(K8S / name)
    return _cache[name]


WORKLOAD_KINDS = ("Deployment", "StatefulSet")


def of_kind(docs: list[Doc], kind: str) -> list[Doc]:
    return [doc for doc in docs if doc["kind"] == kind]


def workloads(docs: list[Doc]) -> list[Doc]:
    return [doc for doc in docs if doc["kind"] in WORKLOAD_KINDS]


def name_of(doc: Doc) -> str:
    name: str = doc["metadata"]["name"]
    return name


def pod_labels(workload: Doc) -> dict[str, str]:
    labels: dict[str, str] = workload["spec"]["template"]["metadata"].get("labels", {})
    return labels


def selects(selector: Doc, labels: dict[str, str]) -> bool:
    """Kubernetes label-selector semantics (matchLabels + matchExpressions); {} selects all."""
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, operator, values = expr["key"], expr["operator"], expr.get("values", [])
        if operator == "In" and labels.get(key) not in values:
            return False
        if operator == "NotIn" and labels.get(key) in values:
            return False
        if operator == "Exists" and key not in labels:
            return False
        if operator == "DoesNotExist" and key in labels:
            return False
    return True


def selected_apps(selector: Doc, docs: list[Doc]) -> set[str]:
    """The app.kubernetes.io/name of every workload in `docs` whose pods `selector` picks."""
    return {
        pod_labels(w).get("app.kubernetes.io/name", name_of(w))
        for w in workloads(docs)
        if selects(selector, pod_labels(w))
    }


def containers(workload: Doc) -> list[Doc]:
    spec = workload["spec"]["template"]["spec"]
    found: list[Doc] = spec["containers"] + spec.get("initContainers", [])
    return found
