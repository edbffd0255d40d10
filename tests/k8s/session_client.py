"""A logged-in customer's client of the gateway, run INSIDE the cluster by
tests/k8s/test_secret_rotation.py: `kubectl exec -i <client pod> -- python3 -c <this file's
text> <mode> <config as JSON>`; it prints one JSON line. The load cannot come from the host:
the suite's `kubectl port-forward` ends when the gateway's pod is replaced.

Stdlib only (the client pod's image has no aiohttp). Every request goes on a connection of its
own to the gateway Service's port 443 (its TLS proxy), verified against the run's certificate,
and none is retried: a reset, a timeout or any unexpected status is a failure, counted as such.

Modes (config keys in brackets, besides host, port, ca):
  users  [users, staff_key, password]: create each user with the staff key, then log each in;
         prints {"tokens": {username: token}} (a failure stops it with the status seen).
  load   [tokens, password, workers, seconds_max, requests_max, login_interval]: until stdin
         closes, or its own bounds of time and count, every worker but one reads its user with
         a token (the given ones, signed before the rotation, in turn with ones issued during
         it), and one worker logs in again and again (one login per login_interval at most) and
         uses each new token at once; prints the counts per kind and status, the failures, and
         per kid the tokens issued and used (a sample of the issued ones kept for later checks).
  check  [checks, logins]: each (username, token) reads its user once; each username in logins
         logs in and reads its user with the new token; prints what each saw.
"""

from __future__ import annotations

import base64
import http.client
import json
import random
import ssl
import sys
import threading
import time
import urllib.parse
from collections import Counter
from typing import Any

CONFIG: dict[str, Any] = {}
"""The config of the run (argv[2]), set once at start."""
CONTEXT: list[ssl.SSLContext] = []
LOGIN_PREFIX = "logged in user session:"
SAMPLE_PER_KID = 10


def call(method: str, path: str, headers: dict[str, str], body: str | None = None) -> tuple[int, str]:
    """(status, body); (0, the error) when no answer came. A connection of its own, no retry."""
    connection = http.client.HTTPSConnection(CONFIG["host"], CONFIG["port"], context=CONTEXT[0], timeout=10)
    try:
        connection.request(method, path, body=body, headers=headers)
        reply = connection.getresponse()
        return reply.status, reply.read().decode(errors="replace")
    except (OSError, http.client.HTTPException) as error:
        return 0, repr(error)
    finally:
        connection.close()


def log_in(username: str) -> tuple[int, str]:
    """(status, token or what came instead)."""
    query = urllib.parse.urlencode({"username": username, "password": CONFIG["password"]})
    status, body = call("GET", f"/v2/user/login?{query}", {"Accept": "application/json"})
    if status == 200:
        message = json.loads(body).get("message", "")
        if message.startswith(LOGIN_PREFIX):
            return status, message[len(LOGIN_PREFIX) :]
    return status, body[:200]


def read_self(username: str, token: str) -> tuple[str, str]:
    """Read one's own user with the session: ("200", "") when the gateway took the token as that
    user's (the full view, with the email); else the status (200-public: the token was not
    taken as the user's) and the error message."""
    headers = {"Accept": "application/json", "api_key": token}
    status, body = call("GET", f"/v2/user/{urllib.parse.quote(username)}", headers)
    if status == 200:
        return ("200", "") if "email" in json.loads(body) else ("200-public", body[:200])
    try:
        return str(status), str(json.loads(body).get("message", ""))
    except ValueError:
        return str(status), body[:200]


def kid_of(token: str) -> str:
    """The kid of a session token's header (which secret signed it), without verifying it."""
    header = token.split(".")[0]
    return str(json.loads(base64.urlsafe_b64decode(header + "=" * (-len(header) % 4))).get("kid"))


def wait_for_gateway() -> None:
    for _ in range(120):
        if call("GET", "/livez", {})[0] == 200:
            return
        time.sleep(0.5)


def users() -> dict[str, Any]:
    tokens = {}
    for user in CONFIG["users"]:
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json",
            "api_key": CONFIG["staff_key"],
        }
        status, body = call("POST", "/v2/user", headers, json.dumps(user))
        if status != 200:
            return {"error": f"creating {user['username']}: {status} {body[:200]}"}
        status, token = log_in(user["username"])
        if status != 200:
            return {"error": f"logging {user['username']} in: {status} {token}"}
        tokens[user["username"]] = token
    return {"tokens": tokens}


