"""requirements/run.lock, what `make run` installs, is exactly the third-party packages the
stack's own projects need to run (their pyproject.toml dependencies and everything those pull
in, as the development environment's metadata says), each pinned as requirements/dev.lock pins
it: the runtime set cannot drift from the development one, nor miss or carry a package.

After changing a project's dependencies, run this test: its failure shows the lines run.lock
should hold."""

from __future__ import annotations

import tomllib
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO_ROOT = Path(__file__).resolve().parents[1]
RUN_LOCK = REPO_ROOT / "requirements" / "run.lock"
DEV_LOCK = REPO_ROOT / "requirements" / "dev.lock"
RUN_PROJECTS = (
    "protos/python",
    "common",
    "devstack",
    "pet-service",
    "order-service",
    "user-service",
    "webhook-service",
    "gateway",
)
"""The projects `make run` installs (the Makefile's RUN_PACKAGES): the stack and its runner."""


def read_lock(path: Path) -> dict[str, str]:
    """canonical name -> `name==version` line."""
    pins: dict[str, str] = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            requirement = Requirement(line)
            pins[canonicalize_name(requirement.name)] = line
    return pins


def _requirements(texts: list[str]) -> list[Requirement]:
    wanted = []
    for text in texts:
        requirement = Requirement(text)
        if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
            wanted.append(requirement)
    return wanted


def runtime_closure() -> set[str]:
    """Canonical names of every third-party package the run projects need, transitively."""
    ours: dict[str, list[str]] = {}
    extras: dict[str, dict[str, list[str]]] = {}
    for project in RUN_PROJECTS:
        metadata = tomllib.loads((REPO_ROOT / project / "pyproject.toml").read_text())["project"]
        ours[canonicalize_name(metadata["name"])] = metadata.get("dependencies", [])
        extras[canonicalize_name(metadata["name"])] = metadata.get("optional-dependencies", {})
    needed: set[str] = set()
    pending = [r for dependencies in ours.values() for r in _requirements(dependencies)]
    while pending:
        requirement = pending.pop()
        name = canonicalize_name(requirement.name)
        if name in ours:  # one of ours, with the extras asked of it
            pending.extend(r for extra in requirement.extras for r in _requirements(extras[name][extra]))
            continue
        if name in needed:
            continue
        needed.add(name)
        try:
            pending.extend(_requirements(distribution(name).requires or []))
        except PackageNotFoundError:
            raise AssertionError(f"{name} is needed but not installed from dev.lock") from None
    return needed


def test_run_lock_pins_exactly_what_running_needs_as_dev_lock_pins_it() -> None:
    run, dev = read_lock(RUN_LOCK), read_lock(DEV_LOCK)
    needed = runtime_closure()
    assert {"aiohttp", "grpcio", "pymongo", "argon2-cffi"} <= needed  # the walk went somewhere
    expected = "\n".join(sorted((dev[name] for name in needed), key=str.lower))
    assert set(run) == needed, f"requirements/run.lock should read:\n{expected}"
    different = {name: (line, dev.get(name)) for name, line in run.items() if line != dev.get(name)}
    assert different == {}, "run.lock pins differ from dev.lock's"


def test_running_needs_far_less_than_developing() -> None:
    assert len(read_lock(RUN_LOCK)) * 2 < len(read_lock(DEV_LOCK))
