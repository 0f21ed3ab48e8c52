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
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import anyio.to_thread
import jwt
from mcp.server.auth.provider import AccessToken
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator

from aizk_integrations import Scope, ScopeDirectory

logger = logging.getLogger("aizk_integrations.mcp")

_REQUIRED_CLAIMS = ["exp", "iss", "aud", "sub"]


class JWTReaderVerifier(BaseModel):
    """Verifies bearer JWTs against the authorization server's JWKS and names their reader.

    A token is accepted only when its signature verifies with a key of the JWKS (the key chosen
    by the token's `kid`, its algorithm fixed by the key, never by the token), `iss` is
    `issuer`, `aud` names `audience` (this server's resource URL), and it is within `exp` and
    `nbf`. It is the SDK's `TokenVerifier`: `recall_server(..., auth=verifier)` puts it in
    front of every request, and answers a missing or refused token with 401.
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
    _keys: jwt.PyJWKClient = PrivateAttr()

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
        # The key set is fetched when first needed and cached; an unknown `kid` refetches it,
        # at most once per cooldown, so rotated keys are picked up.
        self._keys = jwt.PyJWKClient(self.jwks_url, cache_jwk_set=True, lifespan=300, timeout=10)

    async def verify_token(self, token: str) -> AccessToken | None:
        """The token's access, or `None` (the server answers 401) when it is not to be trusted.
        The JWKS is fetched over blocking HTTP, so verification runs off the event loop."""
        try:
            claims = await anyio.to_thread.run_sync(self._verified_claims, token)
            self.reader_of(claims)
        except (jwt.PyJWTError, ValueError, TypeError) as error:
            logger.info("aizk: refused a bearer token: %s", error)
            return None
        scope = claims.get("scope")
        return AccessToken(
            token=token,
            client_id=str(claims.get("client_id") or claims.get("azp") or claims["sub"]),
            scopes=scope.split() if isinstance(scope, str) else [],
            expires_at=claims["exp"],
            resource=self.audience,
            subject=claims["sub"],
            claims=claims,
        )

    def _verified_claims(self, token: str) -> dict[str, Any]:
        key = self._keys.get_signing_key_from_jwt(token)
        claims: dict[str, Any] = jwt.decode(
            token,
            key.key,
            algorithms=[key.algorithm_name],
            audience=self.audience,
            issuer=self.issuer,
            options={"require": _REQUIRED_CLAIMS},
        )
        return claims

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
