"""Prometheus metrics of the HTTP API, on a registry per application (tests build many apps),
served on METRICS_PORT by petstore_common.metrics, never on the API's port."""

from __future__ import annotations

from collections.abc import Iterator

from aiohttp import web
from prometheus_client import (
    CollectorRegistry,
    Counter,
    GCCollector,
    Histogram,
    PlatformCollector,
    ProcessCollector,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from petstore_gateway.pet_cache import PetCache

KNOWN_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH"})
UNMATCHED_ROUTE = "<unmatched>"
"""The route label of requests no route matched; raw paths would make labels unbounded."""


class GatewayMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        GCCollector(registry=self.registry)
        self.requests = Counter(
            "gateway_http_requests_total",
            "HTTP requests answered, by method, route template and status.",
            ["method", "route", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "gateway_http_request_duration_seconds",
            "Time to answer an HTTP request, by method and route template.",
            ["method", "route"],
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
            registry=self.registry,
        )
        self.rate_limited = Counter(
            "gateway_rate_limited_total",
            "Requests refused with 429 by a gateway rate limit, by limit (client, login or signup).",
            ["limit"],
            registry=self.registry,
        )
        self._series: dict[tuple[str, str, int], tuple[Counter, Histogram]] = {}

    def watch_cache(self, cache: PetCache) -> None:
        """Expose the pet cache's counters, read at scrape time (nothing on the request path)."""
        self.registry.register(_PetCacheCollector(cache))

    def observe(self, method: str, route: str, status: int, seconds: float) -> None:
        series = self._series.get((method, route, status))
        if series is None:
            series = self._labelled(method, route, status)
        counter, histogram = series
        counter.inc()
        histogram.observe(seconds)

    def _labelled(self, method: str, route: str, status: int) -> tuple[Counter, Histogram]:
        """The series of one (method, route, status), kept: `labels()` on every request cost
        about 2 % of a cached read. Bounded: routes are templates, methods and statuses few."""
        label = method if method in KNOWN_METHODS else "OTHER"
        series = (self.requests.labels(label, route, str(status)), self.latency.labels(label, route))
        if method in KNOWN_METHODS:  # any other method is a client's invention: not a key to keep
            self._series[(method, route, status)] = series
        return series

    def limited(self, limit: str) -> None:
        self.rate_limited.labels(limit).inc()


class _PetCacheCollector(Collector):
    def __init__(self, cache: PetCache) -> None:
        self._cache = cache

    def collect(self) -> Iterator[Metric]:
        stats = self._cache.stats
        lookups = CounterMetricFamily(
            "gateway_pet_cache_lookups",
            "Pet reads looked up in the cache while it was live, by result (hit or miss).",
            labels=["result"],
        )
        lookups.add_metric(["hit"], stats.hits)
        lookups.add_metric(["miss"], stats.misses)
        yield lookups
        yield CounterMetricFamily(
            "gateway_pet_cache_discarded_fills",
            "Reads not cached because their pet changed while they were in flight.",
            value=stats.discarded,
        )
        yield CounterMetricFamily(
            "gateway_pet_cache_losses",
            "Times the cache forgot its entries: the WatchPets stream was lost and did not resume.",
            value=stats.lost,
        )
        yield CounterMetricFamily(
            "gateway_pet_cache_suspensions",
            "Times the WatchPets stream broke and the cache stopped answering until a new one was live.",
            value=stats.suspended,
        )
        yield GaugeMetricFamily(
            "gateway_pet_cache_live",
            "1 while the cache is kept coherent and answers reads.",
            value=int(self._cache.live),
        )
        entries, size = self._cache.size
        yield GaugeMetricFamily("gateway_pet_cache_entries", "Representations cached.", value=entries)
        yield GaugeMetricFamily(
            "gateway_pet_cache_bytes", "Bytes counted against PET_CACHE_MAX_BYTES.", value=size
        )


def route_template(request: web.Request) -> str:
    """The matched route's template (/v2/pet/{petId}), never the raw path. A 405 is labelled
    with the template whose path matched (the method did not), so on-call sees which resource."""
    refused = request.match_info.http_exception
    if refused is None:
        resource = request.match_info.route.resource
        return resource.canonical if resource is not None else UNMATCHED_ROUTE
    if isinstance(refused, web.HTTPMethodNotAllowed):
        return _template_matching(request.app.router, request.path) or UNMATCHED_ROUTE
    return UNMATCHED_ROUTE


def _template_matching(router: web.UrlDispatcher, path: str) -> str | None:
    """The template of `router`'s resource (sub-applications' included) whose path is `path`."""
    for resource in router.resources():
        info = resource.get_info()
        app = info.get("app")
        if isinstance(app, web.Application):
            found = _template_matching(app.router, path)
        elif "pattern" in info:
            found = resource.canonical if info["pattern"].fullmatch(path) else None
        else:
            found = resource.canonical if info.get("path") == path else None
        if found is not None:
            return found
    return None
