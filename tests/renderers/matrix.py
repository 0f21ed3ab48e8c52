"""The renderer matrix: every markdown renderer the evidence block is shown in, on one call.

`render_all(documents)` renders each document with every renderer and returns
`{renderer name: [html, ...]}`, in order. The Python renderers run in this process; the
JavaScript ones run in one `node render.mjs` subprocess for the whole batch (thousands of
documents in one call, rendering while the Python ones do), after `ensure_node_modules()` has
run `npm ci` from the committed lockfile if `node_modules` is missing.

The renderers, and what each stands for:

========================  =====================================================================
``markdown-it-py``        markdown-it-py, CommonMark preset (raw HTML on): the repo's own view
``myst``                  MyST as myst-parser/Sphinx reads it: markdown-it-py CommonMark plus
                          mdit_py_plugins myst_blocks, myst_role, colon_fence, dollarmath,
                          amsmath, deflist, footnote, and tables
``cmark``                 cmark (the CommonMark reference, via cmark-gfm), raw HTML on
``cmark-gfm``             GitHub: cmark-gfm with autolink, tagfilter, table, strikethrough,
                          tasklist and footnotes, raw HTML on (GitHub then sanitizes)
``python-markdown``       Python-Markdown with no extensions (Django, most wikis)
``python-markdown-mkdocs`` Python-Markdown with MkDocs' defaults (toc, tables, fenced_code)
``nbconvert``             a notebook exported to HTML by nbconvert: its markdown
                          (``markdown2html_mistune``), then MathJax on the page as its
                          template configures it (``render.mjs --typeset``)
``markdown-it``           markdown-it (JS), CommonMark preset
``markdown-it-gfm``       markdown-it default preset, raw HTML and linkify on
``markdown-it-footnote``  ... plus markdown-it-footnote (inline ``^[..]`` footnotes included)
``markdown-it-texmath``   ... plus markdown-it-texmath, ``$``/``$$`` and ``\\(``/``\\[``
``mystmd``                MyST as mystmd / Jupyter Book 2: myst-parser (npm) + myst-to-html
``marked``                marked, ``gfm: true``
``jupyterlab``            a JupyterLab 4 markdown cell: math hidden from marked, marked with
                          its extensions, math restored, JupyterLab's sanitizer
``jupyterlab-trusted``    the same unsanitized: a trusted ``text/markdown`` output, such as a
                          ``RecallResult``'s own ``_repr_markdown_`` in a live notebook
``jupyterlab-mathjax``    a JupyterLab 4 markdown cell as the reader sees it: ``jupyterlab``,
                          then MathJax typesetting the page as JupyterLab configures it
``vscode-notebook``       VS Code's notebooks and preview: markdown-it with raw HTML and linkify,
                          plus @vscode/markdown-it-katex (``globalGroup``)
``showdown``              showdown, default options
``showdown-github``       showdown, GitHub flavor
``remark``                unified: remark-parse, remark-gfm, remark-math, remark-rehype and
                          rehype-stringify, raw HTML passed through
``micromark-gfm``         micromark with the GFM extensions, raw HTML on
========================  =====================================================================

Run the whole matrix on the hostile corpus with `python -m tests.renderers`.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
import threading
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path

import cmarkgfm  # type: ignore[import-untyped,import-not-found,unused-ignore]  # no stubs
import markdown  # type: ignore[import-untyped,import-not-found,unused-ignore]
from markdown_it import MarkdownIt
from mdit_py_plugins.amsmath import amsmath_plugin  # type: ignore[import-not-found,unused-ignore]
from mdit_py_plugins.colon_fence import colon_fence_plugin  # type: ignore[import-not-found,unused-ignore]
from mdit_py_plugins.deflist import deflist_plugin  # type: ignore[import-not-found,unused-ignore]
from mdit_py_plugins.dollarmath import dollarmath_plugin  # type: ignore[import-not-found,unused-ignore]
from mdit_py_plugins.footnote import footnote_plugin  # type: ignore[import-not-found,unused-ignore]
from mdit_py_plugins.myst_blocks import myst_block_plugin  # type: ignore[import-not-found,unused-ignore]
from mdit_py_plugins.myst_role import myst_role_plugin  # type: ignore[import-not-found,unused-ignore]

HERE = Path(__file__).resolve().parent
RENDER_SCRIPT = HERE / "render.mjs"
NODE_MODULES = HERE / "node_modules"
ERROR_PREFIX = "\0render-error: "
"""How a renderer that raised shows in the results (render.mjs writes the same)."""

JS_RENDERERS = (
    "markdown-it",
    "markdown-it-gfm",
    "markdown-it-footnote",
    "markdown-it-texmath",
    "mystmd",
    "marked",
    "jupyterlab",
    "jupyterlab-trusted",
    "jupyterlab-mathjax",
    "vscode-notebook",
    "showdown",
    "showdown-github",
    "remark",
    "micromark-gfm",
)

_CMARK_UNSAFE = cmarkgfm.cmark.Options.CMARK_OPT_UNSAFE
_CMARK_GITHUB = _CMARK_UNSAFE | cmarkgfm.cmark.Options.CMARK_OPT_FOOTNOTES
_GFM_EXTENSIONS = ["autolink", "tagfilter", "table", "strikethrough", "tasklist"]


def _markdown_it_py() -> Callable[[str], str]:
    return MarkdownIt("commonmark").render


def _myst() -> Callable[[str], str]:
    md = (
        MarkdownIt("commonmark")
        .enable("table")
        .use(myst_block_plugin)
        .use(myst_role_plugin)
        .use(colon_fence_plugin)
        .use(dollarmath_plugin)
        .use(amsmath_plugin)
        .use(deflist_plugin)
        .use(footnote_plugin)
    )
    return md.render


def _cmark() -> Callable[[str], str]:
    def render(text: str) -> str:
        html: str = cmarkgfm.markdown_to_html(text, options=_CMARK_UNSAFE)
        return html

    return render


def _cmark_gfm() -> Callable[[str], str]:
    def render(text: str) -> str:
        html: str = cmarkgfm.markdown_to_html_with_extensions(
            text, options=_CMARK_GITHUB, extensions=_GFM_EXTENSIONS
        )
        return html

    return render


def _python_markdown(*extensions: str) -> Callable[[str], str]:
    converter = markdown.Markdown(extensions=list(extensions))

    def render(text: str) -> str:
        html: str = converter.reset().convert(text)
        return html

    return render


def _nbconvert() -> Callable[[str], str]:
    from nbconvert.filters.markdown_mistune import (  # type: ignore[import-untyped,unused-ignore]
        markdown2html_mistune,
    )

    def render(text: str) -> str:
        html: str = markdown2html_mistune(text)
        return _ANCHOR_LINK.sub("", html)

    return render


_ANCHOR_LINK = re.compile(r'<a class="anchor-link" href="#[^"<>]*">&#182;</a>')
"""The pilcrow link nbconvert puts at the end of every heading: the page's own, holding none
of the block's text, so the matrix reads the headings without it."""


