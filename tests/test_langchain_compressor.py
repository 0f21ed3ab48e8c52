"""The LangChain compressor on its own: settings, mapping, authorization, the block, the counts."""

from __future__ import annotations

import asyncio
import copy
import importlib
import json
import logging
import re
import sys
from collections.abc import Iterator, Sequence
from math import ceil
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from langchain_core.documents import BaseDocumentCompressor, Document
from pydantic import ValidationError

import aizk_integrations.langchain as adapter
from aizk_integrations import EvidenceError, Scope, ScopeDirectory
from aizk_integrations.langchain import AizkEvidenceCompressor
from aizk_integrations.packer import PackOutcome
from tests.conftest import ARTIFACT, BOOK_CLUB, CONTENT, SAM
from tests.test_result import GOLDEN

ANA = "ana"
GARDEN = "org-garden"

ANA_SECRET = "Ana's garden gate code is 4417."
UNSCOPED = "A scratch note that no scope vouches for."


def sam_directory() -> ScopeDirectory:
    return ScopeDirectory.for_caller(
        SAM, {BOOK_CLUB: Scope(name="book-club", description="Neighborhood book club, Kawasaki")}
    )


def seed_documents() -> list[Document]:
    """The seed's three rows as a retriever would return them, plus two Sam may not see."""
    return [
        Document(
            id="plan",
            page_content=(
                "Q3 Retrieval Plan by Sam (author) observed 2026-07-02\n"
                "  Week three targets the reranker ablation and the fused-lane sweep."
            ),
            metadata={
                "lane": "sources",
                "scopes": [SAM, BOOK_CLUB],
                "artifact_id": str(ARTIFACT),
                "artifact_content_id": str(CONTENT),
                "source": "q3-plan.md",
            },
        ),
        Document(
            id="gate",
            page_content=ANA_SECRET,
            metadata={"lane": "facts", "scopes": [ANA, GARDEN]},
        ),
        Document(
            id="prefers",
            page_content="- [Sam, author, preference] (prefers) Sam prefers morning study blocks.",
            metadata={"lane": "facts", "scopes": [SAM], "score": 0.93},
        ),
        Document(page_content=UNSCOPED, metadata={"lane": "working_memory"}),
        Document(
            id="sidecar",
            page_content="- [note] Sam: reranker sidecar is back up on port 8004.",
            metadata={"lane": "working_memory", "scopes": SAM},
        ),
    ]


def sized_documents(count: int, chars: int = 40) -> list[Document]:
    """Documents of `chars` characters each in Sam's private scope: each costs chars/4 + 1."""
    return [
        Document(page_content=f"{index}".ljust(chars, "x"), metadata={"scopes": [SAM]})
        for index in range(count)
    ]


# The compressor as a framework component


def test_the_adapter_module_exports_are_pinned() -> None:
    assert sorted(adapter.__all__) == [
        "AizkEvidenceCompressor",
        "BUDGET_CONFIG_KEY",
        "COUNTS_METADATA_KEY",
        "DIRECTORY_CONFIG_KEY",
        "RECALL_METADATA_KEY",
    ]
    assert adapter.BUDGET_CONFIG_KEY == "aizk_budget"
    assert adapter.DIRECTORY_CONFIG_KEY == "aizk_directory"
    assert adapter.RECALL_METADATA_KEY == "aizk_recall"
    assert adapter.COUNTS_METADATA_KEY == "aizk_counts"


def test_the_compressor_is_a_langchain_document_compressor_with_the_designs_defaults() -> None:
    packer = AizkEvidenceCompressor()
    assert isinstance(packer, BaseDocumentCompressor)
    assert packer.budget == 2048
    assert packer.max_budget == 16384
    assert packer.directory is None
    assert packer.allow_unscoped is False
    assert packer.return_documents is False
    assert (packer.lane_key, packer.scopes_key) == ("lane", "scopes")
    assert (packer.artifact_id_key, packer.artifact_content_id_key) == (
        "artifact_id",
        "artifact_content_id",
    )


def test_importing_the_adapter_without_langchain_says_which_extra_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in list(sys.modules):
        if name == "langchain_core" or name.startswith("langchain_core."):
            monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.delitem(sys.modules, "aizk_integrations.langchain")
    with pytest.raises(ImportError, match=re.escape('pip install "aizk-integrations[langchain]"')):
        importlib.import_module("aizk_integrations.langchain")


