"""LangChain RAG over the example corpus, offline: a scoped retriever, the packer and a fake LLM.

Run it from the repository root with `python examples/langchain_rag.py` after
`pip install -e ".[langchain]"`. The embeddings and the LLM are LangChain's deterministic fakes,
so nothing goes over the network. One chain serves two readers: each request names its reader
in the config, the store is asked only for that reader's notes (`AizkScopedRetriever`), and each
block holds only what that reader may see. The packer's cut table (which
names lanes, so it is for logs, never prompts) is logged at DEBUG level; this script shows it.
"""

from __future__ import annotations

import logging
import sys

from corpus import load_notes, reader_directory
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models import FakeListLLM
from langchain_core.prompts import PromptTemplate
from langchain_core.runnables import RunnableConfig, RunnablePassthrough
from langchain_core.vectorstores import InMemoryVectorStore

from aizk_integrations.langchain import AizkEvidenceCompressor, AizkScopedRetriever

QUESTION = "What is happening with the book club and the reranker?"
PROMPT = PromptTemplate.from_template(
    "Answer the question from the evidence below.\n\n{context}\n\nQuestion: {question}"
)


def corpus_documents() -> list[Document]:
    """The shipped notes as LangChain documents; metadata already uses DESIGN.md's keys."""
    return [
        Document(id=note["id"], page_content=note["text"], metadata=note["metadata"])
        for note in load_notes()
    ]


def main() -> None:
    logging.basicConfig(stream=sys.stdout, format="%(name)s: %(message)s")
    logging.getLogger("aizk_integrations.langchain").setLevel(logging.DEBUG)

    store = InMemoryVectorStore(embedding=DeterministicFakeEmbedding(size=64))
    store.add_documents(corpus_documents())
    # The store holds every reader's notes: it is asked only for the request's reader's.
    retriever = AizkScopedRetriever(vectorstore=store, search_kwargs={"k": 12})

    packer = AizkEvidenceCompressor(budget=128)  # no reader of its own: each request names one
    llm = FakeListLLM(responses=["(a fake LLM's answer)"])
    # The usual RAG shape, keeping the block beside the answer so it can be shown.
    chain = {
        "context": retriever | packer.as_runnable(),
        "question": RunnablePassthrough(),
    } | RunnablePassthrough.assign(answer=PROMPT | llm)

    for reader in ("sam", "ana"):
        config: RunnableConfig = {"configurable": {"aizk_reader": reader_directory(reader)}}
        print(f"# {reader}, within {packer.budget} tokens\n")
        result = chain.invoke(QUESTION, config=config)
        print(f"\n{result['context']}\n\nAnswer: {result['answer']}\n")


if __name__ == "__main__":
    main()
