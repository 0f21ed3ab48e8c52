"""The rendering-safety page's table of transformations is what the block does: each row's input,
rendered through the public API, shows exactly the row's output (or is refused with its error)."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass
from uuid import UUID

import pytest
from langchain_core.documents import Document
from llama_index.core.schema import NodeWithScore, TextNode
from markdown_it import MarkdownIt
from pydantic import ValidationError

from aizk_integrations import (
    Candidate,
    Evidence,
    EvidenceError,
    Provenance,
    RecallResult,
    Scope,
    ScopeDirectory,
)
from aizk_integrations.langchain import AizkEvidenceCompressor
from aizk_integrations.llama_index import AizkEvidencePostprocessor
from tests.docs.pages import DOCS

PAGE = DOCS / "rendering-safety.md"
HEADING = "## Every transformation"
CONTENT_ID = "019820a4-0000-7000-8000-000000000002"
TEAM_ID = UUID("019820a1-0000-7000-8000-00000000000b")
LABEL = "- **Source excerpt**"


@dataclass(frozen=True)
class Row:
    what: str
    field: str
    given: object
    shown: str | None
    """What the block shows, or None when the input is refused."""
    refused_with: str | None

    def __str__(self) -> str:
        return f"{self.field}: {self.given!r}"


def code_spans(cell: str) -> list[str]:
    """The contents of the cell's code spans, as a CommonMark renderer reads them."""
    [inline] = MarkdownIt("commonmark").parseInline(cell)
    return [token.content for token in inline.children or [] if token.type == "code_inline"]


def table_rows() -> list[Row]:
    """The rows of the table under the page's `## Every transformation` heading."""
    text = PAGE.read_text(encoding="utf-8").split(HEADING, 1)[1].split("\n## ", 1)[0]
    lines = [line for line in text.splitlines() if line.startswith("|")]
    assert lines[0] == "| what | field | in | the block shows |"
    rows = []
    for line in lines[2:]:
        what, field, given, shown = (
            cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip().strip("|"))
        )
        [given_literal] = code_spans(given)
        [shown_literal] = code_spans(shown)
        refused = shown.startswith("refused")
        rows.append(
            Row(
                what=what,
                field=field,
                given=ast.literal_eval(given_literal),
                shown=None if refused else ast.literal_eval(shown_literal),
                refused_with=shown_literal if refused else None,
            )
        )
    return rows


ROWS = table_rows()


def shown_for_text(text: object) -> str:
    """The item's lines after its label, the same through both adapters and the core."""
    assert isinstance(text, str)
    # A refused row raises rather than withholds; the texts name no scope, a public corpus.
    strict = AizkEvidenceCompressor(raise_on_malformed=True, allow_unscoped=True)
    [document] = strict.compress_documents([Document(text)], query="")
    block = document.page_content
    [node] = shown_by_llama_index(text)
    assert node.node.get_content() == block
    assert RecallResult.from_candidates([Candidate(line=text)]).to_markdown() == block
    assert block.count(LABEL) == 1
    return block.split(LABEL, 1)[1].removeprefix("\n\n")


def shown_by_llama_index(text: str) -> list[NodeWithScore]:
    return AizkEvidencePostprocessor(
        raise_on_malformed=True, allow_unscoped=True
    ).postprocess_nodes([NodeWithScore(node=TextNode(text=text), score=1.0)])


def shown_for_scope_name(name: object) -> str:
    """The item's label; the `## Scopes` header shows the same one."""
    assert isinstance(name, str)
    directory = ScopeDirectory.for_caller("me", {"org": Scope(name=name)})
    block = RecallResult.from_candidates(
        [Candidate(line="x", scopes=["org"])], directory
    ).to_markdown()
    label = block.split(f"{LABEL} from scope ", 1)[1].split("\n", 1)[0]
    assert block.startswith(f"## Scopes\n\n- {label}\n\n")
    return label


def shown_for_description(description: object) -> str:
    """What follows the name on its `## Scopes` line."""
    assert description is None or isinstance(description, str)
    directory = ScopeDirectory.for_caller(
        "me", {"org": Scope(name="team", description=description)}
    )
    block = RecallResult.from_candidates(
        [Candidate(line="x", scopes=["org"])], directory
    ).to_markdown()
    line = block.splitlines()[2]
    assert line.startswith("- `team`")
    return line.removeprefix("- `team`").removeprefix(" ")


