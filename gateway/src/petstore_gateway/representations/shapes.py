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
from defusedxml.ElementTree import DefusedXMLParser

from petstore_gateway.negotiation import BodyFormat


class MalformedBody(ValueError):
    """The body does not parse as its declared format (always 400)."""


class InvalidRepresentation(ValueError):
    """The body parses but does not have the resource's shape (400, or 405 where classic says so)."""


class OversizedStructure(ValueError):
    """The body passes a structural bound (413): refused before or as soon as it is seen."""


@dataclass(frozen=True, slots=True)
class StructureBounds:
    """How big a body may be in structure, whatever its bytes: parsing a million tiny elements
    costs the event loop far more than a few long strings."""

    max_depth: int
    """Levels of nesting: the outermost value or element is level 1, a scalar inside it 2."""
    max_items: int
    """Items in one list, members in one object (child elements and attributes in XML)."""
    max_values: int
    """JSON values (every object, list and scalar) or XML elements, attributes, comments and
    processing instructions in the whole body."""


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


XML_FEED_BYTES = 64 * 1024
"""XML is fed to the parser in pieces this big, so that a parse running in a worker thread
lets the event loop take the GIL between them."""


def decode(body: bytes, body_format: BodyFormat, document: Document, bounds: StructureBounds) -> Any:
    """Parse `body` into a wire value; XML follows `document`'s shape. OversizedStructure past
    `bounds`: counted on the raw bytes first (C speed), so a body of a million tiny values is
    refused before anything is built for it."""
    if body_format is BodyFormat.JSON:
        _prescan_json(body, bounds)
        try:
            value = orjson.loads(body)
        except orjson.JSONDecodeError:
            raise MalformedBody("request body is not valid JSON") from None
        _check_json(value, bounds)
        return value
    _prescan_xml(body, bounds)
    try:
        parser = DefusedXMLParser(target=_BoundedTreeBuilder(bounds), forbid_dtd=True)
        for start in range(0, len(body), XML_FEED_BYTES):
            parser.feed(body[start : start + XML_FEED_BYTES])
        root = parser.close()
    except OversizedStructure:
        raise  # a ValueError, not to be taken for invalid XML below
    except DefusedXmlException:
        raise MalformedBody("request body must not contain a DTD or entity declarations") from None
    # LookupError: an encoding the XML declaration names that Python does not know.
    except (ET.ParseError, LookupError, ValueError):
        raise MalformedBody("request body is not valid XML") from None
    if isinstance(document.shape, (Obj, MapOf)) and _local(root.tag) != document.root_tag:
        raise InvalidRepresentation(f"the XML root element must be <{document.root_tag}>")
    return _from_xml(root, document.shape, document.root_tag if isinstance(document.shape, ListOf) else "")


def _too_many_values(bounds: StructureBounds, what: str) -> OversizedStructure:
    return OversizedStructure(f"request body has more than {bounds.max_values} {what}")


def _too_deep(bounds: StructureBounds) -> OversizedStructure:
    return OversizedStructure(f"request body nests deeper than {bounds.max_depth} levels")


def _too_many_items(bounds: StructureBounds) -> OversizedStructure:
    return OversizedStructure(f"a list or object in the request body has more than {bounds.max_items} items")


# A JSON string, for counting what lies outside strings (possessive: no backtracking).
_JSON_STRING = re.compile(rb'"(?:[^"\\]++|\\.)*+"')


def _prescan_json(body: bytes, bounds: StructureBounds) -> None:
    """Every value but the first follows a comma or an opening bracket, and each string (key
    or value) has two quotes: byte counts bound the values before orjson builds them."""
    if body.count(b'"') > 4 * bounds.max_values:  # a key and a string value for every value
        raise _too_many_values(bounds, "values")
    if _structural_bytes(body) <= bounds.max_values:
        return
    # Commas and brackets inside strings counted too: count again outside them.
    if _structural_bytes(_JSON_STRING.sub(b"", body)) > bounds.max_values:  # few strings: cheap
        raise _too_many_values(bounds, "values")


def _structural_bytes(body: bytes) -> int:
    return body.count(b",") + body.count(b"[") + body.count(b"{")


def _check_json(value: Any, bounds: StructureBounds) -> None:
    """Depth and items per list or object, walked without recursion."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if not children:
            continue
        if depth >= bounds.max_depth:
            raise _too_deep(bounds)
        if len(children) > bounds.max_items:
            raise _too_many_items(bounds)
        stack.extend((child, depth + 1) for child in children)


def _prescan_xml(body: bytes, bounds: StructureBounds) -> None:
    """In XML '<' opens markup only (text and attribute values escape it; CDATA and comments
    count as markup too), so elements, comments and PIs are at least half the '<'s; each
    attribute has '="' or "='"."""
    markup = (body.count(b"<") + 1) // 2 + body.count(b'="') + body.count(b"='")
    if markup > bounds.max_values:
        raise _too_many_values(bounds, "elements and attributes")


class _BoundedTreeBuilder(ET.TreeBuilder):
    """Builds the tree and refuses as soon as it passes a bound."""

    def __init__(self, bounds: StructureBounds) -> None:
        super().__init__()
        self._bounds = bounds
        self._values = 0
        self._children = [0]
        """Children so far of each open element, the root's parent first."""

    def _count(self, values: int) -> None:
        self._values += values
        if self._values > self._bounds.max_values:
            raise _too_many_values(self._bounds, "elements and attributes")

    def start(self, tag: Any, attrs: Any) -> ET.Element:
        self._count(1 + len(attrs))
        if len(self._children) > self._bounds.max_depth:
            raise _too_deep(self._bounds)
        self._children[-1] += 1
        if self._children[-1] > self._bounds.max_items or len(attrs) > self._bounds.max_items:
            raise _too_many_items(self._bounds)
        self._children.append(0)
        return super().start(tag, attrs)

    def end(self, tag: Any) -> ET.Element:
        self._children.pop()
        return super().end(tag)

    def comment(self, text: Any) -> Any:
        self._count(1)
        return super().comment(text)

    def pi(self, target: Any, text: Any = None) -> Any:
        self._count(1)
        return super().pi(target, text)


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
