"""The import paths and names users write are part of the contract."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest

import aizk_integrations

ROOT = Path(__file__).parents[2]


def test_the_public_names_are_pinned() -> None:
    assert aizk_integrations.__all__ == [
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
    for name in aizk_integrations.__all__:
        assert getattr(aizk_integrations, name) is not None


def test_the_version_is_the_installed_distributions_and_pyprojects() -> None:
    # What a bug report quotes: the version pip installed, the one pyproject.toml declares.
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert aizk_integrations.__version__ == declared["project"]["version"]
    assert aizk_integrations.__version__ == metadata.version("aizk-integrations")


def test_a_scope_directory_offers_the_members_the_docs_name() -> None:
    from aizk_integrations import ScopeDirectory

    members = {name for name in vars(ScopeDirectory) if not name.startswith(("_", "model_"))}
    assert members == {"for_caller", "may_read", "permits", "private_scope_id", "resolve"}
    assert isinstance(vars(ScopeDirectory)["private_scope_id"], property)
    assert set(ScopeDirectory.model_fields) == {"scopes"}


def test_the_adapter_modules_export_what_the_docs_name() -> None:
    from aizk_integrations import counters, langchain, langchain_agents, llama_index

    assert langchain.__all__ == [
        "AizkEvidenceCompressor",
        "AizkEvidenceRetriever",
        "AizkScopedRetriever",
        "context_room",
        "postgres_setup",
    ]
    assert langchain_agents.__all__ == ["AizkMemoryMiddleware", "AizkToolEvidenceMiddleware"]
    assert llama_index.__all__ == [
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
    for module in (counters, langchain, langchain_agents, llama_index):
        for name in module.__all__:
            assert getattr(module, name) is not None, (module.__name__, name)


def test_the_public_surface_stays_small_and_exports_each_object_once() -> None:
    exported = [
        (name, member, getattr(importlib.import_module(name), member))
        for name in PUBLIC_MODULES
        for member in importlib.import_module(name).__all__
    ]
    assert len(exported) <= 38
    homes: dict[int, list[str]] = {}
    for name, member, value in exported:
        homes.setdefault(id(value), []).append(f"{name}.{member}")
    assert [places for places in homes.values() if len(places) > 1] == []


def test_llama_index_events_end_in_event() -> None:
    from llama_index.core.instrumentation.events import BaseEvent

    from aizk_integrations import llama_index

    events = [
        name
        for name in llama_index.__all__
        if isinstance(getattr(llama_index, name), type)
        and issubclass(getattr(llama_index, name), BaseEvent)
    ]
    assert events == ["AizkEvidencePackedEvent"]


PUBLIC_MODULES = [
    "aizk_integrations",
    "aizk_integrations.counters",
    "aizk_integrations.langchain",
    "aizk_integrations.langchain_agents",
    "aizk_integrations.llama_index",
    "aizk_integrations.mcp",
]


def test_every_module_but_the_public_ones_is_private() -> None:
    found = {
        module.name
        for module in pkgutil.walk_packages(aizk_integrations.__path__, "aizk_integrations.")
    }
    assert set(PUBLIC_MODULES[1:]) <= found
    public_looking = {
        name for name in found if not any(part.startswith("_") for part in name.split("."))
    }
    assert public_looking == set(PUBLIC_MODULES[1:])


@pytest.mark.parametrize("name", PUBLIC_MODULES)
def test_every_public_looking_name_of_a_public_module_is_exported(name: str) -> None:
    # As httpx's test_exported_members: a name without an underscore in a public module is
    # public, so it is in `__all__`; a public module only re-exports, so nothing else leaks.
    module = importlib.import_module(name)
    public_looking = {
        member
        for member, value in vars(module).items()
        if not member.startswith("_") and not inspect.ismodule(value)
    }
    assert public_looking == set(module.__all__)
    assert len(module.__all__) == len(set(module.__all__))


@pytest.mark.parametrize("name", PUBLIC_MODULES)
def test_every_exported_name_is_documented(name: str) -> None:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    text = "\n".join(page.read_text(encoding="utf-8") for page in pages)
    module = importlib.import_module(name)
    undocumented = {member for member in module.__all__ if f"`{member}" not in text}
    assert undocumented == set()
    for member in module.__all__:
        value = getattr(module, member)
        if inspect.isclass(value) or inspect.isfunction(value):
            assert inspect.getdoc(value), f"{name}.{member} has no docstring"


def test_the_adapters_expose_no_plumbing_methods() -> None:
    from aizk_integrations.langchain import AizkEvidenceCompressor
    from aizk_integrations.llama_index import AizkEvidencePostprocessor

    ours = {
        "as_runnable",
        "compress_documents",
        "acompress_documents",
        "class_name",
        "to_dict",
        "for_model",
        "for_reader",
        "is_lc_serializable",  # LangChain's serialization hooks
        "get_lc_namespace",
        "to_json",
    }
    for adapter in (AizkEvidenceCompressor, AizkEvidencePostprocessor):
        defined = {
            name
            for klass in adapter.__mro__
            if klass.__module__.startswith("aizk_integrations")
            for name, value in vars(klass).items()
            if callable(value) and not name.startswith("_")
        }
        assert defined <= ours, defined - ours


def test_the_defaults_are_the_seeds() -> None:
    from aizk_integrations.langchain import AizkEvidenceCompressor

    defaults = AizkEvidenceCompressor()
    assert (defaults.budget, defaults.max_budget, defaults.chars_per_token) == (2048, 16384, 4.0)


def test_importing_the_core_loads_no_framework() -> None:
    probe = (
        "import sys, aizk_integrations;"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "{'langchain', 'langchain_core', 'langchain_classic', 'langgraph', 'llama_index'}))"
    )
    completed = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    assert completed.stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("module", "allowed"),
    [
        ("aizk_integrations.langchain", {"langchain_core"}),
        ("aizk_integrations.llama_index", {"llama_index"}),
        ("aizk_integrations.langchain_agents", {"langchain_core", "langchain", "langgraph"}),
    ],
)
def test_each_adapter_loads_only_the_frameworks_its_extra_installs(
    module: str, allowed: set[str]
) -> None:
    frameworks = {"langchain", "langchain_core", "langchain_classic", "langgraph", "llama_index"}
    probe = (
        f"import sys, {module};"
        "print(sorted({m.split('.')[0] for m in sys.modules} & set("
        f"{sorted(frameworks)!r})))"
    )
    completed = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    loaded = set(ast.literal_eval(completed.stdout.strip()))
    assert loaded <= allowed, loaded - allowed
    assert loaded, f"{module} loaded no framework at all"


def test_every_field_we_define_says_what_it_is_for() -> None:
    # The descriptions are what IDEs, `model_json_schema()` and LangChain's tool schemas show.
    from aizk_integrations import Candidate, Evidence, RecallResult, Scope, ScopeDirectory
    from aizk_integrations.langchain import AizkEvidenceCompressor, AizkEvidenceRetriever
    from aizk_integrations.llama_index import (
        AizkEvidencePackedEvent,
        AizkEvidencePostprocessor,
        AizkMemoryBlock,
    )

    models = (
        Candidate,
        Evidence,
        RecallResult,
        Scope,
        ScopeDirectory,
        AizkEvidenceCompressor,
        AizkEvidenceRetriever,
        AizkEvidencePostprocessor,
        AizkMemoryBlock,
        AizkEvidencePackedEvent,
    )
    for model in models:
        ours = {
            name
            for klass in model.__mro__
            if klass.__module__.startswith("aizk_integrations")
            for name in getattr(klass, "__annotations__", {})
            if name in model.model_fields
        }
        assert ours, model
        undescribed = {name for name in ours if not model.model_fields[name].description}
        assert undescribed == set(), (model.__name__, undescribed)
