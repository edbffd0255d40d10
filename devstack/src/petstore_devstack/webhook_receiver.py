"""A local HTTPS webhook receiver that verifies Standard Webhooks signatures (tests and developers).

The webhook service sends only to https URLs, so this receiver serves TLS on 127.0.0.1 with a
certificate of its own private CA, made fresh for each receiver; give the sender `ca_file` to
trust (WEBHOOK_CA_FILE) and allow loopback (WEBHOOK_ALLOWED_NETWORKS=127.0.0.0/8).

A sender in a container cannot reach this host's loopback: there the receiver listens on one
address the containers reach (`host`, e.g. the Docker bridge's gateway), at a fixed `port`,
with a certificate made beforehand for that address (`write_certificate`, `tls_dir`), since the
sender must be given its CA before it starts (deploy/compose/e2e.sh, deploy/k8s/e2e.sh).

    async with WebhookReceiver(secret) as receiver:
        receiver.answers.extend([500, 500, HANG])   # the next three requests; then default_answer
        ...  # point an endpoint at receiver.url, trusting receiver.ca_file
        deliveries = await receiver.wait_for(3)

Every request is kept in `received` as it arrives (before it is answered), verified or not.
A developer runs one with `python -m petstore_devstack.webhook_receiver --secret whsec_...`: it
prints its URL and CA file, then each delivery. `--certificate-only DIR --host ADDRESS` writes a
certificate for that address (ca.pem, cert.pem, key.pem) into DIR and exits.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import ipaddress
import json
import shutil
import signal
import ssl
import tempfile
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Literal

from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from standardwebhooks import Webhook
from standardwebhooks.exceptions import WebhookVerificationError

HANG: Final = "hang"
"""An answer that never comes: the request is held until the receiver stops."""
Answer = int | Literal["hang"]
"""An HTTP status to answer with, or HANG."""
HOST = "127.0.0.1"
"""Where a receiver listens unless told otherwise."""
CA_FILE, CERT_FILE, KEY_FILE = "ca.pem", "cert.pem", "key.pem"
"""A certificate directory's files (`write_certificate`, `tls_dir`)."""
BODY_LIMIT = 1024 * 1024
"""The largest request body accepted (a webhook is a few KB)."""


@dataclass(frozen=True, slots=True)
class ReceivedWebhook:
    """One request as it arrived."""

    id: str
    """Its webhook-id header ("" when absent)."""
    headers: Mapping[str, str]
    """Its headers, names lower-cased."""
    body: bytes
    verified: bool
    """Whether its signature matched the receiver's secret (and its timestamp is recent)."""
    error: str
    """Why it was not verified ("" when it was)."""
    answer: Answer
    """What the receiver answered (or held it with)."""
    path: str
    arrived: float
    """time.monotonic() at arrival: orders requests across receivers."""

    def json(self) -> Any:
        return json.loads(self.body)


class WebhookReceiver:
    """An HTTPS server on `host` (127.0.0.1) at `port` (0: a free one), recording and verifying
    what it receives. Its certificate is made fresh for `host` and removed at stop, unless
    `tls_dir` names a directory `write_certificate` made (kept: others trust its CA)."""

    def __init__(
        self,
        secret: str,
        *,
        default_answer: Answer = 204,
        host: str = HOST,
        port: int = 0,
        tls_dir: str | Path | None = None,
    ) -> None:
        self._webhook = Webhook(secret)
        self.default_answer: Answer = default_answer
        self.answers: deque[Answer] = deque()
        """Scripted answers, taken one per request in arrival order; then default_answer."""
        self.received: list[ReceivedWebhook] = []
        self._arrived = asyncio.Condition()
        self._release = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self._host = str(ipaddress.ip_address(host))  # an address: one interface, named by the certificate
        self._port = port
        self._given_dir = Path(tls_dir) if tls_dir is not None else None
        self._dir: Path | None = None
        """The certificate's directory while serving; removed at stop when made by start."""

    @property
    def url(self) -> str:
        """The https URL to send webhooks to (any path is accepted)."""
        host = f"[{self._host}]" if ":" in self._host else self._host
        return f"https://{host}:{self._port}/webhooks"

    @property
    def ca_file(self) -> str:
        """The PEM file of the CA that signed the receiver's certificate (for WEBHOOK_CA_FILE)."""
        assert self._dir is not None, "start the receiver first"
        return str(self._dir / CA_FILE)

    @property
    def port(self) -> int:
        return self._port

    def verified(self) -> list[ReceivedWebhook]:
        return [item for item in self.received if item.verified]

    async def wait_for(self, count: int, *, within: float | None = 10.0) -> list[ReceivedWebhook]:
        """The first `count` requests received, waiting up to `within` seconds for them
        (TimeoutError otherwise; None: no limit)."""
        async with asyncio.timeout(within), self._arrived:
            await self._arrived.wait_for(lambda: len(self.received) >= count)
        return self.received[:count]

    async def start(self) -> WebhookReceiver:
        if self._given_dir is not None:
            self._dir = self._given_dir
        else:
            self._dir = Path(tempfile.mkdtemp(prefix="webhook-receiver-"))
        try:
            if self._given_dir is None:
                write_certificate(self._dir, self._host)
            ssl_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            ssl_context.load_cert_chain(self._dir / CERT_FILE, self._dir / KEY_FILE)
            app = web.Application(client_max_size=BODY_LIMIT)
            app.router.add_route("*", "/{tail:.*}", self._handle)
            self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
            await self._runner.setup()
            site = web.TCPSite(self._runner, self._host, self._port, ssl_context=ssl_context)
            await site.start()
        except BaseException:
            await self.stop()  # no certificate files left behind
            raise
        self._port = self._runner.addresses[0][1]
        return self

    async def stop(self) -> None:
        """Release held requests, stop serving and remove the certificate files it made."""
        self._release.set()
        if self._runner is not None:
            server = self._runner.server
            open_before = [] if server is None else [h.transport for h in server.connections]
            await self._runner.cleanup()
            self._runner = None
            # A TLS close waits for the client's close_notify (up to 30 s), and a sender that
            # runs on (the container modes' webhook service) may keep its connection: cut them,
            # so no socket outlives the receiver (or its loop, closed right after in the e2e run).
            for transport in open_before:
                if transport is not None:
                    transport.abort()
            await asyncio.sleep(0)  # their connection_lost, which closes the sockets, runs now
        if self._dir is not None and self._given_dir is None:
            shutil.rmtree(self._dir, ignore_errors=True)
        self._dir = None

    async def __aenter__(self) -> WebhookReceiver:
        return await self.start()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        headers = {name.lower(): value for name, value in request.headers.items()}
        error = ""
        try:
            self._webhook.verify(body, headers, json_parse=False)
        except (WebhookVerificationError, ValueError) as exc:
            error = str(exc) or type(exc).__name__
        answer = self.answers.popleft() if self.answers else self.default_answer
        item = ReceivedWebhook(
            id=headers.get("webhook-id", ""),
            headers=headers,
            body=body,
            verified=not error,
            error=error,
            answer=answer,
            path=request.path,
            arrived=time.monotonic(),
        )
        async with self._arrived:
            self.received.append(item)
            self._arrived.notify_all()
        if answer == HANG:
            await self._release.wait()
            return web.Response(status=503)
        return web.Response(status=int(answer))