def resource_line_uri(block: str) -> str:
    resource = block.splitlines()[-1]
    assert resource.startswith("    Resource `")
    assert resource.endswith("`")
    return resource.removeprefix("    Resource `").removesuffix("`")


def shown_for_artifact_id(artifact_id: object) -> str:
    metadata = {"artifact_id": artifact_id, "artifact_content_id": CONTENT_ID}
    [document] = AizkEvidenceCompressor(
        raise_on_malformed=True, allow_unscoped=True
    ).compress_documents([Document("x", metadata=metadata)], query="")
    [node] = AizkEvidencePostprocessor(
        raise_on_malformed=True, allow_unscoped=True
    ).postprocess_nodes([NodeWithScore(node=TextNode(text="x", metadata=metadata), score=1.0)])
    assert document.page_content == node.node.get_content()
    return resource_line_uri(document.page_content)


def shown_for_resource_uri(uri: object) -> str:
    assert isinstance(uri, str)
    evidence = Evidence(provenance=Provenance.SOURCE, text="x", resource_uri=uri)
    return resource_line_uri(RecallResult(evidence=(evidence,)).to_markdown())


def shown_for_scope_id(scope_id: object) -> str:
    """The label of an item in that scope, for the reader whose directory names it `team`."""
    directory = ScopeDirectory.for_caller("me", {TEAM_ID: Scope(name="team")})
    packer = AizkEvidenceCompressor(reader=directory)
    [document] = packer.compress_documents([Document("x", metadata={"scopes": [scope_id]})], "")
    return document.page_content.split(f"{LABEL} from scope ", 1)[1].split("\n", 1)[0]


REFUSALS: dict[str, type[ValueError]] = {
    "EvidenceError": EvidenceError,
    "ValidationError": ValidationError,
    "ValueError": ValueError,
}
"""The errors the table may name, by name."""

SHOWN: dict[str, Callable[[object], str]] = {
    "text": shown_for_text,
    "scope name": shown_for_scope_name,
    "description": shown_for_description,
    "artifact_id": shown_for_artifact_id,
    "resource_uri": shown_for_resource_uri,
    "scope id": shown_for_scope_id,
}


@pytest.mark.parametrize("row", ROWS, ids=str)
def test_each_row_of_the_table_is_what_the_block_shows(row: Row) -> None:
    shown = SHOWN[row.field]
    if row.refused_with is None:
        assert shown(row.given) == row.shown, row.what
        return
    error = REFUSALS[row.refused_with]
    with pytest.raises(error) as raised:
        shown(row.given)
    assert type(raised.value) is error, row.what


def test_text_the_adapters_refuse_the_core_refuses_as_a_validation_error() -> None:
    refused = [row for row in ROWS if row.field == "text" and row.refused_with]
    assert refused
    for row in refused:
        assert isinstance(row.given, str)
        assert row.refused_with is not None
        with pytest.raises(REFUSALS[row.refused_with]):
            shown_by_llama_index(row.given)
        with pytest.raises(ValidationError):
            Candidate(line=row.given)


def test_the_table_covers_every_field_and_both_outcomes() -> None:
    assert {row.field for row in ROWS} == set(SHOWN)
    for field in SHOWN:
        if field != "scope id":
            assert any(row.field == field and row.refused_with for row in ROWS), field
        assert any(row.field == field and not row.refused_with for row in ROWS), field


def test_the_page_lists_exactly_the_renderers_the_matrix_runs() -> None:
    from tests.renderers.matrix import RENDERERS  # the matrix's Python renderers load here

    text = PAGE.read_text(encoding="utf-8").split("## The renderer matrix", 1)[1]
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    listed = [code_spans(row.split("|")[1])[0] for row in rows]
    assert listed == list(RENDERERS)


def test_the_pages_javascript_versions_are_the_lockfiles() -> None:
    import json

    from tests.renderers.matrix import HERE

    pinned = json.loads((HERE / "package.json").read_text(encoding="utf-8"))["dependencies"]
    text = PAGE.read_text(encoding="utf-8").split("## The renderer matrix", 1)[1]
    packages = ("markdown-it", "marked", "showdown", "micromark", "sanitize-html", "mathjax-full")
    for package in packages:
        assert f"{package} {pinned[package]}" in text, package
