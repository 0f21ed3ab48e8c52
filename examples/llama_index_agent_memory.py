"""A LlamaIndex agent whose memory recalls evidence every turn, for two readers, offline.

Run it from the repository root with `python examples/llama_index_agent_memory.py` after
`pip install -e ".[all]"`. The agent is a `FunctionAgent` with a `Memory` holding an
`AizkMemoryBlock`: each turn the block retrieves for the user's message from the example corpus
(asking the index only for the reader's notes, `AizkScopedRetriever` bound with `for_reader`),
packs them, and the memory puts it into the user's turn (`InsertMethod.USER`), not the system
prompt. The LLM is LlamaIndex's mock, which keeps the messages of its last call, so what is
printed is exactly what a real model would have read; its answers are numbered placeholders.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable

from corpus import load_notes, reader_directory
from llama_index.core import VectorStoreIndex
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms.mock import MockFunctionCallingLLMWithChatMemoryOfLastCall
from llama_index.core.memory import InsertMethod, Memory
from llama_index.core.schema import TextNode
from llama_index.core.storage.chat_store.sql import SQLAlchemyChatStore
from sqlalchemy.ext.asyncio import create_async_engine

from aizk_integrations.llama_index import (
    AizkEvidencePostprocessor,
    AizkMemoryBlock,
    AizkScopedRetriever,
)

TURNS = ("What is the book club reading?", "And what should I bring on Thursday?")


def answers(reader: str) -> Callable[..., ChatMessage]:
    """The mock LLM's replies: numbered answers, so the history shows which turn is which."""
    replies = (f"(answer {n} for {reader})" for n in itertools.count(1))
    return lambda messages, **kwargs: ChatMessage(role="assistant", content=next(replies))


async def converse(reader: str, index: VectorStoreIndex) -> None:
    llm = MockFunctionCallingLLMWithChatMemoryOfLastCall()
    llm.response_generator = answers(reader)
    agent = FunctionAgent(tools=[], llm=llm, system_prompt="Answer from the evidence you get.")
    directory = reader_directory(reader)  # per request, from your auth layer
    evidence = AizkMemoryBlock(  # the reader's notes only, packed for that reader
        retriever=AizkScopedRetriever(index, similarity_top_k=12).for_reader(directory),
        evidence=AizkEvidencePostprocessor(budget=160, budget_covers="block").for_reader(directory),
    )
    store = create_async_engine("sqlite+aiosqlite:///:memory:")
    memory = Memory.from_defaults(
        session_id=reader,
        token_limit=4000,
        memory_blocks=[evidence],
        insert_method=InsertMethod.USER,
        chat_store=SQLAlchemyChatStore(table_name="turns", async_engine=store),
    )
    try:
        for turn, question in enumerate(TURNS, start=1):
            await agent.run(question, memory=memory)
            print(f"\n######## {reader}, turn {turn}: what the LLM is given ########")
            for message in llm.last_chat_messages or []:
                first_line, *rest = (message.content or "").splitlines() or [""]
                more = f" (+{len(rest)} lines)" if rest else ""
                print(f"  {message.role.value:>9}  {first_line}{more}")
        print(f"\n######## {reader}'s last turn as the LLM read it ########")
        print((llm.last_chat_messages or [])[-1].content)
    finally:
        await store.dispose()


def main() -> None:
    nodes = [
        TextNode(id_=note["id"], text=note["text"], metadata=note["metadata"])
        for note in load_notes()
    ]
    index = VectorStoreIndex(nodes, embed_model=MockEmbedding(embed_dim=8))
    for reader in ("sam", "ana"):
        asyncio.run(converse(reader, index))


if __name__ == "__main__":
    main()
