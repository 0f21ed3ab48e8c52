"""How many tokens a model's window leaves for the evidence block, as LlamaIndex works it out.

A response synthesizer decides whether a context needs splitting across several LLM calls with
its prompt helper: the window, less the prompt the context goes into (with the query in it),
less the room reserved for the answer, less a padding. A block no longer than that room is
sent whole, in one call; a longer one is split, and every call after the first starts
mid-block, with no boundary line. So the room is worked out by the same helper, from the same
prompts, with the same padding, as the synthesizer that will send the block.
"""

from __future__ import annotations

from dataclasses import dataclass

from llama_index.core import Settings
from llama_index.core.indices.prompt_helper import DEFAULT_PADDING, PromptHelper
from llama_index.core.llms import LLM
from llama_index.core.prompts import BasePromptTemplate
from llama_index.core.prompts.default_prompt_selectors import (
    DEFAULT_REFINE_PROMPT_SEL,
    DEFAULT_TEXT_QA_PROMPT_SEL,
    DEFAULT_TREE_SUMMARIZE_PROMPT_SEL,
)
from llama_index.core.response_synthesizers import (
    Accumulate,
    BaseSynthesizer,
    Refine,
    SimpleSummarize,
    TreeSummarize,
)
from llama_index.core.response_synthesizers.refine import DEFAULT_RESPONSE_PADDING_SIZE

FitTarget = LLM | BaseSynthesizer
"""What `fit_to` sizes the block for: the response synthesizer that sends it, or an LLM."""

_CONTEXT_PROMPTS: tuple[tuple[type[BaseSynthesizer], tuple[str, ...]], ...] = (
    (Refine, ("text_qa_template", "refine_template")),  # refine, and compact (a subclass)
    (TreeSummarize, ("summary_template",)),
    (SimpleSummarize, ("text_qa_template",)),
    (Accumulate, ("text_qa_template",)),  # accumulate, and compact_accumulate (a subclass)
)
"""The prompts each kind of synthesizer puts the context into, by their `get_prompts()` keys."""

_DEFAULT_PROMPTS = (
    (DEFAULT_TEXT_QA_PROMPT_SEL, DEFAULT_PADDING),
    (DEFAULT_TREE_SUMMARIZE_PROMPT_SEL, DEFAULT_PADDING),
    (DEFAULT_TEXT_QA_PROMPT_SEL, DEFAULT_RESPONSE_PADDING_SIZE),
    (DEFAULT_REFINE_PROMPT_SEL, DEFAULT_RESPONSE_PADDING_SIZE),
)
"""For an LLM alone: LlamaIndex's default prompts, each with the padding the modes that use it
pack with (refine and compact keep 500 tokens for the answer they refine)."""


@dataclass(frozen=True)
class _Sending:
    """What decides whether a block goes in one call."""

    helper: PromptHelper
    llm: LLM
    """Its system prompt counts against the window (and a structured LLM's tool too)."""
    prompts: tuple[tuple[BasePromptTemplate, int], ...]
    """Each prompt the block may be put into, with the padding it is packed with."""


def check_fit_target(target: FitTarget) -> None:
    """Refuse, when the postprocessor is built, a synthesizer whose prompts it cannot read."""
    if isinstance(target, BaseSynthesizer) and not _prompt_keys(target):
        raise ValueError(
            f"fit_to cannot fit a block to a {type(target).__name__}, which does not put the "
            "context in a prompt of its own; fit it to one of LlamaIndex's refine, compact, "
            "tree_summarize, simple_summarize, accumulate or compact_accumulate synthesizers "
            "(get_response_synthesizer(...)), or to the LLM"
        )


def room_for_block(target: FitTarget, query: str) -> int:
    """Tokens `target` leaves for the block with this query: 0 when there is no room at all.

    Fitted to a synthesizer, this is the room that synthesizer's own prompt helper finds under
    its own prompts as they stand now (custom templates, and `update_prompts` on the engine,
    included), so a block that fits goes in one call in its response mode. Fitted to an LLM,
    the synthesizer is not known: the room is the least under LlamaIndex's default prompts
    across the response modes.
    """
    sending = _sent_by(target)
    rooms = []
    for prompt, padding in sending.prompts:
        filled = prompt.partial_format(query_str=query)
        try:
            splitter = sending.helper.get_text_splitter_given_prompt(
                filled, padding=padding, llm=sending.llm
            )
        except ValueError:  # LlamaIndex's word for "no room at all"
            return 0
        rooms.append(splitter.chunk_size)
    return min(rooms)


def model_of(target: FitTarget) -> LLM:
    """The LLM whose window the block is fitted to."""
    return _sent_by(target).llm


def _sent_by(target: FitTarget) -> _Sending:
    if isinstance(target, LLM):
        return _Sending(_prompt_helper_for(target), target, _DEFAULT_PROMPTS)
    prompts = target.get_prompts()
    # LlamaIndex keeps a synthesizer's LLM, prompt helper and refine padding in private slots
    # and offers no public way to read them; the room is only true if it is worked out with
    # exactly these, so they are read here, and only here.
    padding = target._response_padding_size if isinstance(target, Refine) else DEFAULT_PADDING
    return _Sending(
        target._prompt_helper,
        target._llm,
        tuple((prompts[key], padding) for key in _prompt_keys(target)),
    )


def _prompt_keys(synthesizer: BaseSynthesizer) -> tuple[str, ...]:
    for kind, keys in _CONTEXT_PROMPTS:
        if isinstance(synthesizer, kind):
            return keys
    return ()


def _prompt_helper_for(llm: LLM) -> PromptHelper:
    """The prompt helper LlamaIndex gives a synthesizer made for `llm` now: the one `Settings`
    holds once `Settings.context_window` or `num_output` was set, else one from the LLM's own
    metadata.

    `Settings._prompt_helper` is private, and it is what LlamaIndex's own synthesizers read;
    the public `Settings.prompt_helper` would create one when none is set, pinning every later
    synthesizer to it.
    """
    return Settings._prompt_helper or PromptHelper.from_llm_metadata(llm.metadata)
