"""The shipped alert rules are well formed and watch metrics the processes really export."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "deploy" / "prometheus" / "petstore-alerts.yml"
SOURCES = [*ROOT.glob("*/src/**/*.py")]


def _rules() -> list[dict[str, object]]:
    document = yaml.safe_load(RULES.read_text())
    return [rule for group in document["groups"] for rule in group["rules"]]


def _exported_metrics() -> set[str]:
    """Names given to prometheus_client's Counter/Gauge/Histogram in the product's code."""
    pattern = re.compile(r"(?:Counter|Gauge|Histogram|Summary)\(\s*\"([a-z_:]+)\"", re.MULTILINE)
    return {name for source in SOURCES for name in pattern.findall(source.read_text())}


def test_every_rule_is_an_alert_with_what_an_operator_needs() -> None:
    rules = _rules()
    assert len(rules) >= 3
    for rule in rules:
        assert {"alert", "expr", "for", "labels", "annotations"} <= rule.keys(), rule
        assert rule["labels"]["severity"] in {"page", "ticket"}  # type: ignore[index]
        assert rule["annotations"]["summary"]  # type: ignore[index]


def test_every_metric_a_rule_reads_is_exported() -> None:
    exported = _exported_metrics()
    assert "petstore_storage_writes_failing" in exported
    for rule in _rules():
        for name in re.findall(r"\b((?:petstore|grpc_server|gateway)_[a-z_]+)\b", str(rule["expr"])):
            base = re.sub(r"_(total|bucket|sum|count)$", "", name)
            assert name in exported or base in exported, (rule["alert"], name)
