"""The LlamaIndex adapter: a node postprocessor that hands the prompt one evidence block.

Put `AizkEvidencePostprocessor` last in `node_postprocessors`, after any reranker: it reads the
nodes in the order it is given, withholds what the reader may not see, keeps the longest prefix
that fits the budget and replaces the list with a single node whose text is the markdown block.
Its settings and rules are the ones the LangChain adapter has, written once, so the two behave
the same.
"""

from __future__ import annotations

import inspect
import logging
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from hashlib import sha1
from typing import Any, TypeVar
from uuid import NAMESPACE_URL, uuid5

from pydantic import ConfigDict, Field, PrivateAttr, model_validator

from aizk_integrations._errors import ItemError, naming_items, quoted
from aizk_integrations._packing import Packing
from aizk_integrations._result import kept_item_metadata
from aizk_integrations._rows import Row
from aizk_integrations._scopes import ScopeDirectory
from aizk_integrations._settings import PackingSettings
from aizk_integrations.counters import counter_from_llama_index

try:
    from llama_index.core.base.base_retriever import BaseRetriever
    from llama_index.core.base.llms.types import ChatMessage, MessageRole
    from llama_index.core.callbacks import CallbackManager
    from llama_index.core.chat_engine import CondensePlusContextChatEngine, ContextChatEngine
    from llama_index.core.chat_engine.utils import get_response_synthesizer
    from llama_index.core.indices.prompt_helper import DEFAULT_PADDING, PromptHelper
    from llama_index.core.instrumentation import (  # type: ignore[attr-defined]  # the
        get_dispatcher,  # documented path; the name lives in llama_index_instrumentation
    )
    from llama_index.core.instrumentation.events import BaseEvent
    from llama_index.core.llms import LLM
    from llama_index.core.memory import BaseMemoryBlock
    from llama_index.core.postprocessor.types import BaseNodePostprocessor
    from llama_index.core.prompts import PromptTemplate
    from llama_index.core.prompts.default_prompt_selectors import (
        DEFAULT_REFINE_PROMPT_SEL,
        DEFAULT_TEXT_QA_PROMPT_SEL,
        DEFAULT_TREE_SUMMARIZE_PROMPT_SEL,
    )
    from llama_index.core.prompts.prompt_utils import get_biggest_prompt
    from llama_index.core.response_synthesizers import CompactAndRefine
    from llama_index.core.response_synthesizers.refine import DEFAULT_RESPONSE_PADDING_SIZE
    from llama_index.core.schema import (
        BaseNode,
        ImageNode,
        MetadataMode,
        Node,
        NodeWithScore,
        QueryBundle,
        RelatedNodeInfo,
        TextNode,
    )
    from llama_index.core.utils import get_tokenizer
except ImportError as error:
    raise ImportError(
        "aizk_integrations.llama_index needs LlamaIndex; install it with "
        'pip install "aizk-integrations[llama-index]"'
    ) from error

__all__ = [
    "AizkCondensePlusContextChatEngine",
    "AizkContextChatEngine",
    "AizkEvidencePacked",
    "AizkEvidencePostprocessor",
    "AizkMemoryBlock",
    "reading_as",
]

logger = logging.getLogger(__name__)
_dispatcher = get_dispatcher(__name__)

_call_reader: ContextVar[ScopeDirectory | None] = ContextVar("aizk_call_reader", default=None)
_PER_REQUEST = (
    "run the request inside `with reading_as(directory):` (a plain thread does not inherit it: "
    "submit `contextvars.copy_context().run` with the call to carry it)"
)


@contextmanager
def reading_as(directory: ScopeDirectory) -> Iterator[None]:
    """Pack every query made inside this block for `directory`'s reader.

    LlamaIndex passes a postprocessor no per-call config, so one shared query engine learns the
    reader of a request from the context instead. A context variable is private to its thread
    and to each asyncio task (a task copies the context it was created in), so concurrent
    requests for different readers never see each other's evidence. Like LangChain's per-call
    directory, it switches readers but cannot switch authorization off.
    """
    if not isinstance(directory, ScopeDirectory):
        raise TypeError(
            "reading_as needs a ScopeDirectory (a request may switch readers but not switch "
            f"authorization off), not {type(directory).__name__}"
        )
    token = _call_reader.set(directory)
    try:
        yield
    finally:
        _call_reader.reset(token)


