"""Authorization as a law: a reader sees only evidence whose every scope is theirs."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from aizk_integrations import Scope, ScopeDirectory
from aizk_integrations.packer import PackingSettings, PackOutcome

ALL_SCOPES = ["me", "org-a", "org-b", "org-c", "org-d"]
NAMES = {"me": "private", "org-a": "alpha", "org-b": "beta", "org-c": "gamma", "org-d": "delta"}

items = st.lists(
    st.tuples(
        st.integers(min_value=0, max_value=40).map(lambda n: "x" * n),
        st.lists(st.sampled_from(ALL_SCOPES), max_size=3),
    ),
    max_size=25,
)
readers = st.sets(st.sampled_from(ALL_SCOPES[1:])).map(
    lambda orgs: ScopeDirectory.for_caller("me", {o: Scope(name=NAMES[o]) for o in orgs})
)
budgets = st.integers(min_value=1, max_value=400)


def permitted(scopes: list[str], reader: ScopeDirectory, allow_unscoped: bool) -> bool:
    """Written from DESIGN.md's sentence, not from ScopeDirectory.permits."""
    if not scopes:
        return allow_unscoped
    return all(scope in reader.scopes for scope in scopes)


def run(
    entries: list[tuple[str, list[str]]],
    budget: int,
    reader: ScopeDirectory | None,
    allow_unscoped: bool = False,
) -> PackOutcome:
    settings = PackingSettings(budget=budget, directory=reader, allow_unscoped=allow_unscoped)
    pairs = ((text, {"scopes": scopes}) for text, scopes in entries)
    return settings.pack_items(pairs, len(entries), str)


@given(items, readers, budgets, st.booleans())
def test_no_kept_item_carries_a_scope_outside_the_readers_directory(
    entries: list[tuple[str, list[str]]],
    reader: ScopeDirectory,
    budget: int,
    allow_unscoped: bool,
) -> None:
    outcome = run(entries, budget, reader, allow_unscoped)
    reader_names = {scope.name for scope in reader.scopes.values()}
    for position in outcome.kept_positions:
        assert permitted(entries[position][1], reader, allow_unscoped)
    for evidence in outcome.result.evidence:
        assert {scope.name for scope in evidence.scopes} <= reader_names
    block = outcome.result.to_markdown()
    labelled = re.findall(r"^- \*\*.*\*\* from scope `(.*)`$", block, re.MULTILINE)
    shown = {name for label in labelled for name in label.split(" ∩ ")}
    shown |= set(re.findall(r"^- `(.*)`", block, re.MULTILINE))
    assert shown <= reader_names


@given(items, readers, budgets, st.booleans())
def test_withheld_items_cost_no_budget(
    entries: list[tuple[str, list[str]]],
    reader: ScopeDirectory,
    budget: int,
    allow_unscoped: bool,
) -> None:
    outcome = run(entries, budget, reader, allow_unscoped)
    visible = [
        (position, text)
        for position, (text, scopes) in enumerate(entries)
        if permitted(scopes, reader, allow_unscoped)
    ]
    # The same walk over only the visible items, as if the withheld ones never existed.
    expected, spent = [], 0
    for position, text in visible:
        spent += -(-len(text) // 4) + 1
        if spent > budget:
            break
        expected.append(position)
    assert list(outcome.kept_positions) == expected


@given(items, readers, budgets)
def test_unscoped_items_appear_only_when_allowed(
    entries: list[tuple[str, list[str]]], reader: ScopeDirectory, budget: int
) -> None:
    strict = run(entries, budget, reader, allow_unscoped=False)
    assert all(entries[p][1] for p in strict.kept_positions)
    relaxed = run(entries, 10_000, reader, allow_unscoped=True)
    unscoped = [p for p, (_, scopes) in enumerate(entries) if not scopes]
    assert set(unscoped) <= set(relaxed.kept_positions)


@given(items, budgets)
def test_without_a_directory_nothing_is_withheld_and_nothing_is_labelled(
    entries: list[tuple[str, list[str]]], budget: int
) -> None:
    outcome = run(entries, budget, None)
    assert outcome.counts["withheld"] == 0
    kept = len(outcome.kept_positions)
    assert outcome.kept_positions == tuple(range(kept))
    assert all(not e.scopes for e in outcome.result.evidence)
    assert " from scope " not in outcome.result.to_markdown()
