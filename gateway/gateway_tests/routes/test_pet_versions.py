"""ETags, 304 and 412 on pets, and the read cache as a client of the gateway sees it."""

from __future__ import annotations

import grpc
import pytest

from petstore.pet.v1 import pet_pb2
from petstore_gateway.keys import PET_CACHE
from petstore_gateway.settings import GatewaySettings

from ..backend import Backend, running_backend, until
from ..conftest import STATIC_KEY, Client, metrics_text, serve_gateway
from ..faults import ChangeFeedDelay, NoChangeStreams
from ..wire import Wire, error_of

KEY = {"api_key": STATIC_KEY}
WIRES = pytest.mark.parametrize("wire", list(Wire))
PET = {"id": 1, "name": "Max", "photoUrls": []}


@pytest.fixture
def feed() -> ChangeFeedDelay:
    return ChangeFeedDelay()


@pytest.fixture
def service_interceptors(feed: ChangeFeedDelay) -> tuple[grpc.aio.ServerInterceptor, ...]:
    return (feed,)


@pytest.fixture
async def cached_client(client: Client) -> Client:
    """The gateway once the pet service's change stream is up: the cache is live."""
    await until(lambda: client.app[PET_CACHE].live)
    return client


@WIRES
async def test_a_pet_has_an_etag_per_representation_and_304_when_held(
    client: Client, backend: Backend, wire: Wire
) -> None:
    await backend.add_pet(1, "Rex")
    first = await client.get("/v2/pet/1", headers={"Accept": wire.value})
    etag = first.headers["ETag"]
    assert etag.startswith('"1-')

    again = await client.get("/v2/pet/1", headers={"Accept": wire.value, "If-None-Match": etag})
    assert again.status == 304
    assert again.headers["ETag"] == etag
    assert await again.read() == b""

    other = Wire.XML if wire is Wire.JSON else Wire.JSON
    other_tag = (await client.get("/v2/pet/1", headers={"Accept": other.value})).headers["ETag"]
    assert other_tag != etag
    assert (
        await client.get("/v2/pet/1", headers={"Accept": wire.value, "If-None-Match": other_tag})
    ).status == 200


async def test_a_changed_pet_answers_200_with_the_new_tag(client: Client, backend: Backend) -> None:
    await backend.add_pet(1, "Rex")
    etag = (await client.get("/v2/pet/1")).headers["ETag"]
    await client.put("/v2/pet", json=PET, headers=KEY)

    response = await client.get("/v2/pet/1", headers={"If-None-Match": etag})
    assert response.status == 200
    assert response.headers["ETag"] != etag
    assert (await response.json())["name"] == "Max"


@WIRES
async def test_put_and_create_answer_with_the_etag_of_what_they_return(
    client: Client, backend: Backend, wire: Wire
) -> None:
    created = await client.post(
        "/v2/pet", data=wire.body("Pet", {"name": "Rex", "photoUrls": []}), headers=wire.headers(**KEY)
    )
    pet_id = (await wire.read(created))["id"]
    put = await client.put(
        "/v2/pet", data=wire.body("Pet", {**PET, "id": pet_id}), headers=wire.headers(**KEY)
    )
    got = await client.get(f"/v2/pet/{pet_id}", headers={"Accept": wire.value})
    assert created.headers["ETag"].startswith('"1-')
    assert put.headers["ETag"] == got.headers["ETag"]
    assert put.headers["ETag"].startswith('"2-')


async def test_put_with_the_current_etag_writes(client: Client, backend: Backend) -> None:
    await backend.add_pet(1, "Rex")
    etag = (await client.get("/v2/pet/1")).headers["ETag"]

    response = await client.put("/v2/pet", json=PET, headers={**KEY, "If-Match": etag})
    assert response.status == 200
    assert (await backend.pet(1)).name == "Max"


@pytest.mark.parametrize("if_match", ['"1-0123456789abcdef"', 'W/"2-0123456789abcdef"', '"junk"'])
async def test_put_with_a_tag_that_is_not_current_is_412_and_changes_nothing(
    client: Client, backend: Backend, if_match: str
) -> None:
    await backend.add_pet(1, "Rex")
    await client.put("/v2/pet", json={**PET, "name": "Bob"}, headers=KEY)  # version 2 now

    response = await client.put("/v2/pet", json=PET, headers={**KEY, "If-Match": if_match})
    status, message = await error_of(Wire.JSON, response)
    assert status == 412
    assert "changed since the version given" in message
    assert (await backend.pet(1)).name == "Bob"


async def test_if_match_on_an_absent_pet_is_412_and_without_it_404(client: Client) -> None:
    absent = await client.put("/v2/pet", json=PET, headers={**KEY, "If-Match": "*"})
    assert absent.status == 412
    assert (await client.put("/v2/pet", json=PET, headers=KEY)).status == 404


async def test_if_match_does_not_hide_a_refusal(client: Client, backend: Backend) -> None:
    await backend.add_pet(1, "Rex")
    response = await client.put("/v2/pet", json=PET, headers={"If-Match": '"1-0123456789abcdef"'})
    assert response.status == 401


