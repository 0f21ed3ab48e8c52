"""`AizkScopedRetriever`: a vector store asked only for what the request's reader may read.

Authorizing only at the packer, after a shared store has answered, starves readers (the top k
is filled with other readers' notes, which the packer then withholds) and sends other readers'
text through every event, trace and route that carries a retriever's output. Scoped retrieval
narrows the store's own query to the reader (`_stores`), checks every document exactly again,
and pages: when the packer drives it (`AizkEvidenceRetriever`, `AizkMemoryMiddleware`), the
first page is sized to the budget and the store is asked for more only while the packer's walk
still has room.
"""

from __future__ import annotations

import logging
from collections.abc import Hashable, Iterator
from dataclasses import dataclass
from itertools import islice
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import RetrieverLike
from langchain_core.runnables import RunnableConfig
from langchain_core.vectorstores import VectorStore
from pydantic import ConfigDict, Field, PrivateAttr, field_validator, model_validator

from aizk_integrations._errors import quoted
from aizk_integrations._run.paging import (
    Fetched,
    PageSize,
    Search,
    awalk,
    readable_pages,
    scope_check,
)
from aizk_integrations._run.report import max_fetch_message, several_ids_message
from aizk_integrations._run.run import Packing
from aizk_integrations._scopes.directory import ScopeDirectory, scopes_of
from aizk_integrations.langchain._compressor import (
    AizkEvidenceCompressor,
    pack_documents,
)
from aizk_integrations.langchain._config import (
    ConfigCarryingRetriever,
    ReaderOfUser,
    carrying,
    current_config,
    missing_reader_advice,
    request_reader,
    request_settings,
)
from aizk_integrations.langchain._stores import Searcher, StoreSearch, check_store, searcher

logger = logging.getLogger("aizk_integrations.langchain")

DEFAULT_K = 4
"""Documents returned on its own when `search_kwargs` names no `k`, as LangChain's stores do."""


def check_k(k: object, name: str) -> int:
    """`k` as a count of documents to return, or an error naming the setting."""
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise ValueError(
            f"{name} must be an int of at least 1 (the documents returned), not {quoted(k)}"
        )
    return k


class AizkScopedRetriever(ConfigCarryingRetriever):
    """A vector store's retriever that returns only documents the request's reader may read.

    The reader is the one the request names (`config={"configurable": {"aizk_reader":
    reader}}`, or the authenticated user mapped by `reader_of_user`), read as the packer reads
    it, so one reader reaches both the store query and the packer. With no reader it fails
    closed: nothing is retrieved. On its own it returns the reader's best `k` documents; inside
    `AizkEvidenceRetriever` or `AizkMemoryMiddleware` it returns as many as the budget takes,
    fetched page by page.
    """

    # Settings changed after construction are checked as the constructor checks them: a `k` of 0
    # set later would otherwise reach the pager.
    model_config = ConfigDict(arbitrary_types_allowed=True, validate_assignment=True)

    vectorstore: VectorStore = Field(description="The shared store holding every reader's items.")
    search_kwargs: dict[str, Any] = Field(
        default_factory=dict,
        description=(
            "As LangChain's VectorStoreRetriever: {'k': n}, the documents returned when used "
            "on its own (4 by default). The store's filter is the reader's, written here, so "
            "no other search keyword is taken."
        ),
    )
    max_fetch: int = Field(
        default=1024,
        ge=1,
        description=(
            "The most documents asked of the store in one request. A store that cannot filter "
            "for the reader (FAISS, or a reader past what the store's filter carries) is paged "
            "until the budget is full or this many were asked; stopping here with room left "
            "logs a WARNING and sets max_fetch_reached in the counts."
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
            "built-in way for InMemoryVectorStore, Chroma, Qdrant, PGVectorStore and "
            "PGVector, else unfiltered paging."
        ),
    )
    reader_of_user: ReaderOfUser | None = Field(
        default=None,
        exclude=True,
        description=(
            "As the compressor's: maps the user a server authenticated (LangGraph Platform's "
            "'langgraph_auth_user') to their reader, and is then the only source of it. Give "
            "it the packer's own function when the two are chained with `|`."
        ),
    )
    _page_size: PageSize = PrivateAttr(default_factory=PageSize)

    @model_validator(mode="before")
    @classmethod
    def _k_goes_in_search_kwargs(cls, data: Any) -> Any:
        if isinstance(data, dict) and "k" in data:
            raise ValueError(
                f"k is not a setting of {cls.__name__}: as with LangChain's retrievers, write "
                f"search_kwargs={{'k': {quoted(data['k'])}}}"
            )
        return data

    @model_validator(mode="after")
    def _a_store_it_can_ask(self) -> AizkScopedRetriever:
        check_store(self.vectorstore, self.scopes_key)
        return self

    @field_validator("search_kwargs")
    @classmethod
    def _only_k(cls, search_kwargs: dict[str, Any]) -> dict[str, Any]:
        unknown = sorted(set(search_kwargs) - {"k"}, key=str)
        if unknown:
            raise ValueError(
                f"search_kwargs {', '.join(map(quoted, unknown))} not taken: scoped retrieval "
                "writes the store's filter for the reader itself, and takes only 'k' (the "
                "documents returned)"
            )
        if "k" in search_kwargs:
            check_k(search_kwargs["k"], "search_kwargs['k']")
        return dict(search_kwargs)

    @property
    def k(self) -> int:
        """The documents a call returns when this retriever is used on its own."""
        return int(self.search_kwargs.get("k", DEFAULT_K))

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, k: int | None = None
    ) -> list[Document]:
        """The reader's best `k` documents (this call's `k`, else the retriever's)."""
        top = self._top(k)
        reader = request_reader(current_config(), self.reader_of_user)
        request = self.request_for(query, reader, run_manager)
        return [] if request is None else request.best(request.search, top)

    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun,
        k: int | None = None,
    ) -> list[Document]:
        top = self._top(k)
        reader = request_reader(current_config(), self.reader_of_user)
        request = self.request_for(query, reader, run_manager)
        if request is None:
            return []
        return await awalk(lambda search: request.best(search, top), request.asearch)

    def _top(self, k: object) -> int:
        """This call's `k`, else the retriever's: how many documents the call returns."""
        return self.k if k is None else check_k(k, "k")

    def request_for(
        self,
        query: str,
        reader: ScopeDirectory | None,
        run: CallbackManagerForRetrieverRun | AsyncCallbackManagerForRetrieverRun | None = None,
    ) -> StoreRequest | None:
        """One request's store query for `reader`, or `None` when the store is not to be asked:
        no reader (said in a warning: it fails closed, with advice that fits where it ran,
        `run` when it was invoked as a retriever), or a reader of no scopes."""
        if reader is None:
            logger.warning(
                "aizk: scoped retrieval has no reader for this request, so it retrieves "
                "nothing; %s",
                missing_reader_advice(current_config(), self.reader_of_user, run),
            )
            return None
        if not reader.scopes:
            return None
        searcher_ = searcher(self.vectorstore, self.scopes_key, self.search)
        return StoreRequest(self, searcher_, query, reader, frozenset(reader.scopes.keys()))


