"""The second layer: generated code executes with a short list of builtins and guarded imports."""

from __future__ import annotations

import builtins
import importlib
import sys
from types import CodeType
from typing import Any

from activities.sandbox.policy import ALLOWED_BUILTINS, ALLOWED_MODULES
from activities.sandbox.static_check import SandboxViolation, check_source

MAX_PRINTED_LINES = 50


class _BoundedPrint:
    """print() to stderr for the first lines only: a chatty reward cannot flood the pipe."""

    def __init__(self) -> None:
        self.lines = 0

    def __call__(self, *args: Any, **_kwargs: Any) -> None:
        self.lines += 1
        if self.lines <= MAX_PRINTED_LINES:
            sys.stderr.write(" ".join(str(a) for a in args)[:500] + "\n")
        elif self.lines == MAX_PRINTED_LINES + 1:
            sys.stderr.write(f"(generated code printed more than {MAX_PRINTED_LINES} lines)\n")


def _guarded_import(
    name: str,
    globals: dict | None = None,  # noqa: A002 - the signature of __import__
    locals: dict | None = None,  # noqa: A002
    fromlist: tuple = (),
    level: int = 0,
) -> Any:
    if level or name not in ALLOWED_MODULES:
        raise ImportError(f"import of '{name}' is not allowed in generated code")
    module = importlib.import_module(name)
    # `import numpy.linalg` binds `numpy`; `from numpy import linalg` needs the submodule.
    return module if fromlist else importlib.import_module(name.split(".")[0])


def safe_builtins() -> dict[str, Any]:
    table = {name: getattr(builtins, name) for name in ALLOWED_BUILTINS if hasattr(builtins, name)}
    table["print"] = _BoundedPrint()
    table["__import__"] = _guarded_import
    # Class statements need the class builder; it is not callable from source (dunder name).
    table["__build_class__"] = builtins.__build_class__
    return table


def compile_untrusted(source: str, filename: str) -> CodeType:
    tree = check_source(source, filename)
    return compile(tree, filename, "exec")


def exec_untrusted(source: str, filename: str, predefined: dict[str, Any]) -> dict[str, Any]:
    """Check, then run the module body with restricted builtins; its namespace.

    Violations of the static check raise SandboxViolation; whatever the module body raises
    propagates unchanged (the caller turns it into one line).
    """
    code = compile_untrusted(source, filename)
    namespace: dict[str, Any] = {
        "__builtins__": safe_builtins(),
        "__name__": "generated_module",
        **predefined,
    }
    exec(code, namespace)  # noqa: S102 - the code passed the static check; builtins are restricted
    return namespace


__all__ = ["SandboxViolation", "compile_untrusted", "exec_untrusted", "safe_builtins"]
