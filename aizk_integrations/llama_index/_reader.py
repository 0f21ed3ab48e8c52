"""The reader of a LlamaIndex request, which LlamaIndex gives no per-call config to carry."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Final

from aizk_integrations._scopes import ScopeDirectory

_call_reader: ContextVar[ScopeDirectory | None] = ContextVar("aizk_call_reader", default=None)

PER_REQUEST: Final = (
    "run the request inside `with reading_as(directory):` (a plain thread does not inherit it: "
    "submit `contextvars.copy_context().run` with the call to carry it)"
)
"""How the warnings tell a LlamaIndex user to name a request's reader."""


@contextmanager
def reading_as(directory: ScopeDirectory) -> Iterator[None]:
    """Pack every query made inside this block for `directory`'s reader.

    LlamaIndex passes a postprocessor no per-call config, so one shared query engine learns the
    reader of a request from the context instead. A context variable is private to its thread
    and to each asyncio task (a task copies the context it was created in), so concurrent
    requests for different readers never see each other's evidence. Like LangChain's per-call
    directory, it switches readers but cannot switch authorization off.
    """
    if not isinstance(directory, ScopeDirectory):
        raise TypeError(
            "reading_as needs a ScopeDirectory (a request may switch readers but not switch "
            f"authorization off), not {type(directory).__name__}"
        )
    token = _call_reader.set(directory)
    try:
        yield
    finally:
        _call_reader.reset(token)


def current_reader() -> ScopeDirectory | None:
    """The reader `reading_as` names for the code running now, if any."""
    return _call_reader.get()
