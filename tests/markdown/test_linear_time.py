"""Containment does work linear in the text, for every shape of hostile input.

One retrieved document is a request's worth of work: a text that makes a pattern backtrack would
be a denial of service per request (and a whole-block budget prices even the items it then
cuts). Time depends on the machine and on whatever else it runs, so the law is on what the code
does, counted: every line of Python it executes, and every character it hands a regular
expression to scan. Each family is counted at two sizes, `SMALL` and `SCALE` times that, and the
law is on the ratio: linear work grows about `SCALE`-fold, quadratic work `SCALE ** 2`-fold, and
the bound sits between the two. The same input gives the same count on every machine, busy or
quiet, so the test fails for the code and nothing else (wall-clock ratios live in bench/).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from types import FrameType
from typing import Any

import pytest

from aizk_integrations import Candidate, RecallResult, Scope, ScopeDirectory
from aizk_integrations._markdown import containment

SMALL = 5_000
SCALE = 8
BOUND = 2 * SCALE
"""Linear growth is `SCALE` (8); quadratic is 64. A count has no noise to leave room for, so
twice linear is room enough for what is done once per call, and fails n^1.34 or worse."""


def _repeat(unit: str) -> Callable[[int], str]:
    return lambda n: unit * (n // len(unit))


def _run_then(run: str, tail: str) -> Callable[[int], str]:
    return lambda n: run * ((n - len(tail)) // len(run)) + tail


TEXTS: dict[str, Callable[[int], str]] = {
    # backslash runs, before what an escape looks at
    "backslashes then a tag": _run_then("\\", "a<b>"),
    "backslashes then <": _run_then("\\", "<a"),
    "backslashes then [": _run_then("\\", "["),
    "backslashes then begin": _run_then("\\", "begin{align}"),
    "backslashes and tags": _repeat("\\\\<a"),
    "backslashes alone": _repeat("\\"),
    # < runs, tags and autolink look-alikes
    "< run": _repeat("<"),
    "<a run": _repeat("<a"),
    "unclosed scheme autolinks": _repeat("<ab:"),
    "one unclosed e-mail autolink": lambda n: "<" + "a" * (n - 1),
    "unclosed e-mail autolinks": _repeat("<" + "a" * 30 + "@"),
    "long autolink domain labels": _repeat("<a@" + "b" * 70 + "."),
    "javascript links": _repeat("[a](javascript:"),
    "spaced javascript links": _repeat("[a](\u00a0\ufeff\u3000"),
    "autolinks in a bare URL": _repeat("http://a<http://b>"),
    "autolinks after controls": _repeat("\x1f<http://b>"),
    # link reference definitions
    "[ run then ]:": _run_then("[", "]:"),
    "]: run": _repeat("]:"),
    "definition lines": _repeat("[a]: b\n"),
    "quoted definitions": _repeat("> [a]: b\n"),
    # fences
    "backtick run": _repeat("`"),
    "tilde run": _repeat("~"),
    "fence lines": _repeat("```\n"),
    "open fences in quotes": _repeat("> ```\n"),
    "fences that other spaces do not close": _repeat("```\u00a0\n"),
    # nesting markers
    "nested list markers": _run_then("- ", "[x]: y"),
    "nested quote markers": _run_then("> ", "<b>"),
    "nested ordered markers": _run_then("1. ", "```"),
    "long list numbers": _run_then("1", ". x"),
    "indentation then a definition": _run_then(" ", "x [y]: z"),
    "tabs then [": _run_then("\t", "["),
    "marker lines": _repeat("- - - - - - - - x\n"),
    "markers then spaces": _repeat("> - 1. "),
    "marker look-alikes then spaces": _repeat("-- 1.1. > "),
    # long lines, many lines
    "one long line": _repeat("a"),
    "many short lines": _repeat("a\n"),
    "many blank lines": _repeat("\n"),
    "many space lines": _repeat("  \n"),
    "many line separators": _repeat("a\u2028"),
    # math, footnotes and colon fences
    "$ run": _repeat("$"),
    "$ and fences": _repeat("$ a\n```\n"),
    "$$ lines": _repeat("$$\n"),
    "^[ runs": _repeat("^["),
    ": run": _repeat(":"),
    "::: lines": _repeat(":::\n"),
    "& run": _repeat("&"),
}

DESCRIPTIONS: dict[str, Callable[[int], str]] = {
    "markup characters": _repeat("\\`*_[]<&~!"),
    "bare URLs": _repeat("https://a.example "),
    "www. names": _repeat("www."),
    "e-mail addresses": _repeat("a@b."),
    "@ run": _repeat("@"),
    "$ run": _repeat("$"),
    "invisible characters": _repeat("\u00a0\ufeff\u1680"),
}

NAMES: dict[str, Callable[[int], str]] = {
    "backtick runs": _repeat("a``"),
    "letters": _repeat("a"),
    "look-alike letters": _repeat("\u0440r\u0456v\u0430t\u0435"),  # "private", four Cyrillic
    "combining marks": _repeat("a\u0301"),
}


def _text_block(text: str) -> str:
    return RecallResult.from_candidates([Candidate(line=text)]).to_markdown()


def _description_block(description: str) -> str:
    directory = ScopeDirectory.for_caller(
        "me", {"org": Scope(name="team", description=description)}
    )
    return RecallResult.from_candidates(
        [Candidate(line="x", scopes=["org"])], directory
    ).to_markdown()


def _name_block(name: str) -> str:
    directory = ScopeDirectory.for_caller("me", {"org": Scope(name=name)})
    return RecallResult.from_candidates(
        [Candidate(line="x", scopes=["me", "org"])], directory
    ).to_markdown()


class _Steps:
    """A deterministic count of the work a call does: Python lines run and characters scanned.

    Lines are counted with the interpreter's own trace hook. A regular expression runs in C,
    where no hook reaches, so each pattern the package holds at module level is swapped, for
    the count only, for one that also adds the characters each call reads: a scan to the end
    (`sub`, `finditer`, a `search` that finds nothing) counts the rest of the string, a search
    that finds counts up to its match's end, and an anchored `match` up to its end (one step if
    it fails at once). So a scan restarted from the top on every line shows as the quadratic
    work it is. What one call backtracks inside the engine, short of its match's end, is below
    this count.
    """

    def __init__(self) -> None:
        self.count = 0

    def trace(self, frame: FrameType, event: str, arg: Any) -> Any:  # sys.settrace's shape
        self.count += 1
        return self.trace

    def counting(self, method: Callable[..., Any]) -> Callable[..., Any]:
        """`method` (a pattern's `search`, `sub`, ...) adding what it reads to the count."""
        name = method.__name__
        text_at = 1 if name in ("sub", "subn") else 0
        takes_pos = name in ("search", "match", "fullmatch", "finditer", "findall")

        def counted(*args: Any, **kwargs: Any) -> Any:
            text = args[text_at] if len(args) > text_at else kwargs["string"]
            pos = kwargs.get("pos", 0)
            if takes_pos and len(args) > 1:
                pos = args[1]
            found = method(*args, **kwargs)
            end = len(text)
            if name in ("match", "fullmatch"):
                end = pos + 1 if found is None else found.end()
            elif name == "search" and found is not None:
                end = found.end()
            self.count += 1 + max(end - pos, 0)
            return found

        return counted


class _CountedPattern:
    """A compiled pattern whose methods count for `_Steps`."""

    def __init__(self, pattern: re.Pattern[str], steps: _Steps) -> None:
        self._pattern = pattern
        self._steps = steps

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._pattern, name)
        return self._steps.counting(value) if callable(value) else value


