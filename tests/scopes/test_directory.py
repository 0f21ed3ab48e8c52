"""A reader's directory: which scopes they may read, what they call them, and that it stays so."""

from __future__ import annotations

import copy
import pickle
from uuid import UUID

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aizk_integrations import PUBLIC, Scope, ScopeDirectory, scope_metadata
from aizk_integrations._scopes.ids import spellings, stored_int

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


def test_organizations_given_as_names_are_refused_showing_the_scope_to_write() -> None:
    with pytest.raises(TypeError) as raised:
        ScopeDirectory.for_caller("sam", {"org-team": "Team"})  # type: ignore[arg-type]  # the point
    assert str(raised.value) == (
        "organization 'org-team' maps to str, not a Scope: write {'org-team': Scope(name='Team')}"
    )
    with pytest.raises(TypeError) as raised:
        ScopeDirectory.for_caller("sam", {"org-team": {"name": "Team"}})  # type: ignore[arg-type]  # the point
    assert str(raised.value) == (
        "organization 'org-team' maps to dict, not a Scope: write {'org-team': Scope(name=...)}"
    )


def test_organizations_given_as_a_list_of_ids_are_refused_showing_the_mapping_to_write() -> None:
    with pytest.raises(TypeError) as raised:
        ScopeDirectory.for_caller("sam", ["org-team"])  # type: ignore[arg-type]  # the point
    assert str(raised.value) == (
        "organizations must map each organization's scope id to a Scope, e.g. "
        "{'org-team': Scope(name='team')}, not a list"
    )


def test_an_organization_named_private_is_refused_naming_its_key() -> None:
    with pytest.raises(ValueError, match="is named") as raised:
        ScopeDirectory.for_caller("sam", {"org": Scope(name="private")})
    assert str(raised.value) == (
        "organization 'org' is named 'private': that name is the reader's own scope; give the "
        "organization its own name"
    )


caller_ids = st.one_of(
    st.text(st.characters(categories=["L", "N"]), min_size=1, max_size=8),
    st.uuids(),
    st.uuids().map(lambda uuid: str(uuid).upper()),
    st.integers(),
)
"""Every form a caller id takes: a name, a UUID in either spelling, a database id."""


@given(caller_ids, st.uuids())
def test_the_private_scope_id_is_the_callers_id_as_every_item_names_it(
    caller: str | UUID | int, organization: UUID
) -> None:
    directory = ScopeDirectory.for_caller(caller, {organization: Scope(name="team")})
    # An int is read as its decimal text is, however many digits; text spelling a UUID (an int
    # of 32 digits spells a UUID's hex) is canonical.
    spelled = str(caller)
    expected = str(UUID(spelled)) if not isinstance(caller, UUID) and _is_uuid(spelled) else spelled
    assert directory.private_scope_id == expected
    assert directory.scopes[expected] == Scope(name="private")
    # What a tool writes the reader's own memory under is readable by that reader alone.
    assert directory.may_read(scope_metadata(expected)["scopes"])
    assert not ScopeDirectory.for_caller("someone-else", {}).may_read([expected])


def _is_uuid(text: str) -> bool:
    try:
        UUID(text)
    except ValueError:
        return False
    return True


def test_a_directory_with_no_private_scope_has_no_private_scope_id() -> None:
    assert ScopeDirectory(scopes={"org-a": Scope(name="alpha")}).private_scope_id is None
    assert reader().private_scope_id == "me"


def test_a_uuid_spelled_as_no_code_writes_it_is_an_id_as_it_stands() -> None:
    mixed = "6F1C2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b"
    by_its_spelling = ScopeDirectory(scopes={mixed: Scope(name="team")})
    assert by_its_spelling.may_read([mixed])
    assert not by_its_spelling.may_read([mixed.lower()])
    assert not ScopeDirectory(scopes={mixed.lower(): Scope(name="team")}).may_read([mixed])
    assert scope_metadata(mixed) == {"scopes": [mixed]}


@pytest.mark.parametrize("line_break", ["\n", "\r", "\u2028", "\x85", "\v", "\f"])
def test_a_scope_id_holding_any_line_break_is_refused_as_a_key_and_when_written(
    line_break: str,
) -> None:
    # Each of these ends a line for `str.splitlines`, as the block reads lines: read as one id,
    # it would silently be a scope nobody is in.
    held = f"org{line_break}team"
    for build in (
        lambda: ScopeDirectory.for_caller("me", {held: Scope(name="team")}),
        lambda: ScopeDirectory.for_caller(held, {}),
        lambda: ScopeDirectory(scopes={held: Scope(name="team")}),
        lambda: scope_metadata(held),
        lambda: scope_metadata(["me", held]),
    ):
        with pytest.raises(ValueError, match=rf"holds a line break \(U\+{ord(line_break):04X}\)"):
            build()


@pytest.mark.parametrize(
    "unreadable",
    ["ana,bob", "ana bob", '["ana", "bob"]', {"x": 1}, {"ana": True}, [["ana"]], 7.0, True, b"ana"],
)
def test_scopes_that_cannot_be_read_as_ids_are_readable_by_no_one(unreadable: object) -> None:
    # A reader of every id those values could be taken to name still may not read them: the
    # store's answer is re-checked with may_read, and it must never take a guess for a yes.
    everyone = ScopeDirectory(
        scopes={each: Scope(name=f"s{index}") for index, each in enumerate(("ana", "bob", "x"))}
    )
    assert everyone.may_read(unreadable) is False
    assert everyone.may_read(["ana", "bob"]) is True


def test_a_directorys_scopes_show_as_the_dict_they_copy() -> None:
    scopes = reader().scopes
    assert repr(scopes) == repr(dict(scopes))
    assert repr(scopes).startswith("{'org-a': Scope(name='alpha', description='A')")


# What a store is asked for: every value it may hold for the reader's ids


def test_a_readers_ids_are_asked_for_in_every_spelling_a_store_may_hold() -> None:
    guid = "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b"
    asked = spellings(["sam", "7", guid])
    assert asked.numbers == (7,)
    assert asked.texts == tuple(
        sorted(
            [
                "sam",
                "7",
                guid,
                guid.upper(),
                guid.replace("-", ""),
                guid.upper().replace("-", ""),
                f"urn:uuid:{guid}",
                f"urn:uuid:{guid.upper()}",
                f"{{{guid}}}",
                f"{{{guid.upper()}}}",
            ]
        )
    )
    assert len(asked) == 11  # what a store's query plan is sized by


@pytest.mark.parametrize(
    ("text", "number"),
    [
        ("0", 0),
        ("-7", -7),
        (str(2**63 - 1), 2**63 - 1),
        (str(-(2**63)), -(2**63)),
        (str(2**63), None),  # past the 64 bits stores keep
        ("07", None),  # no int reads as it
        ("-0", None),
        ("7.0", None),
    ],
)
def test_a_database_id_is_asked_for_as_the_int_a_store_holds_within_64_bits(
    text: str, number: int | None
) -> None:
    assert stored_int(text) == number
    assert spellings([text]).numbers == (() if number is None else (number,))
