"""Run the matrix: every case (`cases.py`) through every renderer (`matrix.py`), checked.

`run_matrix()` returns the findings; `python -m tests.renderers` prints a summary per renderer
(and `--json PATH` writes every finding), with the time each stage took.
"""

from __future__ import annotations

import multiprocessing
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from tests.block_checks import check_block, hostile_corpus_entries
from tests.renderers.cases import Case, corpus_cases, probe_cases
from tests.renderers.checks import Finding, check_html
from tests.renderers.matrix import (
    JOINS_RESOURCE_LINE,
    JS_RENDERERS,
    PY_RENDERERS,
    RENDERERS,
    render_all,
    render_py,
    start_js,
)


@dataclass(frozen=True)
class Broken:
    """A case that one renderer does not hold, and how."""

    renderer: str
    case: Case
    findings: tuple[Finding, ...]

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(sorted({finding.kind for finding in self.findings}))


@dataclass
class Run:
    broken: list[Broken] = field(default_factory=list)
    cases: int = 0
    documents: int = 0
    seconds: dict[str, float] = field(default_factory=dict)

    def by_renderer(self) -> dict[str, list[Broken]]:
        grouped: dict[str, list[Broken]] = {name: [] for name in RENDERERS}
        for broken in self.broken:
            grouped.setdefault(broken.renderer, []).append(broken)
        return grouped


def _documents(cases: Iterable[Case]) -> list[str]:
    return list(dict.fromkeys(case.block for case in cases))


def _render(cases: Sequence[Case], renderers: Sequence[str]) -> dict[str, dict[str, str]]:
    documents = _documents(cases)
    rendered = render_all(documents, renderers)
    return {name: dict(zip(documents, htmls, strict=True)) for name, htmls in rendered.items()}


Key = tuple[str, str, bool]
"""(html, block, joins_resource): renderers often agree on a block's HTML, which is read once."""

_checked: dict[Key, list[Finding]] = {}


def _key(case: Case, html: dict[str, str], renderer: str) -> Key:
    return html[case.block], case.block, renderer in JOINS_RESOURCE_LINE


def _check(case: Case, html: dict[str, str], renderer: str) -> list[Finding]:
    key = _key(case, html, renderer)
    if key not in _checked:
        _checked[key] = _check_one(key, case)
    return _checked[key]


def _check_one(key: Key, case: Case) -> list[Finding]:
    html, block, joins_resource = key
    return check_html(
        html,
        block,
        case.texts,
        case.scopes,
        resources=case.resources,
        joins_resource=joins_resource,
    )


_jobs: list[tuple[Key, Case]] = []
"""What the worker processes check: set before they fork, so they inherit it."""


def _check_job(index: int) -> list[Finding]:
    return _check_one(*_jobs[index])


def _check_ahead(cases: Sequence[Case], rendered: dict[str, dict[str, str]], workers: int) -> None:
    """Fill `_checked` for every case in every rendering given, in `workers` processes."""
    jobs: dict[Key, Case] = {}
    for renderer, html in rendered.items():
        for case in cases:
            key = _key(case, html, renderer)
            if key not in _checked:
                jobs[key] = case
    if workers < 2 or len(jobs) < 200 or "fork" not in multiprocessing.get_all_start_methods():
        for key, case in jobs.items():
            _checked[key] = _check_one(key, case)
        return
    _jobs[:] = list(jobs.items())
    try:
        with multiprocessing.get_context("fork").Pool(workers) as pool:
            found = pool.map(_check_job, range(len(_jobs)), chunksize=64)
    finally:
        checked = list(_jobs)
        _jobs.clear()
    for (key, _), findings in zip(checked, found, strict=True):
        _checked[key] = findings


def _attributed(case: Case, findings: list[Finding]) -> dict[int, list[Finding]] | None:
    """A batch's findings by the string each belongs to; None if some belong to no one string."""
    by_string: dict[int, list[Finding]] = defaultdict(list)
    for finding in findings:
        index = case.string_at(finding.where)
        if index is None:
            return None
        by_string[index].append(finding)
    return by_string


