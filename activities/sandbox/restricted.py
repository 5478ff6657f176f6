"""The second layer: generated code executes with a short list of builtins and guarded imports.

Imports hand out curated namespaces, never modules: `import numpy as np` binds a read-only
object holding only the functions, classes and constants `policy.MODULE_EXPORTS` lists, so no
attribute of it leads to a module (`statistics.sys`, `functools`'s globals) or to a file, pickle
or raw-memory function. `type` is a stand-in that refuses to build classes with special methods
outside the allow-list and never hands out the real `type` or `np.ndarray` (whose constructor
takes a raw buffer). Classes written with `class` statements are checked the same way.
"""

from __future__ import annotations

import builtins
import importlib
import sys
from collections.abc import Callable, Mapping
from types import CodeType, ModuleType
from typing import Any

from activities.sandbox.policy import (
    ALLOWED_BUILTINS,
    ALLOWED_DUNDER_METHODS,
    ALLOWED_MODULES,
    IMPLICIT_CLASS_KEYS,
    MODULE_EXPORTS,
    MODULE_SOURCES,
    TYPE_ONLY_EXPORTS,
)
from activities.sandbox.static_check import SandboxViolation, check_source

MAX_PRINTED_LINES = 50
# Packages whose submodules C code may import while generated code runs (see _import_from_c).
_C_IMPORT_PACKAGES = frozenset(m.partition(".")[0] for m in ALLOWED_MODULES)


def _bounded_print() -> Callable[..., None]:
    """print() to stderr for the first lines only: a chatty reward cannot flood the pipe."""
    lines = 0

    def print(*args: Any, **_kwargs: Any) -> None:  # noqa: A001 - it stands in for print
        nonlocal lines
        lines += 1
        if lines <= MAX_PRINTED_LINES:
            sys.stderr.write(" ".join(str(a) for a in args)[:500] + "\n")
        elif lines == MAX_PRINTED_LINES + 1:
            sys.stderr.write(f"(generated code printed more than {MAX_PRINTED_LINES} lines)\n")

    return print


# --- classes ---------------------------------------------------------------------------------


def _check_class_namespace(name: object, namespace: Mapping[Any, Any]) -> None:
    for key in namespace:
        if not isinstance(key, str):
            raise TypeError(f"class {name}: attribute names must be strings")
        if (
            key.startswith("__")
            and key.endswith("__")
            and key not in ALLOWED_DUNDER_METHODS
            and key not in IMPLICIT_CLASS_KEYS
        ):
            raise TypeError(f"class {name}: defining '{key}' is not allowed in generated code")


def _build_class(func: Callable[[], None], name: str, *bases: Any, **kwargs: Any) -> type:
    """`class` statements: no metaclass or class keywords, no special methods off the list."""
    if kwargs:
        raise TypeError(f"class {name}: class keywords (metaclass=...) are not allowed")
    cls = builtins.__build_class__(func, name, *bases)
    _check_class_namespace(name, vars(cls))
    return cls


class _FrozenMeta(type):
    """Metaclass of the sandbox's own classes: their attributes cannot be set or deleted."""

    def __setattr__(cls, name: str, value: Any) -> None:
        raise AttributeError(f"'{cls.__name__}' is read-only in generated code")

    def __delattr__(cls, name: str) -> None:
        raise AttributeError(f"'{cls.__name__}' is read-only in generated code")


class _SafeTypeMeta(_FrozenMeta):
    """`type` as generated code sees it; isinstance(x, type) still works."""

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, type)

    def __subclasscheck__(cls, sub: Any) -> bool:
        return sub is cls or (isinstance(sub, type) and issubclass(sub, type))

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and not kwargs:
            return _visible_type(type(args[0]))
        if len(args) == 3 and not kwargs:
            name, bases, namespace = args
            namespace = dict(namespace)  # check and use the same plain dict
            _check_class_namespace(name, namespace)
            return type(name, tuple(bases), namespace)
        raise TypeError("type() takes 1 or 3 arguments in generated code, and no keywords")


SafeType = _SafeTypeMeta("type", (), {"__slots__": ()})


def _type_only(real: type) -> type:
    """A stand-in for `real` usable with isinstance/issubclass only (calling it raises)."""

    class TypeOnlyMeta(_FrozenMeta):
        def __instancecheck__(cls, obj: Any) -> bool:
            return isinstance(obj, real)

        def __subclasscheck__(cls, sub: Any) -> bool:
            return sub is cls or (isinstance(sub, type) and issubclass(sub, real))

        def __call__(cls, *_args: Any, **_kwargs: Any) -> Any:
            raise TypeError(
                f"{real.__name__}(...) cannot be called in generated code "
                "(use np.array, np.zeros or np.empty)"
            )

        def __repr__(cls) -> str:
            return repr(real)

    return TypeOnlyMeta(real.__name__, (), {"__slots__": ()})


_type_only_cache: dict[type, type] = {}


def _visible_type(cls: type) -> type:
    """What type(x) gives generated code: never a metaclass, never a type-only class."""
    if issubclass(cls, type):
        return SafeType
    for real, stand_in in _type_only_cache.items():
        if issubclass(cls, real):
            return stand_in
    return cls


