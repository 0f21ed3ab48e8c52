"""Rendering the evidence block from the packaged Jinja template, and the filters that keep it safe.

The template (`templates/recall.md.j2`) is the block's one layout. Autoescape is off because the
output is markdown for a language model, not HTML for a browser: HTML-escaping would corrupt
quotes and angle brackets in evidence without protecting anything. What keeps the block safe is
structure and the least escaping that structure needs. The rule: retrieved text is shown
verbatim, except the least escaping needed so that, read raw by a model or rendered by the
renderers the block is shown in (CommonMark, GFM, markdown-it and remark with math and
footnotes, MyST, Python-Markdown, showdown, marked, Jupyter) and parsed as HTML5, it stays
inside its own bullet and changes nothing outside it (`_markdown.containment` lists every
transformation). Besides that:

* every line of an evidence text is indented four spaces after all of Python's line breaks
  (`str.splitlines`: `\\r\\n`, `\\r`, `\\v`, `\\f`, `\\x1c`-`\\x1e`, `\\x85`, U+2028, U+2029) are
  normalised, so no evidence line can start at column 0 and pose as a heading, a boundary line
  or a new bullet;
* scope names are folded onto one line and wrapped in a code span whose backtick fence is longer
  than any backtick run inside, so a hostile name cannot close the span or start a new line (and
  names that could forge a label are refused when a scope is made, see `_scopes.directory`);
* scope descriptions are folded onto one line and shown as inert text, links and all
  (`_markdown.containment.inert`);
* resource URIs are built only from canonical UUID text (see `_uuids.resource_uri`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache

from jinja2 import Environment, PackageLoader, StrictUndefined

from aizk_integrations._core.evidence import Evidence
from aizk_integrations._core.lanes import Provenance
from aizk_integrations._markdown.containment import contain, inert, might_reach_out
from aizk_integrations._scopes.directory import Scope, scope_order
from aizk_integrations._scopes.names import INTERSECTION, PRIVATE

INDENT = "    "
_BACKTICK_RUN = re.compile(r"`+")


def indent_lines(text: str) -> str:
    """An evidence text as its item shows it: contained, and every line indented four spaces.

    Any line break Python knows ends a line. Blank lines stay empty rather than carrying
    trailing spaces, and blank lines at the end are dropped, so the block never ends on a
    newline.
    """
    lines = text.splitlines()
    if might_reach_out(text, lines):
        lines = contain(lines)
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join([INDENT + line if line else "" for line in lines])


def one_line(text: str) -> str:
    """Fold every line break into a space, so the text cannot leave the line it is on."""
    return " ".join(text.splitlines())


@lru_cache(maxsize=1024)  # a reader's few scope names label every item of every call
def code_span(text: str) -> str:
    """An inline code span holding `text` verbatim on one line, whatever it contains."""
    text = one_line(text)
    longest = max((len(run) for run in _BACKTICK_RUN.findall(text)), default=0)
    fence = "`" * (longest + 1)
    if text.startswith("`") or text.endswith("`"):
        text = f" {text} "
    return f"{fence}{text}{fence}"


def label_of(scopes: Sequence[Scope]) -> str:
    """An item's scope names joined with ∩ in one code span: readable only by their intersection."""
    return code_span(INTERSECTION.join([scope.name for scope in scopes]))


def shared_scopes(items: Iterable[Evidence]) -> tuple[Scope, ...]:
    """The scopes the items came from, minus the reader's private one, one per name, by name.

    Private is dropped because the reader already knows their own memory; the header is there
    to say which organizations' memory is in the prompt.
    """
    # Where two scopes share a name, the later item's wins, as in `take_in`.
    header = {scope.name: scope for item in items for scope in item.scopes}
    header.pop(PRIVATE, None)
    return header_order(header)


def organizations(item: Evidence) -> list[Scope]:
    """The scopes an item adds to the header: all but the reader's private one."""
    return [scope for scope in item.scopes if scope.name != PRIVATE]


def take_in(header: dict[str, Scope], item: Evidence) -> bool:
    """Add an item's organizations' scopes to a header, by name; whether the header changed.

    Where two scopes share a name, the one on the later item wins.
    """
    changed = False
    for scope in organizations(item):
        listed = header.get(scope.name)
        if listed is not scope and listed != scope:
            header[scope.name] = scope
            changed = True
    return changed


def header_order(header: dict[str, Scope]) -> tuple[Scope, ...]:
    """A header's scopes in the order it lists them."""
    return tuple(sorted(header.values(), key=scope_order))


_environment = Environment(
    loader=PackageLoader("aizk_integrations", "templates"),
    autoescape=False,
    trim_blocks=True,
    lstrip_blocks=True,
    undefined=StrictUndefined,
    keep_trailing_newline=False,
)
# The template shows only what it is handed: none of Jinja's default globals (`range`,
# `lipsum`, `cycler`, ...) belong in a block of evidence.
_environment.globals.clear()


@lru_cache(maxsize=1024)  # a reader's few scope descriptions head every block of every call
def inert_line(text: str) -> str:
    """A scope description as the header shows it: on one line, as inert text."""
    return inert(one_line(text))


_environment.filters.update(code_span=code_span, inert=inert_line)
_template = _environment.get_template("recall.md.j2")


Shown = tuple[int, Provenance, str, str, list[str] | None, str | None]
"""What the template shows of an item (see `shown`)."""


def shown(number: int, evidence: Evidence) -> Shown:
    """What the template shows of an item, each value made safe: its number (its place in the
    block, which a cited item shows), its provenance, its scopes' label, its text indented, its
    citation (each key and value in one code span), its resource URI."""
    label = label_of(evidence.scopes) if evidence.scopes else ""
    citation = None
    if evidence.citation is not None:
        citation = [code_span(f"{key}: {value}") for key, value in evidence.citation.items()]
    text = indent_lines(evidence.text)
    return number, evidence.provenance, label, text, citation, evidence.resource_uri


def piece(
    name: str, evidence: Sequence[Evidence] = (), scopes: Sequence[Scope] = (), *, after: int = 0
) -> str:
    """One of the block's pieces (`scopes_header`, `boundary` or `items`) rendered on its own,
    for a whole-block budget to price a block before it exists; `after` is how many items come
    before these ones, which numbers them when they are cited."""
    context = _template.new_context(_variables(evidence, scopes, after))
    return "".join(_template.blocks[name](context))


def render(evidence: Sequence[Evidence]) -> str:
    """The markdown block for these kept items, or `""` when there are none.

    An empty block would only put an empty scaffold into the prompt.
    """
    return _template.render(_variables(evidence, shared_scopes(evidence), 0))


def _variables(
    evidence: Sequence[Evidence], scopes: Sequence[Scope], after: int
) -> dict[str, object]:
    """What the template reads: the items as shown, numbered after `after`, and the header."""
    shown_items = [shown(after + number, each) for number, each in enumerate(evidence, start=1)]
    return {"evidence": shown_items, "shared_scopes": scopes}


BOUNDARY_LINE = piece("boundary").splitlines()[0]
"""The line every block starts its evidence with: how a block is told from other text."""

STALE_EVIDENCE_NOTE = (
    "[Evidence recalled for an earlier turn is not sent again; recall again for this turn.]"
)
"""What an agent's earlier block is replaced by in what its model is sent, in either framework:
evidence is never older than the turn it answers."""
