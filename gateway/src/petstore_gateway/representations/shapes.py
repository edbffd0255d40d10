"""Declarative shapes of the wire documents, and the JSON and XML codecs driven by them.

A "wire value" is what JSON decoding gives (dicts, lists, str, int, bool, None). XML input is
converted to the same wire value by following the resource's shape, so the per-resource
checks in pet.py, order.py and user.py see one form whatever the Content-Type was.
"""

from __future__ import annotations

import enum
import re
import xml.etree.ElementTree as ET  # builds output only; input goes through defusedxml
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson
from defusedxml import DefusedXmlException
from defusedxml.ElementTree import fromstring as parse_xml_safely

from petstore_gateway.negotiation import BodyFormat


class MalformedBody(ValueError):
    """The body does not parse as its declared format (always 400)."""


class InvalidRepresentation(ValueError):
    """The body parses but does not have the resource's shape (400, or 405 where classic says so)."""


class Scalar(enum.Enum):
    INT = "integer"
    STR = "string"
    BOOL = "boolean"


@dataclass(frozen=True, slots=True)
class ListOf:
    """A list; in XML a wrapper element holding one `item_tag` element per item."""

    item_tag: str
    item: Shape


@dataclass(frozen=True, slots=True)
class Obj:
    """An object with known fields; other fields are ignored (classic clients send extras)."""

    fields: Mapping[str, Shape]


@dataclass(frozen=True, slots=True)
class MapOf:
    """An object with free keys (e.g. the inventory); in XML one element per key."""

    value: Scalar


Shape = Scalar | ListOf | Obj | MapOf


@dataclass(frozen=True, slots=True)
class Document:
    """A top-level document: its XML root element name and its shape."""

    root_tag: str
    shape: Shape


# ---------------------------------------------------------------------------------------
# Decoding

_INTEGER = re.compile(r"[+-]?[0-9]{1,25}")
_BOOLEANS = {"true": True, "false": False, "1": True, "0": False}


def decode(body: bytes, body_format: BodyFormat, document: Document) -> Any:
    """Parse `body` into a wire value; XML follows `document`'s shape."""
    if body_format is BodyFormat.JSON:
        try:
            return orjson.loads(body)
        except orjson.JSONDecodeError:
            raise MalformedBody("request body is not valid JSON") from None
    try:
        root = parse_xml_safely(body, forbid_dtd=True)
    except DefusedXmlException:
        raise MalformedBody("request body must not contain a DTD or entity declarations") from None
    # LookupError: an encoding the XML declaration names that Python does not know.
    except (ET.ParseError, LookupError, ValueError):
        raise MalformedBody("request body is not valid XML") from None
    if isinstance(document.shape, (Obj, MapOf)) and _local(root.tag) != document.root_tag:
        raise InvalidRepresentation(f"the XML root element must be <{document.root_tag}>")
    return _from_xml(root, document.shape, document.root_tag if isinstance(document.shape, ListOf) else "")


def _local(tag: str) -> str:
    """An element name without its namespace."""
    return tag.rsplit("}", 1)[-1]


def _from_xml(element: ET.Element, shape: Shape, path: str) -> Any:
    if isinstance(shape, Scalar):
        return _scalar_from_text(element.text, shape, path)
    if isinstance(shape, ListOf):
        return [
            _from_xml(child, shape.item, f"{path}[{index}]")
            for index, child in enumerate(c for c in element if _local(c.tag) == shape.item_tag)
        ]
    if isinstance(shape, MapOf):
        return {_local(c.tag): _scalar_from_text(c.text, shape.value, _local(c.tag)) for c in element}
    result: dict[str, Any] = {}
    for child in element:
        name = _local(child.tag)
        field = shape.fields.get(name)
        if field is not None:
            result[name] = _from_xml(child, field, f"{path}.{name}" if path else name)
    return result


def _scalar_from_text(text: str | None, kind: Scalar, path: str) -> Any:
    if kind is Scalar.STR:
        return text or ""
    stripped = (text or "").strip()
    if not stripped:
        return None  # <id/> is how XML clients say "no value"
    if kind is Scalar.INT:
        if not _INTEGER.fullmatch(stripped):
            raise InvalidRepresentation(f"{path} must be an integer")
        return int(stripped)
    value = _BOOLEANS.get(stripped.lower())
    if value is None:
        raise InvalidRepresentation(f"{path} must be true or false")
    return value


# ---------------------------------------------------------------------------------------
# Encoding

# Characters XML 1.0 cannot carry at all; replaced so the output always parses.
_XML_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9._-]{0,127}")
_NOT_XML_CHAR = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def encode(value: Any, body_format: BodyFormat, document: Document) -> bytes:
    if body_format is BodyFormat.JSON:
        return orjson.dumps(value)
    root = ET.Element(document.root_tag)
    _fill_xml(root, value, document.shape)
    return bytes(ET.tostring(root, encoding="utf-8", xml_declaration=True))


def _fill_xml(element: ET.Element, value: Any, shape: Shape) -> None:
    if isinstance(shape, Scalar):
        element.text = _xml_text(value)
    elif isinstance(shape, ListOf):
        for item in value:
            _fill_xml(ET.SubElement(element, shape.item_tag), item, shape.item)
    elif isinstance(shape, MapOf):
        for key, item in value.items():
            if _XML_NAME.fullmatch(key):  # keys are status names; anything else cannot be an element
                ET.SubElement(element, key).text = _xml_text(item)
    else:
        for name, item in value.items():
            field = shape.fields.get(name)
            if field is not None and item is not None:
                _fill_xml(ET.SubElement(element, name), item, field)


def _xml_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return _NOT_XML_CHAR.sub("\ufffd", str(value))
