"""What a deployable runs of the shared code, read from the imports; and that the gateway runs
no storage or request-checking code, so its image needs neither pymongo nor protovalidate."""

from __future__ import annotations

from pathlib import Path

from petstore_devstack.import_closure import imported_names, shared_closure
from petstore_devstack.releases import DEPLOYABLES, REPO_ROOT, SHARED_ROOTS


def test_imports_are_read_absolute_relative_ones_resolved() -> None:
    source = "import a.b\nfrom c import d, e\nfrom . import sibling\nfrom ..up import thing\n"
    names = set(imported_names(source, "pkg.sub.module", is_package=False))
    assert names == {"a.b", "c", "c.d", "c.e", "pkg.sub", "pkg.sub.sibling", "pkg.up", "pkg.up.thing"}


def test_imports_anywhere_count_type_checking_and_functions_included() -> None:
    source = "if TYPE_CHECKING:\n    import typed\n\ndef later():\n    import lazy\n"
    assert set(imported_names(source, "m", is_package=False)) == {"typed", "lazy"}


def test_the_closure_follows_shared_modules_through_each_other_with_their_packages(tmp_path: Path) -> None:
    own, shared = tmp_path / "own", tmp_path / "shared"
    (shared / "pkg").mkdir(parents=True)
    own.mkdir()
    (own / "app.py").write_text("from pkg import first\nimport json\n")
    (shared / "pkg" / "__init__.py").write_text("")
    (shared / "pkg" / "py.typed").write_text("")
    (shared / "pkg" / "first.py").write_text("from pkg.second import X\n")
    (shared / "pkg" / "second.py").write_text("X = 1\n")
    (shared / "pkg" / "second.pyi").write_text("X: int\n")
    (shared / "pkg" / "unused.py").write_text("")
    (shared / "pkg" / "unused.pyi").write_text("")

    found = {path.relative_to(shared).as_posix() for path in shared_closure(own, [shared])}

    assert found == {"pkg/__init__.py", "pkg/py.typed", "pkg/first.py", "pkg/second.py", "pkg/second.pyi"}


def third_party_imports(name: str) -> set[str]:
    """Top-level names of everything the deployable's own code and its shared modules import."""
    deployable = DEPLOYABLES[name]
    own = REPO_ROOT / deployable.name / "src"
    files = [*own.rglob("*.py"), *shared_closure(own, [REPO_ROOT / root for root in SHARED_ROOTS])]
    return {
        imported.split(".")[0]
        for file in files
        if file.suffix == ".py"
        for imported in imported_names(file.read_text(encoding="utf-8"), "x", is_package=False)
    }


def test_the_gateway_runs_no_storage_or_request_checking_code() -> None:
    gateway = third_party_imports("gateway")
    assert {"aiohttp", "grpc", "jwt"} <= gateway  # the walk sees what it runs
    assert not gateway & {"pymongo", "bson", "protovalidate"}


def test_the_services_run_the_storage_and_request_checking_code() -> None:
    for service in ("pet-service", "order-service", "user-service", "webhook-service"):
        assert {"pymongo", "protovalidate"} <= third_party_imports(service)
