"""The run both adapters share: mapping metadata, authorizing, packing, counting."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from itertools import count
from uuid import UUID

import pytest
from pydantic import ValidationError

from aizk_integrations import EvidenceError, Scope, ScopeDirectory
from aizk_integrations.packer import PackingSettings

READER = ScopeDirectory.for_caller("me", {"org": Scope(name="team")})


def label(position: int) -> str:
    return f"item {position}"


def run(
    settings: PackingSettings, items: list[tuple[object, object]], **overrides: object
) -> object:
    return settings.pack_items(iter(items), len(items), label, **overrides)  # type: ignore[arg-type]


def test_items_map_through_metadata_with_the_design_defaults() -> None:
    outcome = PackingSettings().pack_items(
        iter([("plain", {}), ("fact", {"lane": "facts", "scopes": "me"})]), 2, label
    )
    assert [e.provenance.value for e in outcome.result.evidence] == ["source", "derived"]
    assert outcome.counts == {
        "kept": 2,
        "cut_by_budget": 0,
        "withheld": 0,
        "tokens_used": 5,  # "plain" is 2 tokens + 1, "fact" 1 + 1
        "budget": 2048,
    }


def test_metadata_key_names_are_configurable() -> None:
    settings = PackingSettings(
        lane_key="kind",
        scopes_key="acl",
        artifact_id_key="doc",
        artifact_content_id_key="rev",
        directory=READER,
    )
    metadata = {"kind": "profile", "acl": ["me"], "doc": str(UUID(int=1)), "rev": UUID(int=2)}
    (evidence,) = settings.pack_items(iter([("x", metadata)]), 1, label).result.evidence
    assert evidence.provenance.value == "derived"
    assert evidence.resource_uri == f"aizk://artifacts/{UUID(int=1)}/contents/{UUID(int=2)}"
    assert [scope.name for scope in evidence.scopes] == ["private"]


@pytest.mark.parametrize(
    ("text", "metadata", "message"),
    [
        ("x", {"lane": "memories"}, "item 1: metadata 'lane' is 'memories'; allowed: sources, "),
        ("x", {"lane": ["facts"]}, "item 1: metadata 'lane' is \\['facts'\\]; allowed"),
        ("x", {"scopes": {"me": True}}, "item 1: metadata 'scopes': scopes must be a scope id"),
        ("x", {"scopes": 7}, "item 1: metadata 'scopes': scopes must be"),
        ("x", {"scopes": ["me", 3]}, "item 1: metadata 'scopes': each scope id must be"),
        ("x", {"artifact_id": "not-a-uuid"}, "item 1: metadata 'artifact_id' is 'not-a-uuid'"),
        ("x", {"artifact_content_id": 12}, "item 1: metadata 'artifact_content_id' is 12"),
        ("x", None, "item 1: metadata must be a mapping \\(dict\\), got NoneType"),
        ("x", ["lane"], "item 1: metadata must be a mapping \\(dict\\), got list"),
        (b"x", {}, "item 1: content must be text \\(str\\), got bytes"),
        (None, {}, "item 1: content must be text \\(str\\), got NoneType"),
    ],
)
def test_malformed_input_is_an_error_naming_the_item_and_the_field(
    text: object, metadata: object, message: str
) -> None:
    items = [("fine", {}), (text, metadata)]
    with pytest.raises(EvidenceError, match=message):
        run(PackingSettings(), items)


def test_metadata_is_read_and_never_changed() -> None:
    metadata = {"lane": "facts", "scopes": ["me", "org"], "artifact_id": str(UUID(int=3))}
    before = copy.deepcopy(metadata)
    run(PackingSettings(directory=READER), [("x", metadata)])
    assert metadata == before


def test_withheld_items_cost_nothing_and_are_counted() -> None:
    items: list[tuple[object, object]] = [
        ("x" * 40, {"scopes": ["stranger"]}),
        ("x" * 40, {"scopes": ["me"]}),
        ("x" * 40, {}),
        ("x" * 40, {"scopes": ["me", "org"]}),
    ]
    outcome = run(PackingSettings(directory=READER, budget=22), items)
    assert outcome.kept_positions == (1, 3)  # type: ignore[attr-defined]
    assert outcome.counts == {  # type: ignore[attr-defined]
        "kept": 2,
        "cut_by_budget": 0,
        "withheld": 2,
        "tokens_used": 22,
        "budget": 22,
    }


def test_unscoped_items_are_shown_only_when_allowed() -> None:
    settings = PackingSettings(directory=READER, allow_unscoped=True)
    assert run(settings, [("x", {})]).kept_positions == (0,)  # type: ignore[attr-defined]


def test_reading_stops_one_item_past_the_cut() -> None:
    pulled = count()

    def items() -> Iterator[tuple[object, object]]:
        for _ in range(100_000):
            next(pulled)
            yield ("x" * 40, {})

    outcome = PackingSettings(budget=110).pack_items(items(), 100_000, label)
    assert outcome.counts["kept"] == 10
    assert outcome.counts["cut_by_budget"] == 99_990
    assert next(pulled) == 11
    assert outcome.table().endswith("(99989 more after the cut, not read)")


def test_a_per_call_budget_and_reader_replace_the_instances() -> None:
    other = ScopeDirectory.for_caller("you", {})
    items: list[tuple[object, object]] = [("x" * 40, {"scopes": "you"})] * 3
    outcome = run(PackingSettings(directory=READER), items, budget=22, directory=other)
    assert outcome.counts["kept"] == 2  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="between 1 and max_budget \\(16384\\), got 16385"):
        run(PackingSettings(), items, budget=16385)


def test_a_counter_error_names_the_callers_item() -> None:
    settings = PackingSettings(token_counter=lambda text: -1)
    with pytest.raises(EvidenceError, match="item 0: token_counter must return"):
        run(settings, [("x", {})])


def test_chars_per_token_changes_the_heuristic() -> None:
    outcome = run(PackingSettings(chars_per_token=2.0), [("x" * 10, {})])
    assert outcome.counts["tokens_used"] == 6  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"budget": 0}, "budget must be between 1 and max_budget \\(16384\\), got 0"),
        ({"budget": 16385}, "got 16385"),
        ({"budget": 20, "max_budget": 10}, "between 1 and max_budget \\(10\\), got 20"),
        ({"budget": True}, "valid integer"),
        ({"budget": 10.0}, "valid integer"),
        ({"budget": -5}, "got -5"),
        ({"chars_per_token": 0}, "chars_per_token must be a positive finite number, got 0"),
        ({"chars_per_token": -1.0}, "positive finite number, got -1.0"),
        ({"chars_per_token": float("nan")}, "positive finite number, got nan"),
        ({"chars_per_token": float("inf")}, "positive finite number, got inf"),
        ({"chars_per_token": "4"}, "positive finite number, not str"),
        ({"token_counter": 5}, "callable"),
        ({"directory": {"me": "private"}}, "directory"),
        ({"lane_key": ""}, "lane_key"),
        ({"budjet": 100}, "budjet\n  Extra inputs are not permitted"),
    ],
)
def test_bad_settings_fail_at_construction_saying_what_is_allowed(
    settings: dict[str, object], message: str
) -> None:
    with pytest.raises(ValidationError, match=message):
        PackingSettings(**settings)  # type: ignore[arg-type]
