"""`JWTReaderVerifier`: who a request over streamable HTTP serves, from its bearer token only.

The server is an OAuth 2.1 resource server, as the MCP specification has it: the authorization
server signs access tokens, and this server checks each one against the keys it publishes
(JWKS) before anything is read. The reader is then made from the verified claims and nothing
else: `sub` is the reader's own scope, and the organizations claim names their organizations,
each known only if the app's own directory of organizations has it. No tool argument, header
or session can name a reader.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import anyio.to_thread
import jwt
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator

from aizk_integrations import Scope, ScopeDirectory
from aizk_integrations.mcp._keys import KeySet, KeysUnavailable
from aizk_integrations.mcp._sdk import AccessToken

logger = logging.getLogger("aizk_integrations.mcp")

_REQUIRED_CLAIMS = ["exp", "iss", "aud", "sub"]

_LATEST = 253402300799
"""The last second of the year 9999: a NumericDate past it (either way) is no date this server
can compare, so a token carrying one is refused rather than trusted for ever."""


class JWTReaderVerifier(BaseModel):
    """Verifies bearer JWTs against the authorization server's JWKS and names their reader.

    A token is accepted only when its signature verifies with a key of the JWKS (the key chosen
    by the token's `kid`, its algorithm fixed by the key, never by the token), `iss` is
    `issuer`, `aud` names `audience` (this server's resource URL), and it is within `exp` and
    `nbf` (NumericDates, fractions honoured). It is the SDK's `TokenVerifier`:
    `recall_server(..., auth=verifier)` puts it in front of every request, and answers a missing
    or refused token with 401, and every token with 503 while the JWKS cannot be fetched
    (`_keys`: cached, refetched for an unknown `kid` at most once per 30 s).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    issuer: str = Field(description="The authorization server's issuer: a token's `iss`.")
    audience: str = Field(
        description=(
            "This server's resource URL, e.g. https://mcp.example.org/mcp: a token's `aud` must "
            "name it, and the server is served at its path."
        )
    )
    jwks_url: str = Field(description="Where the authorization server publishes its keys.")
    organizations: Mapping[str, Scope] = Field(
        default_factory=dict,
        description=(
            "The app's directory of organizations: scope id -> Scope. A token's organizations "
            "not in it are ignored."
        ),
    )
    organizations_claim: str = Field(
        default="organizations",
        min_length=1,
        description="The claim listing the reader's organization ids (Logto's `organizations`).",
    )
    _keys: KeySet = PrivateAttr()

    @field_validator("issuer", "audience", "jwks_url")
    @classmethod
    def _http_url(cls, url: str) -> str:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"expected an http(s) URL, got {url!r}")
        return url

    @field_validator("organizations")
    @classmethod
    def _own_copy(cls, organizations: Mapping[str, Scope]) -> Mapping[str, Scope]:
        """A copy of its own: nothing done to the app's mapping later changes who reads what."""
        return dict(organizations)

    def model_post_init(self, context: Any) -> None:
        self._keys = KeySet(self.jwks_url)

    async def verify_token(self, token: str) -> AccessToken | None:
        """The token's access, or `None` (the server answers 401) when it is not to be trusted.
        The JWKS is fetched over blocking HTTP, so verification runs off the event loop. Every
        failure, down to building the SDK's `AccessToken`, is a refusal: no token is a 500."""
        try:
            claims = await anyio.to_thread.run_sync(self._verified_claims, token)
            self.reader_of(claims)
            return AccessToken(
                token=token,
                client_id=str(claims.get("client_id") or claims.get("azp") or claims["sub"]),
                scopes=_scopes(claims.get("scope")),
                expires_at=math.floor(claims["exp"]),
                resource=self.audience,
                subject=claims["sub"],
                claims=claims,
            )
        except KeysUnavailable:
            return None  # logged once per outage by the key set; HTTP answers 503 before this
        except (jwt.PyJWTError, ValueError, TypeError) as error:
            logger.info("aizk: refused a bearer token: %s", error)
            return None

    def _verified_claims(self, token: str) -> dict[str, Any]:
        """The claims of a token whose signature, `iss`, `aud` and dates all check out."""
        key = self._keys.key_for(jwt.get_unverified_header(token).get("kid"))
        claims: dict[str, Any] = jwt.decode(
            token,
            key.key,
            algorithms=[key.algorithm_name],
            audience=self.audience,
            issuer=self.issuer,
            # The dates are checked below, as RFC 7519 reads them: PyJWT reads them as integers.
            options={
                "require": _REQUIRED_CLAIMS,
                "verify_exp": False,
                "verify_nbf": False,
                "verify_iat": False,
            },
        )
        _check_dates(claims, time.time())
        return claims

    def _keys_ready(self) -> None:
        """Fetch the keys if due: `KeysUnavailable` while the authorization server's JWKS
        cannot be fetched (the HTTP guard answers 503 then)."""
        self._keys.ready()

    def reader_of(self, claims: Mapping[str, Any]) -> ScopeDirectory:
        """The reader verified claims name: `sub` as their own scope, plus each organization of
        the organizations claim that the app's directory has."""
        subject = claims.get("sub")
        if not isinstance(subject, str) or not subject:
            raise ValueError("the token's sub is not a non-empty string")
        named = claims.get(self.organizations_claim, [])
        if not isinstance(named, list) or not all(isinstance(each, str) for each in named):
            raise ValueError(f"the token's {self.organizations_claim} claim is not a list of ids")
        known = {each: self.organizations[each] for each in named if each in self.organizations}
        return ScopeDirectory.for_caller(subject, known)


def _numeric_date(claims: Mapping[str, Any], name: str) -> float | None:
    """The claim as RFC 7519 §2 has a NumericDate (seconds, fractions allowed), if present."""
    value = claims.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise jwt.InvalidTokenError(f"the token's {name} is not a NumericDate")
    if abs(value) > _LATEST:
        raise jwt.InvalidTokenError(f"the token's {name} is past the year 9999")
    return float(value)


def _check_dates(claims: Mapping[str, Any], now: float) -> None:
    """Within `nbf` (inclusive) and `exp` (exclusive), with no leeway; `iat` a NumericDate."""
    expires = _numeric_date(claims, "exp")
    if expires is None or now >= expires:
        raise jwt.ExpiredSignatureError("the token has expired")
    not_before = _numeric_date(claims, "nbf")
    if not_before is not None and now < not_before:
        raise jwt.ImmatureSignatureError("the token is not yet valid (nbf)")
    _numeric_date(claims, "iat")


def _scopes(scope: object) -> list[str]:
    return scope.split() if isinstance(scope, str) else []
