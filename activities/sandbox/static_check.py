"""The first layer: reject code by its syntax tree, before any of it runs.

Errors are one line naming the file, the line and the construct, e.g.
"reward_fn.py line 3: import of 'os' is not allowed (allowed: math, numpy, ...)".

Names are checked wherever they can be defined or read: variables, parameters, function and
class names, import aliases, except/match captures, global/nonlocal, keyword arguments,
attribute reads and writes, annotations, string literals (a dunder string is how a name gets
into type() or **kwargs). A private attribute (`x._y`) may only be read from `self`/`cls` where
that name is the first parameter of a method written in a class body and is never rebound.
"""

from __future__ import annotations

import ast
import difflib
import re
import string
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NoReturn

from activities.sandbox.policy import (
    ALLOWED_DUNDER_ATTRIBUTES,
    ALLOWED_DUNDER_METHODS,
    ALLOWED_DUNDER_STRINGS,
    ALLOWED_MODULES,
    FORBIDDEN_ATTRIBUTES,
    FORBIDDEN_NAMES,
    MODULE_EXPORTS,
)

MAX_SOURCE_BYTES = 200_000
_DUNDER = re.compile(r"__\w+__")
_SELF_NAMES = ("self", "cls")
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_NAMED = (*_FUNCTIONS, ast.ClassDef, ast.ExceptHandler, ast.MatchAs, ast.MatchStar)


class SandboxViolation(ValueError):
    """Generated code that uses something the sandbox does not allow; one line."""


def _is_dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__") and len(name) > 4


def _is_private(name: str) -> bool:
    return name.startswith("_") and not _is_dunder(name)


def _allowed_hint() -> str:
    return ", ".join(sorted(m for m in ALLOWED_MODULES if m != "__future__"))


def _exports(module: str) -> frozenset[str]:
    """What generated code gets from a module's namespace, submodule namespaces included."""
    children = {m[len(module) + 1 :] for m in ALLOWED_MODULES if m.startswith(module + ".")}
    return MODULE_EXPORTS[module] | {c for c in children if "." not in c}


# --- scopes: which `self` is the method's own --------------------------------------------


@dataclass
class _Scope:
    kind: str  # module, function, class, comprehension
    bound: Counter[str] = field(default_factory=Counter)
    trusted: frozenset[str] = frozenset()  # self/cls bound only as a method's first parameter


def _params(args: ast.arguments) -> list[ast.arg]:
    out = [*args.posonlyargs, *args.args, *args.kwonlyargs]
    return out + [a for a in (args.vararg, args.kwarg) if a is not None]


