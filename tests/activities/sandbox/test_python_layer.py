"""The sandbox's Python layers (static check, curated modules, restricted builtins), in-process.

Every attack shape here must be refused by the static check (SandboxViolation) or fail when it
runs inside `exec_untrusted`; benign rewards written the usual ways must keep working. These
layers catch honest mistakes with a clear message; the OS layer is the boundary.
"""

from __future__ import annotations

import math
import sys
import textwrap
import types

import numpy as np
import pytest

from activities.sandbox.loaded_reward import load_reward
from activities.sandbox.policy import ALLOWED_MODULES, MODULE_EXPORTS, MODULE_SOURCES
from activities.sandbox.restricted import (
    SandboxViolation,
    curated_modules,
    exec_untrusted,
    safe_builtins,
)
from activities.sandbox.reward_code import RewardFunction
from activities.sandbox.static_check import check_source

OBS = np.linspace(-1.0, 1.0, 17)
ACT = np.full(6, 0.5)
INFO = {"x_velocity": 1.5, "qpos": np.zeros(9), "qvel": np.zeros(9), "_episode_start": False}


def run(source: str) -> dict:
    """The namespace of `source` run in the sandbox, with RewardFunction predefined."""
    return exec_untrusted(textwrap.dedent(source), "gen.py", {"RewardFunction": RewardFunction})


def outcome(source: str) -> tuple[str, object]:
    """("static", message), ("runtime", exception) or ("escaped", what attack() returned)."""
    try:
        namespace = run(source)
    except SandboxViolation as exc:
        return "static", str(exc)
    except (AttributeError, ImportError, TypeError, ValueError) as exc:
        return "runtime", exc
    try:
        return "escaped", namespace["attack"]()
    except (AttributeError, ImportError, TypeError, ValueError) as exc:
        return "runtime", exc


def refused(source: str, fragment: str = "") -> None:
    kind, detail = outcome(source)
    assert kind != "escaped", f"got through: {detail!r}"
    assert fragment in str(detail), detail


def static(source: str, fragment: str) -> None:
    with pytest.raises(SandboxViolation) as info:
        check_source(textwrap.dedent(source), "gen.py")
    assert fragment in str(info.value)
    assert "\n" not in str(info.value)


# --- private attributes through a parameter called self -------------------------------------

SELF_TRICKS = {
    "module_level_function": """
        import collections
        def peek(self):
            return self._sys
        def attack():
            return peek(collections)
    """,
    "nested_function": """
        import collections
        def outer():
            def peek(self):
                return self._sys
            return peek
        def attack():
            return outer()(collections)
    """,
    "lambda": """
        import collections
        peek = lambda self: self._sys
        def attack():
            return peek(collections)
    """,
    "lambda_in_class_body": """
        import collections
        class A:
            peek = lambda self: self._sys
        def attack():
            return A.peek(collections)
    """,
    "rebound_in_method": """
        import collections
        class A:
            def peek(self):
                self = collections
                return self._sys
        def attack():
            return A().peek()
    """,
    "rebound_by_for": """
        import collections
        class A:
            def peek(self):
                for self in [collections]:
                    pass
                return self._sys
        def attack():
            return A().peek()
    """,
    "comprehension_variable": """
        import collections
        class A:
            def peek(self):
                return [self._sys for self in [collections]]
        def attack():
            return A().peek()
    """,
    "walrus_in_comprehension": """
        import collections
        class A:
            def peek(self):
                [(self := collections) for _ in [0]]
                return self._sys
        def attack():
            return A().peek()
    """,
    "nonlocal_from_inner_function": """
        import collections
        class A:
            def peek(self):
                def swap():
                    nonlocal self
                    self = collections
                swap()
                return self._sys
        def attack():
            return A().peek()
    """,
    "staticmethod": """
        import collections
        class A:
            @staticmethod
            def peek(self):
                return self._sys
        def attack():
            return A.peek(collections)
    """,
    "not_first_parameter": """
        import collections
        class A:
            def peek(other, self):
                return self._sys
        def attack():
            return A().peek(collections)
    """,
    "except_as": """
        import collections
        class A:
            def peek(self):
                try:
                    raise ValueError()
                except ValueError as self:
                    return self._traceback
        def attack():
            return A().peek()
    """,
    "method_default_argument": """
        import collections
        class A:
            self = collections
            def peek(this, x=self._sys):
                return x
        def attack():
            return A().peek()
    """,
}


@pytest.mark.parametrize("source", SELF_TRICKS.values(), ids=SELF_TRICKS.keys())
def test_private_attributes_only_on_a_methods_own_self(source):
    static(source, "private attribute")


