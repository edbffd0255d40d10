"""How a change stream (WatchPets) shows it is alive, for the service that sends it and the
clients that follow it: one figure each side derives from."""

from __future__ import annotations

HEARTBEAT_SECONDS = 2.0
"""A stream without changes still sends a message this often."""
SILENCE_SECONDS = 3 * HEARTBEAT_SECONDS
"""A follower that hears nothing for this long (three heartbeats missed) takes the stream for
dead even when no connection error says so."""
