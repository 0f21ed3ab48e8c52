"""The one run every adapter makes: read, authorize and pack a framework's items for one call.

A compressor, a postprocessor, an LCEL step, agent middleware and a memory block all call `run`
and get back one complete `Packing`: what was kept, what was read, what was withheld and the
counts a caller is told.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from aizk_integrations._core.evidence import Evidence
from aizk_integrations._core.packing import Step, cut, cut_table
from aizk_integrations._core.pricing import pricing_for
from aizk_integrations._core.result import RecallResult
from aizk_integrations._errors import naming_items
from aizk_integrations._run.paging import Fetched
from aizk_integrations._run.reading import Access, Held, MetadataKeys, Source, Withheld, read
from aizk_integrations._run.settings import PackingSettings
from aizk_integrations._scopes.directory import ScopeDirectory
from aizk_integrations._tokens import CharsPerToken, TokenCounter

Item = TypeVar("Item")


@dataclass(frozen=True)
class Packing(Generic[Item]):
    """One call's outcome: what was kept, what was read, and the counts a caller is told."""

    items: Sequence[Item]
    """The items as handed over (or, handed over lazily, as many as were read), by position."""
    kept: tuple[Step, ...]
    """The walk's steps of the kept items, each with its position in `items`."""
    steps: tuple[Step, ...]
    """The items the walk read: the kept ones and the one that ended it."""
    withheld: tuple[Held, ...]
    """Each item read that was left out before the walk: where it stood and why."""
    malformed: tuple[str, ...]
    """What is wrong with each malformed item the reader may read, the item named by its id."""
    tokens_used: int
    budget: int
    scores: tuple[float | None, ...]
    """The ranking score of each item the walk read, in order, where the framework gives one."""
    fetched: Fetched | None = None
    """What the store was asked for, when scoped retrieval fetched the items as they were read."""

    @property
    def total(self) -> int:
        """How many items the call was handed, or read when they came lazily."""
        return len(self.items)

    @property
    def result(self) -> RecallResult:
        """The kept evidence as the public `RecallResult`."""
        return RecallResult(evidence=self.evidence)

    @property
    def evidence(self) -> tuple[Evidence, ...]:
        return tuple(step.evidence for step in self.kept)

    @property
    def cut_by_budget(self) -> int:
        """Items the budget left out: the one that ended the walk, and all after it."""
        return self.total - len(self.kept) - len(self.withheld)

    @property
    def counts(self) -> dict[str, int | bool]:
        """The public counts: no lanes, scores or ids. `unreadable` and `malformed` are among the
        `withheld`; `max_fetch_reached` says scoped retrieval stopped paging with room left."""
        reasons = [held.reason for held in self.withheld]
        return {
            "kept": len(self.kept),
            "cut_by_budget": self.cut_by_budget,
            "withheld": len(self.withheld),
            "unreadable": reasons.count(Withheld.UNREADABLE),
            "malformed": reasons.count(Withheld.MALFORMED),
            "tokens_used": self.tokens_used,
            "budget": self.budget,
            "max_fetch_reached": self.fetched is not None and self.fetched.capped,
        }

    def table(self) -> str:
        """The cut table of the items read; items after the cut were never read."""
        unread = self.cut_by_budget - (len(self.steps) - len(self.kept))
        note = f"\n  ({unread} more after the cut, not read)" if unread > 0 else ""
        withheld = [
            (held.position, held.reason.value + (f": {held.problem}" if held.problem else ""))
            for held in self.withheld
        ]
        return cut_table(self.steps, self.budget, withheld) + note


def run(
    items: Iterable[Item],
    source: Source[Item],
    settings: PackingSettings,
    *,
    budget: int | None = None,
    reader: ScopeDirectory | None = None,
    counter: TokenCounter | None = None,
    fetched: Fetched | None = None,
) -> Packing[Item]:
    """Read, authorize and pack `items` in the order given, up to one item past the cut.

    `items` is what a caller handed over (a sequence, see `expect_sequence`), or items fetched
    as they are read (scoped retrieval's pages), which are then fetched only as far as the walk
    reads (`fetched` then says what that cost). A call's own `budget`, `reader` or `counter`
    replaces the settings'; a call can
    switch readers but cannot switch authorization off. A malformed item is an `EvidenceError`
    that names it as `source` does.
    """
    access = Access(
        settings.reader if reader is None else reader,
        settings.allow_unscoped,
        settings.allow_scoped_without_reader,
        settings.raise_on_malformed,
    )
    keys = MetadataKeys(
        settings.lane_key,
        settings.scopes_key,
        settings.artifact_id_key,
        settings.artifact_content_id_key,
        tuple(settings.citation_keys) if settings.cite else None,
    )
    if counter is None:
        counter = settings.token_counter or CharsPerToken(settings.chars_per_token)
    budget = settings.budget if budget is None else budget
    if isinstance(items, Sequence):
        handed: Sequence[Item] = items
    else:
        handed, items = _recorded(items)
    withheld: list[Held] = []
    with naming_items(lambda position, authorized: source.name(handed, position, authorized)):
        walked = cut(
            read(items, source, keys, access, withheld),
            budget,
            pricing_for(settings.budget_covers, counter),
        )
    scores = tuple(_score(source.score_of(handed[step.position])) for step in walked.steps)
    malformed = tuple(
        f"{source.name(handed, held.position, True)}: {held.problem}"
        for held in withheld
        if held.reason is Withheld.MALFORMED
    )
    return Packing(
        handed,
        walked.kept,
        walked.steps,
        tuple(withheld),
        malformed,
        walked.tokens_used,
        budget,
        scores,
        fetched,
    )


def _score(value: object) -> float | None:
    """A score as a number, or `None` for none (or one that is not a number: no order to tell)."""
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _recorded(items: Iterable[Item]) -> tuple[list[Item], Iterator[Item]]:
    """Items fetched as they are read, and the list of those read so far, by position."""
    read_so_far: list[Item] = []

    def reading() -> Iterator[Item]:
        for item in items:
            read_so_far.append(item)
            yield item

    return read_so_far, reading()


def expect_sequence(items: object, expected: str, for_text: str) -> None:
    """Refuse what a caller hands over that is not a sequence of items, saying what to do.

    Text is most often the question, handed to the step that takes what retrieval found:
    `for_text` says, in the adapter's terms, where the question goes instead.
    """
    if isinstance(items, str | bytes) or not isinstance(items, Sequence):
        hint = f"; {for_text}" if isinstance(items, str) else _hint(items)
        raise TypeError(f"expected {expected}, got {type(items).__name__}{hint}")


def _hint(items: object) -> str:
    if isinstance(items, Iterator):
        return "; materialise it first, e.g. list(...)"
    if isinstance(items, Mapping):
        return "; pick the items out of it first"
    if items is not None:
        return "; wrap a single item in a list"
    return ""


def cited_items(
    packing: Packing[Item], id_and_metadata: Callable[[Item], tuple[object, Mapping[str, Any]]]
) -> list[dict[str, Any]] | None:
    """What a cited block's metadata lists for the app: each number's kept item, by its id, with
    the values its metadata holds under its citation keys (as stored, not as shown); `None`
    when the block is not cited."""
    if not packing.kept or packing.kept[0].evidence.citation is None:
        return None
    listed = []
    for number, item in enumerate(packing.kept, start=1):
        identifier, metadata = id_and_metadata(packing.items[item.position])
        citation = item.evidence.citation or {}
        values = {key: metadata[key] for key in citation if key in metadata}
        listed.append({"number": number, "id": identifier, **values})
    return listed
