"""How many tokens an LLM's window leaves for the evidence block, as LlamaIndex works it out."""

from __future__ import annotations

from llama_index.core.indices.prompt_helper import DEFAULT_PADDING, PromptHelper
from llama_index.core.llms import LLM
from llama_index.core.prompts.default_prompt_selectors import (
    DEFAULT_REFINE_PROMPT_SEL,
    DEFAULT_TEXT_QA_PROMPT_SEL,
    DEFAULT_TREE_SUMMARIZE_PROMPT_SEL,
)
from llama_index.core.prompts.prompt_utils import get_biggest_prompt
from llama_index.core.response_synthesizers.refine import DEFAULT_RESPONSE_PADDING_SIZE

_ENGINE_PROMPTS = (
    (DEFAULT_TEXT_QA_PROMPT_SEL, DEFAULT_PADDING),
    (DEFAULT_TREE_SUMMARIZE_PROMPT_SEL, DEFAULT_PADDING),
    (
        get_biggest_prompt([DEFAULT_TEXT_QA_PROMPT_SEL, DEFAULT_REFINE_PROMPT_SEL]),
        DEFAULT_RESPONSE_PADDING_SIZE,
    ),
)
"""The prompts LlamaIndex's response modes put the context into, with the padding each packs
with: question-answering (simple_summarize, accumulate), tree-summarize, and the bigger of
question-answering and refine with room for the answer (refine, and compact, the default)."""


def room_for_block(llm: LLM, query: str) -> int:
    """Tokens `llm` leaves for the block, whichever response mode the engine uses.

    Worked out by LlamaIndex's own `PromptHelper`, as its response synthesizers do when they
    decide whether the context needs splitting across calls: the window, less the prompt with
    this query in it, less the room reserved for the answer, less the mode's padding (refine and
    compact keep 500 tokens for the answer they refine). 0 when there is no room at all.
    """
    helper = PromptHelper.from_llm_metadata(llm.metadata)
    room = []
    for prompt, padding in _ENGINE_PROMPTS:
        filled = prompt.partial_format(query_str=query)
        try:
            splitter = helper.get_text_splitter_given_prompt(filled, padding=padding, llm=llm)
        except ValueError:  # LlamaIndex's word for "no room at all"
            return 0
        room.append(splitter.chunk_size)
    return min(room)