# Settings


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"budget": 0}, "budget must be between 1 and max_budget (16384), got 0"),
        ({"budget": 16385}, "budget must be between 1 and max_budget (16384), got 16385"),
        ({"budget": 101, "max_budget": 100}, "between 1 and max_budget (100), got 101"),
        ({"budget": "2048"}, "budget\n  Input should be a valid integer"),
        ({"budget": 2048.0}, "budget\n  Input should be a valid integer"),
        ({"budget": True}, "budget\n  Input should be a valid integer"),
        ({"max_budget": 0}, "max_budget\n  Input should be greater than or equal to 1"),
        ({"directory": "sam"}, "directory\n  Input should be a valid dictionary or instance"),
        ({"allow_unscoped": "yes"}, "allow_unscoped\n  Input should be a valid boolean"),
        ({"return_documents": 1}, "return_documents\n  Input should be a valid boolean"),
        ({"lane_key": ""}, "lane_key\n  String should have at least 1 character"),
        ({"chars_per_token": 0}, "chars_per_token must be a positive finite number"),
        ({"token_counter": 4}, "token_counter\n  Input should be callable"),
        ({"budgett": 10}, "budgett\n  Extra inputs are not permitted"),
    ],
)
def test_bad_settings_fail_at_construction_saying_what_is_allowed(
    settings: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValidationError, match=re.escape(message)):
        AizkEvidenceCompressor(**settings)


def test_settings_cannot_be_changed_after_construction_past_their_validation() -> None:
    packer = AizkEvidenceCompressor(budget=100)
    with pytest.raises(ValidationError, match="Instance is frozen"):
        packer.budget = 20000
    with pytest.raises(ValidationError, match="Instance is frozen"):
        packer.max_budget = 50
    assert (packer.budget, packer.max_budget) == (100, 16384)


# The block


def test_the_seed_example_packs_into_the_golden_block_without_what_sam_may_not_see() -> None:
    packer = AizkEvidenceCompressor(directory=sam_directory())
    [block] = packer.compress_documents(seed_documents(), query="what is Sam working on?")
    assert block.page_content == GOLDEN


def test_the_block_document_carries_the_public_json_and_the_counts_and_nothing_internal() -> None:
    packer = AizkEvidenceCompressor(directory=sam_directory(), budget=100)
    [block] = packer.compress_documents(seed_documents(), query="q")
    assert block.id is None
    assert block.metadata == {
        "aizk_recall": {
            "evidence": [
                {
                    "provenance": "source",
                    "text": seed_documents()[0].page_content,
                    "scopes": ["private", "book-club"],
                    "resource_uri": f"aizk://artifacts/{ARTIFACT}/contents/{CONTENT}",
                },
                {
                    "provenance": "derived",
                    "text": seed_documents()[2].page_content,
                    "scopes": ["private"],
                    "resource_uri": None,
                },
                {
                    "provenance": "session",
                    "text": seed_documents()[4].page_content,
                    "scopes": ["private"],
                    "resource_uri": None,
                },
            ],
            "shared_scopes": [
                {"name": "book-club", "description": "Neighborhood book club, Kawasaki"}
            ],
        },
        "aizk_counts": {
            "kept": 3,
            "cut_by_budget": 0,
            "withheld": 2,
            "tokens_used": 66,
            "budget": 100,
        },
    }
    dumped = json.dumps(block.metadata) + block.page_content
    for internal in ('"working_memory"', '"facts"', '"lane"', "0.93", '"plan"', '"sidecar"'):
        assert internal not in dumped
    assert "q3-plan.md" not in dumped


def test_without_a_directory_every_document_is_shown_without_scope_labels() -> None:
    [block] = AizkEvidenceCompressor().compress_documents(seed_documents(), query="q")
    assert ANA_SECRET in block.page_content
    assert UNSCOPED in block.page_content
    assert "from scope" not in block.page_content
    assert block.metadata["aizk_counts"]["withheld"] == 0


