"""`hash_vector` as a LlamaIndex embedding: the tests that rank a shared store by meaning."""

from __future__ import annotations

from functools import cache

from llama_index.core.base.embeddings.base import BaseEmbedding

from tests.scoped_corpus import hash_vector


@cache
def word_vector(text: str) -> list[float]:
    """`hash_vector`, worked out once per text: a shared store's notes are embedded often."""
    return hash_vector(text)


class WordEmbedding(BaseEmbedding):
    """`hash_vector` as a LlamaIndex embedding: texts sharing words are close, none tie."""

    def _get_query_embedding(self, query: str) -> list[float]:
        return word_vector(query)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return word_vector(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return word_vector(text)
