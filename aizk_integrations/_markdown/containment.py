"""Keeping retrieved text inside its own bullet, whoever reads the block.

The rule: retrieved text is shown verbatim, except the least escaping needed so that, read raw
by a model or rendered by the renderers the block is shown in (CommonMark, GFM, markdown-it and
remark with math and footnotes, MyST, Python-Markdown, showdown, marked, Jupyter) and parsed as
HTML5, it stays inside its own bullet and changes nothing outside it. Markdown nested inside a
bullet is fine (the seed's own facts are nested list lines); what is neutralised is what
reaches outside the item, or runs script from inside it:

* any line break: a line at column 0 would pose as a heading or a bullet, so every line is
  indented four spaces (`_rendering.indent_lines`);
* raw HTML (`<tag`, `</tag`, `<!--`, `<!x`, `<?`) opens or closes elements around later items
  or swallows them (`<script>`, `<!--`, `<textarea>`, `</li></ul>`): its `<` becomes `&lt;`,
  and so does the `<` of an autolink to anything but `http:`/`https:` or an e-mail address
  (`<javascript:...>` runs script; Python-Markdown reads `<other:scheme>` as a tag);
* a link reference definition (`[label]: url`, a footnote's `[^1]: text` too) is
  document-global, so `[label]` anywhere else would link to it: its opening `[` becomes `&#91;`;
* a link or image whose destination is a `javascript:`, `vbscript:` or `data:` URL (however it
  is spelled: character references, escapes, case, spaces) runs script when clicked: the `(`
  that opens the destination becomes `&#40;`, so it is no link and shows as written;
* a code fence left open (```` ``` ````, `~~~`) would swallow the item's own `Resource` line: a
  closing fence is added after the text, and again after the escapes below if one of them
  made a line open a fence;
* blocks that math and MyST renderers open at the start of a line and run on to their closer,
  over the `Resource` line and later items: display math `$$` (its first `$` becomes `&#36;`),
  `\\[` and `\\begin{..}` (the backslash is doubled), a MyST colon fence `:::` (its first `:`
  becomes `&#58;`); and an inline footnote `^[..]`, whose text moves after the block (`^\\[`);
* JupyterLab hides math from markdown before rendering, and a pair of math delimiters (`$`,
  `\\begin{`, `\\end{`, `\\\\(`, `\\\\[`) around a code fence's line hides that line, leaving the
  fence open: where one run of non-blank lines holds a fence line and delimiters on both sides
  of it, those delimiters become character references (`&#36;`, `&#92;`);
* lists and block quotes nested deeper than `MAX_NESTING` inside one item: renderers cap how
  deep they parse (markdown-it at twenty levels, block list included) and drop what follows,
  later items and all; the list or quote marker that would go deeper is backslash-escaped, and
  the rest of that line reads as text;
* a text ending in a header-only table whose two-column delimiter row ends on two dashes
  (`a | b` over `--|--`): showdown's tables then take the `Resource` line as a row, so a closing
  `|` is added, which changes nothing in GFM.

Character references (`&lt;`, `&#91;`, `&#36;`) are what every one of those renderers honours:
Python-Markdown and showdown take no backslash before `<`, and `\\[` opens display math in
markdown-it-texmath. Rendered, a reference reads as its character; read raw, it is the only
change, and a model reads it as that character. A backslash stays where every renderer honours
it (a nesting marker, `^\\[`, a doubled backslash). Autolinks to `http:`/`https:` and e-mail
addresses are left alone: they open no element. Inside code spans and code blocks an escape
shows as written: telling code from prose exactly would take a full parser of every dialect on
every item, and a wrong guess would leave live HTML, so this errs on the side of the escape.

All of it takes time linear in the text, whatever the text: one retrieved document is a
request's worth of work, so no pattern here may backtrack over a run of characters it could
start matching again inside (`tests/core/test_linear_time.py` times every such family at two
sizes).

Scope names and descriptions are the caller's, not retrieved text; they are folded onto one
line, names shown in code spans and descriptions as inert text (`inert`), math included, for
the MathJax that JupyterLab and nbconvert run on the rendered page too.
"""

from __future__ import annotations

