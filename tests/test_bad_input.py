"""Every row of the README's bad-input table, through both adapters.

Each bad input gets a clear error naming the item (id or position) and the field and saying
what is allowed; nothing half-done comes back, and the caller's objects are left as they were.
"""

from __future__ import annotations

import copy
import tracemalloc
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from langchain_core.documents import Document
from llama_index.core.schema import ImageNode, NodeWithScore, TextNode
from pydantic import ValidationError

from aizk_integrations import EvidenceError
from aizk_integrations.langchain import AizkEvidenceCompressor
from aizk_integrations.llama_index import AizkEvidencePostprocessor

Run = Callable[..., Sequence[Any]]


def langchain_items(entries: list[tuple[object, object]]) -> list[Document]:
    # model_construct skips LangChain's own validation, as a hand-built or deserialised
    # Document can; our checks must hold even then.
    return shared_build(
        entries,
        lambda n, text, metadata: Document.model_construct(
            id=f"doc-{n}", page_content=text, metadata=metadata
        ),
    )


def llama_items(entries: list[tuple[object, object]]) -> list[NodeWithScore]:
    return shared_build(
        entries,
        lambda n, text, metadata: NodeWithScore.model_construct(
            node=TextNode.model_construct(id_=f"doc-{n}", text=text, metadata=metadata),
            score=1.0,
        ),
    )


def shared_build(
    entries: list[tuple[object, object]], build: Callable[[int, object, object], Any]
) -> list[Any]:
    """One framework object per distinct entry, so a list of 100,000 repeats is cheap."""
    built: dict[int, Any] = {}
    items = []
    for n, entry in enumerate(entries):
        if id(entry) not in built:
            built[id(entry)] = build(n, *entry)
        items.append(built[id(entry)])
    return items


def run_langchain(entries: list[tuple[object, object]], **settings: Any) -> Sequence[Any]:
    return AizkEvidenceCompressor(**settings).compress_documents(langchain_items(entries), "q")


def run_llama(entries: list[tuple[object, object]], **settings: Any) -> Sequence[Any]:
    return AizkEvidencePostprocessor(**settings).postprocess_nodes(
        llama_items(entries), query_str="q"
    )


ADAPTERS = pytest.mark.parametrize(
    ("run", "label"),
    [
        (run_langchain, r"documents\[1\] \(id 'doc-1'\)"),
        (run_llama, r"node 'doc-1' \(position 1\)"),
    ],
    ids=["langchain", "llama_index"],
)

BAD_METADATA = [
    ({"lane": "memories"}, r"metadata 'lane' is 'memories'; allowed: sources, working_memory"),
    ({"scopes": {"org": True}}, r"metadata 'scopes': scopes must be a scope id \(str or UUID\)"),
    ({"scopes": 42}, r"metadata 'scopes': scopes must be a scope id \(str or UUID\) or a list"),
    ({"artifact_id": "019820a1-..."}, r"metadata 'artifact_id' is '019820a1-...'; expected a UUID"),
    ({"artifact_content_id": 7}, r"metadata 'artifact_content_id' is 7; expected a UUID"),
    (None, r"metadata must be a mapping \(dict\), got NoneType"),
    ("lane=facts", r"metadata must be a mapping \(dict\), got str"),
]


@ADAPTERS
@pytest.mark.parametrize(("metadata", "message"), BAD_METADATA)
def test_malformed_metadata_names_the_item_and_the_field_and_says_what_is_allowed(
    run: Run, label: str, metadata: object, message: str
) -> None:
    with pytest.raises(EvidenceError, match=f"^{label}: {message}"):
        run([("fine", {}), ("text", metadata)])


@ADAPTERS
def test_non_text_content_names_the_item(run: Run, label: str) -> None:
    with pytest.raises(EvidenceError, match=rf"^{label}: content must be text \(str\), got bytes"):
        run([("fine", {}), (b"\x89PNG", {})])


