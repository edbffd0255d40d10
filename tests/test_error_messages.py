"""Error messages reach HTTP clients word for word (the ApiResponse `message`), so they name
what the client sent: `pageToken`, `photoUrls`, `firstName`, never the gRPC fields behind them
(`page_token`, `photo_urls`, `first_name`).

Read from the source: every text given to a service error (InvalidArgument, NotFound, ...) or
as the field name of a `check_*` helper, including module constants passed by name, is checked
against every snake_case field of the gRPC messages."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
from collections.abc import Iterator
from pathlib import Path

from google.protobuf.descriptor import Descriptor

import petstore
from petstore_common import errors
from petstore_gateway.errors import ApiError

REPO_ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("pet-service/src", "order-service/src", "user-service/src", "common/src", "gateway/src")
ERROR_CLASSES = {
    name
    for name, value in vars(errors).items()
    if isinstance(value, type) and issubclass(value, errors.ServiceError)
} | {ApiError.__name__}
"""The services' errors, and the gateway's own (ApiError): both reach the client as written."""

GRPC_ONLY = {"update_mask"}
"""Fields no HTTP request can set (the gateway builds every update mask itself): a message
about them is for a gRPC caller."""


def grpc_snake_case_fields() -> set[str]:
    names: set[str] = set()

    def visit(descriptor: Descriptor) -> None:
        names.update(field.name for field in descriptor.fields if "_" in field.name)
        for nested in descriptor.nested_types:
            visit(nested)

    for module_info in pkgutil.walk_packages(petstore.__path__, "petstore."):
        if module_info.name.endswith("_pb2"):
            module = importlib.import_module(module_info.name)
            for descriptor in module.DESCRIPTOR.message_types_by_name.values():
                visit(descriptor)
    return names


def _texts(node: ast.expr, constants: dict[str, str]) -> Iterator[str]:
    for part in ast.walk(node):
        if isinstance(part, ast.Constant) and isinstance(part.value, str):
            yield part.value
        elif isinstance(part, ast.Name) and part.id in constants:
            yield constants[part.id]


def _called_name(call: ast.Call) -> str:
    return call.func.id if isinstance(call.func, ast.Name) else getattr(call.func, "attr", "")


def message_texts() -> Iterator[tuple[str, str]]:
    """(where, text) of every message text the services' and the gateway's errors are built from."""
    for root in SOURCES:
        for path in sorted((REPO_ROOT / root).rglob("*.py")):
            tree = ast.parse(path.read_text(), str(path))
            constants = {
                target.id: node.value.value
                for node in tree.body
                if isinstance(node, ast.Assign)
                and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str)
                for target in node.targets
                if isinstance(target, ast.Name)
            }
            for call in (node for node in ast.walk(tree) if isinstance(node, ast.Call)):
                name = _called_name(call)
                if name in ERROR_CLASSES or name.startswith("check_"):
                    for argument in (*call.args, *(keyword.value for keyword in call.keywords)):
                        for text in _texts(argument, constants):
                            yield f"{path.relative_to(REPO_ROOT)}:{call.lineno}", text


def test_no_error_message_names_a_grpc_field() -> None:
    fields = grpc_snake_case_fields()
    assert {"page_token", "photo_urls", "first_name", "pet_id"} <= fields  # the walk found them
    texts = list(message_texts())
    assert any("pageToken is invalid" in text for _, text in texts)  # and the messages
    assert any(where.startswith("gateway/") for where, _ in texts)  # the gateway's too
    pattern = re.compile(rf"\b({'|'.join(sorted(fields - GRPC_ONLY))})\b")
    offenders = [(where, text) for where, text in texts if pattern.search(text)]
    assert offenders == []
