"""How much of a request's head (request line and header lines) the gateway holds, per request,
per client address and in all.

aiohttp alone takes 128 header lines of 8190 bytes, about 1 MiB per request, and its parser
keeps what arrived of an unfinished head twice (bytes and text): 200 connections holding
half-sent heads of that size took a gateway from 65 to 447 MB. Real clients send heads of a
few hundred bytes to a few KiB (browsers cap a cookie at 4 KiB, a session token is under
1 KiB), so:

- a head has at most MAX_HEAD_BYTES bytes and MAX_HEAD_LINES lines (the request line and
  MAX_HEADER_FIELDS header lines); past either the client gets 431 (JSON ApiResponse) and the
  connection is closed. aiohttp's own parser limits are derived from the same constants, so it
  never lets more through;
- one client address has at most MAX_UNFINISHED_HEADS_PER_ADDRESS connections whose head is
  unfinished; the next one is closed (429). A trusted proxy is not one client and is not held
  to it (it buffers heads itself);
- all unfinished heads together hold at most MAX_UNFINISHED_HEAD_BYTES; the connection whose
  bytes would pass it is closed (503).

What sending heads can make the gateway hold, then (raw bytes; the parser's copies make it
about three times that in memory):
- one connection: MAX_HEAD_BYTES = 32 KiB;
- one address: MAX_UNFINISHED_HEADS_PER_ADDRESS x MAX_HEAD_BYTES = 8 x 32 KiB = 256 KiB;
- everybody: MAX_UNFINISHED_HEAD_BYTES = 4 MiB (~12 MiB of memory),
each for at most the header timeout (HEADER_TIMEOUT_SECONDS).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from petstore_gateway.client_address import Network, is_trusted

MAX_HEAD_BYTES = 32 * 1024
MAX_HEADER_FIELDS = 64
MAX_HEAD_LINES = MAX_HEADER_FIELDS + 1
"""The request line and the header lines."""
MAX_UNFINISHED_HEADS_PER_ADDRESS = 8
MAX_UNFINISHED_HEAD_BYTES = 128 * MAX_HEAD_BYTES
"""4 MiB: 128 heads of the largest size at once."""


@dataclass(frozen=True, slots=True)
class ParserLimits:
    """aiohttp's parser limits (keywords of its AppRunner, passed on to each connection)."""

    max_line_size: int
    max_field_size: int
    max_headers: int


AIOHTTP_PARSER_LIMITS = ParserLimits(
    # A single line may take the whole head, and no more; the total is checked before aiohttp
    # sees the bytes (connections.py).
    max_line_size=MAX_HEAD_BYTES,
    max_field_size=MAX_HEAD_BYTES,
    max_headers=MAX_HEADER_FIELDS,
)
"""aiohttp's parser limits (AppRunner keywords), from the same bounds."""


class HeadLedger:
    """The unfinished heads of every connection of one process: how many per client address
    and how many bytes in all."""

    def __init__(self, trusted_proxies: Sequence[Network] = ()) -> None:
        self._trusted = tuple(trusted_proxies)
        self.per_address: dict[str, int] = {}
        self.bytes = 0

    def open(self, address: str) -> bool:
        """A head starts arriving from `address`; False (and nothing counted) when that address
        already has its most unfinished heads."""
        held = self.per_address.get(address, 0)
        if held >= MAX_UNFINISHED_HEADS_PER_ADDRESS and not is_trusted(address, self._trusted):
            return False
        self.per_address[address] = held + 1
        return True

    def grow(self, amount: int) -> bool:
        """An unfinished head grew by `amount` bytes; False (and nothing counted) when that
        would pass the bound of all unfinished heads."""
        if self.bytes + amount > MAX_UNFINISHED_HEAD_BYTES:
            return False
        self.bytes += amount
        return True

    def close(self, address: str, held_bytes: int) -> None:
        """A head from `address` holding `held_bytes` ended: complete, refused or cut off."""
        self.bytes -= held_bytes
        left = self.per_address.get(address, 0) - 1
        if left > 0:
            self.per_address[address] = left
        else:
            self.per_address.pop(address, None)
