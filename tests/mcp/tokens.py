"""An authorization server of our own on 127.0.0.1: an RSA key, its JWKS, and tokens it signs."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

ISSUER = "http://127.0.0.1:1/oidc"  # only ever compared, never fetched


@dataclass(frozen=True)
class KeyPair:
    kid: str
    private: rsa.RSAPrivateKey

    @classmethod
    def new(cls, kid: str) -> KeyPair:
        return cls(kid, rsa.generate_private_key(public_exponent=65537, key_size=2048))

    def jwk(self) -> dict[str, Any]:
        public: dict[str, Any] = json.loads(RSAAlgorithm.to_jwk(self.private.public_key()))
        return {**public, "kid": self.kid, "use": "sig", "alg": "RS256"}


def claims(audience: str, sub: str, **more: Any) -> dict[str, Any]:
    now = int(time.time())
    return {"iss": ISSUER, "aud": audience, "sub": sub, "iat": now, "exp": now + 600, **more}


def signed(key: KeyPair, payload: dict[str, Any], **headers: Any) -> str:
    return jwt.encode(payload, key.private, algorithm="RS256", headers={"kid": key.kid, **headers})


class Jwks:
    """An authorization server's JWKS endpoint on 127.0.0.1 that a test can take down (it then
    answers 503), bring back, and give new keys; it counts the fetches it answers."""

    def __init__(self, *keys: KeyPair) -> None:
        self.keys = list(keys)
        self.up = True
        self.fetches = 0
        self.url = ""


@contextmanager
def jwks_controlled(*keys: KeyPair) -> Iterator[Jwks]:
    """A `Jwks` of `keys`, served from a thread while inside."""
    jwks = Jwks(*keys)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if not jwks.up:
                self.send_error(503)
                return
            jwks.fetches += 1
            body = json.dumps({"keys": [key.jwk() for key in jwks.keys]}).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    jwks.url = f"http://127.0.0.1:{server.server_address[1]}/oidc/jwks"
    try:
        yield jwks
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def jwks_served(*keys: KeyPair) -> Iterator[str]:
    """The keys' JWKS at a URL of 127.0.0.1, served from a thread while inside."""
    with jwks_controlled(*keys) as jwks:
        yield jwks.url


KEY = KeyPair.new("key-1")
"""The authorization server's signing key, in its JWKS."""

STRANGER = KeyPair.new("key-2")
"""A key the JWKS does not hold."""
