#!/usr/bin/env python
"""Mutation testing of `aizk_integrations`, on demand (never in CI).

A mutant is one small change to one module of the package (mutmut's operator rules, written
again here with libcst). The tool asks of each mutant: does some test fail? It never touches the
real files: it snapshots the repository into a temporary directory, gives each parallel worker
its own copy of the snapshot, and writes a mutated module only into a worker's copy.

How a mutant is run:

1. Baseline, once: the whole non-slow suite under coverage.py with one dynamic context per test,
   which maps every executed line of the package to the tests that ran it. Tests that fail, or
   files that do not collect, in the baseline are set aside (and reported) so that a suite in
   the middle of a change does not count every mutant as killed.
2. Each mutant first runs only the tests that cover its lines, with a timeout; a mutant that
   hangs counts as killed ("timeout").
3. Every survivor runs again on the whole non-slow suite before it is counted as surviving.

Workers are fork servers: a long-lived process per worker imports the heavy third-party modules
the suite uses (pytest, pydantic, LangChain, LlamaIndex, ...) once, and forks a fresh child per
run, in which the package and the tests are imported from the worker's copy. A child runs in its
own process group, so a timeout kills it and anything it started.

Run `python tools/mutate.py --help`, and see tools/README.md.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import dataclasses
import difflib
import importlib
import json
import math
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections import defaultdict
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any, Final

import libcst as cst
import pytest
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

PACKAGE: Final = "aizk_integrations"
TOOLS_DIR: Final = Path(__file__).resolve().parent
REPO_ROOT: Final = TOOLS_DIR.parent
DEFAULT_EQUIVALENTS: Final = TOOLS_DIR / "equivalent_mutants.txt"

# What the snapshot leaves out: VCS, virtualenvs, caches and build output.
COPY_IGNORE: Final = (
    ".git",
    ".venv",
    "venv",
    ".tox",
    ".nox",
    "__pycache__",
    ".mypy_cache",
    ".ruff_cache",
    ".pytest_cache",
    ".hypothesis",
    ".ipynb_checkpoints",
    "build",
    "dist",
    "*.egg-info",
    "*.pyc",
    ".coverage",
)

# Modules the tool does not mutate: `__init__.py` only re-exports names and lists `__all__`.
SKIPPED_MODULES: Final = frozenset({"__init__"})

PYTEST_COMMON: Final = (
    "-p",
    "no:cacheprovider",
    "-q",
    "--no-header",
    "--tb=short",
    "-m",
    "not slow",
    # The fork servers import pytest plugins (hypothesis, ...) before pytest starts, so pytest
    # cannot rewrite their asserts; its warning would be an error under `filterwarnings=error`.
    "-W",
    "ignore::pytest.PytestAssertRewriteWarning",
)

PRAGMA: Final = re.compile(r"#\s*pragma:.*no mutate")

# ---------------------------------------------------------------------------------------------
# Mutation operators (mutmut's rules, reimplemented over libcst)
# ---------------------------------------------------------------------------------------------

ARITHMETIC_SWAPS: Final[dict[type[cst.CSTNode], type[cst.CSTNode]]] = {
    cst.Add: cst.Subtract,
    cst.Subtract: cst.Add,
    cst.Multiply: cst.Divide,
    cst.Divide: cst.Multiply,
    cst.FloorDivide: cst.Divide,
    cst.Modulo: cst.Divide,
    cst.Power: cst.Multiply,
    cst.LeftShift: cst.RightShift,
    cst.RightShift: cst.LeftShift,
    cst.BitAnd: cst.BitOr,
    cst.BitOr: cst.BitAnd,
    cst.BitXor: cst.BitAnd,
    cst.MatrixMultiply: cst.Multiply,
}
AUGMENTED_SWAPS: Final[dict[type[cst.CSTNode], type[cst.CSTNode]]] = {
    cst.AddAssign: cst.SubtractAssign,
    cst.SubtractAssign: cst.AddAssign,
    cst.MultiplyAssign: cst.DivideAssign,
    cst.DivideAssign: cst.MultiplyAssign,
    cst.FloorDivideAssign: cst.DivideAssign,
    cst.ModuloAssign: cst.DivideAssign,
    cst.PowerAssign: cst.MultiplyAssign,
    cst.LeftShiftAssign: cst.RightShiftAssign,
    cst.RightShiftAssign: cst.LeftShiftAssign,
    cst.BitAndAssign: cst.BitOrAssign,
    cst.BitOrAssign: cst.BitAndAssign,
    cst.BitXorAssign: cst.BitAndAssign,
}
UNARY_SWAPS: Final[dict[type[cst.CSTNode], type[cst.CSTNode]]] = {
    cst.Minus: cst.Plus,
    cst.Plus: cst.Minus,
}
COMPARISON_SWAPS: Final[dict[type[cst.CSTNode], type[cst.CSTNode]]] = {
    cst.LessThan: cst.LessThanEqual,
    cst.LessThanEqual: cst.LessThan,
    cst.GreaterThan: cst.GreaterThanEqual,
    cst.GreaterThanEqual: cst.GreaterThan,
    cst.Equal: cst.NotEqual,
    cst.NotEqual: cst.Equal,
}
IS_SWAPS: Final[dict[type[cst.CSTNode], type[cst.CSTNode]]] = {cst.Is: cst.IsNot, cst.IsNot: cst.Is}
IN_SWAPS: Final[dict[type[cst.CSTNode], type[cst.CSTNode]]] = {cst.In: cst.NotIn, cst.NotIn: cst.In}
BOOLEAN_SWAPS: Final[dict[type[cst.CSTNode], type[cst.CSTNode]]] = {
    cst.And: cst.Or,
    cst.Or: cst.And,
}

STRING_METHOD_SWAPS: Final = {
    "lower": "upper",
    "upper": "lower",
    "lstrip": "rstrip",
    "rstrip": "lstrip",
    "find": "rfind",
    "rfind": "find",
    "index": "rindex",
    "rindex": "index",
    "ljust": "rjust",
    "rjust": "ljust",
    "removeprefix": "removesuffix",
    "removesuffix": "removeprefix",
    "partition": "rpartition",
    "rpartition": "partition",
}
# split/rsplit differ only when the split is bounded (mutmut's rule).
BOUNDED_SPLIT_SWAPS: Final = {"split": "rsplit", "rsplit": "split"}

# Calls whose arguments are never mutated (mutmut's rule: the mutants are noise).
NEVER_MUTATE_CALLS: Final = frozenset({"len", "isinstance"})
# Calls that only build typing objects.
TYPING_CALLS: Final = frozenset({"TypeVar", "ParamSpec", "TypeVarTuple", "NewType"})
# Subscripted forms that make a type alias (`X = Literal[...]`), left alone like annotations.
TYPING_FORMS: Final = frozenset(
    {
        "Literal",
        "Union",
        "Optional",
        "Callable",
        "Annotated",
        "Type",
        "type",
        "Generic",
        "Protocol",
        "ClassVar",
        "Final",
        "TypeGuard",
        "Concatenate",
    }
)
# Decorators with no runtime effect: removing them gives an equivalent mutant.
TYPING_DECORATORS: Final = frozenset({"overload", "override", "final", "type_check_only"})

STRING_ESCAPE: Final = re.compile(
    r"\\N\{[^}]*\}|\\x[0-9a-fA-F]{2}|\\u[0-9a-fA-F]{4}|\\U[0-9a-fA-F]{8}|\\.|\\$|([^\\]+)",
    re.DOTALL,
)


def _dotted_name(node: cst.BaseExpression) -> str | None:
    """`a.b.c` for a Name/Attribute chain, else None."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = _dotted_name(node.value)
        return None if base is None else f"{base}.{node.attr.value}"
    return None


