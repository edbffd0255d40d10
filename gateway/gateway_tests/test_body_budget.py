"""The body budget's shares, from the side of each caller it refuses."""

from __future__ import annotations

from contextlib import ExitStack

import pytest

from petstore_gateway.body_budget import ANONYMOUS_SHARE, CUSTOMER_SHARE, BodyBudget, Tier
from petstore_gateway.errors import ApiError

BODY = 1000
BUDGET = 8 * BODY


def fill(stack: ExitStack, budget: BodyBudget, tier: Tier, count: int, *, first: int = 0) -> None:
    for n in range(count):
        stack.enter_context(budget.reserve(BODY, tier=tier, address=f"10.0.0.{first + n}"))


def refused(budget: BodyBudget, tier: Tier, address: str = "10.9.9.9") -> str:
    with pytest.raises(ApiError) as raised, budget.reserve(BODY, tier=tier, address=address):
        pass
    assert raised.value.status == 503
    assert raised.value.headers["Retry-After"]
    return raised.value.message


def test_anonymous_bodies_stop_at_their_share_while_customers_and_staff_go_on() -> None:
    budget = BodyBudget(BUDGET, BODY)
    with ExitStack() as stack:
        fill(stack, budget, Tier.ANONYMOUS, int(BUDGET * ANONYMOUS_SHARE) // BODY)
        assert "too many request bodies" in refused(budget, Tier.ANONYMOUS)
        with (
            budget.reserve(BODY, tier=Tier.CUSTOMER, address="10.9.9.9"),
            budget.reserve(BODY, tier=Tier.STAFF, address="10.9.9.9"),
        ):
            pass


def test_customer_bodies_leave_staff_their_quarter() -> None:
    budget = BodyBudget(BUDGET, BODY)
    with ExitStack() as stack:
        fill(stack, budget, Tier.CUSTOMER, int(BUDGET * CUSTOMER_SHARE) // BODY)
        refused(budget, Tier.CUSTOMER)
        refused(budget, Tier.ANONYMOUS)
        fill(stack, budget, Tier.STAFF, BUDGET // BODY - int(BUDGET * CUSTOMER_SHARE) // BODY, first=100)
        refused(budget, Tier.STAFF)  # staff too stop at the whole budget


def test_one_address_holds_at_most_its_share_and_gets_it_back() -> None:
    budget = BodyBudget(BUDGET, BODY)
    assert budget.address_bytes == BODY
    with budget.reserve(BODY, tier=Tier.CUSTOMER, address="10.0.0.1"):
        assert "this address" in refused(budget, Tier.ANONYMOUS, "10.0.0.1")
        with budget.reserve(BODY, tier=Tier.ANONYMOUS, address="10.0.0.2"):
            pass
    with budget.reserve(BODY, tier=Tier.ANONYMOUS, address="10.0.0.1"):
        pass
    assert (budget.held, budget.held_below_staff, budget.held_anonymous, budget.held_by_address) == (
        0,
        0,
        0,
        {},
    )


def test_a_holding_grows_with_its_bytes_is_refused_when_they_no_longer_fit_and_gives_all_back() -> None:
    budget = BodyBudget(BUDGET, BODY)
    with budget.holding(tier=Tier.ANONYMOUS, address="10.0.0.1") as hold:
        for _ in range(10):
            hold(BODY // 10)
        assert (budget.held, budget.held_by_address) == (BODY, {"10.0.0.1": BODY})
        with pytest.raises(ApiError) as raised:
            hold(1)  # one byte past its address's share
        assert raised.value.status == 503
        assert budget.held == BODY  # the refused byte was not taken
    assert (budget.held, budget.held_anonymous, budget.held_by_address) == (0, 0, {})
