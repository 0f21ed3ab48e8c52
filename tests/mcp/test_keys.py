"""The authorization server's keys, cached: fetched again after five minutes, for an unknown `kid`
at most once per thirty seconds, and an outage told apart from a bad token, logged once and
recovered from within seconds. Time here is a clock the test turns, never the wall's."""

from __future__ import annotations

import logging
from typing import Any

import jwt
import pytest

from aizk_integrations.mcp._keys import KeySet, KeysUnavailable
from tests.mcp.tokens import KEY, STRANGER


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Authority:
    """A JWKS document that a test can change, break and count the fetches of."""

    def __init__(self) -> None:
        self.keys = [KEY]
        self.up = True
        self.fetches = 0

    def __call__(self, url: str) -> Any:
        if not self.up:
            raise OSError("connection refused")
        self.fetches += 1
        return {"keys": [key.jwk() for key in self.keys]}


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def authority() -> Authority:
    return Authority()


@pytest.fixture
def keys(clock: Clock, authority: Authority) -> KeySet:
    return KeySet("http://127.0.0.1:1/jwks", clock=clock, fetch=authority)


def test_the_keys_are_fetched_once_and_used_for_five_minutes(
    keys: KeySet, clock: Clock, authority: Authority
) -> None:
    keys.key_for(KEY.kid)
    clock.now += 299
    keys.key_for(KEY.kid)
    assert authority.fetches == 1
    clock.now += 1
    keys.key_for(KEY.kid)
    assert authority.fetches == 2


def test_an_unknown_kid_refetches_at_most_once_per_thirty_seconds(
    keys: KeySet, clock: Clock, authority: Authority
) -> None:
    keys.key_for(KEY.kid)
    clock.now += 30
    for _ in range(5):
        with pytest.raises(jwt.InvalidTokenError, match="has no key 'key-2'"):
            keys.key_for(STRANGER.kid)
    assert authority.fetches == 2  # one refetch for five tokens
    clock.now += 29.5
    with pytest.raises(jwt.InvalidTokenError):
        keys.key_for(STRANGER.kid)
    assert authority.fetches == 2


def test_a_rotated_key_is_picked_up_within_the_cooldown(
    keys: KeySet, clock: Clock, authority: Authority
) -> None:
    keys.key_for(KEY.kid)
    authority.keys = [KEY, STRANGER]
    with pytest.raises(jwt.InvalidTokenError):
        keys.key_for(STRANGER.kid)  # just fetched: within the cooldown
    clock.now += 30
    assert keys.key_for(STRANGER.kid).key_id == STRANGER.kid


def test_a_token_naming_no_kid_is_refused_without_a_fetch(
    keys: KeySet, authority: Authority
) -> None:
    for kid in (None, 7, ["key-1"]):
        with pytest.raises(jwt.InvalidTokenError, match="names no key id"):
            keys.key_for(kid)
    assert authority.fetches == 0


def test_an_outage_is_unavailable_not_a_bad_token_warned_once_and_recovered_from(
    keys: KeySet, clock: Clock, authority: Authority, caplog: pytest.LogCaptureFixture
) -> None:
    authority.up = False
    with caplog.at_level(logging.INFO, "aizk_integrations.mcp"):
        for _ in range(3):
            with pytest.raises(KeysUnavailable):
                keys.key_for(KEY.kid)
            clock.now += 1  # tried again every 2 s, still failing
        authority.up = True
        with pytest.raises(KeysUnavailable):
            keys.ready()  # 1 s after the last try: not yet tried again
        clock.now += 1
        assert keys.key_for(KEY.kid).key_id == KEY.kid
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 2
    assert "cannot be fetched" in warnings[0]
    assert "answer again" in warnings[1]


def test_while_failing_the_keys_are_tried_again_every_two_seconds(
    keys: KeySet, clock: Clock, authority: Authority
) -> None:
    authority.up = False
    with pytest.raises(KeysUnavailable):
        keys.ready()
    authority.up = True
    clock.now += 1.9
    with pytest.raises(KeysUnavailable):
        keys.ready()
    clock.now += 0.1
    keys.ready()
    assert authority.fetches == 1


def test_fresh_keys_keep_serving_when_a_refetch_for_an_unknown_kid_fails(
    keys: KeySet, clock: Clock, authority: Authority
) -> None:
    keys.key_for(KEY.kid)
    authority.up = False
    clock.now += 30
    with pytest.raises(KeysUnavailable):
        keys.key_for(STRANGER.kid)
    assert keys.key_for(KEY.kid).key_id == KEY.kid


@pytest.mark.parametrize("document", [{"keys": []}, {"nokeys": 1}, "not json", [1]])
def test_a_document_that_is_no_jwks_is_an_outage_never_an_accepted_key(
    clock: Clock, document: object
) -> None:
    keys = KeySet("http://127.0.0.1:1/jwks", clock=clock, fetch=lambda url: document)
    with pytest.raises(KeysUnavailable):
        keys.key_for(KEY.kid)
