"""FOR LOCAL TRIALS ONLY: a throwaway authorization server on 127.0.0.1, so the MCP server can be
tried over HTTP with bearer tokens before an identity provider is set up.

It makes a new signing key in memory (never written anywhere), serves its public half as a JWKS
on 127.0.0.1, and prints a token for each reader named, with the organizations the bundled
corpus (corpus.json) lists them in. Anyone on this machine can fetch the keys and anything
holding a printed token is that reader: never point a server that holds real data at it.

    python examples/mcp_dev_tokens.py --reader sam --reader ana

prints the issuer, the JWKS URL, the command that serves examples/mcp_server.py against them,
and the tokens; `--serve-example` runs that server too (at --mcp-port), and `--json` prints it
all as one line of JSON, for a script.
"""

from __future__ import annotations

import argparse
import json
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import jwt
from corpus import CORPUS_PATH
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

BANNER = (
    "*** FOR LOCAL TRIALS ONLY: a throwaway signing key on 127.0.0.1 that anyone on this "
    "machine can use. Never point a server that holds real data at it. ***"
)
KID = "local-trial"


def memberships(reader: str) -> list[str]:
    """The organization ids corpus.json lists `reader` as a member of: what the app's own
    directory would give a real identity provider to put in the token."""
    organizations = json.loads(CORPUS_PATH.read_text(encoding="utf-8"))["organizations"]
    return sorted(org_id for org_id, org in organizations.items() if reader in org["members"])


def token(key: rsa.RSAPrivateKey, issuer: str, audience: str, reader: str, minutes: int) -> str:
    now = int(time.time())
    claims = {
        "iss": issuer,
        "aud": audience,
        "sub": reader,
        "organizations": memberships(reader),
        "iat": now,
        "exp": now + 60 * minutes,
    }
    return jwt.encode(claims, key, algorithm="RS256", headers={"kid": KID})


@contextmanager
def keys_served(key: rsa.RSAPrivateKey, port: int) -> Iterator[str]:
    """The key's JWKS at http://127.0.0.1:PORT/jwks while inside; the issuer is that origin."""
    public = json.loads(RSAAlgorithm.to_jwk(key.public_key()))
    body = json.dumps({"keys": [{**public, "kid": KID, "use": "sig", "alg": "RS256"}]}).encode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200 if self.path == "/jwks" else 404)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def example_command(issuer: str, audience: str, port: int) -> list[str]:
    """How examples/mcp_server.py serves HTTP against these keys."""
    server = str(Path(__file__).with_name("mcp_server.py"))
    keys = ["--issuer", issuer, "--jwks-url", f"{issuer}/jwks"]
    return [sys.executable, server, "--http", "--port", str(port), "--audience", audience, *keys]


def wait_until_serving(audience: str, process: subprocess.Popen[bytes]) -> None:
    metadata = audience.replace("/mcp", "/.well-known/oauth-protected-resource/mcp")
    for _ in range(1200):
        if process.poll() is not None:
            sys.exit("examples/mcp_server.py exited")
        try:
            with urllib.request.urlopen(metadata, timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    sys.exit("examples/mcp_server.py did not start")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reader", action="append", help="a reader to sign a token for")
    parser.add_argument("--port", type=int, default=8801, help="the keys' port (0: any free)")
    parser.add_argument("--mcp-port", type=int, default=8765, help="the MCP server's (0: any)")
    parser.add_argument("--minutes", type=int, default=60, help="how long the tokens last")
    parser.add_argument("--serve-example", action="store_true", help="run mcp_server.py too")
    parser.add_argument("--json", action="store_true", help="print one line of JSON")
    arguments = parser.parse_args()
    mcp_port = arguments.mcp_port or free_port()
    audience = f"http://127.0.0.1:{mcp_port}/mcp"
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # stop as Ctrl-C does
    print(BANNER, file=sys.stderr, flush=True)
    with keys_served(key, arguments.port) as issuer:
        command = example_command(issuer, audience, mcp_port)
        # The server logs to stderr, so stdout carries only what is printed here.
        served = subprocess.Popen(command, stdout=sys.stderr) if arguments.serve_example else None
        try:
            if served is not None:
                wait_until_serving(audience, served)
            readers = arguments.reader or ["sam"]
            tokens = {
                each: token(key, issuer, audience, each, arguments.minutes) for each in readers
            }
            trial = {"issuer": issuer, "jwks_url": f"{issuer}/jwks", "url": audience}
            if arguments.json:
                print(json.dumps({**trial, "tokens": tokens}), flush=True)
            else:
                print(_shown(trial, tokens, command, served is not None), flush=True)
            threading.Event().wait()  # serve the keys until stopped
        finally:
            if served is not None:
                served.terminate()
                served.wait(timeout=30)


def _shown(trial: dict[str, str], tokens: dict[str, str], command: list[str], run: bool) -> str:
    lines = [f"{name}: {value}" for name, value in trial.items()]
    if not run:
        shown = " ".join(["python", "examples/mcp_server.py", *command[2:]])
        lines += ["", "Serve the example against these keys (another terminal):", f"  {shown}"]
    for reader, signed in tokens.items():
        lines += ["", f"token for {reader} (organizations: {', '.join(memberships(reader))}):"]
        lines.append(signed)
    return "\n".join([*lines, "", "Serving the keys until Ctrl-C."])


if __name__ == "__main__":
    main()
