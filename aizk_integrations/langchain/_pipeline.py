"""Where the packer sits in a retrieval built from LangChain's parts, and the error when a step
comes after it or reorders before it.

LangChain runs a `DocumentCompressorPipeline`'s steps one after another and shows none of them
the others, so a filter placed after the packer judges the whole block as one document and may
drop it (an `EmbeddingsFilter` then returns no documents at all), and the packer never sees it
happen; a `LongContextReorder` before it hands it the best documents at both ends, and its
prefix cut then keeps every other one. What can be seen is the retrieval itself, before any
request: a retriever or pipeline handed to `check_packer_last`, to `AizkEvidenceRetriever` or to
the memory middleware is read for a packer, the steps after it and the reorders before it, and
refused with the fix.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from langchain_core.documents import BaseDocumentCompressor, BaseDocumentTransformer
from langchain_core.runnables import Runnable, RunnableLambda, RunnableSequence
from langchain_core.runnables.base import RunnableBindingBase, RunnableGenerator
from langchain_core.runnables.configurable import DynamicRunnable
from langchain_core.runnables.fallbacks import RunnableWithFallbacks
from pydantic import BaseModel

from aizk_integrations.langchain._compressor import AizkEvidenceCompressor

_PACKER = AizkEvidenceCompressor.__name__
_REORDERS = frozenset({"LongContextReorder"})
"""Steps that reorder documents against their merit order, by class name: LangChain's own
`LongContextReorder` lives in langchain_community, which this adapter does not import."""


@dataclass
class Reading:
    """What a part of a retrieval was read to hold, in the order its steps run."""

    after: list[str] | None = None
    """The steps that run after a packer inside it, by class name (`[]`: the packer is last);
    `None` when nothing inside packs."""
    reorders: list[str] = field(default_factory=list)
    """Steps that reorder documents before they reach a packer (or anywhere, when none packs)."""
    unreadable: list[str] = field(default_factory=list)
    """Parts whose steps cannot be listed (a function): what they hold cannot be told."""

    @property
    def packs(self) -> bool:
        return self.after is not None


def read_retrieval(part: object) -> Reading:
    """What `part` holds: a packer and the steps after it, reorders before it, and the parts
    that cannot be read.

    Read are the parts LangChain composes retrieval from, by the fields they keep their parts
    in: steps that run in order (a `DocumentCompressorPipeline`'s `transformers`, a
    `ContextualCompressionRetriever`'s `base_retriever` then `base_compressor`, a
    `RunnableSequence`'s `steps`, `AizkEvidenceRetriever`'s `base_retriever` then its packer);
    wrappers that hand on what their part returns (`with_retry`, `with_config`, `bind`,
    `with_fallbacks`, configurable alternatives); and anything else holding runnables in its
    fields (`MultiQueryRetriever`, `EnsembleRetriever`, `MergerRetriever`, a `RunnableLambda`'s
    runnables, a `RunnableParallel`), which handles their documents after them.
    """
    if part is None:
        return Reading()
    name = type(part).__name__
    if isinstance(part, AizkEvidenceCompressor):
        return Reading(after=[])
    compressor = getattr(part, "compressor", None)
    if isinstance(compressor, AizkEvidenceCompressor):  # ours: it packs last, what it holds first
        return _in_order([getattr(part, "base_retriever", None), compressor])
    steps = _steps_in_order(part)
    if steps is not None:
        return _in_order(steps)
    if isinstance(part, RunnableBindingBase | RunnableWithFallbacks | DynamicRunnable):
        return _together(_wrapped(part), handles=None)
    if name in _REORDERS:
        return Reading(reorders=[name])
    if isinstance(part, RunnableLambda | RunnableGenerator):
        inside = part.deps if isinstance(part, RunnableLambda) else []
        reading = _together(inside, handles=name)
        return reading if inside else Reading(unreadable=[name])
    return _together(_parts_in(part), handles=name)


def _steps_in_order(part: object) -> Sequence[object] | None:
    """The steps of a part that runs them one after another; `None` for anything else."""
    if isinstance(part, RunnableSequence):
        return part.steps
    transformers = getattr(part, "transformers", None)
    if isinstance(transformers, list | tuple):
        return transformers
    compressor = getattr(part, "base_compressor", None)
    if compressor is not None:
        return [getattr(part, "base_retriever", None), compressor]
    return None


def _in_order(steps: Sequence[object]) -> Reading:
    reading = Reading()
    for index, step in enumerate(steps):
        inner = read_retrieval(step)
        reading.unreadable += inner.unreadable
        reading.reorders += inner.reorders
        if inner.packs:
            assert inner.after is not None
            reading.after = inner.after + [n for later in steps[index + 1 :] for n in _names(later)]
            return reading
    return reading


def _wrapped(part: object) -> list[object]:
    """What a wrapper hands on: its bound runnable, its fallbacks, its alternatives."""
    if isinstance(part, RunnableBindingBase):
        return [part.bound]
    if isinstance(part, RunnableWithFallbacks):
        return [part.runnable, *part.fallbacks]
    assert isinstance(part, DynamicRunnable)
    alternatives = getattr(part, "alternatives", None) or {}
    return [part.default, *alternatives.values()]


def _together(parts: Iterable[object], *, handles: str | None) -> Reading:
    """The parts of one part read together; a part that `handles` what they return comes after
    the packer any of them holds."""
    reading = Reading()
    for part in parts:
        inner = read_retrieval(part)
        reading.unreadable += inner.unreadable
        reading.reorders += inner.reorders
        if inner.packs and not reading.packs:
            assert inner.after is not None
            reading.after = [*inner.after, handles] if handles else inner.after
    return reading


def _parts_in(part: object) -> list[object]:
    """The runnables, retrievers and document compressors a part keeps in its fields."""
    if not isinstance(part, BaseModel):
        return []
    found: list[object] = []
    for name in type(part).model_fields:
        value = getattr(part, name, None)
        if isinstance(value, Mapping):
            value = list(value.values())
        if isinstance(value, list | tuple):
            found += [each for each in value if _is_part(each)]
        elif _is_part(value):
            found.append(value)
    return found


def _is_part(value: object) -> bool:
    return isinstance(value, Runnable | BaseDocumentCompressor | BaseDocumentTransformer)


def _names(step: object) -> list[str]:
    """A step by class name, or a part that runs steps in order by the names of its steps."""
    steps = _steps_in_order(step)
    if steps is not None:
        return [name for each in steps if each is not None for name in _names(each)]
    return [type(step).__name__]


def check_packer_last(retriever: object) -> None:
    """Refuse a retrieval in which a step runs after the packer or reorders before it, saying
    how to fix it; and one that cannot be read, saying so rather than passing it.

    Call it once where the app builds its retrieval (a startup check, a test) on a
    `ContextualCompressionRetriever`, a `DocumentCompressorPipeline` or any LCEL composition
    that holds an `AizkEvidenceCompressor`: a filter, reranker or splitter after the packer, or
    a retriever that merges or fuses what it returns, handles the whole block as one document
    and can drop it, cut it or set unpacked documents beside it, and LangChain gives the packer
    no view of that. `AizkEvidenceRetriever` and the memory middleware make the same check on
    the retriever they are given.
    """
    reading = read_retrieval(retriever)
    if reading.after:
        one = len(reading.after) == 1
        raise ValueError(
            f"{', '.join(reading.after)} {'runs' if one else 'run'} after {_PACKER}, and "
            f"{'it handles' if one else 'each handles'} the whole evidence block as one "
            "document: it can drop it, cut it or set documents the packer never read beside "
            "it, leaving the prompt no evidence, or more than the budget holds (LangChain shows "
            "the packer nothing of the steps after it). Put the packer last: "
            f"DocumentCompressorPipeline(transformers=[..., {_PACKER}(...)]), or "
            "AizkEvidenceRetriever(base_retriever=<the retriever that filters, fuses or "
            "merges>, compressor=<the packer>)"
        )
    _check_no_reorder(reading)
    if reading.unreadable:
        raise ValueError(
            f"check_packer_last cannot read {', '.join(reading.unreadable)}: a function's "
            "steps cannot be listed (LangChain lists only the runnables a RunnableLambda "
            "refers to, and this one refers to none), so whether a packer runs inside it, or "
            "a step after the packer, cannot be told. Check the retriever and the packer it "
            "uses on their own, or build the retrieval from LangChain's parts"
        )


def _check_no_reorder(reading: Reading) -> None:
    if reading.packs and reading.reorders:
        raise ValueError(
            f"{', '.join(reading.reorders)} reorders the documents before {_PACKER}: it moves "
            "the best ones to both ends of the list, and the packer keeps the longest prefix "
            "of the order it is handed, so it keeps every other one of the best and drops the "
            "rest. Drop the reorder: the packer needs the retriever's (or reranker's) merit "
            "order, and the block keeps it"
        )


def check_not_packed(retriever: object, holder: str) -> None:
    """Refuse a retriever that already packs, or reorders, for a part (`holder`) that packs what
    it returns.

    Packed twice, the second packer would be handed one block document that names no scope
    and would withhold it: the prompt would get no evidence, and a warning about scopes that
    points the wrong way. A part that cannot be read is let through: the packer says so at
    run time if it is handed a block.
    """
    reading = read_retrieval(retriever)
    if reading.packs:
        assert reading.after is not None
        inside = f"{_PACKER}, followed by {', '.join(reading.after)}" if reading.after else _PACKER
        raise ValueError(
            f"the retriever given to {holder} already packs ({inside}), and {holder} packs "
            "what it retrieves: give it the retriever before packing (filters and rerankers "
            f"included) and the packer as compressor="
        )
    _check_no_reorder(Reading(after=[], reorders=reading.reorders))