import re
from functools import partial
from html import unescape
from urllib.parse import unquote

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
        or ("]" in text and ("]:" in text or _LINK_DESTINATION.search(text) is not None))
        or ("`" in text and ("```" in text or _indented(lines)))
        or ("~" in text and "~~~" in text)
        or ("$" in text and "$$" in text)
        or ("\\" in text and _BACKSLASH_MATH(text))
        or ("^" in text and "^[" in text)
        or (":" in text and ":::" in text)
        or ("%" in text and _COMMENT_LIKE(text))
    ):
        return True
    for line in lines:  # a plain loop: a generator costs more than the test on prose lines
        if line and line[0] in _NESTING_STARTS and _within_nesting(line) is not line:
            return True
    if "\\" in text and any(line.endswith("\\") for line in lines):
        return True
    last = _last_line(lines)
    return (last is not None and _BARE_MARKERS.fullmatch(lines[last]) is not None) or (
        "|" in text and _header_only_table(lines) is not None
    )


_HTML_LIKE = re.compile(r"<[A-Za-z/!?]").search
_COMMENT_LIKE = re.compile(r"(?:^|[\n\r\v\f\x1c-\x1e\x85\u2028\u2029])[ \t>*+\-0-9.)]*%").search
"""A `%` that may start a line's content (generous: `contain` reads the markers exactly)."""
_BACKSLASH_MATH = re.compile(r"\\(?:\[|begin|end\{|\\[()\[\]])").search
_NESTING_STARTS = frozenset(" \t>-*+0123456789")
"""The characters a line that nests a list or a block quote can start with."""


_HTML_START = re.compile(r"<(?=[A-Za-z/!?])")
"""A `<` that could open raw HTML: a tag, closing tag, comment, declaration or instruction.
(A backslash before it is no escape in Python-Markdown and showdown, so it is replaced even
after one.)"""

_SAFE_AUTOLINK = re.compile(
    r"<[Hh][Tt][Tt][Pp][Ss]?://[^\s<>\"'`]*>"
    r"|<[A-Za-z0-9][A-Za-z0-9.!#$%&*+/=?^_{|}~\-]*@[A-Za-z0-9](?:[A-Za-z0-9\-]{0,61}[A-Za-z0-9])?"
    r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9\-]{0,61}[A-Za-z0-9])?)*>"
)
"""CommonMark's autolinks to a web page or an e-mail address that every renderer reads as a
link. Other schemes are links in CommonMark, but `javascript:` runs script and Python-Markdown
reads `<other:scheme>` as a tag; showdown passes an autolink with a quote or a backtick
through as raw HTML, where `<https://x/'/onclick=...>` is an element with a handler; and an
address starting `<!` or `<?` starts an HTML block at the start of a line. One that follows
anything but a space is not safe either: showdown's bare URLs run on into it, and the link it
writes for it lands inside the bare URL's `href`."""

_CONTENT_START = r"[ \t]*(?:(?:>|[-*+]|\d{1,9}[.)])[ \t]*)*"
"""Indentation and any block-quote or list markers: what comes before a line's content."""

_CONTENT_PREFIX = re.compile(_CONTENT_START)
_LINE_OPENER = re.compile(rf"({_CONTENT_START})(?:(\[)|(\$\$)|(\\\[|\\begin)|(:::)|(%))")
"""What opens, at the start of a line's content, a block that can run past the text: a link
reference definition's `[`, display math (`$$`, `\\[`, `\\begin{..}`), a MyST colon fence; and
a MyST comment `%`, which hides the rest of its line from people (as `<!--` would) and, bare,
stops mystmd rendering anything at all."""

_INLINE_FOOTNOTE = re.compile(r"\^\[")

_LINK_DESTINATION = re.compile(r"\][ \t]*(\()")
"""Where an inline link or image's destination opens: CommonMark wants `](`, showdown also
takes spaces between."""
_BARE_URL = re.compile(r"(?:(?:https?|ftp|dict)://|www\.)[^\s'\">]*", re.IGNORECASE)
"""A URL that GFM renderers link without markup, as far as showdown's reading of one goes."""

_SCRIPT_SCHEMES = ("javascript:", "vbscript:", "data:")
_DESTINATION_WINDOW = 256
"""How much of a destination is read to find its scheme: ample for `javascript:` spelled in
character references of seven digits each, and a bound that keeps the reading linear."""
_URL_NOISE = re.compile(r"[\x00-\x20<>\x7f]+")
"""What a browser drops from a URL before it reads the scheme (controls, spaces, tabs,
newlines), and the brackets of a pointy destination."""
_PUNCTUATION_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")

_CONTAINER_MARKER = re.compile(r"[ \t]*(>|[-*+](?=[ \t]|$)|\d{1,9}[.)](?=[ \t]|$))")
_FENCE = re.compile(r"( {0,3})(`{3,}|~{3,})(.*)")

