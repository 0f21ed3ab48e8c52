"""Token counters from the tokenizers users already have, for budgets measured in real tokens.

The seed counts four characters as a token, which is cheap and usually close, but "usually" is
not what a context window forgives. These turn a LangChain model, LlamaIndex's tokenizer or a
tiktoken encoding into a `TokenCounter` (text -> int) that `pack`, `pack_block` and both adapters
accept. Each is duck-typed: this module imports no framework and no tokenizer, so the core stays
free of them and the caller's own object does the counting.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sized
from typing import Literal, Protocol

from aizk_integrations._tokens import TokenCounter


class CountsTokens(Protocol):
    """What a LangChain language model (chat model or LLM) offers for counting."""

    def get_num_tokens(self, text: str) -> int: ...


class Encoding(Protocol):
    """What a `tiktoken.Encoding` offers for counting."""

    def encode(
        self, text: str, *, disallowed_special: Literal["all"] | Collection[str] = ...
    ) -> list[int]: ...


class _Counter:
    """A counter holding the caller's tokenizer: a plain object, so an adapter holding it pickles
    and copies (a closure would not)."""

    __slots__ = ("source",)

    def __init__(self, source: object) -> None:
        self.source = source

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.source!r})"

    def __reduce__(self) -> tuple[type[_Counter], tuple[object]]:
        return type(self), (self.source,)


class _LangChainModelCount(_Counter):
    source: CountsTokens

    def __call__(self, text: str) -> int:
        return self.source.get_num_tokens(text)


class _TokenizerCount(_Counter):
    source: Callable[[str], Sized]

    def __call__(self, text: str) -> int:
        return len(self.source(text))


class _TiktokenCount(_Counter):
    source: Encoding

    def __call__(self, text: str) -> int:
        return len(self.source.encode(text, disallowed_special=()))


def counter_from_langchain(model: CountsTokens) -> TokenCounter:
    """Count with a LangChain model's own `get_num_tokens`, the number its provider bills.

    Pass the model the chain sends the prompt to, so the budget is measured with its tokenizer.
    LangChain's fallback for models without one loads GPT-2 through `transformers`; give such a
    model `custom_get_token_ids` (or use `counter_from_tiktoken`) to count offline.
    """
    if not callable(getattr(model, "get_num_tokens", None)):
        raise TypeError(
            "counter_from_langchain needs a LangChain language model with get_num_tokens "
            f"(a chat model or LLM), not {type(model).__name__}"
        )
    return _LangChainModelCount(model)


def counter_from_llama_index(tokenizer: Callable[[str], Sized]) -> TokenCounter:
    """Count with a LlamaIndex tokenizer: pass `Settings.tokenizer`.

    LlamaIndex sizes its own prompts with that tokenizer, so the evidence block is measured the
    same way. It is taken as an argument, read when the counter is made, because reading
    `Settings` here would make the core import LlamaIndex.
    """
    if not callable(tokenizer):
        raise TypeError(
            "counter_from_llama_index needs a tokenizer, a callable from text to a list of "
            f"tokens such as llama_index.core.Settings.tokenizer, not {type(tokenizer).__name__}"
        )
    return _TokenizerCount(tokenizer)


def counter_from_tiktoken(encoding: Encoding) -> TokenCounter:
    """Count with a `tiktoken` encoding, e.g. `tiktoken.get_encoding("o200k_base")`.

    `get_encoding` downloads the encoding the first time it is loaded (a `ConnectionError`
    offline) unless `TIKTOKEN_CACHE_DIR` already holds it; offline, count with
    `counter_from_llama_index(Settings.tokenizer)`, whose encoding ships with LlamaIndex.

    Special-token text such as `<|endoftext|>` is counted as the plain text it is, as the model
    will receive it: tiktoken's default raises on it, and retrieved text may well contain it.
    """
    # A str has an `encode` too, and an encoding's name is the likeliest wrong argument.
    if isinstance(encoding, str) or not callable(getattr(encoding, "encode", None)):
        raise TypeError(
            "counter_from_tiktoken needs a tiktoken Encoding (tiktoken.get_encoding(...)), "
            f"not {type(encoding).__name__}"
        )
    return _TiktokenCount(encoding)
