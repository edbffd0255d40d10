"""Releases: the gateway and each service has a version of its own, in its pyproject.toml (the
version its next image is tagged with), and deploy/releases.toml lists what was released, for
each of them: every version and the commit it was built from, oldest first. The last entry is
its *previous release*, the one the version-skew runs put beside the working tree of the
others (`make e2e-skew`) and the k3s run rolls forward from (`make e2e-k8s`): defined here, so a
fresh clone finds it without fetching tags.

`check()` holds the rules `make test` enforces: a version only grows, and a deployable whose
released files changed since its last release carries a newer version than that release. Its
released files are its own source, pyproject.toml and Dockerfile, the shared files every image
ships (`ALWAYS_SHIPPED`), and of the shared code and generated contracts exactly the modules its
own code imports, directly or through each other (`import_closure`), as they are now or were
at the release: a change to the user service's proto releases the user service and the gateway,
which call it, and a change to a storage helper the four services, which store.

A new deployable has no release yet: releases.toml names it in `unreleased` (an explicit word,
so a forgotten entry is still an error), it has no previous release for the version-skew runs
or PREVIOUS=1 images to use (`names --released` leaves it out), and its first release replaces
that word with an entry.

    python -m petstore_devstack.releases check
    python -m petstore_devstack.releases names                     # the five deployables
    python -m petstore_devstack.releases names --released          # those with a previous release
    python -m petstore_devstack.releases previous-commits          # their previous releases' commits
    python -m petstore_devstack.releases previous pet-service      # prints: 1.0.0 <commit>
    python -m petstore_devstack.releases export pet-service DIR    # prints its PYTHONPATH
    python -m petstore_devstack.releases tags pet-service          # 1.1.0 1.1.0-<commit> HEAD
    python -m petstore_devstack.releases tags --previous pet-service
"""

from __future__ import annotations

import argparse
import io
import subprocess
import sys
import tarfile
import tempfile
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.version import InvalidVersion, Version

from petstore_devstack.import_closure import shared_closure

REPO_ROOT = Path(__file__).resolve().parents[3]
MANIFEST = Path("deploy/releases.toml")
UNRELEASED = "unreleased"
"""The key of releases.toml listing the deployables that have never been released."""
SHARED_ROOTS = ("common/src", "protos/python")
"""Where the shared code and the generated contracts lie: every image carries them, and each
deployable runs the part its own code imports."""
ALWAYS_SHIPPED = ("common/pyproject.toml", "protos/python/pyproject.toml", "deploy/docker/healthcheck.py")
"""Run by every image whatever it imports (the shared packages' dependencies, the healthcheck):
a change here is a change of every deployable."""


@dataclass(frozen=True, slots=True)
class Deployable:
    name: str
    """Its folder, image and Kubernetes name: `pet-service`, ..., `gateway`."""
    process: str
    """Its name in the local stack (petstore_devstack.stack): `pet`, ..., `gateway`."""

    @property
    def own_paths(self) -> tuple[str, ...]:
        return (f"{self.name}/src", f"{self.name}/pyproject.toml", f"{self.name}/Dockerfile")

    @property
    def shipped_paths(self) -> tuple[str, ...]:
        """What its image is built from: its own files and all of the shared ones."""
        return (*self.own_paths, *SHARED_ROOTS, *ALWAYS_SHIPPED)

    def released_paths(self, tree: Path) -> set[str]:
        """Its files in the tree rooted at `tree` whose change is a change of it: its own, those
        every image runs, and the shared modules its code imports."""
        imported = shared_closure(tree / self.name / "src", [tree / shared for shared in SHARED_ROOTS])
        return {*self.own_paths, *ALWAYS_SHIPPED, *(path.relative_to(tree).as_posix() for path in imported)}

    def python_path(self, root: Path) -> list[Path]:
        """Where its code and the code it shares lie in a tree rooted at `root`."""
        return [root / self.name / "src", root / "common" / "src", root / "protos" / "python"]


DEPLOYABLES = {
    d.name: d
    for d in (
        Deployable("pet-service", "pet"),
        Deployable("order-service", "order"),
        Deployable("user-service", "user"),
        Deployable("webhook-service", "webhook"),
        Deployable("gateway", "gateway"),
    )
}


@dataclass(frozen=True, slots=True)
class Release:
    version: str
    commit: str