def write_certificate(directory: Path, host: str = HOST) -> None:
    """A fresh CA and a certificate it signs for `host` (an address) and localhost, written to
    `directory`: ca.pem for the sender to trust, cert.pem and key.pem (owner-only) to serve."""
    address = ipaddress.ip_address(host)
    now = datetime.datetime.now(datetime.UTC)
    validity = (now - datetime.timedelta(minutes=5), now + datetime.timedelta(days=2))
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "petstore webhook receiver CA")])
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(validity[0])
        .not_valid_after(validity[1])
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_key_usage(cert_sign=True), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(validity[0])
        .not_valid_after(validity[1])
        .add_extension(
            x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(address)]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(cert_sign=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    directory.mkdir(parents=True, exist_ok=True)
    (directory / CA_FILE).write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    (directory / CERT_FILE).write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file = directory / KEY_FILE
    key_file.touch(mode=0o600)
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )


def _key_usage(*, cert_sign: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=not cert_sign,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=cert_sign,
        crl_sign=cert_sign,
        encipher_only=False,
        decipher_only=False,
    )


async def _serve(secret: str, fail_first: int, host: str, port: int, tls_dir: str | None) -> None:
    receiver = WebhookReceiver(secret, host=host, port=port, tls_dir=tls_dir)
    receiver.answers.extend([500] * fail_first)
    stop = asyncio.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):  # stop cleanly: the certificate files go too
        asyncio.get_running_loop().add_signal_handler(signum, stop.set)
    async with receiver:
        print(f"receiving at {receiver.url}\nCA file (WEBHOOK_CA_FILE): {receiver.ca_file}", flush=True)
        printing = asyncio.create_task(_print_each(receiver))
        await stop.wait()
        printing.cancel()


async def _print_each(receiver: WebhookReceiver) -> None:
    shown = 0
    while True:
        await receiver.wait_for(shown + 1, within=None)
        for item in receiver.received[shown:]:
            state = "verified" if item.verified else f"NOT verified ({item.error})"
            print(f"{item.id} {state} -> {item.answer}: {item.body.decode(errors='replace')}", flush=True)
        shown = len(receiver.received)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--secret", help="the endpoint's signing secret (whsec_...)")
    parser.add_argument("--fail-first", type=int, default=0, help="answer the first N requests with 500")
    parser.add_argument("--host", default=HOST, help=f"the address to listen on and certify (default {HOST})")
    parser.add_argument("--port", type=int, default=0, help="the port (default: a free one)")
    parser.add_argument("--tls-dir", help="serve the certificate --certificate-only wrote there")
    parser.add_argument(
        "--certificate-only", metavar="DIR", help="write a certificate for --host into DIR, and exit"
    )
    args = parser.parse_args(argv)
    if args.certificate_only:
        write_certificate(Path(args.certificate_only), args.host)
        return
    if not args.secret:
        parser.error("--secret is required to receive")
    asyncio.run(_serve(args.secret, args.fail_first, args.host, args.port, args.tls_dir))


if __name__ == "__main__":
    main()
