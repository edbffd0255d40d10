"""The README's shell examples, run as pasted against a fresh process-mode stack, so that they
cannot rot.

The convention (also in the README, under "Using it"):
- A ```sh block right after a line `<!-- example -->` is an example. Every example runs, in
  document order, in ONE bash shell: variables set by one (`TOKEN`, `KEY`) serve the next.
- `http://127.0.0.1:8080` is replaced by the test stack's address; its staff key is
  `dev-key-change-me`, as the README's `export PETSTORE_API_KEYS=...` line sets it.
- After a command, comment lines `# => text` say what its output contains; `…` matches
  anything (within the output, across lines). A command without one must exit 0.
- A command is a line plus the lines its trailing backslashes continue; other comment lines are
  prose.
New sections follow the same marker and land wherever they stand in the document; nothing here
needs to change for them. The stack is the embedded store, started once for all examples."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from petstore_devstack.stack import Stack

README = Path(__file__).resolve().parents[1] / "README.md"
MARKER = "<!-- example -->"
README_ORIGIN = "http://127.0.0.1:8080"
STAFF_KEY = "dev-key-change-me"
EXPECT_PREFIX = "# => "
COMMAND_TIMEOUT_SECONDS = 120
_SEPARATOR = "@@readme-example-{}@@"


@dataclass
class Command:
    text: str
    line: int
    """Where it starts in README.md (1-based), for the failure message."""
    expected: list[str] = field(default_factory=list)


def example_commands(markdown: str) -> list[Command]:
    """Every command of every marked block, in document order."""
    lines = markdown.splitlines()
    commands: list[Command] = []
    index = 0
    while index < len(lines):
        if lines[index].strip() == MARKER:
            index += 1
            while index < len(lines) and not lines[index].strip():
                index += 1
            if index >= len(lines) or lines[index].strip() != "```sh":
                raise AssertionError(f"README.md:{index + 1}: {MARKER} must be followed by a ```sh block")
            index += 1
            pending: list[str] = []
            start = index
            while lines[index].strip() != "```":
                text = lines[index]
                if pending or (text.strip() and not text.lstrip().startswith("#")):
                    if not pending:
                        start = index
                    pending.append(text)
                    if not text.rstrip().endswith("\\"):
                        commands.append(Command("\n".join(pending), start + 1))
                        pending = []
                elif text.startswith(EXPECT_PREFIX):
                    if not commands:
                        raise AssertionError(f"README.md:{index + 1}: an expectation before any command")
                    commands[-1].expected.append(text.removeprefix(EXPECT_PREFIX))
                index += 1
        index += 1
    return commands


def matches(expected: str, output: str) -> bool:
    pattern = ".*?".join(re.escape(part) for part in expected.split("…"))
    return re.search(pattern, output, re.DOTALL) is not None


def run_examples(commands: list[Command], origin: str, workdir: Path) -> list[str]:
    """The output of each command, run one after another in one bash process in `workdir`
    (where files the examples write land)."""
    script = ["set -u"]
    for number, command in enumerate(commands):
        script.append(command.text.replace(README_ORIGIN, origin))
        # The exit status travels with the separator, so one failing command is named.
        script.append(f'echo; echo "{_SEPARATOR.format(number)} $?"')
    result = subprocess.run(
        ["bash", "-c", "\n".join(script)],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT_SECONDS,
    )
    outputs: list[str] = []
    rest = result.stdout
    for number, command in enumerate(commands):
        before, separator, rest = rest.partition(_SEPARATOR.format(number))
        assert separator, f"README.md:{command.line}: never finished\n{result.stderr}"
        status, _, rest = rest.partition("\n")
        assert status.strip() == "0", f"README.md:{command.line}: exit status {status}\n{result.stderr}"
        outputs.append(before)
    return outputs


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    if shutil.which("curl") is None:
        pytest.fail("the README's examples use curl: install it (make test needs it)")
    running = Stack(api_keys=STAFF_KEY, log_dir=tmp_path_factory.mktemp("readme-stack"))
    running.start()
    try:
        yield running
    finally:
        running.stop()


def test_the_convention_finds_the_examples() -> None:
    commands = example_commands(README.read_text())
    assert len(commands) >= 10
    assert sum(len(command.expected) for command in commands) >= 10
    assert any("TOKEN=" in command.text for command in commands)  # the variable the rest use


def test_the_extraction_keeps_continuations_and_expectations_together() -> None:
    markdown = "\n".join(
        [
            "prose",
            "```sh",
            "not an example",
            "```",
            MARKER,
            "```sh",
            "# prose comment",
            "curl -s a \\",
            "  -d b",
            "# => {…}",
            "X=1",
            "```",
        ]
    )
    commands = example_commands(markdown)
    assert [(c.text, c.expected) for c in commands] == [("curl -s a \\\n  -d b", ["{…}"]), ("X=1", [])]
    assert matches('{"id":…,"username":"ada"}', 'x {"id":7,"username":"ada"}\n')
    assert not matches('{"id":…,"username":"ada"}', '{"id":7,"username":"bob"}')


def test_every_readme_example_answers_as_the_readme_says(stack: Stack, tmp_path: Path) -> None:
    commands = example_commands(README.read_text())
    origin = stack.base_url.removesuffix("/v2")
    outputs = run_examples(commands, origin, tmp_path)
    wrong = [
        f"README.md:{command.line}: {command.text!r}\n  expected to contain: {expected}\n  got: {output!r}"
        for command, output in zip(commands, outputs, strict=True)
        for expected in command.expected
        if not matches(expected.replace(README_ORIGIN, origin), output)
    ]
    assert wrong == [], "\n".join(wrong)
