"""The inventory: pet status name -> count. XML: <inventory><available>3</available>...</inventory>."""

from __future__ import annotations

from collections.abc import Mapping

from petstore_gateway.representations.shapes import Document, MapOf, Scalar

INVENTORY = Document("inventory", MapOf(Scalar.INT))


def inventory_to_wire(counts: Mapping[str, int]) -> dict[str, int]:
    return {status: int(count) for status, count in sorted(counts.items())}
