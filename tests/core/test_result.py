"""The public result: provenance, scopes, URIs, the JSON contract and the golden block."""

from __future__ import annotations

import json
from typing import Any
from uuid import UUID

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from aizk_integrations import (
    Candidate,
    Evidence,
    Lane,
    Provenance,
    RecallResult,
    Scope,
    ScopeDirectory,
    pack,
)
from tests.golden import ARTIFACT, CONTENT, GOLDEN, GOLDEN_WITHOUT_DIRECTORY


def test_the_seed_example_renders_the_golden_block_byte_for_byte(
    seed_candidates: list[Candidate], seed_directory: ScopeDirectory
) -> None:
    result = RecallResult.from_candidates(seed_candidates, seed_directory)
    assert result.to_markdown() == GOLDEN


def test_without_a_directory_there_are_no_scope_labels_and_no_scopes_section(
    seed_candidates: list[Candidate],
) -> None:
    assert RecallResult.from_candidates(seed_candidates).to_markdown() == GOLDEN_WITHOUT_DIRECTORY


def test_no_evidence_renders_the_empty_string_not_a_scaffold(
    seed_directory: ScopeDirectory,
) -> None:
    assert RecallResult.from_candidates([], seed_directory).to_markdown() == ""
    assert RecallResult().to_markdown() == ""


def test_a_notebook_shows_the_block_rendered(
    seed_candidates: list[Candidate], seed_directory: ScopeDirectory
) -> None:
    result = RecallResult.from_candidates(seed_candidates, seed_directory)
    assert result._repr_markdown_() == GOLDEN


def test_the_public_json_is_pinned(
    seed_candidates: list[Candidate], seed_directory: ScopeDirectory
) -> None:
    dumped = RecallResult.from_candidates(seed_candidates, seed_directory).model_dump(mode="json")
    assert dumped == {
        "evidence": [
            {
                "provenance": "source",
                "text": seed_candidates[0].line,
                "scopes": ["private", "book-club"],
                "resource_uri": f"aizk://artifacts/{ARTIFACT}/contents/{CONTENT}",
            },
            {
                "provenance": "derived",
                "text": seed_candidates[1].line,
                "scopes": ["private"],
                "resource_uri": None,
            },
            {
                "provenance": "session",
                "text": seed_candidates[2].line,
                "scopes": ["private"],
                "resource_uri": None,
            },
        ],
        "shared_scopes": [{"name": "book-club", "description": "Neighborhood book club, Kawasaki"}],
    }


EXPECTED_PROVENANCE = {
    Lane.SOURCES: (Provenance.SOURCE, "Source excerpt"),
    Lane.WORKING_MEMORY: (Provenance.SESSION, "Recent session memory"),
    Lane.FACTS: (Provenance.DERIVED, "Derived memory"),
    Lane.PROFILE: (Provenance.DERIVED, "Derived memory"),
    Lane.COMMUNITIES: (Provenance.DERIVED, "Derived memory"),
    Lane.OVERVIEW: (Provenance.DERIVED, "Derived memory"),
}


@pytest.mark.parametrize("lane", list(Lane))
def test_every_lane_maps_to_its_public_provenance_and_label(lane: Lane) -> None:
    (evidence,) = RecallResult.from_candidates([Candidate(lane=lane, line="x")]).evidence
    provenance, label = EXPECTED_PROVENANCE[lane]
    assert evidence.provenance is provenance
    assert f"**{label}**" in RecallResult(evidence=(evidence,)).to_markdown()


def test_there_are_exactly_six_lanes() -> None:
    assert [lane.value for lane in Lane] == [
        "sources",
        "working_memory",
        "facts",
        "profile",
        "communities",
        "overview",
    ]


@given(st.lists(st.sampled_from(list(Lane)), min_size=1, max_size=12))
def test_no_lane_name_appears_in_the_json_or_the_block(lanes: list[Lane]) -> None:
    result = RecallResult.from_candidates(
        [Candidate(lane=lane, line="evidence", scopes=["me"]) for lane in lanes],
        ScopeDirectory.for_caller("me", {}),
    )
    rendered = result.to_markdown() + json.dumps(result.model_dump(mode="json"))
    for lane in Lane:
        assert lane.value not in rendered


def test_item_scopes_put_private_first_then_the_others_by_name() -> None:
    directory = ScopeDirectory.for_caller(
        "me", {"o1": Scope(name="zeta"), "o2": Scope(name="alpha"), "o3": Scope(name="mid")}
    )
    result = RecallResult.from_candidates(
        [Candidate(line="x", scopes=["o1", "me", "o3", "o2"])], directory
    )
    assert [s.name for s in result.evidence[0].scopes] == ["private", "alpha", "mid", "zeta"]
    assert "from scope `private ∩ alpha ∩ mid ∩ zeta`" in result.to_markdown()


def test_shared_scopes_dedupe_by_name_drop_private_and_sort_by_name() -> None:
    directory = ScopeDirectory.for_caller(
        UUID(int=1),
        {
            "b": Scope(name="beta", description="B"),
            "a": Scope(name="alpha", description="A"),
            "a2": Scope(name="alpha", description="A"),
        },
    )
    result = RecallResult.from_candidates(
        [
            Candidate(line="1", scopes=[UUID(int=1), "b"]),
            Candidate(line="2", scopes=["a"]),
            Candidate(line="3", scopes=["a2", "b"]),
        ],
        directory,
    )
    assert result.shared_scopes == (
        Scope(name="alpha", description="A"),
        Scope(name="beta", description="B"),
    )
    assert result.to_markdown().startswith("## Scopes\n\n- `alpha` A\n- `beta` B\n\n> Recalled")


