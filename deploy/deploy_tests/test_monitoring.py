"""The optional Prometheus Operator component (deploy/k8s/components/monitoring): its rules are
petstore-alerts.yml's (one source) plus pod readiness, and it renders into an overlay with a
ServiceMonitor that scrapes the port every Petstore Service names `metrics`."""

from __future__ import annotations

import importlib.util
from types import ModuleType

import yaml

from .support import K8S, REPO, of_kind, render, rendered

COMPONENT = K8S / "components" / "monitoring"


def rules_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("petstore_monitoring_rules", COMPONENT / "rules.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_prometheus_rule_is_generated_from_the_alerts_file() -> None:
    assert (COMPONENT / "prometheusrule.yaml").read_text() == rules_module().rendered(), (
        "prometheusrule.yaml is stale: run .venv/bin/python deploy/k8s/components/monitoring/rules.py"
    )
    alerts = yaml.safe_load((REPO / "deploy" / "prometheus" / "petstore-alerts.yml").read_text())["groups"]
    rule = yaml.safe_load((COMPONENT / "prometheusrule.yaml").read_text())
    assert rule["spec"]["groups"][: len(alerts)] == alerts
    names = {r["alert"] for group in rule["spec"]["groups"] for r in group["rules"]}
    assert {"PetstorePodNotReady", "PetstoreGatewayErrorRatio", "PetstoreGatewayLatencyP99"} <= names


def test_the_component_renders_a_service_monitor_for_every_metrics_port() -> None:
    docs = render(K8S / "examples" / "monitoring")
    (monitor,) = of_kind(docs, "ServiceMonitor")
    (rule,) = of_kind(docs, "PrometheusRule")
    assert monitor["metadata"]["namespace"] == rule["metadata"]["namespace"] == "petstore"
    selector = monitor["spec"]["selector"]["matchLabels"]
    scraped = [
        s["metadata"]["name"]
        for s in of_kind(rendered("overlays/prod"), "Service")
        if selector.items() <= s["metadata"]["labels"].items()
        and any(port["name"] == monitor["spec"]["endpoints"][0]["port"] for port in s["spec"]["ports"])
    ]
    assert sorted(scraped) == ["gateway", "order-service", "pet-service", "user-service", "webhook-service"]
