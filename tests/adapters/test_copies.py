"""A bound reader survives every copy an app makes, or the copy is refused: never silently lost.

A packer bound to one reader and then copied (a process pool pickles what it is sent, a
framework deep-copies its components, a chain is saved with `dumpd` or `to_dict`) must answer
as that reader, or refuse to be made; a copy that answers as nobody fails closed, but it drops
the reader's evidence without a word, and a copy that answered as another would be worse.
"""

from __future__ import annotations

import copy
import os
import pickle
import warnings
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from functools import cache
from pathlib import Path
from typing import Any

import llama_index.core
import pytest
from langchain_core.documents import Document
from langchain_core.load import dumps, loads
from langchain_core.runnables import Runnable, RunnableBinding
from llama_index.core import VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.schema import NodeWithScore, TextNode

from aizk_integrations import Scope, ScopeDirectory, scope_metadata
from aizk_integrations.langchain import AizkEvidenceCompressor
from aizk_integrations.langchain._compressor import AizkEvidenceBlock
from aizk_integrations.llama_index import AizkEvidencePostprocessor, AizkScopedRetriever

SAM = ScopeDirectory.for_caller("sam", {"org-club": Scope(name="book-club")})
SAMS = "Sam's note: the reranker sidecar is back."
ANAS = "Ana's note: the gate code is 4417."
NOTES = [(SAMS, "sam"), (ANAS, "ana")]
QUESTION = "notes"


def nodes() -> list[NodeWithScore]:
    return [
        NodeWithScore(node=TextNode(id_=f"note-{i}", text=text, metadata=scope_metadata(owner)))
        for i, (text, owner) in enumerate(NOTES)
    ]


def documents() -> list[Document]:
    return [Document(text, metadata=scope_metadata(owner)) for text, owner in NOTES]


@cache
def index() -> VectorStoreIndex:
    notes = [TextNode(text=text, metadata=scope_metadata(owner)) for text, owner in NOTES]
    return VectorStoreIndex(notes, embed_model=MockEmbedding(embed_dim=8))


def packed_by(evidence: AizkEvidencePostprocessor) -> str:
    """The block `evidence` packs from Sam's and Ana's notes (module level: a process pool
    runs it)."""
    return "".join(scored.node.get_content() for scored in evidence.postprocess_nodes(nodes()))


def retrieved_by(retriever: AizkScopedRetriever) -> str:
    """The block a scoped retriever with evidence answers (module level, as above)."""
    return "".join(scored.node.get_content() for scored in retriever.retrieve(QUESTION))


def as_sam(block: str) -> bool:
    return SAMS in block and ANAS not in block


def pickled(value: Any) -> Any:
    return pickle.loads(pickle.dumps(value))


COPIES: dict[str, Callable[[Any], Any]] = {
    "pickle": pickled,
    "copy.deepcopy": copy.deepcopy,
    "copy.copy": copy.copy,
}


@pytest.mark.parametrize("copier", COPIES.values(), ids=COPIES.keys())
def test_a_postprocessor_bound_to_a_reader_keeps_the_reader_in_every_copy(
    copier: Callable[[Any], Any],
) -> None:
    bound = AizkEvidencePostprocessor(budget=200).for_reader(SAM)
    twin = copier(bound)
    assert as_sam(packed_by(twin))
    assert packed_by(twin) == packed_by(bound)


SAVED: dict[str, Callable[[AizkEvidencePostprocessor], AizkEvidencePostprocessor]] = {
    "to_dict": lambda bound: AizkEvidencePostprocessor.from_dict(bound.to_dict()),
    "to_json": lambda bound: AizkEvidencePostprocessor.from_json(bound.to_json()),
}


