"""The recipes for many readers from one app show each reader only their own evidence, and a
request with no reader nothing scoped."""

from __future__ import annotations

import re
from itertools import pairwise

import pytest
from markdown_it import MarkdownIt

from tests.docs.pages import DOCS, Block, blocks, printed_by

PAGE = DOCS / "recipes.md"
HEADING = "Many readers from one app"
NOTES = {"sam": "Sam is testing the reranker.", "ana": "Ana is buying twine."}
SECTION = re.compile(r"^--- (\w+)\b.*---$", re.MULTILINE)
"""A recipe prints `--- reader[, how] ---` before what that reader's request showed."""


def _section_lines() -> range:
    """The page's lines from the section's heading to the next heading of its level."""
    tokens = MarkdownIt("commonmark").parse(PAGE.read_text(encoding="utf-8"))
    h2 = [
        (tokens[n + 1].content, token.map[0] + 1)
        for n, token in enumerate(tokens)
        if token.type == "heading_open" and token.tag == "h2" and token.map is not None
    ]
    [(start, end)] = [
        (line, following[1]) for (name, line), following in pairwise(h2) if name == HEADING
    ]
    return range(start, end)


RECIPES = [
    block for block in blocks(PAGE) if block.language == "python" and block.line in _section_lines()
]
"""The python blocks of the section and its subsections."""


def sections(output: str) -> list[tuple[str, str]]:
    """`(reader, what was shown)` for each section a recipe printed."""
    parts = SECTION.split(output)
    return list(zip(parts[1::2], parts[2::2], strict=True))


@pytest.mark.parametrize("snippet", RECIPES, ids=lambda block: f"{block.name} {block.section}")
def test_each_reader_a_recipe_prints_sees_their_own_evidence_and_no_one_elses(
    snippet: Block,
) -> None:
    printed = sections(printed_by(snippet))
    assert printed, "a recipe prints each reader's section"
    for reader, shown in printed:
        assert reader in {"sam", "ana", "nobody", "everyone"}
        if reader == "everyone":  # the explicit opt-in: every caller may see everything
            continue
        for owner, note in NOTES.items():
            assert (note in shown) == (owner == reader), f"{reader} and {owner}'s note"


def test_the_recipes_show_both_readers_and_a_request_with_none() -> None:
    readers = {reader for block in RECIPES for reader, _ in sections(printed_by(block))}
    assert readers == {"sam", "ana", "nobody", "everyone"}
