"""`AizkScopedRetriever`: a vector store asked only for what the request's reader may read.

Authorizing only at the packer, after a shared store has answered, starves readers (the top k
is filled with other readers' notes, which the packer then withholds) and sends other readers'
text through every event, trace and route that carries a retriever's output. Scoped retrieval
narrows the store's own query to the reader (`_stores`), checks every document exactly again,
and pages: when the packer drives it (`AizkEvidenceRetriever`, `AizkMemoryMiddleware`), the
store is asked for more only while the packer's walk still has room.
"""

from __future__ import annotations

import logging
from collections.abc import Hashable, Iterable, Iterator
from itertools import islice
from typing import Any

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import RetrieverLike
from langchain_core.runnables import RunnableConfig
from langchain_core.vectorstores import VectorStore
from pydantic import ConfigDict, Field

from aizk_integrations._paging import Fetched, readable_pages
from aizk_integrations._scopes import ScopeDirectory
from aizk_integrations.langchain._config import (
    DIRECTORY_CONFIG_KEY,
    ConfigCarryingRetriever,
    current_config,
    request_reader,
)
from aizk_integrations.langchain._stores import StoreSearch, store_search

logger = logging.getLogger("aizk_integrations.langchain")


class AizkScopedRetriever(ConfigCarryingRetriever):
    """A vector store's retriever that returns only documents the request's reader may read.

    The reader is the one the request names (`config={"configurable": {"aizk_directory":
    reader}}`), the same key the packer reads, so one reader reaches both the store query and
    the packer. With no reader it fails closed: nothing is retrieved. On its own it returns the
    reader's best `k` documents; inside `AizkEvidenceRetriever` or `AizkMemoryMiddleware` it
    returns as many as the budget takes, fetched page by page.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    vectorstore: VectorStore = Field(description="The shared store holding every reader's items.")
    k: int = Field(default=4, ge=1, description="Documents returned when used on its own.")
    max_fetch: int = Field(
        default=1024,
        ge=1,
        description=(
            "The most documents asked of the store per request; bounds how far an unfiltered "
            "store is paged for a reader whose documents are rare in it."
        ),
    )
    scopes_key: str = Field(
        default="scopes", min_length=1, description="Metadata key of the scope ids."
    )
    search: StoreSearch | None = Field(
        default=None,
        exclude=True,
        description=(
            "How to ask this store for one reader's documents (see StoreSearch); None: the "
            "built-in way for InMemoryVectorStore, Chroma and Qdrant, else unfiltered paging."
        ),
    )

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, k: int | None = None
    ) -> list[Document]:
        """The reader's best `k` documents (this call's `k`, else the retriever's)."""
        reader = request_reader(current_config())
        return list(islice(readable_documents(self, query, reader), self.k if k is None else k))


def readable_documents(
    retriever: AizkScopedRetriever,
    query: str,
    reader: ScopeDirectory | None,
    fetched: Fetched | None = None,
) -> Iterator[Document]:
    """The reader's documents for `query`, best first, fetched from the store as they are read."""
    if reader is None:
        logger.warning(
            "aizk: scoped retrieval has no reader for this request, so it retrieves nothing; "
            "pass the reader as config={'configurable': {%r: directory}}",
            DIRECTORY_CONFIG_KEY,
        )
        return iter(())
    search = retriever.search or store_search(retriever.vectorstore, retriever.scopes_key)
    scope_ids = frozenset(reader.scopes.keys())
    return readable_pages(
        lambda top: search(query, top, scope_ids),
        lambda document: reader.may_read(document.metadata.get(retriever.scopes_key)),
        _identity,
        first=retriever.k,
        most=retriever.max_fetch,
        fetched=fetched,
    )


def _identity(document: Document) -> Hashable:
    """Which stored document this is, to skip it on the next, longer page."""
    return document.id or (document.page_content, repr(sorted(document.metadata.items())))


def retrieved(
    retriever: RetrieverLike,
    query: str,
    config: RunnableConfig,
    reader: ScopeDirectory | None,
    **kwargs: Any,
) -> Iterable[Document]:
    """What `retriever` gives this request, for a packer to read: a scoped retriever's pages,
    fetched only as far as the packer reads (and silently: no retriever run of its own, so the
    packer decides how many, whatever `kwargs` ask), or any other retriever's documents, with
    `config` naming `reader`."""
    if isinstance(retriever, AizkScopedRetriever):
        return readable_documents(retriever, query, reader)
    return retriever.invoke(query, config, **kwargs)