Method = TypeVar("Method", bound=Callable[..., Any])


def _signature_computed_once(method: Method) -> Method:
    """Give `method` its signature up front, for LlamaIndex's instrumentation span.

    LlamaIndex wraps `_postprocess_nodes` in a span whose wrapper calls `inspect.signature` on
    every call, which cost about a fifth of the whole postprocessor. `inspect.signature`
    returns a function's `__signature__` when it has one, so it is computed once here. The span,
    its id and the bound arguments tracing handlers receive stay exactly as they were.
    """
    setattr(method, "__signature__", inspect.signature(method))  # noqa: B010  # mypy: no attr
    return method


_ENGINE_PROMPTS = (
    (DEFAULT_TEXT_QA_PROMPT_SEL, DEFAULT_PADDING),
    (DEFAULT_TREE_SUMMARIZE_PROMPT_SEL, DEFAULT_PADDING),
    (
        get_biggest_prompt([DEFAULT_TEXT_QA_PROMPT_SEL, DEFAULT_REFINE_PROMPT_SEL]),
        DEFAULT_RESPONSE_PADDING_SIZE,
    ),
)
"""The prompts LlamaIndex's response modes put the context into, with the padding each packs
with: question-answering (simple_summarize, accumulate), tree-summarize, and the bigger of
question-answering and refine with room for the answer (refine, and compact, the default)."""
_NOT_SERIALIZED = ("token_counter", "fit_to")
"""Settings that hold live objects: `to_dict` marks them, `from_dict` needs them passed again."""
_RECALL_KEY = "aizk_recall"
_COUNTS_KEY = "aizk_counts"
_BLOCK_ID_NAMESPACE = uuid5(NAMESPACE_URL, "aizk://integrations/llama-index/evidence-block")
"""Namespace of the block node's content-derived id; only its being constant matters."""


class AizkEvidencePacked(BaseEvent):
    """What one call of the postprocessor kept and left out, sent inside its span.

    Tracing handlers see it even when nothing was kept and the query got no context at all,
    which is when "why is my context empty?" gets asked.
    """

    counts: dict[str, int] = Field(
        description="kept, cut_by_budget, withheld, tokens_used, budget: no lanes, ids or text."
    )

    @classmethod
    def class_name(cls) -> str:
        return "AizkEvidencePacked"


