"""`python -m petstore_devstack`: run the whole stack on this machine until Ctrl-C."""

from __future__ import annotations

import argparse
import os
import secrets
import signal
import sys
import threading

from petstore_devstack.demo import DEMO_PASSWORD, load_demo_data
from petstore_devstack.stack import Stack


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=int(os.environ.get("GATEWAY_PORT", "8080")))
    parser.add_argument("--demo", action="store_true", help="load the classic demo pets, users and orders")
    args = parser.parse_args()
    api_keys = os.environ.get("PETSTORE_API_KEYS", "")
    demo_key = api_keys.split(",")[0].strip() or secrets.token_urlsafe(24)
    key_hint = "the first of PETSTORE_API_KEYS"  # never print a key the user configured
    if args.demo and not api_keys:
        api_keys = key_hint = demo_key  # the loader needs a key; this one is made up for the run
    stack = Stack(
        mongodb_uri=os.environ.get("MONGODB_URI", ""),
        api_keys=api_keys,
        session_secret=os.environ.get("PETSTORE_SESSION_SECRET", ""),
        gateway_port=args.port,
    )
    stopped = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stopped.set())
    stack.start()
    store = "MongoDB at MONGODB_URI" if stack.mongodb_uri else "the embedded in-memory store"
    print(f"Petstore serving at {stack.base_url} on {store}; Ctrl-C stops it.", file=sys.stderr)
    if args.demo:
        demo = load_demo_data(stack.base_url, demo_key)
        print(
            f"Demo data: pets {demo.pet_ids}, orders {demo.order_ids}, users {', '.join(demo.usernames)}"
            f" (password {DEMO_PASSWORD!r}); api_key for writes: {key_hint}",
            file=sys.stderr,
        )
    try:
        stopped.wait()
    finally:
        stack.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
