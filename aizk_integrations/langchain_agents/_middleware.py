"""`AizkMemoryMiddleware`: recalled evidence next to the latest user message on every model call."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final, Never

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse
from langchain_core.messages import AnyMessage, BaseMessage, HumanMessage
from langchain_core.retrievers import RetrieverLike
from langchain_core.runnables import RunnableConfig, patch_config

from aizk_integrations._counters import counter_from_langchain
from aizk_integrations._run.settings import refuse_unknown_keywords
from aizk_integrations._scopes.directory import ScopeDirectory
from aizk_integrations.langchain._compressor import AizkEvidenceCompressor
from aizk_integrations.langchain._config import (
    READER_CONFIG_KEY,
    ROOM_CONFIG_KEY,
    current_config,
    request_reader,
    with_reader,
)
from aizk_integrations.langchain._pipeline import check_not_packed, refuse_packed_twice
from aizk_integrations.langchain._room import room_left, window_of
from aizk_integrations.langchain._scoped import apacked_retrieval, packed_retrieval

MEMORY_MESSAGE_NAME: Final = "aizk_evidence"
"""The `name` of the user message that carries the block, so it can be told from the user's own."""


class AizkMemoryMiddleware(AgentMiddleware[AgentState[Any], Any, Any]):
    # Any context: the reader may come from whatever `context_schema` the agent declares.
    """Recalled evidence next to the latest user message, on every model call of an agent.

    When the model's input window is known (`window`, or the model's profile's
    `max_input_tokens`), every call's block is fitted to what the thread leaves of it: counted
    by the model itself, whole block included, within the window less the system message, the
    history and `reserve` (for tools' schemas, say). A long thread then shrinks the evidence
    instead of overflowing the model; the compressor's budget stays the most a block takes.
    """

    def __init__(
        self,
        retriever: RetrieverLike,
        compressor: AizkEvidenceCompressor | None = None,
        *,
        window: int | None = None,
        reserve: int = 0,
        **unknown: Never,
    ) -> None:
        refuse_unknown_keywords(type(self).__name__, unknown, AizkMemoryMiddleware)
        super().__init__()
        check_not_packed(retriever, type(self).__name__)
        self.retriever = retriever
        self.compressor = compressor if compressor is not None else AizkEvidenceCompressor()
        self.window = window
        self.reserve = reserve

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any]:
        latest, config, reader = self._latest_and_config(request)
        if latest is None:
            return handler(request)
        packer, config = self._fitted(request, config)
        packing = packed_retrieval(packer, self.retriever, latest.text, config, reader)
        refuse_packed_twice(packing, type(self).__name__)
        return handler(_with_block(request, latest, packing.result.to_markdown()))

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any]:
        latest, config, reader = self._latest_and_config(request)
        if latest is None:
            return await handler(request)
        packer, config = self._fitted(request, config)
        packing = await apacked_retrieval(packer, self.retriever, latest.text, config, reader)
        refuse_packed_twice(packing, type(self).__name__)
        return await handler(_with_block(request, latest, packing.result.to_markdown()))

    def _latest_and_config(
        self, request: ModelRequest[Any]
    ) -> tuple[HumanMessage | None, RunnableConfig, ScopeDirectory | None]:
        """The latest user message, and the request's config naming its reader: the config's,
        else the agent's runtime context's, else the compressor's own `directory`."""
        config = current_config()
        reader = (
            request_reader(config, self.compressor.reader_of_user)
            or _reader_in(getattr(request.runtime, "context", None))
            or self.compressor.reader
        )
        return _latest_user_message(request.messages), with_reader(config, reader), reader

    def _fitted(
        self, request: ModelRequest[Any], config: RunnableConfig
    ) -> tuple[AizkEvidenceCompressor, RunnableConfig]:
        """The compressor and config that fit this call's block into the model's window."""
        model = request.model
        limit = window_of(model, self.window)
        if limit is None:
            return self.compressor, config
        sent: list[BaseMessage] = list(request.messages)
        if request.system_message is not None:
            sent.insert(0, request.system_message)
        used = model.get_num_tokens_from_messages(sent)
        room = room_left(model, limit, used, self.reserve)
        configurable = config.get("configurable") or {}
        asked = configurable.get(ROOM_CONFIG_KEY)
        room = room if asked is None else min(room, asked)
        packer = self.compressor.model_copy(
            update={"token_counter": counter_from_langchain(model), "budget_covers": "block"}
        )
        return packer, patch_config(config, configurable={**configurable, ROOM_CONFIG_KEY: room})


def _with_block(request: ModelRequest[Any], latest: HumanMessage, block: str) -> ModelRequest[Any]:
    """The request with the block as a user message right before the latest one."""
    if not block:
        return request
    messages = list(request.messages)
    at = next(i for i in range(len(messages) - 1, -1, -1) if messages[i] is latest)
    messages.insert(at, HumanMessage(content=block, name=MEMORY_MESSAGE_NAME))
    return request.override(messages=messages)


def _latest_user_message(messages: list[AnyMessage]) -> HumanMessage | None:
    for message in reversed(messages):
        if isinstance(message, HumanMessage) and message.name != MEMORY_MESSAGE_NAME:
            return message
    return None


def _reader_in(context: object) -> ScopeDirectory | None:
    """The reader an agent's runtime context names, under `aizk_reader`, if any."""
    if isinstance(context, Mapping):
        found = context.get(READER_CONFIG_KEY)
    else:
        found = getattr(context, READER_CONFIG_KEY, None)
    if found is not None and not isinstance(found, ScopeDirectory):
        raise TypeError(
            f"the agent's context {READER_CONFIG_KEY!r} must be a ScopeDirectory (a request "
            f"may switch readers but not switch authorization off), not {type(found).__name__}"
        )
    return found