def _last_name(node: cst.BaseExpression) -> str | None:
    name = _dotted_name(node)
    return None if name is None else name.rsplit(".", 1)[-1]


def _is_none(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


def _swap_node(old: cst.CSTNode, new_type: type[cst.CSTNode]) -> cst.CSTNode:
    """A new operator of `new_type`, keeping the old one's surrounding whitespace."""
    names = {field.name for field in dataclasses.fields(new_type)}
    kept = {
        name: getattr(old, name)
        for name in ("whitespace_before", "whitespace_after")
        if name in names and hasattr(old, name)
    }
    return new_type(**kept)


def _change_case(raw: str, change: Callable[[str], str], *, is_raw: bool) -> str:
    """Change the case of a string literal's text, leaving escape sequences intact."""
    if is_raw:
        return change(raw)
    return STRING_ESCAPE.sub(
        lambda match: change(match.group(1)) if match.group(1) else match.group(0), raw
    )


def mutate_number(node: cst.BaseNumber) -> Iterator[cst.BaseNumber]:
    if isinstance(node, cst.Integer):
        yield node.with_changes(value=repr(node.evaluated_value + 1))
    elif isinstance(node, cst.Float):
        value = node.evaluated_value + 1
        if math.isfinite(value):
            yield node.with_changes(value=repr(value))
    elif isinstance(node, cst.Imaginary):
        complex_value = node.evaluated_value + 1j
        if math.isfinite(complex_value.real) and math.isfinite(complex_value.imag):
            yield node.with_changes(value=repr(complex_value))


def mutate_string(node: cst.SimpleString) -> Iterator[cst.SimpleString]:
    prefix, quote, raw = node.prefix, node.quote, node.raw_value
    is_raw = "r" in prefix.lower()
    variants = (
        f"XX{raw}XX",
        _change_case(raw, str.lower, is_raw=is_raw),
        _change_case(raw, str.upper, is_raw=is_raw),
    )
    seen = {raw}
    for variant in variants:
        if variant not in seen:
            seen.add(variant)
            yield node.with_changes(value=f"{prefix}{quote}{variant}{quote}")


def mutate_fstring(node: cst.FormattedString) -> Iterator[cst.FormattedString]:
    marker = cst.FormattedStringText("XX")
    yield node.with_changes(parts=[marker, *node.parts, marker])


@dataclasses.dataclass(frozen=True)
class Site:
    """One mutation found in a module, before its code is generated."""

    module: str
    scope: str
    operator: str
    node: cst.CSTNode
    replacement: cst.CSTNode
    line: int
    first_line: int
    last_line: int
    scope_lines: tuple[int, int] | None  # the enclosing def, if any


class MutationFinder(cst.CSTVisitor):
    """Walk a module and record every mutation the operators allow, in source order."""

    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, module: str, pragma_lines: frozenset[int]) -> None:
        super().__init__()
        self.module = module
        self.pragma_lines = pragma_lines
        self.sites: list[Site] = []
        self._scopes: list[str] = []
        self._scope_nodes: list[cst.CSTNode] = []
        self._statements: list[cst.CSTNode] = []
        self._skip: set[int] = set()

    # -- bookkeeping ------------------------------------------------------------------------

    def _range(self, node: cst.CSTNode) -> CodeRange | None:
        position: CodeRange | None = self.get_metadata(PositionProvider, node, None)
        return position

    def _add(
        self,
        operator: str,
        node: cst.CSTNode,
        replacement: cst.CSTNode,
        focus: cst.CSTNode | None = None,
    ) -> None:
        node_range = self._range(node)
        focus_range = self._range(focus) if focus is not None else node_range
        if node_range is None or focus_range is None:
            return
        line = focus_range.start.line
        if line in self.pragma_lines:
            return
        statement = self._statements[-1] if self._statements else node
        statement_range = self._range(statement) or node_range
        # A def's header and decorators run at import; the def's body says who uses them. A
        # class body (pydantic fields, say) is read by pydantic's own code, which coverage does
        # not see: those fall back to the whole module's tests.
        in_def = bool(self._scope_nodes) and isinstance(self._scope_nodes[-1], cst.FunctionDef)
        scope_range = self._range(self._scope_nodes[-1]) if in_def else None
        self.sites.append(
            Site(
                module=self.module,
                scope=".".join(self._scopes) or "<module>",
                operator=operator,
                node=node,
                replacement=replacement,
                line=line,
                first_line=min(statement_range.start.line, node_range.start.line),
                last_line=node_range.end.line,
                scope_lines=(
                    (scope_range.start.line, scope_range.end.line) if scope_range else None
                ),
            )
        )

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, cst.BaseSmallStatement | cst.BaseCompoundStatement):
            self._statements.append(node)
        if id(node) in self._skip or self._skip_subtree(node):
            return False
        if isinstance(node, cst.FunctionDef | cst.ClassDef):
            # Pushed first, so a decorator's removal is named after what it decorates.
            self._scopes.append(node.name.value)
            self._scope_nodes.append(node)
        self._mutate(node)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        if self._scope_nodes and self._scope_nodes[-1] is original_node:
            self._scope_nodes.pop()
            self._scopes.pop()
        if isinstance(original_node, cst.BaseSmallStatement | cst.BaseCompoundStatement):
            self._statements.pop()

    # -- what is never mutated --------------------------------------------------------------

    def _skip_subtree(self, node: cst.CSTNode) -> bool:
        # Type annotations, imports and docstrings (any bare string statement, which covers
        # module, class, function and attribute docstrings).
        if isinstance(node, cst.Annotation | cst.Import | cst.ImportFrom | cst.TypeAlias):
            return True
        if isinstance(node, cst.Expr) and isinstance(node.value, cst.BaseString):
            return True
        if isinstance(node, cst.If) and _dotted_name(node.test) in {
            "TYPE_CHECKING",
            "typing.TYPE_CHECKING",
        }:
            # Only the type checker reads the body; an `else` branch still runs.
            if node.orelse is not None:
                node.orelse.visit(self)
            return True
        if isinstance(node, cst.Assign | cst.AnnAssign):
            targets = (
                [target.target for target in node.targets]
                if isinstance(node, cst.Assign)
                else [node.target]
            )
            if any(_dotted_name(target) == "__all__" for target in targets):
                return True
            if isinstance(node, cst.AnnAssign) and _last_name(node.annotation.annotation) in {
                "TypeAlias"
            }:
                return True
            value = node.value
            if isinstance(value, cst.Subscript) and _last_name(value.value) in TYPING_FORMS:
                return True
            if isinstance(value, cst.Call) and _last_name(value.func) in TYPING_CALLS:
                return True
        if isinstance(node, cst.Call):
            name = _last_name(node.func)
            if name in NEVER_MUTATE_CALLS or name in TYPING_CALLS:
                return True
            if name == "cast" and node.args:
                self._skip.add(id(node.args[0]))
            # A `description="..."` is documentation, as a docstring is: its words are not
            # mutated (dropping it, or making it None, still is).
            for arg in node.args:
                keyword = arg.keyword.value if arg.keyword is not None else None
                if keyword == "description" and isinstance(arg.value, cst.BaseString):
                    self._skip.add(id(arg.value))
        # A default that is more than a literal runs at definition time (mutmut's rule).
        if isinstance(node, cst.Param) and node.default is not None:
            return not isinstance(node.default, cst.Name | cst.BaseNumber | cst.SimpleString)
        return False

    # -- the operators ----------------------------------------------------------------------

    def _mutate(self, node: cst.CSTNode) -> None:
        if isinstance(node, cst.BaseNumber):
            for new_number in mutate_number(node):
                self._add("number", node, new_number)
        elif isinstance(node, cst.SimpleString):
            for new_string in mutate_string(node):
                self._add("string", node, new_string)
        elif isinstance(node, cst.FormattedString):
            for new_fstring in mutate_fstring(node):
                self._add("fstring", node, new_fstring)
        elif isinstance(node, cst.Name) and node.value in {"True", "False"}:
            self._add("bool", node, node.with_changes(value=str(node.value != "True")))
        elif isinstance(node, cst.Assign | cst.AnnAssign) and node.value is not None:
            value = cst.SimpleString('""') if _is_none(node.value) else cst.Name("None")
            self._add("assign", node, node.with_changes(value=value))
        elif isinstance(node, cst.AugAssign):
            self._swap("augassign", node, AUGMENTED_SWAPS)
            plain = cst.Assign(
                targets=[cst.AssignTarget(target=node.target)],
                value=node.value,
                semicolon=node.semicolon,
            )
            self._add("augassign", node, plain)
        elif isinstance(node, cst.UnaryOperation):
            if isinstance(node.operator, cst.Not | cst.BitInvert):
                operand = node.expression
                if node.lpar:
                    operand = operand.with_changes(
                        lpar=[*node.lpar, *operand.lpar], rpar=[*operand.rpar, *node.rpar]
                    )
                self._add("unary", node, operand)
            else:
                self._swap("arithmetic", node, UNARY_SWAPS)
        elif isinstance(node, cst.BinaryOperation):
            self._swap("arithmetic", node, ARITHMETIC_SWAPS)
        elif isinstance(node, cst.BooleanOperation):
            self._swap("boolean", node, BOOLEAN_SWAPS)
        elif isinstance(node, cst.ComparisonTarget):
            self._swap("comparison", node, COMPARISON_SWAPS)
            self._swap("is", node, IS_SWAPS)
            self._swap("in", node, IN_SWAPS)
        elif isinstance(node, cst.Break):
            self._add("loop", node, cst.Continue(semicolon=node.semicolon))
        elif isinstance(node, cst.Continue):
            self._add("loop", node, cst.Break(semicolon=node.semicolon))
        elif isinstance(node, cst.Return) and node.value is not None and not _is_none(node.value):
            returned = node.with_changes(
                value=cst.Name("None"), whitespace_after_return=cst.SimpleWhitespace(" ")
            )
            self._add("return", node, returned)
        elif isinstance(node, cst.Lambda):
            body = cst.Integer("0") if _is_none(node.body) else cst.Name("None")
            self._add("lambda", node, node.with_changes(body=body))
        elif isinstance(node, cst.Call):
            self._mutate_call(node)
        elif isinstance(node, cst.FunctionDef | cst.ClassDef):
            for decorator in node.decorators:
                if _last_name(decorator.decorator) in TYPING_DECORATORS:
                    continue
                kept = [other for other in node.decorators if other is not decorator]
                self._add("decorator", node, node.with_changes(decorators=kept), decorator)
        elif isinstance(node, cst.Match) and len(node.cases) > 1:
            for case in node.cases:
                kept_cases = [other for other in node.cases if other is not case]
                self._add("match", node, node.with_changes(cases=kept_cases), case)
        elif isinstance(node, cst.IfExp):
            test = node.test.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
            for operator, literal in ((cst.And(), "False"), (cst.Or(), "True")):
                forced = cst.BooleanOperation(left=test, operator=operator, right=cst.Name(literal))
                self._add("ifexp", node, node.with_changes(test=forced))

    def _swap(
        self,
        operator: str,
        node: cst.BinaryOperation
        | cst.UnaryOperation
        | cst.BooleanOperation
        | cst.ComparisonTarget
        | cst.AugAssign,
        swaps: dict[type[cst.CSTNode], type[cst.CSTNode]],
    ) -> None:
        new_type = swaps.get(type(node.operator))
        if new_type is not None:
            self._add(
                operator, node, node.with_changes(operator=_swap_node(node.operator, new_type))
            )

    def _mutate_call(self, node: cst.Call) -> None:
        name = _last_name(node.func)
        if name == "cast":
            return  # `cast(T, value)` is `value` at runtime; the type is left alone.
        if name == "deepcopy":
            func = (
                node.func.with_changes(value="copy")
                if isinstance(node.func, cst.Name)
                else node.func.with_changes(attr=cst.Name("copy"))
            )
            self._add("deepcopy", node, node.with_changes(func=func))
        if isinstance(node.func, cst.Attribute):
            swapped = STRING_METHOD_SWAPS.get(node.func.attr.value)
            keywords = {arg.keyword.value for arg in node.args if arg.keyword is not None}
            bounded = len(node.args) == 2 or "maxsplit" in keywords
            if swapped is None and bounded:
                swapped = BOUNDED_SPLIT_SWAPS.get(node.func.attr.value)
            if swapped is not None:
                attr = node.func.attr.with_changes(value=swapped)
                self._add(
                    "str_method", node, node.with_changes(func=node.func.with_changes(attr=attr))
                )
        args = list(node.args)
        if name == "dict":
            for index, arg in enumerate(args):
                if arg.keyword is None:
                    break
                renamed = arg.with_changes(
                    keyword=arg.keyword.with_changes(value=f"{arg.keyword.value}XX")
                )
                self._add(
                    "dict_kwarg",
                    node,
                    node.with_changes(args=[*args[:index], renamed, *args[index + 1 :]]),
                    arg,
                )
        for index, arg in enumerate(args):
            if arg.star == "" and not _is_none(arg.value):
                nulled = arg.with_changes(value=cst.Name("None"))
                self._add(
                    "arg_none",
                    node,
                    node.with_changes(args=[*args[:index], nulled, *args[index + 1 :]]),
                    arg,
                )
        if len(args) > 1:
            for index, arg in enumerate(args):
                self._add(
                    "arg_removal",
                    node,
                    node.with_changes(args=[*args[:index], *args[index + 1 :]]),
                    arg,
                )


