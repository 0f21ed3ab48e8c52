"""`AizkToolEvidenceMemory`: an agent that recalls through a tool re-sends no old evidence.

With a query-engine (or retriever) tool, each turn's block comes back as a tool result, and a
`FunctionAgent` writes every tool result of a turn into its memory when the turn ends. Every
later LLM call is sent that memory again, so by turn four the model reads four blocks, including
evidence the reader has since lost access to. This memory wraps the agent's own and edits only
what is read back for the model: earlier blocks are replaced by a short note, so evidence is
never older than the turn it answers. What is stored stays as it was (`get_all`).
"""

from __future__ import annotations

from typing import Any

from llama_index.core.base.llms.types import ChatMessage, MessageRole, TextBlock
from llama_index.core.memory import BaseMemory, Memory
from pydantic import ConfigDict, Field, SerializeAsAny

from aizk_integrations._core.rendering import BOUNDARY_LINE, STALE_EVIDENCE_NOTE
from aizk_integrations._run.settings import KnownSettings

_TOOL_RESULTS = (MessageRole.TOOL, MessageRole.FUNCTION)


class AizkToolEvidenceMemory(KnownSettings, BaseMemory):
    """An agent's memory that sends the model no block recalled for an earlier turn.

    Give it to `agent.run(..., memory=...)` in place of the memory it wraps: it stores,
    sets and resets through `memory`, and whenever the agent reads the history for its LLM
    (`get`/`aget`), every tool result holding an evidence block comes back as
    `STALE_EVIDENCE_NOTE` instead, except the latest one after the latest user message (a
    block an agent workflow handed over within the turn in progress). The tool results of
    the turn in progress are the agent's own, not the memory's, and reach the model as they
    are; the next turn sees none of them. Messages are replaced, never changed, and keep their
    role and tool-call id, so every tool call still has its result.
    """

    # Unknown settings are refused by name, as every aizk adapter refuses them.
    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    memory: SerializeAsAny[BaseMemory] = Field(
        description="The memory that stores the conversation: LlamaIndex's Memory, or any."
    )

    @classmethod
    def class_name(cls) -> str:
        return "AizkToolEvidenceMemory"

    @classmethod
    def from_defaults(cls, **kwargs: Any) -> AizkToolEvidenceMemory:
        """LlamaIndex's `Memory.from_defaults(**kwargs)`, wrapped."""
        return cls(memory=Memory.from_defaults(**kwargs))

    def get(self, input: str | None = None, **kwargs: Any) -> list[ChatMessage]:
        return _fresh(self.memory.get(input=input, **kwargs))

    async def aget(self, input: str | None = None, **kwargs: Any) -> list[ChatMessage]:
        return _fresh(await self.memory.aget(input=input, **kwargs))

    def get_all(self) -> list[ChatMessage]:
        """Everything stored, blocks included: the conversation's record, not a prompt."""
        return self.memory.get_all()

    async def aget_all(self) -> list[ChatMessage]:
        return await self.memory.aget_all()

    def put(self, message: ChatMessage) -> None:
        self.memory.put(message)

    async def aput(self, message: ChatMessage) -> None:
        await self.memory.aput(message)

    def put_messages(self, messages: list[ChatMessage]) -> None:
        self.memory.put_messages(messages)

    async def aput_messages(self, messages: list[ChatMessage]) -> None:
        await self.memory.aput_messages(messages)

    def set(self, messages: list[ChatMessage]) -> None:
        self.memory.set(messages)

    async def aset(self, messages: list[ChatMessage]) -> None:
        await self.memory.aset(messages)

    def reset(self) -> None:
        self.memory.reset()

    async def areset(self) -> None:
        await self.memory.areset()


def _fresh(messages: list[ChatMessage]) -> list[ChatMessage]:
    """`messages` with every block but the turn in progress's latest replaced by the note."""
    turn = max(
        (index for index, message in enumerate(messages) if message.role == MessageRole.USER),
        default=-1,
    )
    blocks = [index for index, message in enumerate(messages) if _is_block(message)]
    kept = blocks[-1] if blocks and blocks[-1] > turn else None
    stale = set(blocks) - {kept}
    return [
        _noted(message) if index in stale else message for index, message in enumerate(messages)
    ]


def _is_block(message: ChatMessage) -> bool:
    return message.role in _TOOL_RESULTS and BOUNDARY_LINE in (message.content or "")


def _noted(message: ChatMessage) -> ChatMessage:
    return ChatMessage(
        role=message.role,
        blocks=[TextBlock(text=STALE_EVIDENCE_NOTE)],
        additional_kwargs=dict(message.additional_kwargs),
    )
