"""An ASGI app on uvicorn, on a port of 127.0.0.1, in a thread: how the served tests and the
MCP bench reach an app over HTTP.

The port is bound before the app is built and handed to uvicorn as a socket, so no other
process (a test running beside this one) can take it between choosing it and serving on it.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn
from starlette.types import ASGIApp

PATIENCE = 120
"""Seconds each of uvicorn's connection timeouts (5 s by default) is raised to in the tests: on a
machine the suite keeps busy, a pooled connection idle past keep-alive is closed just as the
client reuses it, and a worker that answers its supervisor's health check late is killed with
its requests in flight."""


def free_port() -> int:
    """A port nothing listens on now, for a server another process binds (uvicorn's workers)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextmanager
def listening() -> Iterator[socket.socket]:
    """A socket bound to a port of 127.0.0.1 while inside: its port is this process's alone."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    try:
        yield sock
    finally:
        sock.close()


def port_of(sock: socket.socket) -> int:
    port: int = sock.getsockname()[1]
    return port


@contextmanager
def serving(
    app: ASGIApp, sock: socket.socket | None = None, *, log_level: str = "error"
) -> Iterator[str]:
    """`app` served on `sock` (a socket of its own by default) while inside: its base URL.
    `log_level="info"` turns uvicorn's access log on."""
    with listening() if sock is None else _kept(sock) as bound:
        config = uvicorn.Config(app, log_level=log_level, timeout_keep_alive=PATIENCE)
        running = uvicorn.Server(config)
        thread = threading.Thread(target=running.run, kwargs={"sockets": [bound]}, daemon=True)
        thread.start()
        deadline = time.monotonic() + 20
        while not running.started:
            if time.monotonic() > deadline or not thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.02)
        try:
            yield f"http://127.0.0.1:{port_of(bound)}"
        finally:
            running.should_exit = True
            thread.join(timeout=10)


@contextmanager
def _kept(sock: socket.socket) -> Iterator[socket.socket]:
    yield sock
