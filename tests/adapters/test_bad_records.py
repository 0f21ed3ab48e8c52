"""One bad record fails no request, and nothing of an item the reader may not read reaches them.

Lists are drawn where each item is Sam's, Ana's, public, or anyone's (scopes that cannot be
read), and well formed or malformed in every way the packer knows. Through every entry point
(the compressor, the postprocessor, the LCEL step, the agent middleware inside a real
`create_agent`, the LlamaIndex memory block), for Sam, for Ana and for a call with no reader:

* the call never raises;
* the block holds exactly the reader's well-formed readable prefix, cut by the budget;
* the counts are the oracle's, and add up;
* the reader is told which of their own items were malformed, by id and position;
* no other item's text, metadata or id appears in the block, the error, a log record (to DEBUG)
  or a trace (LangChain's runs, LlamaIndex's events and spans), except in the retriever's own
  run, which is the framework's: it hands over what it found before the packer sees any of it.
  LlamaIndex records the arguments of the postprocessor's span as it records that retriever's
  result, so they are the framework's record of the handover too; on the recommended path,
  `AizkScopedRetriever`, no span at all, arguments included, carries another reader's item.

The oracle is written from the docs' rules, not from the packer's code.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from math import ceil
from typing import Any
from uuid import NAMESPACE_URL, uuid5

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain.agents import create_agent
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig
from langchain_core.tracers.context import collect_runs
from langchain_core.tracers.schemas import Run
from llama_index.core import StorageContext, VectorStoreIndex
from llama_index.core.base.base_retriever import BaseRetriever as LlamaRetriever
from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.instrumentation import get_dispatcher  # type: ignore[attr-defined]
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events import BaseEvent
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from llama_index.core.vector_stores import SimpleVectorStore
from llama_index.core.vector_stores.types import VectorStoreQuery, VectorStoreQueryResult
from pydantic import Field

from aizk_integrations import PUBLIC, EvidenceError, Scope, ScopeDirectory
from aizk_integrations.langchain import AizkEvidenceCompressor
from aizk_integrations.langchain_agents import AizkMemoryMiddleware
from aizk_integrations.llama_index import (
    AizkEvidencePackedEvent,
    AizkEvidencePostprocessor,
    AizkMemoryBlock,
    AizkScopedRetriever,
    ScopeFilter,
)
from tests.adapters.harness import Adapter
from tests.adapters.recorders import ChatModelCalls
from tests.adapters.tracing import SpanRecorder

QUESTION = "what do I know?"
READERS: dict[str | None, ScopeDirectory | None] = {
    "sam": ScopeDirectory.for_caller("sam", {"org-club": Scope(name="club")}),
    "ana": ScopeDirectory.for_caller("ana", {}),
    None: None,
}
OWNERS = ("sam", "ana", PUBLIC)
LANES = ("sources", "facts", "working_memory", "overview")
SECRET = re.compile(r"[TIMS]\d{3}Q")
"""Every text, id, metadata value and scopes value an item holds carries one of these marks."""

Entry = tuple[object, object]
Flaw = Callable[["Record", str, dict[str, Any]], Entry]

MALFORMED: dict[str, Flaw] = {
    "an unknown lane": lambda r, text, meta: (text, {**meta, "lane": "memory"}),
    "a lane that is not text": lambda r, text, meta: (text, {**meta, "lane": ["facts"]}),
    "bytes for content": lambda r, text, meta: (text.encode(), meta),
    "no content": lambda r, text, meta: (None, meta),
    "a number for content": lambda r, text, meta: (42, meta),
    "a lone surrogate in the text": lambda r, text, meta: (text + "\ud800", meta),
    "an artifact id that is no UUID": lambda r, text, meta: (
        text,
        {**meta, "artifact_id": f"019820a1-{r.mark('S')}"},
    ),
    "a content id that is a number": lambda r, text, meta: (
        text,
        {**meta, "artifact_content_id": 7},
    ),
}
"""Malformed in each way the packer knows, once the reader may read the item."""


def _scopes(value: Callable[[Record], object]) -> Flaw:
    return lambda r, text, meta: (text, {**meta, "scopes": value(r)})


def _line_break(line_break: str) -> Flaw:
    return _scopes(lambda r: f"{r.owner}{line_break}{r.mark('S')}")


LINE_BREAKS = {
    "\\n": "\n",
    "\\r": "\r",
    "U+2028": "\u2028",
    "\\x85": "\x85",
    "\\v": "\v",
    "\\f": "\f",
}

UNREADABLE: dict[str, Flaw] = {
    "a float": _scopes(lambda r: 7.0),
    "True": _scopes(lambda r: True),
    "a dict": _scopes(lambda r: {"note": r.mark("S")}),
    "a nested list": _scopes(lambda r: [[r.owner, r.mark("S")]]),
    "ids in one string": _scopes(lambda r: f"{r.owner},{r.mark('S')}"),
    **{f"a line break {name}": _line_break(brk) for name, brk in LINE_BREAKS.items()},
    "an empty id": _scopes(lambda r: [r.owner, r.mark("S"), ""]),
    "metadata that is None": lambda r, text, meta: (text, None),
    "metadata that is text": lambda r, text, meta: (text, f"scopes={r.owner} {r.mark('S')}"),
    "metadata that is a list": lambda r, text, meta: (text, [r.owner, r.mark("S")]),
}
"""Scopes that cannot be read, so the item may be anyone's: withheld from every reader."""


