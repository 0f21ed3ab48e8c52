"""aizk's budget packer for LangChain and LlamaIndex.

Take a ranked list of retrieved items, keep the longest prefix that fits a token budget, label
each item with its provenance and scopes, and render one markdown block that tells the model
recalled content is evidence, not instructions. The adapters live in
`aizk_integrations.langchain` and `aizk_integrations.llama_index`, ready-made token counters in
`aizk_integrations.counters`; this package imports no framework.

The data path is a straight line of private modules, each hop going one way: `_reading` (read
and authorize) -> `_packing` (the walk, priced by `_pricing`) -> `_result` (the public result)
-> `_rendering` (the template); `_run` is the one run the adapters make of it.
"""

from aizk_integrations._candidate import Candidate
from aizk_integrations._errors import EvidenceError
from aizk_integrations._evidence import Evidence
from aizk_integrations._lanes import Lane, Provenance
from aizk_integrations._packing import explain, pack, pack_block
from aizk_integrations._result import RecallResult
from aizk_integrations._scope_ids import PUBLIC, scope_metadata
from aizk_integrations._scopes import Scope, ScopeDirectory

__all__ = [
    "PUBLIC",
    "Candidate",
    "Evidence",
    "EvidenceError",
    "Lane",
    "Provenance",
    "RecallResult",
    "Scope",
    "ScopeDirectory",
    "explain",
    "pack",
    "pack_block",
    "scope_metadata",
]
