"""`python -m petstore_bench --growth`: the growth mode's command line (bench/README.md, "Growth")."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from petstore_bench import growth, growth_report, runner, wrk

FULL_SIZES, FULL_WINDOW_S = (1_000, 10_000, 100_000), 5
BUDGET_S = 30 * 60
"""The whole run's wall time: a size projected to end past it is skipped, said so in the table."""
SMOKE_SIZES, SMOKE_WINDOW_S = (100, 1_000), 1


def parse_args(argv: list[str]) -> growth.GrowthOptions:
    parser = argparse.ArgumentParser(
        prog="python -m petstore_bench --growth",
        description="Grow the shop through its API and measure each operation at every size.",
    )
    parser.add_argument("--growth", action="store_true", required=True, help="this mode")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help=f"sizes {','.join(map(str, SMOKE_SIZES))} and {SMOKE_WINDOW_S} s windows"
        " (a minute or so a store)",
    )
    parser.add_argument(
        "--growth-sizes",
        help=f"comma-separated pet counts, increasing ({','.join(map(str, FULL_SIZES))})",
    )
    parser.add_argument(
        "--growth-window", type=int, help=f"seconds each figure is measured ({FULL_WINDOW_S})"
    )
    parser.add_argument(
        "--growth-stores",
        default=",".join(growth.STORES),
        help="memory (the embedded store), mongo (FerretDB on PostgreSQL, or MONGODB_URI); default both",
    )
    parser.add_argument(
        "--growth-budget",
        type=float,
        default=BUDGET_S,
        metavar="S",
        help=f"seconds the whole run may take; sizes projected past it are skipped ({BUDGET_S})",
    )
    parser.add_argument("--memory-store", action="store_true", help="the embedded store only")
    parser.add_argument("--connections", type=int, default=32, help="connections per figure (32)")
    parser.add_argument("--results-dir", type=Path, default=runner.RESULTS_DIR)
    args = parser.parse_args(argv)
    try:
        sizes = (
            tuple(int(item) for item in args.growth_sizes.split(",") if item.strip())
            if args.growth_sizes
            else (SMOKE_SIZES if args.smoke else FULL_SIZES)
        )
    except ValueError:
        parser.error("--growth-sizes wants comma-separated whole numbers")
    if not sizes or any(size < 1 for size in sizes) or list(sizes) != sorted(set(sizes)):
        parser.error("--growth-sizes must be positive and increasing (the shop only grows)")
    window = (
        args.growth_window
        if args.growth_window is not None
        else (SMOKE_WINDOW_S if args.smoke else FULL_WINDOW_S)
    )
    if window < 1 or args.connections < 1 or args.growth_budget <= 0:
        parser.error(
            "--growth-window and --connections must be at least 1 (wrk counts whole seconds),"
            " --growth-budget positive"
        )
    stores = (
        ("memory",)
        if args.memory_store
        else tuple(item.strip() for item in args.growth_stores.split(",") if item.strip())
    )
    if not stores or any(store not in growth.STORES for store in stores):
        parser.error(f"--growth-stores: one or more of {', '.join(growth.STORES)}")
    return growth.GrowthOptions(
        sizes=sizes,
        window_s=window,
        stores=stores,
        results_dir=args.results_dir,
        connections=args.connections,
        smoke=args.smoke,
        budget_s=args.growth_budget,
        command=shlex.join(["python", "-m", "petstore_bench", *argv]),
    )


def main(argv: list[str]) -> int:
    options = parse_args(argv)
    try:
        document, stores = growth.run(options)
    except (wrk.WrkError, RuntimeError, TimeoutError) as exc:
        print(f"petstore_bench: {exc}", file=sys.stderr)
        return 1
    path = options.results_dir / f"{options.mode}.json"
    growth_report.write_json(path, growth_report.to_json(document, stores, options.sizes))
    print()
    print(f"{options.command}   # {document['date']} to {document['finished']}")
    print(growth_report.table(stores, options.sizes))
    worse = growth_report.flags(stores, options.sizes)
    print()
    print(
        f"worse by more than {growth_report.WORSE_FACTOR}x from the smallest size to the largest measured:"
        f" {'; '.join(worse) if worse else 'none'}"
    )
    print(f"results: {path}")
    failed = [store for store in stores if store.error]
    for store in failed:
        print(f"petstore_bench: {store.store}: {store.error}", file=sys.stderr)
    return 1 if failed else 0
