"""Fixtures of the adapter tests: `adapter` runs every law through both frameworks."""

import asyncio
import warnings
from collections.abc import Iterator

import pytest

from tests.adapters.harness import adapter

__all__ = ["adapter"]


@pytest.fixture
def llama_index_event_loop() -> Iterator[None]:
    """Close the event loop LlamaIndex's sync chat path opens on the main thread.

    Counting a chat prompt's tokens, LlamaIndex runs a coroutine through
    `asyncio.get_event_loop()`, which creates and keeps a loop it never closes; the next
    `asyncio.run` orphans it and Python warns (an error here) when it is collected, in whatever
    test happens to be running then.
    """
    yield
    policy = asyncio.get_event_loop_policy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            loop = policy.get_event_loop()
        except RuntimeError:  # none left open: an `asyncio.run` already cleared it
            return
    loop.close()
    policy.set_event_loop(None)
