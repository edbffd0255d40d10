"""The watch stream's figures are stated where operators read them, from this one source."""

from __future__ import annotations

from pathlib import Path

from petstore_common.watch import HEARTBEAT_SECONDS, MAX_HEARTBEAT_SECONDS, SILENCE_MULTIPLE, SILENCE_SECONDS
from petstore_devstack.doc_tables import documentation_words

ROOT = Path(__file__).resolve().parents[2]
NUMBER_WORDS = {2: "two", 3: "three", 4: "four", 5: "five"}


def _words(path: str) -> str:
    return " ".join((ROOT / path).read_text().split())


def test_a_silence_is_several_heartbeats() -> None:
    assert SILENCE_MULTIPLE >= 2  # one late heartbeat never drops a stream
    assert SILENCE_SECONDS == SILENCE_MULTIPLE * HEARTBEAT_SECONDS  # the fallback, for the default


def test_the_docs_state_the_heartbeat_and_the_silence() -> None:
    heartbeat, silence = f"{HEARTBEAT_SECONDS:g}", f"{SILENCE_SECONDS:g}"
    multiple = NUMBER_WORDS[SILENCE_MULTIPLE]
    readme = documentation_words()
    assert (
        f"or {multiple} heartbeats without a message: the pet service sends one every {heartbeat} s" in readme
    )
    assert f"{silence} s without even a heartbeat, `PET_WATCH_SILENCE_SECONDS`" in readme
    assert f"`heartbeat_ms`, believed up to {MAX_HEARTBEAT_SECONDS:g} s;" in readme
    assert f"| `PET_WATCH_SILENCE_SECONDS` | gateway | {silence} | the fallback silence limit." in readme
    assert f"lost after {multiple} of the heartbeat intervals its messages announce" in readme
    assert f"the pet service sends every {heartbeat} s" in readme
    gateway_row = f"| PET_WATCH_SILENCE_SECONDS | {silence} | the fallback silence limit"
    gateway_readme = _words("gateway/README.md")
    assert gateway_row in gateway_readme
    assert f"lost after {multiple} of the heartbeats its messages announce" in gateway_readme
    assert f"({multiple} heartbeats of {heartbeat} s)" in gateway_readme
    assert f"heartbeats every {heartbeat} s; every message announces that interval" in _words(
        "pet-service/README.md"
    )
