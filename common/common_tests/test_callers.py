from __future__ import annotations

import pytest

from petstore.auth.v1 import caller_pb2
from petstore_common import callers
from petstore_common.errors import PermissionDenied


def test_staff_is_staff_and_no_customer() -> None:
    assert callers.is_staff(callers.staff())
    assert callers.customer_id(callers.staff()) is None


def test_a_customer_has_its_user_id_and_is_not_staff() -> None:
    assert callers.customer_id(callers.customer(7)) == 7
    assert not callers.is_staff(callers.customer(7))


@pytest.mark.parametrize(
    "caller",
    [
        caller_pb2.Caller(),  # forgotten: unspecified
        callers.anonymous(),
        caller_pb2.Caller(kind=caller_pb2.CALLER_KIND_CUSTOMER),  # a customer without an id
        caller_pb2.Caller(kind=caller_pb2.CALLER_KIND_CUSTOMER, user_id=-3),
        caller_pb2.Caller(kind=caller_pb2.CallerKind.ValueType(99), user_id=1),  # unknown kind
    ],
)
def test_anything_else_is_granted_nothing(caller: caller_pb2.Caller) -> None:
    assert not callers.is_staff(caller)
    assert callers.customer_id(caller) is None
    with pytest.raises(PermissionDenied):
        callers.require_staff(caller)


def test_staff_passes_the_staff_check() -> None:
    callers.require_staff(callers.staff())  # raises nothing