PY_RENDERERS: dict[str, Callable[[], Callable[[str], str]]] = {
    "markdown-it-py": _markdown_it_py,
    "myst": _myst,
    "cmark": _cmark,
    "cmark-gfm": _cmark_gfm,
    "python-markdown": _python_markdown,
    "python-markdown-mkdocs": lambda: _python_markdown("toc", "tables", "fenced_code"),
    "nbconvert": _nbconvert,
}

TYPESET = frozenset({"nbconvert"})
"""Python renderers whose page a browser then typesets with MathJax: their HTML goes through
`render.mjs --typeset`, MathJax configured as nbconvert's HTML template configures it."""

RENDERERS = (*PY_RENDERERS, *JS_RENDERERS)
"""Every renderer's name, Python ones first."""

JOINS_RESOURCE_LINE = frozenset(
    {"marked", "jupyterlab", "jupyterlab-trusted", "jupyterlab-mathjax"}
)
"""Renderers that may join an item's `Resource` line onto the text's last paragraph: marked
drops the blank line after a paragraph holding a line indented four or more columns past the
item's content (the golden block's own source excerpt has one), so no escaping can avoid it.
The line still ends the item, whole (`checks.check_html(joins_resource=True)`)."""


@cache
def _py_renderer(name: str) -> Callable[[str], str]:
    return PY_RENDERERS[name]()


