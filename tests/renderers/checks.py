"""Reading one renderer's HTML of an evidence block back, as a browser would.

`check_html(html, block, texts, shared_scopes, resources=...)` holds the HTML any
renderer made of `block` to what `tests/block_checks.py` holds markdown-it's HTML to, using its
html5lib reading and its helpers:

* the children of `<body>` are exactly the block's frame (`<h2>Scopes</h2>`, the scopes `<ul>`,
  the notice, `<h2>Evidence</h2>`, the evidence `<ul>`), nothing moved into `<head>`, no stray
  text; the headings and the notice intact; one scope `<li>` per scope holding one `<code>` and
  plain text showing every word of the name and description; one evidence `<li>` per text,
  opening with its label and ending with its `Resource` paragraph;
* every word of item k that markdown-it shows when it renders the item's lines alone (the
  reference of `block_checks`, cached there) and that this renderer shows **anywhere** in the
  document is shown inside `<li>` k: a word the renderer hides everywhere (a MyST `%` comment)
  is its own way of showing the item, a word it shows elsewhere was carried out of the item
  (unless another text holds that word too: renderers also hide words inside an item, in an
  attribute or a citation they drop, and a common word then shows in the other items).
  (Rendering each item alone in every renderer instead would double the matrix's time.)
* with `joins_resource`, for marked and the JupyterLab renderers built on it
  (`matrix.JOINS_RESOURCE_LINE`), an item may end in a paragraph whose last line is its whole
  `Resource` line rather than in a paragraph of its own: marked drops the blank line after a
  paragraph that holds a line indented four or more columns past the item's content, which
  the seed's own golden block has (a continuation line indented two spaces).

and adds what only other renderers break:

* **links**: no `href`/`action` (or frame `src`) anywhere holds a `javascript:`, `vbscript:`
  or `data:text/html` URL (`javascript-url`; in an image's `src`, `javascript-src`); no link
  or image outside the evidence `<li>`s (`link-outside-item`: a linkified scope description, a
  footnote section); inside `<li>` k,
  no link to a URL whose words are not all in text k (`foreign-link`: a definition elsewhere
  relinked its words; the words, not the URL, because renderers add `http://` and `mailto:`,
  percent-encode and decode entities, each as part of the text, because they cut URLs too),
  except to the GitHub page of an `@name` text k holds (showdown's GitHub flavour);
* **raw HTML**: no element markdown does not make (`<script>`, `<b>`, `<iframe>`, ...) and no
  event-handler attribute inside an item (`raw-html`): every `<` that could open HTML was
  escaped, so any such element is an escape the renderer did not honour.

Findings are `(kind, detail)`; kinds are stable short names, so a run can be summarised by kind.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from html import unescape
from typing import Literal
from urllib.parse import unquote
from xml.etree.ElementTree import Element

from tests.block_checks import (
    _MD_NEWLINE,
    NOTICE,
    Failure,
    ScopeLike,
    _blank,
    _first_paragraph,
    _Item,
    _items,
    _label_intact,
    _list_items,
    _parse_html,
    _scope_html,
    _tag,
    _text,
    _visible_words,
    _words,
)
from tests.renderers.matrix import ERROR_PREFIX

MARKDOWN_TAGS = frozenset(
    [
        "p",
        "em",
        "strong",
        "code",
        "a",
        "img",
        "ul",
        "ol",
        "li",
        "blockquote",
        "pre",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "hr",
        "br",
        "del",
        "s",
        "strike",
        "sup",
        "sub",
        "table",
        "thead",
        "tbody",
        "tr",
        "th",
        "td",
        "input",
        "section",
        "div",
        "span",
        "dl",
        "dt",
        "dd",
        "eq",
        "eqn",
        "math",
        "details",
        "summary",
        "aside",
        "label",
    ]
)
"""Elements some renderer of the matrix makes from markdown alone (its own markup, footnotes,
task lists, math and MyST's admonitions); any other element inside an item is raw HTML."""

_URL_ATTRIBUTES = ("href", "src", "action", "formaction", "data", "poster", "xlink:href", "cite")
_DANGEROUS_URL = re.compile(r"(?:javascript|vbscript|data:text/html)", re.IGNORECASE)
_URL_PREFIXES = frozenset({"http", "https", "mailto", "www"})


def _plain(text: str) -> str:
    return unquote(unescape(text))


def _made_by(text: str, url: str) -> bool:
    """Whether `text` could have made a link to `url` on its own: each word of the URL is in
    it (a renderer may cut a URL mid-word, so as a part of the text), or it is the GitHub page
    of an `@name` the text holds (showdown's GitHub flavour links mentions there)."""
    plain = _plain(text)
    url = _PLACEHOLDER.sub(" ", _GENERATED_TAG.sub(" ", url))
    mention = _MENTION_URL.fullmatch(url)
    if mention is not None and f"@{mention.group(1)}".casefold() in plain.casefold():
        return True
    return all(word in plain for word in _url_words(url))


_MENTION_URL = re.compile(r"https://github\.com/([\w.-]+)")
_PLACEHOLDER = re.compile(r"\x02[^\x03]*\x03")
"""What Python-Markdown leaves in a URL for a backslash escape inside it: its own words."""
_GENERATED_TAG = re.compile(r"</?(?:code|em|strong|del)>")
"""Markup showdown writes into a URL it autolinks past a code span or emphasis: the
renderer's words, not the text's."""


def _url_words(url: str) -> set[str]:
    """The words of a URL a text must hold to have made the link (not those a renderer adds)."""
    return _words(_plain(url)) - _URL_PREFIXES


_URL_NOISE = re.compile(r"[\x00-\x20\x7f]+")  # what a browser strips before reading a scheme


Where = tuple[Literal["scope", "item"], int]
"""A scope bullet or an evidence item, numbered from 1 in the block's order."""


@dataclass(frozen=True)
class Finding:
    kind: str
    detail: str
    where: Where | None = None  # None: the block as a whole

    def __str__(self) -> str:
        return f"{self.kind}: {self.detail}"


def check_html(
    html: str,
    block: str,
    texts: Sequence[str],
    shared_scopes: int | Sequence[ScopeLike] = 0,
    *,
    resources: Sequence[str | None] | None = None,
    joins_resource: bool = False,
) -> list[Finding]:
    """Every way a renderer's `html` of `block` fails to hold `texts`; empty when it holds.

    `joins_resource` is for a renderer that may join an item's `Resource` line onto the text's
    last paragraph (`matrix.JOINS_RESOURCE_LINE`): the line must then still end that item,
    whole, on a line of its own inside the paragraph.
    """
    if html.startswith(ERROR_PREFIX):
        return [Finding("render-error", html[len(ERROR_PREFIX) :][:200])]
    texts = list(texts)
    scopes = None if isinstance(shared_scopes, int) else list(shared_scopes)
    n_scopes = shared_scopes if isinstance(shared_scopes, int) else len(shared_scopes)
    lines = _MD_NEWLINE.split(block.replace("\0", "\ufffd"))
    items = _items(lines, resources)
    root = _parse_html(html)
    head, body = root.find("head"), root.find("body")
    if head is None or body is None:
        return [Finding("document", "no <head> or no <body>")]
    shown = _words(_text(body))
    own = [_words(text) for text in texts]
    # A word the renderer hides in item k but shows elsewhere was carried out of the item,
    # unless another text holds it too: then it is that text's (renderers hide words inside an
    # item too, in an attribute or a citation they drop).
    elsewhere = [set().union(*own[:k], *own[k + 1 :]) for k in range(len(own))]
    wanted = [
        _visible_words(item.body) & shown - (elsewhere[k] if k < len(own) else set())
        for k, item in enumerate(items)
    ]
    findings = [*_frame(head, body, texts, items, n_scopes, scopes, wanted, joins_resource)]
    findings += _links_and_html(body, n_scopes, texts)
    return findings


# ---------------------------------------------------------------------------------------------
# the frame and the items, as tests/block_checks.py reads markdown-it's HTML
# ---------------------------------------------------------------------------------------------


def _finding(failure: Failure) -> Finding:
    return Finding(failure.kind, failure.detail)


def _frame(
    head: Element,
    body: Element,
    texts: list[str],
    items: list[_Item],
    n_scopes: int,
    scopes: list[ScopeLike] | None,
    wanted: list[frozenset[str]],
    joins_resource: bool,
) -> Iterator[Finding]:
    if len(head):
        yield Finding("head", f"elements moved into <head>: {[_tag(e) for e in head]}")
    children = list(body)
    stray = [text for text in (body.text, *(c.tail for c in children)) if not _blank(text)]
    if stray:
        yield Finding("stray-text", f"text directly in <body>: {(stray[0] or '')[:80]!r}")
    expected = ["h2", "ul"] if n_scopes else []
    expected += ["blockquote", "h2", "ul"]
    got = [_tag(child) for child in children]
    if got[: len(expected)] != expected:
        yield Finding("top-level", f"<body> children are {_short(got)}, expected {expected}")
        return
    if len(got) > len(expected):
        yield Finding("after-block", f"<body> goes on after the evidence <ul>: {_short(got)}")
    quote, evidence_heading, evidence = children[len(expected) - 3 : len(expected)]
    headings = [(evidence_heading, "Evidence")]
    if n_scopes:
        headings.insert(0, (children[0], "Scopes"))
        yield from _scopes(children[1], n_scopes, scopes)
    for heading, title in headings:
        if len(heading) or heading.text != title:
            yield Finding("heading", f"<h2>{title}</h2> is not intact: {_text(heading)[:80]!r}")
    paragraphs = list(quote)
    if (
        [_tag(p) for p in paragraphs] != ["p"]
        or len(paragraphs[0])
        or (paragraphs[0].text or "").strip() != NOTICE
        or not _blank(quote.text)
        or not _blank(paragraphs[0].tail)
    ):
        yield Finding("notice", f"the notice is not intact: {_text(quote)[:80]!r}")
    yield from _evidence(evidence, texts, items, wanted, joins_resource)


def _scopes(ul: Element, n_scopes: int, scopes: list[ScopeLike] | None) -> Iterator[Finding]:
    """`block_checks`' scope bullets check, one bullet at a time so findings name the bullet."""
    entries, failures = _list_items(ul, "scope", n_scopes)
    yield from map(_finding, failures)
    for number, entry in enumerate(entries, 1):
        wrapper = Element("ul")
        wrapper.append(entry)
        one = None if scopes is None or number > len(scopes) else [scopes[number - 1]]
        for failure in _scope_html(wrapper, 1, one):
            yield Finding(failure.kind, failure.detail, ("scope", number))


def _ends_with_resource(last: Element | None, uri: str, joined: bool) -> bool:
    """Whether an item's last element is its `Resource` paragraph (or, `joined`, a paragraph
    whose last line, after a line break or a hard break, is the whole `Resource` line)."""
    if last is None or _tag(last) != "p" or not len(last):
        return False
    code = last[-1]
    if _tag(code) != "code" or len(code) or code.text != uri or not _blank(code.tail):
        return False
    before = (last[-2].tail if len(last) > 1 else last.text) or ""
    if len(last) == 1 and before.strip() == "Resource":
        return True
    after_break = len(last) > 1 and _tag(last[-2]) == "br" and before.strip() == "Resource"
    return joined and (after_break or _JOINED_RESOURCE.search(before) is not None)


_JOINED_RESOURCE = re.compile(r"\n[ \t]*Resource $")


def _short(tags: list[str]) -> list[str]:
    return tags if len(tags) <= 8 else [*tags[:8], f"... {len(tags) - 8} more"]


def _evidence(
    ul: Element,
    texts: list[str],
    items: list[_Item],
    wanted: list[frozenset[str]],
    joins_resource: bool,
) -> Iterator[Finding]:
    entries, failures = _list_items(ul, "item", len(texts))
    yield from map(_finding, failures)
    shown = [_words(_text(entry)) for entry in entries]
    for number, entry in enumerate(entries, 1):
        if not _label_intact(entry):
            yield Finding(
                "label",
                f"<li> {number} does not open with its label: {_first_paragraph(entry)}",
                ("item", number),
            )
        item = items[number - 1] if number <= len(items) else None
        uri = item.resource_uri if item is not None else None
        if item is not None and uri is not None and item.resource_line is not None:
            last = entry[-1] if len(entry) else None
            if not _ends_with_resource(last, uri, joins_resource):
                yield Finding(
                    "resource",
                    f"<li> {number} does not end with its Resource paragraph: "
                    f"{_text(last)[:80] if last is not None else None!r}",
                    ("item", number),
                )
        if number > len(wanted):
            continue
        missing = wanted[number - 1] - shown[number - 1]
        if missing:
            where = sorted(
                {f"<li> {other}" for other, words in enumerate(shown, 1) if words & missing}
            )
            yield Finding(
                "item-text",
                f"<li> {number} lacks {len(missing)} word(s) of its own lines, e.g. "
                f"{sorted(missing)[:6]}; found in: {where or ['no <li>']}",
                ("item", number),
            )


# ---------------------------------------------------------------------------------------------
# links and raw HTML
# ---------------------------------------------------------------------------------------------


def _urls(root: Element) -> Iterator[tuple[Element, str, str]]:
    """Every URL-valued attribute in the tree: (element, attribute, value)."""
    for element in root.iter():
        if not isinstance(element.tag, str):
            continue
        for attribute in _URL_ATTRIBUTES:
            value = element.get(attribute)
            if value is not None:
                yield element, attribute, value


def _owners(body: Element, n_scopes: int) -> tuple[dict[int, Where], list[Element]]:
    """Which scope bullet or evidence item holds each element (by `id`), and the items."""
    children = list(body)
    lists = [("scope", 1)] if n_scopes else []
    lists.append(("item", 4 if n_scopes else 2))
    owners: dict[int, Where] = {}
    items: list[Element] = []
    for kind, index in lists:
        if index >= len(children) or _tag(children[index]) != "ul":
            continue
        entries = [entry for entry in children[index] if _tag(entry) == "li"]
        if kind == "item":
            items = entries
        for number, entry in enumerate(entries, 1):
            for element in entry.iter():
                owners[id(element)] = ("scope" if kind == "scope" else "item", number)
    return owners, items


def _links_and_html(body: Element, n_scopes: int, texts: list[str]) -> Iterator[Finding]:
    owners, items = _owners(body, n_scopes)
    for element, attribute, url in _urls(body):
        owner = owners.get(id(element))
        link = f"<{element.tag} {attribute}={url[:60]!r}>"
        if _DANGEROUS_URL.match(_URL_NOISE.sub("", url)):
            # An image's src does not run script in today's browsers: reported on its own.
            navigates = attribute != "src" or element.tag in ("iframe", "embed", "frame")
            yield Finding("javascript-url" if navigates else "javascript-src", link, owner)
        if element.tag not in ("a", "img", "area", "iframe", "form", "embed", "object"):
            continue
        if owner is None or owner[0] == "scope":
            where = "in no item" if owner is None else f"in scope bullet {owner[1]}"
            yield Finding("link-outside-item", f"{link} {where}", owner)
        elif (
            not url.startswith("#")
            and owner[1] <= len(texts)
            and not _made_by(texts[owner[1] - 1], url)
        ):
            yield Finding(
                "foreign-link", f"<li> {owner[1]} has {link}, which its text did not make", owner
            )
    for number, entry in enumerate(items, 1):
        for element in entry.iter():
            if not isinstance(element.tag, str):
                continue
            handlers = [name for name in element.attrib if name.lower().startswith("on")]
            if element.tag not in MARKDOWN_TAGS or handlers:
                yield Finding(
                    "raw-html",
                    f"<li> {number} holds a live <{element.tag}"
                    f"{' ' + ' '.join(handlers) if handlers else ''}>",
                    ("item", number),
                )
                break
