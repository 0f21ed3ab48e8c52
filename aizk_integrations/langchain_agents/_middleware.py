"""`AizkMemoryMiddleware`: recalled evidence next to the latest user message on every model call."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse
from langchain_core.messages import AnyMessage, HumanMessage
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig, patch_config

from aizk_integrations._scopes import ScopeDirectory
from aizk_integrations.langchain._compressor import AizkEvidenceCompressor, pack_documents
from aizk_integrations.langchain._config import DIRECTORY_CONFIG_KEY, current_config

MEMORY_MESSAGE_NAME: Final = "aizk_evidence"
"""The `name` of the user message that carries the block, so it can be told from the user's own."""


class AizkMemoryMiddleware(AgentMiddleware[AgentState[Any], Any, Any]):
    # Any context: the reader may come from whatever `context_schema` the agent declares.
    """Recalled evidence next to the latest user message, on every model call of an agent."""

    def __init__(
        self, retriever: BaseRetriever, compressor: AizkEvidenceCompressor | None = None
    ) -> None:
        super().__init__()
        self.retriever = retriever
        self.compressor = compressor if compressor is not None else AizkEvidenceCompressor()

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any]:
        latest, config = self._latest_and_config(request)
        if latest is None:
            return handler(request)
        documents = self.retriever.invoke(latest.text, config)
        return handler(self._with_evidence(request, latest, documents, config))

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any]:
        latest, config = self._latest_and_config(request)
        if latest is None:
            return await handler(request)
        documents = await self.retriever.ainvoke(latest.text, config)
        return await handler(self._with_evidence(request, latest, documents, config))

    def _latest_and_config(
        self, request: ModelRequest[Any]
    ) -> tuple[HumanMessage | None, RunnableConfig]:
        """The latest user message, and the request's config with its reader in it."""
        config = current_config()
        configurable = config.get("configurable") or {}
        if DIRECTORY_CONFIG_KEY not in configurable:
            reader = _reader_in(getattr(request.runtime, "context", None))
            if reader is not None:
                config = patch_config(
                    config, configurable={**configurable, DIRECTORY_CONFIG_KEY: reader}
                )
        return _latest_user_message(request.messages), config

    def _with_evidence(
        self,
        request: ModelRequest[Any],
        latest: HumanMessage,
        documents: list[Any],
        config: RunnableConfig,
    ) -> ModelRequest[Any]:
        """The request with the block as a user message right before the latest one."""
        block = pack_documents(self.compressor, documents, config).result.to_markdown()
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
    """The reader an agent's runtime context names, under `aizk_directory`, if any."""
    if isinstance(context, Mapping):
        found = context.get(DIRECTORY_CONFIG_KEY)
    else:
        found = getattr(context, DIRECTORY_CONFIG_KEY, None)
    if found is not None and not isinstance(found, ScopeDirectory):
        raise TypeError(
            f"the agent's context {DIRECTORY_CONFIG_KEY!r} must be a ScopeDirectory (a request "
            f"may switch readers but not switch authorization off), not {type(found).__name__}"
        )
    return found
