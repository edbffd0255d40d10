"""`make help` names every target the Makefile declares, so a newcomer sees them all."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]


def declared_targets() -> set[str]:
    makefile = (REPO_ROOT / "Makefile").read_text()
    phony = re.search(r"^\.PHONY:(.*)$", makefile, re.MULTILINE)
    assert phony is not None
    return set(phony.group(1).split())


def test_make_help_lists_every_target() -> None:
    if shutil.which("make") is None:
        pytest.fail("make is needed to read `make help`")
    shown = subprocess.run(
        ["make", "--no-print-directory", "help"], cwd=REPO_ROOT, capture_output=True, text=True, check=True
    ).stdout
    listed = set(re.findall(r"^make (\S+)", shown, re.MULTILINE))
    assert len(declared_targets()) >= 15
    assert declared_targets() - {"help"} <= listed
    assert listed <= declared_targets()
