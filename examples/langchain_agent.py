"""A LangChain agent with memory recalled on every turn, for two readers, offline.

Run it from the repository root with `python examples/langchain_agent.py` after
`pip install -e ".[all]"`. The agent is LangChain's `create_agent` with `AizkMemoryMiddleware`:
before each model call it retrieves for the latest user message from the example corpus (asking
the store only for the turn's reader's notes, `AizkScopedRetriever`), packs them, and hands the
model the block as a user message just before the question, never in the system prompt. The chat
model is LangChain's fake, which prints the messages it is given, so what you see is exactly
what a real model would have read.
"""

from __future__ import annotations

from typing import Any

from corpus import load_notes, reader_directory
from langchain.agents import create_agent
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.vectorstores import InMemoryVectorStore

from aizk_integrations.langchain import AizkEvidenceCompressor, AizkScopedRetriever
from aizk_integrations.langchain_agents import AizkMemoryMiddleware

TURNS = ("What is the book club reading?", "And what should I bring on Thursday?")


class ShowRequests(BaseCallbackHandler):
    """Prints every message the model is called with, one line each, and keeps the evidence."""

    def __init__(self) -> None:
        self.evidence = ""

    def on_chat_model_start(
        self, serialized: dict[str, Any], messages: list[list[BaseMessage]], **kwargs: Any
    ) -> None:
        for message in messages[0]:
            first_line, *rest = str(message.content).splitlines() or [""]
            more = f" (+{len(rest)} lines)" if rest else ""
            print(f"  {message.type:>6} {message.name or '':<14} {first_line}{more}")
            if message.name == "aizk_evidence":
                self.evidence = str(message.content)


def main() -> None:
    store = InMemoryVectorStore(embedding=DeterministicFakeEmbedding(size=64))
    store.add_documents(
        [Document(n["text"], id=n["id"], metadata=n["metadata"]) for n in load_notes()]
    )
    # The store holds every reader's notes: it is asked only for the request's reader's.
    scoped = AizkScopedRetriever(vectorstore=store, search_kwargs={"k": 12})
    memory = AizkMemoryMiddleware(scoped, AizkEvidenceCompressor(budget=160))
    for reader in ("sam", "ana"):
        answers = iter([AIMessage(f"(answer {n + 1} for {reader})") for n in range(len(TURNS))])
        agent = create_agent(
            GenericFakeChatModel(messages=answers),
            tools=[],
            middleware=[memory],
            system_prompt="Answer from the evidence the user's messages give you.",
        )
        shown = ShowRequests()
        config: RunnableConfig = {
            "configurable": {"aizk_reader": reader_directory(reader)},
            "callbacks": [shown],
        }
        messages: list[AnyMessage] = []
        for turn, question in enumerate(TURNS, start=1):
            print(f"\n######## {reader}, turn {turn}: what the model is given ########")
            state = agent.invoke({"messages": [*messages, HumanMessage(question)]}, config=config)
            messages = state["messages"]
            print(f"  -> {messages[-1].content}")
        print(f"\n######## the evidence {reader}'s last turn gave the model ########")
        print(shown.evidence)


if __name__ == "__main__":
    main()
