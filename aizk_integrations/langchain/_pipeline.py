"""Packing once, last, in merit order: the checks on a retriever handed to a part that packs.

`AizkEvidenceRetriever` and the memory middleware pack what their retriever returns. Handed a
retriever that packs already, the second packer would get one block document naming no scope
and withhold it: no evidence, and a warning pointing the wrong way. Handed one that reorders
(`LongContextReorder`), the prefix cut would keep every other one of the best documents.

Both are refused when the part is built, read from the documented arguments LangChain composes
retrieval with (a `ContextualCompressionRetriever`'s `base_retriever` and `base_compressor`, a
`DocumentCompressorPipeline`'s `transformers`, a `RunnableSequence`'s `steps`, our own
retriever's), and, whatever wraps the retriever (a function, `with_retry`, fallbacks), at run
time too: a block handed back to the packer is refused there (`refuse_packed_twice`). Nothing
else of a framework's objects is read.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from langchain_core.runnables import RunnableSequence

from aizk_integrations._run.reading import Withheld
from aizk_integrations._run.run import Packing
from aizk_integrations.langchain._compressor import AizkEvidenceCompressor

_PACKER = AizkEvidenceCompressor.__name__
_REORDERS = frozenset({"LongContextReorder"})
"""Steps that reorder documents against their merit order, by class name: LangChain's own
`LongContextReorder` lives in langchain_community, which this adapter does not import."""


def _steps(part: object) -> Iterator[object]:
    """The steps `part` runs, in order, as its documented arguments name them; itself when it
    names none."""
    if isinstance(part, AizkEvidenceCompressor):
        yield part
        return
    if isinstance(part, RunnableSequence):
        inner: list[object] = list(part.steps)
    elif isinstance(getattr(part, "compressor", None), AizkEvidenceCompressor):
        inner = [getattr(part, "base_retriever", None), part.compressor]  # type: ignore[attr-defined]
    elif isinstance(getattr(part, "transformers", None), list | tuple):
        inner = list(part.transformers)  # type: ignore[attr-defined]
    elif getattr(part, "base_compressor", None) is not None:
        inner = [getattr(part, "base_retriever", None), part.base_compressor]  # type: ignore[attr-defined]
    else:
        yield part
        return
    for step in inner:
        if step is not None:
            yield from _steps(step)


def check_not_packed(retriever: object, holder: str) -> None:
    """Refuse, for a part (`holder`) that packs what `retriever` returns, a retriever that packs
    already or reorders, saying what to hand it instead."""
    steps = list(_steps(retriever))
    packers = [at for at, step in enumerate(steps) if isinstance(step, AizkEvidenceCompressor)]
    if packers:
        after = [type(step).__name__ for step in steps[packers[0] + 1 :]]
        inside = f"{_PACKER}, followed by {', '.join(after)}" if after else _PACKER
        raise ValueError(
            f"the retriever given to {holder} already packs ({inside}), and {holder} packs "
            "what it retrieves: give it the retriever before packing (filters and rerankers "
            "included) and the packer as compressor="
        )
    reorders = [type(step).__name__ for step in steps if type(step).__name__ in _REORDERS]
    if reorders:
        raise ValueError(
            f"{', '.join(reorders)} reorders the documents before {_PACKER}: it moves the best "
            "ones to both ends of the list, and the packer keeps the longest prefix of the "
            "order it is handed, so it keeps every other one of the best and drops the rest. "
            "Drop the reorder: the packer needs the retriever's (or reranker's) merit order, "
            "and the block keeps it"
        )


def refuse_packed_twice(packing: Packing[Any], holder: str) -> None:
    """Refuse a request whose retriever handed the packer an evidence block: it packs already,
    inside something no argument shows (a function, a wrapper)."""
    if any(held.reason is Withheld.PACKED for held in packing.withheld):
        raise ValueError(
            f"the retriever given to {holder} returned an evidence block: it packs already, "
            f"and {holder} packs what it retrieves. Give it the retriever before packing "
            "(filters and rerankers included) and the packer as compressor="
        )