def test_a_method_called_through_its_class_with_a_module_finds_no_module():
    # Statically fine (self is the method's first parameter); the curated namespace has no _sys.
    for module in ("collections", "statistics", "functools", "random", "numpy"):
        kind, detail = outcome(
            f"""
            import {module}
            class A:
                def peek(self):
                    return self._sys
            def attack():
                return A.peek({module})
            """
        )
        assert kind == "runtime" and isinstance(detail, AttributeError), (module, detail)


# --- modules reachable through allowed modules ----------------------------------------------

ESCAPE_NAMES = [
    "builtins", "importlib", "inspect", "operator", "sys", "os", "_sys", "_os", "types",
    "typing", "abc", "warnings", "numbers", "math", "random", "ctypes", "lib", "core", "_core",
    "_collections_abc", "_functools", "_operator", "reprlib", "heapq", "_heapq", "threading",
    "overrides", "_bit_generator", "mtrand", "_pocketfft", "fft", "polynomial", "linalg",
]  # fmt: skip
MODULES = sorted(ALLOWED_MODULES)


@pytest.mark.parametrize("name", ESCAPE_NAMES)
@pytest.mark.parametrize("module", MODULES)
def test_no_module_is_reachable_from_an_allowed_module(module, name):
    shapes = [
        f"import {module} as m\ndef attack():\n    return m.{name}\n",
        f"from {module} import {name} as x\ndef attack():\n    return x\n",
        # The method trick the static check lets through, at run time.
        f"import {module} as m\nclass A:\n    def peek(self):\n        return self.{name}\n"
        f"def attack():\n    return A.peek(m)\n",
    ]
    for source in shapes:
        kind, detail = outcome(source)
        assert not isinstance(detail, types.ModuleType), (source, detail)


def _allowed_origin(value: object) -> bool:
    origin = getattr(value, "__module__", None)
    if origin is None:  # bound builtin methods (random.random) carry none
        return True
    top = origin.partition(".")[0].lstrip("_")
    return top in {m.partition(".")[0].lstrip("_") for m in ALLOWED_MODULES} or origin in (
        "activities.sandbox.restricted",
        "builtins",
        # The behaviour library: its functions, and the shaping function it re-exports.
        *MODULE_SOURCES.values(),
        "activities.behaviours.shaping",
        "activities.behaviours.parts",  # the body-part measures primitives re-exports
        # The measures and reward forms primitives re-exports, by kind.
        "activities.behaviours.torso",
        "activities.behaviours.rotation",
        "activities.behaviours.limbs",
        "activities.behaviours.fixed_base",
        "activities.behaviours.reward_forms",
    )


@pytest.mark.parametrize("module", MODULES)
def test_curated_namespaces_hold_no_module_and_nothing_from_elsewhere(module):
    namespace = curated_modules()[module]
    names = [n for n in dir(type(namespace)) if not n.startswith("__")]
    assert names, module
    assert set(names) <= MODULE_EXPORTS[module] | {"linalg", "random"}
    for name in names:
        value = getattr(namespace, name)
        assert not isinstance(value, types.ModuleType), f"{module}.{name}"
        if callable(value):
            assert _allowed_origin(value), f"{module}.{name} comes from {value.__module__}"
        if isinstance(value, type):  # one level further for classes
            for attr in dir(value):
                inner = getattr(value, attr, None)
                assert not isinstance(inner, types.ModuleType), f"{module}.{name}.{attr}"


def test_curated_namespaces_are_read_only_and_sealed():
    refused("import numpy as np\nT = type(np)\nT.sum = print\n", "read-only")
    refused(
        "import numpy as np\nclass A:\n    def put(self):\n        self.sum = print\n"
        "def attack():\n    return A.put(np)\n",
        "read-only",
    )
    refused("import numpy as np\nclass Mine(type(np)):\n    pass\n", "cannot be subclassed")
    static("import numpy as np\nnp.pi = 3\n", "'numpy' is read-only")


def test_modules_offer_only_their_allow_list():
    static("import numpy as np\nx = np.fft.fft\n", "'numpy.fft' is not available")
    static("from numpy import polynomial\n", "'numpy.polynomial' is not available")
    static("import statistics\nx = statistics.sys\n", "access to '.sys' is not allowed")
    static("import statistics\nx = statistics.numbers\n", "'statistics.numbers' is not available")
    static("import math\nx = math.sqr(2)\n", "did you mean sqrt")
    static("from numpy import _core\n", "private name '_core'")
    # Not statically known to be a module: refused when it runs.
    refused("import numpy\nm = [numpy][0]\ndef attack():\n    return m.fft\n", "no 'fft'")


