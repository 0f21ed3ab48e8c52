"""Every token and every request shape answered right, over real HTTP on 127.0.0.1: dates read
as RFC 7519 NumericDates, a token that fails any check a 401 `invalid_token` (never a 500), a
body nested too deep a 400, a token in the URL refused and kept out of the access log, the
issuer named exactly, and an authorization server whose keys cannot be fetched told apart from
a bad token (503, `Retry-After`, one warning, recovered from)."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import jwt
import pytest

from aizk_integrations.mcp._auth import _check_dates
from tests.mcp.corpus import SAM_MARKER
from tests.mcp.http import Served, posted, served_over_http
from tests.mcp.tokens import ISSUER, KEY, STRANGER, claims, jwks_controlled, signed

RECALL = {
    "jsonrpc": "2.0",
    "id": 2,
    "method": "tools/call",
    "params": {"name": "recall", "arguments": {"query": "notes", "budget": 256}},
}


@pytest.mark.parametrize(
    ("dates", "status"),
    [
        ({"exp": 900.5}, 200),
        ({"exp": -0.5}, 401),
        ({"nbf": -0.5}, 200),
        ({"nbf": 900.5}, 401),
        ({"iat": -0.25}, 200),
    ],
)
def test_fractional_dates_are_honoured_as_numeric_dates(
    served: Served, dates: dict[str, float], status: int
) -> None:
    now = time.time()
    token = served.token("sam", **{name: now + offset for name, offset in dates.items()})
    answer = posted(served.url, token, RECALL)
    assert answer.status_code == status, answer.text
    if status == 200:
        assert SAM_MARKER in answer.text


@pytest.mark.parametrize(
    ("claim", "value"),
    [
        ("exp", 1e20),
        ("exp", 2**70),
        ("exp", -1e20),
        ("exp", "soon"),
        ("exp", True),
        ("exp", None),
        ("exp", float("nan")),
        ("exp", float("inf")),
        ("nbf", "later"),
        ("nbf", 1e20),
        ("iat", "now"),
    ],
)
def test_a_date_no_server_can_compare_is_a_401_invalid_token_never_a_500(
    served: Served, claim: str, value: object, caplog: pytest.LogCaptureFixture
) -> None:
    token = served.token("sam", **{claim: value})
    with caplog.at_level(logging.INFO, "aizk_integrations.mcp"):
        answer = posted(served.url, token, RECALL)
    assert answer.status_code == 401
    assert 'error="invalid_token"' in answer.headers["www-authenticate"]
    assert any(r.name == "aizk_integrations.mcp" for r in caplog.records)  # said why
    assert SAM_MARKER not in answer.text


def test_dates_are_compared_to_the_fraction_of_a_second() -> None:
    _check_dates({"exp": 100.5}, now=100.4)
    _check_dates({"exp": 200, "nbf": 100.5}, now=100.5)
    with pytest.raises(jwt.ExpiredSignatureError):
        _check_dates({"exp": 100.5}, now=100.5)
    with pytest.raises(jwt.ImmatureSignatureError):
        _check_dates({"exp": 200, "nbf": 100.5}, now=100.4)


def test_a_body_nested_too_deep_is_a_400_parse_error_and_the_server_keeps_serving(
    served: Served,
) -> None:
    token = served.token("sam")
    deep = b'{"jsonrpc": "2.0", "id": 3, "method": "ping", "params": {"x": '
    deep += b"[" * 20_000 + b"]" * 20_000 + b"}}"
    answer = posted(served.url, token, deep)
    assert answer.status_code == 400
    assert answer.json()["error"]["code"] == -32700
    for body in (b"{not json", b"[" * 10 + b"]" * 9):
        assert 400 <= posted(served.url, token, body).status_code < 500
    brackets_in_a_string = {
        **RECALL,
        "params": {"name": "recall", "arguments": {"query": "[" * 500}},
    }
    assert posted(served.url, token, brackets_in_a_string).status_code == 200
    assert SAM_MARKER in posted(served.url, token, RECALL).text


def test_a_body_over_four_megabytes_is_refused_before_it_is_read_whole(served: Served) -> None:
    token = served.token("sam")
    padding = " " * (4 * 1024 * 1024)
    answer = posted(
        served.url, token, b'{"jsonrpc": "2.0", "id": 4, "method": "ping"}' + padding.encode()
    )
    assert answer.status_code == 413
    assert answer.json()["error"]["code"] == -32600
    assert (
        posted(served.url, token, {"jsonrpc": "2.0", "id": 5, "method": "ping"}).status_code == 200
    )


class Kept(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@contextmanager
def access_log() -> Iterator[list[str]]:
    """The lines uvicorn's access log writes while inside."""
    kept = Kept()
    logger = logging.getLogger("uvicorn.access")
    logger.addHandler(kept)
    try:
        yield kept.lines
    finally:
        logger.removeHandler(kept)


