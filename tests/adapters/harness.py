"""Both adapters behind one interface, so each law is stated once and run through both.

A law is written against `Adapter.run`: it takes `(text, metadata)` entries, builds the
framework's own items (LangChain `Document`s, LlamaIndex `NodeWithScore`s around `TextNode`s, the
n-th named `doc-n`), calls the adapter's public entry point and reads the answer back the same
way for both.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pytest
from langchain_core.documents import Document
from llama_index.core.schema import NodeWithScore, TextNode

from aizk_integrations.langchain import AizkEvidenceCompressor
from aizk_integrations.llama_index import AizkEvidencePostprocessor

Entry = tuple[object, object]
"""An item's text and metadata, either possibly malformed."""

ONCE_PER_PROCESS = "Said once per process"
"""How the advice on where other readers' retrieved text travelled ends (its own test pins it)."""


@dataclass(frozen=True)
class Answer:
    """What an adapter returned, read back the same way for both frameworks."""

    items: Sequence[Any]
    """The framework objects returned, as returned."""
    texts: list[str]
    """Each returned item's text: the block, or the kept items' texts."""
    metadata: list[dict[str, Any]]

    @property
    def block(self) -> str:
        [block] = self.texts
        return block

    @property
    def counts(self) -> dict[str, int]:
        counts: dict[str, int] = self.metadata[0]["aizk_counts"]
        return counts

    @property
    def recall(self) -> dict[str, Any]:
        recall: dict[str, Any] = self.metadata[0]["aizk_recall"]
        return recall


@dataclass(frozen=True)
class Adapter:
    """One framework's adapter, driven through its public entry point."""

    name: str
    item_label: str
    """How an error names the entry at position 1 (a regex)."""
    position_label: str
    """How it names that entry before knowing the reader may see it: by position alone."""
    logger: str
    build: Callable[..., Any]
    make_item: Callable[[int, object, object], Any]
    call: Callable[[Any, list[Any]], Sequence[Any]]
    acall: Callable[[Any, list[Any]], Any]
    read: Callable[[Any], tuple[str, dict[str, Any]]]
    returned_items_setting: str

    def logged(self, caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
        """What this adapter logged about its calls: every record of its logger but the advice
        given once per process on where other readers' retrieved text travelled."""
        return [
            record
            for record in caplog.records
            if record.name == self.logger and not record.getMessage().endswith(ONCE_PER_PROCESS)
        ]

    def items(self, entries: Sequence[Entry]) -> list[Any]:
        """Framework items for the entries; equal entries share one, so long lists are cheap."""
        built: dict[int, Any] = {}
        items = []
        for position, entry in enumerate(entries):
            if id(entry) not in built:
                built[id(entry)] = self.make_item(position, *entry)
            items.append(built[id(entry)])
        return items

    def answer(self, returned: Sequence[Any]) -> Answer:
        read = [self.read(item) for item in returned]
        return Answer(returned, [text for text, _ in read], [meta for _, meta in read])

    def run(self, entries: Sequence[Entry], **settings: Any) -> Answer:
        return self.run_items(self.items(entries), **settings)

    def run_items(self, items: list[Any], **settings: Any) -> Answer:
        return self.answer(self.call(self.build(**settings), items))

    def arun(self, entries: Sequence[Entry], **settings: Any) -> Answer:
        adapter = self.build(**settings)
        return self.answer(asyncio.run(self.acall(adapter, self.items(entries))))

    def kept(self, entries: Sequence[Entry], **settings: Any) -> Answer:
        """The kept items returned on their own rather than one block."""
        return self.run(entries, **{self.returned_items_setting: True}, **settings)


def _document(position: int, text: object, metadata: object) -> Document:
    # model_construct skips LangChain's own validation, as a hand-built or deserialised
    # Document can; our checks must hold even then.
    return Document.model_construct(id=f"doc-{position}", page_content=text, metadata=metadata)


def _node(position: int, text: object, metadata: object) -> NodeWithScore:
    node = TextNode.model_construct(id_=f"doc-{position}", text=text, metadata=metadata)
    return NodeWithScore.model_construct(node=node, score=1.0 - position / 1000)


def _read_document(document: Document) -> tuple[str, dict[str, Any]]:
    return document.page_content, document.metadata


def _read_node(scored: NodeWithScore) -> tuple[str, dict[str, Any]]:
    return scored.node.get_content(), scored.node.metadata


LANGCHAIN = Adapter(
    name="langchain",
    item_label=r"documents\[1\] \(id 'doc-1'\)",
    position_label=r"documents\[1\]",
    logger="aizk_integrations.langchain",
    build=AizkEvidenceCompressor,
    make_item=_document,
    call=lambda adapter, items: adapter.compress_documents(items, "q"),
    acall=lambda adapter, items: adapter.acompress_documents(items, "q"),
    read=_read_document,
    returned_items_setting="return_documents",
)

LLAMA_INDEX = Adapter(
    name="llama_index",
    item_label=r"node 'doc-1' \(position 1\)",
    position_label=r"nodes\[1\]",
    logger="aizk_integrations.llama_index",
    build=AizkEvidencePostprocessor,
    make_item=_node,
    call=lambda adapter, items: adapter.postprocess_nodes(items, query_str="q"),
    acall=lambda adapter, items: adapter.apostprocess_nodes(items, query_str="q"),
    read=_read_node,
    returned_items_setting="return_nodes",
)

ADAPTERS = [LANGCHAIN, LLAMA_INDEX]


@pytest.fixture(params=ADAPTERS, ids=[adapter.name for adapter in ADAPTERS])
def adapter(request: pytest.FixtureRequest) -> Adapter:
    """Each law runs once through LangChain and once through LlamaIndex."""
    chosen: Adapter = request.param
    return chosen