# --- getattr by string, type(), annotations -------------------------------------------------


def test_attrgetter_and_dunder_strings():
    static("import operator\nf = operator.attrgetter('x')\n", "import of 'operator'")
    static("from operator import attrgetter\n", "import of 'operator'")
    static("import functools\nf = functools.attrgetter\n", "'functools.attrgetter'")
    static("x = ('__class__',)\n", "the string '__class__' is not allowed")
    static("def f(**kw):\n    pass\nf(**{'__class__': 1})\n", "the string '__class__'")
    static("x = dict(__class__=1)\n", "keyword argument '__class__'")
    static("x = '{0:{1.__class__}}'.format(1, 2)\n", "reads attributes or items")
    static("f = str.format\n", "computed string")


TYPE_CALLS = {
    "literal_key": ("X = type('X', (), {'__init_subclass__': classmethod(print)})\n", "string"),
    "keyword_dict": ("X = type('X', (), dict(__init_subclass__=print))\n", "keyword argument"),
    "computed_key": (
        "k = '__init' + '_subclass__'\nX = type('X', (), {k: classmethod(print)})\n",
        "'__init_subclass__' is not allowed",
    ),
    "array_interface": (
        "k = '__array_' + 'interface__'\nX = type('X', (), {k: {'data': (0, False)}})\n",
        "'__array_interface__' is not allowed",
    ),
    "real_type_from_type": (
        "k = '__getattr_' + '_'\nX = type(int)('X', (), {k: print})\n",
        "'__getattr__' is not allowed",
    ),
    "metaclass_of_a_predefined_class": (
        "k = '__del_' + '_'\nX = type(RewardFunction)('X', (), {k: print})\n",
        "'__del__' is not allowed",
    ),
    "keywords_to_init_subclass": ("X = type('X', (), {}, flag=1)\n", "no keywords"),
}


@pytest.mark.parametrize(("source", "fragment"), TYPE_CALLS.values(), ids=TYPE_CALLS.keys())
def test_type_cannot_build_classes_with_special_methods(source, fragment):
    refused(source, fragment)


def test_class_statements_define_only_allowed_special_methods():
    static("class A:\n    def __getattr__(self, n):\n        return 1\n", "'__getattr__'")
    static("class A:\n    def __init_subclass__(cls):\n        pass\n", "'__init_subclass__'")
    static("class A:\n    def __del__(self):\n        pass\n", "'__del__'")
    static("class A:\n    def __reduce__(self):\n        pass\n", "'__reduce__'")
    static("def __init__():\n    pass\n", "defining '__init__'")
    static("class A:\n    __array_interface__ = {}\n", "'__array_interface__'")
    static("class A(metaclass=type):\n    pass\n", "class keywords")
    static("class __A__:\n    pass\n", "the name '__A__'")


def test_string_annotations_are_refused():
    static("def f(x: '().__class__'):\n    pass\n", "string annotations")
    static("def f(x) -> 'os':\n    pass\n", "string annotations")
    static("x: list['y'] = []\n", "string annotations")
    static("class A:\n    y: 'z' = 1\n", "string annotations")
    static("import typing\n", "import of 'typing'")
    static("def f(x: type(1).__class__):\n    pass\n", "'__class__'")


NAMES_WHERE_DEFINED = {
    "parameter": ("def f(__builtins__):\n    pass\n", "'__builtins__'"),
    "forbidden_parameter": ("def f(getattr):\n    pass\n", "'getattr' is not allowed"),
    "function_name": ("def getattr(x):\n    pass\n", "'getattr' is not allowed"),
    "import_alias": ("import numpy as __builtins__\n", "'__builtins__'"),
    "from_import_alias": ("from math import pi as __loader__\n", "'__loader__'"),
    "except_name": ("try:\n    pass\nexcept Exception as __class__:\n    pass\n", "'__class__'"),
    "global": ("def f():\n    global __builtins__\n", "'__builtins__'"),
    "nonlocal": ("def f():\n    eval = 1\n    def g():\n        nonlocal eval\n", "'eval'"),
    "assign_name": ("__name__ = 'x'\n", "'__name__'"),
    "attribute_target": ("class A:\n    pass\nA.__class__ = int\n", "'__class__'"),
    "private_target": ("import math\nclass A:\n    pass\nA._x = 1\n", "private attribute"),
    "keyword": ("print(__file__=1)\n", "keyword argument '__file__'"),
    "match_capture": ("match 1:\n    case __builtins__:\n        pass\n", "'__builtins__'"),
    "match_rest": ("match {}:\n    case {**__builtins__}:\n        pass\n", "'__builtins__'"),
    "match_class_attribute": (
        "match 1:\n    case int(__class__=c):\n        pass\n",
        "'__class__'",
    ),
    "match_private_attribute": ("match 1:\n    case int(_x=c):\n        pass\n", "private"),
    "lambda_parameter": ("f = lambda __builtins__: 1\n", "'__builtins__'"),
    "comprehension_target": ("x = [1 for __class__ in []]\n", "'__class__'"),
    "with_target": ("with open as __spec__:\n    pass\n", "'open'"),
}


