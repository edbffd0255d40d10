"""`python -m petstore_user`: serve the user service until SIGTERM."""

from __future__ import annotations

from petstore_common.grpc_server import run_service
from petstore_user.service import user_service
from petstore_user.settings import UserSettings


def main() -> None:
    run_service("user-service", UserSettings.from_env, user_service)


if __name__ == "__main__":
    main()
