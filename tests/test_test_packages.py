"""One pytest run covers the repository: each project's tests are a package named after it
(gateway/gateway_tests, pet-service/pet_service_tests), never `tests`, which is the repository's
own suite (two packages of one name cannot share an interpreter); pyproject.toml's testpaths
names every one; `make unit` runs them all but deploy's (deploy/check.sh runs those) and
`make e2e` runs tests/."""

from __future__ import annotations

import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]


def project_test_packages() -> list[str]:
    """Each project's test package, as a path from the repository root."""
    found = REPO_ROOT.glob("*/*_tests/__init__.py")
    packages = sorted(init.parent.relative_to(REPO_ROOT).as_posix() for init in found)
    assert "gateway/gateway_tests" in packages  # the walk found them
    return packages


def test_each_projects_tests_are_named_after_it() -> None:
    for path in project_test_packages():
        project, package = path.split("/")
        assert package == f"{project.replace('-', '_')}_tests", path
    named_tests = sorted(str(project) for project in REPO_ROOT.iterdir() if (project / "tests").is_dir())
    assert named_tests == [], "a project's test package named `tests` clashes with the repository's"


def test_testpaths_name_every_test_package() -> None:
    pytest_options = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["tool"]["pytest"]
    testpaths = pytest_options["ini_options"]["testpaths"]
    assert sorted(testpaths) == sorted([*project_test_packages(), "tests"])


def make_variable(name: str) -> list[str]:
    if shutil.which("make") is None:
        pytest.fail("make is needed to read the Makefile's variables")
    printing = f"print-it:\n\t@echo $({name})"
    return subprocess.run(
        ["make", "--no-print-directory", "--eval", printing, "print-it"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()


def test_make_unit_runs_every_projects_tests_but_deploys_and_typecheck_reads_tests_too() -> None:
    expected = [path for path in project_test_packages() if path != "deploy/deploy_tests"]
    assert sorted(make_variable("UNIT_DIRS")) == sorted(expected)
    assert sorted(make_variable("TEST_DIRS")) == sorted([*expected, "tests"])
