"""The sign-in store and the wrong-token limit on their own, with a clock the test moves."""

from __future__ import annotations

from workers.dashboard.signins import Attempts, SignIns


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_sign_in_expires_and_is_bound_to_the_token():
    clock = Clock()
    store = SignIns(lifetime_s=60, clock=clock)
    one = store.open("token-hash-a")
    two = store.open("token-hash-a")
    assert one != two and len(one) >= 40
    assert store.valid(one, "token-hash-a") and not store.valid(one, "token-hash-b")
    assert not store.valid("made-up", "token-hash-a") and not store.valid("", "token-hash-a")
    store.close(two)
    assert not store.valid(two, "token-hash-a")
    clock.now += 61
    assert not store.valid(one, "token-hash-a")


def test_the_store_keeps_a_bounded_number_of_sign_ins():
    store = SignIns(lifetime_s=60, keep=3, clock=Clock())
    opened = [store.open("h") for _ in range(5)]
    assert [store.valid(s, "h") for s in opened] == [False, False, True, True, True]


def test_wrong_tokens_are_counted_per_address_over_a_minute():
    clock = Clock()
    attempts = Attempts(limit=3, window_s=60, clock=clock)
    for _ in range(3):
        assert not attempts.blocked("10.0.0.1")
        attempts.failed("10.0.0.1")
    assert attempts.blocked("10.0.0.1") and not attempts.blocked("10.0.0.2")
    clock.now += 30
    assert attempts.blocked("10.0.0.1")
    clock.now += 31
    assert not attempts.blocked("10.0.0.1")


def test_the_limiter_forgets_the_oldest_address_when_full():
    attempts = Attempts(limit=1, window_s=60, keep=2, clock=Clock())
    for client in ("a", "b", "c"):
        attempts.failed(client)
    assert not attempts.blocked("a") and attempts.blocked("b") and attempts.blocked("c")
