"""What a call tells its logs: the cut table at DEBUG, and at WARNING why evidence is missing or
where other readers' text already went."""

from __future__ import annotations

import logging
from collections import Counter
from typing import Any

from aizk_integrations._run.paging import Fetched
from aizk_integrations._run.reading import SEVERAL_IDS_IN_ONE, Withheld
from aizk_integrations._run.run import Packing


def report(
    packing: Packing[Any],
    logger: logging.Logger,
    per_request: str,
    scopes_key: str,
    through_retrieval: str,
) -> None:
    """Log the cut table at DEBUG, and say at WARNING why evidence is missing, if it matters.

    `per_request` tells a user of the adapter how to name a call's reader. Evidence held back
    for want of a reader is always worth a warning (it is the fail-closed default at work);
    otherwise only a call that read items and kept none is, with the reason that applies: the
    budget, when the first item the reader may see did not fit it, or else the rule that
    withheld everything. Items of other readers, withheld here, were handed over by a retrieval
    that did not know the reader: `through_retrieval` says, once per process, where the
    framework already carried their text and how to retrieve for the reader instead.
    """
    if logger.isEnabledFor(logging.DEBUG):
        logger.debug("aizk evidence cut:\n%s", packing.table())
    for message in (
        missing_message(packing, per_request, scopes_key),
        unscoped_message(packing, scopes_key),
        bad_records_message(packing, scopes_key),
    ):
        if message:
            logger.warning("%s", message)
    if packing.fetched is not None and packing.fetched.capped:
        logger.warning("%s", max_fetch_message(packing.fetched, len(packing.kept)))
    others = sum(held.reason is Withheld.NOT_PERMITTED for held in packing.withheld)
    if others and through_retrieval not in _SAID:
        _SAID.add(through_retrieval)
        logger.warning(
            "aizk withheld %d %s of other readers (a scope outside the reader's scopes), so "
            "the prompt is right; but %s. Said once per process",
            others,
            "item" if others == 1 else "items",
            through_retrieval,
        )
    disorder = out_of_order(packing.scores)
    if disorder is not None:
        logger.warning(
            "aizk: the items are not in merit order: item %d scores %g, against the order of "
            "the items before it (item %d scores %g). The packer keeps the longest prefix that "
            "fits, so a step that reorders items before it (such as LongContextReorder) makes "
            "it drop the best ones: put the packer right after the retriever or reranker",
            disorder + 1,
            packing.scores[disorder],
            disorder,
            packing.scores[disorder - 1],
        )


def max_fetch_message(fetched: Fetched, kept: int) -> str:
    """What a request that `max_fetch` cut short missed, and the fix: said whenever the pager
    stopped at its limit while the walk (or the retriever's own `k`) still wanted more."""
    return (
        f"aizk: scoped retrieval stopped at max_fetch ({fetched.asked} documents asked of the "
        f"store, {fetched.calls} store calls) with room left and {kept} kept: the store may "
        "hold more of this reader's documents, ranked lower. Raise the retriever's max_fetch, "
        "or narrow the store query to the reader (a store with a built-in filter, or your "
        "own filter: StoreSearch in LangChain, scoped_query in LlamaIndex)"
    )


_SAID: set[str] = set()
"""The advice on other readers' text in the framework's channels already logged by this process:
it is the same on every call, and the app's logs need it once."""


def out_of_order(scores: tuple[float | None, ...]) -> int | None:
    """The first item whose score turns against the order of the scores before it, if any.

    Scores may rank either way (a similarity, higher first; a distance, lower first), so only a
    ranking that changes direction is out of order. Items without a score end the check.
    """
    ranked = []
    for score in scores:
        if score is None:
            break
        ranked.append(score)
    direction = 0
    for index in range(1, len(ranked)):
        step = (ranked[index] > ranked[index - 1]) - (ranked[index] < ranked[index - 1])
        if step and direction and step != direction:
            return index
        direction = direction or step
    return None