class ReleaseError(Exception):
    pass


def _git(root: Path, *args: str) -> bytes:
    result = subprocess.run(["git", *args], cwd=root, capture_output=True, check=False)
    if result.returncode != 0:
        raise ReleaseError(f"git {' '.join(args)}: {result.stderr.decode(errors='replace').strip()}")
    return result.stdout


def current_version(deployable: Deployable, root: Path = REPO_ROOT) -> str:
    with (root / deployable.name / "pyproject.toml").open("rb") as file:
        return str(tomllib.load(file)["project"]["version"])


def _manifest(root: Path) -> dict[str, Any]:
    with (root / MANIFEST).open("rb") as file:
        return tomllib.load(file)


def releases(deployable: Deployable, root: Path = REPO_ROOT) -> list[Release]:
    """Its releases, oldest first."""
    entries = _manifest(root).get(deployable.name, [])
    return [Release(str(entry["version"]), str(entry["commit"])) for entry in entries]


def unreleased(root: Path = REPO_ROOT) -> list[str]:
    """The deployables releases.toml declares new: never released, so without a previous release."""
    return [str(name) for name in _manifest(root).get(UNRELEASED, [])]


def released(root: Path = REPO_ROOT) -> list[Deployable]:
    """The deployables that have a previous release (every one but the new ones)."""
    new = set(unreleased(root))
    return [deployable for name, deployable in DEPLOYABLES.items() if name not in new]


def previous_release(deployable: Deployable, root: Path = REPO_ROOT) -> Release:
    found = releases(deployable, root)
    if not found:
        raise ReleaseError(f"{MANIFEST} lists no release of {deployable.name}")
    return found[-1]


def changed_since(release: Release, deployable: Deployable, root: Path = REPO_ROOT) -> list[str]:
    """Its released files, as they are now or were at the release (a module it stopped
    importing counts too), that differ between the release's commit and the working tree
    (uncommitted and untracked files included)."""
    with tempfile.TemporaryDirectory(prefix="petstore-release-") as then:
        extract(release.commit, (f"{deployable.name}/src", *SHARED_ROOTS), Path(then), root)
        paths = sorted(deployable.released_paths(root) | deployable.released_paths(Path(then)))
    changed = _git(root, "diff", "--name-only", release.commit, "--", *paths).decode().split()
    untracked = _git(root, "ls-files", "--others", "--exclude-standard", "--", *paths).decode().split()
    return sorted({*changed, *untracked})


def _is_commit(root: Path, commit: str) -> bool:
    try:
        return _git(root, "cat-file", "-t", commit).strip() == b"commit"
    except ReleaseError:
        return False


def _parse(text: str, where: str) -> Version:
    try:
        return Version(text)
    except InvalidVersion:
        raise ReleaseError(f"{where}: {text!r} is not a version") from None


def check(root: Path = REPO_ROOT) -> list[str]:
    """Every broken release rule, as a sentence; [] when all hold."""
    shallow = _git(root, "rev-parse", "--is-shallow-repository").strip() == b"true"
    problems: list[str] = []
    new = unreleased(root)
    problems.extend(
        f"{MANIFEST}: {UNRELEASED} names {name!r}, which is no deployable (one of {', '.join(DEPLOYABLES)})"
        for name in new
        if name not in DEPLOYABLES
    )
    for deployable in DEPLOYABLES.values():
        try:
            current = _parse(current_version(deployable, root), f"{deployable.name}/pyproject.toml")
            history = releases(deployable, root)
            if deployable.name in new:
                if history:
                    problems.append(
                        f"{MANIFEST}: {deployable.name} has releases: take it out of {UNRELEASED}"
                    )
                continue  # nothing released, so nothing its changes could break
            if not history:
                problems.append(
                    f"{MANIFEST} lists no release of {deployable.name} (a new deployable: name it in "
                    f"{UNRELEASED})"
                )
                continue
            versions = [_parse(r.version, f"{MANIFEST} [{deployable.name}]") for r in history]
            if versions != sorted(set(versions)):
                problems.append(f"{MANIFEST}: the releases of {deployable.name} must grow, oldest first")
            missing = [r for r in history if not _is_commit(root, r.commit)]
            for release in missing:
                hint = " (a shallow clone: `git fetch --unshallow`)" if shallow else ""
                problems.append(f"{deployable.name} {release.version}: no commit {release.commit} here{hint}")
            if missing:
                continue
            last = history[-1]
            if current < versions[-1]:
                problems.append(f"{deployable.name} is {current}, older than its last release {last.version}")
            elif current == versions[-1] and (changed := changed_since(last, deployable, root)):
                problems.append(
                    f"{deployable.name} changed since its release {last.version} ({', '.join(changed[:5])}"
                    f"{', ...' if len(changed) > 5 else ''}): give it a newer version in "
                    f"{deployable.name}/pyproject.toml"
                )
        except ReleaseError as exc:
            problems.append(str(exc))
    return problems


