"""Token counters from the tokenizers users already have, for budgets measured in real tokens.

The seed counts four characters as a token, which is cheap and usually close, but "usually" is
not what a context window forgives. These turn a LangChain model, LlamaIndex's tokenizer or a
tiktoken encoding into a `TokenCounter` (text -> int) that `pack`, `pack_block` and both adapters
accept. Each is duck-typed: this module imports no framework and no tokenizer.
"""

from aizk_integrations._counters import (
    counter_from_langchain,
    counter_from_llama_index,
    counter_from_tiktoken,
)

__all__ = ["counter_from_langchain", "counter_from_llama_index", "counter_from_tiktoken"]
