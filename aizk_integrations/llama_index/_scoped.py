"""`AizkScopedRetriever`: a shared index asked only for what the request's reader may read.

Filtering after top-k starves readers: in a store shared by many readers the top few nodes are
mostly other readers', which the packer then withholds, and those nodes travel in LlamaIndex's
retrieval events, its callback payloads and its DEBUG log before the packer ever sees them. So
the reader goes into the store query instead (exactly where the store can say it, otherwise as
the strongest condition it can say, see `_stores`), every node the store returns is checked
again with the packer's own rule, and the store is paged: a small first page, then pages twice
as long, only while the caller still wants more. The store is queried directly, below
LlamaIndex's traced retriever layer, so the only retrieval event is this retriever's own, and
it carries only what the reader may read.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import TYPE_CHECKING, Never

from llama_index.core import Settings, VectorStoreIndex
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.schema import BaseNode, NodeWithScore, QueryBundle
from llama_index.core.vector_stores.types import VectorStoreQuery, VectorStoreQueryResult

from aizk_integrations._run.paging import (
    Fetched,
    PageSize,
    Search,
    awalk,
    readable_pages,
    scope_check,
)
from aizk_integrations._run.report import max_fetch_message, several_ids_message
from aizk_integrations._run.run import Packing, run
from aizk_integrations._run.settings import refuse_unknown_keywords
from aizk_integrations._scopes.directory import ScopeDirectory, require_reader, scopes_of
from aizk_integrations.llama_index._nodes import NODES
from aizk_integrations.llama_index._postprocessor import (
    AizkEvidencePostprocessor,
    CallLimits,
    call_limits,
    packed_nodes,
    tell,
)
from aizk_integrations.llama_index._stores import (
    ScopeFilter,
    built_in_filter,
    check_store,
    postgres_search,
    quiet_store_logs,
)

if TYPE_CHECKING:
    from aizk_integrations.llama_index._postgres import PGVectorStoreSearch

logger = logging.getLogger("aizk_integrations.llama_index")

ScopedQuery = Callable[[frozenset[str]], ScopeFilter]
"""What narrows a store query for a reader's scope ids: the protocol for any other store."""


_LANGCHAINS = {"k": "similarity_top_k", "search_kwargs": "similarity_top_k"}
"""LangChain's names for this retriever's settings, which a newcomer from there writes."""


