"""Reaching the stack through its TLS proxy (`make e2e-compose`, `make e2e-k8s`).

Those runs put nginx in front of the gateway (deploy/docker/tls-proxy) with a certificate made
for the run, and say so in PETSTORE_E2E_CA (the certificate, the one trust anchor of the run)
and an https PETSTORE_E2E_BASE_URL. Every client of the suite trusts that certificate and
nothing else; without PETSTORE_E2E_CA the suite speaks plain HTTP as before.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import ssl
from typing import Any
from urllib.parse import urlsplit

from aiohttp import TCPConnector

CA_FILE = os.environ.get("PETSTORE_E2E_CA", "")
BEHIND_PROXY = bool(CA_FILE)


def client_ssl() -> ssl.SSLContext | bool:
    """aiohttp's `ssl=`: the run's certificate as the only trust anchor, or the default."""
    return ssl.create_default_context(cafile=CA_FILE) if CA_FILE else True


def connector(**kwargs: Any) -> TCPConnector:
    """An aiohttp connector for the suite: client_ssl(), and behind the proxy the transports of
    TLS connections that are closing aborted when the session closes (a TLS close waits for the
    peer's; left to the garbage collector, it fails whichever test is running then)."""
    return TCPConnector(ssl=client_ssl(), enable_cleanup_closed=BEHIND_PROXY, **kwargs)


async def open_connection(base_url: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A raw connection to where base_url points: TLS (verified) when it is https."""
    url = urlsplit(base_url)
    assert url.hostname is not None
    assert url.hostname.startswith("127."), "the tests send traffic only to 127.0.0.0/8"
    secure = url.scheme == "https"
    port = url.port or (443 if secure else 80)
    context = ssl.create_default_context(cafile=CA_FILE or None) if secure else None
    return await asyncio.open_connection(url.hostname, port, ssl=context)


async def close(writer: asyncio.StreamWriter) -> None:
    """Close a raw connection and wait for it: a TLS one closes after its shutdown exchange, and
    a transport left to the garbage collector fails whichever test is running then."""
    writer.close()
    with contextlib.suppress(OSError, ssl.SSLError, TimeoutError):
        await asyncio.wait_for(writer.wait_closed(), 2)


SIGNUPS_PER_HOUR = 3
"""The sign-up budget per address the proxy tests give the gateway for their run."""

SIGNUP_SCRIPT = """
import http.client, json, ssl, sys, time
host, port, pem, plan = sys.argv[1], int(sys.argv[2]), sys.argv[3], json.loads(sys.argv[4])
context = ssl.create_default_context(cadata=pem)
def send(method, path, headers, body=None):
    connection = http.client.HTTPSConnection(host, port, context=context, timeout=10)
    try:
        connection.request(method, path, body=body, headers=headers)
        return connection.getresponse().status
    except OSError:
        return 0
    finally:
        connection.close()
for _ in range(120):  # the gateway may just have been recreated: until the proxy reaches it
    if send("GET", "/livez", {}) == 200:
        break
    time.sleep(0.5)
print(json.dumps([send("POST", "/v2/user", {"Content-Type": "application/json", **h}, "{}") for h in plan]))
"""
"""Run by a client with an address of its own (a container, a pod): `python -c SIGNUP_SCRIPT
HOST PORT CA_PEM PLAN`, PLAN a JSON list of header sets, one sign-up of `{}` for each (refused
400 after being counted, or 429 once the address's budget is spent) through the proxy at
HOST:PORT, verified against CA_PEM; prints the statuses as a JSON list."""


def spoofed_forwarded_for(other_client: str, proxy: str) -> list[dict[str, str]]:
    """X-Forwarded-For values a client writes to pass for someone else: another client, an
    address of nowhere, and a chain ending in a trusted proxy's address."""
    return [
        {"X-Forwarded-For": other_client},
        {"X-Forwarded-For": "198.51.100.7"},
        {"X-Forwarded-For": f"198.51.100.7, {proxy}"},
    ]


def signup_statuses(output: str) -> list[int]:
    statuses: list[int] = json.loads(output.strip().splitlines()[-1])
    return statuses


def ca_pem() -> str:
    with open(CA_FILE) as handle:
        return handle.read()
