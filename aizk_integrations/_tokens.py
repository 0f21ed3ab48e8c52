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


def cannot_load(error: BaseException) -> str:
    """What to say of a counter whose tokenizer did not load, and the ways out that need no
    network: said whole, since the fix is in the missing package's own message (no text)."""
    return (
        f"token_counter could not load its tokenizer ({type(error).__name__}: {error}). "
        "Install the package it names, or count another way that works offline: "
        "chars_per_token= (the seed's estimate, no tokenizer at all), or "
        "token_counter=counter_from_llama_index(tokenizer) (aizk_integrations.counters) with a "
        "tokenizer already on disk: LlamaIndex's Settings.tokenizer, whose encoding ships with "
        "llama-index-core, or a transformers tokenizer's encode loaded from a local folder. "
        "counter_from_tiktoken is not one: tiktoken.get_encoding(...) downloads the encoding "
        "on first use (ConnectionError offline) unless TIKTOKEN_CACHE_DIR already holds it"
    )


def check_loads(counter: TokenCounter) -> None:
    """Count a word once, so a counter whose tokenizer cannot load (a package missing, model
    files that cannot be read or fetched) fails when the packer is built, not on the first
    request. Any other failure is left to the items it fails on, which the walk names."""
    try:
        counter(_PROBE)
    except (ImportError, OSError) as error:
        raise ValueError(cannot_load(error)) from error
    except Exception:
        pass  # it loaded, and fails on a text: the walk names the item it fails on


_PROBE = "evidence"


def count_tokens(counter: TokenCounter, text: str, position: int | None) -> int:
    """Call a counter and insist on a usable answer, blaming the item at `position` if not.

    A counter that returns a float, a negative number or `None` would silently corrupt the
    running total, so it is stopped here with the item that triggered it.
    """
    try:
        tokens = counter(text)
    except ImportError as error:
        raise ItemError(position, cannot_load(error)) from error
    except Exception as error:
        raise ItemError(
            position, f"token_counter raised {type(error).__name__}: {quoted(str(error))}"
        ) from error
    if not is_int(tokens) or tokens < 0:
        raise ItemError(
            position, f"token_counter must return a non-negative int, got {quoted(tokens)}"
        )
    return tokens
