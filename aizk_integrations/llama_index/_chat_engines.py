"""Chat engines that answer in one LLM call, with the whole evidence block in the user's turn.

LlamaIndex's context chat engines put the retrieved context into the system message, the turn
a model trusts most; format the whole conversation again as a template, so an earlier answer
quoting `{context_str}` receives the new block; split a block too big for the window over
several LLM calls; and hold one memory, so one engine shared by many readers shows each the
last reader's conversation. These two are built on LlamaIndex's public `BaseChatEngine`
instead: each call finds its reader and their memory, packs the block to the room the window
leaves after the instructions, the history and the question, and sends the LLM exactly the
messages it should read.
"""

from __future__ import annotations

import asyncio
import copy
import logging
from collections.abc import Sequence
from typing import NamedTuple, Never, Self

from llama_index.core import Settings
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.llms.generic_utils import messages_to_history_str
from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.chat_engine.condense_plus_context import (
    DEFAULT_CONDENSE_PROMPT_TEMPLATE,
    DEFAULT_CONTEXT_PROMPT_TEMPLATE,
)
from llama_index.core.chat_engine.context import DEFAULT_CONTEXT_TEMPLATE
from llama_index.core.chat_engine.types import (
    AgentChatResponse,
    BaseChatEngine,
    StreamingAgentChatResponse,
)
from llama_index.core.llms import LLM
from llama_index.core.memory import BaseMemory, ChatMemoryBuffer
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.prompts import PromptTemplate
from llama_index.core.schema import NodeWithScore, QueryBundle
from llama_index.core.tools import ToolOutput
from llama_index.core.types import Thread

from aizk_integrations._run.settings import refuse_unknown_keywords
from aizk_integrations._scopes.directory import ScopeDirectory
from aizk_integrations._tokens import TokenCounter
from aizk_integrations.counters import counter_from_llama_index
from aizk_integrations.llama_index._chat_prompt import ChatPrompt, chat_prompt, window_of
from aizk_integrations.llama_index._conversations import Conversations
from aizk_integrations.llama_index._postprocessor import AizkEvidencePostprocessor
from aizk_integrations.llama_index._scoped import AizkScopedRetriever

logger = logging.getLogger("aizk_integrations.llama_index")