def missing_message(packing: Packing[Any], per_request: str, scopes_key: str) -> str | None:
    """Why evidence is missing from a call, with what to do about it; `None` if nothing is."""
    reasons = Counter(held.reason for held in packing.withheld)
    advice = []
    if reasons[Withheld.NO_READER]:
        advice.append(
            f"{_items(reasons[Withheld.NO_READER], 'name')} scopes and the call has no "
            f"reader: give the adapter a reader=, {per_request}, or set "
            "allow_scoped_without_reader=True where every caller may see everything"
        )
    elif packing.kept:
        return None
    if not packing.kept and packing.steps:
        if packing.budget:  # 0 is a room of none, which the caller was already told of
            # A whole-block count can put it over even when its estimate was within.
            running = packing.steps[0].running
            need = (
                f"needs {running} tokens, over"
                if running > packing.budget
                else "with the block around it is over"
            )
            advice.append(
                f"the first item the reader may see {need} the budget of "
                f"{packing.budget}: raise the budget, or split long documents into excerpts "
                "when they are stored (a text splitter at ingestion)"
            )
    elif not packing.kept and reasons[Withheld.NOT_PERMITTED]:
        advice.append(
            f"{_items(reasons[Withheld.NOT_PERMITTED], 'name')} a scope outside the reader's scopes"
        )
    if not advice:
        return None
    read = len(packing.steps) + len(packing.withheld)
    return (
        f"aizk withheld {len(packing.withheld)} of the {read} items read and kept "
        f"{len(packing.kept)}: " + "; ".join(advice)
    )


def unscoped_message(packing: Packing[Any], scopes_key: str) -> str | None:
    """What became of items that name no scope, when it may not be what the app meant: withheld
    (public evidence names the public scope, and a step may have stripped their scopes), or
    shown as public beside items that name scopes (`allow_unscoped`), which is what a private
    item whose scopes a pipeline stripped looks like."""
    withheld = sum(held.reason is Withheld.UNSCOPED for held in packing.withheld)
    if withheld:
        return (
            f"aizk withheld {_count(withheld)} with no scope under the metadata key "
            f"{scopes_key!r}, since an item is shown for its scopes. If the corpus is public "
            "as a whole (your own files, say), build the packer with allow_unscoped=True. If "
            "it serves many readers, write each item's scopes when it is stored "
            "(scope_metadata(owner), scope_metadata(PUBLIC) for public items); if they had "
            "scopes, a store or a step such as filter_complex_metadata dropped them"
        )
    shown = sum(not step.evidence.scopes for step in packing.kept)
    scoped = any(held.reason is Withheld.NOT_PERMITTED for held in packing.withheld) or any(
        step.evidence.scopes for step in packing.kept
    )
    if shown and scoped:
        return (
            f"aizk showed {_count(shown)} with no scope beside items that name scopes "
            "(allow_unscoped): if a step such as filter_complex_metadata stripped their scopes, "
            "they may be someone's private items. Write public items with "
            "scope_metadata(PUBLIC) and keep allow_unscoped for corpora that name no scopes"
        )
    return None


def bad_records_message(packing: Packing[Any], scopes_key: str) -> str | None:
    """The items withheld because they are malformed, each named with what is wrong (they are
    the reader's own), and how many were withheld because their scopes cannot be read at all
    (they may be anyone's, so nothing of them is said)."""
    said = []
    if packing.malformed:
        said.append(
            f"{_items(len(packing.malformed), 'is')} malformed: "
            + "; ".join(packing.malformed)
            + " (fix them at ingestion, or set raise_on_malformed=True to fail on them)"
        )
    packed = sum(held.reason is Withheld.PACKED for held in packing.withheld)
    if packed:
        said.append(
            f"{_items(packed, 'is')} an evidence block already: the retrieval packs twice (a "
            "packer inside the retriever, or before this one); keep one packer, last"
        )
    unreadable = [held for held in packing.withheld if held.reason is Withheld.UNREADABLE]
    several = sum(held.problem == SEVERAL_IDS_IN_ONE for held in unreadable)
    if several:
        said.append(_several_ids(several, scopes_key))
    if len(unreadable) > several:
        said.append(
            f"{_items(len(unreadable) - several, 'hold')} scopes under {scopes_key!r} that "
            "cannot be read as scope ids, withheld from every reader (write scopes with "
            "scope_metadata)"
        )
    return _WITHHELD + "; ".join(said) if said else None


def several_ids_message(count: int, scopes_key: str) -> str:
    """The warning of a scoped retrieval that returns items (no packer to say it) for the
    `count` it skipped whose scope ids are several in one string: the packer's own words."""
    return _WITHHELD + _several_ids(count, scopes_key)


_WITHHELD = "aizk withheld what it could not show: "


def _several_ids(count: int, scopes_key: str) -> str:
    return (
        f"{_items(count, 'hold')} under {scopes_key!r} several scope ids in one string "
        "(such as 'id1,id2'), which no reader's scopes match, so they are withheld from "
        "every reader: store the ids as a list, as scope_metadata(['id1', 'id2']) writes "
        "them"
    )


def _count(count: int) -> str:
    return "1 item" if count == 1 else f"{count} items"


def _items(count: int, verb: str) -> str:
    """`1 item names`, `4 items name`: a count of items and what they do, in agreement."""
    if verb == "is":
        return "1 item is" if count == 1 else f"{count} items are"
    return f"1 item {verb}s" if count == 1 else f"{count} items {verb}"