def node_available() -> bool:
    """Whether `node` and `npm` are on the PATH."""
    return shutil.which("node") is not None and shutil.which("npm") is not None


def ensure_node_modules() -> None:
    """Install the JavaScript renderers from the lockfile unless they are installed already.

    Under a lock: `npm ci` empties `node_modules` first, so a second test worker starting it
    meanwhile would pull the renderers from under the first. The others wait, then find them.
    """
    with (HERE / ".npm-ci.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (NODE_MODULES / ".package-lock.json").exists():
            return
        subprocess.run(
            ["npm", "ci", "--prefix", str(HERE), "--no-audit", "--no-fund", "--loglevel=error"],
            check=True,
            stdout=subprocess.DEVNULL,
        )


def start_js(
    documents: Sequence[str], renderers: Sequence[str]
) -> Callable[[], dict[str, list[str]]]:
    """Start rendering in `node`; the returned call waits for the results."""
    if not renderers or not documents:
        return lambda: {name: [] for name in renderers}
    ensure_node_modules()
    process = subprocess.Popen(
        ["node", str(RENDER_SCRIPT), "--only", ",".join(renderers)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "NODE_NO_WARNINGS": "1"},
    )
    result: list[tuple[bytes, bytes]] = []
    # node reads all of stdin before it writes: feed it from a thread while Python renders.
    feeder = threading.Thread(
        target=lambda: result.append(process.communicate(json.dumps(list(documents)).encode()))
    )
    feeder.start()

    def wait() -> dict[str, list[str]]:
        feeder.join()
        stdout, stderr = result[0]
        if process.returncode:
            raise RuntimeError(f"render.mjs failed: {stderr.decode(errors='replace')}")
        rendered: dict[str, list[str]] = json.loads(stdout)
        return rendered

    return wait


def render_js(
    documents: Sequence[str], renderers: Sequence[str] = JS_RENDERERS
) -> dict[str, list[str]]:
    """Every document rendered by each JavaScript renderer, in one `node` process."""
    return start_js(documents, renderers)()


def render_py(
    documents: Sequence[str], renderers: Sequence[str] = tuple(PY_RENDERERS)
) -> dict[str, list[str]]:
    """Every document rendered by each Python renderer, in this process."""
    out: dict[str, list[str]] = {}
    for name in renderers:
        render = _py_renderer(name)
        out[name] = [_guarded(render, document) for document in documents]
        if name in TYPESET:
            out[name] = typeset_js(out[name])
    return out


def typeset_js(pages: Sequence[str]) -> list[str]:
    """Each HTML page as MathJax leaves it once it has typeset the page's math (`render.mjs
    --typeset`); a page a renderer failed on stays as it is."""
    ensure_node_modules()
    done = subprocess.run(
        ["node", str(RENDER_SCRIPT), "--typeset"],
        input=json.dumps([page for page in pages if not page.startswith(ERROR_PREFIX)]).encode(),
        capture_output=True,
        check=False,
        env={**os.environ, "NODE_NO_WARNINGS": "1"},
    )
    if done.returncode:
        raise RuntimeError(f"render.mjs --typeset failed: {done.stderr.decode(errors='replace')}")
    typeset: list[str] = json.loads(done.stdout)
    typeset.reverse()
    return [page if page.startswith(ERROR_PREFIX) else typeset.pop() for page in pages]


def _guarded(render: Callable[[str], str], document: str) -> str:
    try:
        return render(document)
    except Exception as error:  # a renderer that raises shows nothing: a failure of its own
        return f"{ERROR_PREFIX}{type(error).__name__}: {error}"


def render_all(
    documents: Sequence[str], renderers: Sequence[str] = RENDERERS
) -> dict[str, list[str]]:
    """`{renderer: [html, ...]}`: every document rendered by every renderer named."""
    unknown = sorted(set(renderers) - set(RENDERERS))
    if unknown:
        raise ValueError(f"unknown renderer(s): {unknown}")
    js = start_js(documents, [name for name in renderers if name in JS_RENDERERS])
    out = render_py(documents, [name for name in renderers if name in PY_RENDERERS])
    out |= js()
    return {name: out[name] for name in renderers}
