"""`python -m petstore_bench`: the load benchmark of the process-mode stack, against a bare baseline.

Starts FerretDB (or uses MONGODB_URI), the gateway and the three services on loopback ports,
loads pets and users, and drives each scenario with wrk at a fixed number of connections;
a bare aiohttp server answering the same Pet JSON is driven the same way first. Prints a
table with every scenario's throughput as a ratio of the baseline's and the targets, and
writes bench/results/<mode>.json and <mode>.png.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from petstore_bench import report, runner, wrk
from petstore_bench.scenarios import BY_KEY, LAST, SCENARIOS

FULL_DURATION_S, FULL_WARMUP_S = 15, 5
SMOKE_DURATION_S, SMOKE_WARMUP_S = 1, 0
SMOKE_SETTLE_S = 2.0
"""The smoke run waits less for leftovers: its job is to fail when something broke, not to measure."""
PROCESSES = ("gateway", "pet", "order", "user")


def parse_args(argv: list[str] | None = None) -> runner.Options:
    parser = argparse.ArgumentParser(
        prog="python -m petstore_bench",
        description=__doc__.splitlines()[0] if __doc__ else None,
        epilog="scenarios: "
        + "; ".join(f"{s.key} ({s.measures})" for s in SCENARIOS)
        + ". --growth: another mode, each operation at growing sizes (--growth --help).",
    )
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="about 20 s in all: 1 s per scenario, no warm-up, fails on any error (unexpected statuses"
        " included) or stale read",
    )
    parser.add_argument("--duration", type=int, help=f"seconds measured per scenario ({FULL_DURATION_S})")
    parser.add_argument(
        "--warmup", type=int, help=f"seconds of unmeasured load before each ({FULL_WARMUP_S})"
    )
    parser.add_argument(
        "--slices",
        type=int,
        default=runner.DEFAULT_SLICES,
        help="each scenario's measured seconds are cut into this many slices, each followed by as long"
        f" a slice of the baseline's, so both see the same machine ({runner.DEFAULT_SLICES})",
    )
    parser.add_argument("--connections", type=int, default=32, help="wrk connections (32)")
    parser.add_argument(
        "--threads", type=int, default=1, help="wrk threads (1: leaves a core to the servers)"
    )
    parser.add_argument("--timeout", type=int, default=10, help="wrk's per-request timeout in seconds (10)")
    parser.add_argument(
        "--scenarios",
        default=",".join(s.key for s in SCENARIOS),
        help=f"comma-separated subset, in order, except that {LAST} always runs last (default: all)",
    )
    parser.add_argument(
        "--profile",
        nargs="?",
        const="get_pet_json",
        metavar="SCENARIO",
        help="run only SCENARIO (get_pet_json) with the gateway under pyinstrument during the measured"
        " run; writes bench/results/profile-gateway-SCENARIO.{html,txt}; no baseline",
    )
    parser.add_argument(
        "--profile-process",
        choices=PROCESSES,
        default="gateway",
        help="the process --profile samples (gateway)",
    )
    parser.add_argument(
        "--memory-store",
        action="store_true",
        help="the services' embedded in-memory store instead of MongoDB",
    )
    parser.add_argument(
        "--gateway-uvloop", action="store_true", help="run the gateway on uvloop (an experiment)"
    )
    parser.add_argument(
        "--process-env",
        action="append",
        default=[],
        metavar="PROCESS:NAME=VALUE",
        help="an environment variable for one process of the stack (gateway, pet, order, user), for"
        " experiments such as gateway:LOG_LEVEL=WARNING; repeatable",
    )
    parser.add_argument("--log-level", default="INFO", help="LOG_LEVEL of every process (INFO, as deployed)")
    parser.add_argument("--pets", type=int, default=100, help="pets loaded and cycled through (100)")
    parser.add_argument("--users", type=int, default=4, help="users loaded for the login scenario (4)")
    parser.add_argument(
        "--gateway-workers",
        type=int,
        default=1,
        metavar="N",
        help="GATEWAY_WORKERS: N gateway processes sharing the port, each counted (gateway, gateway.1,"
        " ...) in CPU and RSS (1)",
    )
    parser.add_argument("--results-dir", type=Path, default=runner.RESULTS_DIR)
    args = parser.parse_args(argv)

    scenarios = tuple(key.strip() for key in args.scenarios.split(",") if key.strip())
    if args.profile is not None:
        scenarios = (args.profile,)
    if LAST in scenarios:  # its writes change the ETags the others (get_pet_304) were given
        scenarios = (*(key for key in scenarios if key != LAST), LAST)
    unknown = [key for key in scenarios if key not in BY_KEY]
    if unknown or not scenarios:
        parser.error(f"unknown scenario {', '.join(unknown)}; known: {', '.join(BY_KEY)}")
    duration = (
        args.duration if args.duration is not None else (SMOKE_DURATION_S if args.smoke else FULL_DURATION_S)
    )
    warmup = args.warmup if args.warmup is not None else (SMOKE_WARMUP_S if args.smoke else FULL_WARMUP_S)
    if (
        duration < 1
        or warmup < 0
        or args.slices < 1
        or args.connections < 1
        or args.threads < 1
        or args.timeout < 1
    ):
        parser.error(
            "durations, connections, threads and timeout must be positive (wrk counts whole seconds)"
        )
    if args.threads > args.connections:
        parser.error("wrk needs at least one connection per thread")
    if args.pets < 1 or args.users < 1 or args.gateway_workers < 1:
        parser.error("--pets, --users and --gateway-workers must be at least 1")
    process_env: dict[str, dict[str, str]] = {}
    for item in args.process_env:
        process, _, assignment = item.partition(":")
        name, equals, value = assignment.partition("=")
        if process not in PROCESSES or not name or not equals:
            parser.error(f"--process-env wants PROCESS:NAME=VALUE with PROCESS one of {', '.join(PROCESSES)}")
        process_env.setdefault(process, {})[name] = value
    mode = "profile" if args.profile is not None else "smoke" if args.smoke else "full"
    return runner.Options(
        mode=mode,
        scenarios=scenarios,
        load=wrk.Load(duration, args.connections, args.threads, args.timeout),
        warmup_s=warmup,
        results_dir=args.results_dir,
        memory_store=args.memory_store,
        gateway_uvloop=args.gateway_uvloop,
        log_level=args.log_level.upper(),
        profile=args.profile is not None,
        profile_process=args.profile_process,
        process_env=process_env,
        settle_s=SMOKE_SETTLE_S if args.smoke else runner.SETTLE_LIMIT_S,
        pets=args.pets,
        users=args.users,
        gateway_workers=args.gateway_workers,
        slices=args.slices,
        command=shlex.join(["python", "-m", "petstore_bench", *(sys.argv[1:] if argv is None else argv)]),
    )


def main(argv: list[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else argv
    if "--growth" in arguments:  # its own mode and flags (growth_cli)
        from petstore_bench import growth_cli

        return growth_cli.main(arguments)
    options = parse_args(argv)
    try:
        results = runner.run(options)
    except (wrk.WrkError, RuntimeError, TimeoutError) as exc:
        print(f"petstore_bench: {exc}", file=sys.stderr)
        return 1
    checks = report.evaluate(results.scenarios, results.baseline, results.memory, results.paired_baselines)
    document = report.to_json(results, checks)
    json_path = options.results_dir / f"{options.mode}.json"
    chart_path = options.results_dir / f"{options.mode}.png"
    report.write_json(json_path, document)
    report.write_chart(
        chart_path, results, f"petstore bench ({options.mode}) {document['date']}: {options.command}"
    )
    print()
    print(f"{options.command}   # {document['date']}, {results.info.get('store', '')}")
    print(report.table(results, checks))
    print()
    print(f"results: {json_path}, {chart_path}")
    if "profile" in results.info:
        print(f"profile: {results.info['profile']['html']}, {results.info['profile']['text']}")
    problems = report.broken(results.scenarios, results.baseline, strict=options.mode == "smoke")
    for problem in problems:
        print(f"petstore_bench: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
