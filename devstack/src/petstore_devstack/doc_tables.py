"""Tables in docs/*.md made from the code, so they cannot drift: `make docs` rewrites them,
tests/test_readme.py fails while one is stale (as `make protos-check` does for the protos).

A table lives between `<!-- generated: NAME -->` and `<!-- end generated -->`:
- `settings`: every environment variable a process reads, with its default and meaning. Names
  and defaults are recorded while each process's own settings code reads an environment
  (`from_env`, the log format, the tracing switch); meanings come from setting_meanings.
- `operations`: every operation of the API, and who may call it, from the gateway's declarations
  (petstore_gateway.routes.OPERATIONS).

`python -m petstore_devstack.doc_tables` rewrites the tables; `--check` only says which are stale.
"""

from __future__ import annotations

import argparse
import contextlib
import re
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any
from unittest import mock

from petstore_devstack.setting_meanings import MEANINGS

REPO_ROOT = Path(__file__).resolve().parents[3]
DOCS = REPO_ROOT / "docs"
BLOCK = re.compile(
    r"(<!-- generated: (?P<name>[a-z]+) -->\n)(?P<body>.*?)(<!-- end generated -->)", re.DOTALL
)

PROCESSES = ("gateway", "pet", "order", "user", "webhook")
SERVICES = frozenset({"pet", "order", "user", "webhook"})
_ENV_HELPERS = ("env_str", "env_int", "env_float", "_env_bool")
"""The settings modules' helpers that take (env, name, default): wrapped to record the default."""
_SETTINGS_MODULES = (
    "petstore_common.settings",
    "petstore_gateway.settings",
    "petstore_pet.settings",
    "petstore_order.settings",
    "petstore_user.settings",
    "petstore_webhook.settings",
)
_NO_DEFAULT = object()


class DocTableError(Exception):
    """The code and setting_meanings disagree, or a marker names no table."""


class _RecordingEnv(Mapping[str, str]):
    """An environment that notes every name read from it, and the default a caller passed."""

    def __init__(self, values: Mapping[str, str], reads: dict[str, object]) -> None:
        self._values = dict(values)
        self._reads = reads

    def _note(self, name: str, default: object) -> None:
        if self._reads.get(name, _NO_DEFAULT) in (_NO_DEFAULT, "", None):
            self._reads[name] = default

    def __getitem__(self, name: str) -> str:
        self._note(name, _NO_DEFAULT)
        return self._values[name]

    def get(self, name: str, default: Any = None) -> Any:
        self._note(name, default)
        return self._values.get(name, default)

    def __contains__(self, name: object) -> bool:
        if isinstance(name, str):
            self._note(name, _NO_DEFAULT)
        return name in self._values

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)


@contextlib.contextmanager
def _defaults_recorded(reads: dict[str, object]) -> Iterator[None]:
    """While open, the settings modules' env helpers note (name, default) before reading."""
    import importlib

    def recording(original: Callable[..., Any]) -> Callable[..., Any]:
        def helper(env: Mapping[str, str], name: str, default: object, *args: Any, **kwargs: Any) -> Any:
            reads[name] = default
            return original(env, name, default, *args, **kwargs)

        return helper

    with contextlib.ExitStack() as patches:
        for module_name in _SETTINGS_MODULES:
            module = importlib.import_module(module_name)
            for helper_name in _ENV_HELPERS:
                if hasattr(module, helper_name):
                    original = getattr(module, helper_name)
                    patches.enter_context(mock.patch.object(module, helper_name, recording(original)))
        yield


def _readers() -> dict[str, list[Callable[[Mapping[str, str]], object]]]:
    """What each process reads its environment with, at start-up."""
    from petstore_common.logging import log_format_from_env
    from petstore_common.tracing import tracing_enabled
    from petstore_gateway.settings import GatewaySettings
    from petstore_order.settings import OrderSettings
    from petstore_pet.settings import PetSettings
    from petstore_user.settings import UserSettings
    from petstore_webhook.settings import WebhookSettings

    def log_format(env: Mapping[str, str]) -> object:
        return log_format_from_env(env, stream_is_terminal=False)

    every_process = [log_format, tracing_enabled]
    return {
        "gateway": [GatewaySettings.from_env, *every_process],
        "pet": [PetSettings.from_env, *every_process],
        "order": [OrderSettings.from_env, *every_process],
        "user": [UserSettings.from_env, *every_process],
        "webhook": [WebhookSettings.from_env, *every_process],
    }


def _required_values() -> dict[str, str]:
    """Values the settings refuse to start without (never shown: only names and defaults are)."""
    from petstore_common import caller_keys

    return {"PETSTORE_SESSION_SECRET": "s" * 64, "CALLER_SIGNING_KEY": caller_keys.generate().seed}


def read_settings() -> dict[str, dict[str, object]]:
    """name -> process -> the default its code passed (_NO_DEFAULT where it passed none)."""
    found: dict[str, dict[str, object]] = {}
    values = _required_values()
    for process, readers in _readers().items():
        reads: dict[str, object] = {}
        with _defaults_recorded(reads):
            for read in readers:
                read(_RecordingEnv(values, reads))
        for name, default in reads.items():
            found.setdefault(name, {})[process] = default
    return found


