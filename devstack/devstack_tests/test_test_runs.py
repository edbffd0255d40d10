"""make unit's runner: one pytest run per folder, tests/-like folders split by test package,
each run's time and result in the table, and a failure anywhere fails the whole."""

from __future__ import annotations

from pathlib import Path

import pytest

from petstore_devstack import test_runs


def package(folder: Path, *tests: str) -> Path:
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text("")
    for name in tests:
        (folder / f"{name}.py").write_text(f"def {name}() -> None:\n    assert True\n")
    return folder


def test_a_folder_of_test_packages_runs_each_alone_and_its_own_files_last(tmp_path: Path) -> None:
    root = tmp_path / "tests"
    package(root / "e2e", "test_a")
    package(root / "faults", "test_b")
    (root / "helpers").mkdir()  # no tests of its own: not a part
    (root / "test_own.py").write_text("def test_own() -> None:\n    assert True\n")
    (root / "conftest.py").write_text("")
    runs = test_runs.plan([str(root)])
    assert [run.name for run in runs] == [f"{root}/e2e", f"{root}/faults", f"{root} (its own files)"]
    # Each part is collected from the folder, the others ignored, so its conftest still applies.
    assert runs[0].arguments == (str(root), f"--ignore={root}/faults", f"--ignore={root}/test_own.py")
    assert runs[2].arguments == (str(root), f"--ignore={root}/e2e", f"--ignore={root}/faults")
    # make integration takes the folder's own files, make e2e its packages.
    assert test_runs.plan([str(root)], "own") == runs[2:]
    assert test_runs.plan([str(root)], "packages") == runs[:2]


def test_a_package_with_subpackages_or_a_file_is_one_run(tmp_path: Path) -> None:
    plain = package(tmp_path / "gateway_tests", "test_a")
    package(plain / "routes", "test_b")
    assert test_runs.plan([str(plain), "x/test_y.py"]) == [
        test_runs.Run(str(plain), (str(plain),)),
        test_runs.Run("x/test_y.py", ("x/test_y.py",)),
    ]


def test_every_run_goes_and_a_failure_names_its_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    failing = package(tmp_path / "failing_tests", "test_a")
    (failing / "test_a.py").write_text("def test_a() -> None:\n    assert False\n")
    passing = package(tmp_path / "passing_tests", "test_b")
    monkeypatch.chdir(tmp_path)
    assert test_runs.main([str(failing), str(passing)]) == 1
    out = capsys.readouterr().out
    rows = {line.split()[0]: line for line in out[out.index("test run") :].splitlines()}
    assert rows[str(failing)].endswith("FAILED (exit 1)")
    assert rows[str(passing)].endswith("passed")
    assert f"pytest failed in: {failing}\n" in out


def measured_project(root: Path, *, tested: bool) -> Path:
    """A product module of two functions, its tests calling one or both, and the coverage
    settings naming it with a floor of 90%."""
    (root / "src").mkdir(parents=True)
    (root / "src" / "product.py").write_text(
        "def one() -> int:\n    return 1\n\n\ndef two() -> int:\n    return 2\n"
    )
    calls = "product.one() + product.two()" if tested else "product.one()"
    tests = package(root / "product_tests")
    (tests / "test_product.py").write_text(
        "import sys\nsys.path.insert(0, 'src')\nimport product\n\n\n"
        f"def test_it() -> None:\n    assert {calls}\n"
    )
    (root / "pyproject.toml").write_text(
        '[tool.coverage.run]\nsource = ["src"]\nparallel = true\n\n[tool.coverage.report]\nfail_under = 90\n'
    )
    return tests


@pytest.mark.parametrize(("tested", "status"), [(True, 0), (False, 1)])
def test_with_coverage_the_total_is_reported_and_under_the_floor_fails(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tested: bool,
    status: int,
) -> None:
    tests = measured_project(tmp_path, tested=tested)
    monkeypatch.chdir(tmp_path)
    assert test_runs.main(["--coverage", str(tests)]) == status
    out = capsys.readouterr().out
    assert "line coverage of the product code" in out
    assert ("under the floor" in out) is not tested


def test_each_runs_a_folder_once_per_value_at_once_with_outputs_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    tests = package(tmp_path / "suite_tests")
    # Each run waits until the other has started (a file each): only runs that overlap pass.
    (tests / "test_meet.py").write_text(
        "import os, time\nfrom pathlib import Path\n\n\n"
        "def test_meet() -> None:\n"
        "    me = os.environ['SIDE']\n"
        "    Path(me).touch()\n"
        "    other = {'left': 'right', 'right': 'left'}[me]\n"
        "    deadline = time.monotonic() + 30\n"
        "    while not Path(other).exists():\n"
        "        assert time.monotonic() < deadline, 'the other run never started'\n"
        "        time.sleep(0.05)\n"
        "    print('side', me)\n"
    )
    monkeypatch.chdir(tmp_path)
    assert test_runs.main(["--jobs", "2", "--each", "SIDE=left,right", str(tests)]) == 0
    out = capsys.readouterr().out
    for side in ("left", "right"):
        assert f"{tests} [SIDE={side}]" in out[out.index("test run") :]
        # Its whole output sits between its own header and result line.
        block = out[out.index(f"== pytest {tests} [SIDE={side}]: its output") :]
        assert "1 passed" in block[: block.index(f"== {tests} [SIDE={side}]: passed")]


def test_each_names_each_run_by_its_value() -> None:
    runs = test_runs.each([test_runs.Run("e2e", ("tests/e2e",))], "PREVIOUS", ["pet", "order"])
    assert [run.env for run in runs] == [(("PREVIOUS", "pet"),), (("PREVIOUS", "order"),)]
    assert [run.name for run in runs] == ["e2e [PREVIOUS=pet]", "e2e [PREVIOUS=order]"]
