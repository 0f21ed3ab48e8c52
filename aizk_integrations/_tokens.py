"""How text becomes a token count, and which numbers of tokens are allowed.

The seed's cheap heuristic counts characters; a caller may trust a counter of its own instead.
"""

from __future__ import annotations

from collections.abc import Callable
from math import ceil, isfinite
from typing import TypeGuard

from aizk_integrations._defaults import DEFAULT_CHARS_PER_TOKEN
from aizk_integrations._errors import EvidenceError, ItemError, quoted

TokenCounter = Callable[[str], int]
"""Anything that maps a text to a non-negative number of tokens."""

CHARS_PER_TOKEN_RANGE = (0.1, 100.0)
"""Ratios a heuristic may use: real tokenizers lie well inside, and every count stays finite."""


def is_int(value: object) -> TypeGuard[int]:
    """Whether `value` is an int and not a bool: `True` is no count, though Python says it is 1."""
    return isinstance(value, int) and not isinstance(value, bool)


class CharsPerToken:
    """The seed's estimate, `ceil(len(text) / chars_per_token)`: the counter when none is given.

    A plain callable rather than a model, so it goes wherever a `TokenCounter` goes.
    """

    __slots__ = ("chars_per_token",)

    def __init__(self, chars_per_token: float = DEFAULT_CHARS_PER_TOKEN) -> None:
        self.chars_per_token = check_chars_per_token(chars_per_token)

    def __call__(self, text: str) -> int:
        return ceil(len(text) / self.chars_per_token)


def check_chars_per_token(value: object) -> float:
    """Refuse ratios that would divide by zero or make a count 0, NaN, infinite or absurd."""
    if not (is_int(value) or isinstance(value, float)):
        raise TypeError(
            f"chars_per_token must be a positive finite number, not {type(value).__name__}"
        )
    if not isfinite(value) or value <= 0:
        raise EvidenceError(f"chars_per_token must be a positive finite number, got {value!r}")
    low, high = CHARS_PER_TOKEN_RANGE
    if not low <= value <= high:
        raise EvidenceError(
            f"chars_per_token must be between {low} and {high:g} characters per token "
            f"(real tokenizers average 2 to 6), got {value!r}"
        )
    return float(value)


SEED_COUNTER = CharsPerToken()
"""The seed's own count, `ceil(len(text) / 4)`."""


def check_budget(budget: object) -> int:
    """A budget is a plain int >= 0."""
    if not is_int(budget):
        raise TypeError(f"budget must be an int >= 0, not {type(budget).__name__} {budget!r}")
    if budget < 0:
        raise ValueError(f"budget must be an int >= 0, got {budget}")
    return budget


def count_tokens(counter: TokenCounter, text: str, position: int | None) -> int:
    """Call a counter and insist on a usable answer, blaming the item at `position` if not.

    A counter that returns a float, a negative number or `None` would silently corrupt the
    running total, so it is stopped here with the item that triggered it.
    """
    try:
        tokens = counter(text)
    except ImportError as error:
        # Said whole: the fix is in the missing package's own message, which holds no text.
        raise ItemError(
            position,
            f"token_counter could not load its tokenizer ({type(error).__name__}: {error}). "
            "Install the package it names, or count another way: token_counter= one of "
            "aizk_integrations.counters (counter_from_tiktoken needs no model files), or "
            "chars_per_token= for the seed's estimate",
        ) from error
    except Exception as error:
        raise ItemError(
            position, f"token_counter raised {type(error).__name__}: {quoted(str(error))}"
        ) from error
    if not is_int(tokens) or tokens < 0:
        raise ItemError(
            position, f"token_counter must return a non-negative int, got {quoted(tokens)}"
        )
    return tokens