@pytest.mark.parametrize(
    ("source", "fragment"), NAMES_WHERE_DEFINED.values(), ids=NAMES_WHERE_DEFINED.keys()
)
def test_names_are_checked_wherever_they_are_defined(source, fragment):
    static(source, fragment)


# --- numpy memory -----------------------------------------------------------------------------

NUMPY_MEMORY = {
    "frombuffer": ("x = np.frombuffer(b'12345678', dtype=np.float64)", "'.frombuffer'"),
    "as_strided": ("x = np.lib.stride_tricks.as_strided(np.zeros(1), (9,), (8,))", "not allowed"),
    "ctypes": ("x = np.zeros(1).ctypes", "'.ctypes'"),
    "data": ("x = np.zeros(1).data", "'.data'"),
    "base": ("x = np.zeros(4)[1:].base", "'.base'"),
    "array_interface": ("x = np.ndarray.__array_interface__", "'__array_interface__'"),
    "array_interface_of_array": ("x = np.zeros(1).__array_interface__", "'__array_interface__'"),
    "resize_in_place": ("a = np.zeros(2)\na.resize((9,), refcheck=False)", "'.resize'"),
    "self_data_in_method": (
        "class A:\n    def peek(self):\n        return self.data\n"
        "def attack():\n    return A.peek(np.zeros(1))",
        "'.data'",
    ),
    "ndarray_constructor": (
        "def attack():\n    return np.ndarray((1,), dtype=object, buffer=b'\\x00' * 8)",
        "cannot be called",
    ),
    "ndarray_from_type": (
        "def attack():\n    return type(np.zeros(1))((1,), dtype=object, buffer=b'\\x00' * 8)",
        "cannot be called",
    ),
    "bit_generator_cffi": ("x = np.random.default_rng(0).bit_generator.cffi", "'.cffi'"),
    "fromfile": ("x = np.fromfile", "'.fromfile'"),
    "memmap": ("x = np.memmap", "'.memmap'"),
}


@pytest.mark.parametrize(("body", "fragment"), NUMPY_MEMORY.values(), ids=NUMPY_MEMORY.keys())
def test_numpy_memory_views_and_raw_buffers_are_refused(body, fragment):
    refused("import numpy as np\n" + body + "\n", fragment)


# --- the import hook --------------------------------------------------------------------------


def test_the_import_hook_hands_out_namespaces_and_serves_c_code_without_leaking_modules():
    hook = safe_builtins()["__import__"]
    assert not isinstance(hook("numpy"), types.ModuleType)
    assert hook("numpy.linalg", None, None, ("norm",), 0).norm is np.linalg.norm
    with pytest.raises(ImportError):
        hook("os")
    with pytest.raises(ImportError):
        hook("numpy", None, None, (), 1)
    # PyImport_Import (C code) passes a list: loaded modules are fine, nothing comes back.
    assert hook("numpy._core.arrayprint", {}, {}, [], 0) is None
    assert hook("os", {}, {}, [], 0) is None
    unloaded = "xml.dom.minidom"
    if unloaded not in sys.modules:
        with pytest.raises(ImportError):
            hook(unloaded, {}, {}, [], 0)
        assert unloaded not in sys.modules


def test_each_run_gets_its_own_namespaces():
    a, b = run("import numpy as np\n"), run("import numpy as np\n")
    assert a["np"] is not b["np"] and a["np"].sum is b["np"].sum is np.sum


def test_type_still_behaves_like_type():
    ns = run(
        """
        import numpy as np
        a = np.zeros(2)
        checks = [
            type(1) is int, type(a) is np.ndarray, type(a) == np.ndarray, type(int) is type,
            isinstance(int, type), isinstance(a, np.ndarray), not isinstance(1, np.ndarray),
            issubclass(type(a), np.ndarray), isinstance(a, (list, np.ndarray)),
            type(RewardFunction) is type, type(1.5)(2) == 2.0,
        ]
        Point = type("Point", (), {"x": 1, "__init__": lambda self: None})
        """
    )
    assert all(ns["checks"]), ns["checks"]
    assert ns["Point"]().x == 1


# --- benign code keeps working ----------------------------------------------------------------


