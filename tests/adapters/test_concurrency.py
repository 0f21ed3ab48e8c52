"""One shared adapter, many readers at once: every caller gets only its own evidence."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

import pytest
from langchain_core.documents import Document
from llama_index.core import VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms import MockLLM
from llama_index.core.schema import NodeWithScore, TextNode

from aizk_integrations import ScopeDirectory
from aizk_integrations.langchain import AizkEvidenceCompressor
from aizk_integrations.llama_index import AizkEvidencePostprocessor

READERS = [f"reader-{n:03d}" for n in range(200)]


def secret(reader: str) -> str:
    return f"private note of {reader}"


def documents() -> list[Document]:
    return [Document(secret(r), metadata={"scopes": [r]}) for r in READERS]


def nodes() -> list[NodeWithScore]:
    return [
        NodeWithScore(node=TextNode(text=secret(r), metadata={"scopes": [r]}), score=1.0)
        for r in READERS
    ]


def only_own(block: str, reader: str) -> bool:
    """The block holds the reader's note and nobody else's."""
    return secret(reader) in block and block.count("private note of") == 1


def test_a_shared_runnable_serves_eight_threads_each_with_its_own_reader() -> None:
    runnable = AizkEvidenceCompressor().as_runnable()
    docs = documents()

    def call(reader: str) -> bool:
        config = {"configurable": {"aizk_reader": ScopeDirectory.for_caller(reader, {})}}
        return only_own(runnable.invoke(docs, config=config), reader)  # type: ignore[arg-type]

    with ThreadPoolExecutor(max_workers=8) as pool:
        assert all(pool.map(call, READERS))


def test_a_shared_runnable_serves_two_hundred_tasks_each_with_its_own_reader() -> None:
    runnable = AizkEvidenceCompressor().as_runnable()
    docs = documents()

    async def call(reader: str) -> bool:
        config = {"configurable": {"aizk_reader": ScopeDirectory.for_caller(reader, {})}}
        await asyncio.sleep(0)  # let the tasks interleave
        return only_own(await runnable.ainvoke(docs, config=config), reader)  # type: ignore[arg-type]

    async def everyone() -> list[bool]:
        return await asyncio.gather(*(call(reader) for reader in READERS))

    assert all(asyncio.run(everyone()))


def test_a_shared_postprocessor_serves_eight_threads_each_bound_to_its_own_reader() -> None:
    packer = AizkEvidencePostprocessor()
    retrieved = nodes()

    def call(reader: str) -> bool:
        bound = packer.for_reader(ScopeDirectory.for_caller(reader, {}))
        (block,) = bound.postprocess_nodes(retrieved, query_str="mine?")
        return only_own(block.node.get_content(), reader)

    with ThreadPoolExecutor(max_workers=8) as pool:
        assert all(pool.map(call, READERS))


def test_a_shared_postprocessor_serves_two_hundred_tasks_each_bound_to_its_own_reader() -> None:
    packer = AizkEvidencePostprocessor()
    retrieved = nodes()

    async def call(reader: str) -> bool:
        bound = packer.for_reader(ScopeDirectory.for_caller(reader, {}))
        await asyncio.sleep(0)  # another task runs here, binding its own reader
        (block,) = await bound.apostprocess_nodes(retrieved, query_str="mine?")
        return only_own(block.node.get_content(), reader)

    async def everyone() -> list[bool]:
        return await asyncio.gather(*(call(reader) for reader in READERS))

    assert all(asyncio.run(everyone()))


def test_one_index_and_postprocessor_answer_concurrent_readers_from_their_own_evidence() -> None:
    index = VectorStoreIndex(
        [TextNode(text=secret(r), metadata={"scopes": [r]}) for r in READERS[:20]],
        embed_model=MockEmbedding(embed_dim=8),
    )
    shared = AizkEvidencePostprocessor()

    async def ask(reader: str) -> bool:
        engine = index.as_query_engine(
            llm=MockLLM(),
            node_postprocessors=[shared.for_reader(ScopeDirectory.for_caller(reader, {}))],
            similarity_top_k=20,
        )
        response = await engine.aquery("what is mine?")
        return only_own(str(response), reader)

    async def everyone() -> list[bool]:
        return await asyncio.gather(*(ask(reader) for reader in READERS[:20]))

    assert all(asyncio.run(everyone()))


def test_for_reader_refuses_anything_but_a_directory() -> None:
    with pytest.raises(TypeError, match="not switch authorization off"):
        AizkEvidencePostprocessor().for_reader(None)  # type: ignore[arg-type]


def test_a_bound_copy_packs_for_its_reader_and_the_instance_keeps_its_own() -> None:
    packer = AizkEvidencePostprocessor(reader=ScopeDirectory.for_caller("reader-001", {}))
    bound = packer.for_reader(ScopeDirectory.for_caller("reader-002", {}))
    (copy,) = bound.postprocess_nodes(nodes())
    (original,) = packer.postprocess_nodes(nodes())
    assert only_own(copy.node.get_content(), "reader-002")
    assert only_own(original.node.get_content(), "reader-001")