async def test_the_form_update_honours_if_match(client: Client, backend: Backend) -> None:
    await backend.add_pet(1, "Rex")
    etag = (await client.get("/v2/pet/1")).headers["ETag"]
    form = {"name": "Max"}
    assert (await client.post("/v2/pet/1", data=form, headers={**KEY, "If-Match": etag})).status == 200
    stale = await client.post("/v2/pet/1", data={"name": "Bob"}, headers={**KEY, "If-Match": etag})
    assert stale.status == 412
    empty = await client.post("/v2/pet/1", data={}, headers={**KEY, "If-Match": etag})  # nothing to write
    assert empty.status == 412
    assert (await backend.pet(1)).name == "Max"


async def test_writes_without_if_match_overwrite_as_before(client: Client, backend: Backend) -> None:
    await backend.add_pet(1, "Rex")
    for name in ("A", "B"):
        assert (await client.put("/v2/pet", json={**PET, "name": name}, headers=KEY)).status == 200
    assert (await backend.pet(1)).name == "B"


async def test_without_a_change_stream_every_read_goes_through(settings: GatewaySettings) -> None:
    async with running_backend(interceptors=(NoChangeStreams(),)) as backend:
        await backend.add_pet(1, "Rex")
        async for client in serve_gateway(settings, backend.clients()):
            await until(lambda: backend.calls.count("PetService/WatchPets") > 0)  # and refused
            for _ in range(3):
                assert (await client.get("/v2/pet/1")).status == 200
            assert backend.calls.count("PetService/GetPet") == 3
            assert not client.app[PET_CACHE].live


async def test_a_live_cache_answers_repeated_reads_itself(cached_client: Client, backend: Backend) -> None:
    await backend.add_pet(1, "Rex")
    bodies = [await (await cached_client.get("/v2/pet/1")).json() for _ in range(3)]
    assert bodies == [bodies[0]] * 3
    assert backend.calls.count("PetService/GetPet") == 1
    etag = (await cached_client.get("/v2/pet/1")).headers["ETag"]
    assert (await cached_client.get("/v2/pet/1", headers={"If-None-Match": etag})).status == 304
    assert backend.calls.count("PetService/GetPet") == 1


async def test_a_write_through_the_gateway_is_read_back_at_once(
    cached_client: Client, backend: Backend, feed: ChangeFeedDelay
) -> None:
    await backend.add_pet(1, "Rex")
    await cached_client.get("/v2/pet/1")
    feed.hold()  # the change event will not come in time: only the write path can help

    await cached_client.put("/v2/pet", json=PET, headers=KEY)
    assert (await (await cached_client.get("/v2/pet/1")).json())["name"] == "Max"


async def test_a_change_made_elsewhere_reaches_the_cache_through_the_stream(
    cached_client: Client, backend: Backend, feed: ChangeFeedDelay
) -> None:
    await backend.add_pet(1, "Rex")
    await cached_client.get("/v2/pet/1")
    feed.hold()
    await backend.change_pet(pet_pb2.Pet(id=1, name="Elsewhere"))  # through another gateway
    assert (await (await cached_client.get("/v2/pet/1")).json())["name"] == "Rex"  # no event yet

    feed.release()
    await until(lambda: cached_client.app[PET_CACHE].size[0] == 0)
    assert (await (await cached_client.get("/v2/pet/1")).json())["name"] == "Elsewhere"


async def test_a_deleted_pet_is_404_at_once(cached_client: Client, backend: Backend) -> None:
    await backend.add_pet(1, "Rex")
    await cached_client.get("/v2/pet/1")
    assert (await cached_client.delete("/v2/pet/1", headers=KEY)).status == 200
    assert (await cached_client.get("/v2/pet/1")).status == 404


async def test_a_lost_stream_empties_the_cache_and_reads_go_through(
    cached_client: Client, backend: Backend
) -> None:
    await backend.add_pet(1, "Rex")
    await cached_client.get("/v2/pet/1")
    await backend.stack.pet.stop()
    await until(lambda: not cached_client.app[PET_CACHE].live)

    down = await cached_client.get("/v2/pet/1")  # read through, not answered from the cache
    assert await error_of(Wire.JSON, down) == (503, "the pet service is unavailable")
    # Changed where the gateway cannot see it (the store outlives the service, like a database).
    await backend.stack.pet.store.update(pet_pb2.Pet(id=1, name="Changed unseen"), ["name"])
    await backend.stack.pet.start()  # a new process: its changes are a new epoch, no resuming
    await until(lambda: cached_client.app[PET_CACHE].live)

    assert (await (await cached_client.get("/v2/pet/1")).json())["name"] == "Changed unseen"


async def test_the_cache_reports_itself_in_the_metrics(cached_client: Client, backend: Backend) -> None:
    await backend.add_pet(1, "Rex")
    for _ in range(3):
        await cached_client.get("/v2/pet/1")
    text = metrics_text(cached_client)
    assert 'gateway_pet_cache_lookups_total{result="hit"} 2.0' in text
    assert 'gateway_pet_cache_lookups_total{result="miss"} 1.0' in text
    assert "gateway_pet_cache_live 1.0" in text
    assert "gateway_pet_cache_entries 1.0" in text
