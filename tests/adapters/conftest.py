"""The `adapter` fixture: every law in this folder runs through both frameworks."""

from tests.adapters.harness import adapter

__all__ = ["adapter"]
