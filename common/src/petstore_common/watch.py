"""How a change stream (WatchPets) shows it is alive, for the service that sends it and the
clients that follow it. The service announces its heartbeat on every message (heartbeat_ms);
a follower takes the stream for dead after SILENCE_MULTIPLE of them without a message."""

from __future__ import annotations

HEARTBEAT_SECONDS = 2.0
"""A stream without changes still sends a message this often (the pet service's default)."""
SILENCE_MULTIPLE = 3
"""A follower that hears nothing for this many announced heartbeats takes the stream for dead
even when no connection error says so: one late heartbeat never drops a stream."""
MAX_HEARTBEAT_SECONDS = 30.0
"""The longest heartbeat a follower believes: a stream announcing more (a misconfigured or
foreign service) would otherwise keep a dead stream, and the cache it guards, live for as long."""
SILENCE_SECONDS = SILENCE_MULTIPLE * HEARTBEAT_SECONDS
"""The silence limit a follower falls back on while the stream has announced no heartbeat
(before its first message, or from a pet service from before heartbeat_ms)."""
