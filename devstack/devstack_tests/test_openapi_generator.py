"""The generator's jar and the generated clients' cache, without running the generator (the
generated-client flows in tests/clients run it for real)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from petstore_devstack import openapi_generator
from petstore_devstack.openapi_generator import (
    COMPLETE_MARKER,
    GeneratorUnavailable,
    client_dir,
    ensure_jar,
    generate_python_client,
    jar_path,
    runtime_requirements_unmet,
)
from petstore_devstack.ports import free_port

FAKE_JAR = b"PK\x03\x04 not really a jar"


@pytest.fixture
def published(tmp_path: Path) -> tuple[str, str]:
    """(url, sha256) of a 'jar' to download."""
    source = tmp_path / "published.jar"
    source.write_bytes(FAKE_JAR)
    return source.as_uri(), hashlib.sha256(FAKE_JAR).hexdigest()


def test_the_jar_is_downloaded_verified_and_then_reused(tmp_path: Path, published: tuple[str, str]) -> None:
    url, sha256 = published
    cache = tmp_path / "cache"
    jar = ensure_jar(cache, url=url, sha256=sha256)
    assert jar == jar_path(cache)
    assert jar.read_bytes() == FAKE_JAR
    Path(url.removeprefix("file://")).unlink()  # gone at the source: the cached one serves
    assert ensure_jar(cache, url=url, sha256=sha256) == jar


def test_a_jar_that_is_not_the_pinned_one_is_refused_and_not_kept(
    tmp_path: Path, published: tuple[str, str]
) -> None:
    url, _ = published
    cache = tmp_path / "cache"
    with pytest.raises(ValueError, match="not the pinned"):
        ensure_jar(cache, url=url, sha256="0" * 64)
    assert not jar_path(cache).exists()
    assert list(jar_path(cache).parent.iterdir()) == []  # no partial download left either


def test_a_download_that_fails_says_the_generator_is_unavailable(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}/openapi-generator-cli.jar"  # nothing listens there
    with pytest.raises(GeneratorUnavailable, match="cannot download"):
        ensure_jar(tmp_path, url=url, sha256="0" * 64)
    assert not jar_path(tmp_path).exists()


def test_clients_are_cached_by_package_and_description(tmp_path: Path) -> None:
    first = client_dir(b'{"swagger": "2.0"}', "one", tmp_path)
    assert first == client_dir(b'{"swagger": "2.0"}', "one", tmp_path)
    assert first != client_dir(b'{"swagger": "2.0", "x": 1}', "one", tmp_path)
    assert first != client_dir(b'{"swagger": "2.0"}', "two", tmp_path)
    assert openapi_generator.VERSION in first.name


def test_a_generated_client_is_not_generated_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    description = b'{"swagger": "2.0"}'
    done = client_dir(description, "pkg", tmp_path)
    done.mkdir(parents=True)
    (done / COMPLETE_MARKER).write_text("done\n")
    monkeypatch.setattr(
        "petstore_devstack.openapi_generator.shutil.which", lambda name: None
    )  # no Java needed
    assert generate_python_client(description, "pkg", cache_dir=tmp_path) == done


def test_without_java_the_generator_is_unavailable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("petstore_devstack.openapi_generator.shutil.which", lambda name: None)
    interrupted = client_dir(b"{}", "pkg", tmp_path)
    interrupted.mkdir(parents=True)  # no marker: an interrupted generation, made again
    with pytest.raises(GeneratorUnavailable, match="Java"):
        generate_python_client(b"{}", "pkg", cache_dir=tmp_path)


def test_runtime_requirements_are_checked_against_what_is_installed(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text(
        "urllib3 >= 1.25.3, < 3.0.0\npython_dateutil >= 2.8.2\n# a comment\n\n"
        "pydantic >= 999\nno-such-package-here >= 1\n"
    )
    unmet = runtime_requirements_unmet(tmp_path)
    assert len(unmet) == 2, unmet
    assert unmet[0].startswith("pydantic>=999 (installed: 2.")
    assert unmet[1] == "no-such-package-here>=1 (not installed)"
