"""Scoped retrieval on real data, over all eight supported stores: every id form the packer
accepts is found, an odd record fails no one, and readers of any size are answered exactly.

The oracle of every law is the packer itself: what it would show the reader of everything the
store holds is what scoped retrieval must return (`tests/adapters/stores.py`).
"""

from __future__ import annotations

import uuid
from functools import cache
from typing import Any

import pytest

from aizk_integrations import Scope, ScopeDirectory, scope_metadata
from tests.adapters.stores import APPROXIMATE, KINDS, Item, Store, build
from tests.scoped_corpus import READERS, directory_of, notes, questions

GUID = uuid.UUID("6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b")
OTHER_GUID = uuid.UUID("0a1b2c3d-4e5f-4a6b-8c7d-8e9fa0b1c2d3")
READER = ScopeDirectory(
    scopes={
        "sam": Scope(name="private"),
        "7": Scope(name="db-seven"),
        str(GUID): Scope(name="guid-team"),
        "org-club": Scope(name="club"),
    }
)
"""A reader whose directory was keyed by a string, a database id and a UUID."""


def _forms(me: str, number: int, guid: uuid.UUID, club: str) -> dict[str, Any]:
    """Every form of scopes the packer accepts, written by hand, by name; `me`, `number`, `guid`
    and `club` are the ids they name."""
    text = str(guid)
    return {
        "a bare string": me,
        "a list": [me],
        "a tuple": (me,),
        "a set": {me},
        "an int": number,
        "a list of an int": [number],
        "a tuple of an int": (number,),
        "an int's text": str(number),
        "a list of an int's text": [str(number)],
        "a UUID": guid,
        "a list of a UUID": [guid],
        "a UUID's text": text,
        "a UUID in capitals": text.upper(),
        "a list of a UUID in capitals": [text.upper()],
        "a UUID's hex": guid.hex,
        "a UUID's hex in capitals": guid.hex.upper(),
        "a UUID's URN": guid.urn,
        "a UUID in braces": f"{{{text}}}",
        "a UUID in braces in capitals": f"{{{text.upper()}}}",
        "a string and an int": [me, number],
        "a string and a UUID in capitals": [me, text.upper()],
        "an int and a string": [number, club],
        "two strings": [club, me],
        "as scope_metadata writes it": scope_metadata([me, number, guid])["scopes"],
    }


MINE = _forms("sam", 7, GUID, "org-club")
THEIRS = _forms("ana", 8, OTHER_GUID, "org-chess")
HALF_MINE = {
    "one of mine, one of theirs": ["sam", "ana"],
    "my int, their int": [7, 8],
    "my UUID, theirs in capitals": [str(GUID), str(OTHER_GUID).upper()],
}
ODD = {
    "a float": 7.0,
    "another float": 42.5,
    "True": True,
    "a dict": {"note": "Ana: my gate code is 4417"},
    "a nested list": [["sam"]],
    "ids encoded in one string": "sam,org-club",
    "an empty string": "",
    "an empty list": [],
    "None": None,
    "a list holding None": ["sam", None],
    "a list holding True": [True],
    "a line separator inside": "sam\u2028org-club",
    "a number too big for a store": 2**70,
}
"""Records no store filter can match for any reader, and the packer shows nobody."""


def _items() -> list[Item]:
    items = [Item(f"mine: {name}", {"scopes": value}) for name, value in MINE.items()]
    items += [Item(f"theirs: {name}", {"scopes": value}) for name, value in THEIRS.items()]
    items += [Item(f"half: {name}", {"scopes": value}) for name, value in HALF_MINE.items()]
    items += [Item(f"odd: {name}", {"scopes": value}) for name, value in ODD.items()]
    return [*items, Item("no scopes at all", {"source": "handbook.md"})]


@cache
def forms_store(kind: str) -> Store:
    return build(kind, [], odd=_items())


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    chosen: str = request.param
    return chosen


QUESTION = "mine theirs a list"


def test_the_packer_shows_the_reader_exactly_their_own_items_in_every_form() -> None:
    shown = set(build("langchain-in-memory", _items()).shown(READER, QUESTION))
    assert shown == {f"mine: {name}" for name in MINE}


def test_scoped_retrieval_finds_what_the_packer_would_show_in_every_form_on_every_store(
    kind: str,
) -> None:
    store = forms_store(kind)
    shown = store.shown(READER, QUESTION)
    found = store.scoped(READER, QUESTION, k=len(store.held))
    missing = sorted(set(shown) - set(found))
    extra = sorted(set(found) - set(shown))
    assert (missing, extra) == ([], [])
    assert shown == [text for text in store.shown(READER, QUESTION) if text.startswith("mine")]
    if kind not in APPROXIMATE:
        assert found == shown  # and in the store's own ranking


