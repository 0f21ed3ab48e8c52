"""Rendering the recall block from the packaged Jinja template.

Autoescape is off because the output is markdown for a language model, not HTML for a browser:
HTML-escaping would corrupt quotes and angle brackets in evidence without protecting anything.
What keeps the block safe is structure, enforced by the filters here rather than by escaping:

* every line of an evidence text is indented four spaces after all of Python's line breaks
  (`str.splitlines`: `\\r\\n`, `\\r`, `\\v`, `\\f`, `\\x1c`-`\\x1e`, `\\x85`, U+2028, U+2029) are
  normalised, so no evidence line can start at column 0 and pose as a heading, a boundary line
  or a new bullet; it stays inside its own bullet whatever markdown it contains;
* scope names are folded onto one line and wrapped in a code span whose backtick fence is longer
  than any backtick run inside, so a hostile name cannot close the span or start a new line;
* scope descriptions are folded onto one line, so they stay on their bullet;
* resource URIs are built only from validated UUIDs (see `Candidate.resource_uri`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

from jinja2 import Environment, PackageLoader, StrictUndefined

if TYPE_CHECKING:
    from aizk_integrations.result import KeptEvidence
    from aizk_integrations.scopes import Scope

INDENT = "    "
_NEWLINE_INDENT = "\n" + INDENT
_BACKTICK_RUN = re.compile(r"`+")


def indent_lines(text: str) -> str:
    """Indent every line of `text` four spaces, whatever line break it used.

    Blank lines stay empty rather than carrying trailing spaces. Every kept item of every call
    passes through here, so the usual case (no blank line) is a single join.
    """
    lines = text.splitlines()
    if "" in lines:
        return "\n".join(INDENT + line if line else "" for line in lines)
    return INDENT + _NEWLINE_INDENT.join(lines) if lines else ""


def one_line(text: str) -> str:
    """Fold every line break into a space, so the text cannot leave the line it is on."""
    return " ".join(text.splitlines())


@lru_cache(maxsize=1024)
def code_span(text: str) -> str:
    """An inline code span holding `text` verbatim on one line, whatever it contains.

    Cached because a reader has a handful of scopes: the same few spans recur on every item of
    every call, and the backtick scan need not.
    """
    text = one_line(text)
    longest = max((len(run) for run in _BACKTICK_RUN.findall(text)), default=0)
    fence = "`" * (longest + 1)
    if text.startswith("`") or text.endswith("`") or (text[:1] == " " and text[-1:] == " "):
        text = f" {text} "
    return f"{fence}{text}{fence}"


def intersection(scopes: Iterable[Scope]) -> str:
    """An item's scope names joined with ∩: it is readable only by their intersection."""
    return " ∩ ".join([scope.name for scope in scopes])


_environment = Environment(
    loader=PackageLoader("aizk_integrations", "templates"),
    autoescape=False,
    trim_blocks=True,
    lstrip_blocks=True,
    undefined=StrictUndefined,
    keep_trailing_newline=False,
)
_environment.filters["indent_lines"] = indent_lines
_environment.filters["one_line"] = one_line
_environment.filters["code_span"] = code_span
_template = _environment.get_template("recall.md.j2")


def render_rows(rows: Sequence[KeptEvidence], shared_scopes: Sequence[Scope]) -> str:
    """The markdown block for a result's rows; nothing at all when there are none.

    Each item reaches the template as a plain row (label, scope names, text, resource URI)
    that the loop unpacks: Jinja looks attributes up through the environment, and doing that
    four or five times per item cost more than everything else the block needs.
    """
    if not rows:
        return ""
    # Items of one recall share a few scope tuples (see `kept_evidence`): join each once.
    joined: dict[int, str] = {}
    items = []
    for provenance, text, scopes, uri in rows:
        names = joined.get(id(scopes))
        if names is None:
            names = joined[id(scopes)] = intersection(scopes)
        items.append((provenance.label, names, text, uri))
    # `Template.render`, minus copying Jinja's globals (range, lipsum, ...) into a fresh context:
    # the template uses none, and the copy was the largest fixed cost of a render.
    context = _template.new_context({"evidence": items, "shared_scopes": shared_scopes}, True)
    try:
        block = _environment.concat(_template.root_render_func(context))
    except Exception:
        _environment.handle_exception()
    return block.removesuffix("\n")
