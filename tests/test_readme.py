"""The documentation, held to what it claims.

The README's and the tour's shell examples run as pasted against a fresh process-mode stack, so
they cannot rot. The convention (also in docs/tour.md, "Adding an example"):
- A ```sh block right after a line `<!-- example -->` is an example. Every example runs, in
  document order (README.md, then docs/tour.md), in ONE bash shell: variables set by one
  (`TOKEN`, `KEY`) serve the next.
- `http://127.0.0.1:8080` is replaced by the test stack's address; its staff key is
  `dev-key-change-me`, as the README's `export PETSTORE_API_KEYS=...` line sets it.
- After a command, comment lines `# => text` say what its output contains; `…` matches
  anything (within the output, across lines). A command without one must exit 0.
- A command is a line plus the lines its trailing backslashes continue; other comment lines are
  prose.
New sections follow the same marker and land wherever they stand in the document; nothing here
needs to change for them. The stack is the embedded store, started once for all examples.

The rest holds what a newcomer relies on: the README stays short, its first block sets the staff
key the examples use before anything calls as staff, every relative link of README.md and
docs/*.md leads to a file and heading that exist, and the generated tables in docs/ match the
code (`make docs` rewrites them)."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from petstore_devstack.stack import Stack

REPO_ROOT = Path(__file__).resolve().parents[1]
README = REPO_ROOT / "README.md"
DOCS = REPO_ROOT / "docs"
EXAMPLE_FILES = (README, DOCS / "tour.md")
"""Where the examples are, in the order they run."""
MARKER = "<!-- example -->"
README_ORIGIN = "http://127.0.0.1:8080"
STAFF_KEY = "dev-key-change-me"
EXPECT_PREFIX = "# => "
COMMAND_TIMEOUT_SECONDS = 120
README_MAX_LINES = 160
_SEPARATOR = "@@readme-example-{}@@"


@dataclass
class Command:
    text: str
    line: int
    """Where it starts in its file (1-based), for the failure message."""
    expected: list[str] = field(default_factory=list)
    source: str = "README.md"
    """The file it is in, relative to the repository."""

    @property
    def where(self) -> str:
        return f"{self.source}:{self.line}"


def example_commands(markdown: str, source: str = "README.md") -> list[Command]:
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
                raise AssertionError(f"{source}:{index + 1}: {MARKER} must be followed by a ```sh block")
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
                        commands.append(Command("\n".join(pending), start + 1, source=source))
                        pending = []
                elif text.startswith(EXPECT_PREFIX):
                    if not commands:
                        raise AssertionError(f"{source}:{index + 1}: an expectation before any command")
                    commands[-1].expected.append(text.removeprefix(EXPECT_PREFIX))
                index += 1
        index += 1
    return commands


def all_example_commands() -> list[Command]:
    """The examples of every file that holds some, in the order they run."""
    return [
        command
        for path in EXAMPLE_FILES
        for command in example_commands(path.read_text(), str(path.relative_to(REPO_ROOT)))
    ]


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
        assert separator, f"{command.where}: never finished\n{result.stderr}"
        status, _, rest = rest.partition("\n")
        assert status.strip() == "0", f"{command.where}: exit status {status}\n{result.stderr}"
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
    commands = all_example_commands()
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


def test_every_example_answers_as_its_page_says(stack: Stack, tmp_path: Path) -> None:
    commands = all_example_commands()
    origin = stack.base_url.removesuffix("/v2")
    outputs = run_examples(commands, origin, tmp_path)
    wrong = [
        f"{command.where}: {command.text!r}\n  expected to contain: {expected}\n  got: {output!r}"
        for command, output in zip(commands, outputs, strict=True)
        for expected in command.expected
        if not matches(expected.replace(README_ORIGIN, origin), output)
    ]
    assert wrong == [], "\n".join(wrong)


# ---------------------------------------------------------------------------------------
# What a newcomer relies on


def documentation() -> list[Path]:
    return [README, *sorted(DOCS.glob("*.md"))]


def test_the_readme_is_read_in_five_minutes() -> None:
    lines = len(README.read_text().splitlines())
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines: move detail into docs/"


def shell_blocks(markdown: str) -> list[tuple[int, str]]:
    """(first line number, text) of every ```sh block: the commands a reader pastes."""
    blocks: list[tuple[int, str]] = []
    start, language = 0, ""
    body: list[str] = []
    for number, line in enumerate(markdown.splitlines(), 1):
        if line.strip().startswith("```"):
            if start:
                if language == "sh":
                    blocks.append((start, "\n".join(body)))
                start, body = 0, []
            else:
                start, language = number, line.strip().removeprefix("```")
        elif start:
            body.append(line)
    return blocks