def test_a_scope_outside_the_readers_directory_is_refused_not_rendered(
    seed_directory: ScopeDirectory,
) -> None:
    with pytest.raises(ValueError, match="scope 'org-secret' is not in this reader's directory"):
        RecallResult.from_candidates([Candidate(line="x", scopes=["org-secret"])], seed_directory)


def test_a_candidate_given_only_its_line_is_an_unscoped_source_with_no_artifact() -> None:
    candidate = Candidate(line="x")
    assert (candidate.lane, candidate.scopes) == (Lane.SOURCES, frozenset())
    assert (candidate.artifact_id, candidate.artifact_content_id) == (None, None)
    assert candidate.resource_uri is None
    directory = ScopeDirectory.for_caller("me", {})
    [evidence] = RecallResult.from_candidates(pack([candidate], 10), directory).evidence
    assert (evidence.provenance, evidence.scopes) == (Provenance.SOURCE, ())


def test_the_resource_uri_needs_both_artifact_ids() -> None:
    both = Candidate(line="x", artifact_id=ARTIFACT, artifact_content_id=CONTENT)
    only_one = Candidate(line="x", artifact_id=ARTIFACT)
    assert both.resource_uri == f"aizk://artifacts/{ARTIFACT}/contents/{CONTENT}"
    assert only_one.resource_uri is None
    assert "Resource" not in RecallResult.from_candidates([only_one]).to_markdown()


def test_an_artifact_id_that_is_not_a_uuid_is_a_validation_error() -> None:
    with pytest.raises(ValidationError, match="artifact_id"):
        Candidate(line="x", artifact_id="019820a1-...")


def test_scopes_accept_one_id_or_a_collection_of_str_uuid_and_int() -> None:
    assert Candidate(line="x", scopes="solo").scopes == frozenset({"solo"})
    assert Candidate(line="x", scopes=("a", UUID(int=5))).scopes == frozenset(
        {"a", str(UUID(int=5))}
    )
    # Database ids are their decimal text, the one spelling a directory keyed by int agrees on.
    assert Candidate(line="x", scopes=[3, 41]).scopes == frozenset({"3", "41"})
    assert ScopeDirectory.for_caller(3, {41: Scope(name="team")}).permits(frozenset({"3", "41"}))


@pytest.mark.parametrize(
    "scopes", [{"a": 1}, 3.5, True, [1.0], [""], [False], b"ab", "sam,org", "[a, b]"]
)
def test_scopes_of_the_wrong_type_are_a_validation_error(scopes: object) -> None:
    with pytest.raises(ValidationError, match="scope"):
        Candidate(line="x", scopes=scopes)  # type: ignore[arg-type]


def test_a_line_that_is_not_text_is_a_validation_error() -> None:
    with pytest.raises(ValidationError, match="line"):
        Candidate(line=b"bytes")  # type: ignore[arg-type]


PUBLIC_MODELS = [
    (Candidate, {"line": "x"}),
    (Evidence, {"provenance": Provenance.SOURCE, "text": "t"}),
    (RecallResult, {}),
    (Scope, {"name": "team"}),
    (ScopeDirectory, {"scopes": {}}),
]


@pytest.mark.parametrize(("model", "fields"), PUBLIC_MODELS, ids=lambda value: str(value))
def test_public_models_are_frozen(model: type[Any], fields: dict[str, object]) -> None:
    instance = model(**fields)
    name = next(iter(model.model_fields))
    with pytest.raises(ValidationError, match="Instance is frozen"):
        setattr(instance, name, getattr(instance, name))


@pytest.mark.parametrize(("model", "fields"), PUBLIC_MODELS, ids=lambda value: str(value))
def test_public_models_refuse_fields_they_do_not_have(
    model: type[Any], fields: dict[str, object]
) -> None:
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        model.model_validate({**fields, "score": 0.93})


@st.composite
def recalled(draw: st.DrawFn) -> RecallResult:
    names = draw(st.lists(st.sampled_from(["alpha", "beta", "gamma"]), unique=True, max_size=3))
    organizations = {
        f"org-{name}": Scope(name=name, description=draw(st.text(max_size=12))) for name in names
    }
    directory = ScopeDirectory.for_caller("me", organizations)
    ids = ["me", *organizations]
    candidates = [
        Candidate(
            lane=draw(st.sampled_from(list(Lane))),
            line=draw(st.text(st.characters(codec="utf-8"), max_size=20)),
            scopes=draw(st.lists(st.sampled_from(ids), min_size=1, max_size=3)),
            artifact_id=draw(st.none() | st.uuids()),
            artifact_content_id=draw(st.none() | st.uuids()),
        )
        for _ in range(draw(st.integers(0, 4)))
    ]
    return RecallResult.from_candidates(candidates, draw(st.sampled_from([directory, None])))


@given(recalled())
def test_a_result_reads_back_its_own_public_json(result: RecallResult) -> None:
    assert RecallResult.model_validate(result.model_dump(mode="json")) == result
    assert RecallResult.model_validate_json(result.model_dump_json()) == result


def test_json_whose_shared_scopes_no_evidence_names_is_not_a_results_json() -> None:
    data = {"evidence": [], "shared_scopes": [{"name": "club", "description": ""}]}
    with pytest.raises(ValidationError, match=r"shared_scopes names \['club'\], which no"):
        RecallResult.model_validate(data)