# --- curated modules -------------------------------------------------------------------------


class _CuratedModule:
    """Base of the namespaces imports hand out; one subclass per module, one instance."""

    __slots__ = ()

    def __init_subclass__(cls, seal: object = None) -> None:
        if seal is not _SEAL:
            raise TypeError("sandboxed modules cannot be subclassed")
        super().__init_subclass__()

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{self!r} is read-only")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{self!r} is read-only")

    def __getattr__(self, name: str) -> Any:  # only called when the name is not there
        raise AttributeError(f"{self!r} has no '{name}' in generated code")

    def __repr__(self) -> str:
        return f"<sandboxed module '{type(self).__name__}'>"


_SEAL = object()  # only this module subclasses _CuratedModule
_member_cache: dict[str, dict[str, Any]] = {}


def _members(module_name: str) -> dict[str, Any]:
    """The allow-listed attributes of a real module (names missing in this version skipped)."""
    if module_name not in _member_cache:
        real = importlib.import_module(MODULE_SOURCES.get(module_name, module_name))
        members: dict[str, Any] = {}
        for name in sorted(MODULE_EXPORTS[module_name]):
            if not hasattr(real, name) or isinstance(getattr(real, name), ModuleType):
                continue  # not in this version of the module
            value = getattr(real, name)
            if (module_name, name) in TYPE_ONLY_EXPORTS:
                value = _type_only_cache.setdefault(value, _type_only(value))
            members[name] = value
        _member_cache[module_name] = members
    return _member_cache[module_name]


def _namespace(module_name: str, members: dict[str, Any]) -> _CuratedModule:
    body: dict[str, Any] = {"__slots__": ()}
    for name, value in members.items():
        # A function stored on a class would bind as a method: keep it a plain attribute.
        body[name] = staticmethod(value) if hasattr(type(value), "__get__") else value
    cls = _FrozenMeta(module_name, (_CuratedModule,), body, seal=_SEAL)
    return cls()


# Built when this module is imported: the sandbox process imports it before it confines itself,
# after which no module that is not loaded yet can be imported.
for _module_name in MODULE_EXPORTS:
    _members(_module_name)


def curated_modules() -> dict[str, _CuratedModule]:
    """A fresh namespace per allowed module (`numpy.linalg` is also `numpy`'s `linalg`)."""
    built: dict[str, _CuratedModule] = {}
    for name in sorted(MODULE_EXPORTS, key=lambda m: -m.count(".")):  # submodules first
        members = dict(_members(name))
        for child, namespace in built.items():
            parent, _, attr = child.rpartition(".")
            if parent == name:
                members[attr] = namespace
        built[name] = _namespace(name, members)
    return built


# --- imports ---------------------------------------------------------------------------------


def _import_from_c(name: str) -> None:
    """An import made by C code on behalf of generated code: allowed, module not handed out.

    numpy's C code (str(array), repr, f-strings of arrays, some errors) imports its own Python
    helpers with PyImport_Import, which calls `__import__` from the *calling frame's* builtins,
    i.e. this hook while generated code runs. It passes a list as fromlist (an import statement
    passes a tuple or None, and generated code cannot reach this hook any other way: the names
    `__import__` and `__builtins__` are rejected) and ignores the result, reading sys.modules
    itself. So such a call may import what is already loaded or a submodule of an allowed
    package, and gets None: no module object ever comes back through here.
    """
    if name in sys.modules:
        return
    if name.partition(".")[0] in _C_IMPORT_PACKAGES:
        importlib.import_module(name)
        return
    raise ImportError(f"import of '{name}' is not allowed in generated code")


def _import_hook(modules: dict[str, _CuratedModule]) -> Callable[..., Any]:
    def guarded_import(
        name: str,
        globals: dict | None = None,  # noqa: A002 - the signature of __import__
        locals: dict | None = None,  # noqa: A002
        fromlist: tuple | list | None = (),
        level: int = 0,
    ) -> Any:
        if isinstance(fromlist, list) and not level:
            return _import_from_c(name)
        if level or name not in modules:
            raise ImportError(f"import of '{name}' is not allowed in generated code")
        # `import numpy.linalg` binds `numpy`; `from numpy import linalg` needs the submodule.
        return modules[name] if fromlist else modules[name.partition(".")[0]]

    return guarded_import


def safe_builtins() -> dict[str, Any]:
    """The builtins generated code gets: an allow-list, a bounded print, a safe type() and
    an import hook that hands out curated modules only."""
    table = {name: getattr(builtins, name) for name in ALLOWED_BUILTINS if hasattr(builtins, name)}
    table["print"] = _bounded_print()
    table["type"] = SafeType
    table["__import__"] = _import_hook(curated_modules())
    # Class statements need the class builder; it is not callable from source (dunder name).
    table["__build_class__"] = _build_class
    return table


def compile_untrusted(source: str, filename: str) -> CodeType:
    """Code for generated source, after the static check (SandboxViolation when it fails)."""
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


__all__ = [
    "SafeType",
    "SandboxViolation",
    "compile_untrusted",
    "curated_modules",
    "exec_untrusted",
    "safe_builtins",
]
