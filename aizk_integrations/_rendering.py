"""Rendering the evidence block from the packaged Jinja template, and the filters that keep it safe.

The template (`templates/recall.md.j2`) is the block's one layout, written as pieces. This
module makes each value safe, fills the pieces and hands them out one by one too, so that a
whole-block budget can price a block piece by piece before it exists.

Autoescape is off because the output is markdown for a language model, not HTML for a browser:
HTML-escaping would corrupt quotes and angle brackets in evidence without protecting anything.
What keeps the block safe is structure and the least escaping that structure needs. The rule:
retrieved text is shown verbatim, except the least escaping needed so that, read raw by a model
or rendered by any CommonMark renderer and parsed as HTML5, it stays inside its own bullet and
changes nothing outside it (`_containment` lists every transformation). Besides that:

* every line of an evidence text is indented four spaces after all of Python's line breaks
  (`str.splitlines`: `\\r\\n`, `\\r`, `\\v`, `\\f`, `\\x1c`-`\\x1e`, `\\x85`, U+2028, U+2029) are
  normalised, so no evidence line can start at column 0 and pose as a heading, a boundary line
  or a new bullet;
* scope names are folded onto one line and wrapped in a code span whose backtick fence is longer
  than any backtick run inside, so a hostile name cannot close the span or start a new line (and
  names that could forge a label are refused when the directory is built, see `_scopes`);
* scope descriptions are folded onto one line and shown as inert text;
* resource URIs are built only from canonical UUID text (see `_rows.resource_uri`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import cache, lru_cache
from typing import TYPE_CHECKING, Any

from jinja2 import Environment, PackageLoader, StrictUndefined

from aizk_integrations._containment import contain, inert, might_reach_out
from aizk_integrations._lanes import Provenance
from aizk_integrations._scopes import INTERSECTION, PRIVATE, Scope, scope_order

if TYPE_CHECKING:
    from aizk_integrations._result import Evidence
    from aizk_integrations._rows import Row

INDENT = "    "
_NEWLINE_INDENT = "\n" + INDENT
_BACKTICK_RUN = re.compile(r"`+")


def indent_lines(text: str) -> str:
    """An evidence text as its item shows it: contained, and every line indented four spaces.

    Any line break Python knows ends a line. Blank lines stay empty rather than carrying
    trailing spaces, and blank lines at the end are dropped, so the block never ends on a
    newline. Every kept item of every call passes through here, so the usual case (nothing to
    contain, no blank line) is a single join.
    """
    lines = text.splitlines()
    if might_reach_out(text, lines):
        lines = contain(lines)
    if "" in lines:
        while lines and not lines[-1]:
            lines.pop()
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


def label_of(scopes: Sequence[Scope]) -> str:
    """An item's scope names joined with ∩ in one code span: readable only by their intersection.

    No scopes, no label: without a reader nothing is labelled.
    """
    return code_span(INTERSECTION.join([scope.name for scope in scopes])) if scopes else ""


_environment = Environment(
    loader=PackageLoader("aizk_integrations", "templates"),
    autoescape=False,
    trim_blocks=True,
    lstrip_blocks=True,
    undefined=StrictUndefined,
    keep_trailing_newline=False,
)
_macros: Any = _environment.get_template("recall.md.j2").module
"""The template's macros: `scopes_header`, `scope_line`, `boundary`, `item` and `block`."""


_HOLE = "\x00"


def _as_format(rendered: str, holes: int) -> str:
    """A macro's output with its placeholders turned into `%s`, the present values in order."""
    parts = rendered.replace("%", "%%").split(_HOLE)
    if len(parts) != holes + 1:  # a macro that repeats or drops a value it was given
        raise RuntimeError(f"the template placed {len(parts) - 1} values, expected {holes}")
    return "%s".join(parts)


# Every piece is the template's macro, rendered once per shape (which optional values it has)
# with a placeholder for each value and kept as a `%` format: the values that are present go
# in, in the order the macro declares them. A Jinja macro call costs a few microseconds, which
# every kept item of every call would pay; filling a format costs a tenth of that.
# `tests/core/test_layout.py` pins the pieces to what the macros render for every input.


@cache
def _item_format(provenance: Provenance, labelled: bool, has_body: bool, linked: bool) -> str:
    label, body, uri = (_HOLE if present else "" for present in (labelled, has_body, linked))
    return _as_format(
        _macros.item(provenance.value, label, body, uri or None), labelled + has_body + linked
    )


@cache
def _scope_line_format(described: bool) -> str:
    return _as_format(_macros.scope_line(_HOLE, _HOLE if described else ""), 1 + described)


@cache
def _block_format(headed: bool) -> str:
    return _as_format(_macros.block(_HOLE if headed else "", _HOLE), 1 + headed)


SCOPES_HEADER: str = _macros.scopes_header("")
"""The `## Scopes` header with no scope lines in it: what a header costs before its lines."""

BOUNDARY: str = _macros.boundary()
"""The boundary line and the `## Evidence` heading: what every non-empty block starts with."""


def item_piece(item: Row | Evidence, scope_label: str) -> str:
    """One evidence item as the block shows it, starting with the blank line before it.

    `scope_label` is `label_of(item.scopes)`, which the items of one recall share.
    """
    body = indent_lines(item.text)
    uri = item.resource_uri
    piece = _item_format(item.provenance, bool(scope_label), bool(body), bool(uri))
    return piece % tuple(filter(None, (scope_label, body, uri)))  # the present ones, in order


def scope_line_piece(scope: Scope) -> str:
    """One line of the `## Scopes` header, with its newline."""
    description = inert(one_line(scope.description))
    return _scope_line_format(bool(description)) % tuple(
        filter(None, (code_span(scope.name), description))
    )


def render(items: Sequence[Row | Evidence], shared: Sequence[Scope]) -> str:
    """The markdown block for these kept items, or `""` when there are none.

    `shared` is `shared_scopes(items)`, which the caller usually needs as well. An empty block
    would only put an empty scaffold into the prompt.
    """
    if not items:
        return ""
    scope_lines = "".join([scope_line_piece(scope) for scope in shared])
    labels: dict[int, str] = {}  # the items of one recall share a few scope tuples
    pieces = []
    for item in items:
        label = labels.get(id(item.scopes))
        if label is None:
            label = labels[id(item.scopes)] = label_of(item.scopes)
        pieces.append(item_piece(item, label))
    return _block_format(bool(scope_lines)) % tuple(filter(None, (scope_lines, "".join(pieces))))


def shared_scopes(items: Iterable[Row | Evidence]) -> tuple[Scope, ...]:
    """The scopes the items came from, minus the reader's private one, one per name, by name.

    Private is dropped because the reader already knows their own memory; the header is there
    to say which organizations' memory is in the prompt. Where two scopes share a name the one
    on the latest item wins.
    """
    by_name: dict[str, Scope] = {}
    seen: set[int] = set()  # the items of one recall share a few scope tuples: look at each once
    for item in reversed(list(items)):
        if id(item.scopes) in seen:
            continue
        seen.add(id(item.scopes))
        for scope in reversed(item.scopes):
            if scope.name != PRIVATE:
                by_name.setdefault(scope.name, scope)
    return tuple(sorted(by_name.values(), key=scope_order))