class AizkEvidencePostprocessor(PackingSettings, BaseNodePostprocessor):
    """Turn retrieved nodes, already in merit order, into the one evidence block a prompt needs.

    Configured and validated like every aizk adapter (see `PackingSettings`). `token_counter` is
    a Python callable, so `to_dict`/`to_json` leave it out: pass it again to `from_dict`, or the
    restored postprocessor counts with `chars_per_token`.

    The settings cannot be reassigned after construction (LlamaIndex's `callback_manager` still
    can, because query engines set it). The instance keeps no per-call state, so one instance can
    serve concurrent queries: the reader is `directory`, or the one named by `reading_as` for
    the request in hand.
    """

    # Unknown settings are refused by PackingSettings' own `extra="forbid"`.
    model_config = ConfigDict(arbitrary_types_allowed=True)

    return_nodes: bool = Field(
        default=False,
        strict=True,
        description=(
            "Return the kept, authorized nodes (new nodes with public metadata) instead of one "
            "block node, for pipelines that format nodes themselves."
        ),
    )
    fit_to: LLM | None = Field(
        default=None,
        exclude=True,
        description=(
            "Size each call's budget to the room this LLM's context window leaves for the "
            "block under LlamaIndex's default prompts and the query, as its own prompt helper "
            "works it out for every response mode, so the synthesizer sends the block whole in "
            "one call. Needs budget_covers='block'; counts with LlamaIndex's tokenizer unless "
            "token_counter says otherwise."
        ),
    )

    @model_validator(mode="after")
    def _fitting_counts_the_whole_block(self) -> AizkEvidencePostprocessor:
        if self.fit_to is not None and self.budget_covers != "block":
            raise ValueError(
                "fit_to promises the block fits the room the model leaves, which only a budget "
                "on the whole block can keep: set budget_covers='block'"
            )
        return self

    @classmethod
    def class_name(cls) -> str:
        return "AizkEvidencePostprocessor"

    def __setattr__(self, name: str, value: Any) -> None:
        # Pydantic would accept `budget = 10**6` silently, and even with validate_assignment it
        # keeps the bad value when the cross-field check fails. A shared instance must not change
        # rules under a concurrent query, so the settings are fixed once validated.
        self._refuse_change(name)
        super().__setattr__(name, value)

    def __delattr__(self, name: str) -> None:
        self._refuse_change(name)
        super().__delattr__(name)

    def _refuse_change(self, name: str) -> None:
        if name in type(self).model_fields and name != "callback_manager":
            raise AttributeError(
                f"{name} is fixed when the postprocessor is built; create a new "
                f"{type(self).__name__} with the setting you want"
            )

    @_signature_computed_once
    def _postprocess_nodes(
        self,
        nodes: list[NodeWithScore],
        query_bundle: QueryBundle | None = None,
    ) -> list[NodeWithScore]:
        """Pack the nodes in the order given; the query plays no part in what is kept."""
        budget = counter = None
        if self.fit_to is not None:
            room = self._room(query_bundle)
            if room < 1:  # packed all the same, to a budget of 0: the counts still travel
                logger.warning(
                    "aizk: %s's context window leaves no room for evidence under this "
                    "engine's prompt and query; the query gets none",
                    type(self.fit_to).__name__,
                )
            budget = min(room, self.budget)
            counter = self.token_counter or counter_from_llama_index(get_tokenizer())
        with naming_items(lambda position, authorized: _name(nodes, position, authorized)):
            packing = self._pack(
                nodes,
                _metadata_of,
                _text_of,
                expected="a list of NodeWithScore",
                budget=budget,
                reader=_call_reader.get(),
                counter=counter,
            )
        self._report(packing, logger, _PER_REQUEST)
        _dispatcher.event(AizkEvidencePacked(counts=packing.counts))
        if not packing.kept:
            return []
        if self.return_nodes:
            return [self._kept_node(nodes[row.position], row) for row in packing.kept]
        return [_block_node(packing)]

    def _kept_node(self, original: NodeWithScore, row: Row) -> NodeWithScore:
        """A new node for one kept item: same id, text and score, public metadata only.

        The original metadata (lane, scope ids, artifact ids, anything else the store attached)
        is replaced by the public evidence fields (`provenance`, `scope_names`,
        `resource_uri`), so a pipeline that prints node metadata to the model shows provenance
        and scope names, never lanes or scope ids. The `citation_keys` are copied too, hidden
        from the LLM and embedding views, and so is where the node came from (its
        relationships, without their metadata).
        """
        metadata = kept_item_metadata(row)
        source = original.node
        citations = [
            key for key in self.citation_keys if key in source.metadata and key not in metadata
        ]
        metadata.update((key, source.metadata[key]) for key in citations)
        relationships = {
            kind: [_bare(each) for each in info] if isinstance(info, list) else _bare(info)
            for kind, info in source.relationships.items()
        }
        node = TextNode(
            id_=source.node_id,
            text=row.text,
            metadata=metadata,
            excluded_llm_metadata_keys=citations,
            excluded_embed_metadata_keys=citations,
            relationships=relationships,
        )
        return NodeWithScore(node=node, score=original.score)

    def _room(self, query_bundle: QueryBundle | None) -> int:
        """Tokens the model leaves for the block, whichever response mode the engine uses.

        Worked out by LlamaIndex's own `PromptHelper`, as its response synthesizers do when
        they decide whether the context needs splitting across calls: the window, less the
        prompt with this query in it, less the room reserved for the answer, less the mode's
        padding (refine and compact keep 500 tokens for the answer they refine).
        """
        assert self.fit_to is not None
        helper = PromptHelper.from_llm_metadata(self.fit_to.metadata)
        query = query_bundle.query_str if query_bundle is not None else ""
        room = []
        for prompt, padding in _ENGINE_PROMPTS:
            filled = prompt.partial_format(query_str=query)
            try:
                splitter = helper.get_text_splitter_given_prompt(
                    filled, padding=padding, llm=self.fit_to
                )
            except ValueError:  # LlamaIndex's word for "no room at all"
                return 0
            room.append(splitter.chunk_size)
        return min(room)

    def to_dict(self, **kwargs: Any) -> dict[str, Any]:
        """The settings as a dict; a token counter or a `fit_to` LLM, being live objects, is
        marked rather than written."""
        data = super().to_dict(**kwargs)
        for name in _NOT_SERIALIZED:
            if getattr(self, name) is not None:
                data[f"{name}_not_serialized"] = True
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any], **kwargs: Any) -> AizkEvidencePostprocessor:
        """Rebuild from `to_dict`; a postprocessor that had a token counter or a `fit_to` LLM
        needs it again.

        Restoring it without one would count differently, or stop fitting the model's window,
        without a word, so it is an error.
        """
        data = dict(data)
        for name in _NOT_SERIALIZED:
            if data.pop(f"{name}_not_serialized", False) and kwargs.get(name) is None:
                raise ValueError(
                    f"this postprocessor was saved with a {name}, which is a live object and "
                    f"is not serialized; pass it again: "
                    f"AizkEvidencePostprocessor.from_dict(data, {name}=...)"
                )
        restored: AizkEvidencePostprocessor = super().from_dict(data, **kwargs)
        return restored

    async def _apostprocess_nodes(
        self,
        nodes: list[NodeWithScore],
        query_bundle: QueryBundle | None = None,
    ) -> list[NodeWithScore]:
        """The sync path, run in place: packing never waits on I/O, so a thread buys nothing."""
        return self._postprocess_nodes(nodes, query_bundle)


