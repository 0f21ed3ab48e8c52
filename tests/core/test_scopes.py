"""A reader's directory: which scopes they may read, what they call them, and that it stays so."""

from __future__ import annotations

import copy
import pickle
from uuid import UUID

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aizk_integrations import PUBLIC, Scope, ScopeDirectory

ORGS = {"org-a": Scope(name="alpha", description="A"), "org-b": Scope(name="beta")}


def reader() -> ScopeDirectory:
    return ScopeDirectory.for_caller("me", ORGS)


def test_the_callers_own_id_is_their_private_scope() -> None:
    assert reader().scopes["me"] == Scope(name="private")
    assert reader().scopes["org-a"] == ORGS["org-a"]
    assert set(reader().scopes) == {"me", "org-a", "org-b", PUBLIC}
    assert reader().scopes[PUBLIC] == Scope(name="public", description="Every reader may read it.")


def test_a_row_in_no_scope_is_refused_unless_the_caller_opts_in() -> None:
    assert reader().permits(frozenset()) is False
    assert reader().permits(frozenset(), allow_unscoped=True) is True


def test_a_row_in_two_scopes_needs_a_reader_of_both() -> None:
    assert reader().permits(frozenset({"me", "org-a"}))
    assert not reader().permits(frozenset({"me", "org-c"}))
    assert not ScopeDirectory(scopes={"org-a": ORGS["org-a"]}).permits(frozenset({"me", "org-a"}))


@given(st.sets(st.sampled_from(["me", "org-a", "org-b", "org-c", "org-d"])))
def test_permits_is_the_subset_rule(scopes: set[str]) -> None:
    expected = bool(scopes) and scopes <= {"me", "org-a", "org-b"}
    assert reader().permits(frozenset(scopes)) is expected


def test_uuid_keys_and_their_text_are_the_same_scope() -> None:
    org = UUID(int=9)
    directory = ScopeDirectory.for_caller(UUID(int=1), {org: Scope(name="team")})
    assert directory.permits(frozenset({str(UUID(int=1)), str(org)}))


def test_resolve_puts_private_first_then_names_and_refuses_unknown_ids() -> None:
    assert [s.name for s in reader().resolve(["org-b", "me", "org-a"])] == [
        "private",
        "alpha",
        "beta",
    ]
    with pytest.raises(ValueError, match="scope 'org-x' is not in this reader's directory"):
        reader().resolve(["org-x"])


def test_changing_the_callers_mapping_afterwards_changes_nothing() -> None:
    organizations = dict(ORGS)
    directory = ScopeDirectory.for_caller("me", organizations)
    organizations["org-ana"] = Scope(name="ana's diary")
    assert "org-ana" not in directory.scopes
    assert not directory.permits(frozenset({"org-ana"}))


def test_a_directorys_scopes_cannot_be_changed_in_place() -> None:
    directory = reader()
    with pytest.raises(TypeError):
        directory.scopes["org-ana"] = Scope(name="ana")  # type: ignore[index]  # the point
    with pytest.raises((TypeError, AttributeError)):
        del directory.scopes["me"]  # type: ignore[attr-defined]  # the point


def test_a_directory_pickles_and_copies_to_an_equal_directory() -> None:
    directory = reader()
    for twin in (pickle.loads(pickle.dumps(directory)), copy.deepcopy(directory)):
        assert twin == directory
        assert twin.permits(frozenset({"me", "org-b"}))
        assert dict(twin.scopes) == dict(directory.scopes)


def test_a_directory_dumps_to_plain_json() -> None:
    assert reader().model_dump(mode="json")["scopes"]["me"] == {
        "name": "private",
        "description": "",
    }