@pytest.mark.parametrize("save", SAVED.values(), ids=SAVED.keys())
def test_a_postprocessor_saved_with_to_dict_is_restored_bound_to_the_same_reader(
    save: Callable[[AizkEvidencePostprocessor], AizkEvidencePostprocessor],
) -> None:
    bound = AizkEvidencePostprocessor(budget=200).for_reader(SAM)
    assert bound.to_dict()["reader"] == SAM.model_dump(mode="json")
    restored = save(bound)
    assert as_sam(packed_by(restored))
    assert restored.to_dict() == bound.to_dict()
    unbound = AizkEvidencePostprocessor(budget=200)
    assert unbound.to_dict()["reader"] is None
    assert packed_by(AizkEvidencePostprocessor.from_dict(unbound.to_dict())) == ""


@pytest.mark.parametrize("copier", COPIES.values(), ids=COPIES.keys())
def test_a_scoped_retriever_bound_to_a_reader_keeps_the_reader_in_every_copy(
    copier: Callable[[Any], Any],
) -> None:
    evidence = AizkEvidencePostprocessor(budget=200)
    bound = AizkScopedRetriever(index(), evidence=evidence).for_reader(SAM)
    assert as_sam(retrieved_by(copier(bound)))


REQUESTS = 40


def offline_tiktoken() -> None:
    """Point a worker's tiktoken at the files llama-index-core ships, as LlamaIndex does in its
    own process: the index's text splitter holds a tiktoken encoding, which unpickling loads
    again (where a worker is a fresh interpreter) and would otherwise download."""
    os.environ["TIKTOKEN_CACHE_DIR"] = str(
        Path(llama_index.core.__file__).parent / "_static" / "tiktoken_cache"
    )


def test_a_for_reader_copy_sent_to_a_process_pool_answers_as_its_reader_every_time() -> None:
    evidence = AizkEvidencePostprocessor(budget=200)
    retriever = AizkScopedRetriever(index(), evidence=evidence).for_reader(SAM)
    # Each request's copy is pickled to a worker, whatever the start method.
    with ProcessPoolExecutor(2, initializer=offline_tiktoken) as pool:
        packed = pool.map(packed_by, [evidence.for_reader(SAM)] * REQUESTS)
        retrieved = pool.map(retrieved_by, [retriever] * REQUESTS)
        answers = [*packed, *retrieved]
    assert sum(map(as_sam, answers)) == 2 * REQUESTS


# LangChain: dumpd and loads


def load(saved: str, **options: Any) -> Any:
    with warnings.catch_warnings():  # loads is in beta, and its default is changing
        warnings.simplefilter("ignore")
        return loads(
            saved,
            allowed_objects=[AizkEvidenceCompressor, AizkEvidenceBlock, RunnableBinding],
            valid_namespaces=["aizk_integrations"],
            **options,
        )


def block_of(step: Runnable[Any, Any]) -> str:
    answer = step.invoke(documents())
    return answer if isinstance(answer, str) else "".join(d.page_content for d in answer)


def test_a_compressor_with_a_directory_keeps_it_through_dumpd_and_loads() -> None:
    packer = AizkEvidenceCompressor(reader=SAM)
    restored = load(dumps(packer))
    assert restored.reader == SAM
    assert as_sam("".join(d.page_content for d in restored.compress_documents(documents(), "")))
    assert as_sam(block_of(load(dumps(packer.as_runnable()))))


def test_a_step_bound_to_a_reader_by_its_config_keeps_it_through_pickle_and_copies() -> None:
    step = AizkEvidenceCompressor().as_runnable().with_config(configurable={"aizk_reader": SAM})
    for copier in COPIES.values():
        assert as_sam(block_of(copier(step)))


def test_a_step_bound_to_a_reader_by_its_config_is_refused_by_loads_never_loaded_as_nobody() -> (
    None
):
    step = AizkEvidenceCompressor().as_runnable().with_config(configurable={"aizk_reader": SAM})
    saved = dumps(step)
    with pytest.raises(NotImplementedError, match="ScopeDirectory"):
        load(saved)
    # Told to skip what it cannot load, LangChain leaves None where the reader was: refused at
    # the first call, saying what happened.
    lenient = load(saved, ignore_unserializable_fields=True)
    with pytest.raises(TypeError, match=r"not NoneType.*\. None is what LangChain's loads"):
        lenient.invoke(documents())
