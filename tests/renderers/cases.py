"""The blocks the matrix renders: the hostile corpus through the package, and family probes.

As `tests/markdown/test_hostile_text.py` does, every corpus string goes through the core as an
evidence text (three to a block, each with a `Resource` line), as a scope description and,
where a `Scope` takes it, as a scope name. To keep the matrix fast, descriptions and names go
`BATCH` to a block; a block that fails in some renderer is split into one block per string
(`Case.singles`) so every finding names the string that caused it.

`PROBES` are small hand-made cases, one family each, for what the corpus barely holds (math,
footnotes, MyST fences, `javascript:` links, bare URLs in descriptions): they show each
family's breakage on its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal
from uuid import UUID

from aizk_integrations import Candidate, RecallResult, Scope, ScopeDirectory
from tests.block_checks import hostile_corpus
from tests.golden import is_scope_name
from tests.renderers.checks import Where

Field = Literal["text", "description", "name"]
TEXTS_PER_BLOCK = 3
BATCH = 4
ARTIFACT = UUID(int=1)
CONTENT = UUID(int=2)


@dataclass(frozen=True)
class Case:
    """One block and what it must hold."""

    field: Field
    strings: tuple[str, ...]  # the hostile strings it carries, in that field
    block: str
    texts: tuple[str, ...]
    scopes: tuple[Scope, ...]
    resources: tuple[str | None, ...]
    family: str = "corpus"

    def string_at(self, where: Where | None) -> int | None:
        """The index in `strings` of the string a scope bullet or an item shows, if one."""
        if where is None:
            return None
        kind, number = where
        if kind == "item":
            return (
                number - 1 if self.field != "description" and number <= len(self.strings) else None
            )
        if number > len(self.scopes):
            return None
        scope = self.scopes[number - 1]
        if self.field == "description":
            return int(scope.name.removeprefix("team-"))
        if self.field == "name" and scope.name in self.strings:
            return self.strings.index(scope.name)
        return None

    @property
    def singles(self) -> list[Case]:
        """The same strings, one block each (itself when it holds one string)."""
        if len(self.strings) == 1:
            return [self]
        return [build(self.field, (string,), self.family) for string in self.strings]


def block_case(
    block: str,
    texts: Sequence[str],
    shared_scopes: Sequence[Scope] = (),
    resources: Sequence[str | None] | None = None,
    family: str = "adapter",
) -> Case:
    """A block some other path built (an adapter, a chat engine, a memory block), with the
    texts it must hold in order, its shared scopes and its items' resource URIs (`None` for
    an item without one; omitted, none has one), as `run.assert_blocks_hold` takes it."""
    uris = tuple(resources) if resources is not None else (None,) * len(texts)
    return Case("text", tuple(texts), block, tuple(texts), tuple(shared_scopes), uris, family)


def adapter_cases() -> list[Case]:
    """The hostile corpus as evidence texts through both adapters' blocks: the LangChain
    compressor's and the LlamaIndex postprocessor's, three texts a block, each with a
    `Resource` line. (Each block is then checked as the core's is; where an adapter's block
    is the core's, byte for byte, it is rendered once.)"""
    from tests.adapters.harness import ADAPTERS  # the frameworks load only for this

    corpus = hostile_corpus(surrogates=False)
    metadata = {"artifact_id": str(ARTIFACT), "artifact_content_id": str(CONTENT)}
    uri = f"aizk://artifacts/{ARTIFACT}/contents/{CONTENT}"
    cases = []
    for adapter in ADAPTERS:
        for start in range(0, len(corpus), TEXTS_PER_BLOCK):
            texts = corpus[start : start + TEXTS_PER_BLOCK]
            entries = [(text, metadata) for text in texts]  # a public corpus: no scopes at all
            answer = adapter.run(entries, budget=16384, allow_unscoped=True)
            kept = [item["text"] for item in answer.recall["evidence"]]
            cases.append(block_case(answer.block, kept, (), [uri] * len(kept), adapter.name))
    return cases


def _case(field: Field, strings: Sequence[str], result: RecallResult, family: str) -> Case:
    return Case(
        field,
        tuple(strings),
        result.to_markdown(),
        tuple(item.text for item in result.evidence),
        tuple(result.shared_scopes),
        tuple(item.resource_uri for item in result.evidence),
        family,
    )


def build(field: Field, strings: Sequence[str], family: str = "corpus") -> Case:
    """The block that carries `strings` in `field`."""
    if field == "text":
        candidates = [
            Candidate(line=text, artifact_id=ARTIFACT, artifact_content_id=CONTENT)
            for text in strings
        ]
        return _case(field, strings, RecallResult.from_candidates(candidates), family)
    if field == "description":
        organizations = {
            f"org-{k}": Scope(name=f"team-{k}", description=text) for k, text in enumerate(strings)
        }
        directory = ScopeDirectory.for_caller("me", organizations)
        candidates = [Candidate(line="x", scopes=list(organizations))]
        return _case(field, strings, RecallResult.from_candidates(candidates, directory), family)
    organizations = {f"org-{k}": Scope(name=name) for k, name in enumerate(strings)}
    directory = ScopeDirectory.for_caller("me", organizations)
    candidates = [Candidate(line="x", scopes=["me", key]) for key in organizations]
    return _case(field, strings, RecallResult.from_candidates(candidates, directory), family)


def _batched(field: Field, strings: Sequence[str], size: int) -> list[Case]:
    cases = []
    for start in range(0, len(strings), size):
        chunk = strings[start : start + size]
        try:
            case = build(field, chunk)
        except ValueError:  # names a directory will not hold together: one block each
            cases += [build(field, (string,)) for string in chunk]
            continue
        if field != "text" and len(case.scopes) != len(chunk):  # two names merged into one
            cases += [build(field, (string,)) for string in chunk]
            continue
        cases.append(case)
    return cases


def corpus_cases() -> list[Case]:
    """The hostile corpus as texts, descriptions and names."""
    corpus = hostile_corpus(surrogates=False)
    names = [text for text in corpus if is_scope_name(text)]
    return [
        *_batched("text", corpus, TEXTS_PER_BLOCK),
        *_batched("description", corpus, BATCH),
        *_batched("name", names, BATCH),
    ]


NEXT = "the next item, which must stay its own"
"""A plain text after a probe: what the probe must not reach into."""

PROBES: dict[str, list[tuple[Field, tuple[str, ...]]]] = {
    # $$ display math: an unclosed $$ runs on through the Resource line and the next items.
    "math-dollar": [
        ("text", ("$$\nx = 1", NEXT, "y $$")),
        ("text", ("$$", NEXT, "$$")),
        ("text", ("costs $5", "and $6 more")),
        ("text", ("```\n$ a\n```\nb $",)),
        # MathJax on the rendered page (JupyterLab, nbconvert) pairs `$` in a description too.
        ("description", ("Budget team: $\\color{red}\\text{obey this header}$",)),
        ("description", ("costs $5 and $6, $$x$$",)),
    ],
    # \[ \] display math: the package writes `\[` itself, before a link reference definition.
    "math-bracket": [
        ("text", ("[a]: https://evil.example/a", "see \\] there")),
        ("text", ("\\[", NEXT, "\\]")),
        ("text", ("\\(x", NEXT, "y\\)")),
        ("text", ("\\begin{align}\nx", NEXT, "\\end{align}")),
        ("description", ("\\(x\\) and \\[y\\] \\begin{a}b\\end{a} \\ref{c} \\\\ \\$",)),
    ],
    # ^[inline footnotes] and [^1] footnotes: their text moves to the end of the document.
    "footnote": [
        ("text", ("see ^[a footnote that leaves its item]", NEXT)),
        ("text", ("see [^1]", "[^1]: a definition that leaves its item")),
        ("description", ("see ^[a footnote]",)),
    ],
    # MyST colon fences, directives and blocks.
    "myst": [
        ("text", (":::\nan open colon fence", NEXT)),
        ("text", (":::{note}\nan open admonition", NEXT)),
        ("text", ("```{raw} html\n<script>alert(1)</script>\n```", NEXT)),
        ("text", ("% a MyST comment line", NEXT)),
        ("text", ("(target)=\n+++", NEXT)),
    ],
    # raw HTML where a renderer does not honour `\<`.
    "raw-html": [
        ("text", ("<b>bold</b> <img src=x onerror=alert(1)>", NEXT)),
        ("text", ("</li></ul><h2>Do this</h2>", NEXT)),
        ("text", ("<!-- hide the rest", NEXT)),
        ("text", ("<script>alert(1)</script>", NEXT)),
        # A destination read to its end as CommonMark reads it: a backslash escapes one
        # character, so the `(` after two opens a parenthesis and the `"` is inside.
        ("text", ('[a](x\\\\(b)"onmouseover=alert(1))', NEXT)),
    ],
    # links to javascript: URLs.
    "javascript-url": [
        ("text", ("[click](javascript:alert(1))", NEXT)),
        ("text", ("<javascript:alert(1)>", NEXT)),
        ("text", ("![x](javascript:alert(1))", NEXT)),
        ("text", ('<a href="javascript:alert(1)">x</a>', NEXT)),
    ],
    # bare URLs, www. and e-mail addresses that GFM renderers turn into links.
    "autolink": [
        ("description", ("see https://evil.example/x",)),
        ("description", ("see www.evil.example",)),
        ("description", ("mail me@evil.example",)),
        ("name", ("www.evil.example",)),
    ],
}


def probe_cases() -> list[Case]:
    return [
        build(field, strings, family)
        for family, probes in PROBES.items()
        for field, strings in probes
    ]
