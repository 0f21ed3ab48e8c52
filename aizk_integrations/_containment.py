"""Keeping retrieved text inside its own bullet, whoever reads the block.

The rule: retrieved text is shown verbatim, except the least escaping needed so that, read raw
by a model or rendered by any CommonMark renderer and parsed as HTML5, it stays inside its own
bullet and changes nothing outside it. Markdown nested inside a bullet is fine (the seed's own
facts are nested list lines); what is neutralised is what reaches outside the item:

* any line break: a line at column 0 would pose as a heading or a bullet, so every line is
  indented four spaces (`_rendering.indent_lines`);
* raw HTML (`<tag`, `</tag`, `<!--`, `<!x`, `<?`) opens or closes elements around later items
  or swallows them (`<script>`, `<!--`, `<textarea>`, `</li></ul>`): its `<` is
  backslash-escaped, `\\<script>`;
* a link reference definition (`[label]: url`) is document-global, so `[label]` anywhere else
  would link to it: its opening `[` is backslash-escaped, `\\[label]: url`;
* a code fence left open (```` ``` ````, `~~~`) would swallow the item's own `Resource` line: a
  closing fence is added after the text;
* lists and block quotes nested deeper than `MAX_NESTING` inside one item: renderers cap how
  deep they parse (markdown-it at twenty levels, block list included) and drop what follows,
  later items and all; the list or quote marker that would go deeper is backslash-escaped, and
  the rest of that line reads as text.

A backslash escape renders as the character itself, so rendered text reads as the original;
read raw, the backslash is the only change. Autolinks (`<https://example.org>`) are left alone:
they cannot open or close elements. Inside code spans and code blocks an escape shows as a
backslash: telling code from prose exactly would take a full CommonMark parser on every item,
and a wrong guess would leave live HTML, so this errs on the side of the escape.

All of it takes time linear in the text, whatever the text: one retrieved document is a
request's worth of work, so no pattern here may backtrack over a run of characters it could
start matching again inside (`tests/core/test_linear_time.py` times every such family at two
sizes).

Scope names and descriptions are the caller's, not retrieved text; they are folded onto one
line, names shown in code spans and descriptions as inert text (`inert`).
"""

from __future__ import annotations

import re

MAX_NESTING = 6
"""How many lists and block quotes an evidence text may nest; deeper markers are escaped."""

TEXT_OFFSET = "  "
"""Where an evidence text's lines start within its bullet's content: the block indents them
four spaces, and the bullet's content starts two columns in (`- `). CommonMark reads a line's
indentation from there, so the text's own top level is already two columns deep."""


def might_reach_out(text: str, lines: list[str]) -> bool:
    """Whether a text (and `lines`, its `splitlines()`) holds anything that could reach outside
    its item.

    Most evidence does not, and is shown as it is without looking further: a few substring
    tests on the text, and the nesting count only for lines that start with indentation or a
    list or quote marker (prose starts with a letter).
    """
    # A one-character test first: it is a memchr, many times faster than looking for two or
    # three characters, and most text has none of these.
    if (
        ("<" in text and _HTML_LIKE(text))
        or ("]" in text and "]:" in text)
        or ("`" in text and "```" in text)
        or ("~" in text and "~~~" in text)
    ):
        return True
    for line in lines:  # a plain loop: a generator costs more than the test on prose lines
        if line and line[0] in _NESTING_STARTS and _within_nesting(line) is not line:
            return True
    return False


_HTML_LIKE = re.compile(r"<[A-Za-z/!?]").search
_NESTING_STARTS = frozenset(" \t>-*+0123456789")
"""The characters a line that nests a list or a block quote can start with."""


_HTML_START = re.compile(r"(?<!\\)(\\*)<(?=[A-Za-z/!?])")
"""A `<` that could open raw HTML (a tag, closing tag, comment, declaration or instruction),
with the backslashes before it: an odd number already escapes it. The match starts only where a
run of backslashes starts (the look-behind): started inside a long run that no `<` ends, it
would re-read the rest of the run from every backslash, time quadratic in the run."""

_AUTOLINK = re.compile(
    r"<[A-Za-z][A-Za-z0-9+.\-]{1,31}:[^\s<>]*>"
    r"|<[A-Za-z0-9.!#$%&'*+/=?^_`{|}~\-]+@[A-Za-z0-9](?:[A-Za-z0-9\-]{0,61}[A-Za-z0-9])?"
    r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9\-]{0,61}[A-Za-z0-9])?)*>"
)
"""CommonMark's URI and email autolinks: links, not HTML."""

