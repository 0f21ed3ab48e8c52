"""The block holds in every renderer it is shown in: the hostile corpus, through the core and
both adapters, rendered by each renderer of the matrix (`matrix.py`) and read back as a browser
would (`checks.py`).

The JavaScript renderers run in Node (20 or later), installed the first time by `npm ci` from
the committed lockfile; the README's test command needs nothing else. Without `node` and
`npm` on the PATH their tests are skipped, saying so; `AIZK_RENDERERS=0` skips the module.
`python -m tests.renderers` prints what breaks, where and how.
"""

from __future__ import annotations

import os
from functools import cache

import pytest

if os.environ.get("AIZK_RENDERERS") == "0":
    pytest.skip("AIZK_RENDERERS=0", allow_module_level=True)

from aizk_integrations import Scope
from tests.golden import (
    ARTIFACT,
    BOOK_CLUB_DESCRIPTION,
    BOOK_CLUB_NAME,
    CONTENT,
    GOLDEN,
    GOLDEN_WITHOUT_DIRECTORY,
    PLAN,
    PREFERENCE,
    SIDECAR,
)
from tests.renderers.cases import Case, adapter_cases, block_case, corpus_cases, probe_cases
from tests.renderers.escapes import FAMILIES, outcomes
from tests.renderers.matrix import JS_RENDERERS, RENDERERS, TYPESET, node_available
from tests.renderers.paths import path_cases
from tests.renderers.run import assert_blocks_hold, run_matrix, summary

NO_NODE = pytest.mark.skipif(not node_available(), reason="no node and npm on the PATH")
NEEDS_NODE = {*JS_RENDERERS, *TYPESET}
"""The renderers node runs: the JavaScript ones, and MathJax on nbconvert's page."""
AVAILABLE = [name for name in RENDERERS if name not in NEEDS_NODE or node_available()]

RECOMMENDED = {
    "raw HTML": "&lt;",
    "raw HTML after a bare URL": "&lt;",
    "link definition, then \\]": "&#91;",
    "$$ display math": "&#36;",
    "\\[ \\] display math": "\\\\[",
    "\\begin{..} math": "\\\\begin",
    "^[inline footnote]": "^\\[",
    "::: MyST colon fence": "&#58;",
    "javascript: link": "&#91; and &lt;",
    "bare URL in a description": "zero-width",
    "www. in a description": "zero-width",
    "$ math in a description": "\\&#36; but the last",
    "\\( \\begin math in a description": "\\\\ and a word joiner",
    "@citation in a description": "&#91; &#64;",
}
"""For each family, an escaping that holds in every renderer of the matrix (`escapes.py`): the
ones the package writes, or (for `javascript:` links and bare URLs) the kind it writes."""


@cache
def every_case() -> list[Case]:
    return [*corpus_cases(), *probe_cases(), *adapter_cases(), *path_cases()]


# Two runs of the matrix, each in one test worker: the renderers Python runs, and those node
# runs. Within a run, HTML two renderers agree on is read once.
@pytest.mark.parametrize(
    "renderers",
    [
        pytest.param([name for name in RENDERERS if name not in NEEDS_NODE], id="python"),
        pytest.param([name for name in RENDERERS if name in NEEDS_NODE], id="node", marks=NO_NODE),
    ],
)
def test_the_block_holds_in_every_renderer(renderers: list[str]) -> None:
    run = run_matrix(renderers, every_case())
    broken = {name: cases for name, cases in run.by_renderer().items() if cases}
    if broken:
        counts = ", ".join(f"{len(cases)} in {name}" for name, cases in broken.items())
        report = summary(run, renderers=list(broken)).split("\n", 2)[-1]
        pytest.fail(f"cases break: {counts}:\n{report[:8000]}", pytrace=False)


def test_the_matrix_reads_both_adapters_blocks_and_every_other_paths() -> None:
    families = {case.family for case in adapter_cases()}
    assert families == {"langchain", "llama_index"}
    assert {case.family for case in path_cases()} == {
        "context-chat-engine",
        "condense-chat-engine",
        "memory-block",
        "agent-middleware",
        "cited",
    }
    assert len(every_case()) > len(adapter_cases())


def test_the_golden_blocks_hold_in_every_renderer_and_a_broken_one_does_not() -> None:
    texts = [PLAN, PREFERENCE, SIDECAR]
    resources = [f"aizk://artifacts/{ARTIFACT}/contents/{CONTENT}", None, None]
    book_club = Scope(name=BOOK_CLUB_NAME, description=BOOK_CLUB_DESCRIPTION)
    golden = block_case(GOLDEN, texts, [book_club], resources)
    bare = block_case(GOLDEN_WITHOUT_DIRECTORY, texts, [], resources)
    assert_blocks_hold([golden, bare], AVAILABLE)
    broken = block_case(GOLDEN.replace("Sam prefers", "<script>Sam"), texts, [book_club], resources)
    with pytest.raises(AssertionError, match="failures"):
        assert_blocks_hold([broken], AVAILABLE)


def test_the_recommended_escapes_hold_in_every_renderer() -> None:
    assert set(RECOMMENDED) <= {family.name for family in FAMILIES}
    found = outcomes(AVAILABLE)
    failing = {
        (family, escaping): [
            name for name, outcome in found[family][escaping].items() if not outcome.holds
        ]
        for family, escaping in RECOMMENDED.items()
    }
    assert not {key: names for key, names in failing.items() if names}


@NO_NODE
def test_mathjax_as_notebooks_run_it_typesets_a_description_that_markdown_alone_left_inert() -> (
    None
):
    # The escaping the package wrote before: inert to every markdown renderer, not to MathJax.
    found = outcomes(["jupyterlab-mathjax", "nbconvert"])["$ math in a description"]
    for renderer in ("jupyterlab-mathjax", "nbconvert"):
        assert not found["&#36;"][renderer].holds
        assert found["\\&#36; but the last"][renderer].holds
        assert found["\\&#36; but the last"][renderer].reads  # MathJax shows `\$` as `$`
