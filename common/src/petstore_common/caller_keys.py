"""The Ed25519 keys that sign caller tokens (petstore_common.caller_tokens), in the one text form
every setting uses: base64url without padding of the raw 32 bytes.

A signing deployable (the gateway, the order service) holds the 32-byte private seed as
CALLER_SIGNING_KEY; each service lists the public keys it trusts as TRUSTED_CALLER_KEYS
(`issuer=<public key>`, comma-separated). A key's id is derived from its public key (`key_id`),
so nothing else needs configuring, and several keys per issuer make rotation possible.

`python -m petstore_common.caller_keys` prints a new pair:

    CALLER_SIGNING_KEY=<seed>
    CALLER_PUBLIC_KEY=<public key>

Without this package, openssl makes the same pair (a raw key is the last 32 bytes of its DER):

    openssl genpkey -algorithm ed25519 -outform DER -out key.der
    tail -c 32 key.der | basenc --base64url | tr -d '=\\n'            # CALLER_SIGNING_KEY
    openssl pkey -inform DER -in key.der -pubout -outform DER \\
      | tail -c 32 | basenc --base64url | tr -d '=\\n'                # its public key
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from dataclasses import dataclass

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

KEY_BYTES = 32
"""Both an Ed25519 seed and an Ed25519 public key are 32 bytes."""
KEY_ID_BYTES = 8
"""A key id is the first 8 bytes of the public key's SHA-256: enough to tell a handful apart."""


BASE64URL = re.compile(r"[A-Za-z0-9_-]*")


class InvalidKey(ValueError):
    """Not a usable key."""


@dataclass(frozen=True, slots=True)
class KeyPair:
    seed: str
    """The private key: the 32-byte Ed25519 seed, base64url without padding."""
    public: str
    """The raw 32-byte public key, base64url without padding."""


def b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def unb64url(text: str, *, what: str) -> bytes:
    """The raw 32 bytes of a key written as base64url (padding optional); InvalidKey otherwise."""
    text = text.strip().rstrip("=")
    if not BASE64URL.fullmatch(text):  # the decoder would skip stray characters
        raise InvalidKey(f"{what} is not base64url")
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        raise InvalidKey(f"{what} is not base64url") from None
    if len(raw) != KEY_BYTES:
        raise InvalidKey(f"{what} must be {KEY_BYTES} bytes in base64url, got {len(raw)} bytes")
    return raw


def private_key(seed: str) -> Ed25519PrivateKey:
    return Ed25519PrivateKey.from_private_bytes(unb64url(seed, what="the signing key"))


def public_key(public: str) -> Ed25519PublicKey:
    return Ed25519PublicKey.from_public_bytes(unb64url(public, what="the public key"))


def raw_public(key: Ed25519PrivateKey) -> bytes:
    return key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)


def public_of(seed: str) -> str:
    """The public key (base64url) of a seed (base64url)."""
    return b64url(raw_public(private_key(seed)))


def key_id(public: str) -> str:
    """The id a token's header names its key by: derived from the public key alone."""
    raw = unb64url(public, what="the public key")
    return b64url(hashlib.sha256(raw).digest()[:KEY_ID_BYTES])


def generate() -> KeyPair:
    key = Ed25519PrivateKey.generate()
    seed = b64url(key.private_bytes_raw())
    return KeyPair(seed=seed, public=b64url(raw_public(key)))


def main() -> None:
    pair = generate()
    print(f"CALLER_SIGNING_KEY={pair.seed}")
    print(f"CALLER_PUBLIC_KEY={pair.public}")


if __name__ == "__main__":
    main()