def test_the_async_path_finds_the_same(kind: str) -> None:
    store = forms_store(kind)
    k = len(store.held)
    assert store.ascoped(READER, QUESTION, k) == store.scoped(READER, QUESTION, k)


def test_what_a_store_refuses_to_hold_is_only_forms_it_cannot_keep(kind: str) -> None:
    """Chroma keeps only strings, numbers, booleans and lists of one type of them; every other
    store keeps every form. What a store refused was never stored: no reader can miss it."""
    refused = {item.text.split(": ", 1)[1] for item in forms_store(kind).refused}
    if kind.endswith("chroma"):
        assert refused <= CHROMA_REFUSES
    else:
        assert refused == set()


CHROMA_REFUSES = {
    "a tuple",
    "a set",
    "a tuple of an int",
    "a UUID",
    "a list of a UUID",
    "a string and an int",
    "an int and a string",
    "a dict",
    "a nested list",
    "a list holding None",
    "an empty list",
    "None",
    "a number too big for a store",
}


# One bad record never fails another reader's call


@cache
def shared_store(kind: str, odd: bool) -> Store:
    stored = [Item(note.text, note.metadata) for note in notes()]
    odd_ones = [Item(f"odd {name}", {"scopes": value}) for name, value in ODD.items()]
    return build(kind, stored, odd=odd_ones if odd else [])


def test_odd_records_in_a_shared_store_fail_no_readers_call_and_change_no_answer(
    kind: str,
) -> None:
    for reader in READERS[::4]:
        directory = directory_of(reader)
        question = questions(1, seed=READERS.index(reader))[0]
        with_odd, without = (shared_store(kind, odd) for odd in (True, False))
        found = with_odd.scoped(directory, question, k=12)
        assert not any(text.startswith("odd") for text in found)
        expected = without.scoped(directory, question, k=12)
        if kind in APPROXIMATE:
            assert len(set(found) & set(expected)) >= 10
        else:
            assert found == expected
        assert with_odd.packed(directory, question, 120) == without.packed(directory, question, 120)


# Readers of any size


def sized(reader: str, size: int) -> ScopeDirectory:
    """`reader`'s directory padded with groups that hold nothing to `size` scopes, half of them
    named by UUIDs, as a directory-synced enterprise reader's are."""
    if size == 0:
        return ScopeDirectory(scopes={})
    own = dict(directory_of(reader).scopes)
    for number in range(size - len(own)):
        key = str(uuid.UUID(int=number + 1)) if number % 2 else f"group-{number:05d}"
        own[key] = Scope(name=f"group {number}")
    scopes = dict(list(own.items())[:size])
    return ScopeDirectory(scopes=scopes)


@pytest.mark.parametrize("size", [0, 1, 100, 1000, 10_000])
def test_a_reader_of_any_size_is_answered_exactly(kind: str, size: int) -> None:
    store = shared_store(kind, odd=True)
    reader = sized(READERS[5], size)
    assert len(reader.scopes) == size
    question = questions(1, seed=size)[0]
    shown = store.shown(reader, question)[:12]
    found = store.scoped(reader, question, k=12)
    if kind in APPROXIMATE:
        assert len(set(found) & set(shown)) >= 0.8 * len(shown)
        assert set(found) <= set(store.shown(reader, question))
    else:
        assert found == shown


UNFILTERED = ("langchain-faiss", "llama-index-faiss")
"""The stores asked with no filter at all, and paged."""


@cache
def rare_reader_store(kind: str) -> Store:
    """200 of Ana's notes close to the question, and one of Sam's far from it."""
    theirs = [Item(f"garden note {n}", {"scopes": ["ana"]}) for n in range(200)]
    return build(kind, [*theirs, Item("a far away reply", {"scopes": ["sam"]})], max_fetch=8)


def test_a_rare_reader_is_found_with_a_page_of_one_on_every_store_that_filters_its_query(
    kind: str,
) -> None:
    # Paged unfiltered, 8 of Ana's notes would be all the store is asked for: only a store
    # asked for the reader's items alone finds Sam's within max_fetch.
    sam = ScopeDirectory.for_caller("sam", {})
    store = rare_reader_store(kind)
    found = store.scoped(sam, "garden note", k=1) + store.ascoped(sam, "garden note", k=1)
    if kind in UNFILTERED:
        assert found == []
    else:
        assert found == ["a far away reply", "a far away reply"]