class AizkScopedRetriever(BaseRetriever):
    """Retrieve from a shared `VectorStoreIndex` only what the request's reader may read.

    The reader of a call is the one `for_reader` bound, else `reader`. With neither it
    retrieves nothing and says so in a warning: a call that names no reader is never answered
    with somebody's notes.

    Without `evidence`, it returns the reader's best `similarity_top_k` nodes, for any
    pipeline. With `evidence`, an `AizkEvidencePostprocessor`, it returns what that
    postprocessor would (the one block node, or the kept nodes with `return_nodes`), packed for
    the same reader from pages fetched as the walk reads them, so the store is asked for more
    only while the budget has room; its report and `AizkEvidencePackedEvent` event are the
    postprocessor's own. Give such an engine no postprocessor of its own.

    The store is asked first for what the budget is likely to take (`similarity_top_k` on its
    own), then for twice as many each time the readable ones run out, `max_fetch` at most.
    `SimpleVectorStore`, Qdrant and `PGVectorStore` are filtered exactly, Chroma with a
    necessary condition, FAISS not at all (`_stores`); `scoped_query` plugs in any other
    store (it gets the reader's scope ids and returns a `ScopeFilter`). Whatever the store
    returns is re-checked with `ScopeDirectory.may_read` on the metadata key `scopes_key`
    before it is returned, so a weak filter costs pages, never another reader's text. Nodes in
    no scope are not returned. Ingest with `TextNode(text, metadata=scope_metadata(scopes))`.

    The query is embedded once per call with `embed_model`, by default the index's own.
    """

    def __init__(
        self,
        index: VectorStoreIndex,
        *,
        similarity_top_k: int = 4,
        max_fetch: int = 1024,
        scopes_key: str = "scopes",
        reader: ScopeDirectory | None = None,
        evidence: AizkEvidencePostprocessor | None = None,
        scoped_query: ScopedQuery | None = None,
        embed_model: BaseEmbedding | None = None,
        **unknown: Never,
    ) -> None:
        refuse_unknown_keywords("AizkScopedRetriever", unknown, AizkScopedRetriever, _LANGCHAINS)
        if not isinstance(index, VectorStoreIndex):
            raise TypeError(
                f"AizkScopedRetriever needs a VectorStoreIndex, not {type(index).__name__}"
            )
        _check_count("similarity_top_k", similarity_top_k, 1)
        _check_count("max_fetch", max_fetch, similarity_top_k)
        if not isinstance(scopes_key, str) or not scopes_key:
            raise ValueError("scopes_key must be a non-empty metadata key")
        if reader is not None:
            require_reader(reader, "reader")
        if evidence is not None:
            _check_evidence(evidence, scopes_key)
        if scoped_query is not None and not callable(scoped_query):
            raise TypeError(
                "scoped_query must be a function from a reader's scope ids to a ScopeFilter"
            )
        check_store(index.vector_store)
        super().__init__(callback_manager=Settings.callback_manager)
        self._index = index
        self._top_k = similarity_top_k
        self._max_fetch = max_fetch
        self._scopes_key = scopes_key
        self._fixed_reader = reader
        self._evidence = evidence
        self._scoped_query = scoped_query
        # Made once, here: a PGVectorStore's search holds the engine it queries on.
        self._postgres = (
            postgres_search(index.vector_store, scopes_key) if scoped_query is None else None
        )
        self._page_size = PageSize()
        # The index's own model unless told otherwise, as `index.as_retriever()` does: the
        # query must be embedded like the stored nodes were, and LlamaIndex keeps the index's
        # model only in its private `_embed_model`.
        self._embed_model = index._embed_model if embed_model is None else embed_model

    def for_reader(self, reader: ScopeDirectory) -> AizkScopedRetriever:
        """This retriever for one reader: how a request names its reader.

        A cheap copy sharing the index and settings, made per request and handed to the engine,
        e.g. `RetrieverQueryEngine.from_args(retriever.for_reader(sam), llm=...)`: the reader
        is then part of the engine itself and reaches every thread, task and sub-retriever it
        uses.
        """
        bound = copy.copy(self)
        bound._fixed_reader = require_reader(reader, "for_reader")
        return bound

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        reader = self._reader()
        if reader is None:
            return []
        query = self._query(reader, query_bundle, self._embedding(query_bundle))
        limits = None if self._evidence is None else call_limits(self._evidence, query_bundle)
        return self._answer(reader, query.search, limits)

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        reader = self._reader()
        if reader is None:
            return []
        embedding = query_bundle.embedding
        if embedding is None:
            embedding = await self._embed_model.aget_agg_embedding_from_queries(
                query_bundle.embedding_strs
            )
        query = self._query(reader, query_bundle, embedding)
        limits = None if self._evidence is None else call_limits(self._evidence, query_bundle)
        return await awalk(lambda search: self._answer(reader, search, limits), query.asearch)

    def _answer(
        self, reader: ScopeDirectory, search: Search[NodeWithScore], limits: CallLimits | None
    ) -> list[NodeWithScore]:
        """The call's answer: the reader's best `similarity_top_k`, or, with `evidence`, what
        the postprocessor hands on of the packing, its report and event sent."""
        if self._evidence is None or limits is None:
            fetched = Fetched()
            top = self._top_k
            found = list(islice(self._readable(reader, search, top, fetched, False), top))
            _log_cost(fetched)
            if fetched.several_ids_in_one:
                several = fetched.several_ids_in_one
                logger.warning("%s", several_ids_message(several, self._scopes_key))
            if fetched.capped:
                logger.warning("%s", max_fetch_message(fetched, len(found)))
            return found
        return packed_nodes(self._evidence, self._packed(reader, self._evidence, search, limits))

    def _packed(
        self,
        reader: ScopeDirectory,
        evidence: AizkEvidencePostprocessor,
        search: Search[NodeWithScore],
        limits: CallLimits,
    ) -> Packing[NodeWithScore]:
        """The packing of as many of the reader's nodes as the walk reads, the first page sized
        to its budget, and what the kept ones cost learnt for the next call's first page."""
        fetched = Fetched()
        budget = evidence.budget if limits["budget"] is None else limits["budget"]
        first = self._page_size.first(budget, self._top_k)
        readable = self._readable(reader, search, first, fetched, True)
        packing = run(readable, NODES, evidence, reader=reader, fetched=fetched, **limits)
        _log_cost(fetched)
        self._page_size.learn(packing.tokens_used, len(packing.kept))
        return packing

    def _packing_query(
        self, query_bundle: QueryBundle, embedding: list[float]
    ) -> tuple[ScopeDirectory, AizkEvidencePostprocessor, _StoreQuery | _PostgresQuery]:
        """What `packed_retrieval` needs of a bound retriever with `evidence`, or an error."""
        reader, evidence = self._fixed_reader, self._evidence
        if reader is None or evidence is None:
            raise ValueError(
                "packed_retrieval needs a retriever built with evidence= and bound to a reader "
                "(for_reader)"
            )
        return reader, evidence, self._query(reader, query_bundle, embedding)

    def _reader(self) -> ScopeDirectory | None:
        reader = self._fixed_reader
        if reader is None:
            logger.warning(
                "aizk: scoped retrieval has no reader for this call, so it retrieved nothing "
                "(it never falls back to showing anyone's notes): bind the request's reader "
                "with retriever.for_reader(reader)",
            )
        return reader

    def _embedding(self, query_bundle: QueryBundle) -> list[float]:
        if query_bundle.embedding is not None:
            return query_bundle.embedding
        return self._embed_model.get_agg_embedding_from_queries(query_bundle.embedding_strs)

    def _query(
        self, reader: ScopeDirectory, query_bundle: QueryBundle, embedding: list[float]
    ) -> _StoreQuery | _PostgresQuery:
        scope_ids = frozenset(reader.scopes.keys())
        narrowing: ScopeFilter | None
        if not scope_ids:  # a reader of no scopes may read nothing: the store is not asked
            narrowing = None
        elif self._postgres is not None:
            return _PostgresQuery(self._postgres, embedding, scope_ids)
        elif self._scoped_query is None:
            narrowing = built_in_filter(self._index.vector_store, scope_ids, self._scopes_key)
        else:
            narrowing = self._scoped_query(scope_ids)
            if not isinstance(narrowing, ScopeFilter):
                raise TypeError(
                    "scoped_query must return a ScopeFilter (filters, store_kwargs and/or "
                    f"node_ids), not {type(narrowing).__name__}"
                )
        return _StoreQuery(self._index, narrowing, embedding, query_bundle.query_str)

    def _readable(
        self,
        reader: ScopeDirectory,
        search: Search[NodeWithScore],
        first: int,
        fetched: Fetched,
        to_packer: bool,
    ) -> Iterator[NodeWithScore]:
        """The reader's nodes, best first, fetched from the store as they are read (with those
        of several ids in one string when a packer reads them: see `scope_check`)."""
        check = scope_check(reader, fetched, to_packer=to_packer)
        return readable_pages(
            search,
            lambda scored: check(scopes_of(scored.node.metadata, self._scopes_key)),
            lambda scored: scored.node.node_id,
            first=first,
            most=self._max_fetch,
            fetched=fetched,
        )