def _shown(value: object) -> str:
    if value is _NO_DEFAULT or value is None or value == "":
        return "empty"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, int):
        return str(value)
    return f"`{value}`"


def _readers_shown(processes: list[str]) -> str:
    if set(processes) == set(PROCESSES):
        return "all"
    if set(processes) == SERVICES:
        return "services"
    return ", ".join(processes)


def _row_order(processes: list[str]) -> int:
    """Every process's first, then the gateway's, the services', and one service's."""
    if set(processes) == set(PROCESSES):
        return 0
    if "gateway" in processes:
        return 1
    if set(processes) == SERVICES:
        return 2
    return 2 + min(PROCESSES.index(process) for process in processes)


def settings_table() -> str:
    found = read_settings()
    unexplained = sorted(set(found) - set(MEANINGS))
    unread = sorted(set(MEANINGS) - set(found))
    if unexplained or unread:
        raise DocTableError(
            "petstore_devstack/setting_meanings.py is out of step with the settings code: "
            + "; ".join(
                part
                for part in (
                    f"no meaning for {', '.join(unexplained)} (add one)" if unexplained else "",
                    f"a meaning for {', '.join(unread)}, which no process reads (remove it)"
                    if unread
                    else "",
                )
                if part
            )
        )
    rows = []
    for name, defaults in found.items():
        processes = [process for process in PROCESSES if process in defaults]
        meaning = MEANINGS[name]
        shown = {process: _shown(defaults[process]) for process in processes}
        if meaning.default:
            if any(value != "empty" for value in shown.values()):
                raise DocTableError(
                    f"{name}: the code has a default of its own; drop the one in setting_meanings"
                )
            default = meaning.default
        elif len(set(shown.values())) == 1:
            default = shown[processes[0]]
        else:
            default = ", ".join(f"{value} ({process})" for process, value in shown.items())
        rows.append((_row_order(processes), name, _readers_shown(processes), default, meaning.text))
    lines = ["| variable | read by | default | meaning |", "| --- | --- | --- | --- |"]
    lines += [
        f"| `{name}` | {readers} | {default} | {text} |" for _, name, readers, default, text in sorted(rows)
    ]
    return "\n".join(lines) + "\n"


_WHO = {
    # Access -> (anonymous, customer, staff), as the auth step of the gateway's request pipeline answers.
    "open": ("yes", "yes", "yes"),
    "optional": ("yes", "yes", "yes"),
    "required": ("401", "yes", "yes"),
    "staff": ("401", "403", "yes"),
}


def operations_table() -> str:
    from petstore_gateway.operations import API_PREFIX
    from petstore_gateway.routes import OPERATIONS

    lines = [
        f"| method | path (under `{API_PREFIX}`) | operationId | anonymous | customer | staff | takes |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for op in OPERATIONS:
        anonymous, customer, staff = _WHO[op.access.value]
        takes = [
            header
            for header, taken in (
                ("`Idempotency-Key`", op.idempotent),
                ("`If-None-Match`", op.conditional_read),
                ("`If-Match`", op.conditional_write),
            )
            if taken
        ]
        lines.append(
            f"| {op.method} | `{op.path}` | `{op.operation_id}` | {anonymous} | {customer} | {staff} "
            f"| {', '.join(takes)} |"
        )
    return "\n".join(lines) + "\n"


TABLES: dict[str, Callable[[], str]] = {"settings": settings_table, "operations": operations_table}


def regenerated(text: str, tables: Mapping[str, str]) -> str:
    """`text` with every generated block's body replaced by its table."""

    def replace(match: re.Match[str]) -> str:
        name = match["name"]
        if name not in tables:
            raise DocTableError(
                f"<!-- generated: {name} --> names no table (known: {', '.join(sorted(tables))})"
            )
        return f"{match.group(1)}{tables[name]}{match.group(4)}"

    return BLOCK.sub(replace, text)


def documents(root: Path = REPO_ROOT) -> list[Path]:
    return sorted((root / "docs").glob("*.md"))


def documentation_words(root: Path = REPO_ROOT) -> str:
    """README.md and every page of docs/ as one text, each run of whitespace one space: where a
    test looks for a figure the docs state (wherever a page wraps its lines)."""
    pages = [root / "README.md", *documents(root)]
    return " ".join(" ".join(page.read_text().split()) for page in pages)


def stale_documents(root: Path = REPO_ROOT, *, write: bool) -> list[Path]:
    """The documents whose tables differ from the code's (rewritten when `write`)."""
    tables = {name: make() for name, make in TABLES.items()}
    stale = []
    for path in documents(root):
        text = path.read_text()
        fresh = regenerated(text, tables)
        if fresh != text:
            stale.append(path)
            if write:
                path.write_text(fresh)
    return stale


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--check", action="store_true", help="only say which tables are stale (exit 1)")
    args = parser.parse_args(argv)
    try:
        stale = stale_documents(write=not args.check)
    except DocTableError as exc:
        print(f"doc_tables: {exc}", file=sys.stderr)
        return 1
    for path in stale:
        verb = "stale" if args.check else "rewritten"
        print(f"{path.relative_to(REPO_ROOT)}: {verb}", file=sys.stderr)
    if args.check and stale:
        print("run `make docs`", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