def _steps(render: Callable[[str], str], text: str, monkeypatch: pytest.MonkeyPatch) -> int:
    steps = _Steps()
    with monkeypatch.context() as patched:
        for name, module in list(sys.modules.items()):
            if name.startswith("aizk_integrations.") and module is not None:
                for attribute, value in list(vars(module).items()):
                    if isinstance(value, re.Pattern):
                        patched.setattr(module, attribute, _CountedPattern(value, steps))
                    elif isinstance(getattr(value, "__self__", None), re.Pattern):
                        patched.setattr(module, attribute, steps.counting(value))
        previous = sys.gettrace()
        sys.settrace(steps.trace)
        try:
            render(text)
        finally:
            sys.settrace(previous)
    return steps.count


def _growth(
    render: Callable[[str], str], make: Callable[[int], str], monkeypatch: pytest.MonkeyPatch
) -> float:
    """How many times the work `SCALE` times the text takes, each size counted once.

    A smaller text of the family runs first, so what is done once per process (tables loaded,
    caches of single characters filled) is counted at neither size.
    """
    small, large = make(SMALL), make(SMALL * SCALE)
    assert len(large) >= (SCALE - 1) * len(small), "the family does not grow with n"
    render(make(SMALL // 2))
    return _steps(render, large, monkeypatch) / _steps(render, small, monkeypatch)


CASES = [
    *[pytest.param(_text_block, make, id=f"text: {name}") for name, make in TEXTS.items()],
    *[
        pytest.param(_description_block, make, id=f"description: {name}")
        for name, make in DESCRIPTIONS.items()
    ],
    *[pytest.param(_name_block, make, id=f"name: {name}") for name, make in NAMES.items()],
]


@pytest.mark.parametrize(("render", "make"), CASES)
def test_containment_time_grows_linearly_with_the_text(
    render: Callable[[str], str], make: Callable[[int], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    growth = _growth(render, make, monkeypatch)
    assert growth < BOUND, f"{SCALE}x the text took {growth:.1f}x the work"


def _rescanning(text: str) -> str:
    """Quadratic on purpose: the whole text scanned again for each of its lines."""
    for _ in text.splitlines():
        containment._HTML_START.sub("&lt;", text)
    return text


def _pairing(text: str) -> str:
    """Quadratic on purpose, in Python: every line compared with every line."""
    lines = text.splitlines()
    return str(sum(1 for line in lines for other in lines if line == other))


@pytest.mark.parametrize("render", [_rescanning, _pairing])
def test_the_count_sees_quadratic_work_in_a_pattern_and_in_python(
    render: Callable[[str], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    every_line = _repeat("a" * 99 + "\n")
    assert _growth(render, every_line, monkeypatch) > SCALE**2 / 2
