"""Where the packer sits in a retrieval built from LangChain's parts, and the error when a step
comes after it.

LangChain runs a `DocumentCompressorPipeline`'s steps one after another and shows none of them
the others, so a filter placed after the packer judges the whole block as one document and may
drop it (an `EmbeddingsFilter` then returns no documents at all), and the packer never sees it
happen. What can be seen is the retrieval itself, before any request: a retriever or pipeline
handed to `check_packer_last`, to `AizkEvidenceRetriever` or to the memory middleware is read
for a packer and the steps after it, and refused with the fix.
"""

from __future__ import annotations

from collections.abc import Sequence

from aizk_integrations.langchain._compressor import AizkEvidenceCompressor

_PACKER = AizkEvidenceCompressor.__name__


def steps_after_packer(part: object) -> list[str] | None:
    """The steps that run after a packer inside `part`, by class name in order (`[]`: it packs
    last); `None` when nothing inside `part` packs.

    Read are the parts LangChain composes retrieval from, by the fields they keep their parts
    in: a `DocumentCompressorPipeline`'s `transformers`, a `ContextualCompressionRetriever`'s
    `base_retriever` then `base_compressor`, and a retriever around others (`retriever`:
    `MultiQueryRetriever`; `retrievers`: `EnsembleRetriever`, `MergerRetriever`), which handles
    their documents after them; and ours, which pack last (the compressor, and whatever holds
    one as `compressor`: `AizkEvidenceRetriever`, `as_runnable()`'s step).
    """
    if part is None:
        return None
    if isinstance(part, AizkEvidenceCompressor) or isinstance(
        getattr(part, "compressor", None), AizkEvidenceCompressor
    ):
        return []
    transformers = _transformers(part)
    if transformers is not None:
        return _after_packer_in(transformers)
    compressor = getattr(part, "base_compressor", None)
    if compressor is not None:
        return _after_packer_in([getattr(part, "base_retriever", None), compressor])
    retrievers = getattr(part, "retrievers", None)
    inside = (
        retrievers if isinstance(retrievers, list | tuple) else [getattr(part, "retriever", None)]
    )
    for retriever in inside:
        after = steps_after_packer(retriever)
        if after is not None:  # this retriever merges, dedupes or fuses what the packer returns
            return [*after, type(part).__name__]
    return None


def _after_packer_in(steps: Sequence[object]) -> list[str] | None:
    for index, step in enumerate(steps):
        after = steps_after_packer(step)
        if after is not None:
            return after + [name for later in steps[index + 1 :] for name in _names(later)]
    return None


def _transformers(part: object) -> Sequence[object] | None:
    """A pipeline's steps, in the order they run; `None` for anything else."""
    transformers = getattr(part, "transformers", None)
    return transformers if isinstance(transformers, list | tuple) else None


def _names(step: object) -> list[str]:
    """A step by class name, or a pipeline by the names of its steps."""
    transformers = _transformers(step)
    if transformers is not None:
        return [name for each in transformers for name in _names(each)]
    return [type(step).__name__]


def check_packer_last(retriever: object) -> None:
    """Refuse a retrieval in which a step runs after the packer, saying how to fix it.

    Call it once where the app builds its retrieval (a startup check, a test) on a
    `ContextualCompressionRetriever` or `DocumentCompressorPipeline` that holds an
    `AizkEvidenceCompressor`: a filter, reranker or splitter after the packer, or a retriever
    that merges or fuses what it returns, handles the whole block as one document and can drop
    it, cut it or set unpacked documents beside it, and LangChain gives the packer no view of
    that. `AizkEvidenceRetriever` and the memory middleware make the
    same check on the retriever they are given.
    """
    after = steps_after_packer(retriever)
    if after:
        one = len(after) == 1
        raise ValueError(
            f"{', '.join(after)} {'runs' if one else 'run'} after {_PACKER}, and "
            f"{'it handles' if one else 'each handles'} the whole evidence block as one "
            "document: it can drop it, cut it or set documents the packer never read beside "
            "it, leaving the prompt no evidence, or more than the budget holds (LangChain shows "
            "the packer nothing of the steps after it). Put the packer last: "
            f"DocumentCompressorPipeline(transformers=[..., {_PACKER}(...)]), or "
            "AizkEvidenceRetriever(base_retriever=<the retriever that filters, fuses or "
            "merges>, compressor=<the packer>)"
        )


def check_not_packed(retriever: object, holder: str) -> None:
    """Refuse a retriever that already packs, for a part (`holder`) that packs what it returns.

    Packed twice, the second packer would be handed one block document that names no scope
    and would withhold it: the prompt would get no evidence, and a warning about scopes that
    points the wrong way.
    """
    after = steps_after_packer(retriever)
    if after is not None:
        inside = f"{_PACKER}, followed by {', '.join(after)}" if after else _PACKER
        raise ValueError(
            f"the retriever given to {holder} already packs ({inside}), and {holder} packs "
            "what it retrieves: give it the retriever before packing (filters and rerankers "
            f"included) and the packer as compressor="
        )
