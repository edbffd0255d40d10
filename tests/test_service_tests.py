"""Each service's tests stand on their own: none imports another service's package (a service it
calls is a stand-in in its tests, bound to it by the contract in protos/ alone). The gateway is
no service: its tests run the real services in-process (petstore_devstack.inprocess)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
SERVICES = {
    "pet-service": "petstore_pet",
    "order-service": "petstore_order",
    "user-service": "petstore_user",
    "webhook-service": "petstore_webhook",
}
IN_PROCESS_STACK = "petstore_devstack.inprocess"
"""Imports the services."""


def imported_modules(path: Path) -> set[str]:
    modules: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            modules.add(node.module)
    return modules


@pytest.mark.parametrize("service", sorted(SERVICES))
def test_no_service_test_imports_another_service(service: str) -> None:
    others = {package for name, package in SERVICES.items() if name != service}
    tests = sorted((REPO_ROOT / service / f"{service.replace('-', '_')}_tests").rglob("*.py"))
    assert tests
    found = {
        f"{path.relative_to(REPO_ROOT)}: {module}"
        for path in tests
        for module in imported_modules(path)
        if module.split(".")[0] in others or module.startswith(IN_PROCESS_STACK)
    }
    assert found == set()
