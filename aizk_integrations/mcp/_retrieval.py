"""The one place the MCP server meets the adapters: the app's own retrieval and packer.

A recall is what the app's LangChain or LlamaIndex scoped retrieval already answers, asked
through the adapters' public handles with the request's reader named once; a revision is read
with the store's own metadata lookup. Every name of the adapters this subpackage uses is here
(and only here), so a rename of theirs is a change to this module alone. Neither framework is
imported unless the app handed us one of its objects: a LangChain app needs no LlamaIndex.
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from functools import cache
from typing import Any, Protocol

from aizk_integrations import RecallResult, ScopeDirectory
from aizk_integrations._uuids import canonical_uuid, uuid_text
from aizk_integrations.mcp._revisions import StoredText

RECALL_KEY = "aizk_recall"
"""Where the block Document/node keeps the public `RecallResult` JSON (docs/langchain.md)."""

COUNTS_KEY = "aizk_counts"
"""Where the block Document/node keeps its counts, and what the packer's trace outputs."""


@dataclass(frozen=True)
class Recalled:
    """One recall as the tool returns it: the block, its public JSON and its counts."""

    block: str
    recall: dict[str, Any]
    counts: dict[str, int | bool]


class Retrieval(Protocol):
    """The app's retrieval and packer, asked for one reader at a time."""

    async def recall(self, query: str, budget: int, reader: ScopeDirectory) -> Recalled: ...

    def revision(self, artifact_id: str, artifact_content_id: str) -> list[StoredText]: ...


def retrieval_for(retriever: object, packer: object) -> Retrieval:
    """The app's retrieval, whichever framework it is in; anything else is refused, naming what
    is taken."""
    langchain = sys.modules.get("aizk_integrations.langchain")
    if langchain is not None and isinstance(retriever, langchain.AizkScopedRetriever):
        return _LangChain(retriever, _packer(packer, langchain.AizkEvidenceCompressor))
    llama_index = sys.modules.get("aizk_integrations.llama_index")
    if llama_index is not None:
        from llama_index.core import VectorStoreIndex

        if isinstance(retriever, VectorStoreIndex):
            return _LlamaIndex(retriever, _packer(packer, llama_index.AizkEvidencePostprocessor))
    raise TypeError(
        "recall_server serves a LangChain AizkScopedRetriever (with an AizkEvidenceCompressor) "
        "or a LlamaIndex VectorStoreIndex (with an AizkEvidencePostprocessor), not "
        f"{type(retriever).__name__}"
    )


def _packer(packer: object, kind: type[Any]) -> Any:
    """The app's packer, if it is the one its framework's retrieval packs with and it hands
    back the block (not the kept items)."""
    if not isinstance(packer, kind):
        raise TypeError(
            f"this retrieval packs with an {kind.__name__}, not {type(packer).__name__}"
        )
    if getattr(packer, "return_documents", False) or getattr(packer, "return_nodes", False):
        raise ValueError(
            f"the {kind.__name__} returns the kept items; the recall tool serves the block: "
            "build it without return_documents / return_nodes"
        )
    return packer


def canonical(value: object) -> str | None:
    """An artifact id as the resource URI writes it (canonical UUID text), else `None`."""
    if isinstance(value, uuid.UUID):
        return canonical_uuid(value)
    return uuid_text(value) if isinstance(value, str) else None


def _of_revision(metadata: Mapping[str, Any], keys: tuple[str, str], ids: tuple[str, str]) -> bool:
    return (canonical(metadata.get(keys[0])), canonical(metadata.get(keys[1]))) == ids