def _metadata_of(scored: object, position: int) -> object:
    if not isinstance(scored, NodeWithScore):
        hint = " (wrap each node: NodeWithScore(node=node))" if isinstance(scored, BaseNode) else ""
        raise ItemError(
            position,
            f"expected a NodeWithScore, got {type(scored).__name__}{hint}",
            authorized=False,
        )
    return scored.node.metadata


def _text_of(scored: NodeWithScore, position: int) -> object:
    """A node's text without its metadata, refusing media that has no text."""
    node = scored.node
    # A plain TextNode's content without metadata is its `text` (TextNode.get_content returns
    # it for MetadataMode.NONE), and asking for it would first format the metadata.
    text = node.text if type(node) is TextNode else node.get_content(MetadataMode.NONE)
    if text == "" and _carries_media(node):
        raise ItemError(
            position,
            f"content is a {type(node).__name__} with media but no text; evidence must be text "
            "(give the node text, or filter media nodes out before this postprocessor)",
        )
    return text


def _bare(info: RelatedNodeInfo) -> RelatedNodeInfo:
    """Where a node came from, without the related node's metadata (which may name scopes)."""
    return RelatedNodeInfo(node_id=info.node_id, node_type=info.node_type, hash=info.hash)


def _carries_media(node: BaseNode) -> bool:
    """Whether an empty-text node is an image, audio or video rather than an empty text."""
    if isinstance(node, ImageNode):
        return any((node.image, node.image_path, node.image_url))
    if isinstance(node, Node):
        return any((node.image_resource, node.audio_resource, node.video_resource))
    return False


def _name(nodes: Sequence[object], position: int, authorized: bool) -> str:
    """How an error names a node: its id once it is known to be readable, and its index."""
    scored = nodes[position]
    if not authorized or not isinstance(scored, NodeWithScore):
        return f"nodes[{position}]"
    return f"node {quoted(scored.node.node_id)} (position {position})"


