"""The first layer: reject code by its syntax tree, before any of it runs.

Errors are one line naming the file, the line and the construct, e.g.
"reward_fn.py line 3: import of 'os' is not allowed (allowed: math, numpy, ...)".
"""

from __future__ import annotations

import ast
import string

from activities.sandbox.policy import (
    ALLOWED_DUNDER_ATTRIBUTES,
    ALLOWED_MODULES,
    FORBIDDEN_ATTRIBUTES,
    FORBIDDEN_NAMES,
)

MAX_SOURCE_BYTES = 200_000


class SandboxViolation(ValueError):
    """Generated code that uses something the sandbox does not allow; one line."""


def _is_dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__") and len(name) > 4


def _allowed_hint() -> str:
    return ", ".join(sorted(m for m in ALLOWED_MODULES if m != "__future__"))


class _Checker(ast.NodeVisitor):
    def __init__(self, filename: str) -> None:
        self.filename = filename

    def fail(self, node: ast.AST, what: str) -> None:
        line = getattr(node, "lineno", "?")
        raise SandboxViolation(f"{self.filename} line {line}: {what}")

    def _module(self, node: ast.AST, name: str) -> None:
        if name not in ALLOWED_MODULES:
            self.fail(node, f"import of '{name}' is not allowed (allowed: {_allowed_hint()})")

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._module(node, alias.name)
        self.generic_visit(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            self.fail(node, "relative imports are not allowed")
        self._module(node, node.module or "")
        for alias in node.names:
            if alias.name == "*":
                self.fail(node, f"'from {node.module} import *' is not allowed; import names")
            self._attribute_name(node, alias.name)
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id in FORBIDDEN_NAMES:
            self.fail(node, f"'{node.id}' is not allowed")
        if _is_dunder(node.id) and node.id != "__name__":
            self.fail(node, f"the name '{node.id}' is not allowed")
        self.generic_visit(node)

    def _attribute_name(self, node: ast.AST, attr: str) -> None:
        if _is_dunder(attr) and attr not in ALLOWED_DUNDER_ATTRIBUTES:
            self.fail(node, f"access to '{attr}' is not allowed")
        if attr in FORBIDDEN_ATTRIBUTES:
            self.fail(node, f"access to '.{attr}' is not allowed (files, frames or native code)")

    def visit_Attribute(self, node: ast.Attribute) -> None:
        self._attribute_name(node, node.attr)
        if node.attr in ("format", "format_map"):
            # Checked where it is read, not where it is called: `f = s.format; f(x)`.
            self._check_format(node)
        # Private attributes only on the object's own state (self._prev), not on modules.
        if node.attr.startswith("_") and not _is_dunder(node.attr):
            owner = node.value
            if not (isinstance(owner, ast.Name) and owner.id in ("self", "cls")):
                self.fail(node, f"access to the private attribute '.{node.attr}' is not allowed")
        self.generic_visit(node)

    def _check_format(self, func: ast.Attribute) -> None:
        # "{0.__class__}".format(x) reaches attributes the tree never names.
        template = func.value
        if not (isinstance(template, ast.Constant) and isinstance(template.value, str)):
            self.fail(
                func, f"str.{func.attr}() on a computed string is not allowed; use an f-string"
            )
        try:
            fields = [f for _, f, _, _ in string.Formatter().parse(template.value) if f]
        except ValueError as exc:
            self.fail(func, f"bad format string: {exc}")
        for field in fields:
            if "." in field or "[" in field:
                self.fail(
                    func, f"format field '{{{field}}}' reads attributes or items; not allowed"
                )

    def visit_Global(self, node: ast.Global) -> None:
        for name in node.names:
            if _is_dunder(name):
                self.fail(node, f"the name '{name}' is not allowed")
        self.generic_visit(node)


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
    _Checker(filename).visit(tree)
    return tree
