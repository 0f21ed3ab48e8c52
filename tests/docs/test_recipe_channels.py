"""The docs' recipes for many readers retrieve for the reader: no framework channel carries two
readers' private notes together.

The packer keeps every prompt right whatever retrieval hands it, but what a plain retriever
returns travels first through the framework's own channels: LangChain's runs (what
`astream_events`, `astream_log` and LangSmith report), LlamaIndex's instrumentation events and
its DEBUG log of the top nodes. A recipe that serves two readers from one store must retrieve
with `AizkScopedRetriever`, so each retrieval holds one reader's notes at most.
"""

from __future__ import annotations

import contextlib
import io
import logging
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.tracers.context import collect_runs
from langchain_core.tracers.schemas import Run
from llama_index.core.instrumentation import get_dispatcher  # type: ignore[attr-defined]
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events import BaseEvent
from pydantic import Field

from tests.docs.pages import DOCS, README, ROOT, Block, blocks

TWINE = ("Sam is testing the reranker.", "Ana is buying twine.")
RECIPES = [
    (README, "LangChain", *TWINE),
    (README, "LlamaIndex", "Sam prefers morning study blocks.", "the tomatoes need staking."),
    (DOCS / "langchain.md", "A RAG chain", "sidecar is back up on port 8004.", "buy twine and two"),
    (
        DOCS / "langchain.md",
        "Inside LangChain",
        "targets the reranker ablation.",
        "gate code is 4417.",
    ),
    (DOCS / "llama_index.md", "One engine, many readers", *TWINE),
    (DOCS / "llama_index.md", "Chat engines", "on the second Thursday.", "gate code is 4417."),
    (DOCS / "agents.md", "LangChain: `AizkMemoryMiddleware`", *TWINE),
    (DOCS / "agents.md", "LlamaIndex: `AizkMemoryBlock`", *TWINE),
    (DOCS / "recipes.md", "LangChain: an LCEL chain", *TWINE),
    (DOCS / "recipes.md", "LangChain: retrieval chains", *TWINE),
    (DOCS / "recipes.md", "LlamaIndex: `for_reader`", *TWINE),
]
"""Every recipe that serves Sam and Ana from one store: page, section, a private note of Sam's
and one of Ana's (or a part of each that no other note has)."""


class Events(BaseEventHandler):
    """Every LlamaIndex instrumentation event after ingestion, as the text a handler would send
    on. Embedding events are left out: building an index embeds, and so sends, every note, as a
    store's ingestion does whoever reads later."""

    texts: list[str] = Field(default_factory=list)

    def handle(self, event: BaseEvent, **kwargs: Any) -> None:
        if not event.class_name().startswith("Embedding"):
            self.texts.append(repr(event.model_dump()))


class Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.texts: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.texts.append(record.getMessage())


def runs_of(runs: list[Run]) -> Iterator[Run]:
    for run in runs:
        yield run
        yield from runs_of(run.child_runs)


def channels(snippet: Block) -> list[str]:
    """What the frameworks' channels carried while the snippet ran as a script: LangChain's
    runs (inputs and outputs), LlamaIndex's events, and every log line down to DEBUG."""
    events, lines = Events(), Lines()
    dispatcher = get_dispatcher()
    dispatcher.add_event_handler(events)
    loggers = [
        logging.getLogger(name) for name in ("llama_index", "langchain", "aizk_integrations")
    ]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.DEBUG)
    logging.getLogger().addHandler(lines)
    try:
        with (
            contextlib.chdir(ROOT),
            contextlib.redirect_stdout(io.StringIO()),
            warnings.catch_warnings(),
            collect_runs() as collected,
        ):
            warnings.simplefilter("ignore")  # the page tests hold the snippets to the filters
            exec(compile(snippet.code, snippet.name, "exec"), {"__name__": "__main__"})
    finally:
        logging.getLogger().removeHandler(lines)
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)
        dispatcher.event_handlers.remove(events)
    runs = [f"{run.inputs!r} {run.outputs!r}" for run in runs_of(collected.traced_runs)]
    return runs + events.texts + lines.texts


@pytest.mark.parametrize(
    ("page", "section", "sams", "anas"),
    RECIPES,
    ids=[f"{page.name} {section}" for page, section, _, _ in RECIPES],
)
def test_no_channel_of_a_many_reader_recipe_carries_two_readers_notes_together(
    page: Path, section: str, sams: str, anas: str
) -> None:
    [snippet] = [
        block
        for block in blocks(page)
        if block.language == "python" and block.section.startswith(section)
    ]
    assert sams in snippet.code
    assert anas in snippet.code
    carried = channels(snippet)
    assert any(sams in text or anas in text for text in carried), "the channels were recorded"
    assert [text for text in carried if sams in text and anas in text] == []
