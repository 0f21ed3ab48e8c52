"""A LlamaIndex query engine whose prompt receives one aizk evidence block.

Run it from the repository root with `python examples/llama_index_query_engine.py`. It is
offline: `MockEmbedding` stands in for an embedding model and `MockLLM` echoes the prompt it is
given, so what it prints is exactly what a real model would have read. One retriever, built
once, serves both readers of the example corpus: bound to a reader, it asks the index only for
that reader's notes and packs them, so each sees only their own scopes, under their own names for
them, and no other reader's text reaches LlamaIndex's logs or events.
"""

from __future__ import annotations

from corpus import READERS, load_notes, reader_directory
from llama_index.core import VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import TextNode

from aizk_integrations.llama_index import AizkEvidencePostprocessor, AizkScopedRetriever

BUDGET = 160
QUESTION = "What is going on this summer?"


def build_index() -> VectorStoreIndex:
    """Index the corpus notes as nodes; their metadata already follows aizk's keys."""
    nodes = [
        TextNode(id_=note["id"], text=note["text"], metadata=note["metadata"])
        for note in load_notes()
    ]
    return VectorStoreIndex(nodes, embed_model=MockEmbedding(embed_dim=8))


def main() -> None:
    index = build_index()
    evidence = AizkEvidencePostprocessor(budget=BUDGET)  # no reader of its own
    retriever = AizkScopedRetriever(index, similarity_top_k=len(load_notes()), evidence=evidence)
    for reader in READERS:
        bound = retriever.for_reader(reader_directory(reader))  # per request
        engine = RetrieverQueryEngine.from_args(bound, llm=MockLLM())
        response = engine.query(QUESTION)
        [block] = response.source_nodes
        print(f"===== what the model reads for {reader} (budget {BUDGET}) =====")
        print(block.node.get_content())
        print(f"----- counts: {block.node.metadata['aizk_counts']}")
        print()


if __name__ == "__main__":
    main()
