from __future__ import annotations

import pytest

from petstore_common.request_context import sanitize_request_id


def test_a_safe_client_id_is_kept() -> None:
    assert sanitize_request_id("abc-123_x.y:z") == "abc-123_x.y:z"


@pytest.mark.parametrize(
    "hostile",
    [None, "", "a b", "x\r\nSet-Cookie: a=b", "x" * 129, "ünicode", "a\x00b"],
)
def test_unsafe_or_missing_ids_are_replaced(hostile: str | None) -> None:
    replaced = sanitize_request_id(hostile)
    assert replaced != hostile
    assert len(replaced) == 32
    assert sanitize_request_id(replaced) == replaced
