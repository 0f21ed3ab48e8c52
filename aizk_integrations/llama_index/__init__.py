"""The LlamaIndex adapter: a node postprocessor that hands the prompt one evidence block.

Put `AizkEvidencePostprocessor` last in `node_postprocessors`, after any reranker: it reads the
nodes in the order it is given, withholds what the reader may not see, keeps the longest prefix
that fits the budget and replaces the list with a single node whose text is the markdown block.
Its settings and rules are the ones the LangChain adapter has, written once, so the two behave
the same.

Over a store shared by many readers, retrieve with `AizkScopedRetriever` instead: it asks the
store only for what the request's reader may read, so readers are not starved by each other's
notes and no retrieval event or log carries another reader's text; given the postprocessor as
`evidence`, it packs the block itself, fetching only while the budget has room.
"""

try:
    from aizk_integrations.llama_index._agent_history import AizkToolEvidenceMemory
    from aizk_integrations.llama_index._chat_engines import (
        AizkCondensePlusContextChatEngine,
        AizkContextChatEngine,
    )
    from aizk_integrations.llama_index._event import AizkEvidencePackedEvent
    from aizk_integrations.llama_index._memory import AizkMemoryBlock
    from aizk_integrations.llama_index._postprocessor import AizkEvidencePostprocessor
    from aizk_integrations.llama_index._scoped import AizkScopedRetriever
    from aizk_integrations.llama_index._stores import ScopeFilter, postgres_setup
except ModuleNotFoundError as _error:
    # Only a missing llama-index-core (`llama_index.core`, in the `llama_index` namespace) is a
    # missing extra. Anything else (an installed LlamaIndex too old for a name imported here,
    # say) is shown as it is, not blamed on the install.
    if _error.name not in ("llama_index", "llama_index.core"):
        raise
    raise ModuleNotFoundError(
        "aizk_integrations.llama_index needs LlamaIndex; install it with "
        f'pip install "aizk-integrations[llama-index]" ({_error})',
        name=_error.name,
    ) from _error

__all__ = [
    "AizkCondensePlusContextChatEngine",
    "AizkContextChatEngine",
    "AizkEvidencePackedEvent",
    "AizkEvidencePostprocessor",
    "AizkMemoryBlock",
    "AizkScopedRetriever",
    "AizkToolEvidenceMemory",
    "ScopeFilter",
    "postgres_setup",
]
