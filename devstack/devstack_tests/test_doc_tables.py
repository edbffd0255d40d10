"""The generated tables in docs/: read from the code, refused when the meanings fall out of
step, and found stale when a page no longer matches."""

from __future__ import annotations

from pathlib import Path

import pytest

from petstore_common import settings as common_settings
from petstore_devstack import doc_tables, setting_meanings
from petstore_devstack.doc_tables import DocTableError
from petstore_gateway.operations import Access
from petstore_gateway.routes import OPERATIONS
from petstore_gateway.settings import GatewaySettings
from petstore_order.settings import DEFAULT_PORT as ORDER_PORT
from petstore_pet.settings import DEFAULT_PORT as PET_PORT
from petstore_user.settings import DEFAULT_PORT as USER_PORT
from petstore_webhook.settings import DEFAULT_PORT as WEBHOOK_PORT


def row_of(table: str, name: str) -> list[str]:
    [row] = [line for line in table.splitlines() if line.startswith(f"| `{name}` |")]
    return [cell.strip() for cell in row.strip("|").split("|")]


def test_every_setting_is_shown_with_the_default_its_code_passes() -> None:
    table = doc_tables.settings_table()
    defaults = GatewaySettings.from_env({"PETSTORE_SESSION_SECRET": "s" * 32})
    assert row_of(table, "GATEWAY_PORT")[:3] == ["`GATEWAY_PORT`", "gateway", str(defaults.port)]
    assert row_of(table, "RATE_LIMIT_BURST")[2] == str(defaults.rate_limit_burst)
    # One setting, a default per service: each shown with its process.
    assert row_of(table, "GRPC_LISTEN_ADDR")[1:3] == [
        "services",
        f"`127.0.0.1:{PET_PORT}` (pet), `127.0.0.1:{ORDER_PORT}` (order), `127.0.0.1:{USER_PORT}` (user), "
        f"`127.0.0.1:{WEBHOOK_PORT}` (webhook)",
    ]
    # Read straight from the environment rather than through a helper, by every process.
    assert row_of(table, "LOG_FORMAT")[1:3] == ["all", "`auto`"]
    assert row_of(table, "OTEL_TRACING")[1:3] == ["all", "off"]
    # Read only as "is it set at all": its meaning says what unset means.
    assert row_of(table, "CORS_ALLOW_ORIGINS")[1:3] == ["gateway", "`*` (any origin)"]


def test_recording_leaves_the_settings_helpers_as_they_were() -> None:
    before = common_settings.env_int
    doc_tables.read_settings()
    assert common_settings.env_int is before


def test_a_setting_without_a_meaning_is_refused_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    meanings = dict(setting_meanings.MEANINGS)
    del meanings["GATEWAY_PORT"]
    monkeypatch.setattr(doc_tables, "MEANINGS", meanings)
    with pytest.raises(DocTableError, match=r"no meaning for GATEWAY_PORT \(add one\)"):
        doc_tables.settings_table()


def test_a_meaning_for_a_setting_nobody_reads_is_refused_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    meanings = {**setting_meanings.MEANINGS, "GATEWAY_COLOUR": setting_meanings.Meaning("none")}
    monkeypatch.setattr(doc_tables, "MEANINGS", meanings)
    with pytest.raises(DocTableError, match="GATEWAY_COLOUR, which no process reads"):
        doc_tables.settings_table()


def test_a_written_default_never_hides_the_codes_own(monkeypatch: pytest.MonkeyPatch) -> None:
    meanings = {**setting_meanings.MEANINGS, "GATEWAY_PORT": setting_meanings.Meaning("port", default="80")}
    monkeypatch.setattr(doc_tables, "MEANINGS", meanings)
    with pytest.raises(DocTableError, match="GATEWAY_PORT: the code has a default of its own"):
        doc_tables.settings_table()


def test_every_operation_is_a_row_saying_who_the_gateway_lets_through() -> None:
    rows = doc_tables.operations_table().splitlines()[2:]
    assert len(rows) == len(OPERATIONS)
    for op, row in zip(OPERATIONS, rows, strict=True):
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        assert cells[:3] == [op.method, f"`{op.path}`", f"`{op.operation_id}`"]
        expected = {
            Access.STAFF: ["401", "403", "yes"],
            Access.REQUIRED: ["401", "yes", "yes"],
            Access.OPTIONAL: ["yes", "yes", "yes"],
            Access.OPEN: ["yes", "yes", "yes"],
        }[op.access]
        assert cells[3:6] == expected, op.operation_id
        assert ("`Idempotency-Key`" in cells[6]) == op.idempotent


def test_a_stale_table_is_found_and_rewritten(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    page = docs / "page.md"
    page.write_text(
        "# Page\n\nbefore\n<!-- generated: operations -->\n| old | table |\n<!-- end generated -->\nafter\n"
    )
    assert doc_tables.stale_documents(tmp_path, write=False) == [page]
    assert "| old | table |" in page.read_text()  # a check writes nothing
    assert doc_tables.stale_documents(tmp_path, write=True) == [page]
    text = page.read_text()
    assert "| old | table |" not in text
    assert text.startswith("# Page\n\nbefore\n<!-- generated: operations -->\n| method |")
    assert text.endswith("<!-- end generated -->\nafter\n")
    assert doc_tables.stale_documents(tmp_path, write=False) == []


def test_a_marker_naming_no_table_is_refused() -> None:
    with pytest.raises(DocTableError, match="names no table"):
        doc_tables.regenerated("<!-- generated: colours -->\n<!-- end generated -->", {"settings": ""})
