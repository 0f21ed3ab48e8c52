"""The user-facing pages, read the way a renderer reads them: fenced blocks and their headings.

Parsing with markdown-it (a CommonMark parser) rather than a regex means a fence inside a list,
or a heading inside a code block, is what GitHub would show, not what a pattern happens to match.
"""

from __future__ import annotations

import contextlib
import gc
import io
import logging
import re
import warnings
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
    "aizk_integrations.langchain_agents",
    "aizk_integrations.llama_index",
    "aizk_integrations.counters",
    "aizk_integrations.mcp",
)
"""The modules a user imports from; every other module of the package is private."""
OUTPUT_INTRO = "It prints:"
"""The sentence that puts a snippet's exact output in the ```text block after it."""
LOG_INTRO = "and logs:"
"""The words that put the warnings a snippet logs in the ```text block after its output."""
LOGGER = "aizk_integrations"
"""The package's loggers, whose warnings a page may quote."""


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
    return [(snippet, shown) for page in pages() for snippet, shown in _introduced(page)]


def logged_outputs() -> list[tuple[Block, Block]]:
    """Each python snippet paired with the ```text block of the warnings a page says it logs.

    After the snippet and what it prints come the words "and logs:" alone, then a text block
    holding the messages, one a line.
    """
    logged = []
    for page in pages():
        shown = dict(_introduced(page))
        for snippet, output in shown.items():
            following = [block for block in blocks(page) if block.line > output.end]
            if following and _between(page, output, following[0]) == LOG_INTRO:
                logged.append((snippet, following[0]))
    return logged


def _introduced(page: Path) -> list[tuple[Block, Block]]:
    return [
        (snippet, shown)
        for snippet, shown in pairwise(blocks(page))
        if (snippet.language, shown.language) == ("python", "text")
        and _between(page, snippet, shown) == OUTPUT_INTRO
    ]


def _between(page: Path, before: Block, after: Block) -> str:
    """The page's text between two blocks, stripped."""
    lines = page.read_text(encoding="utf-8").splitlines()
    return "\n".join(lines[before.end : after.line - 1]).strip()


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


def printed_by(block: Block) -> str:
    """What a python snippet prints when run as a script from the repository root."""
    return _run(block)[0]


def logged_by(block: Block) -> list[str]:
    """The warnings (and worse) a python snippet logs on the package's loggers, in order."""
    return _run(block)[1]


class _Messages(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@cache
def _run(block: Block) -> tuple[str, list[str]]:
    """What a python snippet prints and logs when run as a script from the repository root.

    Run in this process, once per session however many tests read it: importing LangChain and
    LlamaIndex costs seconds per interpreter. Warnings are filtered as a script's are (Python's
    default filters), except that any warning a script would show is an error: so a snippet that
    calls a deprecated API fails, while a framework's own use of one, which its user never sees,
    does not.
    """
    output = io.StringIO()
    logged = _Messages()
    logger = logging.getLogger(LOGGER)
    logger.addHandler(logged)
    try:
        with (
            contextlib.chdir(ROOT),
            contextlib.redirect_stdout(output),
            warnings.catch_warnings(),
        ):
            warnings.resetwarnings()
            warnings.simplefilter("error")
            hidden = (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning)
            for category in hidden:
                warnings.filterwarnings("ignore", category=category)
            warnings.filterwarnings("error", category=DeprecationWarning, module="__main__")
            namespace = {"__name__": "__main__"}
            exec(compile(block.code, block.name, "exec"), namespace)
            # The script ends here: what it leaves open (LlamaIndex's default chat memory holds
            # a SQLite connection) is collected under a script's filters, as at interpreter exit.
            namespace.clear()
            gc.collect()
    finally:
        logger.removeHandler(logged)
    return output.getvalue(), logged.messages
