"""Typed reads of wire values with precise messages ("photoUrls must be a list of strings").

JSON null counts as absent. JSON booleans are not integers, and integers are not strings:
classic clients that send the wrong type get told so instead of a silent coercion.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from petstore_gateway.representations.shapes import InvalidRepresentation

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


def _name(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def as_object(value: Any, what: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise InvalidRepresentation(f"{what} must be an object")
    return value


def as_list(value: Any, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise InvalidRepresentation(f"{what} must be a list")
    return value


def get_int(
    data: Mapping[str, Any], key: str, *, path: str = "", required: bool = False, bits: int = 64
) -> int | None:
    value = data.get(key)
    name = _name(path, key)
    if value is None:
        if required:
            raise InvalidRepresentation(f"{name} is required")
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidRepresentation(f"{name} must be an integer")
    low, high = (INT32_MIN, INT32_MAX) if bits == 32 else (INT64_MIN, INT64_MAX)
    if not low <= value <= high:
        raise InvalidRepresentation(f"{name} must be a {bits}-bit integer")
    return value


def get_str(data: Mapping[str, Any], key: str, *, path: str = "", required: bool = False) -> str | None:
    value = data.get(key)
    name = _name(path, key)
    if value is None:
        if required:
            raise InvalidRepresentation(f"{name} is required")
        return None
    if not isinstance(value, str):
        raise InvalidRepresentation(f"{name} must be a string")
    return value


def get_bool(data: Mapping[str, Any], key: str, *, path: str = "") -> bool | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, bool):
        raise InvalidRepresentation(f"{_name(path, key)} must be true or false")
    return value


def get_str_list(data: Mapping[str, Any], key: str, *, path: str = "", required: bool = False) -> list[str]:
    value = data.get(key)
    name = _name(path, key)
    if value is None:
        if required:
            raise InvalidRepresentation(f"{name} is required")
        return []
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise InvalidRepresentation(f"{name} must be a list of strings")
    return value


def get_object_list(data: Mapping[str, Any], key: str, *, path: str = "") -> list[Mapping[str, Any]]:
    value = data.get(key)
    name = _name(path, key)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise InvalidRepresentation(f"{name} must be a list of objects")
    return value


def get_object(data: Mapping[str, Any], key: str, *, path: str = "") -> Mapping[str, Any] | None:
    value = data.get(key)
    if value is None:
        return None
    return as_object(value, _name(path, key))
