"""The one place the MCP server meets the adapters: the app's own retrieval and packer.

A recall is the packing the app's LangChain or LlamaIndex scoped retrieval already makes, asked
for through one internal call per framework (`_langchain`, `_llama_index`) with the request's
reader named once: the block, the public JSON and the counts are read off that packing, not
back out of documents, events or traces. A revision is read with the store's own metadata
lookup (`_lookups`), or the app's `revisions=`, which is looked at first. Neither framework is
imported unless the app handed over one of its objects: a LangChain app needs no LlamaIndex.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from aizk_integrations._run.run import Packing
from aizk_integrations._scopes.directory import ScopeDirectory
from aizk_integrations._stores.plan import is_a
from aizk_integrations.mcp._revisions import RevisionRead


@dataclass(frozen=True)
class Recalled:
    """One recall as the tool returns it: the block, its public JSON and its counts."""

    block: str
    recall: dict[str, Any]
    counts: dict[str, int | bool]


def recalled(packing: Packing[Any]) -> Recalled:
    """What a recall serves of a packing: exactly what the adapters' block item would hold."""
    result = packing.result
    return Recalled(result.to_markdown(), result.model_dump(mode="json"), packing.counts)


class Retrieval(Protocol):
    """The app's retrieval and packer, asked for one reader at a time."""

    async def recall(self, query: str, budget: int, reader: ScopeDirectory) -> Recalled: ...

    def revisions(self) -> RevisionRead:
        """How this server reads a revision with the store's own lookup; a store with no exact
        lookup is refused here, naming `revisions=` (which the server looks at first)."""
        ...


def retrieval_for(retriever: object, packer: object) -> Retrieval:
    """The app's retrieval, whichever framework it is in; anything else is refused, naming what
    is taken."""
    if is_a(retriever, "aizk_integrations.langchain", "AizkScopedRetriever"):
        from aizk_integrations.langchain import AizkEvidenceCompressor
        from aizk_integrations.mcp._langchain import LangChainRetrieval

        return LangChainRetrieval(retriever, _packer(packer, AizkEvidenceCompressor))  # type: ignore[arg-type]
    if is_a(retriever, "llama_index.core", "VectorStoreIndex"):
        from aizk_integrations.llama_index import AizkEvidencePostprocessor
        from aizk_integrations.mcp._llama_index import LlamaIndexRetrieval

        return LlamaIndexRetrieval(retriever, _packer(packer, AizkEvidencePostprocessor))  # type: ignore[arg-type]
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


def no_lookup(store: object) -> TypeError:
    """The error for a store whose revisions cannot be read exactly by their ids."""
    return TypeError(
        f"recall_server cannot read a revision exactly in a {type(store).__name__} (it has no "
        "lookup of its items by metadata that this library knows): pass revisions=, a function "
        "from (artifact_id, artifact_content_id) to the revision's StoredText items in stored "
        "order"
    )