_DEFINITION_START = re.compile(r"^([ \t]*(?:(?:>|[-*+]|\d{1,9}[.)])[ \t]*)*)\[")
"""A `[` that starts a line's content, after indentation and any block-quote or list markers:
the only place a link reference definition can begin."""

_CONTAINER_MARKER = re.compile(r"[ \t]*(>|[-*+](?=[ \t]|$)|\d{1,9}[.)](?=[ \t]|$))")
_FENCE = re.compile(r"( {0,3})(`{3,}|~{3,})(.*)")


def contain(lines: list[str]) -> list[str]:
    """The lines of one evidence text, escaped only where they would reach outside the item.

    For a text `might_reach_out` found something in.
    """
    definitions = any("]:" in line for line in lines)
    contained = []
    for line in lines:
        if "<" in line:
            line = _HTML_START.sub(_escape_html_start, line)
        if definitions and "[" in line:
            line = _DEFINITION_START.sub(r"\1\\[", line, count=1)
        contained.append(_within_nesting(line))
    fence = _open_fence(lines)
    if fence is not None:
        contained.append(fence)
    return contained


def _within_nesting(line: str) -> str:
    """The line, with the container marker that would nest past `MAX_NESTING` escaped.

    A line's depth is counted generously: one level per two columns of indentation (the least a
    nested list item takes) plus one per marker at its start, so no real nesting is missed.
    """
    indent = len(line) - len(line.lstrip(" \t"))
    depth = len(line[:indent].expandtabs(4)) // 2
    position = 0
    while marker := _CONTAINER_MARKER.match(line, position):
        depth += 1
        if depth > MAX_NESTING:
            return f"{line[: marker.start(1)]}\\{line[marker.start(1) :]}"
        position = marker.end()
    return line


def _escape_html_start(match: re.Match[str]) -> str:
    backslashes = match.group(1)
    if len(backslashes) % 2:  # already escaped
        return match.group(0)
    if _AUTOLINK.match(match.string, match.end(1)):
        return match.group(0)
    return backslashes + "\\<"


def _open_fence(lines: list[str]) -> str | None:
    """The closing fence for a code fence the text leaves open at its own top level, if any.

    Only such a fence runs on into the item's `Resource` line: one inside a block quote or a
    list item of the text ends where they do. Where the bullet puts the text (`TEXT_OFFSET`),
    those need no tracking: a block quote's lines start with `>`, a list item's content starts
    at least four columns in, too deep for a fence to open there, and a line that opens a fence
    is never a lazy continuation. So the text's top-level fences are its lines that open or
    close one, read in order.
    """
    fence: tuple[str, int] | None = None  # the open top-level fence: its character and length
    for raw in lines:
        # Where the line sits in the rendered bullet: a text line indented two spaces of its
        # own is already an indented code block there, not a fence.
        line = (TEXT_OFFSET + raw.expandtabs(4)).rstrip()
        if fence is not None:
            if _closes(line, fence):
                fence = None
        elif opening := _opening(line):
            fence = opening
    return None if fence is None else fence[0] * fence[1]


def _opening(line: str) -> tuple[str, int] | None:
    """The fence a line opens, if it opens one (a backtick fence's info string has no backtick)."""
    match = _FENCE.fullmatch(line)
    if match is None or (match.group(2)[0] == "`" and "`" in match.group(3)):
        return None
    return match.group(2)[0], len(match.group(2))


def _closes(line: str, fence: tuple[str, int]) -> bool:
    match = _FENCE.fullmatch(line)
    return (
        match is not None
        and match.group(2)[0] == fence[0]
        and len(match.group(2)) >= fence[1]
        and not match.group(3).strip()
    )


def inert(text: str) -> str:
    """A one-line text shown as the plain text it is: every character that could start inline
    markup (emphasis, code, links and images, raw HTML and autolinks, entities, strikethrough)
    is backslash-escaped, so rendered it reads exactly as written."""
    return _INLINE_MARKUP.sub(r"\\\g<0>", text)


_INLINE_MARKUP = re.compile(r"[\\`*_\[\]<&~!]")
