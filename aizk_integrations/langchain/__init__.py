"""The LangChain adapter: retrieved `Document`s in, one evidence block out.

`AizkEvidenceCompressor` is a `BaseDocumentCompressor`, so it drops into
`ContextualCompressionRetriever` and `DocumentCompressorPipeline`, and `as_runnable()` gives the
same packer as an LCEL step whose output fills a prompt's `{context}`. `AizkEvidenceRetriever`
wraps any retriever with it and carries each request's config to it, wherever it is invoked.
The documents are taken to be in merit order already (retrieved, perhaps reranked): the packer
never reorders, it only decides where to stop, so the query is not needed to pack.

One app usually serves many readers, so each request names its reader in its config
(`config={"configurable": {"aizk_reader": reader}}`). The packer reads that config wherever
LangChain carries one: in an LCEL chain, a retriever tool, a LangGraph node, `batch`. Where
LangChain carries none (a bare `ContextualCompressionRetriever.invoke`), the call has no reader
and fails closed: only evidence that names no scope is shown.
"""

try:
    from aizk_integrations.langchain._compressor import AizkEvidenceCompressor
    from aizk_integrations.langchain._retriever import AizkEvidenceRetriever
    from aizk_integrations.langchain._room import context_room
    from aizk_integrations.langchain._scoped import AizkScopedRetriever
    from aizk_integrations.langchain._stores import postgres_setup
except ModuleNotFoundError as _error:
    # Only a missing langchain-core is a missing extra. Anything else (an installed LangChain
    # too old for a name imported here, say) is shown as it is, not blamed on the install.
    if _error.name != "langchain_core":
        raise
    raise ModuleNotFoundError(
        "aizk_integrations.langchain needs LangChain (langchain-core); install it with "
        f'pip install "aizk-integrations[langchain]" ({_error})',
        name=_error.name,
    ) from _error

__all__ = [
    "AizkEvidenceCompressor",
    "AizkEvidenceRetriever",
    "AizkScopedRetriever",
    "context_room",
    "postgres_setup",
]
