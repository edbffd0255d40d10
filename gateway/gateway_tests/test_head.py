from __future__ import annotations

from .backend import Backend
from .conftest import Client

# One request per GET route; a new GET route fails the coverage check until it is listed.
SAMPLES = {
    "/livez": ["/livez"],
    "/readyz": ["/readyz"],
    "/v2/pet/findByStatus": ["/v2/pet/findByStatus?status=available&limit=1", "/v2/pet/findByStatus"],
    "/v2/pet/findByTags": ["/v2/pet/findByTags?tags=cute", "/v2/pet/findByTags?tags="],
    "/v2/pet/{petId}": ["/v2/pet/1", "/v2/pet/99", "/v2/pet/abc"],
    "/v2/store/inventory": ["/v2/store/inventory"],
    "/v2/pet/{petId}/images/{imageId}": ["/v2/pet/1/images/" + "0" * 32, "/v2/pet/1/images/x"],
    "/v2/store/order": ["/v2/store/order", "/v2/store/order?status=lost"],
    "/v2/store/order/{orderId}": ["/v2/store/order/1", "/v2/store/order/2"],
    "/v2/user/login": ["/v2/user/login?username=ann&password=pw", "/v2/user/login?username=ann"],
    "/v2/user/logout": ["/v2/user/logout"],
    "/v2/user/{username}": ["/v2/user/ann", "/v2/user/zed"],
    "/v2/webhooks": ["/v2/webhooks"],
    "/v2/webhooks/{webhookId}/deliveries": ["/v2/webhooks/1/deliveries", "/v2/webhooks/x/deliveries"],
    "/v2/swagger.json": ["/v2/swagger.json"],
    "/v2/openapi.json": ["/v2/openapi.json"],
    "/v2/docs": ["/v2/docs"],
    "/v2/docs/": ["/v2/docs/"],
    "/": ["/"],
    "/v2": ["/v2"],
    "/v2/": ["/v2/"],
    "/v2/docs/{asset}": ["/v2/docs/swagger-ui.css", "/v2/docs/petstore-initializer.js", "/v2/docs/nope"],
}


async def _seed(backend: Backend) -> None:
    await backend.add_pet(1, "Rex", tags=("cute",))
    await backend.add_pet(2, "Max", tags=("cute",))
    await backend.add_order(1, order_id=1)
    await backend.add_user("ann", 1)


async def test_every_get_route_answers_head_like_get_without_a_body(client: Client, backend: Backend) -> None:
    await _seed(backend)
    routes = client.app.router.routes()
    gets = {route.resource.canonical for route in routes if route.method == "GET" and route.resource}
    heads = {route.resource.canonical for route in routes if route.method == "HEAD" and route.resource}
    assert gets == heads == set(SAMPLES)
    seen: set[int] = set()
    for url in (url for urls in SAMPLES.values() for url in urls):
        got = await client.get(url, allow_redirects=False)
        body = await got.read()
        head = await client.head(url, allow_redirects=False)
        assert head.status == got.status, url
        assert await head.read() == b"", url
        assert head.headers.get("Content-Type") == got.headers.get("Content-Type"), url
        if got.status == 200:
            assert head.headers["Content-Length"] == str(len(body)), url
        seen.add(got.status)
    assert {200, 302, 400, 404} <= seen
