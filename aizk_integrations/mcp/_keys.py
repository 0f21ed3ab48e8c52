"""The authorization server's signing keys (its JWKS): fetched when needed, cached, and an outage
told apart from a bad token.

A token's key is looked up by its `kid` in the cached key set. The set is fetched again when it
is older than `LIFESPAN`, and when a token names a `kid` it lacks (keys rotate), at most once per
`COOLDOWN`, so a flood of tokens with made-up `kid`s cannot make the server hammer the
authorization server. A key set that cannot be fetched or read is an outage, not a bad token:
nothing is accepted while it lasts (`KeysUnavailable`, which the server answers with 503 and
`Retry-After`), it is logged at WARNING once when it starts and once when it ends, and it is
tried again every `RETRY` seconds, so the server recovers within seconds of the keys answering.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

import jwt

logger = logging.getLogger("aizk_integrations.mcp")

LIFESPAN = 300.0
"""Seconds a fetched key set is used before it is fetched again."""

COOLDOWN = 30.0
"""Seconds between fetches for a `kid` the key set lacks: a rotated key works within it."""

RETRY = 2.0
"""Seconds between fetches while the key set cannot be fetched; also the 503's `Retry-After`."""

TIMEOUT = 5.0
"""Seconds a fetch of the key set may take before it counts as an outage."""


class KeysUnavailable(Exception):  # noqa: N818 (a state, not a mistake of the caller's)
    """The authorization server's keys cannot be fetched now: no token can be checked."""


Fetch = Callable[[str], Any]
"""What reads the JWKS document at a URL (its parsed JSON)."""


def fetched(url: str) -> Any:
    """The JSON document at `url`, over blocking HTTP (the caller runs it off the event loop)."""
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT) as answer:
            return json.load(answer)
    except urllib.error.HTTPError as error:
        error.close()  # an error status is an answer too, with a connection to close
        raise


class KeySet:
    """The JWKS at `url`, cached; `clock` and `fetch` are seams for the tests."""

    def __init__(
        self,
        url: str,
        *,
        clock: Callable[[], float] = time.monotonic,
        fetch: Fetch = fetched,
    ) -> None:
        self._url = url
        self._clock = clock
        self._fetch = fetch
        self._lock = threading.Lock()
        self._keys: dict[str, jwt.PyJWK] = {}
        self._fetched_at: float | None = None  # the last fetch that succeeded
        self._tried_at: float | None = None  # the last fetch, whatever came of it
        self._failing = False

    def key_for(self, kid: object) -> jwt.PyJWK:
        """The key a token's `kid` names; `KeysUnavailable` in an outage, else `jwt.PyJWTError`
        when the authorization server has no such key."""
        if not isinstance(kid, str):
            raise jwt.InvalidTokenError("the token's header names no key id (kid)")
        with self._lock:
            self._refresh_if(self._stale())
            if kid not in self._keys:
                self._refresh_if(self._since(self._tried_at) >= COOLDOWN)
            key = self._keys.get(kid)
        if key is None:
            raise jwt.InvalidTokenError(f"the authorization server has no key {kid[:40]!r}")
        return key

    def ready(self) -> None:
        """Fetch the keys if they are due; `KeysUnavailable` while they cannot be fetched."""
        with self._lock:
            self._refresh_if(self._stale())

    def _stale(self) -> bool:
        return self._since(self._fetched_at) >= LIFESPAN

    def _since(self, moment: float | None) -> float:
        return float("inf") if moment is None else self._clock() - moment

    def _refresh_if(self, due: bool) -> None:
        """Fetch the key set if `due`; while it cannot be fetched, once per `RETRY` at most."""
        if not due:
            return
        if self._failing and self._since(self._tried_at) < RETRY:
            raise KeysUnavailable(self._url)
        self._tried_at = self._clock()
        try:
            keys = _signing_keys(self._fetch(self._url))
        except Exception as error:  # any failure to fetch or read the JWKS is an outage
            if not self._failing:
                logger.warning(
                    "aizk: the authorization server's keys (JWKS) at %s cannot be fetched, so "
                    "every bearer token is refused with 503 until they can: %s",
                    self._url,
                    _short(error),
                )
            self._failing = True
            raise KeysUnavailable(self._url) from error
        if self._failing:
            logger.warning("aizk: the authorization server's keys at %s answer again", self._url)
        self._failing = False
        self._keys, self._fetched_at = keys, self._tried_at


def _signing_keys(document: Any) -> dict[str, jwt.PyJWK]:
    """The JWKS document's signing keys by `kid`; a document that is no JWKS is an error."""
    keys = jwt.PyJWKSet.from_dict(document).keys
    return {key.key_id: key for key in keys if key.key_id and key.public_key_use in (None, "sig")}


def _short(error: BaseException) -> str:
    text = f"{type(error).__name__}: {error}"
    return text if len(text) <= 200 else text[:200] + "…"