def extract(commit: str, paths: Sequence[str], dest: Path, root: Path = REPO_ROOT) -> None:
    """Write `paths` as they were at `commit` under `dest` (only those the commit has: a path
    added later is not an error)."""
    present = _git(root, "ls-tree", "--name-only", commit, "--", *paths).decode().split()
    archive = _git(root, "archive", "--format=tar", commit, "--", *present)
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(dest, filter="data")


def export(release: Release, deployable: Deployable, dest: Path, root: Path = REPO_ROOT) -> list[Path]:
    """Write the release's shipped files under `dest`; returns the PYTHONPATH that runs it."""
    extract(release.commit, deployable.shipped_paths, dest, root)
    return deployable.python_path(dest)


def image_tags(
    deployable: Deployable, *, previous: bool = False, root: Path = REPO_ROOT
) -> tuple[str, str, str]:
    """(version, version-commit, commit to build from) of the working tree (commit HEAD, and
    `-dirty` after it in the tag when its shipped files have uncommitted changes), or of its
    previous release."""
    if previous:
        release = previous_release(deployable, root)
        return release.version, f"{release.version}-{release.commit[:12]}", release.commit
    head = _git(root, "rev-parse", "HEAD").decode().strip()
    dirty = _git(root, "status", "--porcelain", "--", *deployable.shipped_paths).strip()
    version = current_version(deployable, root)
    return version, f"{version}-{head[:12]}{'-dirty' if dirty else ''}", "HEAD"


def _deployable(name: str) -> Deployable:
    try:
        return DEPLOYABLES[name]
    except KeyError:
        raise SystemExit(f"unknown deployable {name!r}: one of {', '.join(DEPLOYABLES)}") from None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m petstore_devstack.releases", description=__doc__.split("\n\n")[0]
    )
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("check", help="the release rules hold (make test)")
    names = commands.add_parser("names", help="every deployable, one per line")
    names.add_argument("--released", action="store_true", help="only those with a previous release")
    commands.add_parser("previous-commits", help="the commits of their previous releases, each once")
    previous = commands.add_parser("previous", help="a deployable's previous release: version and commit")
    previous.add_argument("deployable", choices=DEPLOYABLES)
    exporting = commands.add_parser("export", help="write a deployable's previous release under DIR")
    exporting.add_argument("deployable", choices=DEPLOYABLES)
    exporting.add_argument("dest", type=Path)
    tags = commands.add_parser("tags", help="image tags and the commit to build from (make images)")
    tags.add_argument("--previous", action="store_true", help="of its previous release")
    tags.add_argument("deployable", choices=DEPLOYABLES)
    args = parser.parse_args(argv)
    try:
        if args.command == "check":
            problems = check()
            for problem in problems:
                print(f"releases: {problem}", file=sys.stderr)
            if not problems:
                print(f"releases: {', '.join(f'{n} {current_version(d)}' for n, d in DEPLOYABLES.items())}")
            return 1 if problems else 0
        if args.command == "names":
            print("\n".join(d.name for d in released()) if args.released else "\n".join(DEPLOYABLES))
            return 0
        if args.command == "previous-commits":
            print("\n".join(dict.fromkeys(previous_release(d).commit for d in released())))
            return 0
        deployable = _deployable(args.deployable)
        if args.command == "tags":
            print(*image_tags(deployable, previous=args.previous))
            return 0
        release = previous_release(deployable)
        if args.command == "previous":
            print(release.version, release.commit)
        else:
            print(":".join(str(path) for path in export(release, deployable, args.dest)))
    except ReleaseError as exc:
        print(f"releases: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
