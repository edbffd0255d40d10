"""A thin HTTP client for the e2e tests: sends JSON or XML, parses what comes back."""

from __future__ import annotations

import io
import json
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import Any

from aiohttp import ClientSession
from multidict import CIMultiDictProxy

JSON = "application/json"
XML = "application/xml"


@dataclass
class Reply:
    status: int
    headers: CIMultiDictProxy[str]
    text: str

    @property
    def json(self) -> Any:
        return json.loads(self.text)

    @property
    def xml(self) -> ET.Element:
        return ET.fromstring(self.text)  # noqa: S314 - our own server's answer

    def error_message(self) -> str:
        """The ApiResponse error message, in whichever format came back."""
        if self.headers.get("Content-Type", "").startswith(XML):
            root = self.xml
            assert root.tag == "ApiResponse", self.text
            assert root.findtext("type") == "error", self.text
            assert root.findtext("code") == str(self.status), self.text
            return root.findtext("message") or ""
        body = self.json
        assert body["type"] == "error", body
        assert body["code"] == self.status, body
        return str(body["message"])


@dataclass
class Api:
    session: ClientSession
    base_url: str
    static_key: str

    async def call(
        self,
        method: str,
        path: str,
        *,
        body: str | bytes | None = None,
        content_type: str | None = None,
        accept: str | None = JSON,
        api_key: str | None = None,
        headers: dict[str, str] | None = None,
        params: dict[str, str] | list[tuple[str, str]] | None = None,
    ) -> Reply:
        sent = dict(headers or {})
        if accept is not None:
            sent["Accept"] = accept
        if content_type is not None:
            sent["Content-Type"] = content_type
        if api_key is not None:
            sent["api_key"] = api_key
        # Bytes in a stream: aiohttp warns (an error under pytest) about large raw bodies.
        data = io.BytesIO(body.encode() if isinstance(body, str) else body) if body is not None else None
        async with self.session.request(
            method, self.base_url + path, data=data, headers=sent, params=params
        ) as response:
            return Reply(response.status, response.headers, await response.text())

    async def send(
        self, method: str, path: str, payload: dict[str, Any], fmt: str, *, key: bool = True
    ) -> Reply:
        """Send `payload` as JSON or as XML (fmt), asking for the same format back."""
        body = json.dumps(payload) if fmt == JSON else to_xml(payload, _root_for(path))
        return await self.call(
            method,
            path,
            body=body,
            content_type=fmt,
            accept=fmt,
            api_key=self.static_key if key else None,
        )


# Element names of list items, as the Petstore XML shapes them.
_XML_ITEMS = {"photoUrls": "photoUrl", "tags": "tag"}
_XML_ROOTS = {"name": "Pet", "petId": "Order", "username": "User"}
_PATH_ROOTS = (("/store/order", "Order"), ("/user", "User"), ("/pet", "Pet"))


def _root_for(path: str) -> str | None:
    """The XML root element of a body sent to `path` (None: guess it from the payload)."""
    return next((root for prefix, root in _PATH_ROOTS if path.startswith(prefix)), None)


def to_xml(payload: dict[str, Any], root: str | None = None) -> str:
    """Render a Pet, Order or User dict in the Petstore's XML shape."""
    root = root or next(tag for key, tag in _XML_ROOTS.items() if key in payload)
    element = ET.Element(root)
    _fill(element, payload)
    return ET.tostring(element, encoding="unicode")


def _fill(element: ET.Element, payload: dict[str, Any]) -> None:
    for key, value in payload.items():
        child = ET.SubElement(element, key)
        if isinstance(value, dict):
            _fill(child, value)
        elif isinstance(value, list):
            for item in value:
                item_element = ET.SubElement(child, _XML_ITEMS[key])
                if isinstance(item, dict):
                    _fill(item_element, item)
                else:
                    item_element.text = str(item)
        elif isinstance(value, bool):
            child.text = "true" if value else "false"
        else:
            child.text = str(value)


def from_xml(element: ET.Element) -> dict[str, Any]:
    """Read a Pet, Order, User or ApiResponse element back into the JSON shape."""
    result: dict[str, Any] = {}
    for child in element:
        if child.tag in _XML_ITEMS:
            result[child.tag] = [from_xml(item) if len(item) else item.text for item in child]
        elif len(child):
            result[child.tag] = from_xml(child)
        else:
            result[child.tag] = _scalar(child.text or "")
    return result


def _scalar(text: str) -> Any:
    if text in ("true", "false"):
        return text == "true"
    try:
        return int(text)
    except ValueError:
        return text


def parse(reply: Reply, fmt: str) -> dict[str, Any]:
    """The body of a successful reply as a dict, whichever format was asked for."""
    assert reply.status == 200, (reply.status, reply.text)
    assert reply.headers["Content-Type"].startswith(fmt), reply.headers["Content-Type"]
    if fmt == JSON:
        body: dict[str, Any] = reply.json
        return body
    return from_xml(reply.xml)
