"""Whose conversation a chat call continues: a chat engine keeps one memory per reader.

LlamaIndex's chat engines hold one memory, so one engine shared by every reader (as a server
builds it) sends each reader the previous reader's turns, and the answers in them quote that
reader's evidence. Here a memory belongs to one reader, found by the reader's scopes, and a call
whose reader cannot be told is refused rather than given somebody's conversation.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Final

from llama_index.core.memory import BaseMemory

from aizk_integrations._scopes.directory import ScopeDirectory

ReaderKey = frozenset[str] | None
"""A reader as their conversations are filed: the scope ids they may read (`None`: no reader)."""

NAME_THE_READER: Final = (
    "bind it with engine.for_reader(reader), or give the evidence postprocessor a reader"
)


def reader_key(reader: ScopeDirectory | None) -> ReaderKey:
    """The key a reader's memory is filed under: every scope id they may read.

    By the scopes rather than by a name, so two readers never share a memory, and a reader
    whose access changes starts a new conversation: the old one's answers quote evidence they
    may no longer read.
    """
    return None if reader is None else frozenset(reader.scopes.keys())


class Conversations:
    """The memories of one chat engine, shared by the engine and its `for_reader` copies.

    With no memory given, each reader gets a new one from `make` on their first call. A memory
    the app gives is one conversation: it is held for the reader of the first call, and a call
    by anyone else is refused.
    """

    def __init__(
        self, engine: str, make: Callable[[], BaseMemory], given: BaseMemory | None
    ) -> None:
        self._engine = engine
        self._make = make
        self._given = given
        self._owner: ReaderKey = None
        self._claimed = False
        self._memories: dict[ReaderKey, BaseMemory] = {}
        self._lock = threading.Lock()

    def of(self, reader: ScopeDirectory | None, *, readerless: bool) -> BaseMemory:
        """The memory of `reader`'s conversation.

        `readerless` says the app lets callers with no reader share one conversation
        (`allow_scoped_without_reader`: every caller may see everything anyway).
        """
        key = reader_key(reader)
        with self._lock:
            if self._given is not None:
                return self._held(key)
            if key is None and not readerless:
                raise RuntimeError(
                    f"{self._engine} keeps one conversation per reader, and this call names no "
                    f"reader, so it would share one with every other call that names none: "
                    f"{NAME_THE_READER}"
                )
            memory = self._memories.get(key)
            if memory is None:
                memory = self._memories[key] = self._make()
            return memory

    def _held(self, key: ReaderKey) -> BaseMemory:
        assert self._given is not None
        if not self._claimed:
            self._owner, self._claimed = key, True
        elif self._owner != key:
            raise PermissionError(
                f"this {self._engine}'s memory was given to it, so it is one conversation, held "
                "for the reader of its first call, and this call's reader is another one (or the "
                "same person with other scopes): build the engine without memory= to keep one "
                "conversation per reader, or build one engine per conversation"
            )
        return self._given
