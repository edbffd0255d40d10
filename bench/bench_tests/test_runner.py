"""The runner's waiting for an idle stack between scenarios."""

from __future__ import annotations

import os
import threading
import time

from petstore_bench import runner


def test_settle_returns_at_once_when_idle() -> None:
    waited = runner.settle({"me": os.getpid()}, limit_s=2)
    assert waited < 1


def test_settle_waits_while_busy_but_not_past_its_limit() -> None:
    stop = threading.Event()

    def spin() -> None:
        while not stop.is_set():
            sum(range(1000))

    spinner = threading.Thread(target=spin)
    spinner.start()
    try:
        started = time.monotonic()
        waited = runner.settle({"me": os.getpid()}, limit_s=0.5)
    finally:
        stop.set()
        spinner.join()
    assert 0.5 <= waited < 1.5
    assert time.monotonic() - started < 1.5


def test_a_gone_process_counts_as_idle() -> None:
    assert runner.settle({"gone": 2**22 + 12345}, limit_s=2) < 1


def test_pet_cache_lookups_are_read_from_the_gateways_metrics() -> None:
    # As prometheus_client writes the gateway's counter (petstore_gateway.metrics).
    text = (
        "# HELP gateway_pet_cache_lookups_total Pet reads looked up in the cache ...\n"
        "# TYPE gateway_pet_cache_lookups_total counter\n"
        'gateway_pet_cache_lookups_total{result="hit"} 120034.0\n'
        'gateway_pet_cache_lookups_total{result="miss"} 7.0\n'
        "gateway_pet_cache_live 1.0\n"
    )
    assert runner.cache_lookups(text) == {"hit": 120034, "miss": 7}
    assert runner.cache_lookups("gateway_pet_cache_live 0.0\n") == {}
