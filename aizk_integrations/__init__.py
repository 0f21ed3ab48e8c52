"""aizk's budget packer for LangChain and LlamaIndex.

Take a ranked list of retrieved items, keep the longest prefix that fits a token budget, label
each item with its provenance and scopes, and render one markdown block that tells the model
recalled content is evidence, not instructions. The adapters live in
`aizk_integrations.langchain` and `aizk_integrations.llama_index`; this package imports neither
framework.
"""

from aizk_integrations.block_budget import BudgetCovers, pack_block
from aizk_integrations.candidate import Candidate, Lane
from aizk_integrations.defaults import DEFAULT_BUDGET, DEFAULT_CHARS_PER_TOKEN, DEFAULT_MAX_BUDGET
from aizk_integrations.errors import EvidenceError
from aizk_integrations.packing import Decision, PackStep, cut_table, explain, pack, walk
from aizk_integrations.result import Evidence, Provenance, RecallResult
from aizk_integrations.scopes import Scope, ScopeDirectory
from aizk_integrations.tokens import CharsPerToken, TokenCounter

__all__ = [
    "DEFAULT_BUDGET",
    "DEFAULT_CHARS_PER_TOKEN",
    "DEFAULT_MAX_BUDGET",
    "BudgetCovers",
    "Candidate",
    "CharsPerToken",
    "Decision",
    "Evidence",
    "EvidenceError",
    "Lane",
    "PackStep",
    "Provenance",
    "RecallResult",
    "Scope",
    "ScopeDirectory",
    "TokenCounter",
    "cut_table",
    "explain",
    "pack",
    "pack_block",
    "walk",
]
