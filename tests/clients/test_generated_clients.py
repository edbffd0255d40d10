"""Generated Python clients, unmodified, configured only as their generated README says.

- from our /v2/swagger.json, with the api_key: every operation works, the order list and the
  image download too;
- from our /v2/openapi.json, with a bearer access token: the same;
- from the classic description, with only the OAuth2 access_token it asks for: every pet
  operation works (the classic description secures nothing else with it, so the other writes
  go out without a credential and are 401); with the key also as a default `api_key` header
  (the README's one line): everything except getOrderById, which the client itself refuses for
  ids above 10 (the classic description's maximum) before sending anything.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pydantic

from petstore_devstack.stack import Stack

from .conftest import STATIC_KEY
from .flow import ALL_STEPS, OUR_STEPS, PET_STEPS, Flow, status_of


def api_client(client: ModuleType, stack: Stack, **configuration: Any) -> Any:
    return client.ApiClient(client.Configuration(host=stack.base_url, **configuration))


def report(failures: dict[str, BaseException]) -> str:
    return "\n".join(f"{step}: {type(exc).__name__}: {exc}" for step, exc in failures.items())


def test_a_client_from_our_swagger_json_with_the_api_key(swagger_client: ModuleType, stack: Stack) -> None:
    with api_client(swagger_client, stack, api_key={"api_key": STATIC_KEY}) as configured:
        flow = Flow(swagger_client, configured)
        assert flow.run(OUR_STEPS) == {}, report(flow.failures)


def test_a_client_from_our_openapi_json_with_a_bearer_token(openapi_client: ModuleType, stack: Stack) -> None:
    with api_client(openapi_client, stack, access_token=STATIC_KEY) as configured:
        flow = Flow(openapi_client, configured)
        assert flow.run(OUR_STEPS) == {}, report(flow.failures)


def test_a_client_from_our_swagger_json_with_the_key_as_bearer(
    swagger_client: ModuleType, stack: Stack
) -> None:
    """Swagger 2.0 has no bearer scheme: ours is an apiKey named Authorization, prefixed."""
    configuration = {"api_key": {"bearer": STATIC_KEY}, "api_key_prefix": {"bearer": "Bearer"}}
    with api_client(swagger_client, stack, **configuration) as configured:
        flow = Flow(swagger_client, configured)
        assert flow.run(PET_STEPS) == {}, report(flow.failures)


def test_a_classic_client_with_its_access_token_does_every_pet_operation(
    classic_client: ModuleType, stack: Stack
) -> None:
    with api_client(classic_client, stack, access_token=STATIC_KEY) as configured:
        flow = Flow(classic_client, configured)
        assert flow.run(PET_STEPS) == {}, report(flow.failures)
        # Why the README's default header: nothing but the pet operations carries the token.
        failures = flow.run(("addPet", "placeOrder"))
        assert set(failures) == {"placeOrder"}, report(failures)
        assert status_of(failures["placeOrder"]) == 401, report(failures)


def test_a_classic_client_with_the_key_as_default_header_too(
    classic_client: ModuleType, stack: Stack
) -> None:
    with api_client(classic_client, stack, access_token=STATIC_KEY) as configured:
        configured.set_default_header("api_key", STATIC_KEY)
        flow = Flow(classic_client, configured)
        failures = flow.run(ALL_STEPS)
        assert set(failures) == {"getOrderById"}, report(failures)
        # Refused by the client, never sent: the classic description caps orderId at 10.
        refusal = failures["getOrderById"]
        assert isinstance(refusal, pydantic.ValidationError), report(failures)
        assert "less than or equal to 10" in str(refusal)
