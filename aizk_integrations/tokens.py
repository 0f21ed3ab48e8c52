"""How text becomes a token count: the seed's cheap heuristic, or a counter the caller trusts."""

from __future__ import annotations

from collections.abc import Callable
from math import ceil, isfinite

from aizk_integrations.defaults import DEFAULT_CHARS_PER_TOKEN
from aizk_integrations.errors import EvidenceError

TokenCounter = Callable[[str], int]
"""Anything that maps a text to a non-negative number of tokens."""


def estimate_tokens(text: str) -> int:
    """The seed's cheap count, `ceil(len(text) / 4)`: every packing walk's default."""
    return ceil(len(text) / DEFAULT_CHARS_PER_TOKEN)


class CharsPerToken:
    """The seed's estimate, `ceil(len(text) / chars_per_token)`, with a configurable ratio.

    A plain callable rather than a model so it can be passed wherever a `TokenCounter` goes.
    """

    __slots__ = ("chars_per_token",)

    def __init__(self, chars_per_token: float = DEFAULT_CHARS_PER_TOKEN) -> None:
        self.chars_per_token = check_chars_per_token(chars_per_token)

    def __call__(self, text: str) -> int:
        return ceil(len(text) / self.chars_per_token)

    def __repr__(self) -> str:
        return f"CharsPerToken({self.chars_per_token!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CharsPerToken) and other.chars_per_token == self.chars_per_token

    def __hash__(self) -> int:
        return hash(self.chars_per_token)


def check_chars_per_token(value: object) -> float:
    """Refuse ratios that would divide by zero or turn every count into 0, NaN or infinity."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(
            f"chars_per_token must be a positive finite number, not {type(value).__name__}"
        )
    if not isfinite(value) or value <= 0:
        raise EvidenceError(f"chars_per_token must be a positive finite number, got {value!r}")
    return float(value)


def counted_tokens(
    counter: TokenCounter, text: str, describe: Callable[[int], str], rank: int
) -> int:
    """Call a caller's counter and insist on a usable answer.

    A counter that returns a float, a negative number or `None` would silently corrupt the
    running total, so it is stopped here with the item that triggered it.
    """
    try:
        tokens = counter(text)
    except Exception as error:
        raise EvidenceError(
            f"{describe(rank)}: token_counter raised {type(error).__name__}: {error}"
        ) from error
    if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 0:
        raise EvidenceError(
            f"{describe(rank)}: token_counter must return a non-negative int, got {tokens!r}"
        )
    return tokens
