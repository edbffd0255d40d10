"""The request metrics: one series per method, route template and status, counted every time."""

from __future__ import annotations

from prometheus_client import generate_latest

from petstore_gateway.metrics import GatewayMetrics


def _exposition(metrics: GatewayMetrics) -> str:
    return generate_latest(metrics.registry).decode()


def test_every_request_counts_in_its_own_series() -> None:
    metrics = GatewayMetrics()
    for _ in range(3):
        metrics.observe("GET", "/v2/pet/{petId}", 200, 0.002)
    metrics.observe("GET", "/v2/pet/{petId}", 404, 0.001)
    text = _exposition(metrics)
    assert 'gateway_http_requests_total{method="GET",route="/v2/pet/{petId}",status="200"} 3.0' in text
    assert 'gateway_http_requests_total{method="GET",route="/v2/pet/{petId}",status="404"} 1.0' in text
    assert 'gateway_http_request_duration_seconds_count{method="GET",route="/v2/pet/{petId}"} 4.0' in text


def test_invented_methods_share_one_label_and_are_not_kept_apart() -> None:
    metrics = GatewayMetrics()
    for method in ("BREW", "WHEN", "BREW"):
        metrics.observe(method, "<unmatched>", 405, 0.001)
    text = _exposition(metrics)
    assert 'gateway_http_requests_total{method="OTHER",route="<unmatched>",status="405"} 3.0' in text
    assert "BREW" not in text
    assert not any(method == "BREW" for method, _, _ in metrics._series)
