"""`AizkToolEvidenceMiddleware`: an agent that recalls through a tool re-sends no old evidence.

With a retriever tool, each turn's block comes back as a tool message, and an agent with a
checkpointer keeps every tool message in its state and sends them all again on every later
model call: by turn three the model reads three blocks, including evidence the reader has since
lost access to. This middleware leaves the state alone and edits only what the model is sent:
the latest block of the turn in progress is sent, and every earlier one is replaced by a short
note, so evidence is never older than the turn it answers.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Never

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse
from langchain_core.messages import AnyMessage, HumanMessage, ToolMessage

from aizk_integrations._core.rendering import BOUNDARY_LINE, STALE_EVIDENCE_NOTE
from aizk_integrations._run.settings import refuse_unknown_keywords
from aizk_integrations.langchain_agents._middleware import MEMORY_MESSAGE_NAME


class AizkToolEvidenceMiddleware(AgentMiddleware[AgentState[Any], Any, Any]):
    """Only the latest block of the turn in progress reaches the model, whatever the history
    holds: for agents whose retriever tool packs with aizk (`AizkEvidenceRetriever`, or a
    retriever piped into `as_runnable()`)."""

    def __init__(self, **unknown: Never) -> None:
        # Declared, so an unknown setting is refused by name, as every adapter refuses it.
        refuse_unknown_keywords(type(self).__name__, unknown, AizkToolEvidenceMiddleware)
        super().__init__()

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any]:
        return handler(_fresh(request))

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any]:
        return await handler(_fresh(request))


def _fresh(request: ModelRequest[Any]) -> ModelRequest[Any]:
    """The request with every block but the turn's latest replaced by `STALE_EVIDENCE_NOTE`."""
    messages = request.messages
    turn = max((index for index, message in enumerate(messages) if _is_users(message)), default=-1)
    blocks = [index for index, message in enumerate(messages) if _is_block(message)]
    kept = blocks[-1] if blocks and blocks[-1] > turn else None
    stale = set(blocks) - {kept}
    if not stale:
        return request
    sent = [
        message.model_copy(update={"content": STALE_EVIDENCE_NOTE}) if index in stale else message
        for index, message in enumerate(messages)
    ]
    return request.override(messages=sent)


def _is_users(message: AnyMessage) -> bool:
    return isinstance(message, HumanMessage) and message.name != MEMORY_MESSAGE_NAME


def _is_block(message: AnyMessage) -> bool:
    return isinstance(message, ToolMessage) and BOUNDARY_LINE in message.text
