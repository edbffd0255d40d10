from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest
from yarl import URL

from petstore_gateway.apidoc.routes import INITIALIZER_SCRIPT, SWAGGER_UI_DIR

from ..conftest import Client

BROWSER_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,*/*;q=0.8"
PAGE = URL("/v2/docs")


class _Links(HTMLParser):
    """Every src and href of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.links.extend(value for name, value in attrs if name in ("src", "href") and value)


def _links(html: str) -> list[str]:
    parser = _Links()
    parser.feed(html)
    return parser.links


@pytest.mark.parametrize("accept", [BROWSER_ACCEPT, "text/html", None])
async def test_the_docs_page_is_html_whatever_the_browser_accepts(client: Client, accept: str | None) -> None:
    response = await client.get("/v2/docs", headers={"Accept": accept} if accept else {})
    assert response.status == 200
    assert response.content_type == "text/html"
    assert '<div id="swagger-ui">' in await response.text()


async def test_the_page_refers_only_to_local_assets_and_each_loads(client: Client) -> None:
    links = _links(await (await client.get("/v2/docs")).text())
    assert len(links) >= 5
    for link in links:
        url = URL(link)
        assert not url.is_absolute(), link
        assert not link.startswith("/"), link  # relative: works behind any path prefix
        response = await client.get(str(PAGE.join(url)), headers={"Accept": BROWSER_ACCEPT})
        assert response.status == 200, link
        assert len(await response.read()) > 100, link


async def test_the_initializer_loads_the_description_by_relative_url_and_validates_nowhere(
    client: Client,
) -> None:
    response = await client.get("/v2/docs/petstore-initializer.js")
    assert response.status == 200
    assert response.content_type == "text/javascript"
    script = await response.text()
    assert script == INITIALIZER_SCRIPT
    assert not re.search(r"https?:|//[a-z]", script)
    assert "validatorUrl: null" in script
    for document in re.findall(r'url: "([^"]+)"', script):
        target = PAGE.join(URL(document))
        assert str(target) in ("/v2/openapi.json", "/v2/swagger.json")
        assert (await client.get(str(target))).status == 200


async def test_bundle_assets_are_served_with_their_types(client: Client) -> None:
    css = await client.get("/v2/docs/swagger-ui.css")
    assert (css.status, css.content_type) == (200, "text/css")
    assert await css.read() == (SWAGGER_UI_DIR / "swagger-ui.css").read_bytes()
    js = await client.get("/v2/docs/swagger-ui-bundle.js", headers={"Accept": "*/*"})
    assert (js.status, js.content_type) == (200, "text/javascript")
    assert "max-age" in js.headers["Cache-Control"]


@pytest.mark.parametrize(
    "asset", ["swagger-initializer.js", "index.html", "oauth2-redirect.html", "..%2Fswagger-ui.css", "nope"]
)
async def test_only_the_assets_the_page_uses_are_served(client: Client, asset: str) -> None:
    response = await client.get(f"/v2/docs/{asset}")
    assert response.status == 404
    assert (await response.json())["type"] == "error"


async def test_the_docs_with_a_slash_send_the_browser_to_the_page(client: Client) -> None:
    response = await client.get("/v2/docs/", allow_redirects=False)
    assert response.status == 302
    assert str(URL("/v2/docs/").join(URL(response.headers["Location"]))) == "/v2/docs"


@pytest.mark.parametrize("path", ["/v2/swagger.json", "/v2/openapi.json"])
@pytest.mark.parametrize("accept", ["text/html", "application/xml", BROWSER_ACCEPT])
async def test_the_description_is_json_whatever_accept_says(client: Client, path: str, accept: str) -> None:
    response = await client.get(path, headers={"Accept": accept})
    assert response.status == 200
    assert response.content_type == "application/json"
    assert (await response.json())["info"]["title"] == "Petstore"


async def test_the_api_itself_still_refuses_an_accept_it_cannot_meet(client: Client) -> None:
    response = await client.get("/v2/store/inventory", headers={"Accept": "text/html"})
    assert response.status == 406


@pytest.mark.parametrize("path", ["/", "/v2", "/v2/"])
async def test_the_base_url_and_the_root_lead_to_the_docs(client: Client, path: str) -> None:
    response = await client.get(path, headers={"Accept": "text/html"}, allow_redirects=False)
    assert response.status == 302
    assert response.headers["Location"] == "/v2/docs"
    followed = await client.get(path, headers={"Accept": "text/html"})
    assert followed.status == 200
    assert "swagger-ui" in await followed.text()
