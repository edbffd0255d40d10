"""Run pytest once per test folder and print what each cost: a team sees its own package's time,
and a failure names its folder. A folder that is not a package itself but holds test packages
(tests/: e2e, faults, clients) runs as one run per package plus one for its own files; a
project's test package (gateway/gateway_tests) is one run, subpackages and all.

    python -m petstore_devstack.test_runs [--env KEY=VALUE ...] [--each KEY=V1,V2...] [--jobs N]
                                          [--parts all|packages|own] [--coverage] FOLDER_OR_FILE...

--each runs every folder once per value, KEY set to it (`make e2e-skew`: the e2e suite once per
deployable one release behind). --jobs runs that many at once, each one's output kept until it
ends, then printed whole: for suites that mostly wait on the processes they drive (the e2e suite
keeps one of two cores about 86% busy), not for in-process unit tests, whose time per package
is what a team reads.

Every run goes, whatever failed before it; the exit status is 1 when any failed. With
--coverage each run is measured (coverage.py, the product code `[tool.coverage.run]` names in
pyproject.toml), and the line coverage of them all together is reported at the end: the exit
status is 1 too when it is under the floor there (`fail_under`).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

PYTEST = (sys.executable, "-m", "pytest", "-p", "no:cacheprovider")
COVERAGE = (sys.executable, "-m", "coverage")
COVERAGE_DATA = Path(".cache/coverage/data")
"""Where the runs' measurements are kept (one file per run, combined at the end)."""
_PRINTING = threading.Lock()
"""One run's output printed whole, never interleaved with another's."""


@dataclass(frozen=True)
class Run:
    name: str
    arguments: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()
    """Set for this run only (--each)."""


@dataclass(frozen=True)
class Outcome:
    run: Run
    seconds: float
    exit_code: int

    @property
    def result(self) -> str:
        # pytest's exit code 5: nothing collected (a folder whose tests all belong elsewhere).
        return {0: "passed", 5: "no tests"}.get(self.exit_code, f"FAILED (exit {self.exit_code})")

    @property
    def failed(self) -> bool:
        return self.exit_code not in (0, 5)


def _test_packages(folder: Path) -> list[Path]:
    """`folder`'s subfolders that are test packages (an __init__.py and test files)."""
    return sorted(
        child
        for child in folder.iterdir()
        if child.is_dir() and (child / "__init__.py").exists() and any(child.glob("test_*.py"))
    )


def plan(paths: Sequence[str], parts: str = "all") -> list[Run]:
    """One run per path, a folder with test packages inside split as the module says. Each part
    is collected from the folder itself with the other parts ignored, so that the folder's
    conftest still decides what is collected (tests/k8s only in the k8s run). `parts` keeps,
    of a split folder, only its packages ("packages") or only its own files ("own")."""
    runs: list[Run] = []
    for path in paths:
        folder = Path(path)
        splits = folder.is_dir() and not (folder / "__init__.py").exists()
        packages = _test_packages(folder) if splits else []
        if not packages:
            runs.append(Run(path, (path,)))
            continue
        own_files = sorted(
            str(file) for file in folder.glob("*.py") if file.name not in ("conftest.py", "__init__.py")
        )
        names = [str(package) for package in packages]
        if parts != "own":
            for name in names:
                others = [other for other in names if other != name] + own_files
                runs.append(Run(name, (path, *(f"--ignore={other}" for other in others))))
        if parts != "packages":
            runs.append(Run(f"{path} (its own files)", (path, *(f"--ignore={name}" for name in names))))
    return runs


def each(runs: Sequence[Run], key: str, values: Sequence[str]) -> list[Run]:
    """Every run once per value, `key` set to it."""
    return [
        replace(run, name=f"{run.name} [{key}={value}]", env=(*run.env, (key, value)))
        for run in runs
        for value in values
    ]


