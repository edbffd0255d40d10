"""The login wait's figures, and the README's account of them, read from the one source."""

from __future__ import annotations

from petstore_devstack.doc_tables import documentation_words
from petstore_user import password_changes
from petstore_user.common_passwords import common_passwords
from petstore_user.login_throttle import (
    ACCOUNT_FREE_FAILURES,
    FORGET_AFTER_SECONDS,
    FREE_FAILURES,
    KNOWN_SOURCE_SECONDS,
    MAX_WAIT_SECONDS,
    login_wait,
    seconds_to_wait,
    wait_after,
)
from petstore_user.passwords import (
    LOGIN_LANE,
    MAX_PASSWORD_CHARS,
    MIN_PASSWORD_CHARS,
    NEW_PASSWORD_LANE,
)
from petstore_user.storage.base import LoginFailures, LoginSource

README = documentation_words()


def test_the_wait_doubles_from_one_second_after_the_free_failures() -> None:
    assert [wait_after(n) for n in range(FREE_FAILURES)] == [0] * FREE_FAILURES
    assert [wait_after(FREE_FAILURES + n) for n in range(4)] == [1, 2, 4, 8]
    assert wait_after(10_000) == MAX_WAIT_SECONDS


def test_the_wait_runs_from_the_last_failure_and_ends_by_itself() -> None:
    failures = LoginFailures(FREE_FAILURES + 2, last_at=1000.0)  # a wait of 4 s
    assert seconds_to_wait(failures, 1000.0) == 4
    assert seconds_to_wait(failures, 1003.5) == 1  # whole seconds, rounded up
    assert seconds_to_wait(failures, 1004.0) == 0
    assert seconds_to_wait(LoginFailures(10_000, last_at=1000.0), 1000.0 + FORGET_AFTER_SECONDS) == 0


def test_the_readme_states_the_figures_of_the_source() -> None:
    hours = FORGET_AFTER_SECONDS // 3600
    for stated in (
        f"The first {FREE_FAILURES} in a row are free",
        f"up to {MAX_WAIT_SECONDS} s before the next attempt",
        f"no failure for {hours} hours",
        f"{FREE_FAILURES} free, then a wait of 1, 2, 4 ... {MAX_WAIT_SECONDS} s",
        f"forgotten after {hours} h",
        f"{len(common_passwords()):,} most common passwords",
        f"{MIN_PASSWORD_CHARS} to {MAX_PASSWORD_CHARS} characters",
        f"a new password {MIN_PASSWORD_CHARS}..{MAX_PASSWORD_CHARS} characters",
        f"past {ACCOUNT_FREE_FAILURES} wrong passwords from all sources",
        f"in the last {KNOWN_SOURCE_SECONDS // 86400} days",
        f"change its password {password_changes.PER_WINDOW} times an hour",
        f"| {password_changes.PER_WINDOW} an hour (a customer's",
        f"({LOGIN_LANE.queued} logins, {NEW_PASSWORD_LANE.queued} new passwords;",
        f"| {LOGIN_LANE.queued} logins, {NEW_PASSWORD_LANE.queued} new passwords per process |",
    ):
        assert stated in " ".join(README.split()), stated


NOW = 1_800_000_000.0  # an epoch second in 2027
GUESSED = LoginFailures(ACCOUNT_FREE_FAILURES, last_at=NOW)
"""The account after distributed guessing: its free failures over all sources spent."""


def test_a_source_waits_for_its_own_failures_only_up_to_the_account_bound() -> None:
    own = LoginSource(LoginFailures(FREE_FAILURES, last_at=NOW))
    assert login_wait(LoginFailures(FREE_FAILURES, last_at=NOW), own, NOW) == 1
    # Another source, even after the account's several failures (below its bound), waits not.
    assert login_wait(LoginFailures(ACCOUNT_FREE_FAILURES - 1, last_at=NOW), LoginSource(), NOW) == 0


def test_past_the_account_bound_new_sources_wait_and_known_ones_do_not() -> None:
    assert login_wait(GUESSED, LoginSource(), NOW) == 1
    known = LoginSource(succeeded_at=NOW - KNOWN_SOURCE_SECONDS + 1)
    assert login_wait(GUESSED, known, NOW) == 0
    long_ago = LoginSource(succeeded_at=NOW - KNOWN_SOURCE_SECONDS)
    assert login_wait(GUESSED, long_ago, NOW) == 1
    # A known source still waits for its own failures.
    own = LoginSource(LoginFailures(FREE_FAILURES + 1, last_at=NOW), succeeded_at=NOW)
    assert login_wait(GUESSED, own, NOW) == 2
