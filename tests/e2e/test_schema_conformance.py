"""The running stack against its own description, by schemathesis.

The description is fetched from the gateway (`/v2/swagger.json`) and every operation is driven
with a bounded, reproducible set of generated requests, valid and invalid (the examples,
coverage and fuzzing phases, `MAX_EXAMPLES` per operation, a fixed seed). Every answer must
be no 5xx and conform to the description: a documented status, a documented content type, a
body matching its schema, the documented headers. Writes carry the static api key, so they
reach the services instead of stopping at 401.

This drives schemathesis's engine (what its CLI runs) rather than its pytest plugin, whose
lazy-schema support does not work with pytest 9. Nothing is written to the working tree (no
Hypothesis database, no schemathesis cache) and no request leaves 127.0.0.1.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import requests
import schemathesis
from hypothesis.configuration import set_hypothesis_home_dir, storage_directory
from schemathesis.engine import StopReason, events, from_schema

from tests.e2e.conftest import STATIC_KEY, runs_before

MAX_EXAMPLES = 25
SEED = 20_240_501
CHECKS = (
    "not_a_server_error",
    "status_code_conformance",
    "content_type_conformance",
    "response_schema_conformance",
    "response_headers_conformance",
)
OPERATIONS = 27
"""What this gateway describes: the classic twenty, PUT /store/order/{orderId}, GET /store/order,
GET /pet/{petId}/images/{imageId} and the four of /webhooks (a gateway one release behind, in
the version-skew run, describes fewer: every one it describes is tested)."""
HTTP_METHODS = frozenset({"get", "put", "post", "delete", "options", "head", "patch"})
MAX_REQUEST_LINE_BYTES = 8190
"""aiohttp's limit: a longer request line gets its plain-text 400 before the API sees it (the
description says so in prose), so such requests are not generated."""


def _config(base_url: str) -> schemathesis.Config:
    return schemathesis.Config.from_dict(
        {
            "seed": SEED,
            "cache": {"enabled": False},
            "base-url": base_url,
            "headers": {"api_key": STATIC_KEY},
            "request-timeout": 15,
            "generation": {
                "mode": "all",
                "max-examples": MAX_EXAMPLES,
                "deterministic": True,
                "database": "none",
                "with-security-parameters": False,
            },
            "phases": {"stateful": {"enabled": False}},
            "checks": {"enabled": False, **{name: {"enabled": True} for name in CHECKS}},
        }
    )


def _request_line_bytes(case: schemathesis.Case[Any], base_url: str) -> int:
    sent = case.as_transport_kwargs(base_url=base_url)
    prepared = requests.Request(sent["method"], sent["url"], params=sent.get("params")).prepare()
    return len(f"{prepared.method} {prepared.path_url} HTTP/1.1".encode())


HELD_PET_WRITES = (("/pet", "put"), ("/pet/{petId}", "post"), ("/pet/{petId}", "delete"))
"""The writes the pet service of 1.1.0 refuses with 409 while an order holds the pet (docs/sale.md),
which a gateway of an earlier release does not describe."""


def _describe_held_pets(document: dict[str, Any]) -> None:
    """What a gateway one release behind leaves out of its description: the skew run with the gateway
    behind checks everything else against it (the compatibility rules in deploy/k8s/README.md)."""
    for path, method in HELD_PET_WRITES:
        responses = document["paths"][path][method]["responses"]
        responses.setdefault("409", {**responses["404"], "description": "An order holds the pet"})


@pytest.fixture
def hypothesis_home(tmp_path: Path) -> Iterator[None]:
    """Hypothesis's caches (unicode tables, constants) go to a temporary directory."""
    previous = storage_directory(intent_to_write=False).home_directory
    set_hypothesis_home_dir(tmp_path / "hypothesis")
    try:
        yield
    finally:
        set_hypothesis_home_dir(previous)


@pytest.mark.usefixtures("hypothesis_home")
def test_every_answer_conforms_to_the_description(base_url: str) -> None:
    assert urlsplit(base_url).hostname == "127.0.0.1", base_url
    document = requests.get(f"{base_url}/swagger.json", timeout=15).json()
    if runs_before("gateway", "1.1.0"):
        _describe_held_pets(document)
    schema = schemathesis.openapi.from_dict(document, config=_config(base_url))

    @schema.hook
    def filter_case(context: schemathesis.HookContext, case: schemathesis.Case[Any]) -> bool:
        return _request_line_bytes(case, base_url) <= MAX_REQUEST_LINE_BYTES

    problems: list[str] = []
    tested: set[str] = set()
    cases = 0
    finished: events.EngineFinished | None = None
    for event in from_schema(schema).execute():
        if isinstance(event, events.ScenarioFinished):
            recorder = event.recorder
            if recorder.cases:
                tested.add(recorder.label)
            cases += len(recorder.cases)
            for nodes in recorder.checks.values():
                for node in nodes:
                    if node.failure_info is not None:
                        failure = node.failure_info.failure
                        problems.append(
                            f"{recorder.label}: {failure.title}\n{failure.message}\n"
                            f"{node.failure_info.code_sample}"
                        )
        elif isinstance(event, events.NonFatalError):
            problems.append(f"{event.label}: {event.info.title}\n{event.info.message}")
        elif isinstance(event, events.FatalError):
            problems.append(f"fatal: {event.exception!r}")
        elif isinstance(event, events.EngineFinished):
            finished = event
            problems.extend(f"{failure.operation}: {failure.title}" for failure in event.failures)
    assert finished is not None
    assert finished.stop_reason is StopReason.COMPLETED, finished.stop_reason
    unique = sorted(set(problems))
    assert not unique, f"{len(unique)} problem(s):\n\n" + "\n\n".join(unique)
    described = {
        f"{method.upper()} {path}"
        for path, item in document["paths"].items()
        for method in item
        if method in HTTP_METHODS
    }
    if not runs_before("gateway", "1.1.0"):
        assert len(described) == OPERATIONS, sorted(described)
    assert tested == described, sorted(described ^ tested)
    assert cases >= len(described) * MAX_EXAMPLES // 2, cases