def test_a_token_in_the_url_is_refused_and_never_reaches_the_access_log() -> None:
    with jwks_controlled(KEY) as jwks, served_over_http(jwks.url, log_level="info") as served:
        token = served.token("sam")
        with access_log() as lines:
            answer = posted(f"{served.url}?keep=1&access_token={token}", None, RECALL)
            posted(f"{served.url}?access_token={token}", token, RECALL)
    assert answer.status_code == 401
    assert 'error="invalid_request"' in answer.headers["www-authenticate"]
    assert SAM_MARKER not in answer.text
    assert any("POST /mcp?keep=1 " in line for line in lines)  # the line was written
    assert len(lines) == 2
    assert not [line for line in lines if token in line or token[:40] in line]


@pytest.mark.parametrize(
    "issuer", ["http://127.0.0.1:8801", "http://127.0.0.1:8801/", "https://auth.example.org/oidc"]
)
def test_the_metadata_names_the_issuer_exactly_as_tokens_carry_it(issuer: str) -> None:
    with jwks_controlled(KEY) as jwks, served_over_http(jwks.url, issuer) as served:
        metadata = served.url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp")
        document = httpx.get(metadata, timeout=60).json()
        accepted = posted(served.url, served.token("sam", iss=issuer), RECALL)
    assert document["authorization_servers"] == [issuer]
    assert document["resource"] == served.audience
    assert accepted.status_code == 200


def test_while_the_keys_cannot_be_fetched_tokens_get_503_and_one_warning_until_they_can(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with jwks_controlled(KEY) as jwks, served_over_http(jwks.url) as served:
        jwks.up = False
        token = served.token("sam")
        with caplog.at_level(logging.INFO, "aizk_integrations.mcp"):
            outage = [posted(served.url, token, RECALL) for _ in range(4)]
            tokenless = posted(served.url, None, RECALL)
            jwks.up = True
            recovered = _first_success(served.url, token)
    for answer in outage:
        assert answer.status_code == 503
        assert answer.headers["retry-after"] == "2"
        assert "keys cannot be fetched" in answer.json()["error_description"]
    assert tokenless.status_code == 401  # no token to check: still the challenge
    assert SAM_MARKER in recovered.text
    warned = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warned) == 2  # once when the outage began, once when it ended
    assert jwks.url in warned[0]
    assert not [line for line in warned if token[:40] in line]


def _first_success(url: str, token: str) -> httpx.Response:
    """The first 200 once the keys answer again: retried every 2 s, so a few tries."""
    for _ in range(300):
        answer = posted(url, token, RECALL)
        if answer.status_code != 503:
            assert answer.status_code == 200, answer.text
            return answer
        time.sleep(0.1)
    raise AssertionError("the server never recovered from the outage")


def test_tokens_of_unknown_key_ids_do_not_make_the_server_refetch_the_keys_each_time() -> None:
    with jwks_controlled(KEY) as jwks, served_over_http(jwks.url) as served:
        assert posted(served.url, served.token("sam"), RECALL).status_code == 200
        unknown = [
            posted(served.url, signed(STRANGER, claims(served.audience, "sam")), RECALL)
            for _ in range(10)
        ]
        assert posted(served.url, served.token("sam"), RECALL).status_code == 200
        assert jwks.fetches == 1  # within the cooldown of the first fetch
    assert {answer.status_code for answer in unknown} == {401}


def test_an_issuer_other_than_the_servers_is_refused(served: Served) -> None:
    assert served.verifier.issuer == ISSUER
    other = served.token("sam", iss=ISSUER + "/")
    assert posted(served.url, other, RECALL).status_code == 401
