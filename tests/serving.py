"""An ASGI app on uvicorn, on a port of 127.0.0.1, in a thread: how the served tests and the
MCP bench reach an app over HTTP."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn
from starlette.types import ASGIApp


def free_port() -> int:
    """A port of 127.0.0.1 nothing listens on now, for an app whose URL must be known first."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextmanager
def serving(app: ASGIApp, port: int | None = None) -> Iterator[str]:
    """`app` on `port` (a free one by default) while inside: its base URL."""
    port = free_port() if port is None else port
    # Keep-alive outlasts the tests: a pooled connection idle past uvicorn's default 5 s (a load
    # test on a busy machine) is closed by the server just as the client reuses it, a ReadError.
    config = uvicorn.Config(
        app, host="127.0.0.1", port=port, log_level="error", timeout_keep_alive=120
    )
    running = uvicorn.Server(config)
    thread = threading.Thread(target=running.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not running.started:
        if time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        running.should_exit = True
        thread.join(timeout=10)