def test_unscoped_documents_are_shown_to_a_reader_only_when_allowed() -> None:
    strict = AizkEvidenceCompressor(directory=sam_directory())
    lenient = AizkEvidenceCompressor(directory=sam_directory(), allow_unscoped=True)
    [strict_block] = strict.compress_documents(seed_documents(), query="q")
    [lenient_block] = lenient.compress_documents(seed_documents(), query="q")
    assert UNSCOPED not in strict_block.page_content
    assert UNSCOPED in lenient_block.page_content
    assert ANA_SECRET not in lenient_block.page_content


def test_a_document_in_two_scopes_needs_a_reader_of_both() -> None:
    book_club_only = ScopeDirectory(scopes={BOOK_CLUB: Scope(name="book-club")})
    documents = [seed_documents()[0]]
    assert AizkEvidenceCompressor(directory=book_club_only).compress_documents(documents, "q") == []


def test_empty_input_gives_no_documents() -> None:
    assert AizkEvidenceCompressor().compress_documents([], query="q") == []


def test_everything_withheld_gives_no_documents_not_an_empty_scaffold() -> None:
    ana_only = [seed_documents()[1], seed_documents()[3]]
    assert AizkEvidenceCompressor(directory=sam_directory()).compress_documents(ana_only, "q") == []


def test_custom_metadata_key_names_are_read_instead_of_the_defaults() -> None:
    packer = AizkEvidenceCompressor(
        directory=sam_directory(),
        lane_key="kind",
        scopes_key="acl",
        artifact_id_key="doc_uuid",
        artifact_content_id_key="rev_uuid",
    )
    document = Document(
        page_content="Sam keeps the reading list.",
        metadata={
            "kind": "working_memory",
            "acl": [SAM],
            "doc_uuid": str(ARTIFACT),
            "rev_uuid": str(CONTENT),
            "lane": "not a lane, and not read",
        },
    )
    [block] = packer.compress_documents([document], query="q")
    [evidence] = block.metadata["aizk_recall"]["evidence"]
    assert evidence["provenance"] == "session"
    assert evidence["scopes"] == ["private"]
    assert evidence["resource_uri"] == f"aizk://artifacts/{ARTIFACT}/contents/{CONTENT}"


# Budgets


@pytest.mark.parametrize(
    ("budget", "kept"),
    [
        pytest.param(1, 0, id="smallest"),
        pytest.param(33, 3, id="exact-fit"),
        pytest.param(32, 2, id="one-token-short"),
        pytest.param(16384, 3, id="maximum"),
    ],
)
def test_budget_edges_keep_the_longest_prefix_that_fits(budget: int, kept: int) -> None:
    documents = sized_documents(3)  # 10 tokens + 1 newline each: 11, 22, 33.
    packer = AizkEvidenceCompressor(directory=sam_directory(), budget=budget, return_documents=True)
    result = packer.compress_documents(documents, query="q")
    assert [document.page_content for document in result] == [
        document.page_content for document in documents[:kept]
    ]


def test_one_over_the_maximum_budget_is_refused_at_construction() -> None:
    with pytest.raises(ValidationError, match=re.escape("max_budget (16384), got 16385")):
        AizkEvidenceCompressor(budget=16385)


def test_a_document_after_the_cut_is_dropped_even_when_it_would_fit() -> None:
    documents = [*sized_documents(2), Document(page_content="tiny", metadata={"scopes": [SAM]})]
    packer = AizkEvidenceCompressor(directory=sam_directory(), budget=20)
    [block] = packer.compress_documents(documents, query="q")
    assert "tiny" not in block.page_content
    assert block.metadata["aizk_counts"] == {
        "kept": 1,
        "cut_by_budget": 2,
        "withheld": 0,
        "tokens_used": 11,
        "budget": 20,
    }


def test_a_token_counter_replaces_the_heuristic() -> None:
    packer = AizkEvidenceCompressor(
        budget=6, token_counter=lambda text: len(text.split()), return_documents=True
    )
    documents = [Document(page_content="one two"), Document(page_content="three four five")]
    assert [d.page_content for d in packer.compress_documents(documents, "q")] == ["one two"]