def run_matrix(
    renderers: Sequence[str] = RENDERERS, cases: Sequence[Case] | None = None, *, workers: int = 1
) -> Run:
    """Render and check every case in every renderer, the JavaScript renderers' HTML checked in
    `workers` processes (the tests run one: their own workers share the matrix).

    A batch (several corpus strings in one block) that fails is reported string by string:
    from where its findings are when each names a scope bullet or item, else by rendering and
    checking each of its strings in a block of its own.
    """
    run = Run()
    clock = time.perf_counter()
    cases = [*corpus_cases(), *probe_cases()] if cases is None else list(cases)
    run.cases = len(cases)
    run.seconds["build blocks"] = time.perf_counter() - clock

    # node renders while Python renders and checks its own renderers' HTML; then the
    # JavaScript renderers' HTML is checked in `workers` processes.
    clock = time.perf_counter()
    documents = _documents(cases)
    run.documents = len(documents)
    wait = start_js(documents, [name for name in renderers if name in JS_RENDERERS])
    python = render_py(documents, [name for name in renderers if name in PY_RENDERERS])
    rendered = {name: dict(zip(documents, htmls, strict=True)) for name, htmls in python.items()}
    run.seconds["render (Python)"] = time.perf_counter() - clock
    _check_ahead(cases, rendered, workers=1)
    run.seconds["render (node) and check (Python)"] = time.perf_counter() - clock
    clock = time.perf_counter()
    js = {name: dict(zip(documents, htmls, strict=True)) for name, htmls in wait().items()}
    rendered |= js
    rendered = {name: rendered[name] for name in renderers}
    _check_ahead(cases, js, workers)
    run.seconds["check (node)"] = time.perf_counter() - clock

    clock = time.perf_counter()
    split: dict[str, list[Case]] = defaultdict(list)
    for name in renderers:
        for case in cases:
            findings = _check(case, rendered[name], name)
            if not findings:
                continue
            if case.family != "corpus" or len(case.strings) == 1:
                run.broken.append(Broken(name, case, tuple(findings)))
                continue
            by_string = _attributed(case, findings)
            if by_string is None:
                split[name].append(case)
                continue
            parts = case.singles
            for index, found in sorted(by_string.items()):
                run.broken.append(Broken(name, parts[index], tuple(found)))
    run.seconds["attribute"] = time.perf_counter() - clock

    clock = time.perf_counter()
    singles = {s.block: s for batches in split.values() for c in batches for s in c.singles}
    if singles:
        again = _render(list(singles.values()), sorted(split))
        for name, batches in split.items():
            for case in batches:
                for single in case.singles:
                    findings = _check(single, again[name], name)
                    if findings:
                        run.broken.append(Broken(name, single, tuple(findings)))
    run.seconds["split failing batches"] = time.perf_counter() - clock
    return run


def assert_blocks_hold(cases: Sequence[Case], renderers: Sequence[str] = RENDERERS) -> None:
    """Raise `AssertionError` unless every block holds its texts three ways in every renderer:
    line by line and as markdown-it's token tree and HTML (`block_checks.check_block`), and as
    each renderer's HTML read back as a browser would (`checks.check_html`).

    For any path that builds a block (build each with `cases.block_case(block, texts, ...)`):
    all the blocks are rendered in one batch, so pass them together.
    """
    failures = []
    for case in cases:
        found = check_block(case.block, case.texts, case.scopes, resources=case.resources)
        if found:
            failures.append(f"{case.family} block of {case.strings[:1]!r}...: {found[0]}")
    run = run_matrix(renderers, cases)
    failures += [
        f"{broken.renderer}: {broken.case.family} block of {broken.case.strings[:1]!r}...: "
        f"{broken.findings[0]}"
        for broken in run.broken
    ]
    assert not failures, f"{len(failures)} failures:\n" + "\n".join(failures[:40])


def summary(run: Run, examples: int = 2, renderers: Sequence[str] | None = None) -> str:
    """Per renderer: how many strings break it in each field, by kind, with short examples."""
    sources = {entry.text: entry.source for entry in hostile_corpus_entries()}
    out = [
        f"{run.cases} cases, {run.documents} documents per renderer, "
        + ", ".join(f"{stage} {seconds:.1f} s" for stage, seconds in run.seconds.items())
    ]
    for name, broken in run.by_renderer().items():
        if renderers is not None and name not in renderers:
            continue
        corpus = [b for b in broken if b.case.family == "corpus"]
        probes = [b for b in broken if b.case.family != "corpus"]
        out.append(f"\n== {name}: {len(corpus)} corpus strings, {len(probes)} probes break it")
        groups: dict[tuple[str, str], list[Broken]] = defaultdict(list)
        for b in corpus:
            groups[(b.case.field, b.kinds[0] if len(b.kinds) == 1 else "+".join(b.kinds))].append(b)
        for (field_, kinds), members in sorted(groups.items(), key=lambda kv: -len(kv[1])):
            origins = Counter(sources.get(b.case.strings[0], "?").split("#")[0] for b in members)
            shortest = sorted(members, key=lambda b: len(b.case.strings[0]))[:examples]
            out.append(
                f"  {field_:<11} {kinds:<40} {len(members):>4}  "
                f"{', '.join(f'{o} {n}' for o, n in origins.most_common(3))}"
            )
            for b in shortest:
                out.append(f"      {b.case.strings[0][:70]!r}: {b.findings[0]}"[:220])
        for b in probes:
            out.append(f"  probe {b.case.family:<15} {b.case.field:<11} {b.case.strings!r}"[:160])
            for finding in b.findings[:3]:
                out.append(f"      {finding}"[:220])
    return "\n".join(out)
