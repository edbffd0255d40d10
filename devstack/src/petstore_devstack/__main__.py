"""`python -m petstore_devstack`: run the whole stack on this machine until Ctrl-C."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading

from petstore_devstack.stack import Stack


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=int(os.environ.get("GATEWAY_PORT", "8080")))
    args = parser.parse_args()
    stack = Stack(
        mongodb_uri=os.environ.get("MONGODB_URI", ""),
        api_keys=os.environ.get("PETSTORE_API_KEYS", ""),
        session_secret=os.environ.get("PETSTORE_SESSION_SECRET", ""),
        gateway_port=args.port,
    )
    stopped = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stopped.set())
    stack.start()
    store = "MongoDB at MONGODB_URI" if stack.mongodb_uri else "the embedded in-memory store"
    print(f"Petstore serving at {stack.base_url} on {store}; Ctrl-C stops it.", file=sys.stderr)
    try:
        stopped.wait()
    finally:
        stack.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
