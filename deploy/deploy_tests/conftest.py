"""Fixtures of the deployment policy tests (helpers in support.py)."""

from __future__ import annotations

import pytest
import yaml

from .support import OVERLAYS, REPO, Doc, rendered


@pytest.fixture(scope="session")
def overlays() -> dict[str, list[Doc]]:
    return {name: rendered(f"overlays/{name}") for name in OVERLAYS}


@pytest.fixture(scope="session")
def compose() -> Doc:
    with (REPO / "docker-compose.yml").open() as handle:
        doc: Doc = yaml.safe_load(handle)  # the safe loader resolves `<<:` merge keys
    return doc
