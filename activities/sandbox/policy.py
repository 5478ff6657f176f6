"""What generated code may use: one list, read by the static check and the runtime layer."""

from __future__ import annotations

# Modules generated code may import (exact names; submodules must be listed themselves).
ALLOWED_MODULES = frozenset(
    {
        "__future__",
        "math",
        "cmath",
        "numpy",
        "numpy.linalg",
        "numpy.random",
        "collections",
        "itertools",
        "functools",
        "statistics",
        "random",
        # Not `typing`: get_type_hints(obj, globalns={}) evaluates annotation strings with the
        # real builtins.
    }
)

# Builtins generated code may call or name.
ALLOWED_BUILTINS = frozenset(
    {
        "abs", "all", "any", "bool", "callable", "chr", "complex", "dict", "divmod",
        "enumerate", "filter", "float", "format", "frozenset", "hash", "int", "isinstance",
        "issubclass", "iter", "len", "list", "map", "max", "min", "next", "object", "ord",
        "pow", "print", "property", "range", "repr", "reversed", "round", "set", "slice",
        "sorted", "staticmethod", "classmethod", "str", "sum", "super", "tuple", "type", "zip",
        "True", "False", "None", "NotImplemented", "Ellipsis",
        "ArithmeticError", "AssertionError", "AttributeError", "Exception", "IndexError",
        "KeyError", "LookupError", "NotImplementedError", "OverflowError", "RuntimeError",
        "StopIteration", "TypeError", "ValueError", "ZeroDivisionError", "FloatingPointError",
    }
)  # fmt: skip

# Names that reach outside the sandbox or around the static check.
FORBIDDEN_NAMES = frozenset(
    {
        "exec", "eval", "compile", "open", "__import__", "globals", "locals", "vars", "dir",
        "getattr", "setattr", "delattr", "hasattr", "input", "breakpoint", "help", "exit",
        "quit", "memoryview", "bytearray", "__builtins__", "__loader__", "__spec__",
    }
)  # fmt: skip

# Attributes that expose frames, code, globals or the type hierarchy, or that read or write
# files through numpy; rejected whatever object they are read from.
FORBIDDEN_ATTRIBUTES = frozenset(
    {
        # introspection and frames
        "mro", "gi_frame", "gi_code", "gi_yieldfrom", "cr_frame", "cr_code", "cr_await",
        "ag_frame", "ag_code", "f_globals", "f_locals", "f_back", "f_builtins", "f_code",
        "tb_frame", "tb_next", "co_code", "func_globals", "func_code", "im_func", "im_self",
        # numpy: files, pickles, native code
        "load", "loads", "save", "savez", "savez_compressed", "savetxt", "loadtxt",
        "genfromtxt", "fromfile", "tofile", "fromregex", "memmap", "dump", "dumps",
        "DataSource", "ctypeslib", "ctypes", "lib", "core", "f2py", "distutils", "testing",
        "show_config", "show_runtime", "get_include", "os", "sys", "open",
    }
)  # fmt: skip

# Dunder attributes that are plain method calls (super().__init__()).
ALLOWED_DUNDER_ATTRIBUTES = frozenset({"__init__"})
