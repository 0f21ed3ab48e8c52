"""The user-facing pages, read the way a renderer reads them: fenced blocks and their headings.

Parsing with markdown-it (a CommonMark parser) rather than a regex means a fence inside a list,
or a heading inside a code block, is what GitHub would show, not what a pattern happens to match.
"""

from __future__ import annotations

import contextlib
import io
import re
from dataclasses import dataclass
from functools import cache
from itertools import pairwise
from pathlib import Path

from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PUBLIC_MODULES = (
    "aizk_integrations",
    "aizk_integrations.langchain",
    "aizk_integrations.llama_index",
    "aizk_integrations.counters",
)
"""The modules a user imports from; every other module of the package is private."""
OUTPUT_INTRO = "It prints:"
"""The sentence that puts a snippet's exact output in the ```text block after it."""


@dataclass(frozen=True)
class Block:
    """One fenced code block of a page."""

    page: Path
    line: int
    """1-based line of the opening fence."""
    end: int
    """1-based line of the closing fence."""
    language: str
    code: str
    section: str
    """The text of the nearest heading above the block ("" before the first one)."""

    @property
    def name(self) -> str:
        """Where the block is, as a test id and in tracebacks: `docs/budgets.md:42`."""
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def pages() -> list[Path]:
    """Every page a user reads: the README, then the docs in name order."""
    return [README, *sorted(DOCS.glob("*.md"))]


@cache
def blocks(page: Path) -> tuple[Block, ...]:
    """The page's fenced code blocks, in order."""
    found = []
    section = ""
    tokens = MarkdownIt("commonmark").parse(page.read_text(encoding="utf-8"))
    for index, token in enumerate(tokens):
        if token.type == "heading_open":
            section = tokens[index + 1].content
        elif token.type == "fence" and token.map is not None:
            start, end = token.map  # 0-based, the end exclusive: the closing fence's line number
            found.append(Block(page, start + 1, end, token.info.strip(), token.content, section))
    return tuple(found)


def python_blocks() -> list[Block]:
    """Every python snippet of every page, in page order."""
    return [block for page in pages() for block in blocks(page) if block.language == "python"]


def section_blocks(page: Path, heading: str, language: str) -> list[Block]:
    """The `language` blocks under the heading that starts with `heading`."""
    return [
        block
        for block in blocks(page)
        if block.section.startswith(heading) and block.language == language
    ]


def shown_outputs() -> list[tuple[Block, Block]]:
    """Each python snippet paired with the ```text block a page says it prints.

    The pair is a python block, the sentence "It prints:" alone, then a text block.
    """
    paired = []
    for page in pages():
        lines = page.read_text(encoding="utf-8").splitlines()
        page_blocks = blocks(page)
        for snippet, shown in pairwise(page_blocks):
            if (snippet.language, shown.language) != ("python", "text"):
                continue
            between = "\n".join(lines[snippet.end : shown.line - 1]).strip()
            if between == OUTPUT_INTRO:
                paired.append((snippet, shown))
    return paired


def links(page: Path) -> list[str]:
    """The targets of the page's markdown links, as written."""
    tokens = MarkdownIt("commonmark").parse(page.read_text(encoding="utf-8"))
    return [
        str(child.attrs["href"])
        for token in tokens
        if token.children
        for child in token.children
        if child.type == "link_open"
    ]


def anchors(page: Path) -> set[str]:
    """The fragment ids GitHub gives the page's headings."""
    tokens = MarkdownIt("commonmark").parse(page.read_text(encoding="utf-8"))
    return {
        slug(tokens[index + 1].content)
        for index, token in enumerate(tokens)
        if token.type == "heading_open"
    }


def slug(heading: str) -> str:
    """GitHub's heading id: lower case, punctuation dropped, spaces turned into hyphens."""
    text = heading.lower().replace("`", "")
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


@cache
def printed_by(block: Block) -> str:
    """What a python snippet prints when run as a script from the repository root.

    Run in this process, once per session however many tests read it: importing LangChain and
    LlamaIndex costs seconds per interpreter.
    """
    output = io.StringIO()
    with contextlib.chdir(ROOT), contextlib.redirect_stdout(output):
        exec(compile(block.code, block.name, "exec"), {"__name__": "__main__"})
    return output.getvalue()