_JUPYTER_DELIMITER = re.compile(r"(?<!\\)\$|\\(?=begin\{|end\{)|\\(?=\\[()\[\]])")
"""What JupyterLab's math hiding pairs up (an escaped `\\$` is no delimiter there)."""
_FENCE_LIKE = re.compile(r"```|~~~")
_SETEXT_UNDERLINE = re.compile(r" {0,3}(?:=+|-+)[ \t]*")
_ATX_HEADING = re.compile(rf"{_CONTENT_START}#{{1,6}}(?:[ \t]|$)")
_BARE_MARKERS = re.compile(rf"{_CONTENT_START}(?:>|[-*+]|\d{{1,9}}[.)])[ \t]+")
"""A line of nothing but block-quote and list markers, ending in spaces or tabs."""
_BACKTICK_RUN = re.compile(r"`+")

_HEADER_ONLY_DELIMITER = re.compile(
    r"[ \t]*\|?[ \t]*:?[ \t]*[-=]{2,}[ \t]*:?[ \t]*\|[ \t]*:?[ \t]*[-=]{2}"
)
"""The delimiter row showdown's tables run on from: two columns, ending on exactly two `-` or
`=` (its pattern then needs one more character before the blank line that ends a table)."""


def contain(lines: list[str]) -> list[str]:
    """The lines of one evidence text, escaped only where they would reach outside the item.

    For a text `might_reach_out` found something in.
    """
    definitions = any("]:" in line for line in lines)
    contained = []
    for number, line in enumerate(lines):
        if "<" in line:
            line = _HTML_START.sub(_escape_html_start, line)
        opener = _LINE_OPENER.match(line)
        if opener is not None:
            line = _escape_opener(opener, definitions) + line[opener.end() :]
        if "^[" in line:
            line = _INLINE_FOOTNOTE.sub(r"^\\[", line)
        if "]" in line and "(" in line:
            following = lines[number + 1] if number + 1 < len(lines) else ""
            line = _LINK_DESTINATION.sub(partial(_escape_script_link, following=following), line)
            line = _destinations_escaped(line)
            if "://" in line or "www." in line.lower():
                line = _BARE_URL.sub(_links_out_of_bare_url, line)
        contained.append(_within_nesting(line))
    fence = _open_fence(lines)
    if fence is not None:
        contained.append(fence)
    table = _header_only_table(contained)
    if table is not None:
        contained[table] += "|"
    if any("![" in line for line in contained):
        contained = _angles_out_of_images(contained)
    if any("`" in line for line in contained):
        contained = _no_backtick_left_for_the_resource_line(contained)
    if any(line.endswith("\\") for line in contained):
        contained = _block_ends_escaped(contained)
    reopened = _open_fence(contained)
    if reopened is not None:
        # An escape above can make a line open a fence it did not open before: `&#96;` is no
        # backtick to a fence's info string, so "``` `x" opens one once its lone "`" is escaped.
        contained.append(reopened)
    last = _last_line(contained)
    if last is not None and _BARE_MARKERS.fullmatch(contained[last]):
        # showdown takes the `Resource` line into an empty list item that ends in a space;
        # CommonMark reads `-` and `- ` alike.
        contained[last] = contained[last].rstrip(" \t")
    return _hide_no_fence_from_jupyter_math(contained)


def _escape_html_start(match: re.Match[str]) -> str:
    start = match.start()
    if _SAFE_AUTOLINK.match(match.string, start) and (
        not start or match.string[start - 1] in " \t"
    ):
        return "<"
    return "&lt;"


def _escape_opener(opener: re.Match[str], definitions: bool) -> str:
    before, bracket, dollars, backslash, colons, _ = opener.groups()
    if bracket is not None:
        # Only a text that has a `]:` somewhere can define anything (a label may span lines).
        return before + ("&#91;" if definitions else "[")
    if dollars is not None:
        return before + "&#36;$"
    if backslash is not None:
        return before + "\\" + backslash
    if colons is not None:
        return before + "&#58;" + colons[1:]
    return before + "&#37;"


def _escape_script_link(link: re.Match[str], *, following: str) -> str:
    """`](` before a script URL, with its `(` as a character reference: then it is no link.

    The destination is read as a browser would once a renderer has decoded it: character
    references and backslash escapes resolved, controls and spaces dropped, any case. It may
    start on the next line (CommonMark allows one line break before it).
    """
    rest = link.string[link.end() : link.end() + _DESTINATION_WINDOW]
    if not rest.strip():
        rest = following[:_DESTINATION_WINDOW]
    destination = _URL_NOISE.sub("", unquote(unescape(_PUNCTUATION_ESCAPE.sub(r"\1", rest))))
    if not destination.lower().startswith(_SCRIPT_SCHEMES):
        return link.group(0)
    return link.group(0)[: link.start(1) - link.start()] + "&#40;"