def test_an_image_node_without_text_is_refused_by_name() -> None:
    nodes = [NodeWithScore(node=ImageNode(id_="img", image="aGVsbG8="), score=1.0)]
    with pytest.raises(EvidenceError, match=r"node 'img' \(position 0\): content is a ImageNode"):
        AizkEvidencePostprocessor().postprocess_nodes(nodes)


@ADAPTERS
@pytest.mark.parametrize(
    ("counter", "message"),
    [
        (lambda text: 1 // 0, "token_counter raised ZeroDivisionError"),
        (lambda text: -3, "token_counter must return a non-negative int, got -3"),
        (lambda text: 2.5, "token_counter must return a non-negative int, got 2.5"),
        (lambda text: None, "token_counter must return a non-negative int, got None"),
    ],
)
def test_a_misbehaving_token_counter_names_the_item_it_failed_on(
    run: Run, label: str, counter: Callable[[str], object], message: str
) -> None:
    def fine_first(text: str) -> object:
        return 1 if text == "fine" else counter(text)

    with pytest.raises(EvidenceError, match=f"^{label}: {message}"):
        run([("fine", {}), ("text", {})], token_counter=fine_first)


@ADAPTERS
@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"chars_per_token": 0}, "chars_per_token must be a positive finite number, got 0"),
        ({"chars_per_token": -2.0}, "chars_per_token must be a positive finite number, got -2.0"),
        ({"chars_per_token": float("nan")}, "positive finite number, got nan"),
        ({"chars_per_token": float("inf")}, "positive finite number, got inf"),
        ({"budget": True}, "budget\n  Input should be a valid integer"),
        ({"budget": 512.0}, "budget\n  Input should be a valid integer"),
        ({"budget": 0}, r"budget must be between 1 and max_budget \(16384\), got 0"),
        ({"budget": -1}, "budget must be an int >= 0, got -1"),
        ({"budget": 16385}, r"budget must be between 1 and max_budget \(16384\), got 16385"),
        ({"budget": 600, "max_budget": 500}, r"between 1 and max_budget \(500\), got 600"),
    ],
)
def test_bad_settings_fail_when_the_adapter_is_built(
    run: Run, label: str, settings: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValidationError, match=message):
        run([("text", {})], **settings)


@ADAPTERS
def test_a_failed_call_leaves_every_input_as_it_was(run: Run, label: str) -> None:
    entries: list[tuple[object, object]] = [
        ("fine", {"lane": "facts", "scopes": ["me"]}),
        ("text", {"lane": "memories", "scopes": ["me"]}),
    ]
    before = copy.deepcopy(entries)
    with pytest.raises(EvidenceError):
        run(entries)
    assert entries == before


TEN_MB = "evidence " * (10 * 1024 * 1024 // 9)


@ADAPTERS
def test_a_ten_megabyte_text_is_cut_without_being_copied(run: Run, label: str) -> None:
    entries: list[tuple[object, object]] = [(TEN_MB, {})]
    tracemalloc.start()
    try:
        assert run(entries, budget=16384) == []
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1024 * 1024


@ADAPTERS
def test_a_ten_megabyte_text_a_counter_says_fits_is_packed_whole(run: Run, label: str) -> None:
    (block,) = run([(TEN_MB, {})], token_counter=lambda text: 1)
    content = block.page_content if isinstance(block, Document) else block.node.get_content()
    assert content.endswith("evidence evidence ")
    assert "- **Source excerpt**\n\n    evidence evidence" in content
    assert len(content) > len(TEN_MB)


@ADAPTERS
def test_a_hundred_thousand_items_are_read_only_up_to_the_cut(run: Run, label: str) -> None:
    entries: list[tuple[object, object]] = [("x" * 40, {})] * 100_000
    # The items past the cut are malformed: they are never read, so they raise nothing.
    entries[500] = ("x", {"lane": "not-a-lane"})
    (block,) = run(entries, budget=110)
    metadata = block.metadata if isinstance(block, Document) else block.node.metadata
    assert metadata["aizk_counts"]["kept"] == 10
    assert metadata["aizk_counts"]["cut_by_budget"] == 99_990
