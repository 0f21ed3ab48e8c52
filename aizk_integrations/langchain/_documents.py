"""Where a LangChain `Document` keeps what the packer reads, and the documents it hands back."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from langchain_core.documents import Document

from aizk_integrations._core.evidence import kept_item_metadata
from aizk_integrations._errors import ItemError, quoted
from aizk_integrations._run.reading import BLOCK_KEY, Source
from aizk_integrations._run.run import Packing, cited_items

RECALL_METADATA_KEY: Final = BLOCK_KEY
"""Metadata key of the block `Document` holding the public `RecallResult` JSON."""

COUNTS_METADATA_KEY: Final = "aizk_counts"
"""Metadata key of the block `Document` holding its counts (`Packing.counts`): no lanes, ids
or text."""

CITATIONS_METADATA_KEY: Final = "aizk_citations"
"""Metadata key of a cited block `Document` (`cite=True`) listing each number's item: `number`,
the kept document's `id`, and its citation keys' values, so an app maps `[n]` back."""


def _metadata_of(document: object, position: int) -> object:
    if not isinstance(document, Document):
        raise ItemError(
            position,
            f"expected a langchain_core Document, got {type(document).__name__}",
            authorized=False,
        )
    return document.metadata


def _page_content_of(document: Document, position: int) -> object:
    return document.page_content


def _name(documents: Sequence[Document], position: int, authorized: bool) -> str:
    """How an error names a document: its index, and its id once it is known to be readable."""
    name = f"documents[{position}]"
    identifier = documents[position].id if authorized else None  # authorized: a Document
    return f"{name} (id {quoted(identifier)})" if identifier else name


def _score_of(document: Document) -> object:
    """The score LangChain's rerankers (Cohere, Voyage, cross-encoders) leave in metadata."""
    return document.metadata.get("relevance_score")


DOCUMENTS: Final = Source[Document](
    expected="a list (or other sequence) of langchain_core Documents",
    metadata_of=_metadata_of,
    text_of=_page_content_of,
    name=_name,
    score_of=_score_of,
)
"""How the packer reads LangChain documents."""


class BlockDocument(Document):
    """The block's `Document`: to LangChain a plain `Document` (it serializes as one), and in a
    notebook shown as the markdown it is rather than as a wall of escaped text."""

    @classmethod
    def lc_id(cls) -> list[str]:
        return Document.lc_id()

    def _repr_markdown_(self) -> str:
        return self.page_content


def block_document(packing: Packing[Document]) -> Document:
    """The one `Document` a prompt receives: the block, with the public JSON and the counts."""
    result = packing.result
    metadata: dict[str, Any] = {
        RECALL_METADATA_KEY: result.model_dump(mode="json"),
        COUNTS_METADATA_KEY: packing.counts,
    }
    cited = cited_items(packing, lambda document: (document.id, document.metadata))
    if cited is not None:
        metadata[CITATIONS_METADATA_KEY] = cited
    return BlockDocument(page_content=result.to_markdown(), metadata=metadata)


def kept_documents(packing: Packing[Document], citation_keys: Sequence[str]) -> list[Document]:
    """New `Document`s for the kept items: their public fields, ids and citation keys."""
    kept = []
    for item in packing.kept:
        original = packing.items[item.position]
        metadata = kept_item_metadata(item.evidence)
        metadata.update(
            (key, original.metadata[key])
            for key in citation_keys
            if key in original.metadata and key not in metadata
        )
        kept.append(Document(id=original.id, page_content=item.evidence.text, metadata=metadata))
    return kept
