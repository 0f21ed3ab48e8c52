"""How many tokens a model's window leaves for the evidence block in a prompt."""

from __future__ import annotations

import logging
from typing import Any

from langchain_core.language_models import BaseChatModel, BaseLanguageModel
from langchain_core.prompts import BasePromptTemplate

from aizk_integrations._tokens import is_int

logger = logging.getLogger("aizk_integrations.langchain")


def context_room(
    model: BaseLanguageModel[Any],
    prompt: BasePromptTemplate[Any],
    *,
    context: str = "context",
    window: int | None = None,
    reserve: int = 0,
    **values: Any,
) -> int:
    """The tokens `model` leaves for the evidence block in `prompt`, filled with `values`.

    The model's input window (`window`, or its profile's `max_input_tokens`), less the prompt
    itself with every other value in place and an empty `{context}`, counted by the model, less
    `reserve` (for the answer, when the window counts it too). Pass the result as the request's
    `aizk_room`, with whole-block budgets counted by the same model, and the block fits the
    prompt whole: the request packs to the smaller of the room and the packer's budget::

        packer = AizkEvidenceCompressor(
            budget_covers="block", token_counter=counter_from_langchain(model)
        )
        room = context_room(model, prompt, question=question)
        chain.invoke(question, config={"configurable": {"aizk_room": room}})

    A prompt that leaves no room gives 0, with a WARNING: the request then keeps nothing.
    """
    limit = window_of(model, window)
    if limit is None:
        raise ValueError(
            f"{type(model).__name__} does not say how many input tokens it takes (no "
            "profile['max_input_tokens']); pass window=<its context window>"
        )
    filled = prompt.format_prompt(**{context: "", **values})
    if isinstance(model, BaseChatModel):
        used = model.get_num_tokens_from_messages(filled.to_messages())
    else:
        used = model.get_num_tokens(filled.to_string())
    return room_left(model, limit, used, reserve)


def window_of(model: BaseLanguageModel[Any], window: int | None) -> int | None:
    """The model's input window: `window` if given, else its profile's `max_input_tokens`."""
    profile = getattr(model, "profile", None) or {}
    limit = window if window is not None else profile.get("max_input_tokens")
    return limit if is_int(limit) and limit >= 1 else None


def room_left(model: BaseLanguageModel[Any], limit: int, used: int, reserve: int) -> int:
    """What a window of `limit` tokens leaves once `used` are taken and `reserve` kept back;
    0, with a WARNING, when nothing is left."""
    room = limit - used - reserve - _BOUNDARY_SLACK
    if room < 1:
        logger.warning(
            "aizk: %s's window of %d tokens leaves no room for evidence in this prompt "
            "(the prompt takes %d, %d are reserved)",
            type(model).__name__,
            limit,
            used,
            reserve,
        )
        return 0
    return room


_BOUNDARY_SLACK = 8
"""Tokens kept back for where the block meets the prompt's own text (and, in a chat, for the
message the block comes in): a tokenizer may count a few more there than the parts alone."""