class _EvidenceChatEngine(BaseChatEngine):
    """What both engines do on every call: find the reader and their memory, lay the prompt out
    in the window, retrieve and pack to the room left, and answer in one LLM call.

    The engine keeps no per-call state, so one engine serves concurrent readers; each reader's
    conversation is their own memory (see `Conversations`).
    """

    def __init__(
        self,
        *,
        retriever: BaseRetriever,
        llm: LLM,
        node_postprocessors: Sequence[BaseNodePostprocessor],
        context_template: PromptTemplate,
        instructions: Sequence[ChatMessage],
        memory: BaseMemory | None,
    ) -> None:
        before, evidence = _checked_postprocessors(type(self).__name__, node_postprocessors)
        self._retriever = retriever
        self._llm = llm
        self._before = before
        self._evidence = evidence
        self._template = context_template
        self._instructions = tuple(instructions)
        self._conversations = Conversations(
            type(self).__name__, lambda: ChatMemoryBuffer.from_defaults(llm=llm), memory
        )

    def for_reader(self, reader: ScopeDirectory) -> Self:
        """This engine for one reader: how a request names its reader.

        A cheap copy, made per request, whose evidence postprocessor (and retriever, when it is
        an `AizkScopedRetriever`) is bound to `reader` and which continues that reader's
        conversation: the memories are the engine's, shared by every copy. The reader is then
        part of the engine, whatever thread, task or stream runs it.
        """
        evidence = self._evidence.for_reader(reader)  # which refuses anything else
        bound = copy.copy(self)
        bound._evidence = evidence
        if isinstance(self._retriever, AizkScopedRetriever):
            bound._retriever = self._retriever.for_reader(reader)
        return bound

    def chat(
        self, message: str, chat_history: list[ChatMessage] | None = None
    ) -> AgentChatResponse:
        turn = self._turn(message, chat_history)
        answer = self._llm.chat(turn.messages).message.content or ""
        turn.memory.put(ChatMessage(role=MessageRole.USER, content=message))
        turn.memory.put(ChatMessage(role=MessageRole.ASSISTANT, content=answer))
        return AgentChatResponse(response=answer, sources=[turn.source], source_nodes=turn.nodes)

    async def achat(
        self, message: str, chat_history: list[ChatMessage] | None = None
    ) -> AgentChatResponse:
        turn = await self._aturn(message, chat_history)
        answer = (await self._llm.achat(turn.messages)).message.content or ""
        await turn.memory.aput(ChatMessage(role=MessageRole.USER, content=message))
        await turn.memory.aput(ChatMessage(role=MessageRole.ASSISTANT, content=answer))
        return AgentChatResponse(response=answer, sources=[turn.source], source_nodes=turn.nodes)

    def stream_chat(
        self, message: str, chat_history: list[ChatMessage] | None = None
    ) -> StreamingAgentChatResponse:
        turn = self._turn(message, chat_history)
        stream = self._llm.stream_chat(turn.messages)
        turn.memory.put(ChatMessage(role=MessageRole.USER, content=message))
        response = StreamingAgentChatResponse(
            chat_stream=stream, sources=[turn.source], source_nodes=turn.nodes
        )
        # As LlamaIndex's engines do: a thread (which carries the caller's context) pulls the
        # stream into the response's queue and writes the answer to this reader's memory.
        thread = Thread(target=response.write_response_to_history, args=(turn.memory,))
        response.write_response_to_history_thread = thread
        thread.start()
        return response

    async def astream_chat(
        self, message: str, chat_history: list[ChatMessage] | None = None
    ) -> StreamingAgentChatResponse:
        turn = await self._aturn(message, chat_history)
        stream = await self._llm.astream_chat(turn.messages)
        await turn.memory.aput(ChatMessage(role=MessageRole.USER, content=message))
        response = StreamingAgentChatResponse(
            achat_stream=stream, sources=[turn.source], source_nodes=turn.nodes
        )
        response.awrite_response_to_history_task = asyncio.create_task(
            response.awrite_response_to_history(turn.memory)
        )
        return response

    def _turn(self, message: str, chat_history: list[ChatMessage] | None) -> _Turn:
        """What every way to chat starts with: the reader's memory, the question, the evidence
        packed to the room the prompt leaves, and the messages the LLM is sent."""
        memory = self._memory()
        if chat_history is not None:
            memory.set(chat_history)
        prompt = self._prompt(memory.get(input=message), message)
        question = self._question(prompt.history, message)
        nodes = self._packed(self._retriever.retrieve(question), question, prompt.room)
        return _Turn(memory, prompt.messages(_block(nodes)), _source(question, nodes), nodes)

    async def _aturn(self, message: str, chat_history: list[ChatMessage] | None) -> _Turn:
        memory = self._memory()
        if chat_history is not None:
            await memory.aset(chat_history)
        prompt = self._prompt(await memory.aget(input=message), message)
        question = await self._aquestion(prompt.history, message)
        retrieved = await self._retriever.aretrieve(question)
        nodes = await self._apacked(retrieved, question, prompt.room)
        return _Turn(memory, prompt.messages(_block(nodes)), _source(question, nodes), nodes)

    def reset(self) -> None:
        """Forget the current reader's conversation (no one else's)."""
        self._memory().reset()

    @property
    def chat_history(self) -> list[ChatMessage]:
        """The current reader's conversation, as their memory stores it."""
        return self._memory().get_all()

    def _question(self, history: Sequence[ChatMessage], message: str) -> str:
        """What to retrieve for: the message itself, unless an engine condenses it."""
        return message

    async def _aquestion(self, history: Sequence[ChatMessage], message: str) -> str:
        return message

    def _memory(self) -> BaseMemory:
        """The memory of this call's reader: the one the evidence postprocessor packs for."""
        evidence = self._evidence
        return self._conversations.of(
            evidence.reader, readerless=evidence.allow_scoped_without_reader
        )

    def _prompt(self, history: Sequence[ChatMessage], message: str) -> ChatPrompt:
        count = self._count()
        window = window_of(self._llm)
        return chat_prompt(self._instructions, history, self._template, message, window, count)

    def _count(self) -> TokenCounter:
        """Tokens as the evidence's own counter counts them, else as LlamaIndex's tokenizer
        (the model's, where the app set `Settings.tokenizer`) does: one measure for the
        messages and the block, so the two add up to the window."""
        return self._evidence.token_counter or counter_from_llama_index(Settings.tokenizer)

    def _fitted(self, room: int) -> AizkEvidencePostprocessor:
        """The evidence postprocessor for this call: its settings, a budget of at most `room`
        in the prompt's own tokens, paid by the whole block, and always the one block."""
        if room < 1:  # packed all the same, to a budget of 0: the counts still travel
            logger.warning(
                "aizk: %s's context window leaves no room for evidence after this chat's "
                "instructions, history and question; the turn gets none",
                type(self._llm).__name__,
            )
        evidence = self._evidence
        return evidence.model_copy(
            update={
                "budget": min(room, evidence.budget),
                "budget_covers": "block",
                "token_counter": self._count(),
                "return_nodes": False,
                "fit_to": None,
            }
        )

    def _packed(self, nodes: list[NodeWithScore], question: str, room: int) -> list[NodeWithScore]:
        bundle = QueryBundle(question)
        for postprocessor in self._before:
            nodes = postprocessor.postprocess_nodes(nodes, query_bundle=bundle)
        return self._fitted(room).postprocess_nodes(nodes, query_bundle=bundle)

    async def _apacked(
        self, nodes: list[NodeWithScore], question: str, room: int
    ) -> list[NodeWithScore]:
        bundle = QueryBundle(question)
        for postprocessor in self._before:
            nodes = await postprocessor.apostprocess_nodes(nodes, query_bundle=bundle)
        return await self._fitted(room).apostprocess_nodes(nodes, query_bundle=bundle)


