"""The five Dockerfiles and the build context (.dockerignore)."""

from __future__ import annotations

import json
import re

import pytest
from docker.utils.build import exclude_paths

from .support import APPS, REPO

MODULES = {
    "gateway": "petstore_gateway",
    "pet-service": "petstore_pet",
    "order-service": "petstore_order",
    "user-service": "petstore_user",
    "webhook-service": "petstore_webhook",
}


def _instructions(app: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    text = (REPO / app / "Dockerfile").read_text()
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    joined = re.sub(r"\\\n", " ", "\n".join(lines))
    result = []
    for line in joined.splitlines():
        if line.strip():
            keyword, _, rest = line.strip().partition(" ")
            result.append((keyword.upper(), rest.strip()))
    return result


def _final_stage(app: str) -> list[tuple[str, str]]:
    instructions = _instructions(app)
    last_from = max(i for i, (keyword, _) in enumerate(instructions) if keyword == "FROM")
    return instructions[last_from:]


@pytest.mark.parametrize("app", APPS)
def test_multi_stage_from_one_pinned_slim_python(app: str) -> None:
    instructions = _instructions(app)
    (arg,) = [rest for keyword, rest in instructions if keyword == "ARG" and rest.startswith("PYTHON_IMAGE=")]
    assert re.fullmatch(r"PYTHON_IMAGE=python:3\.11\.\d+-slim-[a-z]+", arg), arg
    froms = [rest for keyword, rest in instructions if keyword == "FROM"]
    assert len(froms) >= 2
    assert all(f.startswith("${PYTHON_IMAGE}") for f in froms)


@pytest.mark.parametrize("app", APPS)
def test_final_stage_is_runtime_only_non_root_with_exec_cmd(app: str) -> None:
    stage = _final_stage(app)
    copies = [rest for keyword, rest in stage if keyword == "COPY"]
    assert copies == [
        "--from=build /opt/venv /opt/venv",
        "deploy/docker/healthcheck.py /usr/local/bin/petstore-healthcheck",
    ]
    users = [rest for keyword, rest in stage if keyword == "USER"]
    assert users, "no USER in the final stage"
    assert re.fullmatch(r"[1-9]\d*(:\d+)?", users[-1]), f"USER must be a non-root number: {users[-1]}"
    cmd = [rest for keyword, rest in stage if keyword == "CMD"]
    assert json.loads(cmd[-1]) == ["python", "-m", MODULES[app]]  # exec form: Python is PID 1
    env = " ".join(rest for keyword, rest in stage if keyword == "ENV")
    assert "PYTHONUNBUFFERED=1" in env
    (healthcheck,) = [rest for keyword, rest in stage if keyword == "HEALTHCHECK"]
    probe = json.loads(healthcheck.split("CMD", 1)[1])
    assert probe == ["python", "/usr/local/bin/petstore-healthcheck", "http" if app == "gateway" else "grpc"]


def test_build_context_holds_what_the_images_need_and_nothing_private() -> None:
    patterns = [
        line.strip()
        for line in (REPO / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    context = exclude_paths(str(REPO), patterns)
    for needed in ("requirements/dev.lock", "deploy/docker/healthcheck.py", "common/pyproject.toml"):
        assert needed in context, needed
    for app in APPS:
        if (REPO / app / "pyproject.toml").exists():  # projects still being written may lack it
            assert f"{app}/pyproject.toml" in context, app
    forbidden = re.compile(
        r"(^|/)(\.git|\.venv|\.cache|(\w+_)?tests|__pycache__|\.mypy_cache|\.ruff_cache|\.pytest_cache|bench)(/|$)"
        r"|(^|/)\.env(\.|$)|\.egg-info(/|$)"
    )
    leaked = sorted(path for path in context if forbidden.search(path))
    assert not leaked, leaked
