"""`python -m petstore_devstack`: run the whole stack on this host until Ctrl-C.

Nothing starts when the gateway's port is taken; the gateway that answers must echo this run's
instance id; when any process dies, the runner says which and stops the others (a local
stack that silently lost a part would answer with 503s nobody explains)."""

from __future__ import annotations

import argparse
import os
import secrets
import signal
import sys
import threading
import time

from petstore_devstack.demo import DEMO_PASSWORD, USERS, DemoData, load_demo_data
from petstore_devstack.ports import PortTaken, ensure_port_free
from petstore_devstack.stack import SERVICES, Stack, how_it_ended

WATCH_SECONDS = 0.5
"""How often the runner looks whether a process died."""
PROCESS_NAMES = {
    "pet": "pet service",
    "order": "order service",
    "user": "user service",
    "webhook": "webhook service",
    "gateway": "gateway",
}


def say(message: str) -> None:
    """One line, in one write: the stack's processes share this stderr, and print()'s separate
    write of the newline let their lines run into ours."""
    sys.stderr.write(f"petstore: {message}\n")
    sys.stderr.flush()


def port_hint(port: int) -> str:
    other = port + 1 if port < 65535 else 8081
    return (
        "is another Petstore (or another program) running? Stop it, or choose another port: "
        f"GATEWAY_PORT={other} make run"
    )


def banner(stack: Stack, *, store: str, key_hint: str, demo: DemoData | None) -> str:
    base = stack.base_url
    lines = [
        "",
        f"Petstore is serving at {base} ({store})",
        f"  API docs:   {base}/docs (Swagger UI; descriptions at /v2/swagger.json and /v2/openapi.json)",
        *metrics_lines(stack),
        f"  staff key:  {key_hint}",
        f"  customers:  sign up with POST {base}/user, then GET {base}/user/login?username=…&password=…",
        "              answers 'logged in user session:<token>': send the token as the api_key header",
    ]
    if demo is not None:
        lines.append(
            f"  demo:       pets {demo.pet_ids}, orders {demo.order_ids}; customers {', '.join(USERS)}"
            f" (password {DEMO_PASSWORD!r}), each owning orders: log in as one with"
        )
        lines.append(f"              curl '{base}/user/login?username={USERS[0]}&password={DEMO_PASSWORD}'")
    lines.append(f"  stop:       Ctrl-C here (or kill -TERM {os.getpid()})")
    lines.append("")
    return "\n".join(lines)


def metrics_lines(stack: Stack) -> list[str]:
    """Where the gateway's metrics are: one port per worker, each counting its own requests."""
    urls = stack.gateway_metrics_urls()
    if len(urls) == 1:
        return [f"  metrics:    {urls[0]} (the gateway's; never on the API port)"]
    return [
        "  metrics:    one port per gateway worker, each counting its own requests (sum them):",
        *(f"              worker {worker}: {url}" for worker, url in enumerate(urls)),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=int(os.environ.get("GATEWAY_PORT", "8080")))
    parser.add_argument("--demo", action="store_true", help="load the classic demo pets, users and orders")
    args = parser.parse_args()
    host = os.environ.get("GATEWAY_HOST", "127.0.0.1")
    try:  # before anything starts: a gateway that cannot bind would leave the port to another
        ensure_port_free(host, args.port, hint=port_hint(args.port))
    except PortTaken as exc:
        say(str(exc))
        return 2
    api_keys = os.environ.get("PETSTORE_API_KEYS", "")
    demo_key = api_keys.split(",")[0].strip() or secrets.token_urlsafe(24)
    if api_keys:  # never print a key the user configured
        key_hint = "the first of PETSTORE_API_KEYS, as the api_key header"
    else:
        key_hint = (
            "none: PETSTORE_API_KEYS is empty, so staff writes (POST /pet...) are 401; set it and restart"
        )
    if args.demo and not api_keys:
        api_keys = demo_key  # the loader needs a key; this one is made up for the run
        key_hint = f"{demo_key} (made up for this run: PETSTORE_API_KEYS is empty)"
    stack = Stack(
        mongodb_uri=os.environ.get("MONGODB_URI", ""),
        api_keys=api_keys,
        session_secret=os.environ.get("PETSTORE_SESSION_SECRET", ""),
        gateway_port=args.port,
        gateway_host=host,
    )
    stopped = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stopped.set())
    say(f"starting the {', '.join(SERVICES)} services and the gateway...")
    began = time.monotonic()
    try:
        stack.start()
    except Exception as exc:  # start() has stopped whatever it started
        say(f"could not start: {exc}")
        return 1
    store = (
        "MongoDB at MONGODB_URI"
        if stack.mongodb_uri
        else "the embedded in-memory store: data lasts until it stops"
    )
    demo = None
    if args.demo:
        say("loading the demo data...")
        demo = load_demo_data(stack.base_url, demo_key)
        say(
            f"demo data loaded: {len(demo.pet_ids)} pets, {len(demo.usernames)} customers, "
            f"{len(demo.order_ids)} orders"
        )
    say(f"ready in {time.monotonic() - began:.1f} s")
    sys.stderr.write(banner(stack, store=store, key_hint=key_hint, demo=demo) + "\n")  # one write, last
    sys.stderr.flush()
    try:
        return watch(stack, stopped)
    finally:
        say("stopping...")
        stack.stop()


def watch(stack: Stack, stopped: threading.Event) -> int:
    """Until a stop is asked (0) or a process dies (1, naming it)."""
    while not stopped.wait(WATCH_SECONDS):
        dead = stack.exited()
        if dead:
            for name, code in dead:
                say(f"the {PROCESS_NAMES.get(name, name)} {how_it_ended(code)}; stopping the others")
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