def _content_id(content: str) -> str:
    """`str(uuid5(_BLOCK_ID_NAMESPACE, content))`, without building a `UUID` on the way.

    The same SHA-1 with the version and variant bits set by hand, so the ids are exactly
    uuid5's (a test holds them equal); the `UUID` object cost a few microseconds per call.
    """
    digest = sha1(_BLOCK_ID_NAMESPACE.bytes + content.encode("utf-8")).hexdigest()
    variant = "89ab"[int(digest[16], 16) & 0x3]
    return f"{digest[:8]}-{digest[8:12]}-5{digest[13:16]}-{variant}{digest[17:20]}-{digest[20:32]}"


def _block_node(packing: Packing) -> NodeWithScore:
    """The single node the prompt receives: the block as text, the public JSON out of view.

    The metadata keys are excluded from both the LLM and embedding views, and the text template
    is only the content, so `get_content` in any of those modes is exactly the block even if a
    later step adds metadata. The id is derived from the block and the counts, so equal outputs
    are equal nodes (the sync and async paths, a retried query); the public JSON adds nothing
    the block does not already say, so hashing it too would only cost time. The block has no
    single score, so none.
    """
    block = packing.block()
    counts = packing.counts
    metadata: dict[str, Any] = {
        _RECALL_KEY: packing.public_json(),
        _COUNTS_KEY: counts,
    }
    node = TextNode(
        id_=_content_id(f"{sorted(counts.items())}\n{block}"),
        text=block,
        metadata=metadata,
        excluded_llm_metadata_keys=list(metadata),
        excluded_embed_metadata_keys=list(metadata),
        text_template="{content}",
    )
    return NodeWithScore(node=node, score=None)


class AizkContextChatEngine(ContextChatEngine):
    """LlamaIndex's context chat engine, with the retrieved context in the user's turn.

    `ContextChatEngine` puts the context into the system message, the turn a model trusts
    most, so evidence there borrows authority it should not have. This engine keeps the system
    message for the app's own instructions (`system_prompt`) and puts the context, through the
    same `context_template`, at the head of the latest user message. Built like its parent:
    `AizkContextChatEngine.from_defaults(retriever=..., llm=..., node_postprocessors=[...])`.
    The memory keeps the user's words alone, so earlier turns carry no old blocks.
    """

    def _get_response_synthesizer(
        self, chat_history: list[ChatMessage], streaming: bool = False
    ) -> CompactAndRefine:
        return _context_in_user_turn(
            self._llm,
            self.callback_manager,
            self._prefix_messages,
            chat_history,
            (self._context_template, self._context_refine_template),
            streaming,
        )


class AizkCondensePlusContextChatEngine(CondensePlusContextChatEngine):
    """LlamaIndex's condense-plus-context chat engine, with the retrieved context in the user's
    turn.

    Like `AizkContextChatEngine`: the system message keeps only `system_prompt`, and the
    context, laid out by `context_prompt`, heads the latest user message, followed by the
    (condensed) question. Built like its parent, with `from_defaults`.
    """

    def _get_response_synthesizer(
        self, chat_history: list[ChatMessage], streaming: bool = False
    ) -> CompactAndRefine:
        instructions = []
        if self._system_prompt:
            role = self._llm.metadata.system_role
            instructions.append(ChatMessage(role=role, content=self._system_prompt))
        return _context_in_user_turn(
            self._llm,
            self.callback_manager,
            instructions,
            chat_history,
            (self._context_prompt_template, self._context_refine_prompt_template),
            streaming,
        )


