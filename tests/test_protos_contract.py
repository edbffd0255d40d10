"""protos/contract.sh, the contract's rules (protos/buf.yaml): a field removed or renumbered
fails it, a field added does not, and the working tree passes against its previous releases."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
CONTRACT = REPO_ROOT / "protos" / "contract.sh"
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


def edit_pet(protos: Path, pattern: str, replacement: str) -> None:
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