@st.composite
def retrievals(draw: st.DrawFn) -> tuple[list[Document], int]:
    scope_choices = st.sampled_from([[SAM], [SAM, BOOK_CLUB], [ANA], [BOOK_CLUB, GARDEN], []])
    lanes = st.sampled_from(["sources", "working_memory", "facts", "overview"])
    documents = draw(
        st.lists(
            st.builds(
                lambda text, lane, scopes: Document(
                    page_content=text, metadata={"lane": lane, "scopes": scopes}
                ),
                st.text(max_size=60),
                lanes,
                scope_choices,
            ),
            max_size=12,
        )
    )
    return documents, draw(st.integers(min_value=1, max_value=200))


@given(retrievals())
def test_kept_documents_and_counts_match_an_independent_prefix_oracle(
    retrieval: tuple[list[Document], int],
) -> None:
    documents, budget = retrieval
    readable = {SAM, BOOK_CLUB}
    # Oracle: walk in order, skip what Sam may not read, stop at the first that overflows.
    expected: list[str] = []
    withheld = running = 0
    for document in documents:
        scopes = set(document.metadata["scopes"])
        if not scopes or not scopes <= readable:
            withheld += 1
            continue
        running += ceil(len(document.page_content) / 4) + 1
        if running > budget:
            break
        expected.append(document.page_content)

    settings: dict[str, Any] = {"directory": sam_directory(), "budget": budget}
    kept = AizkEvidenceCompressor(**settings, return_documents=True).compress_documents(
        documents, "q"
    )
    assert [document.page_content for document in kept] == expected

    blocks = AizkEvidenceCompressor(**settings).compress_documents(documents, "q")
    if not expected:
        assert blocks == []
        return
    counts = blocks[0].metadata["aizk_counts"]
    assert counts["kept"] == len(expected)
    assert counts["withheld"] == withheld  # withheld among the documents read before the cut
    assert counts["cut_by_budget"] == len(documents) - len(expected) - withheld
    assert counts["tokens_used"] <= budget


# Returned documents instead of a block


def test_returned_documents_are_new_and_carry_only_their_public_fields() -> None:
    documents = seed_documents()
    packer = AizkEvidenceCompressor(directory=sam_directory(), return_documents=True)
    kept = packer.compress_documents(documents, query="q")
    assert [document.page_content for document in kept] == [
        documents[0].page_content,
        documents[2].page_content,
        documents[4].page_content,
    ]
    assert [document.metadata for document in kept] == [
        {
            "provenance": "source",
            "scope_names": ["private", "book-club"],
            "resource_uri": f"aizk://artifacts/{ARTIFACT}/contents/{CONTENT}",
        },
        {"provenance": "derived", "scope_names": ["private"], "resource_uri": None},
        {"provenance": "session", "scope_names": ["private"], "resource_uri": None},
    ]
    assert all(document.id is None for document in kept)
    originals = {id(document) for document in documents}
    originals |= {id(document.metadata) for document in documents}
    assert not originals & {id(document) for document in kept}
    assert not originals & {id(document.metadata) for document in kept}


def test_returned_documents_fed_back_in_are_not_mistaken_for_scoped_evidence() -> None:
    packer = AizkEvidenceCompressor(directory=sam_directory(), return_documents=True)
    kept = packer.compress_documents(seed_documents(), query="q")
    assert packer.compress_documents(kept, query="q") == []


def test_nothing_kept_returns_no_documents_in_either_mode() -> None:
    packer = AizkEvidenceCompressor(directory=sam_directory(), budget=1, return_documents=True)
    assert packer.compress_documents(seed_documents(), query="q") == []


# Input handling


def test_the_input_documents_are_never_mutated() -> None:
    documents = seed_documents()
    before = copy.deepcopy(documents)
    for return_documents in (False, True):
        packer = AizkEvidenceCompressor(
            directory=sam_directory(), return_documents=return_documents
        )
        for output in packer.compress_documents(documents, query="q"):
            output.metadata["touched"] = True
    assert documents == before


