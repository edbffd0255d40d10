"""Every application and request key, in one place."""

from __future__ import annotations

from aiohttp import web

from petstore_gateway.apidoc.documents import ApiDocuments
from petstore_gateway.auth import Authenticator, Principal
from petstore_gateway.body_budget import BodyBudget
from petstore_gateway.clients import ServiceClients
from petstore_gateway.metrics import GatewayMetrics
from petstore_gateway.negotiation import ResponseType
from petstore_gateway.pet_cache import PetCache
from petstore_gateway.ratelimit import RateLimits
from petstore_gateway.settings import GatewaySettings

SETTINGS = web.AppKey("settings", GatewaySettings)
CLIENTS = web.AppKey("clients", ServiceClients)
AUTHENTICATOR = web.AppKey("authenticator", Authenticator)
METRICS = web.AppKey("metrics", GatewayMetrics)
API_DOCUMENTS = web.AppKey("api_documents", ApiDocuments)
"""The API description, serialized once when the app is made."""
RATE_LIMITS = web.AppKey("rate_limits", RateLimits)
PET_CACHE = web.AppKey("pet_cache", PetCache)
"""Encoded pets, served while the pet service's WatchPets stream keeps them coherent."""
BODY_BUDGET = web.AppKey("body_budget", BodyBudget)
"""Request-body bytes held at once across all connections."""

RESPONSE_TYPE = web.RequestKey("response_type", ResponseType)
"""The representation negotiated from Accept, set by the negotiation step (pipeline.py)."""
PRINCIPAL = web.RequestKey("principal", Principal)
"""Who made the request (staff, a customer or anonymous); set by the auth step (pipeline.py)."""
