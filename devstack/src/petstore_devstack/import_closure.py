"""Which shared files a deployable really runs: the modules its own code imports from the shared
source roots (common/src, protos/python), and what those import in turn.

Read from the source, without importing anything (`ast`), so it works on any commit's tree.
Every import counts, those under `if TYPE_CHECKING:` and inside functions too: a file counted
that is never run costs a release nobody needed; one missed would ship a change unannounced.
Importing `a.b.c` runs `a/__init__.py` and `a/b/__init__.py` too, so they count; so do the
data files that sit beside an imported module in its package (py.typed, stubs, word lists).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from pathlib import Path


def imported_names(source: str, module: str, is_package: bool) -> Iterator[str]:
    """Every dotted module name a module's source imports, absolute (relative imports resolved
    against `module`). `from a import b` yields `a` and `a.b`: b may be a submodule."""
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{base}" if base else parent
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names if alias.name != "*")


def _module_file(name: str, roots: Iterable[Path]) -> tuple[Path, Path] | None:
    """(root, file) of the module `name` under one of the roots, or None (third-party, stdlib,
    or a name that is an attribute rather than a module)."""
    parts = name.split(".")
    for root in roots:
        for candidate in (root.joinpath(*parts, "__init__.py"), root.joinpath(*parts).with_suffix(".py")):
            if candidate.is_file():
                return root, candidate
    return None


def _package_inits(root: Path, file: Path) -> Iterator[Path]:
    folder = file.parent
    while folder != root and root in folder.parents:
        init = folder / "__init__.py"
        if init.is_file():
            yield init
        folder = folder.parent


def _module_name(root: Path, file: Path) -> str:
    relative = file.relative_to(root).with_suffix("")
    parts = relative.parts[:-1] if relative.name == "__init__" else relative.parts
    return ".".join(parts)


def shared_closure(own_sources: Path, shared_roots: Iterable[Path]) -> set[Path]:
    """The files under `shared_roots` that the Python files under `own_sources` import,
    directly or through each other, with their packages' `__init__.py` and data files."""
    roots = [root for root in shared_roots if root.is_dir()]
    found: set[Path] = set()
    pending: list[tuple[str, Path, bool]] = []
    for file in sorted(own_sources.rglob("*.py")):
        pending.append((_module_name(own_sources, file), file, file.name == "__init__.py"))
    while pending:
        module, file, is_package = pending.pop()
        for name in imported_names(file.read_text(encoding="utf-8"), module, is_package):
            located = _module_file(name, roots)
            if located is None:
                continue
            root, target = located
            for needed in (target, *_package_inits(root, target)):
                if needed not in found:
                    found.add(needed)
                    pending.append((_module_name(root, needed), needed, needed.name == "__init__.py"))
    data = {
        item
        for module in found
        for item in module.parent.iterdir()
        if item.is_file() and _is_data_of(item, found)
    }
    return found | data


def _is_data_of(item: Path, modules: set[Path]) -> bool:
    """A file a package ships beside its modules: a stub counts with its module only."""
    if item.suffix == ".pyi":
        return item.with_suffix(".py") in modules
    return item.suffix not in (".py", ".pyc")
