"""An adapter that cannot be imported says why, and only what is true.

A framework that is not installed at all is a missing extra: the error names the pip command
that installs it. Anything else, such as an installed framework too old for a name the adapter
imports, is the framework's own error, shown as it is: saying "install it" to someone who has
it installed sends them the wrong way (LlamaIndex 0.14.0 did, lacking a name `fit_to` reads).
Each test makes a framework module unimportable, or one lacking names, and imports the adapter
afresh.
"""

from __future__ import annotations

import importlib
import importlib.abc
import re
import sys
import types
from collections.abc import Sequence
from importlib.machinery import ModuleSpec

import pytest

ADAPTERS = ("aizk_integrations.langchain", "aizk_integrations.llama_index", "aizk_integrations.mcp")
"""The adapter packages' prefixes: `aizk_integrations.langchain` covers langchain_agents too."""


def import_afresh(monkeypatch: pytest.MonkeyPatch, adapter: str) -> None:
    """Import `adapter` as if for the first time; every adapter module is put back after."""
    for name in [name for name in sys.modules if name.startswith(ADAPTERS)]:
        monkeypatch.delitem(sys.modules, name)
    importlib.import_module(adapter)


class NotInstalled(importlib.abc.MetaPathFinder):
    """Finds no module under `package`, failing as Python does when nothing provides it."""

    def __init__(self, package: str) -> None:
        self.package = package

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: types.ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname == self.package or fullname.startswith(self.package + "."):
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
        return None


def uninstall(monkeypatch: pytest.MonkeyPatch, adapter: str, package: str) -> None:
    """`package` and its modules, which `adapter` was first imported with, made unimportable."""
    importlib.import_module(adapter)  # its framework loaded whole, so nothing is left half-read
    for name in [name for name in sys.modules if name == package or name.startswith(package + ".")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setattr(sys, "meta_path", [NotInstalled(package), *sys.meta_path])


MCP = (
    "aizk_integrations.mcp needs the MCP SDK and PyJWT; install them with "
    'pip install "aizk-integrations[mcp]"'
)

LANGCHAIN_AGENTS = (
    "aizk_integrations.langchain_agents needs LangChain's agents (the langchain package); "
    'install it with pip install "aizk-integrations[langchain-agents]"'
)


@pytest.mark.parametrize(
    ("adapter", "package", "message"),
    [
        (
            "aizk_integrations.langchain",
            "langchain_core",
            "aizk_integrations.langchain needs LangChain (langchain-core); install it with "
            'pip install "aizk-integrations[langchain]"',
        ),
        (
            "aizk_integrations.llama_index",
            "llama_index",
            "aizk_integrations.llama_index needs LlamaIndex; install it with "
            'pip install "aizk-integrations[llama-index]"',
        ),
        ("aizk_integrations.langchain_agents", "langchain", LANGCHAIN_AGENTS),
        ("aizk_integrations.langchain_agents", "langchain_core", LANGCHAIN_AGENTS),
        ("aizk_integrations.mcp", "mcp", MCP),
        ("aizk_integrations.mcp", "anyio", MCP),
        ("aizk_integrations.mcp", "jwt", MCP),
    ],
)
def test_an_adapter_whose_framework_is_not_installed_names_the_extra_that_installs_it(
    monkeypatch: pytest.MonkeyPatch, adapter: str, package: str, message: str
) -> None:
    uninstall(monkeypatch, adapter, package)
    with pytest.raises(ModuleNotFoundError) as raised:
        import_afresh(monkeypatch, adapter)
    assert str(raised.value) == f"{message} (No module named {package!r})"
    assert raised.value.name == package


def test_the_llama_index_namespace_without_llama_index_core_is_a_missing_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Another llama-index-* package can leave the `llama_index` namespace without its core.
    uninstall(monkeypatch, "aizk_integrations.llama_index", "llama_index.core")
    with pytest.raises(ModuleNotFoundError) as raised:
        import_afresh(monkeypatch, "aizk_integrations.llama_index")
    assert str(raised.value) == (
        "aizk_integrations.llama_index needs LlamaIndex; install it with "
        "pip install \"aizk-integrations[llama-index]\" (No module named 'llama_index.core')"
    )


FRAMEWORK_MODULES = [
    ("aizk_integrations.langchain", "langchain_core.documents"),
    ("aizk_integrations.llama_index", "llama_index.core.response_synthesizers.refine"),
    ("aizk_integrations.langchain_agents", "langchain.agents.middleware"),
    ("aizk_integrations.mcp", "mcp.server.auth.provider"),
]
"""For each adapter, a module of its framework that it imports names from."""


@pytest.mark.parametrize(("adapter", "module"), FRAMEWORK_MODULES)
def test_an_installed_framework_lacking_a_name_the_adapter_imports_shows_its_own_error(
    monkeypatch: pytest.MonkeyPatch, adapter: str, module: str
) -> None:
    importlib.import_module(adapter)  # its framework loaded whole, so nothing is left half-read
    monkeypatch.setitem(sys.modules, module, types.ModuleType(module))  # an older release, say
    with pytest.raises(ImportError) as raised:
        import_afresh(monkeypatch, adapter)
    assert type(raised.value) is ImportError
    assert re.fullmatch(
        rf"cannot import name '\w+' from '{re.escape(module)}' \(unknown location\)",
        str(raised.value),
    )


@pytest.mark.parametrize(("adapter", "module"), FRAMEWORK_MODULES)
def test_an_installed_framework_lacking_a_module_the_adapter_imports_shows_its_own_error(
    monkeypatch: pytest.MonkeyPatch, adapter: str, module: str
) -> None:
    uninstall(monkeypatch, adapter, module)
    with pytest.raises(ModuleNotFoundError) as raised:
        import_afresh(monkeypatch, adapter)
    assert str(raised.value) == f"No module named {module!r}"
    assert raised.value.name == module