def test_the_first_block_sets_the_staff_key_the_examples_use_before_any_staff_call() -> None:
    """Pasted in order, the README works: `make run` starts with the key its examples send."""
    readme = README.read_text()
    export = f"export PETSTORE_API_KEYS={STAFF_KEY}"
    first_line, first = shell_blocks(readme)[0]
    assert export in first, f"README.md:{first_line}: the first commands must set `{export}`"
    assert first.index(export) < first.index("make run"), "the key is set before the stack starts"
    staff_call = f"api_key: {STAFF_KEY}"
    export_at = readme.index(export)
    assert staff_call in readme
    assert readme.index(staff_call) > export_at, "a staff call comes before the key is set"
    assert not re.search(r"PETSTORE_API_KEYS=(?!" + re.escape(STAFF_KEY) + r"\b)", readme), (
        "the README sets PETSTORE_API_KEYS to a key its examples do not send"
    )


def test_the_examples_start_in_the_readme_and_go_on_in_the_tour() -> None:
    for path in EXAMPLE_FILES:
        commands = example_commands(path.read_text(), path.name)
        assert any(STAFF_KEY in command.text for command in commands), path.name
    assert any("TOKEN=" in command.text for command in example_commands(README.read_text()))


_LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
_CODE_SPAN = re.compile(r"`[^`\n]*`")


def anchors(markdown: str) -> set[str]:
    """The ids GitHub gives the headings: lower case, punctuation dropped, spaces as hyphens."""
    seen: dict[str, int] = {}
    found = set()
    outside_code = re.sub(r"^```.*?^```", "", markdown, flags=re.DOTALL | re.MULTILINE)
    for heading in re.findall(r"^#{1,6} +(.+?) *#*$", outside_code, re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", heading.replace("`", "").lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def relative_links(markdown: str) -> list[str]:
    prose = _CODE_SPAN.sub("", re.sub(r"^```.*?^```", "", markdown, flags=re.DOTALL | re.MULTILINE))
    return [
        target
        for target in _LINK.findall(prose)
        if not re.match(r"[a-z][a-z0-9+.-]*:", target, re.IGNORECASE)
    ]


def test_every_relative_link_leads_to_a_file_and_heading_that_exist() -> None:
    broken = []
    for page in documentation():
        for target in relative_links(page.read_text()):
            path_part, _, anchor = target.partition("#")
            destination = (page.parent / path_part).resolve() if path_part else page
            where = f"{page.relative_to(REPO_ROOT)}: ({target})"
            if not destination.exists():
                broken.append(f"{where}: no such file")
            elif anchor and (destination.suffix != ".md" or anchor not in anchors(destination.read_text())):
                broken.append(f"{where}: no heading #{anchor}")
    assert broken == [], "\n".join(broken)


def test_every_docs_page_is_linked_from_the_readme() -> None:
    linked = {target.partition("#")[0] for target in relative_links(README.read_text())}
    unlinked = [page.name for page in sorted(DOCS.glob("*.md")) if f"docs/{page.name}" not in linked]
    assert unlinked == [], f"README.md's 'Where to go next' does not link {unlinked}"


def test_the_link_checks_catch_what_they_should() -> None:
    markdown = "## Who may do what\n# `make run` (and more)\n```sh\n# not a heading\n```\n"
    assert anchors(markdown) == {"who-may-do-what", "make-run-and-more"}
    links = "[a](docs/a.md#x) [b](https://example.com) `[c](d.md)` ![e](f.png) [g](#h)"
    assert relative_links(links) == ["docs/a.md#x", "#h"]


def test_the_generated_tables_are_current() -> None:
    """As `make protos-check` for the protos: a table in docs/ that the code no longer matches
    (a setting added, a default or an operation's access changed) fails until `make docs`."""
    from petstore_devstack import doc_tables

    present = {
        match["name"]
        for page in doc_tables.documents()
        for match in doc_tables.BLOCK.finditer(page.read_text())
    }
    assert present >= set(doc_tables.TABLES), f"docs/ lacks the tables {set(doc_tables.TABLES) - present}"
    stale = doc_tables.stale_documents(write=False)
    assert stale == [], f"stale generated tables in {[str(p) for p in stale]}: run `make docs`"