# ---------------------------------------------------------------------------------------------
# Mutants
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Mutant:
    id: str
    module: str
    path: str  # relative to the repository root
    line: int
    lines: tuple[int, int]  # the statement lines whose coverage selects the tests
    scope_lines: tuple[int, int] | None  # the enclosing def: the next place to look
    operator: str
    site: Site
    source: str  # the module's original text
    _code: str | None = None

    @property
    def code(self) -> str:
        """The whole mutated module (generated on first use)."""
        if self._code is None:
            module = _parsed_modules[self.path]
            mutated = module.deep_replace(self.site.node, self.site.replacement)
            self._code = cst.ensure_type(mutated, cst.Module).code
        return self._code

    def diff_line(self) -> str:
        """The change on one line: `old -> new`."""
        old, new = _changed_lines(self.source, self.code)
        return f"{_clip(old)}  ->  {_clip(new) if new else '(removed)'}"

    def unified_diff(self) -> str:
        return "".join(
            difflib.unified_diff(
                self.source.splitlines(keepends=True),
                self.code.splitlines(keepends=True),
                f"a/{self.path}",
                f"b/{self.path}",
                n=1,
            )
        )


_parsed_modules: dict[str, cst.Module] = {}


def _changed_lines(before: str, after: str) -> tuple[str, str]:
    old_lines, new_lines = before.splitlines(), after.splitlines()
    matcher = difflib.SequenceMatcher(a=old_lines, b=new_lines, autojunk=False)
    for tag, a0, a1, b0, b1 in matcher.get_opcodes():
        if tag != "equal":
            old = " ".join(line.strip() for line in old_lines[a0:a1])
            new = " ".join(line.strip() for line in new_lines[b0:b1])
            return old, new
    return "", ""


