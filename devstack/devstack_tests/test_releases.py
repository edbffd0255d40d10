"""The release rules, on a throw-away repository laid out as this one, and on this one."""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path

import pytest

from petstore_devstack.releases import (
    DEPLOYABLES,
    MANIFEST,
    REPO_ROOT,
    check,
    current_version,
    export,
    image_tags,
    main,
    previous_release,
    released,
)


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True).stdout.strip()


def set_version(root: Path, name: str, version: str) -> None:
    (root / name / "pyproject.toml").write_text(f'[project]\nname = "{name}"\nversion = "{version}"\n')


def write_manifest(root: Path, entries: dict[str, list[tuple[str, str]]]) -> None:
    text = "".join(
        f'[[{name}]]\nversion = "{version}"\ncommit = "{commit}"\n\n'
        for name, releases in entries.items()
        for version, commit in releases
    )
    (root / MANIFEST).write_text(text)


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, str]:
    """Every deployable at 1.0.0, released at the first commit; returns (root, that commit)."""
    root = tmp_path / "repo"
    for name in DEPLOYABLES:
        (root / name / "src").mkdir(parents=True)
        (root / name / "src" / "code.py").write_text("from shared import SHARED\n\nVALUE = SHARED\n")
        set_version(root, name, "1.0.0")
    (root / "common" / "src").mkdir(parents=True)
    (root / "common" / "src" / "shared.py").write_text("SHARED = 1\n")
    (root / "common" / "src" / "storage.py").write_text("STORED = 1\n")  # imported by nobody yet
    (root / "deploy").mkdir()
    (root / "README.md").write_text("docs\n")
    git(root.parent, "init", "-q", "-b", "main", str(root))
    git(
        root,
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@example.com",
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        "empty",
    )
    git(root, "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "first")
    first = git(root, "rev-parse", "HEAD")
    write_manifest(root, {name: [("1.0.0", first)] for name in DEPLOYABLES})
    return root, first


def test_this_repositorys_releases_follow_the_rules() -> None:
    assert check() == []


def test_released_and_unchanged_is_fine_and_docs_do_not_count(repo: tuple[Path, str]) -> None:
    root, _ = repo
    (root / "README.md").write_text("more docs\n")
    assert check(root) == []


def test_a_service_changed_since_its_release_must_carry_a_newer_version(repo: tuple[Path, str]) -> None:
    root, _ = repo
    (root / "pet-service" / "src" / "code.py").write_text("VALUE = 2\n")
    problems = check(root)
    assert len(problems) == 1
    assert "pet-service changed since its release 1.0.0 (pet-service/src/code.py)" in problems[0]
    set_version(root, "pet-service", "1.1.0")
    assert check(root) == []


def changed(root: Path) -> list[str]:
    """The deployables check() asks a newer version of."""
    return sorted(problem.split()[0] for problem in check(root))


def test_a_change_to_shared_code_is_a_change_of_every_deployable_that_imports_it(
    repo: tuple[Path, str],
) -> None:
    root, _ = repo
    (root / "common" / "src" / "shared.py").write_text("SHARED = 2\n")
    assert changed(root) == sorted(DEPLOYABLES)


def test_shared_code_a_deployable_does_not_import_is_no_change_of_it(repo: tuple[Path, str]) -> None:
    root, _ = repo
    (root / "common" / "src" / "storage.py").write_text("STORED = 2\n")
    (root / "common" / "src" / "new_module.py").write_text("NEW = 1\n")
    assert changed(root) == []


def test_a_shared_module_newly_imported_through_another_counts_untracked_too(repo: tuple[Path, str]) -> None:
    root, _ = repo
    (root / "common" / "src" / "new_module.py").write_text("NEW = 1\n")  # untracked
    (root / "common" / "src" / "storage.py").write_text("from new_module import NEW\n")
    (root / "pet-service" / "src" / "code.py").write_text("import storage\n")
    set_version(root, "pet-service", "1.1.0")  # its own change is released
    assert check(root) == []
    (root / "common" / "src" / "new_module.py").write_text("NEW = 2\n")
    assert changed(root) == []  # still untracked, still released by pet-service's 1.1.0
    set_version(root, "pet-service", "1.0.0")
    assert changed(root) == ["pet-service"]


def test_a_module_it_stopped_importing_still_counts_against_its_release(repo: tuple[Path, str]) -> None:
    root, _ = repo
    (root / "gateway" / "src" / "code.py").write_text("VALUE = 1\n")
    set_version(root, "gateway", "1.1.0")
    (root / "common" / "src" / "shared.py").write_text("SHARED = 2\n")
    assert changed(root) == ["order-service", "pet-service", "user-service", "webhook-service"]


def test_a_change_to_what_every_image_runs_is_a_change_of_every_deployable(repo: tuple[Path, str]) -> None:
    root, _ = repo
    (root / "common" / "pyproject.toml").write_text('[project]\nname = "petstore-common"\n')
    assert changed(root) == sorted(DEPLOYABLES)


@functools.cache
def released_here(name: str) -> frozenset[str]:
    return frozenset(DEPLOYABLES[name].released_paths(REPO_ROOT))


def releasing(path: str) -> set[str]:
    """The deployables of this repository a change of `path` releases."""
    return {name for name in DEPLOYABLES if path in released_here(name)}


def test_here_a_change_to_the_user_contract_releases_the_user_service_and_the_gateway_only() -> None:
    for module in ("user_pb2", "user_service_pb2", "user_service_pb2_grpc"):
        assert releasing(f"protos/python/petstore/user/v1/{module}.py") == {"user-service", "gateway"}


def test_here_a_change_to_a_storage_helper_releases_the_four_services_only() -> None:
    for module in ("stores", "mongo", "storage_faults", "grpc_server"):
        assert releasing(f"common/src/petstore_common/{module}.py") == {
            "pet-service",
            "order-service",
            "user-service",
            "webhook-service",
        }


def test_here_a_change_to_the_pet_contract_releases_its_callers_and_not_the_user_service() -> None:
    assert releasing("protos/python/petstore/pet/v1/pet_service_pb2.py") == {
        "pet-service",
        "order-service",
        "webhook-service",  # reads the pets' event outbox
        "gateway",
    }


def test_here_a_change_to_a_shared_format_or_the_caller_releases_every_deployable() -> None:
    assert releasing("protos/python/petstore/formats/v1/formats_pb2.py") == set(DEPLOYABLES)
    assert releasing("protos/python/petstore/auth/v1/caller_pb2.py") == set(DEPLOYABLES)


def write_unreleased(root: Path, names: list[str], entries: dict[str, list[tuple[str, str]]]) -> None:
    write_manifest(root, entries)
    listed = ", ".join(f'"{name}"' for name in names)
    (root / MANIFEST).write_text(f"unreleased = [{listed}]\n\n" + (root / MANIFEST).read_text())


def test_a_new_deployable_is_declared_unreleased_and_has_no_previous_release(repo: tuple[Path, str]) -> None:
    root, first = repo
    entries = {name: [("1.0.0", first)] for name in DEPLOYABLES if name != "webhook-service"}
    write_manifest(root, entries)
    assert check(root) == [
        f"{MANIFEST} lists no release of webhook-service (a new deployable: name it in unreleased)"
    ]
    write_unreleased(root, ["webhook-service"], entries)
    (root / "webhook-service" / "src" / "code.py").write_text("VALUE = 2\n")  # nothing released to break
    assert check(root) == []
    assert [d.name for d in released(root)] == [n for n in DEPLOYABLES if n != "webhook-service"]


def test_a_released_deployable_cannot_stay_declared_unreleased_nor_an_unknown_one(
    repo: tuple[Path, str],
) -> None:
    root, first = repo
    write_unreleased(
        root, ["webhook-service", "fax-service"], {name: [("1.0.0", first)] for name in DEPLOYABLES}
    )
    problems = check(root)
    assert f"{MANIFEST}: webhook-service has releases: take it out of unreleased" in problems
    assert any("unreleased names 'fax-service', which is no deployable" in p for p in problems)
    assert len(problems) == 2


def test_a_version_never_goes_back(repo: tuple[Path, str]) -> None:
    root, _ = repo
    set_version(root, "user-service", "0.9.0")
    assert check(root) == ["user-service is 0.9.0, older than its last release 1.0.0"]


def test_releases_are_listed_oldest_first_and_name_commits_that_exist(repo: tuple[Path, str]) -> None:
    root, first = repo
    entries = {name: [("1.0.0", first)] for name in DEPLOYABLES}
    entries["gateway"] = [("1.0.0", first), ("0.5.0", first)]
    entries["order-service"] = [("1.0.0", "0" * 40)]
    write_manifest(root, entries)
    problems = check(root)
    assert any("the releases of gateway must grow" in p for p in problems)
    assert any(p.startswith(f"order-service 1.0.0: no commit {'0' * 40} here") for p in problems)


def test_export_writes_the_released_code_not_the_working_trees(
    repo: tuple[Path, str], tmp_path: Path
) -> None:
    root, _ = repo
    (root / "pet-service" / "src" / "code.py").write_text("VALUE = 2\n")
    set_version(root, "pet-service", "1.1.0")
    deployable = DEPLOYABLES["pet-service"]
    release = previous_release(deployable, root)
    path = export(release, deployable, tmp_path / "previous", root)
    assert path[0] == tmp_path / "previous" / "pet-service" / "src"
    assert (path[0] / "code.py").read_text() == "from shared import SHARED\n\nVALUE = SHARED\n"
    assert (path[1] / "shared.py").exists()
    assert current_version(deployable, tmp_path / "previous") == "1.0.0"
    assert not (tmp_path / "previous" / "gateway").exists()


def test_images_are_tagged_with_the_version_and_the_commit_dirty_when_shipped_files_changed(
    repo: tuple[Path, str],
) -> None:
    root, first = repo
    pet = DEPLOYABLES["pet-service"]
    head = git(root, "rev-parse", "HEAD")
    assert image_tags(pet, root=root) == ("1.0.0", f"1.0.0-{head[:12]}", "HEAD")
    (root / "README.md").write_text("more docs\n")  # not shipped
    assert image_tags(pet, root=root)[1] == f"1.0.0-{head[:12]}"
    (root / "pet-service" / "src" / "code.py").write_text("VALUE = 2\n")
    set_version(root, "pet-service", "1.1.0")
    assert image_tags(pet, root=root) == ("1.1.0", f"1.1.0-{head[:12]}-dirty", "HEAD")
    assert image_tags(pet, previous=True, root=root) == ("1.0.0", f"1.0.0-{first[:12]}", first)


def test_the_command_lists_the_deployables_and_their_previous_releases_commits(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["names"]) == 0
    assert capsys.readouterr().out.split() == list(DEPLOYABLES)
    assert main(["names", "--released"]) == 0  # the version-skew runs and PREVIOUS=1 images
    assert capsys.readouterr().out.split() == [d.name for d in released()]
    assert main(["previous-commits"]) == 0
    commits = capsys.readouterr().out.split()
    assert commits == list(dict.fromkeys(previous_release(d).commit for d in released()))
