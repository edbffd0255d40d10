"""Test-side JSON and XML, written independently of the gateway's codecs."""

from __future__ import annotations

import enum
import json
import re
import xml.etree.ElementTree as ET
from typing import Any

from aiohttp import ClientResponse
from defusedxml.ElementTree import fromstring as parse_xml

# Elements whose text stays text even when it looks like a number.
TEXT_ELEMENTS = frozenset(
    {"message", "name", "username", "firstName", "lastName", "email", "phone", "url", "secret", "error"}
)
LIST_ITEMS = {
    "photoUrls": "photoUrl",
    "tags": "tag",
    "pets": "Pet",
    "users": "User",
    "orders": "Order",
    "eventTypes": "eventType",
    "webhooks": "Webhook",
    "deliveries": "WebhookDelivery",
}
_INTEGER = re.compile(r"-?[0-9]+")


class Wire(enum.Enum):
    JSON = "application/json"
    XML = "application/xml"

    def body(self, root: str, value: Any) -> bytes:
        if self is Wire.JSON:
            return json.dumps(value).encode()
        return xml_document(root, value)

    def headers(self, **extra: str) -> dict[str, str]:
        return {"Content-Type": self.value, "Accept": self.value, **extra}

    async def read(self, response: ClientResponse) -> Any:
        assert response.content_type == self.value, await response.text()
        raw = await response.read()
        if self is Wire.JSON:
            return json.loads(raw)
        return read_xml(raw)


async def error_of(wire: Wire, response: ClientResponse) -> tuple[int, str]:
    """(status, message) of an error response, after checking it is a well-formed ApiResponse."""
    body = await wire.read(response)
    assert body["type"] == "error"
    assert body["code"] == response.status
    return response.status, body["message"]


def xml_document(root: str, value: Any) -> bytes:
    element = ET.Element(root)
    _fill(element, value)
    return bytes(ET.tostring(element, encoding="utf-8"))


def _fill(element: ET.Element, value: Any) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            _fill(ET.SubElement(element, key), item)
    elif isinstance(value, list):
        for item in value:
            _fill(ET.SubElement(element, LIST_ITEMS[element.tag]), item)
    elif isinstance(value, bool):
        element.text = "true" if value else "false"
    elif value is not None:
        element.text = str(value)


def read_xml(raw: bytes) -> Any:
    return _read(parse_xml(raw))


def _read(element: ET.Element) -> Any:
    if element.tag in LIST_ITEMS:
        return [_read(child) for child in element]
    if len(element):
        return {child.tag: _read(child) for child in element}
    text = element.text or ""
    if element.tag in TEXT_ELEMENTS:
        return text
    if _INTEGER.fullmatch(text):
        return int(text)
    return {"true": True, "false": False}.get(text, text)