@pytest.mark.parametrize(
    ("document", "message"),
    [
        (
            Document(id="n7", page_content="x", metadata={"lane": "vibes"}),
            "documents[1] (id 'n7'): metadata 'lane' is 'vibes'; allowed: sources, "
            "working_memory, facts, profile, communities, overview",
        ),
        (
            Document(page_content="x", metadata={"scopes": 7}),
            "documents[1]: metadata 'scopes': scopes must be a scope id (str or UUID) or a list",
        ),
        (
            Document(page_content="x", metadata={"scopes": [SAM, ""]}),
            "documents[1]: metadata 'scopes': each scope id must be a non-empty str or a UUID",
        ),
        (
            Document(id="n7", page_content="x", metadata={"artifact_id": "not-a-uuid"}),
            "documents[1] (id 'n7'): metadata 'artifact_id' is 'not-a-uuid'; expected a UUID",
        ),
        (
            Document(page_content="x", metadata={"artifact_content_id": 12}),
            "documents[1]: metadata 'artifact_content_id' is 12; expected a UUID",
        ),
    ],
)
def test_malformed_metadata_is_an_error_naming_the_document_and_the_field(
    document: Document, message: str
) -> None:
    documents = [Document(page_content="fine", metadata={"scopes": [SAM]}), document]
    with pytest.raises(EvidenceError, match=re.escape(message)):
        AizkEvidenceCompressor(directory=sam_directory()).compress_documents(documents, "q")


def test_something_that_is_not_a_document_is_an_error_naming_its_position() -> None:
    documents: list[Any] = [Document(page_content="fine"), "just a string"]
    with pytest.raises(EvidenceError, match=re.escape("documents[1]: expected a langchain_core")):
        AizkEvidenceCompressor().compress_documents(documents, "q")


def test_a_failing_token_counter_is_an_error_naming_the_document() -> None:
    def counter(text: str) -> int:
        raise RuntimeError("tokenizer offline")

    packer = AizkEvidenceCompressor(token_counter=counter)
    with pytest.raises(EvidenceError, match=re.escape("documents[0] (id 'only'): token_counter")):
        packer.compress_documents([Document(id="only", page_content="x")], "q")


class CountingDocuments(Sequence[Document]):
    """A long retrieval that records how far the packer read into it."""

    def __init__(self, length: int) -> None:
        self.length = length
        self.read = 0

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> Document:  # type: ignore[override]  # no slices asked
        if not 0 <= index < self.length:
            raise IndexError(index)
        self.read = max(self.read, index + 1)
        return Document(page_content="x" * 40, metadata={"scopes": [SAM]})

    def __iter__(self) -> Iterator[Document]:
        return (self[index] for index in range(self.length))


def test_a_long_retrieval_is_read_only_one_document_past_the_cut() -> None:
    documents = CountingDocuments(100_000)
    packer = AizkEvidenceCompressor(directory=sam_directory(), budget=33)
    [block] = packer.compress_documents(documents, query="q")
    assert documents.read == 4
    assert block.metadata["aizk_counts"]["kept"] == 3
    assert block.metadata["aizk_counts"]["cut_by_budget"] == 99_997


# Async and logging


def test_the_async_call_gives_the_same_result_as_the_sync_call() -> None:
    for return_documents in (False, True):
        packer = AizkEvidenceCompressor(
            directory=sam_directory(), budget=40, return_documents=return_documents
        )
        expected = packer.compress_documents(seed_documents(), query="q")
        assert asyncio.run(packer.acompress_documents(seed_documents(), query="q")) == expected


def test_the_cut_table_is_logged_at_debug_level_with_the_lanes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="aizk_integrations.langchain")
    packer = AizkEvidenceCompressor(directory=sam_directory(), budget=40)
    [block] = packer.compress_documents(seed_documents(), query="q")
    [record] = [r for r in caplog.records if r.name == "aizk_integrations.langchain"]
    assert record.levelno == logging.DEBUG
    assert "budget 40" in record.getMessage()
    assert "sources" in record.getMessage()
    assert "drop, over budget" in record.getMessage()
    assert "sources" not in block.page_content


def test_the_cut_table_is_not_even_built_when_debug_logging_is_off(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    def table(self: PackOutcome) -> str:
        raise AssertionError("the table was built with debug logging off")

    monkeypatch.setattr(PackOutcome, "table", table)
    caplog.set_level(logging.INFO, logger="aizk_integrations.langchain")
    AizkEvidenceCompressor(directory=sam_directory()).compress_documents(seed_documents(), "q")
    assert not [r for r in caplog.records if r.name == "aizk_integrations.langchain"]
