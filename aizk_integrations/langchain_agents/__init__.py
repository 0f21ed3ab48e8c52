"""Agent memory for LangChain 1.x agents: recall through the packer before every model call.

`AizkMemoryMiddleware` is middleware for `langchain.agents.create_agent`. Before each call to
the model it takes the latest user message, retrieves for it from any LangChain retriever,
packs what came back with an `AizkEvidenceCompressor` (the same settings and code as every
other path: budget, reader, metadata keys, counts in the trace) and hands the model the block
as a user message just before that one. The system prompt is left to the app's instructions,
and the block lives only in the request: the agent's state keeps the conversation as it was,
so each turn's block replaces the last instead of piling up.

The reader comes from the request, fail-closed like the rest of the library: the agent's config
(`config={"configurable": {"aizk_reader": reader}}`) or its runtime context (an
`aizk_reader` key or attribute), else the compressor's own `directory`; with none, only
evidence that names no scope is shown.
"""

try:
    from aizk_integrations.langchain_agents._middleware import AizkMemoryMiddleware
    from aizk_integrations.langchain_agents._tool_evidence import AizkToolEvidenceMiddleware
except ModuleNotFoundError as _error:
    # Only a missing langchain or langchain-core (which aizk_integrations.langchain reports as
    # missing too) is a missing extra. Anything else (an installed LangChain too old for a name
    # imported here, say) is shown as it is, not blamed on the install.
    if _error.name not in ("langchain", "langchain_core"):
        raise
    raise ModuleNotFoundError(
        "aizk_integrations.langchain_agents needs LangChain's agents (the langchain package); "
        f'install it with pip install "aizk-integrations[langchain-agents]" ({_error})',
        name=_error.name,
    ) from _error

__all__ = [
    "AizkMemoryMiddleware",
    "AizkToolEvidenceMiddleware",
]
