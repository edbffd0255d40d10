"""The command line: modes, defaults and refusals."""

from __future__ import annotations

import pytest

from petstore_bench.__main__ import parse_args
from petstore_bench.scenarios import SCENARIOS


def test_full_run_defaults() -> None:
    options = parse_args([])
    assert options.mode == "full"
    assert (options.load.seconds, options.warmup_s, options.load.connections) == (15, 5, 32)
    assert options.scenarios == tuple(s.key for s in SCENARIOS)
    assert not options.profile
    assert options.command == "python -m petstore_bench"


def test_smoke_is_short() -> None:
    options = parse_args(["--smoke"])
    assert options.mode == "smoke"
    total = len(SCENARIOS) + 1  # and the baseline
    assert total * (options.load.seconds + options.warmup_s) <= 12


def test_flags_override_the_mode() -> None:
    options = parse_args(["--smoke", "--duration", "3", "--warmup", "2", "--connections", "8"])
    assert (options.load.seconds, options.warmup_s, options.load.connections) == (3, 2, 8)
    assert options.command == "python -m petstore_bench --smoke --duration 3 --warmup 2 --connections 8"


def test_profile_runs_one_scenario() -> None:
    options = parse_args(["--profile"])
    assert options.mode == "profile"
    assert options.profile
    assert options.scenarios == ("get_pet_json",)
    assert options.profile_process == "gateway"
    assert parse_args(["--profile", "post_order", "--profile-process", "order"]).scenarios == ("post_order",)


def test_a_subset_of_scenarios_in_order() -> None:
    assert parse_args(["--scenarios", "login, get_pet_xml"]).scenarios == ("login", "get_pet_xml")


def test_the_mixed_scenario_runs_last_its_writes_change_the_etags() -> None:
    assert parse_args([]).scenarios[-1] == "get_pet_mixed"
    assert parse_args(["--smoke"]).scenarios[-1] == "get_pet_mixed"
    chosen = parse_args(["--scenarios", "get_pet_mixed,get_pet_304,post_order"]).scenarios
    assert chosen == ("get_pet_304", "post_order", "get_pet_mixed")


def test_gateway_workers() -> None:
    assert parse_args([]).gateway_workers == 1
    assert parse_args(["--gateway-workers", "3"]).gateway_workers == 3


@pytest.mark.parametrize(
    "argv",
    [
        ["--scenarios", "get_pet_json,nope"],
        ["--profile", "nope"],
        ["--duration", "0"],
        ["--connections", "0"],
        ["--threads", "4", "--connections", "2"],
        ["--pets", "0"],
        ["--gateway-workers", "0"],
    ],
)
def test_refuses_nonsense(argv: list[str]) -> None:
    with pytest.raises(SystemExit):
        parse_args(argv)


def test_process_env_for_experiments() -> None:
    options = parse_args(["--process-env", "gateway:LOG_LEVEL=WARNING", "--process-env", "user:A=b=c"])
    assert options.process_env == {"gateway": {"LOG_LEVEL": "WARNING"}, "user": {"A": "b=c"}}
    for bad in ("ferretdb:X=1", "gateway:X", "gateway:=1"):
        with pytest.raises(SystemExit):
            parse_args(["--process-env", bad])
