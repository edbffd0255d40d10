"""The protos are the contract, and the product follows them.

protos/contract.sh checks the contract's rules (protos/buf.yaml): a field removed or renumbered
fails it, a field added does not, and the working tree passes against its previous releases.
A field rule changed in a proto alone, and the code regenerated (protos/generate.sh, what
`make protos` runs), changes both API descriptions and what the services accept."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
CONTRACT = REPO_ROOT / "protos" / "contract.sh"
GENERATE = "generate.sh"
PROBE = REPO_ROOT / "tests" / "pet_name_probe.py"
PET_PROTO = Path("petstore/pet/v1/pet.proto")
NAME_FIELD = r"^  string name = 3 \[[^;]*\];"
"""Pet.name, with its field rules (an annotation over several lines)."""


def contract(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(CONTRACT), *args], capture_output=True, text=True, check=False)


@pytest.fixture
def changed(tmp_path: Path) -> Path:
    """A copy of protos/ (its buf.yaml included) to change."""
    copy = tmp_path / "protos"
    shutil.copytree(REPO_ROOT / "protos", copy, ignore=shutil.ignore_patterns("python"))
    return copy


def edit_pet(protos: Path, pattern: str, replacement: str | Callable[[re.Match[str]], str]) -> None:
    path = protos / PET_PROTO
    text, count = re.subn(pattern, replacement, path.read_text(), flags=re.MULTILINE)
    assert count == 1, pattern
    path.write_text(text)


def test_the_working_tree_keeps_the_contract_of_every_previous_release() -> None:
    result = contract()
    assert result.returncode == 0, result.stdout + result.stderr
    assert "buf lint: the protos follow the STANDARD rules" in result.stdout
    assert "buf breaking: nothing breaks the protos of the previous release at" in result.stdout


def test_a_removed_field_breaks_it(changed: Path) -> None:
    edit_pet(changed, NAME_FIELD + r"\n", "")
    result = contract("--protos", str(changed), "--against", str(REPO_ROOT / "protos"))
    assert result.returncode != 0
    assert 'field "3" with name "name" on message "Pet" was deleted' in result.stdout


def test_a_renumbered_field_breaks_it(changed: Path) -> None:
    edit_pet(changed, r"^  string name = 3 ", "  string name = 30 ")
    result = contract("--protos", str(changed), "--against", str(REPO_ROOT / "protos"))
    assert result.returncode != 0
    assert 'on message "Pet"' in result.stdout


def test_an_added_field_keeps_it(changed: Path) -> None:
    edit_pet(changed, NAME_FIELD, r"\g<0>\n  string nickname = 99;")
    result = contract("--protos", str(changed), "--against", str(REPO_ROOT / "protos"))
    assert result.returncode == 0, result.stdout + result.stderr


def probe(length: int, generated: Path | None = None) -> dict[str, Any]:
    """tests/pet_name_probe.py: the gateway and the three services in a process of their own,
    over `generated` protobuf code ahead of the project's, when given."""
    env = dict(os.environ)
    if generated is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, (str(generated), env.get("PYTHONPATH"))))
    result = subprocess.run(
        [sys.executable, str(PROBE), str(length)],
        capture_output=True,
        text=True,
        check=False,
        env=env,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    found: dict[str, Any] = json.loads(result.stdout)
    return found


def test_a_rule_changed_in_the_proto_alone_reaches_both_descriptions_and_the_service(changed: Path) -> None:
    limit = 300
    before = probe(limit)
    assert {before["swagger"], before["openapi"], before["form"]} == {256}
    assert before["created"][str(limit)][0] == 405  # over today's 256

    edit_pet(changed, NAME_FIELD, lambda match: match.group(0).replace("max_len: 256", f"max_len: {limit}"))
    generate = subprocess.run(
        [str(changed / GENERATE)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHON": sys.executable},
    )
    assert generate.returncode == 0, generate.stderr
    after = probe(limit, changed / "python")

    assert {after["swagger"], after["openapi"], after["form"]} == {limit}
    assert after["created"][str(limit)][0] == 200
    status, message = after["created"][str(limit + 1)]
    assert status == 405
    assert message == f"name: must be at most {limit} characters"