def _destinations_escaped(line: str) -> str:
    """The line, with each `"` and `[` of an inline link's destination as a reference.

    showdown writes a destination into `href="..."` as it is, so a `"` would end the attribute
    and start the text's own (`onmouseover=`); and it renders a link inside an image's
    destination into the `src` attribute, quotes and all. A reference decodes to the same URL
    everywhere else. A destination runs, as CommonMark reads it, from `(` to the `)` that
    balances it or to a space; the next one is looked for after it, so no character is read
    twice.
    """
    out = []
    written = position = 0
    while (link := _LINK_DESTINATION.search(line, position)) is not None:
        start = link.end()
        end = _destination_end(line, start)
        destination = line[start:end]
        if '"' in destination or "[" in destination:
            out += [line[written:start], destination.replace('"', "&quot;").replace("[", "&#91;")]
            written = end
        position = max(end, start)
    return "".join([*out, line[written:]])


def _links_out_of_bare_url(url: re.Match[str]) -> str:
    """A bare URL with a link inside it (`https://x/[a](b)`), with that link's `[` as `&#91;`.

    showdown's GitHub flavour links bare URLs after it has written the text's links, and a URL
    runs on into the `<a` it wrote, nesting one link in another as a broken element.
    """
    run = url.group()
    return run.replace("[", "&#91;") if "](" in run else run


def _destination_end(line: str, start: int) -> int:
    depth = 0
    index = start
    while index < len(line):
        char = line[index]
        if char in " \t":
            break
        if char == "\\":
            index += 1
        elif char == "(":
            depth += 1
        elif char == ")":
            if not depth:
                break
            depth -= 1
        index += 1
    return min(index, len(line))


def _angles_out_of_images(lines: list[str]) -> list[str]:
    """The lines, with each `>` of an inline image (alt text, destination, title) as `&gt;`.

    showdown escapes every `>` of its output that is not the end of a tag, and an image's alt
    text or URL with a `>` confuses it about which one that is: the `>` that ends `<img ...>`
    is escaped instead, and the rest of the paragraph (the text's own `onerror=...`) becomes
    the image's attributes. Its image is `![`, an alt text that runs to the first `]`, lines
    included, then `(`; so from each `![` whose first `]` is followed by `(`, to the end of
    that line, every `>` is replaced, except a block quote's markers starting a line.
    """
    text = "\n".join(lines)
    out = []
    written = position = 0
    while (start := text.find("![", position)) >= 0:
        alt_end = text.find("]", start + 2)
        if alt_end < 0:
            break
        opening = _LINK_DESTINATION.match(text, alt_end)
        if opening is None:
            position = alt_end + 1  # every `![` before this `]` ends its alt text here
            continue
        end = text.find("\n", opening.end())
        end = len(text) if end < 0 else end
        image_lines = text[start:end].split("\n")
        for number, line in enumerate(image_lines):
            markers = len(_line_markers(line)) if number else 0
            image_lines[number] = line[:markers] + line[markers:].replace(">", "&gt;")
        out += [text[written:start], "\n".join(image_lines)]
        written = position = end
    out.append(text[written:])
    return "".join(out).split("\n")


def _line_markers(line: str) -> str:
    """A line's indentation and block-quote or list markers, before its content."""
    prefix = _CONTENT_PREFIX.match(line)
    return "" if prefix is None else prefix.group()


