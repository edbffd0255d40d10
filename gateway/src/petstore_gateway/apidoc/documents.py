"""The serialized API descriptions an application serves (built once, when the app is made)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ApiDocuments:
    swagger: bytes
    """Swagger 2.0, JSON."""
    openapi: bytes
    """OpenAPI 3.0, JSON."""
