"""`AizkMemoryBlock`: recalled evidence as a block of LlamaIndex's `Memory`."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.memory import BaseMemoryBlock
from llama_index.core.schema import NodeWithScore
from llama_index.core.utils import get_tokenizer
from pydantic import ConfigDict, Field, PrivateAttr

from aizk_integrations._run.settings import KnownSettings
from aizk_integrations.counters import counter_from_llama_index
from aizk_integrations.llama_index._postprocessor import AizkEvidencePostprocessor


class AizkMemoryBlock(KnownSettings, BaseMemoryBlock[str]):
    """Recalled evidence as a memory block of LlamaIndex's `Memory`, for agents and chat.

    On every read of the memory it retrieves for the latest user message from any retriever
    and packs what came back with `evidence`, an `AizkEvidencePostprocessor` (the same settings
    and code as in a query engine: budget, reader, counts), so the block the agent sees holds
    only what `evidence`'s reader may see (one memory per reader's session: build it with
    `evidence.for_reader(reader)`). Build the memory with
    `insert_method=InsertMethod.USER` to keep the block out of the system prompt.

    The memory's token limit decides the rest: when the chat history and the memory's blocks
    do not fit, it asks this block, by `priority`, to shrink, and the block packs the same
    retrieval again within what is left, a shorter prefix in the same merit order.
    """

    # Unknown settings are refused by name, as every aizk adapter refuses them.
    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

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
    shared by one reader's concurrent sessions still finds each session's."""

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
