from __future__ import annotations

import time

import pytest
from defusedxml.ElementTree import fromstring as parse_xml

from petstore_gateway.bodies import BODY_BOUNDS
from petstore_gateway.negotiation import BodyFormat
from petstore_gateway.representations.inventory import INVENTORY
from petstore_gateway.representations.pet import PET, PETS
from petstore_gateway.representations.shapes import InvalidRepresentation, MalformedBody, decode, encode
from petstore_gateway.representations.user import USERS

XXE = b"""<?xml version="1.0"?>
<!DOCTYPE Pet [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>
<Pet><name>&xxe;</name></Pet>"""

BILLION_LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
 <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
 <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
 <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
 <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
 <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
<Pet><name>&lol9;</name></Pet>"""


@pytest.mark.parametrize(
    "body", [XXE, BILLION_LAUGHS, b'<!DOCTYPE Pet SYSTEM "http://example.com/x.dtd"><Pet/>']
)
def test_dtds_and_entities_are_refused_fast(body: bytes) -> None:
    started = time.perf_counter()
    with pytest.raises(MalformedBody, match="DTD"):
        decode(body, BodyFormat.XML, PET, BODY_BOUNDS)
    assert time.perf_counter() - started < 0.1


@pytest.mark.parametrize(
    ("body", "body_format"),
    [
        (b"{", BodyFormat.JSON),
        (b"\xff\xfe", BodyFormat.JSON),
        (b"<Pet>", BodyFormat.XML),
        (b"not xml", BodyFormat.XML),
        (b'<?xml version="1.0" encoding="x-no-such-encoding"?><Pet/>', BodyFormat.XML),
        (b'<?xml version="1.0" encoding="UTF-16"?><Pet/>', BodyFormat.XML),
        (b"<Pet><name>&#0;</name></Pet>", BodyFormat.XML),
    ],
)
def test_malformed_bodies(body: bytes, body_format: BodyFormat) -> None:
    with pytest.raises(MalformedBody):
        decode(body, body_format, PET, BODY_BOUNDS)


def test_xml_follows_the_shape_and_types_its_values() -> None:
    body = b"""<Pet xmlns="urn:ignored"><id>7</id><name>Rex</name><unknown>x</unknown>
      <category><id>1</id><name>Dogs</name></category>
      <photoUrls><photoUrl>a</photoUrl><photoUrl>b</photoUrl></photoUrls>
      <tags><tag><id>2</id><name>good</name></tag></tags><status>sold</status></Pet>"""
    assert decode(body, BodyFormat.XML, PET, BODY_BOUNDS) == {
        "id": 7,
        "name": "Rex",
        "category": {"id": 1, "name": "Dogs"},
        "photoUrls": ["a", "b"],
        "tags": [{"id": 2, "name": "good"}],
        "status": "sold",
    }


def test_empty_xml_numbers_are_absent_and_bad_ones_are_named() -> None:
    assert decode(b"<Pet><id/><name>x</name></Pet>", BodyFormat.XML, PET, BODY_BOUNDS) == {
        "id": None,
        "name": "x",
    }
    with pytest.raises(InvalidRepresentation, match=r"^category\.id must be an integer$"):
        decode(b"<Pet><category><id>1.5</id></category></Pet>", BodyFormat.XML, PET, BODY_BOUNDS)


def test_xml_root_must_name_the_resource() -> None:
    with pytest.raises(InvalidRepresentation, match="<Pet>"):
        decode(b"<Order><id>1</id></Order>", BodyFormat.XML, PET, BODY_BOUNDS)


def test_xml_lists_take_their_item_elements() -> None:
    body = b"<users><User><username>a</username></User><User><username>b</username></User></users>"
    assert decode(body, BodyFormat.XML, USERS, BODY_BOUNDS) == [{"username": "a"}, {"username": "b"}]


def test_json_output() -> None:
    assert encode({"id": 1, "name": "é"}, BodyFormat.JSON, PET) == '{"id":1,"name":"é"}'.encode()


def test_xml_output_wraps_lists_and_escapes_text() -> None:
    pets = [
        {"id": 1, "name": "<b>&</b>\x01", "photoUrls": ["u"], "tags": [{"name": "t"}], "category": {"id": 2}}
    ]
    root = parse_xml(encode(pets, BodyFormat.XML, PETS))
    assert root.tag == "pets"
    pet = root.find("Pet")
    assert pet is not None
    assert pet.findtext("name") == "<b>&</b>\ufffd"
    assert [e.text for e in pet.iterfind("photoUrls/photoUrl")] == ["u"]
    assert pet.findtext("tags/tag/name") == "t"
    assert pet.findtext("category/id") == "2"


def test_inventory_xml_has_one_element_per_status() -> None:
    root = parse_xml(encode({"available": 3, "sold": 1}, BodyFormat.XML, INVENTORY))
    assert root.tag == "inventory"
    assert {child.tag: child.text for child in root} == {"available": "3", "sold": "1"}