def _context_in_user_turn(
    llm: LLM,
    callback_manager: CallbackManager,
    instructions: list[ChatMessage],
    chat_history: list[ChatMessage],
    templates: tuple[PromptTemplate, PromptTemplate],
    streaming: bool,
) -> CompactAndRefine:
    """The synthesizer a context chat engine answers with: its instructions, the history, then
    one user turn holding the context (as the engine's template lays it out) and the question.
    """
    qa, refine = templates
    return get_response_synthesizer(
        llm,
        callback_manager,
        [*instructions, *chat_history, _user_turn(qa)],
        [*instructions, *chat_history, _user_turn(refine)],
        streaming,
        qa_function_mappings=qa.function_mappings,
        refine_function_mappings=refine.function_mappings,
    )


def _user_turn(context_template: PromptTemplate) -> ChatMessage:
    """The latest user message: the context (as the template lays it out), then the question."""
    return ChatMessage(role=MessageRole.USER, content=context_template.template + "\n{query_str}")


class AizkMemoryBlock(BaseMemoryBlock[str]):
    """Recalled evidence as a memory block of LlamaIndex's `Memory`, for agents and chat.

    On every read of the memory it retrieves for the latest user message from any retriever
    and packs what came back with `evidence`, an `AizkEvidencePostprocessor` (the same settings
    and code as in a query engine: budget, reader, counts), so the block the agent sees holds
    only what the reader of the request may see: the one named by `reading_as` around the
    agent's run, else `evidence.directory`. Build the memory with
    `insert_method=InsertMethod.USER` to keep the block out of the system prompt.

    The memory's token limit decides the rest: when the chat history and the memory's blocks
    do not fit, it asks this block, by `priority`, to shrink, and the block packs the same
    retrieval again within what is left, a shorter prefix in the same merit order.
    """

    name: str = Field(default="evidence", description="The block's name in the memory.")
    priority: int = Field(
        default=1, description="Truncation order in the memory (0: never truncated)."
    )
    accept_short_term_memory: bool = Field(
        default=False, description="Evidence is recalled, not stored: no messages are taken."
    )
    retriever: BaseRetriever = Field(description="Retrieves, and ranks, for the latest message.")
    evidence: AizkEvidencePostprocessor = Field(
        default_factory=lambda: AizkEvidencePostprocessor(budget_covers="block"),
        description="Packs what was retrieved; its budget is the block's most.",
    )
    _recalled: OrderedDict[str, list[NodeWithScore]] = PrivateAttr(default_factory=OrderedDict)
    """The retrievals behind the latest blocks, by block, for `atruncate`: a few, so one block
    shared by concurrent sessions still finds each session's."""

    async def _aget(self, messages: list[ChatMessage] | None = None, **block_kwargs: Any) -> str:
        question = _latest_user_text(messages or [])
        if not question.strip():
            return ""
        nodes = await self.retriever.aretrieve(question)
        packed = await self.evidence.apostprocess_nodes(nodes, query_str=question)
        if not packed:
            return ""
        block = packed[0].node.get_content()
        self._recalled[block] = nodes  # what `atruncate` packs again for this block
        self._recalled.move_to_end(block)
        while len(self._recalled) > _RECALLS_KEPT:
            self._recalled.popitem(last=False)
        return block

    async def _aput(self, messages: list[ChatMessage]) -> None:
        """Nothing to store: the evidence comes from the retriever."""

    async def atruncate(self, content: str, tokens_to_truncate: int) -> str | None:
        """The same retrieval packed again, `tokens_to_truncate` tokens shorter."""
        nodes = self._recalled.get(content)
        counter = self.evidence.token_counter or counter_from_llama_index(get_tokenizer())
        budget = counter(content) - tokens_to_truncate
        if nodes is None or budget < 1:
            return None
        # Packed again in the tokens the block was measured in, so it shrinks by what was asked.
        smaller = self.evidence.model_copy(
            update={"budget": min(budget, self.evidence.budget), "token_counter": counter}
        )
        packed = await smaller.apostprocess_nodes(nodes)
        return packed[0].node.get_content() if packed else None


_RECALLS_KEPT = 32
"""How many recent retrievals a memory block keeps for shrinking their blocks."""


def _latest_user_text(messages: list[ChatMessage]) -> str:
    for message in reversed(messages):
        if message.role == MessageRole.USER:
            return message.content or ""
    return ""