class _LangChain:
    """A LangChain `AizkScopedRetriever` packed by the app's `AizkEvidenceCompressor`."""

    def __init__(self, retriever: Any, compressor: Any) -> None:
        from aizk_integrations.langchain import AizkEvidenceRetriever

        self._packed = AizkEvidenceRetriever(base_retriever=retriever, compressor=compressor)
        self._store = retriever.vectorstore
        self._keys = (compressor.artifact_id_key, compressor.artifact_content_id_key)
        self._scopes_key = compressor.scopes_key
        self._lookup = _langchain_lookup(self._store)

    async def recall(self, query: str, budget: int, reader: ScopeDirectory) -> Recalled:
        from langchain_core.runnables import RunnableConfig

        counts = _langchain_counts()
        config: RunnableConfig = {
            "configurable": {"aizk_reader": reader, "aizk_budget": budget},
            "callbacks": [counts],
        }
        found = await self._packed.ainvoke(query, config=config)
        if found:
            [block] = found
            metadata = block.metadata
            return Recalled(block.page_content, metadata[RECALL_KEY], metadata[COUNTS_KEY])
        return Recalled("", RecallResult().model_dump(mode="json"), counts.counts)

    def revision(self, artifact_id: str, artifact_content_id: str) -> list[StoredText]:
        ids = (artifact_id, artifact_content_id)
        return [
            StoredText(text=text, scopes=metadata.get(self._scopes_key))
            for text, metadata in self._lookup(self._store, self._keys, ids)
        ]


Lookup = Callable[[Any, tuple[str, str], tuple[str, str]], Iterable[tuple[str, Mapping[str, Any]]]]


def _langchain_lookup(store: Any) -> Lookup:
    """How a LangChain store lists one revision's items, in stored order, by their metadata."""
    from langchain_core.vectorstores import InMemoryVectorStore

    if isinstance(store, InMemoryVectorStore):
        return _in_memory_revision
    chroma = sys.modules.get("langchain_chroma")
    if chroma is not None and isinstance(store, chroma.Chroma):
        return _chroma_revision
    raise TypeError(
        f"recall_server cannot list a revision's items in a {type(store).__name__}: pass "
        "revisions=, a function from (artifact_id, artifact_content_id) to the revision's "
        "StoredText items in stored order"
    )


def _in_memory_revision(
    store: Any, keys: tuple[str, str], ids: tuple[str, str]
) -> Iterable[tuple[str, Mapping[str, Any]]]:
    """LangChain's in-memory store keeps its items in a dict, in the order they were added."""
    for item in list(store.store.values()):
        if _of_revision(item["metadata"], keys, ids):
            yield item["text"], item["metadata"]


def _chroma_revision(
    store: Any, keys: tuple[str, str], ids: tuple[str, str]
) -> Iterable[tuple[str, Mapping[str, Any]]]:
    """Chroma's `get` with a `where` on both ids: the revision's items in the order added."""
    where = {"$and": [{keys[0]: ids[0]}, {keys[1]: ids[1]}]}
    found = store.get(where=where, include=["documents", "metadatas"])
    return zip(found["documents"], found["metadatas"], strict=True)


def _langchain_counts() -> Any:
    """A callback that keeps the counts the packer's traced run outputs, even when it keeps
    nothing and so returns no block to read them from (docs/langchain.md, "Counts")."""
    from langchain_core.callbacks import BaseCallbackHandler

    class Counts(BaseCallbackHandler):
        run_inline = True

        def __init__(self) -> None:
            self.counts: dict[str, int | bool] = {}

        def on_chain_end(self, outputs: Any, **kwargs: Any) -> None:
            if isinstance(outputs, dict) and COUNTS_KEY in outputs:
                self.counts = dict(outputs[COUNTS_KEY])

    return Counts()


_llama_index_counts: ContextVar[list[dict[str, int | bool]] | None] = ContextVar(
    "aizk_mcp_llama_index_counts", default=None
)
"""Where this request's `AizkEvidencePackedEvent` event leaves its counts: set for the length of one
recall and reset after it, so no request sees another's."""