@dataclass(frozen=True)
class Record:
    """One stored item: whose, how it is spoiled (if it is), its lane and its length."""

    number: int
    owner: str
    flaw: str | None
    lane: str
    filler: int

    def mark(self, kind: str) -> str:
        return f"{kind}{self.number:03d}Q"

    @property
    def identifier(self) -> str:
        return self.mark("I")

    @property
    def text(self) -> str:
        return f"{self.mark('T')} " + "w" * self.filler

    @property
    def entry(self) -> Entry:
        metadata: dict[str, Any] = {"scopes": [self.owner], "lane": self.lane, "n": self.mark("M")}
        if self.number % 2:
            metadata["artifact_id"] = str(uuid5(NAMESPACE_URL, self.mark("A")))
            metadata["artifact_content_id"] = str(uuid5(NAMESPACE_URL, self.mark("C")))
        flaw = {**MALFORMED, **UNREADABLE}.get(self.flaw or "")
        return (self.text, metadata) if flaw is None else flaw(self, self.text, metadata)

    def visible_to(self, reader: str | None) -> bool:
        """Whether the reader may read it: its scopes can be read, and are the reader's or
        public (with no reader, only public items are anyone's to see)."""
        return self.flaw not in UNREADABLE and self.owner in (PUBLIC, reader)

    @property
    def secrets(self) -> tuple[str, ...]:
        return tuple(self.mark(kind) for kind in "TIMS")


@dataclass(frozen=True)
class Expected:
    kept: list[str]
    """The text marks of the kept items, in order."""
    malformed: list[tuple[int, str]]
    """The reader's own malformed items read before the cut: position and id."""
    counts: dict[str, int | bool]
    strict_error: int | None
    """Where a strict call fails: the first of the reader's malformed items, or of the items
    whose scopes cannot be read, before the cut."""


def expected(records: list[Record], reader: str | None, budget: int) -> Expected:
    """Walk in order; withhold what the reader may not read and what is malformed; keep each
    item that fits at ceil(len / 4) + 1 tokens; stop at the first that does not."""
    kept: list[str] = []
    malformed: list[tuple[int, str]] = []
    withheld = unreadable = running = 0
    strict_error = None
    for position, record in enumerate(records):
        if record.flaw in UNREADABLE:
            withheld += 1
            unreadable += 1
            strict_error = position if strict_error is None else strict_error
        elif not record.visible_to(reader):
            withheld += 1
        elif record.flaw in MALFORMED:
            withheld += 1
            malformed.append((position, record.identifier))
            strict_error = position if strict_error is None else strict_error
        elif running + ceil(len(record.text) / 4) + 1 > budget:
            break
        else:
            running += ceil(len(record.text) / 4) + 1
            kept.append(record.mark("T"))
    counts: dict[str, int | bool] = {
        "kept": len(kept),
        "cut_by_budget": len(records) - len(kept) - withheld,
        "withheld": withheld,
        "unreadable": unreadable,
        "malformed": len(malformed),
        "tokens_used": running,
        "budget": budget,
        "max_fetch_reached": False,
    }
    return Expected(kept, malformed, counts, strict_error)


# What every channel carried


class Events(BaseEventHandler):
    seen: list[BaseEvent] = Field(default_factory=list)

    @classmethod
    def class_name(cls) -> str:
        return "Events"

    def handle(self, event: BaseEvent, **kwargs: Any) -> None:
        self.seen.append(event)


class Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@dataclass
class Seen:
    """What one call returned, raised, counted and sent through each channel."""

    block: str = ""
    error: BaseException | None = None
    counts: dict[str, int | bool] | None = None
    warnings: list[str] = field(default_factory=list)
    channels: list[str] = field(default_factory=list)


