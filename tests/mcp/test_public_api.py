"""The MCP module's public face: three names, and a missing SDK, PyJWT or anyio named as the
extra to install."""

from __future__ import annotations

import subprocess
import sys

import aizk_integrations.mcp


def test_the_mcp_module_exports_exactly_its_three_names() -> None:
    assert aizk_integrations.mcp.__all__ == ["JWTReaderVerifier", "StoredText", "recall_server"]


def test_without_the_sdk_the_import_error_names_the_extra_to_install() -> None:
    """In a process of its own, where the SDK was never imported: as a user without it."""
    probe = (
        "import sys\n"
        "class NotInstalled:\n"
        "    def find_spec(self, name, path, target=None):\n"
        "        if name.split('.')[0] == 'mcp':\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "sys.meta_path.insert(0, NotInstalled())\n"
        "try:\n"
        "    import aizk_integrations.mcp\n"
        "except ModuleNotFoundError as error:\n"
        "    print(error.name, '|', error)\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    name, message = completed.stdout.strip().split(" | ", 1)
    assert name == "mcp"
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
