"""The watch stream's figures are stated where operators read them, from this one source."""

from __future__ import annotations

from pathlib import Path

from petstore_common.watch import HEARTBEAT_SECONDS, SILENCE_SECONDS

ROOT = Path(__file__).resolve().parents[2]


def _words(path: str) -> str:
    return " ".join((ROOT / path).read_text().split())


def test_a_silence_is_several_heartbeats() -> None:
    assert SILENCE_SECONDS >= 2 * HEARTBEAT_SECONDS  # one late heartbeat never drops a stream


def test_the_docs_state_the_heartbeat_and_the_silence() -> None:
    heartbeat, silence = f"{HEARTBEAT_SECONDS:g}", f"{SILENCE_SECONDS:g}"
    readme = _words("README.md")
    assert f"or {silence} s without even a heartbeat; the pet service sends one every {heartbeat} s" in readme
    assert f"| `PET_WATCH_SILENCE_SECONDS` | gateway | {silence} |" in readme
    assert f"sends every {heartbeat} s" in readme
    gateway_row = f"| PET_WATCH_SILENCE_SECONDS | {silence} | a WatchPets stream silent this long"
    assert f"{gateway_row} (three heartbeats of {heartbeat} s)" in _words("gateway/README.md")
    assert f"heartbeats every {heartbeat} s" in _words("pet-service/README.md")