FRAMEWORK_OWN = ("FixedDocuments", "FixedNodes")
"""The retrievers these tests hand the items over with: their own runs, events and spans are
the framework's record of what they returned, which holds every item by design."""
HANDED = "AizkEvidencePostprocessor._postprocess_nodes-"
"""The postprocessor's span, whose arguments LlamaIndex records: the nodes handed to it, every
item by design, as the retriever's result was. Its result and error are checked all the same."""


def _runs(runs: list[Run]) -> Iterator[Run]:
    for run in runs:
        yield run
        yield from _runs(run.child_runs)


@contextmanager
def observed(every_span: bool = False) -> Iterator[Seen]:
    """Record every channel while the body calls an entry point: LangChain's runs, LlamaIndex's
    events and spans (with `every_span`, the postprocessor's arguments too), and every log
    record down to DEBUG."""
    seen = Seen()
    events, spans, lines = Events(), SpanRecorder(), Lines()
    dispatcher = get_dispatcher()
    dispatcher.add_event_handler(events)
    dispatcher.add_span_handler(spans)
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.DEBUG)
    root.addHandler(lines)
    try:
        with collect_runs() as collected:
            try:
                yield seen
            except Exception as error:  # the law says there is none: kept to be checked
                seen.error = error
    finally:
        root.removeHandler(lines)
        root.setLevel(level)
        dispatcher.event_handlers.remove(events)
        dispatcher.span_handlers.remove(spans)
    for run in _runs(collected.traced_runs):
        if run.name == "AizkEvidenceCompressor" and run.outputs:
            seen.counts = run.outputs["aizk_counts"]
        if run.name not in FRAMEWORK_OWN:
            seen.channels.append(f"{run.inputs!r} {run.outputs!r} {run.error!r} {run.extra!r}")
    for event in events.seen:
        if isinstance(event, AizkEvidencePackedEvent):
            seen.counts = event.counts
        if not event.span_id or not event.span_id.startswith(FRAMEWORK_OWN):
            seen.channels.append(repr(event.model_dump()))
    seen.channels += [
        repr(arguments)
        for id_, arguments in spans.entered
        if not id_.startswith(FRAMEWORK_OWN) and (every_span or not id_.startswith(HANDED))
    ]
    seen.channels += [
        repr(told)
        for id_, told in [*spans.exited, *spans.dropped]
        if not id_.startswith(FRAMEWORK_OWN)
    ]
    seen.channels += [record.getMessage() for record in lines.records]
    seen.warnings = [
        record.getMessage()
        for record in lines.records
        if record.levelno == logging.WARNING and record.name.startswith("aizk_integrations")
    ]
    seen.channels += [seen.block, repr(seen.error)]


# The entry points


def documents(records: list[Record]) -> list[Document]:
    # model_construct, as a store or a deserialiser can hand over what validation would refuse.
    return [
        Document.model_construct(id=record.identifier, page_content=text, metadata=metadata)
        for record in records
        for text, metadata in [record.entry]
    ]


def nodes(records: list[Record]) -> list[NodeWithScore]:
    return [
        NodeWithScore.model_construct(
            node=TextNode.model_construct(id_=record.identifier, text=text, metadata=metadata),
            score=None,
        )
        for record in records
        for text, metadata in [record.entry]
    ]


def config(reader: ScopeDirectory | None) -> RunnableConfig:
    return {"configurable": {"aizk_reader": reader}} if reader is not None else {}


class FixedDocuments(BaseRetriever):
    """A retriever that hands over these documents, as a shared store's plain retriever would."""

    documents: list[Any]

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        return list(self.documents)


class FixedNodes(LlamaRetriever):
    """LlamaIndex's counterpart: hands over these nodes."""

    def __init__(self, found: list[NodeWithScore]) -> None:
        super().__init__()
        self._found = found

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return list(self._found)


