"""Quickstart: one retrieval, two readers, two frameworks, and the evidence block each prompt gets.

Run it from the repository root with `python examples/quickstart.py` after
`pip install -e ".[all]"`. Everything is offline: the corpus ships beside this file, the
embeddings are the frameworks' own fakes, and the LLMs are their fake and mock models.

For each reader it prints the block a LangChain chain puts into `{context}` and the block a
LlamaIndex query engine hands its LLM, each followed by what the package logged at DEBUG while
making it: the scoped retrieval's summary (store calls, items fetched) and the cut table (what
was kept and why the rest was not; it names lanes, so it goes to logs, never to prompts).
In both, `AizkScopedRetriever` asks the shared store only for the reader's notes, so no other
reader's text travels through the frameworks' logs, events or traces either.
"""

from __future__ import annotations

import logging

from corpus import READERS, load_notes, reader_directory
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models import FakeListLLM
from langchain_core.prompts import PromptTemplate
from langchain_core.runnables import Runnable, RunnableConfig, RunnablePassthrough
from langchain_core.vectorstores import InMemoryVectorStore
from llama_index.core import VectorStoreIndex
from llama_index.core.base.base_query_engine import BaseQueryEngine
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import TextNode

from aizk_integrations.langchain import AizkEvidenceCompressor
from aizk_integrations.langchain import AizkScopedRetriever as LangChainScopedRetriever
from aizk_integrations.llama_index import AizkEvidencePostprocessor, AizkScopedRetriever

BUDGET = 160
QUESTION = "What is happening with the book club and the reranker?"
PROMPT = PromptTemplate.from_template(
    "Answer from the evidence below.\n\n{context}\n\nQuestion: {question}"
)


def langchain_chain() -> Runnable[str, str]:
    """retriever | packer -> prompt -> fake LLM, keeping the prompt so it can be shown; each
    request names its reader in its config."""
    store = InMemoryVectorStore(embedding=DeterministicFakeEmbedding(size=64))
    store.add_documents(
        [
            Document(id=note["id"], page_content=note["text"], metadata=note["metadata"])
            for note in load_notes()
        ]
    )
    packer = AizkEvidenceCompressor(budget=BUDGET)
    retriever = LangChainScopedRetriever(vectorstore=store, search_kwargs={"k": 12})
    llm = FakeListLLM(responses=["(the model's answer)"])
    chain = {"context": retriever | packer.as_runnable(), "question": RunnablePassthrough()}
    return (chain | RunnablePassthrough.assign(answer=PROMPT | llm)).pick("context")


def llama_index_engine(reader: str) -> BaseQueryEngine:
    """A vector index over the same notes, retrieved for `reader` and packed, a mock LLM."""
    nodes = [
        TextNode(id_=note["id"], text=note["text"], metadata=note["metadata"])
        for note in load_notes()
    ]
    index = VectorStoreIndex(nodes, embed_model=MockEmbedding(embed_dim=8))
    packer = AizkEvidencePostprocessor(budget=BUDGET)
    retriever = AizkScopedRetriever(index, similarity_top_k=12, evidence=packer)
    return RetrieverQueryEngine.from_args(
        retriever.for_reader(reader_directory(reader)), llm=MockLLM()
    )


class Logged(logging.Handler):
    """Keeps the package's DEBUG lines, to print after the block they explain."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(f"\n[logged at DEBUG by {record.name}]\n{record.getMessage()}")

    def flush_to_stdout(self) -> None:
        print("\n".join(self.lines))
        self.lines.clear()


def main() -> None:
    logged = Logged()
    logging.getLogger("aizk_integrations").addHandler(logged)
    logging.getLogger("aizk_integrations").setLevel(logging.DEBUG)
    for reader in READERS:
        print(f"\n######## {reader}: LangChain chain, budget {BUDGET} ########\n")
        config: RunnableConfig = {"configurable": {"aizk_reader": reader_directory(reader)}}
        print(langchain_chain().invoke(QUESTION, config=config))
        logged.flush_to_stdout()  # the cut table: what was kept, and why the rest was not
        print(f"\n######## {reader}: LlamaIndex query engine, budget {BUDGET} ########\n")
        response = llama_index_engine(reader).query(QUESTION)
        print(response.source_nodes[0].node.get_content() if response.source_nodes else "")
        logged.flush_to_stdout()  # the retrieval summary, then the cut table


if __name__ == "__main__":
    main()
