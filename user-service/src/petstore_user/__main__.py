"""`python -m petstore_user`: serve the user service until SIGTERM."""

from __future__ import annotations

import asyncio
import functools
import sys

from petstore_common.grpc_server import serve
from petstore_common.logging import configure_logging
from petstore_common.settings import SettingsError
from petstore_user.passwords import map_hash_memory_directly
from petstore_user.service import user_service
from petstore_user.sessions import SessionTokens
from petstore_user.settings import UserSettings


def main() -> None:
    try:
        settings = UserSettings.from_env()
    except SettingsError as exc:
        print(f"petstore_user: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    configure_logging("user-service", settings.service.log_level)
    map_hash_memory_directly()  # keeps the process well under its memory limit between logins
    tokens = SessionTokens(settings.session_secret, settings.session_ttl_seconds)
    asyncio.run(serve(functools.partial(user_service, tokens=tokens), settings.service))


if __name__ == "__main__":
    main()