def _no_backtick_left_for_the_resource_line(lines: list[str]) -> list[str]:
    """The lines, with a backtick the text's last paragraph leaves unpaired escaped, where
    marked would join that paragraph and the `Resource` line.

    marked drops the blank line after a paragraph with a line indented four or more columns
    into the item's content (two into the text: the seed's own source excerpt has one), so
    the `Resource` line continues the paragraph, and a lone backtick in the text would open a
    code span that the `Resource` line's first backtick closes, leaving its URI outside it.
    Backtick runs pair as CommonMark pairs them: each with the next run of the same length.
    The lone one becomes `&#96;`: a backslash would not do, since GFM's bare URLs take a
    backslash after them into the URL.
    """
    last = len(lines)
    while last and not lines[last - 1].strip(" \t"):
        last -= 1
    first = last
    while first and lines[first - 1].strip(" \t"):
        first -= 1
    paragraph = lines[first:last]
    if not any(_indentation(line) >= len(TEXT_OFFSET) for line in paragraph):
        return lines
    text = "\n".join(paragraph)
    runs = [run.span() for run in _BACKTICK_RUN.finditer(text)]
    later: dict[int, int] = {}  # a run's length -> the index of the next run of that length
    next_same: list[int | None] = [None] * len(runs)
    for index in reversed(range(len(runs))):
        length = runs[index][1] - runs[index][0]
        next_same[index] = later.get(length)
        later[length] = index
    unpaired = []
    index = 0
    while index < len(runs):
        start, end = runs[index]
        partner = None if start and text[start - 1] == "\\" else next_same[index]
        if partner is not None:
            index = partner + 1
            continue
        if end - start == 1 and not (start and text[start - 1] == "\\"):
            unpaired.append(start)
        index += 1
    for start in reversed(unpaired):
        text = f"{text[:start]}&#96;{text[start + 1 :]}"
    return [*lines[:first], *text.split("\n"), *lines[last:]]


def _indentation(line: str) -> int:
    return len(line[: len(line) - len(line.lstrip(" \t"))].expandtabs(4))


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


def _last_line(lines: list[str]) -> int | None:
    """The index of the text's last line that is not empty (the block drops those after it)."""
    last = len(lines) - 1
    while last >= 0 and not lines[last]:
        last -= 1
    return last if last >= 0 else None


def _indented(lines: list[str]) -> bool:
    """Whether a line starts two or more columns in: where marked joins the `Resource` line on
    (`_no_backtick_left_for_the_resource_line`)."""
    return any(line.startswith(("  ", "\t", " \t")) for line in lines)


def _header_only_table(lines: list[str]) -> int | None:
    """The index of the text's last line if it is a header-only table's delimiter row that
    showdown would run on from (its header, the line before, holds a `|`)."""
    last = _last_line(lines)
    if last is None or last < 1 or "|" not in lines[last - 1]:
        return None
    return last if _HEADER_ONLY_DELIMITER.fullmatch(lines[last]) else None


def _block_ends_escaped(lines: list[str]) -> list[str]:
    """The lines, with a backslash that ends a block (a heading, or the line before a blank
    line or the text's end) as `&#92;`.

    There showdown's GitHub flavour reads it as escaping the closing tag it writes next
    (`\\</h1>`), so the heading never closes and takes in the rest of the item, its
    `Resource` line too; and marked, joining the `Resource` line on (see
    `_no_backtick_left_for_the_resource_line`), makes it a line break. CommonMark shows such a
    backslash as itself, as it shows `&#92;`. A backslash that ends any other line is a line
    break, and stays.
    """
    for number, line in enumerate(lines):
        if not line.endswith("\\") or (len(line) - len(line.rstrip("\\"))) % 2 == 0:
            continue
        following = lines[number + 1] if number + 1 < len(lines) else ""
        if (
            not following.strip(" \t")
            or _SETEXT_UNDERLINE.fullmatch(following)
            or _ATX_HEADING.match(line)
        ):
            lines[number] = line[:-1] + "&#92;"
    return lines


def _hide_no_fence_from_jupyter_math(lines: list[str]) -> list[str]:
    """The lines, with the math delimiters JupyterLab could pair around a fence line replaced.

    JupyterLab takes math out of a cell's text before marked reads it (and puts it back
    after), pairing delimiters that no blank line separates; it spares fences only at column
    0, and the block puts none there. A pair around a fence's line would take that line with
    it, and the fence would run on over the `Resource` line. So within each run of non-blank
    lines that holds a fence-like line, the lines are cut at those lines into parts, each fence
    line a part of its own; delimiters all in one part cannot pair around a fence line, and are
    left as they are; otherwise every delimiter of the run becomes a character reference.
    """
    start = 0
    for end in range(len(lines) + 1):
        if end < len(lines) and lines[end].strip(" \t"):
            continue
        if _pairs_around_a_fence(lines[start:end]):
            for number in range(start, end):
                lines[number] = _JUPYTER_DELIMITER.sub(_jupyter_reference, lines[number])
        start = end + 1
    return lines