def _clip(text: str, width: int = 110) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def package_modules(root: Path) -> list[Path]:
    return sorted(
        path for path in (root / PACKAGE).glob("*.py") if path.stem not in SKIPPED_MODULES
    )


def find_mutants(root: Path) -> list[Mutant]:
    """Every mutant of every module under `root`, in a stable order with stable ids."""
    mutants: list[Mutant] = []
    for path in package_modules(root):
        source = path.read_text(encoding="utf-8")
        relative = path.relative_to(root).as_posix()
        wrapper = MetadataWrapper(cst.parse_module(source))
        _parsed_modules[relative] = wrapper.module
        pragma_lines = frozenset(
            number for number, text in enumerate(source.splitlines(), 1) if PRAGMA.search(text)
        )
        finder = MutationFinder(path.stem, pragma_lines)
        wrapper.visit(finder)
        counters: dict[tuple[str, str], int] = defaultdict(int)
        for site in finder.sites:
            key = (site.scope, site.operator)
            index = counters[key]
            counters[key] += 1
            mutants.append(
                Mutant(
                    id=f"{site.module}:{site.scope}:{site.operator}:{index}",
                    module=site.module,
                    path=relative,
                    line=site.line,
                    lines=(site.first_line, site.last_line),
                    scope_lines=site.scope_lines,
                    operator=site.operator,
                    site=site,
                    source=source,
                )
            )
    return mutants


