"""The webhook receiver the tests and developers use: it tells a genuine delivery from a forged
one, answers as scripted, and serves TLS only to a client trusting its own CA."""

from __future__ import annotations

import asyncio
import base64
import os
import socket
import ssl
import stat
import threading
from datetime import UTC, datetime
from pathlib import Path

import aiohttp
import pytest
from standardwebhooks import Webhook

from petstore_devstack.webhook_receiver import HANG, WebhookReceiver, write_certificate

SECRET = "whsec_" + base64.b64encode(b"devstack receiver secret").decode()
BODY = '{"type":"order.placed"}'


def headers(secret: str, message_id: str = "evt_1") -> dict[str, str]:
    now = datetime.now(UTC)
    return {
        "webhook-id": message_id,
        "webhook-timestamp": str(int(now.timestamp())),
        "webhook-signature": Webhook(secret).sign(message_id, now, BODY),
    }


async def test_genuine_and_forged_requests_are_told_apart_and_answered_as_scripted() -> None:
    forger = "whsec_" + base64.b64encode(b"not the receiver's secret").decode()
    async with WebhookReceiver(SECRET) as receiver, aiohttp.ClientSession() as session:
        receiver.answers.extend([500, HANG])
        trust = ssl.create_default_context(cafile=receiver.ca_file)
        statuses = []
        for sent in (headers(SECRET), headers(forger, "evt_2"), {}):
            async with session.post(receiver.url, data=BODY, headers=sent, ssl=trust) as answer:
                statuses.append(answer.status)
            if len(statuses) == 1:  # the second request is held: send it on its own
                held = asyncio.create_task(
                    session.post(receiver.url, data=BODY, headers=headers(SECRET, "evt_h"), ssl=trust)
                )
                await receiver.wait_for(2)
        received = list(receiver.received)
        held.cancel()

    assert statuses == [500, 204, 204]
    assert [(item.id, item.verified, item.answer) for item in received] == [
        ("evt_1", True, 500),
        ("evt_h", True, HANG),
        ("evt_2", False, 204),
        ("", False, 204),
    ]
    assert "signature" in received[2].error.lower()
    assert received[0].json() == {"type": "order.placed"}


async def test_a_client_that_does_not_trust_its_ca_is_refused() -> None:
    async with WebhookReceiver(SECRET) as receiver, aiohttp.ClientSession() as session:
        with pytest.raises(aiohttp.ClientConnectorCertificateError):
            await session.post(receiver.url, data=BODY, headers=headers(SECRET))
        assert receiver.received == []


def names_in(directory: Path) -> list[str]:
    return sorted(path.name for path in directory.iterdir())


def free_port(host: str) -> int:
    with socket.socket() as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


async def test_a_receiver_for_containers_listens_only_on_its_address_with_a_certificate_made_before(
    tmp_path: Path,
) -> None:
    """The container runs' receiver: its CA is written before it starts (the sender trusts it at
    its own start), it serves on that one address and port only, and the files outlive it."""
    host = "127.0.0.2"  # on loopback, yet not 127.0.0.1: a listener on every address would answer both
    port = free_port(host)
    write_certificate(tmp_path, host)
    assert stat.S_IMODE((tmp_path / "key.pem").stat().st_mode) == 0o600
    async with (
        WebhookReceiver(SECRET, host=host, port=port, tls_dir=tmp_path) as receiver,
        aiohttp.ClientSession() as session,
    ):
        assert receiver.url == f"https://{host}:{port}/webhooks"
        assert receiver.ca_file == str(tmp_path / "ca.pem")
        trust = ssl.create_default_context(cafile=receiver.ca_file)  # checks the name: the address
        async with session.post(receiver.url, data=BODY, headers=headers(SECRET), ssl=trust) as answer:
            assert answer.status == 204
        with pytest.raises(aiohttp.ClientConnectorError):
            await session.post(
                f"https://127.0.0.1:{port}/webhooks", data=BODY, headers=headers(SECRET), ssl=trust
            )
        assert [item.verified for item in receiver.received] == [True]
    assert names_in(tmp_path) == ["ca.pem", "cert.pem", "key.pem"]  # kept: others trust this CA


async def test_a_certificate_for_another_address_is_refused(tmp_path: Path) -> None:
    write_certificate(tmp_path, "127.0.0.3")  # served on 127.0.0.2: the name does not match
    async with (
        WebhookReceiver(SECRET, host="127.0.0.2", tls_dir=tmp_path) as receiver,
        aiohttp.ClientSession() as session,
    ):
        trust = ssl.create_default_context(cafile=receiver.ca_file)
        with pytest.raises(aiohttp.ClientConnectorCertificateError):
            await session.post(receiver.url, data=BODY, headers=headers(SECRET), ssl=trust)
        assert receiver.received == []


def server_sockets(port: int) -> int:
    """This process's TCP connections accepted on `port` (not the listener), from /proc."""
    mine = set()
    for link in Path("/proc/self/fd").iterdir():
        try:
            mine.add(os.readlink(link))
        except FileNotFoundError:  # the fd of the listing itself, closed by now
            continue
    count = 0
    for line in Path("/proc/self/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local_port, state, inode = int(fields[1].rsplit(":", 1)[1], 16), fields[3], fields[9]
        if local_port == port and state != "0A" and f"socket:[{inode}]" in mine:  # 0A: LISTEN
            count += 1
    return count


def silent_client(port: int, ca_file: str, done: threading.Event) -> None:
    """A sender that sends one request on a keep-alive connection, then neither reads nor closes
    (as the webhook service may while the e2e receivers stop): it never answers a TLS close."""
    context = ssl.create_default_context(cafile=ca_file)
    with (
        socket.create_connection(("127.0.0.1", port)) as raw,
        context.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
    ):
        head = f"POST /webhooks HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {len(BODY)}\r\n\r\n"
        tls.sendall((head + BODY).encode())
        tls.recv(4096)  # the answer; the connection stays open
        done.wait(30)


async def test_stopping_leaves_no_connection_open_to_a_client_that_never_closes() -> None:
    finished = threading.Event()
    receiver = await WebhookReceiver(SECRET).start()
    client = threading.Thread(target=silent_client, args=(receiver.port, receiver.ca_file, finished))
    try:
        client.start()
        await receiver.wait_for(1)
        await asyncio.sleep(0.2)  # answered: the connection is idle, kept alive
        assert server_sockets(receiver.port) == 1
        await receiver.stop()
        assert server_sockets(receiver.port) == 0  # not left waiting for the client's TLS close
    finally:
        await receiver.stop()
        finished.set()
        await asyncio.to_thread(client.join, 30)
