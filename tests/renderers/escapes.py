"""Which escaping every renderer honours: each hostile family, escaped several ways, everywhere.

`python -m tests.renderers.escapes` builds, for each family, the block the package makes around
a placeholder, puts each candidate escaping of the family's payload where the placeholder is
(bypassing the package's own escaping, so the candidate is exactly what the block would hold),
renders it in every renderer and reports, per candidate, where the block **holds** (every check
of `checks.py` passes) and where it also **reads** as the payload (the item's or the scope
bullet's visible text holds the payload itself, no backslash or entity left showing).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from xml.etree.ElementTree import Element

from tests.block_checks import _parse_html, _tag, _text
from tests.renderers.cases import NEXT, Case, Field, build
from tests.renderers.checks import check_html
from tests.renderers.matrix import RENDERERS, render_all

PLACEHOLDER = "zqxjPLACEHOLDERzqxj"
ZWSP = "\u200b"
WORD_JOINER = "\u2060"


@dataclass(frozen=True)
class Family:
    name: str
    field: Field
    payload: str  # what the author wrote, and what a reader should see
    candidates: dict[str, str]  # escaping -> the payload so escaped
    after: tuple[str, ...] = (NEXT,)  # the texts after it, which it must not reach


FAMILIES = [
    Family(
        "raw HTML",
        "text",
        "<b>x</b> <!-- y",
        {
            "backslash": r"\<b>x\</b> \<!-- y",
            "&lt;": "&lt;b>x&lt;/b> &lt;!-- y",
            "&#60;": "&#60;b>x&#60;/b> &#60;!-- y",
            "zero-width": f"<{ZWSP}b>x<{ZWSP}/b> <{ZWSP}!-- y",
        },
    ),
    Family(
        "raw HTML after a bare URL",
        "text",
        "https://x.example/?<b>x</b>",
        {
            "backslash": r"https://x.example/?\<b>x\</b>",
            "&lt;": "https://x.example/?&lt;b>x&lt;/b>",
            "&#60;": "https://x.example/?&#60;b>x&#60;/b>",
        },
    ),
    Family(
        "link definition, then \\]",
        "text",
        "[a]: https://evil.example/a",
        {
            "\\[ (today)": r"\[a]: https://evil.example/a",
            "&#91;": "&#91;a]: https://evil.example/a",
            "&lbrack;": "&lbrack;a]: https://evil.example/a",
            "\\:": r"[a]\: https://evil.example/a",
            "&#58;": "[a]&#58; https://evil.example/a",
        },
        ("see [a] and \\] there",),
    ),
    Family(
        "$$ display math",
        "text",
        "$$\nx = 1",
        {
            "backslash": "\\$\\$\nx = 1",
            "&#36;": "&#36;&#36;\nx = 1",
            "&dollar;": "&dollar;&dollar;\nx = 1",
            "zero-width": f"${ZWSP}$\nx = 1",
        },
        (NEXT, "y $$"),
    ),
    Family(
        "\\[ \\] display math",
        "text",
        "\\[ x",
        {
            "\\\\[": "\\\\[ x",
            "&#92;": "&#92;[ x",
            "\\&#91;": "\\&#91; x",
        },
        (NEXT, "y \\]"),
    ),
    Family(
        "\\begin{..} math",
        "text",
        "\\begin{align}\nx",
        {"\\\\begin": "\\\\begin{align}\nx", "&#92;": "&#92;begin{align}\nx"},
        (NEXT, "\\end{align}"),
    ),
    Family(
        "^[inline footnote]",
        "text",
        "see ^[a note]",
        {
            "\\^": r"see \^[a note]",
            "^\\[": r"see ^\[a note]",
            "&#94;": "see &#94;[a note]",
            "&Hat;": "see &Hat;[a note]",
            "&#91;": "see ^&#91;a note]",
        },
    ),
    Family(
        "::: MyST colon fence",
        "text",
        ":::{note}\nopen",
        {
            "\\:": "\\:::{note}\nopen",
            "&#58;": "&#58;::{note}\nopen",
            "&colon;": "&colon;::{note}\nopen",
        },
    ),
    Family(
        "javascript: link",
        "text",
        "[click](javascript:alert(1)) <javascript:alert(1)>",
        {
            "\\[ and \\<": r"\[click](javascript:alert(1)) \<javascript:alert(1)>",
            "\\( and \\<": r"[click]\(javascript:alert(1)) \<javascript:alert(1)>",
            "&#58; in URL": "[click](javascript&#58;alert(1)) <javascript&#58;alert(1)>",
            "\\: in URL": r"[click](javascript\:alert(1)) <javascript\:alert(1)>",
            "&#91; and &lt;": "&#91;click](javascript:alert(1)) &lt;javascript:alert(1)>",
        },
    ),
    Family(
        "bare URL in a description",
        "description",
        "see https://evil.example/x",
        {
            "\\:": r"see https\://evil.example/x",
            "&#58;": "see https&#58;//evil.example/x",
            "zero-width": f"see https:{ZWSP}//evil.example/x",
        },
    ),
    Family(
        "www. in a description",
        "description",
        "see www.evil.example",
        {
            "\\.": r"see www\.evil.example",
            "&#46;": "see www&#46;evil.example",
            "zero-width": f"see www{ZWSP}.evil.example",
        },
    ),
    Family(
        "e-mail in a description",
        "description",
        "mail me@evil.example",
        {
            "\\@": r"mail me\@evil.example",
            "&#64;": "mail me&#64;evil.example",
            "&commat;": "mail me&commat;evil.example",
            "zero-width": f"mail me@{ZWSP}evil.example",
            "zero-width before @": f"mail me{ZWSP}@evil.example",
        },
    ),
    Family(
        "$ math in a description",
        "description",
        "$5 and $6",
        {
            "\\$": r"\$5 and \$6",
            "&#36;": "&#36;5 and &#36;6",
            "\\&#36; but the last": r"\\&#36;5 and &#36;6",
        },
    ),
    Family(
        "\\( \\begin math in a description",
        "description",
        r"\(x\) \begin{y}z\end{y}",
        {
            "\\\\": r"\\(x\\) \\begin{y}z\\end{y}",
            "\\\\ and a word joiner": "\\\\\u2060(x\\\\\u2060) \\\\\u2060begin{y}z\\\\\u2060end{y}",
        },
    ),
    Family(
        "@citation in a description",
        "description",
        "[see @Clyde]",
        {"\\[ \\@": r"\[see \@Clyde\]", "&#91; &#64;": "&#91;see &#64;Clyde&#93;"},
    ),
]


@dataclass(frozen=True)
class Outcome:
    holds: bool
    reads: bool


def _reads(html: str, family: Family) -> bool:
    """Whether the element the payload sits in shows the payload itself."""
    body = _parse_html(html).find("body")
    children = list(body) if body is not None else []
    tags = [_tag(child) for child in children]
    if family.field == "description":
        target = children[1] if tags[:2] == ["h2", "ul"] else None
    else:
        target = children[-1] if tags[-1:] == ["ul"] else None
    if target is None or not len(target):
        return False
    entry: Element = target[0]
    shown = re.sub(r"\s+", " ", _text(entry).replace(ZWSP, "").replace(WORD_JOINER, ""))
    return (
        all(part in shown for part in family.payload.split("\n"))
        and shown.count("\\") == family.payload.count("\\")  # no escape left showing
        and not re.search(r"&#?\w+;", shown)  # nor a character reference
    )


def outcomes(renderers: Sequence[str] = RENDERERS) -> dict[str, dict[str, dict[str, Outcome]]]:
    """`{family: {escaping: {renderer: Outcome}}}`, every family's escapings, all rendered."""
    blocks: list[tuple[Family, str, str, tuple[str, ...], Case]] = []
    for family in FAMILIES:
        strings = (PLACEHOLDER, *family.after) if family.field == "text" else (PLACEHOLDER,)
        case = build(family.field, strings)
        for escaping, escaped in {"none": family.payload, **family.candidates}.items():
            inside = escaped.replace("\n", "\n    ") if family.field == "text" else escaped
            block = case.block.replace(PLACEHOLDER, inside)
            texts = tuple(text.replace(PLACEHOLDER, family.payload) for text in case.texts)
            blocks.append((family, escaping, block, texts, case))
    rendered = render_all([block for _, _, block, _, _ in blocks], renderers)
    result: dict[str, dict[str, dict[str, Outcome]]] = {}
    for index, (family, escaping, block, texts, case) in enumerate(blocks):
        for name in renderers:
            html = rendered[name][index]
            failures = check_html(
                html,
                block,
                texts,
                len(case.scopes),
                resources=case.resources,
            )
            result.setdefault(family.name, {}).setdefault(escaping, {})[name] = Outcome(
                not failures, _reads(html, family)
            )
    return result


def table(renderers: Sequence[str] = RENDERERS) -> str:
    """Per family and escaping: the renderers where the block breaks, or where it holds but
    does not read as the payload."""
    out = []
    for family, by_escaping in outcomes(renderers).items():
        out.append(f"\n{family}")
        for escaping, by_renderer in by_escaping.items():
            breaks = [name for name, o in by_renderer.items() if not o.holds]
            garbled = [name for name, o in by_renderer.items() if o.holds and not o.reads]
            verdict = "holds and reads everywhere" if not breaks and not garbled else ""
            out.append(
                f"  {escaping:<14} {verdict}"
                + (f"breaks: {', '.join(breaks)}  " if breaks else "")
                + (f"does not read as written: {', '.join(garbled)}" if garbled else "")
            )
    return "\n".join(out)


if __name__ == "__main__":
    print(table())