class AizkContextChatEngine(_EvidenceChatEngine):
    """LlamaIndex's context chat engine, answering in one call with the evidence block in the
    latest user turn.

    The system message keeps only the app's instructions (`system_prompt`, or
    `prefix_messages`); the history follows as it was said; then one user message holding the
    block, laid out by `context_template`, and the question. The block is packed by the
    `AizkEvidencePostprocessor` last in `node_postprocessors`, to the room the LLM's window
    leaves (see `from_defaults`). The memory keeps the user's words and the answers, never a
    block, and there is one per reader.
    """

    @classmethod
    def from_defaults(
        cls,
        retriever: BaseRetriever,
        *,
        node_postprocessors: Sequence[BaseNodePostprocessor],
        llm: LLM | None = None,
        memory: BaseMemory | None = None,
        chat_history: list[ChatMessage] | None = None,
        system_prompt: str | None = None,
        prefix_messages: list[ChatMessage] | None = None,
        context_template: str | PromptTemplate | None = None,
        **unknown: Never,
    ) -> AizkContextChatEngine:
        """Build the engine as LlamaIndex's `ContextChatEngine.from_defaults` is built.

        `node_postprocessors` must end with an `AizkEvidencePostprocessor`: its settings pack
        every call's block, whose budget is at most the room the window (`Settings`'s when the
        app set one, else `llm.metadata`'s) leaves after the answer's share, the instructions,
        the question and the history (which gets at most half of it). Without `memory`, each
        reader gets their own conversation; a `memory` (or `chat_history`) given is one
        conversation, for the reader of the first call alone. `context_template` must place
        `{context_str}`, and may place `{query_str}` (else the question follows it). There is
        no refine template: the block is never split over calls.
        """
        refuse_unknown_keywords(f"{cls.__name__}.from_defaults", unknown, cls.from_defaults)
        llm = llm or Settings.llm
        if system_prompt is not None and prefix_messages is not None:
            raise ValueError("give system_prompt or prefix_messages, not both")
        instructions = list(prefix_messages or [])
        if system_prompt is not None:
            instructions = [ChatMessage(role=llm.metadata.system_role, content=system_prompt)]
        return cls(
            retriever=retriever,
            llm=llm,
            node_postprocessors=node_postprocessors,
            context_template=_template(context_template, DEFAULT_CONTEXT_TEMPLATE),
            instructions=instructions,
            memory=_given_memory(memory, chat_history, llm),
        )