def packed_retrieval(
    retriever: AizkScopedRetriever, query: str, budget: int | None = None
) -> Packing[NodeWithScore]:
    """One call of a scoped retriever built with `evidence` and bound to a reader, as the
    packing itself (the kept evidence, its public result and counts), packed to `budget` (within
    the room `fit_to` leaves) or the evidence's own, its report and event sent as the call's
    would be: how the MCP boundary asks for a recall, reading nothing back out of nodes, events
    or traces."""
    bundle = QueryBundle(query)
    reader, evidence, store_query = retriever._packing_query(bundle, retriever._embedding(bundle))
    limits = _within(call_limits(evidence, bundle), budget)
    packing = retriever._packed(reader, evidence, store_query.search, limits)
    tell(evidence, packing)
    return packing


async def apacked_retrieval(
    retriever: AizkScopedRetriever, query: str, budget: int | None = None
) -> Packing[NodeWithScore]:
    """`packed_retrieval`, asking the store through its async API (an async-only store)."""
    bundle = QueryBundle(query)
    embedding = await retriever._embed_model.aget_agg_embedding_from_queries(bundle.embedding_strs)
    reader, evidence, store_query = retriever._packing_query(bundle, embedding)
    limits = _within(call_limits(evidence, bundle), budget)
    packing = await awalk(
        lambda search: retriever._packed(reader, evidence, search, limits), store_query.asearch
    )
    tell(evidence, packing)
    return packing


