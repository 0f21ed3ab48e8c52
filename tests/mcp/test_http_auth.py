"""Over streamable HTTP the server is an OAuth 2.1 resource server: every request's reader comes
from its verified bearer JWT, and a request without one the verifier accepts gets 401 naming the
protected resource metadata, before anything is read."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import logging
import time
from collections.abc import Callable
from typing import Any

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from pydantic import ValidationError

from aizk_integrations.langchain import AizkEvidenceCompressor
from aizk_integrations.langchain import AizkScopedRetriever as LangChainScopedRetriever
from aizk_integrations.mcp import JWTReaderVerifier, recall_server
from aizk_integrations.mcp._readers import NOT_OVER_HTTP, ONLY_OVER_HTTP
from tests.mcp.corpus import (
    ANA_MARKER,
    SAM_MARKER,
    SAM_REVISION,
    CountingStore,
    langchain_store,
    reader,
    uri,
)
from tests.mcp.http import ACCEPT, INITIALIZE, Served, session_at
from tests.mcp.sdk import McpError, connected, wire
from tests.mcp.tokens import ISSUER, KEY, STRANGER, claims, signed
from tests.serving import serving


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _hs256_with_the_public_key(payload: dict[str, Any]) -> str:
    """The classic confusion: HMAC keyed with the RSA public key the JWKS publishes."""
    public = KEY.private.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    header = _b64(json.dumps({"alg": "HS256", "typ": "JWT", "kid": KEY.kid}).encode())
    body = _b64(json.dumps(payload).encode())
    signature = hmac.new(public, f"{header}.{body}".encode(), hashlib.sha256).digest()
    return f"{header}.{body}.{_b64(signature)}"


def _tampered(token: str) -> str:
    header, body, signature = token.split(".")
    payload = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    return f"{header}.{_b64(json.dumps({**payload, 'sub': 'ana'}).encode())}.{signature}"


BAD_TOKENS: dict[str, Callable[[str], str | None]] = {
    "no token": lambda audience: None,
    "not a JWT": lambda audience: "not-a-jwt",
    "expired": lambda audience: signed(KEY, claims(audience, "sam", exp=int(time.time()) - 5)),
    "not yet valid": lambda audience: signed(
        KEY, claims(audience, "sam", nbf=int(time.time()) + 600)
    ),
    "another audience": lambda audience: signed(KEY, claims("http://127.0.0.1:1/mcp", "sam")),
    "another issuer": lambda audience: signed(
        KEY, claims(audience, "sam", iss="http://127.0.0.1:2/oidc")
    ),
    "alg none": lambda audience: jwt.encode(
        claims(audience, "sam"), "", algorithm="none", headers={"kid": KEY.kid}
    ),
    "HS256 keyed with the RSA public key": lambda audience: _hs256_with_the_public_key(
        claims(audience, "sam")
    ),
    "an unknown key id": lambda audience: signed(STRANGER, claims(audience, "sam")),
    "a known key id, another key": lambda audience: jwt.encode(
        claims(audience, "sam"), STRANGER.private, algorithm="RS256", headers={"kid": KEY.kid}
    ),
    "tampered claims": lambda audience: _tampered(signed(KEY, claims(audience, "sam"))),
    "no sub": lambda audience: signed(
        KEY, {k: v for k, v in claims(audience, "sam").items() if k != "sub"}
    ),
    "no exp": lambda audience: signed(
        KEY, {k: v for k, v in claims(audience, "sam").items() if k != "exp"}
    ),
    "organizations not a list": lambda audience: signed(
        KEY, claims(audience, "sam", organizations="org-club")
    ),
}


@pytest.mark.parametrize("case", BAD_TOKENS)
def test_a_request_without_a_token_the_verifier_accepts_gets_401_and_nothing_is_read(
    served: Served, case: str, caplog: pytest.LogCaptureFixture
) -> None:
    token = BAD_TOKENS[case](served.audience)
    headers = {**ACCEPT, **({} if token is None else {"authorization": f"Bearer {token}"})}
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "recall", "arguments": {"query": "notes"}},
    }
    searches = CountingStore.searches
    with caplog.at_level(logging.INFO, "aizk_integrations.mcp"), httpx.Client(timeout=30) as client:
        answers = [
            client.post(served.url, json=body, headers=headers) for body in (INITIALIZE, call)
        ]
    for answer in answers:
        assert answer.status_code == 401
        metadata = f"{served.url.removesuffix('/mcp')}/.well-known/oauth-protected-resource/mcp"
        assert f'resource_metadata="{metadata}"' in answer.headers["www-authenticate"]
        assert SAM_MARKER not in answer.text
    assert CountingStore.searches == searches
    if token is not None and "." in token:  # refused by the verifier: said why, never the token
        refusals = [r.getMessage() for r in caplog.records if r.name == "aizk_integrations.mcp"]
        assert refusals
        assert all(token not in refusal for refusal in refusals)


def test_the_protected_resource_metadata_names_this_resource_and_its_authorization_server(
    served: Served,
) -> None:
    base = served.url.removesuffix("/mcp")
    document = httpx.get(f"{base}/.well-known/oauth-protected-resource/mcp").json()
    assert document["resource"] == served.audience
    assert document["authorization_servers"] == [ISSUER]


def _recall(url: str, token: str, query: str) -> str:
    async def scenario() -> str:
        async with session_at(url, token) as session:
            result = wire(await session.call_tool("recall", {"query": query, "budget": 4096}))
            assert not result.get("isError"), result
            return "".join(item["text"] for item in result["content"])

    return asyncio.run(scenario())


def test_each_request_is_answered_for_the_reader_its_token_names(served: Served) -> None:
    sam = _recall(served.url, served.token("sam", organizations=["org-club"]), "notes")
    ana = _recall(served.url, served.token("ana", organizations=["org-club"]), "notes")
    assert SAM_MARKER in sam
    assert ANA_MARKER not in sam
    assert ANA_MARKER in ana
    assert SAM_MARKER not in ana
    assert "book-club" in sam
    assert "book-club" in ana


def test_organizations_the_apps_directory_does_not_have_are_ignored(served: Served) -> None:
    named = served.verifier.reader_of(
        claims(served.audience, "ana", organizations=["org-club", "org-elsewhere"])
    )
    assert set(named.scopes) == set(reader("ana").scopes)
    assert "org-elsewhere" not in named.scopes


def test_the_organizations_claim_is_configurable(served: Served) -> None:
    verifier = served.verifier.model_copy(update={"organizations_claim": "orgs"})
    named = verifier.reader_of(claims(served.audience, "ana", orgs=["org-club"]))
    assert "org-club" in named.scopes


def test_a_revision_over_http_is_read_only_by_a_reader_of_every_item(served: Served) -> None:
    async def scenario(user: str) -> str:
        async with session_at(served.url, served.token(user)) as session:
            try:
                [content] = (await session.read_resource(uri(SAM_REVISION))).contents
            except Exception as error:  # the SDK's McpError
                return str(error)
            return getattr(content, "text", "")

    assert SAM_MARKER in asyncio.run(scenario("sam"))
    assert asyncio.run(scenario("ana")).endswith(f"Resource not found: {uri(SAM_REVISION)}")


def test_a_server_built_for_one_local_reader_answers_no_one_over_http() -> None:
    retriever = LangChainScopedRetriever(vectorstore=langchain_store())
    server = recall_server(retriever, AizkEvidenceCompressor(), reader=reader("sam"))

    async def scenario(url: str) -> tuple[dict[str, Any], str]:
        async with session_at(f"{url}/mcp", None) as session:
            called = wire(await session.call_tool("recall", {"query": "notes"}))
            try:
                await session.read_resource(uri(SAM_REVISION))
            except McpError as error:
                return called, error.error.message
            raise AssertionError("the revision was read over HTTP")

    with serving(server.streamable_http_app()) as url:
        result, refused = asyncio.run(scenario(url))
    assert result["isError"]
    [said] = [item["text"] for item in result["content"]]
    assert said.endswith(NOT_OVER_HTTP)
    assert refused == NOT_OVER_HTTP
    assert SAM_MARKER not in str(result)


def test_a_server_built_for_http_answers_no_one_reached_another_way_and_says_why(
    served: Served,
) -> None:
    retriever = LangChainScopedRetriever(vectorstore=langchain_store())
    server = recall_server(retriever, AizkEvidenceCompressor(), auth=served.verifier)

    async def scenario() -> tuple[dict[str, Any], str]:
        async with connected(server) as session:
            called = wire(await session.call_tool("recall", {"query": "notes"}))
            try:
                await session.read_resource(uri(SAM_REVISION))
            except McpError as error:
                return called, error.error.message
            raise AssertionError("the revision was read without a token")

    result, refused = asyncio.run(scenario())
    assert result["isError"]
    [said] = [item["text"] for item in result["content"]]
    assert said.endswith(ONLY_OVER_HTTP)
    assert refused == ONLY_OVER_HTTP
    assert SAM_MARKER not in str(result)


def test_the_verifier_is_frozen_and_refuses_a_misspelt_setting_by_name(served: Served) -> None:
    with pytest.raises(ValidationError, match="frozen"):
        served.verifier.issuer = "http://127.0.0.1:9/oidc"
    assert served.verifier.issuer == ISSUER
    with pytest.raises(ValidationError, match="organisations"):
        JWTReaderVerifier(
            issuer=ISSUER,
            audience=served.audience,
            jwks_url="http://127.0.0.1:1/jwks",
            organisations={},  # type: ignore[call-arg]
        )


def test_a_server_is_given_a_verifier_it_knows_as_auth(served: Served) -> None:
    retriever = LangChainScopedRetriever(vectorstore=langchain_store())
    verifier_settings = served.verifier.model_dump()
    with pytest.raises(TypeError, match="auth must be a JWTReaderVerifier, not dict"):
        recall_server(retriever, AizkEvidenceCompressor(), auth=verifier_settings)  # type: ignore[arg-type]


@pytest.mark.parametrize("sub", [123, "", None, ["sam"], True])
def test_a_sub_that_is_no_non_empty_string_names_no_reader(served: Served, sub: object) -> None:
    with pytest.raises(ValueError, match="sub is not a non-empty string"):
        served.verifier.reader_of({"sub": sub})
    named = served.verifier.reader_of({"sub": "sam"})
    assert "sam" in named.scopes


def test_concurrent_requests_of_two_readers_are_each_answered_for_their_own(
    served: Served,
) -> None:
    """The reader is the request's own, never state another request left behind."""
    tokens = {"sam": served.token("sam"), "ana": served.token("ana")}
    markers = {"sam": SAM_MARKER, "ana": ANA_MARKER}

    async def recall(http: httpx.AsyncClient, gate: asyncio.Semaphore, n: int) -> bool:
        user = ("sam", "ana")[n % 2]
        body = {
            "jsonrpc": "2.0",
            "id": n,
            "method": "tools/call",
            "params": {"name": "recall", "arguments": {"query": f"note {n}", "budget": 256}},
        }
        async with gate:
            answer = await http.post(
                served.url, json=body, headers={**ACCEPT, "authorization": f"Bearer {tokens[user]}"}
            )
        text = str(answer.json()["result"]["content"])
        other = markers["ana" if user == "sam" else "sam"]
        return markers[user] in text and other not in text

    async def scenario() -> list[bool]:
        gate = asyncio.Semaphore(20)
        async with httpx.AsyncClient(timeout=60) as http:
            return await asyncio.gather(*(recall(http, gate, n) for n in range(200)))

    assert all(asyncio.run(scenario()))