@dataclass(frozen=True)
class StoreRequest:
    """One request's query of a scoped retriever's store, for one reader."""

    retriever: AizkScopedRetriever
    searcher: Searcher
    query: str
    reader: ScopeDirectory
    ids: frozenset[str]

    def search(self, size: int) -> list[Document]:
        return self.searcher.search(self.query, size, self.ids)

    async def asearch(self, size: int) -> list[Document]:
        return await self.searcher.asearch(self.query, size, self.ids)

    def readable(
        self, search: Search[Document], first: int, fetched: Fetched, *, to_packer: bool
    ) -> Iterator[Document]:
        """The reader's documents, best first, fetched from the store as they are read (with
        those of several ids in one string when a packer reads them: see `scope_check`)."""
        key = self.retriever.scopes_key
        check = scope_check(self.reader, fetched, to_packer=to_packer)
        return readable_pages(
            search,
            lambda document: check(scopes_of(document.metadata, key)),
            _identity,
            first=first,
            most=self.retriever.max_fetch,
            fetched=fetched,
        )

    def best(self, search: Search[Document], top: int) -> list[Document]:
        """The reader's best `top` documents, and a warning if `max_fetch` cut them short."""
        fetched = Fetched()
        found = list(islice(self.readable(search, top, fetched, to_packer=False), top))
        if fetched.several_ids_in_one:
            key = self.retriever.scopes_key
            logger.warning("%s", several_ids_message(fetched.several_ids_in_one, key))
        if fetched.capped:
            logger.warning("%s", max_fetch_message(fetched, len(found)))
        return found

    def packed(
        self, compressor: AizkEvidenceCompressor, config: RunnableConfig, search: Search[Document]
    ) -> Packing[Document]:
        """The reader's documents packed and reported, read from `search` only as far as the
        walk reads, the first page sized to what the budget is likely to take, and what the
        kept ones cost learnt for the next request's first page."""
        budget, _ = request_settings(compressor, config)
        page_size = self.retriever._page_size
        first = page_size.first(compressor.budget if budget is None else budget, self.retriever.k)
        fetched = Fetched()
        documents = self.readable(search, first, fetched, to_packer=True)
        packing = pack_documents(compressor, documents, config, fetched=fetched)
        page_size.learn(packing.tokens_used, len(packing.kept))
        return packing


def _identity(document: Document) -> Hashable:
    """Which stored document this is, to skip it on the next, longer page."""
    return document.id or (document.page_content, repr(sorted(document.metadata.items())))


def packed_retrieval(
    compressor: AizkEvidenceCompressor,
    retriever: RetrieverLike,
    query: str,
    config: RunnableConfig,
    reader: ScopeDirectory | None,
    **kwargs: Any,
) -> Packing[Document]:
    """What `retriever` gives this request, packed: a scoped retriever's pages, fetched only as
    far as the packer reads (and silently: no retriever run of its own, so the packer decides
    how many, whatever `kwargs` ask), or any other retriever's documents. `config` names
    `reader`, and is the request config of everything the retriever runs, so a scoped
    retriever inside another (`MultiQueryRetriever`, `MergerRetriever`...) reads it too."""
    if isinstance(retriever, AizkScopedRetriever):
        request = retriever.request_for(query, reader)
        if request is None:  # no reader, or a reader of no scopes: the store is not asked
            return pack_documents(compressor, [], config)
        return request.packed(compressor, config, request.search)
    with carrying(config):
        documents = retriever.invoke(query, config, **kwargs)
    return pack_documents(compressor, documents, config)


async def apacked_retrieval(
    compressor: AizkEvidenceCompressor,
    retriever: RetrieverLike,
    query: str,
    config: RunnableConfig,
    reader: ScopeDirectory | None,
    **kwargs: Any,
) -> Packing[Document]:
    """`packed_retrieval`, asking the store through its async API: the same walk, run once in
    a thread of its own (`awalk`), so the store is asked for the pages the sync path asks for
    and the trace and report are the sync path's."""
    if isinstance(retriever, AizkScopedRetriever):
        request = retriever.request_for(query, reader)
        if request is None:
            return pack_documents(compressor, [], config)
        return await awalk(
            lambda search: request.packed(compressor, config, search), request.asearch
        )
    with carrying(config):
        documents = await retriever.ainvoke(query, config, **kwargs)
    return pack_documents(compressor, documents, config)
