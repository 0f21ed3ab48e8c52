"""Ready-made counters: each counts exactly what its tokenizer counts, and the core stays bare."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st
from langchain_core.language_models.fake import FakeListLLM
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from llama_index.core import Settings

import aizk_integrations.counters
from aizk_integrations import Candidate, pack_block
from aizk_integrations.counters import (
    counter_from_langchain,
    counter_from_llama_index,
    counter_from_tiktoken,
)
from tests.offline_tokenizers import cl100k

ENCODING = cl100k()  # loaded once, outside any hypothesis deadline
texts = st.text(max_size=200) | st.sampled_from(["", "<|endoftext|>", "a <|fim_prefix|> b"])


def test_the_counters_module_exports_three_builders() -> None:
    assert aizk_integrations.counters.__all__ == [
        "counter_from_langchain",
        "counter_from_llama_index",
        "counter_from_tiktoken",
    ]


@given(texts)
def test_the_tiktoken_counter_counts_what_the_encoding_encodes_special_text_included(
    text: str,
) -> None:
    encoding = ENCODING
    assert counter_from_tiktoken(encoding)(text) == len(
        encoding.encode(text, disallowed_special=())
    )


def test_special_token_text_is_counted_as_plain_text_rather_than_raising() -> None:
    count = counter_from_tiktoken(ENCODING)
    assert count("<|endoftext|>") == len(ENCODING.encode_ordinary("<|endoftext|>")) > 1


@pytest.mark.parametrize(
    "model",
    [
        FakeListLLM(responses=["ok"], custom_get_token_ids=lambda text: ENCODING.encode(text)),
        FakeListChatModel(
            responses=["ok"], custom_get_token_ids=lambda text: ENCODING.encode(text)
        ),
    ],
    ids=["llm", "chat model"],
)
def test_the_langchain_counter_asks_the_model_itself(model: FakeListLLM) -> None:
    text = "Sam prefers morning study blocks."
    assert counter_from_langchain(model)(text) == model.get_num_tokens(text)
    assert counter_from_langchain(model)(text) == len(ENCODING.encode(text))


def test_the_llama_index_counter_counts_with_settings_tokenizer() -> None:
    text = "The book club meets on the second Thursday. <|endoftext|>"
    assert counter_from_llama_index(Settings.tokenizer)(text) == len(Settings.tokenizer(text))


def test_a_counter_shows_what_it_counts_with_in_a_settings_repr() -> None:
    # What a notebook shows for an adapter's `token_counter`: the caller's own tokenizer.
    assert repr(counter_from_tiktoken(ENCODING)) == f"_TiktokenCount({ENCODING!r})"


@pytest.mark.parametrize(
    ("builder", "wrong", "names"),
    [
        (counter_from_langchain, "gpt-4o", "str"),
        (counter_from_llama_index, 42, "int"),
        (counter_from_tiktoken, "cl100k_base", "str"),
    ],
)
def test_a_counter_is_refused_at_once_when_given_the_wrong_object(
    builder: object, wrong: object, names: str
) -> None:
    with pytest.raises(TypeError, match=f"^{builder.__name__} needs .* not {names}$"):  # type: ignore[attr-defined]
        builder(wrong)  # type: ignore[operator]


def test_a_block_packed_with_a_langchain_models_counter_fits_that_model() -> None:
    model = FakeListLLM(responses=["ok"], custom_get_token_ids=lambda text: ENCODING.encode(text))
    count = counter_from_langchain(model)
    items = [Candidate(line=f"Evidence line {n} about the reranker sweep.") for n in range(50)]
    result = pack_block(items, 150, token_counter=count)
    assert 0 < len(result.evidence) < 50
    assert model.get_num_tokens(result.to_markdown()) <= 150


def test_importing_the_counters_loads_no_framework_and_no_tokenizer() -> None:
    probe = (
        "import sys, aizk_integrations.counters;"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "{'langchain_core', 'llama_index', 'tiktoken', 'tokenizers', 'transformers'}))"
    )
    completed = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    assert completed.stdout.strip() == "[]"