def test_printing_arrays_works(capsys):
    ns = run(
        """
        import numpy as np
        def show():
            a = np.zeros(3)
            print(a)
            return str(a), repr(a), f"{a}", f"{np.float64(1.5):.2f}", str(a[0]), f"{a!r}"
        """
    )
    assert ns["show"]() == ("[0. 0. 0.]", "array([0., 0., 0.])", "[0. 0. 0.]", "1.50", "0.0",
                            "array([0., 0., 0.])")  # fmt: skip
    assert "[0. 0. 0.]" in capsys.readouterr().err


def _call(source: str) -> tuple[float, dict[str, float]]:
    reward = load_reward(textwrap.dedent(source), "reward_fn.py")
    return reward(OBS, ACT, OBS, dict(INFO))


BENIGN = {
    "plain_reward_fn": """
        import math
        import numpy as np

        def reward_fn(obs, action, next_obs, info):
            forward = float(info["x_velocity"])
            ctrl = -0.1 * float(np.sum(np.square(action)))
            return forward + ctrl, {"forward": forward, "ctrl": ctrl, "zero": math.sin(0.0)}
    """,
    "subclass_with_state_and_properties": """
        import numpy as np

        class Forward(RewardFunction):
            def __init__(self):
                super().__init__()
                self._prev = None
                self._steps = 0

            def compute(self, obs, action, next_obs, info):
                if info.get("_episode_start") or self._prev is None:
                    self._prev = np.array(next_obs)
                self._steps += 1
                delta = float(np.linalg.norm(next_obs - self._prev))
                self._prev = np.array(next_obs)
                label = f"{delta:.3f} {next_obs[:2]}"
                terms = {"delta": delta, "label_len": float(len(label) > 0)}
                return sum(terms.values()), terms

            @property
            def latex(self):
                return r"\\lVert s' - s \\rVert"

            @property
            def terms(self):
                return ["delta", "label_len"]
    """,
    "closure": """
        def make_reward():
            steps = [0]

            def reward_fn(obs, action, next_obs, info):
                steps[0] += 1
                return 1.0, {"alive": 1.0}

            return reward_fn

        reward_fn = make_reward()
    """,
    "helpers_classmethod_and_nested_function": """
        from __future__ import annotations

        import numpy as np
        from collections import deque, namedtuple
        from functools import lru_cache

        Pair = namedtuple("Pair", ["a", "b"])

        class Smooth(RewardFunction):
            _WINDOW = 3

            def __init__(self):
                self._recent = deque(maxlen=self._WINDOW)

            @classmethod
            def window(cls) -> int:
                return cls._WINDOW

            def _mean(self) -> float:
                return float(np.mean(list(self._recent)))

            def compute(self, obs: np.ndarray, action, next_obs, info) -> tuple[float, dict]:
                def push(value: float) -> None:
                    self._recent.append(value)

                push(float(info["x_velocity"]))
                p = Pair(self._mean(), float(self.window()))
                return p.a, {"speed": p.a}

            @property
            def latex(self):
                return "v"

            @property
            def terms(self):
                return ["speed"]

        @lru_cache(maxsize=None)
        def unused(n: int) -> int:
            return n

        if __name__ == "__main__":
            pass
    """,
    "numpy_and_stdlib_math": """
        import cmath
        import itertools
        import math
        import random
        import statistics

        import numpy as np
        from numpy.linalg import norm

        rng = np.random.default_rng(0)

        def reward_fn(obs, action, next_obs, info):
            q = np.asarray(info["qpos"], dtype=np.float64)
            v = np.clip(next_obs[:3], -1.0, 1.0)
            upright = float(np.cos(np.arctan2(v[1], v[0])))
            spread = float(np.std(obs) + np.percentile(obs, 90) - np.median(obs))
            pairs = sum(b - a for a, b in itertools.pairwise([1.0, 2.0, 4.0]))
            noise = 0.0 * float(rng.normal()) * random.random() * statistics.mean([1, 2])
            size = float(norm(q) + np.linalg.norm(v) + abs(cmath.sqrt(-1)) - 1.0)
            finite = bool(np.all(np.isfinite(obs))) and math.isfinite(spread)
            terms = {"upright": upright, "spread": spread, "pairs": pairs, "noise": noise,
                     "size": size, "finite": float(finite)}
            return sum(terms.values()), terms
    """,
}


@pytest.mark.parametrize("source", BENIGN.values(), ids=BENIGN.keys())
def test_benign_rewards_written_the_usual_ways_pass(source):
    total, terms = _call(source)
    assert math.isfinite(total) and terms
    assert total == pytest.approx(sum(terms.values()))
