"""Every default the library ships, in one place.

The numbers come from the seed: aizk packs to 2048 tokens unless told otherwise, lets a caller
raise that to 16384 at most so one request cannot swallow a context window, and estimates a
token as four characters because packing must stay cheap.
"""

from typing import Final

DEFAULT_BUDGET: Final = 2048
"""Tokens of evidence a prompt receives when the caller does not say."""

DEFAULT_MAX_BUDGET: Final = 16384
"""The ceiling an adapter enforces on a per-instance or per-call budget."""

DEFAULT_CHARS_PER_TOKEN: Final = 4.0
"""Characters per token in the cheap heuristic count."""