def _within(limits: CallLimits, budget: int | None) -> CallLimits:
    """A call's limits with its own `budget`, never above the room the limits already set."""
    if budget is None:
        return limits
    room = limits["budget"]
    return CallLimits(
        budget=budget if room is None else min(budget, room), counter=limits["counter"]
    )


def _log_cost(fetched: Fetched) -> None:
    logger.debug(
        "aizk scoped retrieval: %d store calls, %d nodes fetched", fetched.calls, fetched.returned
    )


@dataclass
class _StoreQuery:
    """One call's store query, asked for its best `size` nodes at a time, and what it cost."""

    index: VectorStoreIndex
    narrowing: ScopeFilter | None
    """None: nothing can match, and the store is not asked."""
    embedding: list[float]
    query_str: str

    def search(self, size: int) -> list[NodeWithScore]:
        if self.narrowing is None:
            return []
        store = self.index.vector_store
        with quiet_store_logs(store):
            result = store.query(self._query(size), **self.narrowing.store_kwargs)
        if result.nodes is not None:
            return self._scored(result, result.nodes)
        return self._scored(result, self.index.docstore.get_nodes(self._node_ids(result)))

    async def asearch(self, size: int) -> list[NodeWithScore]:
        if self.narrowing is None:
            return []
        store = self.index.vector_store
        with quiet_store_logs(store):
            result = await store.aquery(self._query(size), **self.narrowing.store_kwargs)
        if result.nodes is not None:
            return self._scored(result, result.nodes)
        nodes = await self.index.docstore.aget_nodes(self._node_ids(result))
        return self._scored(result, nodes)

    def _query(self, size: int) -> VectorStoreQuery:
        assert self.narrowing is not None
        return VectorStoreQuery(
            query_embedding=self.embedding,
            similarity_top_k=size,
            query_str=self.query_str,
            filters=self.narrowing.filters,
            node_ids=None if self.narrowing.node_ids is None else list(self.narrowing.node_ids),
        )

    def _node_ids(self, result: VectorStoreQueryResult) -> list[str]:
        """The nodes of a store that keeps only vectors (FAISS, `SimpleVectorStore`), by the
        ids the index filed them under."""
        return [self.index.index_struct.nodes_dict[each] for each in result.ids or []]

    def _scored(
        self, result: VectorStoreQueryResult, nodes: Sequence[BaseNode]
    ) -> list[NodeWithScore]:
        scores: Sequence[float | None] = result.similarities or [None] * len(nodes)
        return [
            NodeWithScore(node=node, score=score) for node, score in zip(nodes, scores, strict=True)
        ]


@dataclass
class _PostgresQuery:
    """One call's query of a `PGVectorStore`, in SQL of our own (`_postgres`), asked for its
    best `size` nodes at a time."""

    postgres: PGVectorStoreSearch
    embedding: list[float]
    scope_ids: frozenset[str]

    def search(self, size: int) -> list[NodeWithScore]:
        return self.postgres.search(self.embedding, size, self.scope_ids)

    async def asearch(self, size: int) -> list[NodeWithScore]:
        return await self.postgres.asearch(self.embedding, size, self.scope_ids)


def _check_count(name: str, value: object, least: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if value < least:
        raise ValueError(f"{name} must be at least {least}, got {value}")


def _check_evidence(evidence: object, scopes_key: str) -> None:
    """Refuse evidence settings that would pack for another reader or read another key.

    The reader is stated once, on the retriever, and reaches the store query and the packer
    alike; a reader on the postprocessor as well would be a second, possibly different, one.
    """
    if not isinstance(evidence, AizkEvidencePostprocessor):
        raise TypeError(
            f"evidence must be an AizkEvidencePostprocessor, not {type(evidence).__name__}"
        )
    if evidence.reader is not None:
        raise ValueError(
            "evidence has a reader of its own; with scoped retrieval the reader is the "
            "retriever's: pass reader= to AizkScopedRetriever (or use its for_reader) and "
            "leave the postprocessor's reader unset"
        )
    if evidence.scopes_key != scopes_key:
        raise ValueError(
            f"evidence reads scopes from {evidence.scopes_key!r} but the retriever filters on "
            f"{scopes_key!r}; give both the same scopes_key"
        )