def execute(
    runs: Sequence[Run], env: dict[str, str], *, measured: bool = False, jobs: int = 1
) -> list[Outcome]:
    """Every run, `jobs` at a time, in order of the list (outcomes too)."""
    command = (*COVERAGE, "run", "--parallel-mode", "-m", *PYTEST[1:]) if measured else PYTEST
    if jobs <= 1:
        return [_run(command, run, env, log=None) for run in runs]
    with tempfile.TemporaryDirectory(prefix="test-runs-") as scratch, ThreadPoolExecutor(jobs) as pool:
        # Each its own pytest temporary folder: concurrent runs share nothing on disk.
        folders = [Path(scratch) / str(index) for index in range(len(runs))]
        futures = [
            pool.submit(_run, (*command, f"--basetemp={folder / 'tmp'}"), run, env, log=folder)
            for folder, run in zip(folders, runs, strict=True)
        ]
        return [future.result() for future in futures]


def _run(command: Sequence[str], run: Run, env: dict[str, str], *, log: Path | None) -> Outcome:
    """One pytest run; with `log` (a folder) its output is written there and printed when it ends."""
    later = " (started; its output follows when it ends)" if log else ""
    print(f"== pytest {run.name}{later}", flush=True)
    started = time.monotonic()
    run_env = {**env, **dict(run.env)}
    if log is None:
        code = subprocess.call([*command, *run.arguments], env=run_env)
    else:
        log.mkdir(parents=True)
        with open(log / "output", "w+b") as output:
            code = subprocess.call(
                [*command, *run.arguments], env=run_env, stdout=output, stderr=subprocess.STDOUT
            )
            output.seek(0)
            with _PRINTING:
                print(f"== pytest {run.name}: its output", flush=True)
                sys.stdout.buffer.write(output.read())
                sys.stdout.flush()
    outcome = Outcome(run, time.monotonic() - started, code)
    with _PRINTING:
        print(f"== {run.name}: {outcome.result} in {outcome.seconds:.1f} s", flush=True)
    return outcome


def table(outcomes: Sequence[Outcome]) -> str:
    width = max(len(o.run.name) for o in outcomes)
    lines = [f"{'test run':<{width}}  {'seconds':>7}  result"]
    lines += [f"{o.run.name:<{width}}  {o.seconds:>7.1f}  {o.result}" for o in outcomes]
    lines.append(f"{'total':<{width}}  {sum(o.seconds for o in outcomes):>7.1f}")
    return "\n".join(lines)


def coverage_report(env: dict[str, str]) -> bool:
    """Combine the runs' measurements and print the files under full coverage and the total;
    False when the total is under the floor."""
    print("== line coverage of the product code (files fully covered left out)", flush=True)
    subprocess.call([*COVERAGE, "combine", "--quiet"], env=env)
    code = subprocess.call([*COVERAGE, "report", "--skip-covered", "--sort=cover"], env=env)
    return code == 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument(
        "--parts",
        choices=("all", "packages", "own"),
        default="all",
        help="of a folder of test packages: all, only its packages, or only its own files",
    )
    parser.add_argument("--each", metavar="KEY=V1,V2...", help="every folder once per value of KEY")
    parser.add_argument("--jobs", type=int, default=1, help="runs at once (default 1)")
    parser.add_argument("--coverage", action="store_true", help="measure the runs and report the total")
    parser.add_argument("paths", nargs="+")
    args = parser.parse_args(argv)
    env = dict(os.environ)
    for pair in args.env:
        key, _, value = pair.partition("=")
        env[key] = value
    if args.coverage:
        COVERAGE_DATA.parent.mkdir(parents=True, exist_ok=True)
        for stale in COVERAGE_DATA.parent.glob(f"{COVERAGE_DATA.name}*"):
            stale.unlink()
        env["COVERAGE_FILE"] = str(COVERAGE_DATA.resolve())
    runs = plan(args.paths, args.parts)
    if args.each:
        key, _, values = args.each.partition("=")
        runs = each(runs, key, [value for value in values.split(",") if value])
    outcomes = execute(runs, env, measured=args.coverage, jobs=args.jobs)
    print(table(outcomes), flush=True)
    covered = coverage_report(env) if args.coverage else True
    if not covered:
        print("line coverage is under the floor (fail_under in pyproject.toml)", flush=True)
    failed = [o.run.name for o in outcomes if o.failed]
    if failed:
        print(f"pytest failed in: {', '.join(failed)}", flush=True)
    return 1 if failed or not covered else 0


if __name__ == "__main__":
    sys.exit(main())
