"""The growth mode's table: every figure at every size, its ratio largest/smallest size, and a flag
on each that got worse by more than WORSE_FACTOR."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from petstore_bench import procmem
from petstore_bench.growth import DATABASE_PROCESSES, FIGURES, PROCESSES, FigureResult, StoreResults

WORSE_FACTOR = 1.5
CPU_NOISE_FLOOR_MS = 0.05
"""A process using less CPU per request than this at both ends is not flagged."""
NOISE_TICKS = 2
"""Nor one whose CPU per request at both ends is under this many of /proc's clock ticks spread
over the requests of the window with the fewest: with 15 logins in a window one 10 ms tick is
0.67 ms a request, noise rather than growth."""
FLAG = "WORSE"
COLUMNS = ("store", "figure", "measure")


@dataclass(frozen=True, slots=True)
class Row:
    store: str
    figure: str
    measure: str
    values: tuple[float | None, ...]
    """One per size, None where not measured."""
    higher_is_worse: bool = True
    floor: float = 0.0
    """Values under this at both ends are not flagged."""

    def span(self, sizes: Sequence[int]) -> str:
        """Which sizes the ratio compares: "100k/1k", or less where the largest was not measured."""
        measured = [size for size, value in zip(sizes, self.values, strict=True) if value is not None]
        return f"{size_label(measured[-1])}/{size_label(measured[0])}" if len(measured) > 1 else "-"

    @property
    def ratio(self) -> float | None:
        """Largest size over smallest: the last measured value over the first."""
        measured = [value for value in self.values if value is not None]
        if len(measured) < 2 or measured[0] == 0:
            return None
        return measured[-1] / measured[0]

    @property
    def flagged(self) -> bool:
        measured = [value for value in self.values if value is not None]
        if len(measured) < 2 or (measured[0] < self.floor and measured[-1] < self.floor):
            return False
        first, last = measured[0], measured[-1]
        if self.higher_is_worse:
            return last > first * WORSE_FACTOR
        return first > last * WORSE_FACTOR


def size_label(size: int) -> str:
    return f"{size // 1000}k" if size >= 1000 and size % 1000 == 0 else str(size)


def figure_rows(store: str, key: str, by_size: Mapping[int, FigureResult], sizes: Sequence[int]) -> list[Row]:
    found = [by_size.get(size) for size in sizes]

    def values(read: Any) -> tuple[float | None, ...]:
        return tuple(None if result is None else read(result) for result in found)

    fewest = min((result.requests for result in found if result is not None), default=0)
    tick_ms = 1000 / procmem.CLOCK_TICKS_PER_S
    cpu_floor = max(CPU_NOISE_FLOOR_MS, NOISE_TICKS * tick_ms / max(fewest, 1))
    measured = {name for result in found if result is not None for name in result.cpu_ms}
    processes = (*PROCESSES, *(name for name in DATABASE_PROCESSES if name in measured), "total")
    rows = [
        Row(store, key, "req/s", values(lambda r: r.requests_per_second), higher_is_worse=False),
        Row(store, key, "p99 ms", values(lambda r: r.p99_ms)),
        Row(store, key, "errors", values(lambda r: float(r.errors)), floor=1.0),
    ]
    for name in processes:
        rows.append(
            Row(
                store,
                key,
                f"cpu ms/req {name}",
                values(lambda r, name=name: r.cpu_ms.get(name, 0.0)),
                floor=cpu_floor,
            )
        )
    return rows


def rows(stores: Sequence[StoreResults], sizes: Sequence[int]) -> list[Row]:
    found: list[Row] = []
    for store in stores:
        for figure in FIGURES:
            found.extend(figure_rows(store.store, figure.key, store.figures.get(figure.key, {}), sizes))
        memory = [store.cache_memory.get(size, {}).get("kib_per_10k_cached") for size in sizes]
        found.append(Row(store.store, "pet cache", "KiB per 10k cached", tuple(memory)))
        seeding = {entry["size"]: entry["seconds"] for entry in store.seeding}
        found.append(Row(store.store, "seeding", "s to grow to size", tuple(seeding.get(s) for s in sizes)))
    return found


def _number(value: float | None) -> str:
    if value is None:
        return "-"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 1:
        return f"{value:.2f}"
    return f"{value:.3f}"


def table(stores: Sequence[StoreResults], sizes: Sequence[int]) -> str:
    ratio_title = f"{size_label(sizes[-1])}/{size_label(sizes[0])}"
    header = (*COLUMNS, *(size_label(size) for size in sizes), ratio_title, "flag")
    lines: list[tuple[str, ...]] = [header]
    for row in rows(stores, sizes):
        flag = FLAG if row.flagged and row.figure != "seeding" else ""
        ratio = row.ratio
        lines.append(
            (
                row.store,
                row.figure,
                row.measure,
                *(_number(value) for value in row.values),
                "-" if ratio is None else f"{ratio:.2f}",
                flag,
            )
        )
    widths = [max(len(line[column]) for line in lines) for column in range(len(header))]
    text = [
        "  ".join(
            cell.ljust(width) if column < len(COLUMNS) else cell.rjust(width)
            for column, (cell, width) in enumerate(zip(line, widths, strict=True))
        ).rstrip()
        for line in lines
    ]
    for store in stores:
        counts = "; ".join(
            f"{size_label(size)}: " + ", ".join(f"{count} {name}" for name, count in held.items())
            for size, held in store.counts.items()
        )
        text.append(f"{store.store} ({store.description}) held at each size: {counts}")
        if store.skipped:
            text.append(f"{store.store} skipped {store.skipped}")
        if store.error:
            text.append(f"{store.store} stopped early: {store.error}")
    return "\n".join(text)


def flags(stores: Sequence[StoreResults], sizes: Sequence[int]) -> list[str]:
    """Each figure worse by more than WORSE_FACTOR from the smallest size to the largest."""
    return [
        f"{row.store} {row.figure} {row.measure}: {row.ratio:.2f}x ({row.span(sizes)})"
        for row in rows(stores, sizes)
        if row.flagged and row.figure != "seeding" and row.ratio is not None
    ]


def to_json(
    document: Mapping[str, Any], stores: Sequence[StoreResults], sizes: Sequence[int]
) -> dict[str, Any]:
    return {
        **document,
        "stores": [
            {
                "store": store.store,
                "description": store.description,
                "error": store.error,
                "skipped": store.skipped,
                "seeding": store.seeding,
                "counts": {str(size): held for size, held in store.counts.items()},
                "cache_memory": {str(size): memory for size, memory in store.cache_memory.items()},
                "figures": {
                    key: {str(size): result.to_json() for size, result in by_size.items()}
                    for key, by_size in store.figures.items()
                },
            }
            for store in stores
        ],
        "table": [
            {
                "store": row.store,
                "figure": row.figure,
                "measure": row.measure,
                "values": {size_label(size): value for size, value in zip(sizes, row.values, strict=True)},
                "ratio_last_first": row.ratio,
                "flagged": row.flagged and row.figure != "seeding",
            }
            for row in rows(stores, sizes)
        ],
        "worse_factor": WORSE_FACTOR,
        "flags": flags(stores, sizes),
    }


def write_json(path: Path, document: Mapping[str, Any]) -> None:
    path.write_text(json.dumps(document, indent=2) + "\n")