class Handing(SimpleVectorStore):
    """A store that answers every query with its first `found` nodes, in order, whatever the
    filter: one queried unfiltered (as FAISS is), handing scoped retrieval every reader's items
    to check again."""

    found: list[Any] = Field(default_factory=list)

    def query(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        page = self.found[: query.similarity_top_k]
        return VectorStoreQueryResult(nodes=page, ids=[node.node_id for node in page])

    async def aquery(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        return self.query(query, **kwargs)


def text_of(returned: list[Any]) -> tuple[str, str]:
    """The returned block's text, and it with its metadata: everything a caller gets back."""
    blocks, metadata = [], []
    for item in returned:
        node = getattr(item, "node", item)
        blocks.append(getattr(node, "page_content", None) or node.get_content())
        metadata.append(repr(node.metadata))
    return "".join(blocks), "\n".join(metadata)


Call = Callable[[list[Record], ScopeDirectory | None, int, bool], str | tuple[str, str]]


def through_the_compressor(
    records: list[Record], reader: ScopeDirectory | None, budget: int, strict: bool
) -> tuple[str, str]:
    packer = AizkEvidenceCompressor(reader=reader, budget=budget, raise_on_malformed=strict)
    return text_of(list(packer.compress_documents(documents(records), QUESTION)))


def through_the_postprocessor(
    records: list[Record], reader: ScopeDirectory | None, budget: int, strict: bool
) -> tuple[str, str]:
    packer = AizkEvidencePostprocessor(reader=reader, budget=budget, raise_on_malformed=strict)
    return text_of(packer.postprocess_nodes(nodes(records), query_str=QUESTION))


def through_the_lcel_step(
    records: list[Record], reader: ScopeDirectory | None, budget: int, strict: bool
) -> str:
    step = AizkEvidenceCompressor(budget=budget, raise_on_malformed=strict).as_runnable()
    return step.invoke(documents(records), config=config(reader))


def through_the_agent_middleware(
    records: list[Record], reader: ScopeDirectory | None, budget: int, strict: bool
) -> str:
    retriever = FixedDocuments(documents=documents(records))
    packer = AizkEvidenceCompressor(budget=budget, raise_on_malformed=strict)
    model = GenericFakeChatModel(messages=iter([AIMessage("ok")]))
    agent = create_agent(model, [], middleware=[AizkMemoryMiddleware(retriever, packer)])
    calls = ChatModelCalls()
    request: RunnableConfig = {**config(reader), "callbacks": [calls]}
    agent.invoke({"messages": [HumanMessage(QUESTION)]}, request)
    [sent] = calls.calls
    return "".join(str(m.content) for m in sent if m.name == "aizk_evidence")


def through_the_memory_block(
    records: list[Record], reader: ScopeDirectory | None, budget: int, strict: bool
) -> str:
    evidence = AizkEvidencePostprocessor(budget=budget, raise_on_malformed=strict)
    if reader is not None:
        evidence = evidence.for_reader(reader)
    block = AizkMemoryBlock(retriever=FixedNodes(nodes(records)), evidence=evidence)
    asked = [ChatMessage(role=MessageRole.USER, content=QUESTION)]
    return asyncio.run(block.aget(asked))


def through_scoped_retrieval(
    records: list[Record], reader: ScopeDirectory | None, budget: int, strict: bool
) -> tuple[str, str]:
    store = Handing()  # SimpleVectorStore's constructor drops keywords it does not know
    store.found = [scored.node for scored in nodes(records)]
    index = VectorStoreIndex(
        [],
        storage_context=StorageContext.from_defaults(vector_store=store),
        embed_model=MockEmbedding(embed_dim=8),
    )
    evidence = AizkEvidencePostprocessor(budget=budget, raise_on_malformed=strict)
    retriever = AizkScopedRetriever(index, evidence=evidence, scoped_query=lambda _: ScopeFilter())
    assert reader is not None  # with none, scoped retrieval returns nothing at all
    bound = retriever.for_reader(reader)
    found = bound.retrieve(QUESTION) if budget % 2 else asyncio.run(bound.aretrieve(QUESTION))
    return text_of(found)


@dataclass(frozen=True)
class EntryPoint:
    call: Call
    name: Callable[[int, str], str]
    """How a warning or an error names the reader's own item at a position."""
    position: Callable[[int], str]
    """How an error names an item whose scopes cannot be read: by position alone."""


LANGCHAIN_NAME = "documents[{}] (id '{}')".format
LLAMA_INDEX_NAME = "node '{1}' (position {0})".format
ENTRY_POINTS = {
    "compressor": EntryPoint(through_the_compressor, LANGCHAIN_NAME, "documents[{}]".format),
    "postprocessor": EntryPoint(through_the_postprocessor, LLAMA_INDEX_NAME, "nodes[{}]".format),
    "LCEL step": EntryPoint(through_the_lcel_step, LANGCHAIN_NAME, "documents[{}]".format),
    "agent middleware": EntryPoint(
        through_the_agent_middleware, LANGCHAIN_NAME, "documents[{}]".format
    ),
    "memory block": EntryPoint(through_the_memory_block, LLAMA_INDEX_NAME, "nodes[{}]".format),
}

records = st.lists(
    st.tuples(
        st.sampled_from(OWNERS),
        st.one_of(
            st.none(), st.sampled_from(sorted(MALFORMED)), st.sampled_from(sorted(UNREADABLE))
        ),
        st.sampled_from(LANES),
        st.integers(min_value=0, max_value=40),
    ),
    max_size=10,
).map(lambda drawn: [Record(number, *each) for number, each in enumerate(drawn)])

laws = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def call(
    entry: EntryPoint,
    records: list[Record],
    reader: str | None,
    budget: int,
    strict: bool,
    every_span: bool = False,
) -> Seen:
    with observed(every_span) as seen:
        returned = entry.call(records, READERS[reader], budget, strict)
        seen.block, metadata = returned if isinstance(returned, tuple) else (returned, "")
        seen.channels.append(metadata)
    return seen


def leaked(seen: Seen, records: list[Record], reader: str | None) -> list[str]:
    """The marks of items the reader may not read that some channel carried."""
    foreign = {mark for r in records if not r.visible_to(reader) for mark in r.secrets}
    return sorted({mark for text in seen.channels for mark in SECRET.findall(text)} & foreign)


@pytest.mark.parametrize("entry", ENTRY_POINTS.values(), ids=ENTRY_POINTS.keys())
@laws
@given(records=records, budget=st.integers(min_value=1, max_value=80))
def test_every_reader_gets_their_well_formed_prefix_told_of_their_bad_records_and_nothing_else(
    entry: EntryPoint, records: list[Record], budget: int
) -> None:
    for reader in READERS:
        seen = call(entry, records, reader, budget, strict=False)
        oracle = expected(records, reader, budget)
        assert seen.error is None
        assert re.findall(r"T\d{3}Q", seen.block) == oracle.kept
        assert seen.counts == oracle.counts
        told = " ".join(seen.warnings)
        assert [
            entry.name(*item) for item in oracle.malformed if entry.name(*item) not in told
        ] == []
        assert set(re.findall(r"I\d{3}Q", told)) == {id_ for _, id_ in oracle.malformed}
        assert leaked(seen, records, reader) == []


@laws
@given(
    records=records,
    budget=st.integers(min_value=1, max_value=80),
)
def test_through_scoped_retrieval_no_channel_spans_arguments_included_carries_anothers_item(
    records: list[Record], budget: int
) -> None:
    entry = EntryPoint(through_scoped_retrieval, LLAMA_INDEX_NAME, "nodes[{}]".format)
    for reader in ("sam", "ana"):
        seen = call(entry, records, reader, budget, strict=False, every_span=True)
        oracle = expected(records, reader, budget)
        assert seen.error is None
        assert re.findall(r"T\d{3}Q", seen.block) == oracle.kept
        assert seen.counts is not None
        assert seen.counts["kept"] == oracle.counts["kept"]
        assert leaked(seen, records, reader) == []


STRICT = {name: ENTRY_POINTS[name] for name in ("compressor", "postprocessor", "LCEL step")}


@pytest.mark.parametrize("entry", STRICT.values(), ids=STRICT.keys())
@laws
@given(records=records, budget=st.integers(min_value=1, max_value=80))
def test_a_strict_call_fails_on_the_readers_first_bad_record_and_quotes_nobody_elses(
    entry: EntryPoint, records: list[Record], budget: int
) -> None:
    for reader in READERS:
        seen = call(entry, records, reader, budget, strict=True)
        oracle = expected(records, reader, budget)
        if oracle.strict_error is None:
            assert seen.error is None
            assert re.findall(r"T\d{3}Q", seen.block) == oracle.kept
        else:
            at = records[oracle.strict_error]
            named = (
                entry.position(oracle.strict_error)
                if at.flaw in UNREADABLE
                else entry.name(oracle.strict_error, at.identifier)
            )
            assert isinstance(seen.error, EvidenceError)
            assert str(seen.error).startswith(f"{named}: ")
        assert leaked(seen, records, reader) == []


@pytest.mark.parametrize("line_break", LINE_BREAKS.values(), ids=LINE_BREAKS.keys())
def test_an_item_whose_scope_id_holds_any_line_break_is_withheld_as_unreadable(
    adapter: Adapter, line_break: str
) -> None:
    sam = READERS["sam"]
    for scopes in (f"sam{line_break}org-club", ["sam", f"org{line_break}club"]):
        answer = adapter.run(
            [("fine", {"scopes": "sam"}), ("broken", {"scopes": scopes})], reader=sam
        )
        assert "broken" not in answer.block
        assert (answer.counts["kept"], answer.counts["unreadable"]) == (1, 1)