def _walrus_targets(node: ast.AST, bound: Counter[str]) -> None:
    """`:=` inside a comprehension binds in the enclosing function (not in nested defs)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (*_FUNCTIONS, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(child, ast.NamedExpr) and isinstance(child.target, ast.Name):
            bound[child.target.id] += 1
        _walrus_targets(child, bound)


def _collect(node: ast.AST, bound: Counter[str]) -> None:
    """Names bound in the current scope by `node` and its children (not in nested scopes)."""
    if isinstance(node, (*_FUNCTIONS, ast.ClassDef)):
        bound[node.name] += 1
        header: list[ast.AST] = list(node.decorator_list)
        if isinstance(node, ast.ClassDef):
            header += [*node.bases, *(k.value for k in node.keywords)]
        else:
            header += [*node.args.defaults, *(d for d in node.args.kw_defaults if d)]
            header += [a.annotation for a in _params(node.args) if a.annotation]
            header += [node.returns] if node.returns else []
        for part in header:
            _collect(part, bound)
        return
    if isinstance(node, ast.Lambda):
        for d in [*node.args.defaults, *(d for d in node.args.kw_defaults if d)]:
            _collect(d, bound)
        return
    if isinstance(node, _COMPREHENSIONS):
        _collect(node.generators[0].iter, bound)
        _walrus_targets(node, bound)
        return
    if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
        bound[node.id] += 1
    elif isinstance(node, ast.alias):
        bound[(node.asname or node.name).partition(".")[0]] += 1
    elif isinstance(node, (ast.Global, ast.Nonlocal)):
        bound.update(node.names)
    elif isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and node.name:
        bound[node.name] += 1
    elif isinstance(node, ast.MatchMapping) and node.rest:
        bound[node.rest] += 1
    for child in ast.iter_child_nodes(node):
        _collect(child, bound)


def _scope_of(node: ast.AST, is_method: bool = False) -> _Scope:
    bound: Counter[str] = Counter()
    if isinstance(node, _COMPREHENSIONS):
        for gen in node.generators:
            _collect(gen.target, bound)
        return _Scope("comprehension", bound)
    if isinstance(node, ast.ClassDef):
        for stmt in node.body:
            _collect(stmt, bound)
        return _Scope("class", bound)
    if isinstance(node, ast.Lambda):
        bound.update(a.arg for a in _params(node.args))
        _collect(node.body, bound)
        return _Scope("function", bound)
    assert isinstance(node, _FUNCTIONS), type(node).__name__  # the only other scope
    bound.update(a.arg for a in _params(node.args))
    for stmt in node.body:
        _collect(stmt, bound)
    trusted: frozenset[str] = frozenset()
    positional = [*node.args.posonlyargs, *node.args.args]
    static = any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in node.decorator_list)
    if is_method and not static and positional and positional[0].arg in _SELF_NAMES:
        first = positional[0].arg
        rebound = any(isinstance(n, ast.Nonlocal) and first in n.names for n in ast.walk(node))
        if bound[first] == 1 and not rebound:
            trusted = frozenset({first})
    return _Scope("function", bound, trusted)


def _module_aliases(tree: ast.Module) -> dict[str, str]:
    """Names bound by imports only, and the allowed module each one stands for."""
    aliases: dict[str, set[str]] = {}
    other: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                name = a.asname or a.name.partition(".")[0]
                aliases.setdefault(name, set()).add(a.name if a.asname else name)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for a in node.names:
                aliases.setdefault(a.asname or a.name, set()).add(f"{node.module}.{a.name}")
        elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            other.add(node.id)
        elif isinstance(node, ast.arg):
            other.add(node.arg)
        elif isinstance(node, _NAMED) and node.name:
            other.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            other.add(node.rest)
    return {
        name: next(iter(mods))
        for name, mods in aliases.items()
        if len(mods) == 1 and name not in other and next(iter(mods)) in ALLOWED_MODULES
    }


# --- the checker ---------------------------------------------------------------------------


class _Checker(ast.NodeVisitor):
    def __init__(self, filename: str, aliases: dict[str, str]) -> None:
        self.filename = filename
        self.aliases = aliases
        self.scopes: list[_Scope] = [_Scope("module")]
        self.methods: set[int] = set()  # ids of functions written directly in a class body

    def fail(self, node: ast.AST, what: str) -> NoReturn:
        line = getattr(node, "lineno", "?")
        raise SandboxViolation(f"{self.filename} line {line}: {what}")

    # names ------------------------------------------------------------------------------

    def _bind(self, node: ast.AST, name: str) -> None:
        """A name being defined: variable, parameter, function, class, alias, capture."""
        if name in FORBIDDEN_NAMES:
            self.fail(node, f"'{name}' is not allowed")
        if _is_dunder(name):
            self.fail(node, f"the name '{name}' is not allowed")

    def visit_Name(self, node: ast.Name) -> None:
        if not isinstance(node.ctx, ast.Load):
            self._bind(node, node.id)
        if node.id in FORBIDDEN_NAMES:
            self.fail(node, f"'{node.id}' is not allowed")
        if _is_dunder(node.id) and node.id != "__name__":
            self.fail(node, f"the name '{node.id}' is not allowed")

    def visit_Global(self, node: ast.Global | ast.Nonlocal) -> None:
        for name in node.names:
            self._bind(node, name)

    visit_Nonlocal = visit_Global

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        if node.name:
            self._bind(node, node.name)
        self.generic_visit(node)

    def visit_MatchAs(self, node: ast.MatchAs | ast.MatchStar) -> None:
        if node.name:
            self._bind(node, node.name)
        self.generic_visit(node)

    visit_MatchStar = visit_MatchAs

    def visit_MatchMapping(self, node: ast.MatchMapping) -> None:
        if node.rest:
            self._bind(node, node.rest)
        self.generic_visit(node)

    def visit_MatchClass(self, node: ast.MatchClass) -> None:
        # `case C(attr=...)` reads the attribute off the subject, like `subject.attr`.
        for attr in node.kwd_attrs:
            self._attribute_name(node, attr)
            if _is_private(attr):
                self.fail(node, f"access to the private attribute '.{attr}' is not allowed")
        self.generic_visit(node)

    def visit_keyword(self, node: ast.keyword) -> None:
        if node.arg and _is_dunder(node.arg):
            self.fail(node, f"the keyword argument '{node.arg}' is not allowed")
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        # The way a special name reaches type(name, bases, {...}) or f(**{...}).
        value = node.value
        if (
            isinstance(value, str)
            and _DUNDER.fullmatch(value)
            and value not in ALLOWED_DUNDER_STRINGS
            and value not in ALLOWED_DUNDER_METHODS
        ):
            self.fail(node, f"the string '{value}' is not allowed (a special name)")

    # imports ----------------------------------------------------------------------------

    def _module(self, node: ast.AST, name: str) -> None:
        if name not in ALLOWED_MODULES:
            self.fail(node, f"import of '{name}' is not allowed (allowed: {_allowed_hint()})")

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._module(node, alias.name)
            if alias.asname:
                self._bind(node, alias.asname)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            self.fail(node, "relative imports are not allowed")
        module = node.module or ""
        self._module(node, module)
        for alias in node.names:
            if alias.name == "*":
                self.fail(node, f"'from {module} import *' is not allowed; import names")
            self._attribute_name(node, alias.name)
            if _is_private(alias.name):
                self.fail(node, f"import of the private name '{alias.name}' is not allowed")
            self._exported(node, module, alias.name)
            self._bind(node, alias.asname or alias.name)

    def _exported(self, node: ast.AST, module: str, attr: str) -> None:
        offered = _exports(module)
        if attr not in offered:
            close = difflib.get_close_matches(attr, offered, n=3)
            hint = f" (did you mean {', '.join(close)}?)" if close else ""
            self.fail(node, f"'{module}.{attr}' is not available in generated code{hint}")

    def _module_of(self, expr: ast.expr) -> str | None:
        """The allowed module an expression names (`np`, `np.linalg`), if it names one."""
        if isinstance(expr, ast.Name):
            return self.aliases.get(expr.id)
        if isinstance(expr, ast.Attribute):
            parent = self._module_of(expr.value)
            if parent and f"{parent}.{expr.attr}" in ALLOWED_MODULES:
                return f"{parent}.{expr.attr}"
        return None

    # attributes -------------------------------------------------------------------------

    def _attribute_name(self, node: ast.AST, attr: str) -> None:
        if _is_dunder(attr) and attr not in ALLOWED_DUNDER_ATTRIBUTES:
            self.fail(node, f"access to '{attr}' is not allowed")
        if attr in FORBIDDEN_ATTRIBUTES:
            what = "files, frames, native code or raw memory"
            self.fail(node, f"access to '.{attr}' is not allowed ({what})")

    def _own_state(self, owner: ast.expr) -> bool:
        """Whether `owner` is the `self`/`cls` parameter of the method the code is in."""
        if not (isinstance(owner, ast.Name) and owner.id in _SELF_NAMES):
            return False
        for depth, scope in enumerate(reversed(self.scopes)):
            if scope.kind == "class" and depth > 0:
                continue  # a class body's names are not visible from functions inside it
            if owner.id in scope.bound:
                return owner.id in scope.trusted
        return False

    def visit_Attribute(self, node: ast.Attribute) -> None:
        self._attribute_name(node, node.attr)
        if node.attr in ("format", "format_map"):
            # Checked where it is read, not where it is called: `f = s.format; f(x)`.
            self._check_format(node)
        # Private attributes only on the object's own state (self._prev), not on modules.
        if _is_private(node.attr) and not self._own_state(node.value):
            self.fail(node, f"access to the private attribute '.{node.attr}' is not allowed")
        module = self._module_of(node.value)
        if module:
            self._exported(node, module, node.attr)
            if not isinstance(node.ctx, ast.Load):
                self.fail(node, f"'{module}' is read-only")
        self.generic_visit(node)

    def _check_format(self, func: ast.Attribute) -> None:
        # "{0.__class__}".format(x) reaches attributes the tree never names.
        template = func.value
        if not (isinstance(template, ast.Constant) and isinstance(template.value, str)):
            self.fail(
                func, f"str.{func.attr}() on a computed string is not allowed; use an f-string"
            )
        self._format_fields(func, template.value)

    def _format_fields(self, func: ast.Attribute, template: str) -> None:
        try:
            parsed = list(string.Formatter().parse(template))
        except ValueError as exc:
            self.fail(func, f"bad format string: {exc}")
        for _, field_name, spec, _ in parsed:
            if field_name and ("." in field_name or "[" in field_name):
                self.fail(
                    func,
                    f"format field '{{{field_name}}}' reads attributes or items; not allowed",
                )
            if spec and "{" in spec:  # nested fields: "{0:{1.__class__}}"
                self._format_fields(func, spec)

    # definitions and scopes -------------------------------------------------------------

    def _annotation(self, node: ast.expr | None) -> None:
        if node is None:
            return
        for part in ast.walk(node):
            if isinstance(part, ast.Constant) and isinstance(part.value, str):
                self.fail(
                    part,
                    "string annotations are not allowed (they are evaluated later, unchecked); "
                    "write the type itself or leave the annotation out",
                )
        self.visit(node)

    def _enter(self, node: ast.AST, body: Sequence[ast.AST], *, is_method: bool = False) -> None:
        self.scopes.append(_scope_of(node, is_method))
        try:
            for part in body:
                self.visit(part)
        finally:
            self.scopes.pop()

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        is_method = id(node) in self.methods
        if _is_dunder(node.name):
            if not is_method or node.name not in ALLOWED_DUNDER_METHODS:
                self.fail(
                    node,
                    f"defining '{node.name}' is not allowed "
                    "(special methods: __init__, __call__, __repr__, operators, ...)",
                )
        else:
            self._bind(node, node.name)
        for part in node.decorator_list:
            self.visit(part)
        self._arguments(node.args)
        self._annotation(node.returns)
        self._enter(node, node.body, is_method=is_method)

    visit_FunctionDef = _function
    visit_AsyncFunctionDef = _function

    def _arguments(self, args: ast.arguments) -> None:
        for default in [*args.defaults, *(d for d in args.kw_defaults if d)]:
            self.visit(default)
        for arg in _params(args):
            self._bind(arg, arg.arg)
            self._annotation(arg.annotation)

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self._arguments(node.args)
        self._enter(node, [node.body])

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._bind(node, node.name)
        if node.keywords:
            self.fail(node, "class keywords (metaclass=...) are not allowed")
        for part in [*node.decorator_list, *node.bases]:
            self.visit(part)
        self.methods.update(id(s) for s in node.body if isinstance(s, _FUNCTIONS))
        self._enter(node, node.body)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._annotation(node.annotation)
        self.visit(node.target)
        if node.value is not None:
            self.visit(node.value)

    def _comprehension(
        self, node: ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp
    ) -> None:
        first, *rest = node.generators
        self.visit(first.iter)  # evaluated in the enclosing scope
        inner: list[ast.AST] = [first.target, *first.ifs]
        for gen in rest:
            inner += [gen.target, gen.iter, *gen.ifs]
        if isinstance(node, ast.DictComp):
            inner += [node.key, node.value]
        else:
            inner.append(node.elt)
        self._enter(node, inner)

    visit_ListComp = _comprehension
    visit_SetComp = _comprehension
    visit_DictComp = _comprehension
    visit_GeneratorExp = _comprehension


def check_source(source: str, filename: str) -> ast.Module:
    """Parse and check; the tree, or SandboxViolation (which subclasses ValueError)."""
    if len(source.encode()) > MAX_SOURCE_BYTES:
        raise SandboxViolation(
            f"{filename} is {len(source.encode()):,} bytes; at most {MAX_SOURCE_BYTES:,}"
        )
    try:
        tree = ast.parse(source, filename=filename)
    except SyntaxError as exc:
        raise SandboxViolation(f"{filename} does not parse: line {exc.lineno}: {exc.msg}") from None
    _Checker(filename, _module_aliases(tree)).visit(tree)
    return tree
