"""The gateway depends on nothing it does not use: no database driver, in its declared
dependencies or in what it imports (the storage helpers are petstore-common's `mongo` extra)."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import requires

from packaging.requirements import Requirement


def test_the_gateway_imports_no_database_driver() -> None:
    probe = (
        "import sys, petstore_gateway.__main__, petstore_gateway.app;"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'pymongo', 'bson', 'motor'}))"
    )
    imported = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True)
    assert imported.stdout.strip() == "[]"


def test_the_gateway_installs_no_database_driver() -> None:
    gateway = [Requirement(text) for text in requires("petstore-gateway") or []]
    common = next(r for r in gateway if r.name == "petstore-common")
    assert not common.extras
    installed_with_it = [Requirement(text) for text in requires("petstore-common") or []]
    unconditional = {
        r.name for r in installed_with_it if r.marker is None or r.marker.evaluate({"extra": ""})
    }
    assert "pymongo" not in unconditional
    assert "pymongo" in {r.name for r in installed_with_it}  # the services' extra still has it
