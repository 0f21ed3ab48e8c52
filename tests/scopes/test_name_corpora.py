"""Every language's names are scope names, and every look-alike of `private` or ` ∩ ` is not.

Two corpora in `tests/data/`, rebuilt by `tools/build_scope_name_corpora.py`: the name of every
CLDR locale, language and script in itself (from Babel's copy of CLDR), the names the issue
found refused, and every emoji sequence Unicode recommends; and, built from `confusables.txt`,
`private` in every character Unicode says looks like one of its letters, in small capitals,
with dots, full-width and mathematical, and every look-alike of `∩` between every look-alike
of a space. The Unicode data the rule reads is held to the sha256 its README lists.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from aizk_integrations import Scope

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
UNICODE = ROOT / "aizk_integrations" / "data"
PAGE = ROOT / "docs" / "metadata-and-scopes.md"

RULES = {
    "private": "a scope name that reads as 'private' is the reader's own scope",
    "separator": r"reads as '∩', the join of the scopes of one item|which the block uses to join",
}


@cache
def corpus(name: str) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = json.loads((DATA / name).read_text(encoding="ascii"))
    return entries


def refusal(name: str) -> str | None:
    """The message a `Scope` of this name is refused with, or None if it is accepted."""
    try:
        Scope(name=name)
    except ValidationError as error:
        return str(error.errors()[0]["msg"])
    return None


def test_every_name_of_a_language_script_or_emoji_is_a_scope_name() -> None:
    entries = corpus("accepted_scope_names.json")
    sources = {entry["source"].split(":")[0] for entry in entries}
    assert sources == {"cldr", "aizk", "unicode"}
    refused = [(entry, refusal(entry["text"])) for entry in entries]
    assert [(entry["source"], message) for entry, message in refused if message] == []


def test_every_look_alike_of_private_or_the_separator_is_refused_by_its_rule() -> None:
    entries = corpus("refused_scope_names.json")
    assert {entry["rule"] for entry in entries} == set(RULES)
    wrong = [
        (entry["source"], entry["text"], message)
        for entry in entries
        if not re.search(RULES[entry["rule"]], message := refusal(entry["text"]) or "accepted")
    ]
    assert wrong == []


def test_a_refusal_names_the_rule_a_name_breaks_never_its_language() -> None:
    messages = {refusal(entry["text"]) for entry in corpus("refused_scope_names.json")}
    for message in messages:
        assert message is not None
        assert re.match(r"Value error, a scope name (must|that reads as|may hold)", message)
        assert "language" not in message
        assert "not allowed" not in message


def test_the_page_counts_the_corpora_as_they_are() -> None:
    text = PAGE.read_text(encoding="utf-8")
    accepted = corpus("accepted_scope_names.json")
    cldr = [entry for entry in accepted if entry["source"].startswith("cldr:")]
    emoji = [entry for entry in accepted if entry["source"].startswith("unicode:")]
    refused = corpus("refused_scope_names.json")
    for count in (accepted, cldr, emoji, refused):
        assert f"{len(count):,}" in text
    for rule in RULES:
        assert f"{sum(entry['rule'] == rule for entry in refused):,}" in text


def test_the_corpora_are_what_their_script_builds() -> None:
    script = ROOT / "tools" / "build_scope_name_corpora.py"
    done = subprocess.run(
        [sys.executable, str(script), "--check"], capture_output=True, text=True, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr


def readme_digests() -> dict[str, str]:
    text = (UNICODE / "README.md").read_text(encoding="utf-8")
    return dict(re.findall(r"^\| `([\w.]+)` \|.*\| `([0-9a-f]{64})` \|$", text, re.MULTILINE))


@pytest.mark.parametrize("path", sorted(UNICODE.glob("*.txt")), ids=lambda path: path.name)
def test_each_vendored_unicode_file_is_the_one_its_readme_names(path: Path) -> None:
    assert hashlib.sha256(path.read_bytes()).hexdigest() == readme_digests()[path.name]


def test_the_readme_names_only_files_that_are_there() -> None:
    assert set(readme_digests()) == {path.name for path in UNICODE.glob("*.txt")}
