"""The reader of a LlamaIndex request, which LlamaIndex gives no per-call config to carry."""

from __future__ import annotations

import contextlib
import inspect
import sys
from contextvars import ContextVar, Token
from types import FrameType
from typing import Final

from aizk_integrations._scopes import ScopeDirectory

_call_reader: ContextVar[ScopeDirectory | None] = ContextVar("aizk_call_reader", default=None)

PER_REQUEST: Final = (
    "run the request inside `with reading_as(directory):` (a plain thread does not inherit it: "
    "submit `contextvars.copy_context().run` with the call to carry it)"
)
"""How the warnings tell a LlamaIndex user to name a request's reader."""


class reading_as:  # noqa: N801  # a context manager, named as one is used: `with reading_as(...)`
    """Pack every query made inside this block for `directory`'s reader.

    LlamaIndex passes a postprocessor no per-call config, so one shared query engine can learn
    the reader of a request from the context instead. A context variable is private to its
    thread and to each asyncio task (a task copies the context it was created in), so
    concurrent requests for different readers never see each other's evidence. Like LangChain's
    per-call directory, it switches readers but cannot switch authorization off.

    Prefer the explicit handle where you can (`AizkEvidencePostprocessor.for_reader`,
    `AizkScopedRetriever.for_reader`): it does not depend on where code happens to run. A
    context variable set inside a generator is set in whoever pulls the generator, so two
    interleaved streams would swap readers and a thread pool pulling it would keep the reader
    for its next request; `reading_as` therefore refuses to be entered inside a generator, and
    says what to use instead.
    """

    def __init__(self, directory: ScopeDirectory) -> None:
        if not isinstance(directory, ScopeDirectory):
            raise TypeError(
                "reading_as needs a ScopeDirectory (a request may switch readers but not switch "
                f"authorization off), not {type(directory).__name__}"
            )
        self._directory = directory
        self._token: Token[ScopeDirectory | None] | None = None

    # Not mutated: mutmut's trampoline would be one more frame between `with` and
    # `sys._getframe(1)`, so even the unmutated copy would miss a generator.
    def __enter__(self) -> None:  # pragma: no mutate block
        if _in_a_stream(sys._getframe(1)):  # the frame of the `with` statement
            raise RuntimeError(
                "reading_as cannot be used inside a generator or an async generator (a "
                "streaming body, a dependency with yield): the reader would be set in whoever "
                "pulls it, and left there. Bind the reader to the objects the generator uses "
                "instead: AizkEvidencePostprocessor.for_reader(directory) or "
                "AizkScopedRetriever.for_reader(directory)"
            )
        self._token = _call_reader.set(self._directory)

    def __exit__(self, *exc_info: object) -> None:
        assert self._token is not None
        token, self._token = self._token, None
        try:
            _call_reader.reset(token)
        except ValueError:
            raise RuntimeError(
                "reading_as was left in another context than it was entered in (a FastAPI "
                "`def` dependency with `yield` runs each half on a thread pool), so it cannot "
                "take its reader back. Bind the reader to the objects the request uses instead: "
                "AizkEvidencePostprocessor.for_reader(directory) or "
                "AizkScopedRetriever.for_reader(directory)"
            ) from None


def _in_a_stream(frame: FrameType) -> bool:
    """Whether a `with` in `frame` would set the reader in whoever pulls the frame: a generator
    or an async generator, unless it is a context manager's (`contextlib.contextmanager`), which
    is entered and left by one `with` like any other."""
    if not frame.f_code.co_flags & (inspect.CO_GENERATOR | inspect.CO_ASYNC_GENERATOR):
        return False
    driver = frame.f_back
    return not (
        driver is not None
        and driver.f_code.co_filename == contextlib.__file__
        and driver.f_code.co_name in {"__enter__", "__aenter__"}
    )


def current_reader() -> ScopeDirectory | None:
    """The reader `reading_as` names for the code running now, if any."""
    return _call_reader.get()
