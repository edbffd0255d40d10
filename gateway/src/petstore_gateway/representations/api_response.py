"""ApiResponse, the body of errors and of operations without a resource to return."""

from __future__ import annotations

from typing import Any

from petstore_gateway.representations.shapes import Document, Obj, Scalar

API_RESPONSE = Document("ApiResponse", Obj({"code": Scalar.INT, "type": Scalar.STR, "message": Scalar.STR}))

SUCCESS_TYPE = "unknown"
"""What the classic server put in `type` on success, and what its clients expect."""
ERROR_TYPE = "error"


def api_response(code: int, message: str, *, type_: str = SUCCESS_TYPE) -> dict[str, Any]:
    return {"code": code, "type": type_, "message": message}


def error_body(status: int, message: str) -> dict[str, Any]:
    return api_response(status, message, type_=ERROR_TYPE)