def _pairs_around_a_fence(run: list[str]) -> bool:
    parts_with_delimiters = 0
    part_has_delimiter = False
    fenced = False
    for line in run:
        fence_like = ("`" in line or "~" in line) and _FENCE_LIKE.search(line) is not None
        if fence_like:
            fenced = True
            parts_with_delimiters += part_has_delimiter
            part_has_delimiter = False
        found = ("$" in line or "\\" in line) and _JUPYTER_DELIMITER.search(line) is not None
        if fence_like:
            parts_with_delimiters += found
        else:
            part_has_delimiter = part_has_delimiter or found
    parts_with_delimiters += part_has_delimiter
    return fenced and parts_with_delimiters > 1


def _jupyter_reference(delimiter: re.Match[str]) -> str:
    return "&#36;" if delimiter.group() == "$" else "&#92;"


def inert(text: str) -> str:
    """A one-line text shown as the plain text it is, in every renderer the block is shown in.

    Every character that could start inline markup (emphasis, code, links and images, raw HTML,
    entities, strikethrough, math, mentions, citations, emoji shortcodes) is escaped: with a
    backslash where every renderer honours one, with a character reference where some do not
    (Python-Markdown and showdown take no backslash before `<`, `&` or `~`; `\\[` opens math in
    markdown-it-texmath). What GFM renderers link though none of its characters is markup
    (`https://`, `www.`, `name@host`) gets an invisible word joiner that breaks the pattern, and
    invisible spaces at the end, which marked trims and then misreads the line, become character
    references. So rendered it reads as written, and links nowhere.

    Math is found twice over in notebooks: before markdown (JupyterLab hides it from marked)
    and after it, on the rendered page, where MathJax (JupyterLab's, nbconvert's) reads the
    text as the reader sees it, character references decoded, pairing `$`, `\\(`, `\\[`,
    `\\begin{..}` and `\\ref{..}`, and reading `\\$` and `\\\\` as escapes. So a backslash
    gets a word joiner after it, which makes none of those; and each `$` that another `$`
    follows is shown as `\\$`, which MathJax shows as `$` (other renderers show the backslash):
    the last one then has nothing to pair with.
    """
    last_dollar = text.rfind("$")
    text = _INLINE_MARKUP.sub(partial(_inline_reference, last_dollar=last_dollar), text)
    text = _AUTOLINK_SHAPE.sub(lambda shape: shape.group()[:-1] + _JOINER + shape.group()[-1], text)
    shown = text.rstrip(_INVISIBLE_SPACES)
    return shown + "".join(f"&#{ord(char)};" for char in text[len(shown) :])


_INLINE_REFERENCES = {
    "\\": "\\\\\u2060",
    "`": "\\`",
    "*": "\\*",
    "_": "\\_",
    "[": "&#91;",
    "]": "&#93;",
    "<": "&lt;",
    "&": "&amp;",
    "~": "&#126;",
    "$": "&#36;",
    "@": "&#64;\u2060",
    # NUL, which HTML parsers drop, and the two characters Python-Markdown strips (they mark
    # its own placeholders): each would join the words around them. NUL's reference shows as
    # U+FFFD everywhere; STX's and ETX's as nothing where Python's own `html.unescape` decodes
    # them (nbconvert's mistune), so those two show as U+FFFD outright.
    "\x00": "&#0;",
    "\x02": "&#65533;",
    "\x03": "&#65533;",
    # The start of an emoji shortcode (`:lock:`), which showdown's GitHub flavour replaces.
    ":": "&#58;",
}
_INLINE_MARKUP = re.compile(r"[\\`*_\[\]<~$@\x00\x02\x03]|&(?=[#A-Za-z0-9])|:(?=[^\s:]+:)")
_JOINER = "\u2060"
"""WORD JOINER: invisible, no space and no line break, and not a letter to any autolinker."""
_AUTOLINK_SHAPE = re.compile(r"//|(?<![^\W_])[Ww][Ww][Ww]\.")
"""The start of what GFM renderers link without markup: a URL's `//` (after any scheme, or
none: markdown-it's linkify takes `//host`), `www.` at a word's start. (An e-mail address is
broken at its `@`, which `_INLINE_REFERENCES` already replaces.)"""
_INVISIBLE_SPACES = (
    "\u00a0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + "\u202f\u205f\u3000\ufeff"
)
"""The spaces JavaScript's `\\s` knows besides ASCII's: marked trims them from the end of a
line, and reads what is left of it differently."""


def _inline_reference(markup: re.Match[str], *, last_dollar: int) -> str:
    if markup.group() == "$" and markup.start() < last_dollar:
        return "\\\\&#36;"  # MathJax's escape: a dollar that pairs with no later one
    return _INLINE_REFERENCES[markup.group()[0]]
