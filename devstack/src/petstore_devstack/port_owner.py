"""Which process listens on a TCP port, from /proc (Linux): the listening socket's inode in
/proc/net/tcp{,6}, then the process holding a descriptor to it. Only processes of this user
can be looked into; any other answer is None."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")
LISTEN = "0A"
"""A socket's state in /proc/net/tcp: TCP_LISTEN."""


@dataclass(frozen=True, slots=True)
class PortOwner:
    pid: int
    command: str

    def __str__(self) -> str:
        return f"pid {self.pid} ({self.command})" if self.command else f"pid {self.pid}"


def listening_inodes(port: int, proc: Path = PROC) -> set[str]:
    """Inodes of the sockets listening on `port` (any address, IPv4 or IPv6)."""
    found: set[str] = set()
    for table in ("tcp", "tcp6"):
        try:
            rows = (proc / "net" / table).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            columns = row.split()
            if len(columns) > 9 and columns[3] == LISTEN and int(columns[1].rsplit(":", 1)[1], 16) == port:
                found.add(columns[9])
    return found


def port_owner(port: int, proc: Path = PROC) -> PortOwner | None:
    """The process that listens on `port`, when this user may see it."""
    targets = {f"socket:[{inode}]" for inode in listening_inodes(port, proc)}
    if not targets:
        return None
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            descriptors = list((entry / "fd").iterdir())
        except OSError:  # another user's, or gone
            continue
        for descriptor in descriptors:
            try:
                if os.readlink(descriptor) in targets:
                    return PortOwner(int(entry.name), _command(entry))
            except OSError:
                continue
    return None


def _command(process: Path) -> str:
    try:
        argv = (process / "cmdline").read_bytes().rstrip(b"\0").split(b"\0")
    except OSError:
        return ""
    if argv and os.path.basename(argv[0].decode(errors="replace")).startswith("python"):
        argv[0] = b"python"  # the interpreter's full path says nothing here
    return " ".join(part.decode(errors="replace") for part in argv)