class _LlamaIndex:
    """A LlamaIndex `VectorStoreIndex`, asked through `AizkScopedRetriever` for one reader and
    packed by the app's `AizkEvidencePostprocessor` at the request's budget."""

    def __init__(self, index: Any, postprocessor: Any) -> None:
        _listen_for_counts()
        self._index = index
        self._postprocessor = postprocessor
        self._keys = (postprocessor.artifact_id_key, postprocessor.artifact_content_id_key)
        self._lookup = _llama_index_lookup(index)

    async def recall(self, query: str, budget: int, reader: ScopeDirectory) -> Recalled:
        from aizk_integrations.llama_index import AizkScopedRetriever

        # The budget is checked by the tool, within the postprocessor's max_budget.
        evidence = self._postprocessor.model_copy(update={"budget": budget})
        retriever = AizkScopedRetriever(
            self._index, evidence=evidence, scopes_key=evidence.scopes_key
        ).for_reader(reader)
        sink: list[dict[str, int | bool]] = []
        token = _llama_index_counts.set(sink)
        try:
            found = await retriever.aretrieve(query)
        finally:
            _llama_index_counts.reset(token)
        if found:
            [block] = found
            metadata = block.node.metadata
            return Recalled(block.node.get_content(), metadata[RECALL_KEY], metadata[COUNTS_KEY])
        return Recalled("", RecallResult().model_dump(mode="json"), sink[-1] if sink else {})

    def revision(self, artifact_id: str, artifact_content_id: str) -> list[StoredText]:
        from llama_index.core.schema import MetadataMode

        scopes_key = self._postprocessor.scopes_key
        return [
            StoredText(
                text=node.get_content(metadata_mode=MetadataMode.NONE),
                scopes=node.metadata.get(scopes_key),
            )
            for node in self._lookup(self._index, self._keys, (artifact_id, artifact_content_id))
        ]


@cache
def _listen_for_counts() -> None:
    """One handler on LlamaIndex's root dispatcher, for the process: it hands a packing's counts
    to the recall that is waiting for them, if any (`_llama_index_counts`)."""
    from llama_index.core.instrumentation.event_handlers import BaseEventHandler
    from llama_index.core.instrumentation.events import BaseEvent
    from llama_index_instrumentation import get_dispatcher

    from aizk_integrations.llama_index import AizkEvidencePackedEvent

    class Counts(BaseEventHandler):
        @classmethod
        def class_name(cls) -> str:
            return "AizkMcpCounts"

        def handle(self, event: BaseEvent, **kwargs: Any) -> None:
            sink = _llama_index_counts.get()
            if sink is not None and isinstance(event, AizkEvidencePackedEvent):
                sink.append(dict(event.counts))

    get_dispatcher().add_event_handler(Counts())


NodeLookup = Callable[[Any, tuple[str, str], tuple[str, str]], Sequence[Any]]


def _llama_index_lookup(index: Any) -> NodeLookup:
    """How a LlamaIndex index lists one revision's nodes, in stored order, by their metadata."""
    from llama_index.core.vector_stores.types import BasePydanticVectorStore

    store = index.vector_store
    if not store.stores_text:
        return _docstore_revision
    if type(store).get_nodes is not BasePydanticVectorStore.get_nodes:
        return _vector_store_revision
    raise TypeError(
        f"recall_server cannot list a revision's nodes in a {type(store).__name__}: pass "
        "revisions=, a function from (artifact_id, artifact_content_id) to the revision's "
        "StoredText items in stored order"
    )


def _docstore_revision(index: Any, keys: tuple[str, str], ids: tuple[str, str]) -> Sequence[Any]:
    """A store that keeps no text (`SimpleVectorStore`): the index's docstore holds the nodes,
    in the order they were inserted."""
    return [node for node in index.docstore.docs.values() if _of_revision(node.metadata, keys, ids)]


def _vector_store_revision(
    index: Any, keys: tuple[str, str], ids: tuple[str, str]
) -> Sequence[Any]:
    """A store that keeps the text: its `get_nodes` with a filter on both ids."""
    from llama_index.core.vector_stores.types import MetadataFilter, MetadataFilters

    filters = MetadataFilters(
        filters=[MetadataFilter(key=key, value=value) for key, value in zip(keys, ids, strict=True)]
    )
    return list(index.vector_store.get_nodes(filters=filters))
