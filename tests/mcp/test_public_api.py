"""The MCP module's public face: three names, and a missing SDK named as the extra to install."""

from __future__ import annotations

import subprocess
import sys

import aizk_integrations.mcp


def test_the_mcp_module_exports_exactly_its_three_names() -> None:
    assert aizk_integrations.mcp.__all__ == ["JWTReaderVerifier", "StoredText", "recall_server"]


def test_without_the_sdk_the_import_error_names_the_extra_to_install() -> None:
    probe = (
        "import sys\n"
        "sys.modules['mcp'] = None  # as if the SDK were not installed\n"
        "try:\n"
        "    import aizk_integrations.mcp\n"
        "except ModuleNotFoundError as error:\n"
        "    print(error.name, '|', error)\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    name, message = completed.stdout.strip().split(" | ", 1)
    assert name.split(".")[0] == "mcp"
    assert 'pip install "aizk-integrations[mcp]"' in message


def test_the_core_and_the_adapters_import_no_mcp() -> None:
    probe = (
        "import sys\n"
        "import aizk_integrations, aizk_integrations.langchain, aizk_integrations.llama_index\n"
        "print(sorted(name for name in sys.modules if name == 'mcp' or name.startswith('mcp.')))\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    assert completed.stdout.strip() == "[]"