class AizkCondensePlusContextChatEngine(_EvidenceChatEngine):
    """LlamaIndex's condense-plus-context chat engine, answering in one call with the evidence
    block in the latest user turn.

    With a history, the conversation and the new message are first condensed into one
    standalone question (its own LLM call, with `condense_prompt`), which is what is retrieved
    for; the answer is then one call, as `AizkContextChatEngine` makes it: `system_prompt`
    alone in the system message, the history as it was said, then one user message holding the
    block laid out by `context_prompt`, and the user's own message.
    """

    def __init__(
        self,
        *,
        condense_prompt: PromptTemplate,
        skip_condense: bool,
        retriever: BaseRetriever,
        llm: LLM,
        node_postprocessors: Sequence[BaseNodePostprocessor],
        context_template: PromptTemplate,
        instructions: Sequence[ChatMessage],
        memory: BaseMemory | None,
    ) -> None:
        super().__init__(
            retriever=retriever,
            llm=llm,
            node_postprocessors=node_postprocessors,
            context_template=context_template,
            instructions=instructions,
            memory=memory,
        )
        self._condense_prompt = condense_prompt
        self._skip_condense = skip_condense

    @classmethod
    def from_defaults(
        cls,
        retriever: BaseRetriever,
        *,
        node_postprocessors: Sequence[BaseNodePostprocessor],
        llm: LLM | None = None,
        memory: BaseMemory | None = None,
        chat_history: list[ChatMessage] | None = None,
        system_prompt: str | None = None,
        context_prompt: str | PromptTemplate | None = None,
        condense_prompt: str | PromptTemplate | None = None,
        skip_condense: bool = False,
        **unknown: Never,
    ) -> AizkCondensePlusContextChatEngine:
        """Build the engine as LlamaIndex's `CondensePlusContextChatEngine.from_defaults` is
        built; the evidence, window, memory and template rules are `AizkContextChatEngine`'s
        (`context_prompt` is its `context_template`)."""
        refuse_unknown_keywords(f"{cls.__name__}.from_defaults", unknown, cls.from_defaults)
        llm = llm or Settings.llm
        instructions = []
        if system_prompt:
            instructions = [ChatMessage(role=llm.metadata.system_role, content=system_prompt)]
        if isinstance(condense_prompt, str):
            condense_prompt = PromptTemplate(condense_prompt)
        return cls(
            condense_prompt=condense_prompt or PromptTemplate(DEFAULT_CONDENSE_PROMPT_TEMPLATE),
            skip_condense=skip_condense,
            retriever=retriever,
            llm=llm,
            node_postprocessors=node_postprocessors,
            context_template=_template(context_prompt, DEFAULT_CONTEXT_PROMPT_TEMPLATE),
            instructions=instructions,
            memory=_given_memory(memory, chat_history, llm),
        )

    def _question(self, history: Sequence[ChatMessage], message: str) -> str:
        """The conversation and `message` condensed into one standalone question, to retrieve
        for; the history is the part of it the answer's prompt keeps, so this prompt fits the
        window too."""
        if self._skip_condense or not history:
            return message
        return str(self._llm.complete(self._condensing(history, message)))

    async def _aquestion(self, history: Sequence[ChatMessage], message: str) -> str:
        if self._skip_condense or not history:
            return message
        return str(await self._llm.acomplete(self._condensing(history, message)))

    def _condensing(self, history: Sequence[ChatMessage], message: str) -> str:
        # The history is a value put into the prompt, never formatted again itself.
        return self._condense_prompt.format(
            chat_history=messages_to_history_str(list(history)), question=message
        )


def _checked_postprocessors(
    engine: str, postprocessors: object
) -> tuple[tuple[BaseNodePostprocessor, ...], AizkEvidencePostprocessor]:
    """The engine's postprocessors before the evidence postprocessor, and that one, which must
    be last.

    It packs every call's block to the window's room, so it must see every node the others
    keep, in their order; a second one would receive the block and withhold it.
    """
    where = (
        f"{engine} packs its context with an AizkEvidencePostprocessor: put exactly one last "
        "in node_postprocessors, after any reranker"
    )
    if isinstance(postprocessors, str | bytes) or not isinstance(postprocessors, Sequence):
        raise TypeError(f"{where}; node_postprocessors must be a list")
    *before, evidence = [*postprocessors] or [None]
    if not isinstance(evidence, AizkEvidencePostprocessor):
        raise TypeError(where)
    if any(isinstance(each, AizkEvidencePostprocessor) for each in before):
        raise ValueError(where)
    return tuple(before), evidence


def _template(template: str | PromptTemplate | None, default: str) -> PromptTemplate:
    """The engine's context template, which must say where the block goes."""
    if template is None:
        template = default
    if isinstance(template, str):
        template = PromptTemplate(template)
    if not isinstance(template, PromptTemplate):
        raise TypeError(
            f"the context template must be a str or a PromptTemplate, not {type(template).__name__}"
        )
    if "context_str" not in template.template_vars:
        raise ValueError(
            "the context template must have a {context_str} placeholder: that is where the "
            "evidence block goes"
        )
    return template


def _given_memory(
    memory: BaseMemory | None, chat_history: list[ChatMessage] | None, llm: LLM
) -> BaseMemory | None:
    """The one conversation an app hands the engine, if it hands one."""
    if memory is not None and chat_history is not None:
        raise ValueError("give memory or chat_history, not both (put the history in the memory)")
    if chat_history is not None:
        return ChatMemoryBuffer.from_defaults(chat_history=chat_history, llm=llm)
    return memory


class _Turn(NamedTuple):
    """One chat turn, ready for the LLM call."""

    memory: BaseMemory
    messages: list[ChatMessage]
    source: ToolOutput
    nodes: list[NodeWithScore]


def _block(nodes: Sequence[NodeWithScore]) -> str:
    """The evidence block the packer returned, or nothing when it kept nothing."""
    return nodes[0].node.get_content() if nodes else ""


def _source(question: str, nodes: list[NodeWithScore]) -> ToolOutput:
    """The retrieval as LlamaIndex's chat engines report it in `sources`."""
    return ToolOutput(
        tool_name="retriever",
        content=str(nodes),
        raw_input={"message": question},
        raw_output=nodes,
    )
