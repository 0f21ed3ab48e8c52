"""How many tokens a model's window leaves for the evidence block, as LlamaIndex sends it.

A response synthesizer decides whether a context needs splitting across several LLM calls with
its prompt helper: the window, less the prompt the context goes into (with the query in it),
less the room reserved for the answer, less a padding. A block no longer than that room is
sent whole, in one call; a longer one is split, and every call after the first starts
mid-block, with no boundary line. So the room is worked out by the same helper, from the same
prompts, with the same padding, as the synthesizer that will send the block.

One synthesizer does not send the text it counts: `SimpleSummarize` truncates the context to
the room the helper finds, then passes it to its prompt as a Python list of that one text, so
the prompt holds the list's text form (`['...']`, newlines written `\\n`), which runs longer.
There the block must fit twice: as LlamaIndex counts it, so nothing is cut, and as the prompt
shows it, so the prompt and the answer stay within the window.
"""

from __future__ import annotations

from collections.abc import Callable
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

from aizk_integrations._tokens import TokenCounter

FitTarget = LLM | BaseSynthesizer
"""What `fit_to` sizes the block for: the response synthesizer that sends it, or an LLM."""

Shown = Callable[[str], str]
"""How a prompt shows the context it is given."""


def as_is(context: str) -> str:
    """The context as the text it is: what every synthesizer's prompt helper counts."""
    return context


def as_a_list(context: str) -> str:
    """The context as `SimpleSummarize` puts it in its prompt: `context_str` is the list of its
    one (truncated) text, and a prompt formats a list as the list's text form."""
    return str([context])


_CONTEXT_PROMPTS: tuple[tuple[type[BaseSynthesizer], tuple[tuple[str, Shown], ...]], ...] = (
    # refine, and compact (a subclass): a block that fits both is never refined
    (Refine, (("text_qa_template", as_is), ("refine_template", as_is))),
    (TreeSummarize, (("summary_template", as_is),)),
    # truncated to the room LlamaIndex counts, then sent as a list
    (SimpleSummarize, (("text_qa_template", as_is), ("text_qa_template", as_a_list))),
    # accumulate, and compact_accumulate (a subclass)
    (Accumulate, (("text_qa_template", as_is),)),
)
"""The prompts each kind of synthesizer puts the context into, by their `get_prompts()` keys,
and how each shows it."""


@dataclass(frozen=True)
class _Prompt:
    """One prompt the block goes into: it must fit the room this prompt leaves, counted as this
    prompt shows it."""

    template: BasePromptTemplate
    padding: int
    shown: Shown


_DEFAULT_PROMPTS = (
    _Prompt(DEFAULT_TEXT_QA_PROMPT_SEL, DEFAULT_PADDING, as_is),
    _Prompt(DEFAULT_TEXT_QA_PROMPT_SEL, DEFAULT_PADDING, as_a_list),
    _Prompt(DEFAULT_TREE_SUMMARIZE_PROMPT_SEL, DEFAULT_PADDING, as_is),
    _Prompt(DEFAULT_TEXT_QA_PROMPT_SEL, DEFAULT_RESPONSE_PADDING_SIZE, as_is),
    _Prompt(DEFAULT_REFINE_PROMPT_SEL, DEFAULT_RESPONSE_PADDING_SIZE, as_is),
)
"""For an LLM alone: LlamaIndex's default prompts, each with the padding the modes that use it
pack with (refine and compact keep 500 tokens for the answer they refine) and the way it shows
the block (simple_summarize's list)."""


@dataclass(frozen=True)
class _Sending:
    """What decides whether a block goes in one call, and within the window."""

    helper: PromptHelper
    llm: LLM
    """Its system prompt counts against the window (and a structured LLM's tool too)."""
    prompts: tuple[_Prompt, ...]


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
    across the response modes. A block counted by `counted_as_shown` and no longer than this
    fits every prompt it may go into.
    """
    sending = _sent_by(target)
    rooms = []
    for prompt in sending.prompts:
        try:
            splitter = sending.helper.get_text_splitter_given_prompt(
                _filled(prompt, query), padding=prompt.padding, llm=sending.llm
            )
        except ValueError:  # LlamaIndex's word for "no room at all"
            return 0
        rooms.append(splitter.chunk_size)
    return min(rooms)


def counted_as_shown(target: FitTarget, counter: TokenCounter) -> TokenCounter:
    """`counter`, counting a block as the prompts `target` sends it in show it: the most it
    costs in any of them.

    The frame a prompt puts around the context (a list's brackets and quotes) is already in the
    room, which is worked out with the prompt holding an empty context shown the same way, so
    only what the block adds to it is counted here. Everything is counted inside the call, so
    a counter that fails is named with the item it failed on, as any counter is.
    """
    framed = tuple(dict.fromkeys(p.shown for p in _sent_by(target).prompts if p.shown is not as_is))
    if not framed:
        return counter

    def count(text: str) -> int:
        in_frames = (counter(shown(text)) - counter(shown("")) for shown in framed)
        return max(counter(text), *in_frames)

    return count


def model_of(target: FitTarget) -> LLM:
    """The LLM whose window the block is fitted to."""
    return _sent_by(target).llm


def _filled(prompt: _Prompt, query: str) -> BasePromptTemplate:
    """The prompt with the query in it, as the helper is to count it: with the frame the prompt
    shows the context in (simple_summarize's list of one empty text), where it has one; the
    helper counts anything left unfilled as empty."""
    if prompt.shown is as_is:
        return prompt.template.partial_format(query_str=query)
    return prompt.template.partial_format(query_str=query, context_str=prompt.shown(""))


def _sent_by(target: FitTarget) -> _Sending:
    if isinstance(target, LLM):
        return _Sending(_prompt_helper_for(target), target, _DEFAULT_PROMPTS)
    templates = target.get_prompts()
    # LlamaIndex keeps a synthesizer's LLM, prompt helper and refine padding in private slots
    # and offers no public way to read them; the room is only true if it is worked out with
    # exactly these, so they are read here, and only here.
    padding = target._response_padding_size if isinstance(target, Refine) else DEFAULT_PADDING
    return _Sending(
        target._prompt_helper,
        target._llm,
        tuple(_Prompt(templates[key], padding, shown) for key, shown in _prompt_keys(target)),
    )


def _prompt_keys(synthesizer: BaseSynthesizer) -> tuple[tuple[str, Shown], ...]:
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
