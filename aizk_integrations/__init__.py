"""aizk's budget packer for LangChain and LlamaIndex.

Take a ranked list of retrieved items, keep the longest prefix that fits a token budget, label
each item with its provenance and scopes, and render one markdown block that tells the model
recalled content is evidence, not instructions. The adapters live in
`aizk_integrations.langchain` and `aizk_integrations.llama_index`, ready-made token counters in
`aizk_integrations.counters`; this package imports no framework.

The private parts, each a folder whose imports go one way, down this list: the basics at the
root (`_errors`, `_text`, `_tokens`, `_uuids`, `_defaults`); `_scopes` (who may read what) and
`_markdown` (keeping retrieved text inside its bullet); `_core`, the seed's straight line from
a candidate through the prefix cut to the rendered block; `_stores`, what each store is asked
for a reader; `_run`, the one run every adapter makes of the core; then the adapters.
"""

import importlib.metadata

from aizk_integrations._core.candidate import Candidate
from aizk_integrations._core.evidence import Evidence
from aizk_integrations._core.lanes import Lane, Provenance
from aizk_integrations._core.packing import explain, pack, pack_block
from aizk_integrations._core.result import RecallResult
from aizk_integrations._errors import EvidenceError
from aizk_integrations._scopes.directory import Scope, ScopeDirectory
from aizk_integrations._scopes.ids import PUBLIC, scope_metadata

try:
    __version__ = importlib.metadata.version("aizk-integrations")
except importlib.metadata.PackageNotFoundError:  # the source tree on sys.path, not installed
    __version__ = "0+unknown"
"""The installed distribution's version, as bug reports quote it (read from its metadata, so it
is the version pip installed, never a second copy of pyproject's)."""

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
