"""Containment takes time linear in the text, for every shape of hostile input.

One retrieved document is a request's worth of work: a text that makes a pattern backtrack would
be a denial of service per request (and a whole-block budget prices even the items it then
cuts). Absolute times depend on the machine, so each family is timed at two sizes, `SMALL` and
`SCALE` times that, and the law is on the ratio: linear work grows about `SCALE`-fold,
quadratic work `SCALE ** 2`-fold, and the bound sits well between the two.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable

import pytest

from aizk_integrations import Candidate, RecallResult, Scope, ScopeDirectory

SMALL = 5_000
SCALE = 8
BOUND = 4 * SCALE
"""Linear growth is `SCALE` (8); quadratic is 64. Four times linear leaves room for noise (and
for the jump where a large text stops fitting in a cache), and still fails n^1.67 or worse."""


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
    # nesting markers
    "nested list markers": _run_then("- ", "[x]: y"),
    "nested quote markers": _run_then("> ", "<b>"),
    "nested ordered markers": _run_then("1. ", "```"),
    "long list numbers": _run_then("1", ". x"),
    "indentation then a definition": _run_then(" ", "x [y]: z"),
    "tabs then [": _run_then("\t", "["),
    "marker lines": _repeat("- - - - - - - - x\n"),
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


def _seconds(render: Callable[[str], str], text: str) -> float:
    gc.disable()
    try:
        started = time.perf_counter()
        render(text)
        return time.perf_counter() - started
    finally:
        gc.enable()


def _growth(render: Callable[[str], str], make: Callable[[int], str]) -> float:
    """How many times longer `SCALE` times the text takes, each size timed at its fastest (the
    run least disturbed by the rest of the machine).

    The large size is timed again only while it looks slow and each run is quick: a run of a
    second or more is no scheduling hiccup, so a failing family costs one slow run, not five.
    """
    small, large = make(SMALL), make(SMALL * SCALE)
    assert len(large) >= (SCALE - 1) * len(small), "the family does not grow with n"
    render(small)  # warm: caches and first-call costs are not the family's
    base = min(_seconds(render, small) for _ in range(5))
    growth = float("inf")
    for _ in range(5):
        seconds = _seconds(render, large)
        growth = min(growth, seconds / base)
        if growth < BOUND or seconds > 1.0:
            break
    return growth


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
    render: Callable[[str], str], make: Callable[[int], str]
) -> None:
    growth = _growth(render, make)
    assert growth < BOUND, f"{SCALE}x the text took {growth:.1f}x the time"