class Load:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.started = time.monotonic()
        self.before: list[tuple[str, str]] = list(CONFIG["tokens"].items())
        self.during: list[tuple[str, str]] = []
        self.sent = 0
        self.counts: Counter[str] = Counter()
        self.issued: Counter[str] = Counter()
        self.used: Counter[str] = Counter()
        self.sample: dict[str, list[tuple[str, str]]] = {}
        self.failed = 0
        self.failures: list[dict[str, Any]] = []

    def admit(self) -> bool:
        """One more request, while the bounds allow."""
        with self.lock:
            over = (
                self.sent >= CONFIG["requests_max"] or time.monotonic() - self.started > CONFIG["seconds_max"]
            )
            if over or self.stop.is_set():
                self.stop.set()
                return False
            self.sent += 1
            return True

    def record(self, kind: str, status: str, token: str, detail: str) -> None:
        with self.lock:
            self.counts[f"{kind} {status}"] += 1
            if status == "200":
                if kind != "login":
                    self.used[kid_of(token)] += 1
                return
            self.failed += 1
            if len(self.failures) < 30:
                seconds = round(time.monotonic() - self.started, 1)
                kid = kid_of(token) if token.count(".") == 2 else ""
                self.failures.append(
                    {
                        "t": seconds,
                        "at": time.strftime("%H:%M:%S"),
                        "kind": kind,
                        "status": status,
                        "kid": kid,
                        "detail": detail,
                    }
                )

    def reader(self) -> None:
        turn = 0
        while self.admit():
            turn += 1
            with self.lock:
                if turn % 2 and self.during:
                    kind, (username, token) = "session-during", random.choice(self.during)
                else:
                    kind, (username, token) = "session-before", self.before[turn % len(self.before)]
            status, detail = read_self(username, token)
            self.record(kind, status, token, detail)

    def logins(self) -> None:
        while self.admit():
            began = time.monotonic()
            username = random.choice(self.before)[0]
            status, token = log_in(username)
            self.record("login", str(status), "", "" if status == 200 else token)
            if status == 200:
                kid = kid_of(token)
                with self.lock:
                    self.during.append((username, token))
                    self.issued[kid] += 1
                    kept = self.sample.setdefault(kid, [])
                    if len(kept) < SAMPLE_PER_KID:
                        kept.append((username, token))
                if self.admit():
                    status_seen, detail = read_self(username, token)
                    self.record("session-fresh", status_seen, token, detail)
            self.stop.wait(max(0.0, CONFIG["login_interval"] - (time.monotonic() - began)))

    def run(self) -> dict[str, Any]:
        threading.Thread(target=self.stop_at_end_of_input, daemon=True).start()
        threads = [threading.Thread(target=self.logins)]
        threads += [threading.Thread(target=self.reader) for _ in range(CONFIG["workers"] - 1)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return {
            "seconds": round(time.monotonic() - self.started, 1),
            "sent": self.sent,
            "counts": dict(self.counts),
            "failed": self.failed,
            "failures": self.failures,
            "issued": dict(self.issued),
            "used": dict(self.used),
            "sample": self.sample,
        }

    def stop_at_end_of_input(self) -> None:
        sys.stdin.read()
        self.stop.set()


def check() -> dict[str, Any]:
    seen = [list(read_self(username, token)) for username, token in CONFIG["checks"]]
    logins = []
    for username in CONFIG["logins"]:
        status, token = log_in(username)
        if status != 200:
            logins.append([str(status), "", token])
            continue
        logins.append([read_self(username, token)[0], kid_of(token), ""])
    return {"checks": seen, "logins": logins}


def main() -> None:
    mode = sys.argv[1]
    CONFIG.update(json.loads(sys.argv[2]))
    CONTEXT.append(ssl.create_default_context(cadata=CONFIG["ca"]))
    wait_for_gateway()
    run = {"users": users, "load": lambda: Load().run(), "check": check}[mode]
    print(json.dumps(run()))


if __name__ == "__main__":
    main()