def compiles(mutant: Mutant) -> bool:
    try:
        compile(mutant.code, mutant.path, "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    return True


def stratified_sample(mutants: Sequence[Mutant], size: int, seed: int) -> list[Mutant]:
    """`size` mutants, each module getting its share (largest remainder), seeded per module."""
    by_module: dict[str, list[Mutant]] = defaultdict(list)
    for mutant in mutants:
        by_module[mutant.module].append(mutant)
    total = len(mutants)
    if size >= total:
        return list(mutants)
    shares = {module: size * len(group) / total for module, group in by_module.items()}
    quotas = {module: math.floor(share) for module, share in shares.items()}
    leftover = size - sum(quotas.values())
    for module in sorted(shares, key=lambda name: (quotas[name] - shares[name], name))[:leftover]:
        quotas[module] += 1
    chosen: list[Mutant] = []
    for module in sorted(by_module):
        group = by_module[module]
        picked = random.Random(f"{seed}:{module}").sample(range(len(group)), quotas[module])
        chosen.extend(group[index] for index in sorted(picked))
    return chosen


def read_equivalents(path: Path) -> dict[str, str]:
    """`id  reason` per line; `#` starts a comment line."""
    equivalents: dict[str, str] = {}
    if not path.exists():
        return equivalents
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        mutant_id, _, reason = line.partition(" ")
        equivalents[mutant_id] = reason.strip() or "(no reason given)"
    return equivalents


# ---------------------------------------------------------------------------------------------
# The child side: pytest in a forked process
# ---------------------------------------------------------------------------------------------


class Recorder:
    """A pytest plugin: keeps only the selected tests and records what happened to each."""

    def __init__(
        self, selected: set[str] | None, known: set[str] | None, coverage: Any | None
    ) -> None:
        self.selected = selected
        self.known = known
        self.coverage = coverage
        self.outcomes: dict[str, str] = {}
        self.durations: dict[str, float] = defaultdict(float)
        self.collection_errors: list[str] = []

    def pytest_collection_modifyitems(
        self, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        if self.selected is None:
            return
        kept: list[pytest.Item] = []
        dropped: list[pytest.Item] = []
        for item in items:
            nodeid = item.nodeid
            # A test the baseline never saw (a parametrize id built from package data that the
            # mutant changed) runs too: nothing says it passed before, but it must pass now.
            new = self.known is not None and nodeid not in self.known
            (kept if nodeid in self.selected or new else dropped).append(item)
        items[:] = kept
        if dropped:
            config.hook.pytest_deselected(items=dropped)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.collection_errors.append(str(report.nodeid) or "<session>")

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        nodeid = report.nodeid
        self.durations[nodeid] += float(report.duration)
        previous = self.outcomes.get(nodeid)
        if report.failed:
            outcome = "failed"
        elif report.skipped and hasattr(report, "wasxfail"):
            outcome = "xfailed"
        elif report.skipped:
            outcome = "skipped"
        else:
            outcome = "passed"
        rank = {None: -1, "passed": 0, "skipped": 1, "xfailed": 2, "failed": 3}
        if rank[outcome] > rank[previous]:
            self.outcomes[nodeid] = outcome

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(
        self, item: pytest.Item, nextitem: pytest.Item | None
    ) -> Generator[None, object, object]:
        if self.coverage is not None:
            self.coverage.switch_context(item.nodeid)
        try:
            return (yield)
        finally:
            if self.coverage is not None:
                self.coverage.switch_context("")


def _set_parent_death_signal() -> None:
    """Linux: die with the fork server, so an interrupted run leaves no test running."""
    with contextlib.suppress(Exception):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def run_child(command: dict[str, Any]) -> None:
    """In a forked child: run pytest as `command` says and write the result as JSON."""
    root = Path(command["root"])
    result_path = Path(command["result"])
    log = os.open(command["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(log, 1)
    os.dup2(log, 2)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)

    with contextlib.suppress(ImportError):
        import hypothesis

        # Deterministic runs: no deadline (a loaded machine is not a bug), no example database
        # shared between mutants, the same examples for every mutant.
        hypothesis.settings.register_profile(
            "aizk-mutate",
            deadline=None,
            database=None,
            derandomize=True,
            print_blob=False,
            suppress_health_check=list(hypothesis.HealthCheck),
        )
        hypothesis.settings.load_profile("aizk-mutate")

    coverage = None
    if command.get("coverage"):
        import coverage as coverage_module

        coverage = coverage_module.Coverage(
            data_file=None, source=[str(root / PACKAGE)], config_file=False
        )
        coverage.start()
    selected = set(command["selected"]) if command.get("selected") is not None else None
    known = set(command["known"]) if command.get("known") is not None else None
    recorder = Recorder(selected, known, coverage)

    exit_code = int(pytest.main(list(command["args"]), plugins=[recorder]))
    result: dict[str, Any] = {
        "exit": exit_code,
        "outcomes": recorder.outcomes,
        "durations": dict(recorder.durations),
        "collection_errors": recorder.collection_errors,
    }
    package = sys.modules.get(PACKAGE)
    result["package_file"] = getattr(package, "__file__", None)
    if coverage is not None:
        coverage.stop()
        data = coverage.get_data()
        covered: dict[str, dict[str, list[str]]] = {}
        for measured in data.measured_files():
            with contextlib.suppress(ValueError):
                relative = Path(measured).resolve().relative_to(root.resolve()).as_posix()
                by_line = data.contexts_by_lineno(measured)
                covered[relative] = {str(line): sorted(set(ctx)) for line, ctx in by_line.items()}
        result["coverage"] = covered
    if command.get("report_modules"):
        result["modules"] = _third_party_modules(root)
    sys.stdout.flush()
    sys.stderr.flush()
    temporary = result_path.with_suffix(".tmp")
    temporary.write_text(json.dumps(result), encoding="utf-8")
    temporary.replace(result_path)


def _third_party_modules(root: Path) -> list[str]:
    """Names of the loaded modules that come from outside the repository: worth preloading."""
    names = []
    resolved_root = root.resolve()
    own = (PACKAGE, "tests", "examples", "bench", "conftest", "corpus", "__main__", "__mp_main__")
    for name, module in list(sys.modules.items()):
        if name.split(".")[0] in own or "__main__" in name or module is None:
            continue
        file = getattr(module, "__file__", None)
        if file is not None:
            with contextlib.suppress(OSError, ValueError):
                if Path(file).resolve().is_relative_to(resolved_root):
                    continue
        names.append(name)
    return names


# ---------------------------------------------------------------------------------------------
# The fork server (one per worker)
# ---------------------------------------------------------------------------------------------


class ForkServer:
    """Reads JSON commands on stdin, answers one JSON line per command on a private fd."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.child: int | None = None
        protocol_fd = os.dup(1)
        os.dup2(2, 1)  # anything a preloaded module prints goes to stderr, not the protocol
        self.protocol = os.fdopen(protocol_fd, "w", buffering=1, encoding="utf-8")

    def serve(self) -> None:
        signal.signal(signal.SIGTERM, self._terminate)
        signal.signal(signal.SIGINT, self._terminate)
        while True:
            line = sys.stdin.readline()
            if not line:
                break
            command = json.loads(line)
            if command["cmd"] == "preload":
                reply = self._preload(command["modules"])
            else:
                reply = self._run(command)
            self.protocol.write(json.dumps(reply) + "\n")

    def _terminate(self, signum: int, frame: object) -> None:
        self._kill_child()
        os._exit(1)

    def _kill_child(self) -> None:
        if self.child is not None:
            with contextlib.suppress(OSError):
                os.killpg(self.child, signal.SIGKILL)

    def _preload(self, modules: list[str]) -> dict[str, Any]:
        loaded = 0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for name in modules:
                if name in sys.modules:
                    loaded += 1
                    continue
                try:
                    importlib.import_module(name)
                except BaseException:
                    continue
                loaded += 1
        return {"status": "ok", "loaded": loaded}

    def _run(self, command: dict[str, Any]) -> dict[str, Any]:
        started = time.monotonic()
        pid = os.fork()
        if pid == 0:
            status = 0
            try:
                os.setpgid(0, 0)
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                signal.signal(signal.SIGINT, signal.SIG_DFL)
                _set_parent_death_signal()
                run_child(command)
            except BaseException:
                status = 70
                with contextlib.suppress(Exception):
                    import traceback

                    traceback.print_exc()
            finally:
                with contextlib.suppress(Exception):
                    sys.stdout.flush()
                    sys.stderr.flush()
                os._exit(status)
        self.child = pid
        with contextlib.suppress(OSError):
            os.setpgid(pid, pid)
        deadline = started + float(command["timeout"])
        timed_out = False
        while True:
            # WNOWAIT: see the exit without reaping, so the group id stays ours to kill.
            exited = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            if exited is not None:
                break
            if time.monotonic() > deadline:
                timed_out = True
                break
            time.sleep(0.01)
        self._kill_child()  # the child's leftovers, or the child itself on a timeout
        _, wait_status = os.waitpid(pid, 0)
        self.child = None
        seconds = time.monotonic() - started
        if timed_out:
            return {"status": "timeout", "seconds": seconds}
        code = os.waitstatus_to_exitcode(wait_status)
        return {"status": "done" if code == 0 else "crashed", "code": code, "seconds": seconds}


def serve_forever(root: str) -> None:
    os.chdir(root)
    sys.path.insert(0, root)
    sys.dont_write_bytecode = True
    ForkServer(Path(root)).serve()


# ---------------------------------------------------------------------------------------------
# The parent side: workers, baseline, runs
# ---------------------------------------------------------------------------------------------


class WorkerGoneError(RuntimeError):
    pass


@dataclasses.dataclass
class RunResult:
    status: str  # done | timeout | crashed
    seconds: float
    exit: int | None = None
    outcomes: dict[str, str] = dataclasses.field(default_factory=dict)
    durations: dict[str, float] = dataclasses.field(default_factory=dict)
    collection_errors: list[str] = dataclasses.field(default_factory=list)
    package_file: str | None = None
    coverage: dict[str, dict[str, list[str]]] = dataclasses.field(default_factory=dict)
    modules: list[str] = dataclasses.field(default_factory=list)
    code: int | None = None


class Worker:
    """A private copy of the snapshot and the fork server that runs pytest in it."""

    def __init__(self, index: int, root: Path, snapshot: Path) -> None:
        self.index = index
        self.root = root
        shutil.copytree(snapshot, root, symlinks=True)
        self.log = root / ".mutate-last.log"
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(root), env.get("PYTHONPATH", "")]).rstrip(
            os.pathsep
        )
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env.pop("PYTEST_ADDOPTS", None)
        self.stderr = (root / ".mutate-server.log").open("w", encoding="utf-8")
        self.process = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--_serve", str(root)],
            cwd=root,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            text=True,
            encoding="utf-8",
            start_new_session=True,  # Ctrl-C reaches the tool, which then stops the servers
        )

    def _ask(self, command: dict[str, Any]) -> dict[str, Any]:
        stdin, stdout = self.process.stdin, self.process.stdout
        assert stdin is not None
        assert stdout is not None
        try:
            stdin.write(json.dumps(command) + "\n")
            stdin.flush()
        except (BrokenPipeError, OSError) as error:
            raise WorkerGoneError(f"worker {self.index} stopped") from error
        line = stdout.readline()
        if not line:
            raise WorkerGoneError(
                f"worker {self.index} stopped (see {self.root / '.mutate-server.log'})"
            )
        reply: dict[str, Any] = json.loads(line)
        return reply

    def preload(self, modules: list[str]) -> int:
        return int(self._ask({"cmd": "preload", "modules": modules})["loaded"])

    def run(
        self,
        args: Sequence[str],
        *,
        timeout: float,
        selected: Iterable[str] | None = None,
        known: Iterable[str] | None = None,
        mutant: Mutant | None = None,
        coverage: bool = False,
        report_modules: bool = False,
    ) -> RunResult:
        result_path = self.root / ".mutate-result.json"
        result_path.unlink(missing_ok=True)
        target = self.root / mutant.path if mutant is not None else None
        if target is not None and mutant is not None:
            target.write_text(mutant.code, encoding="utf-8")
            shutil.rmtree(target.parent / "__pycache__", ignore_errors=True)
        try:
            reply = self._ask(
                {
                    "cmd": "run",
                    "root": str(self.root),
                    "args": list(args),
                    "timeout": timeout,
                    "selected": sorted(selected) if selected is not None else None,
                    "known": sorted(known) if known is not None else None,
                    "coverage": coverage,
                    "report_modules": report_modules,
                    "result": str(result_path),
                    "log": str(self.log),
                }
            )
        finally:
            if target is not None and mutant is not None:
                target.write_text(mutant.source, encoding="utf-8")
        result = RunResult(status=reply["status"], seconds=float(reply["seconds"]))
        result.code = reply.get("code")
        if reply["status"] == "done" and result_path.exists():
            data = json.loads(result_path.read_text(encoding="utf-8"))
            result.exit = int(data["exit"])
            result.outcomes = data["outcomes"]
            result.durations = data["durations"]
            result.collection_errors = data["collection_errors"]
            result.package_file = data.get("package_file")
            result.coverage = data.get("coverage", {})
            result.modules = data.get("modules", [])
        elif reply["status"] == "done":
            result.status = "crashed"
        return result

    def log_tail(self, lines: int = 30) -> str:
        with contextlib.suppress(OSError):
            return "\n".join(
                self.log.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:]
            )
        return ""

    def terminate(self) -> None:
        """Stop the fork server (it kills its running test first); a reader then sees EOF."""
        if self.process.poll() is None:
            with contextlib.suppress(OSError):
                self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def stop(self) -> None:
        self.terminate()
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        self.stderr.close()


@dataclasses.dataclass
class Baseline:
    good: set[str]  # passed (or xfailed) in both baseline runs: the tests a mutant must pass
    known: set[str]  # every test id the baseline collected
    excluded: dict[str, str]  # baseline failures set aside, with what happened
    collection_errors: list[str]
    durations: dict[str, float]
    overhead: float  # a run's cost beyond its tests: start-up and collection
    full_seconds: float
    coverage: dict[str, dict[int, set[str]]]  # file -> line -> test ids (empty id: import time)
    module_tests: dict[str, set[str]]  # file -> every test covering some line of it
    seconds: float


def _check_package_file(result: RunResult, worker: Worker) -> None:
    if result.package_file is None:
        return
    if not Path(result.package_file).resolve().is_relative_to(worker.root.resolve()):
        raise SystemExit(
            f"error: the tests imported {PACKAGE} from {result.package_file}, not from the "
            f"worker's copy {worker.root}; mutants would never be seen"
        )


def run_baseline(workers: Sequence[Worker], timeout: float, say: Callable[[str], None]) -> Baseline:
    started = time.monotonic()
    first = workers[0]
    args = [*PYTEST_COMMON, "--continue-on-collection-errors"]
    say("baseline 1/2: the whole non-slow suite under coverage (one context per test) ...")
    covered_run = first.run(args, timeout=timeout, coverage=True, report_modules=True)
    if covered_run.status != "done":
        raise SystemExit(
            f"error: the coverage baseline {covered_run.status}; log tail:\n{first.log_tail()}"
        )
    _check_package_file(covered_run, first)
    say(
        f"  {len(covered_run.outcomes)} tests in {covered_run.seconds:.1f}s; "
        f"preloading {len(covered_run.modules)} third-party modules into {len(workers)} worker(s)"
    )
    with ThreadPoolExecutor(max_workers=len(workers)) as pool:
        list(pool.map(lambda worker: worker.preload(covered_run.modules), workers))
    say("baseline 2/2: the whole non-slow suite as mutants will run it (no coverage) ...")
    warm_run = first.run(args, timeout=timeout)
    if warm_run.status != "done":
        raise SystemExit(f"error: the baseline {warm_run.status}; log tail:\n{first.log_tail()}")
    _check_package_file(warm_run, first)

    known = set(covered_run.outcomes) | set(warm_run.outcomes)
    good: set[str] = set()
    excluded: dict[str, str] = {}
    for nodeid in sorted(known):
        cold, warm = covered_run.outcomes.get(nodeid), warm_run.outcomes.get(nodeid)
        if cold in {"passed", "xfailed"} and cold == warm:
            good.add(nodeid)
        elif "skipped" not in {cold, warm}:
            excluded[nodeid] = f"{cold or 'not run'} under coverage, {warm or 'not run'} without"
    collection_errors = sorted(set(covered_run.collection_errors) | set(warm_run.collection_errors))
    coverage: dict[str, dict[int, set[str]]] = {}
    module_tests: dict[str, set[str]] = {}
    for file, by_line in covered_run.coverage.items():
        lines = {int(line): set(contexts) for line, contexts in by_line.items()}
        coverage[file] = lines
        module_tests[file] = {test for tests in lines.values() for test in tests if test}
    durations = {nodeid: warm_run.durations.get(nodeid, 0.0) for nodeid in good}
    overhead = max(0.0, warm_run.seconds - sum(warm_run.durations.values()))
    return Baseline(
        good=good,
        known=known,
        excluded=excluded,
        collection_errors=collection_errors,
        durations=durations,
        overhead=overhead,
        full_seconds=warm_run.seconds,
        coverage=coverage,
        module_tests=module_tests,
        seconds=time.monotonic() - started,
    )


@dataclasses.dataclass
class Outcome:
    mutant: Mutant
    status: str  # killed | timeout | survived | equivalent | invalid
    stage: str  # covering (decided by the covering tests) | whole (went to the whole suite) | none
    tests: int
    seconds: float
    detail: str = ""
    uncovered: bool = False


def covering_tests(mutant: Mutant, baseline: Baseline) -> tuple[set[str] | None, bool]:
    """The tests to run first, and whether any test runs the mutated lines at all.

    `None` means the whole suite. Lines that only run at import get the tests that run their
    function (for a decorator or a default), else those that run any line of their module.
    """
    by_line = baseline.coverage.get(mutant.path, {})

    def tests_of(first: int, last: int) -> tuple[set[str], bool]:
        contexts: set[str] = set()
        executed = False
        for line in range(first, last + 1):
            if line in by_line:
                executed = True
                contexts |= by_line[line]
        return {test for test in contexts if test} & baseline.good, executed

    tests, executed = tests_of(*mutant.lines)
    if tests:
        return tests, True
    if not executed:
        return None, False
    if mutant.scope_lines is not None:
        tests, _ = tests_of(*mutant.scope_lines)
        if tests:
            return tests, True
    module_wide = baseline.module_tests.get(mutant.path, set()) & baseline.good
    return (module_wide or None), True


def _files_of(tests: Iterable[str]) -> list[str]:
    return sorted({test.split("::", 1)[0] for test in tests})


class Runner:
    def __init__(
        self,
        workers: Sequence[Worker],
        baseline: Baseline,
        *,
        timeout_factor: float,
        timeout_min: float,
    ) -> None:
        self.idle: list[Worker] = list(workers)
        self.lock = threading.Lock()
        self.available = threading.Semaphore(len(workers))
        self.baseline = baseline
        self.timeout_factor = timeout_factor
        self.timeout_min = timeout_min

    def _timeout(self, tests: Iterable[str]) -> float:
        expected = self.baseline.overhead + sum(self.baseline.durations.get(t, 0.0) for t in tests)
        return max(self.timeout_min, self.timeout_factor * expected)

    def _with_worker(self, job: Callable[[Worker], Outcome]) -> Outcome:
        self.available.acquire()
        with self.lock:
            worker = self.idle.pop()
        try:
            return job(worker)
        finally:
            with self.lock:
                self.idle.append(worker)
            self.available.release()

    def run(self, mutant: Mutant, tests: set[str], stage: str, uncovered: bool) -> Outcome:
        def job(worker: Worker) -> Outcome:
            args = [*PYTEST_COMMON, "-x", *_files_of(tests)]
            result = worker.run(
                args,
                timeout=self._timeout(tests),
                selected=tests,
                known=self.baseline.known,
                mutant=mutant,
            )
            status, detail = verdict(result)
            return Outcome(mutant, status, stage, len(tests), result.seconds, detail, uncovered)

        return self._with_worker(job)


def verdict(result: RunResult) -> tuple[str, str]:
    if result.status == "timeout":
        return "timeout", f"no result after {result.seconds:.1f}s"
    if result.status == "crashed":
        return "killed", f"the test process died (exit {result.code})"
    failed = [test for test, outcome in result.outcomes.items() if outcome == "failed"]
    if failed:
        return "killed", failed[0]
    if result.collection_errors:
        return "killed", f"collection error in {result.collection_errors[0]}"
    if result.exit == 0:
        return "survived", ""
    if result.exit == 5:
        return "killed", "no test collected"
    if result.exit == 4:
        return "killed", "pytest could not start (usage error, or the conftest failed to import)"
    return "killed", f"pytest exit code {result.exit}"


# ---------------------------------------------------------------------------------------------
# Reporting
# ---------------------------------------------------------------------------------------------

STATUSES: Final = ("killed", "timeout", "survived", "equivalent")


def module_table(outcomes: Sequence[Outcome]) -> list[dict[str, Any]]:
    rows: dict[str, dict[str, Any]] = {}
    for outcome in outcomes:
        if outcome.status == "invalid":
            continue
        row = rows.setdefault(
            outcome.mutant.module,
            {"module": outcome.mutant.module, "mutants": 0} | dict.fromkeys(STATUSES, 0),
        )
        row["mutants"] += 1
        row[outcome.status] += 1
    table = [rows[name] for name in sorted(rows)]
    total = {"module": "TOTAL", "mutants": 0} | dict.fromkeys(STATUSES, 0)
    for row in table:
        for key in ("mutants", *STATUSES):
            total[key] += row[key]
    for row in [*table, total]:
        scored = row["mutants"] - row["equivalent"]
        row["score"] = (row["killed"] + row["timeout"]) / scored if scored else None
    return [*table, total]


def format_table(table: Sequence[dict[str, Any]]) -> str:
    header = ("module", "mutants", "killed", "timeout", "survived", "equivalent", "score")
    width = max(len(header[0]), *(len(str(row["module"])) for row in table))
    lines = [f"{header[0]:<{width}}" + "".join(f"{name:>11}" for name in header[1:])]
    lines.append("-" * len(lines[0]))
    for row in table:
        if row["module"] == "TOTAL":
            lines.append("-" * len(lines[0]))
        score = "-" if row["score"] is None else f"{100 * row['score']:.1f}%"
        cells = [str(row[key]) for key in ("mutants", *STATUSES)] + [score]
        lines.append(f"{row['module']:<{width}}" + "".join(f"{cell:>11}" for cell in cells))
    return "\n".join(lines)


def outcome_json(outcome: Outcome) -> dict[str, Any]:
    mutant = outcome.mutant
    return {
        "id": mutant.id,
        "module": mutant.module,
        "file": mutant.path,
        "line": mutant.line,
        "operator": mutant.operator,
        "status": outcome.status,
        "stage": outcome.stage,
        "tests_run": outcome.tests,
        "seconds": round(outcome.seconds, 3),
        "detail": outcome.detail,
        "uncovered": outcome.uncovered,
        "diff": mutant.diff_line(),
        "unified_diff": mutant.unified_diff(),
    }


# ---------------------------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python tools/mutate.py",
        description=(
            "Mutation testing of aizk_integrations: mutate one thing at a time, run the tests "
            "that cover it, re-run survivors on the whole non-slow suite, report the score."
        ),
    )
    which = parser.add_mutually_exclusive_group()
    which.add_argument(
        "--sample", type=int, metavar="N", help="run N mutants, stratified per module"
    )
    which.add_argument("--all", action="store_true", help="run every mutant")
    which.add_argument(
        "--id", action="append", default=[], metavar="ID", help="run this mutant (repeatable)"
    )
    parser.add_argument("--seed", type=int, default=1, help="sampling seed (default 1)")
    parser.add_argument(
        "--module",
        action="append",
        default=[],
        metavar="NAME",
        help="only this module, e.g. _scopes (repeatable)",
    )
    parser.add_argument(
        "-j",
        "--jobs",
        type=int,
        default=os.cpu_count() or 1,
        help="parallel workers (default: cpu count)",
    )
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the results as JSON")
    parser.add_argument("--list", action="store_true", help="list the selected mutants and exit")
    parser.add_argument(
        "--equivalents", type=Path, default=DEFAULT_EQUIVALENTS, help="the equivalent-mutants file"
    )
    parser.add_argument(
        "--timeout-factor",
        type=float,
        default=3.0,
        help="timeout = factor x the tests' baseline time (3)",
    )
    parser.add_argument(
        "--timeout-min", type=float, default=20.0, help="smallest per-mutant timeout, s (20)"
    )
    parser.add_argument(
        "--baseline-timeout", type=float, default=1800.0, help="per baseline run, s (1800)"
    )
    parser.add_argument(
        "--fail-under", type=float, metavar="PCT", help="exit 1 if the total score is lower"
    )
    parser.add_argument(
        "--keep-workdir", action="store_true", help="keep the temporary copies (debugging)"
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="no per-mutant progress lines")
    return parser.parse_args(argv)


def _module_name(name: str) -> str:
    name = name.removesuffix(".py").replace("/", ".")
    return name.rsplit(".", 1)[-1]


def select_mutants(mutants: list[Mutant], args: argparse.Namespace) -> list[Mutant]:
    if args.module:
        wanted = {_module_name(name) for name in args.module}
        unknown = wanted - {mutant.module for mutant in mutants}
        if unknown:
            raise SystemExit(f"error: no mutants in module(s): {', '.join(sorted(unknown))}")
        mutants = [mutant for mutant in mutants if mutant.module in wanted]
    if args.id:
        by_id = {mutant.id: mutant for mutant in mutants}
        missing = [mutant_id for mutant_id in args.id if mutant_id not in by_id]
        if missing:
            raise SystemExit(f"error: unknown mutant id(s): {', '.join(missing)}")
        return [by_id[mutant_id] for mutant_id in args.id]
    if args.all:
        return mutants
    if args.sample is not None:
        return stratified_sample(mutants, args.sample, args.seed)
    raise SystemExit("error: say which mutants: --sample N, --all or --id ID (see --help)")


@contextlib.contextmanager
def workdir(keep: bool) -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="aizk-mutate-"))
    try:
        yield path
    finally:
        if keep:
            print(f"work directory kept: {path}", file=sys.stderr)
        else:
            shutil.rmtree(path, ignore_errors=True)


def stop_all(workers: Iterable[Worker]) -> None:
    for worker in workers:
        worker.terminate()


def _raise_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--_serve"]:
        serve_forever(argv[1])
        return 0
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _raise_interrupt)
    print_lock = threading.Lock()

    def say(message: str) -> None:
        with print_lock:
            print(message, file=sys.stderr, flush=True)

    started = time.monotonic()
    with workdir(args.keep_workdir) as work:
        snapshot = work / "snapshot"
        shutil.copytree(
            REPO_ROOT, snapshot, symlinks=True, ignore=shutil.ignore_patterns(*COPY_IGNORE)
        )
        everything = find_mutants(snapshot)
        chosen = select_mutants(everything, args)
        equivalents = read_equivalents(args.equivalents)
        known_ids = {mutant.id for mutant in everything}
        stale = sorted(set(equivalents) - known_ids)
        if args.list:
            for mutant in chosen:
                mark = "  [equivalent]" if mutant.id in equivalents else ""
                print(f"{mutant.id}  {mutant.path}:{mutant.line}  {mutant.diff_line()}{mark}")
            print(f"{len(chosen)} of {len(everything)} mutants", file=sys.stderr)
            return 0
        say(
            f"{len(everything)} mutants in {len({m.module for m in everything})} modules; "
            f"running {len(chosen)} with {args.jobs} worker(s)"
        )
        outcomes: list[Outcome] = []
        to_run: list[Mutant] = []
        for mutant in chosen:
            if mutant.id in equivalents:
                outcomes.append(
                    Outcome(mutant, "equivalent", "none", 0, 0.0, equivalents[mutant.id])
                )
            elif not compiles(mutant):
                outcomes.append(Outcome(mutant, "invalid", "none", 0, 0.0, "does not compile"))
            else:
                to_run.append(mutant)
        jobs = max(1, min(args.jobs, len(to_run)))
        workers: list[Worker] = []
        interrupted = False
        baseline: Baseline | None = None
        mutation_seconds = 0.0
        try:
            for index in range(jobs):
                workers.append(Worker(index, work / f"worker{index}", snapshot))
            baseline = run_baseline(workers, args.baseline_timeout, say)
            report_baseline(baseline, say)
            if not baseline.good:
                raise SystemExit("error: no test passes in the baseline; nothing can kill a mutant")
            runner = Runner(
                workers, baseline, timeout_factor=args.timeout_factor, timeout_min=args.timeout_min
            )
            mutation_started = time.monotonic()
            try:
                run_mutants(
                    runner,
                    to_run,
                    baseline,
                    jobs,
                    say,
                    outcomes,
                    quiet=args.quiet,
                    on_interrupt=lambda: stop_all(workers),
                )
            finally:
                mutation_seconds = time.monotonic() - mutation_started
        except (KeyboardInterrupt, WorkerGoneError) as error:
            interrupted = True
            reason = "interrupted" if isinstance(error, KeyboardInterrupt) else str(error)
            say(f"{reason}: stopping the workers; the results so far follow")
        finally:
            for worker in workers:
                worker.stop()
        if baseline is None:
            print("stopped before the baseline finished: no results", file=sys.stderr)
            return 130 if interrupted else 1
        finished = [outcome for outcome in outcomes if outcome.status != "invalid"]
        dropped = len(outcomes) - len(finished)
        if dropped:
            say(f"{dropped} mutant(s) did not compile and were dropped")
        ran = [outcome for outcome in finished if outcome.status != "equivalent"]
        table = module_table(finished)
        print_report(table, finished, stale, interrupted, args, len(everything))
        per_minute = 60 * len(ran) / mutation_seconds if mutation_seconds else 0.0
        timing = {
            "total_seconds": round(time.monotonic() - started, 1),
            "baseline_seconds": round(baseline.seconds, 1),
            "whole_suite_seconds": round(baseline.full_seconds, 1),
            "mutation_seconds": round(mutation_seconds, 1),
            "mutants_run": len(ran),
            "mutants_per_minute": round(per_minute, 1),
            "workers": jobs,
        }
        print(
            f"\n{len(ran)} mutants in {mutation_seconds:.0f}s ({per_minute:.1f} mutants/minute, "
            f"{jobs} worker(s)) after a {baseline.seconds:.0f}s baseline; "
            f"{timing['total_seconds']:.0f}s in all"
        )
        if args.json:
            write_json(args, table, outcomes, baseline, stale, timing, interrupted, len(everything))
        if interrupted:
            return 130
        total_score = table[-1]["score"]
        if (
            args.fail_under is not None
            and total_score is not None
            and 100 * total_score < args.fail_under
        ):
            return 1
    return 0


def report_baseline(baseline: Baseline, say: Callable[[str], None]) -> None:
    say(
        f"  {len(baseline.good)} tests pass in both baseline runs; whole suite "
        f"{baseline.full_seconds:.1f}s warm; baseline took {baseline.seconds:.1f}s"
    )
    if baseline.collection_errors:
        say(f"  set aside, files that do not collect ({len(baseline.collection_errors)}):")
        for file in baseline.collection_errors:
            say(f"    {file}")
    if baseline.excluded:
        say(f"  set aside, tests failing in the baseline ({len(baseline.excluded)}):")
        for nodeid, why in baseline.excluded.items():
            say(f"    {nodeid}  ({why})")


def run_mutants(
    runner: Runner,
    mutants: Sequence[Mutant],
    baseline: Baseline,
    jobs: int,
    say: Callable[[str], None],
    done: list[Outcome],
    *,
    quiet: bool,
    on_interrupt: Callable[[], None],
) -> None:
    """Covering tests first; survivors again on the whole suite. Appends to `done` as it goes."""
    counter = 0
    total = len(mutants)

    def progress(outcome: Outcome) -> None:
        nonlocal counter
        counter += 1
        if not quiet:
            note = f" ({outcome.detail})" if outcome.status != "survived" and outcome.detail else ""
            say(
                f"[{counter:>{len(str(total))}}/{total}] {outcome.status:<8} {outcome.mutant.id}  "
                f"{outcome.stage} {outcome.tests} tests {outcome.seconds:.1f}s{_clip(note, 90)}"
            )

    def first_stage(mutant: Mutant) -> Outcome:
        tests, executed = covering_tests(mutant, baseline)
        if tests is None:
            return runner.run(mutant, baseline.good, "whole", not executed)
        outcome = runner.run(mutant, tests, "covering", False)
        if outcome.status != "survived":
            return outcome
        # The covering tests just passed; the rest of the suite decides.
        rest = baseline.good - tests
        if not rest:
            return outcome
        again = runner.run(mutant, rest, "whole", False)
        again.seconds += outcome.seconds
        again.tests += outcome.tests
        return again

    pool = ThreadPoolExecutor(max_workers=jobs)
    pending: set[Future[Outcome]] = {pool.submit(first_stage, mutant) for mutant in mutants}
    try:
        while pending:
            finished, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
            for future in finished:
                outcome = future.result()
                done.append(outcome)
                progress(outcome)
    except BaseException:
        for future in pending:
            future.cancel()
        on_interrupt()  # stop the workers first, so that running jobs return at once
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def print_report(
    table: Sequence[dict[str, Any]],
    outcomes: Sequence[Outcome],
    stale: Sequence[str],
    interrupted: bool,
    args: argparse.Namespace,
    population: int,
) -> None:
    how = (
        f"sample of {args.sample} (seed {args.seed}, stratified per module)"
        if args.sample is not None
        else ("chosen ids" if args.id else "all mutants")
    )
    print(
        f"\nMutation score, {how}, of {population} mutants"
        + (" (INTERRUPTED: partial results)" if interrupted else "")
    )
    print("score = (killed + timeout) / (mutants - equivalent)\n")
    print(format_table(table))
    survivors = sorted(
        (outcome for outcome in outcomes if outcome.status == "survived"),
        key=lambda outcome: (outcome.mutant.path, outcome.mutant.line, outcome.mutant.id),
    )
    if survivors:
        print(f"\nSurvivors ({len(survivors)}): each passed the whole non-slow suite")
        for outcome in survivors:
            mutant = outcome.mutant
            flag = "  [no test runs this line]" if outcome.uncovered else ""
            print(f"  {mutant.id}  {mutant.path}:{mutant.line}{flag}")
            print(f"      {mutant.diff_line()}")
    equivalent = [outcome for outcome in outcomes if outcome.status == "equivalent"]
    if equivalent:
        print(f"\nEquivalent, not scored ({len(equivalent)}):")
        for outcome in equivalent:
            print(
                f"  {outcome.mutant.id}  {outcome.mutant.path}:{outcome.mutant.line}  "
                f"{outcome.detail}"
            )
    if stale:
        print(
            f"\nStale entries in {args.equivalents.name} (no such mutant any more): "
            + ", ".join(stale)
        )


def write_json(
    args: argparse.Namespace,
    table: Sequence[dict[str, Any]],
    outcomes: Sequence[Outcome],
    baseline: Baseline | None,
    stale: Sequence[str],
    timing: dict[str, Any],
    interrupted: bool,
    population: int,
) -> None:
    document = {
        "interrupted": interrupted,
        "selection": {
            "sample": args.sample,
            "all": args.all,
            "ids": args.id,
            "seed": args.seed,
            "modules": args.module,
            "population": population,
        },
        "timing": timing,
        "baseline": None
        if baseline is None
        else {
            "good_tests": len(baseline.good),
            "excluded_tests": baseline.excluded,
            "collection_errors": baseline.collection_errors,
            "whole_suite_seconds": round(baseline.full_seconds, 2),
        },
        "modules": table,
        "mutants": [outcome_json(outcome) for outcome in outcomes],
        "stale_equivalents": list(stale),
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
