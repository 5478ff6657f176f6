"""Hostile and broken reward functions, each with what the sandbox must say about it.

CANARY is a path outside any scratch directory; functions that try to write there must fail
and leave it absent.
"""

from __future__ import annotations

CANARY = "/tmp/policyforge-sandbox-canary"


def reward(body: str, header: str = "") -> str:
    """A reward_fn whose body is `body` (indented by the caller as one block)."""
    lines = "\n".join("    " + line for line in body.strip("\n").splitlines())
    return f"{header}\ndef reward_fn(obs, action, next_obs, info):\n{lines}\n"


# (id, source, a fragment of the one-line error)
HOSTILE: list[tuple[str, str, str]] = [
    ("open_read", reward("data = open('/etc/passwd').read()\nreturn 0.0, {'x': 0.0}"),
     "'open' is not allowed"),
    ("open_write", reward(f"open('{CANARY}', 'w').write('x')\nreturn 0.0, {{'x': 0.0}}"),
     "'open' is not allowed"),
    ("numpy_loadtxt", reward("d = np.loadtxt('/etc/hostname', dtype=str)\nreturn 0.0, {'x': 0.0}",
                             "import numpy as np"), "'.loadtxt' is not allowed"),
    ("numpy_save", reward(f"np.save('{CANARY}', obs)\nreturn 0.0, {{'x': 0.0}}",
                          "import numpy as np"), "'.save' is not allowed"),
    ("numpy_tofile", reward(f"obs.tofile('{CANARY}')\nreturn 0.0, {{'x': 0.0}}"),
     "'.tofile' is not allowed"),
    ("numpy_fromfile", reward("np.fromfile('/etc/passwd')\nreturn 0.0, {'x': 0.0}",
                              "import numpy as np"), "'.fromfile' is not allowed"),
    ("numpy_memmap", reward(f"np.memmap('{CANARY}', mode='w+', shape=(4,))\nreturn 0.0, {{}}",
                            "import numpy as np"), "'.memmap' is not allowed"),
    ("numpy_ctypeslib", reward("np.ctypeslib.load_library('libc', '/lib')\nreturn 0.0, {}",
                               "import numpy as np"), "'.ctypeslib' is not allowed"),
    ("numpy_private", reward("np._core.multiarray\nreturn 0.0, {}", "import numpy as np"),
     "private attribute '._core'"),
    ("socket", reward("socket.create_connection(('127.0.0.1', 80))\nreturn 0.0, {}",
                      "import socket"), "import of 'socket' is not allowed"),
    ("urllib", reward("return 0.0, {}", "import urllib.request"),
     "import of 'urllib.request' is not allowed"),
    ("subprocess", reward("subprocess.run(['id'])\nreturn 0.0, {}", "import subprocess"),
     "import of 'subprocess' is not allowed"),
    ("os_system", reward("os.system('id')\nreturn 0.0, {}", "import os"),
     "import of 'os' is not allowed"),
    ("os_fork", reward("os.fork()\nreturn 0.0, {}", "from os import fork"),
     "import of 'os' is not allowed"),
    ("env_vars", reward("key = os.environ.get('AWS_SECRET_ACCESS_KEY')\nreturn 0.0, {}",
                        "import os"), "import of 'os' is not allowed"),
    ("sys_modules", reward("sys.modules['os'].system('id')\nreturn 0.0, {}", "import sys"),
     "import of 'sys' is not allowed"),
    ("ctypes", reward("return 0.0, {}", "import ctypes"), "import of 'ctypes' is not allowed"),
    ("importlib", reward("importlib.import_module('os')\nreturn 0.0, {}", "import importlib"),
     "import of 'importlib' is not allowed"),
    ("pickle", reward("pickle.loads(b'')\nreturn 0.0, {}", "import pickle"),
     "import of 'pickle' is not allowed"),
    ("time_sleep", reward("time.sleep(3600)\nreturn 0.0, {}", "import time"),
     "import of 'time' is not allowed"),
    ("dunder_import", reward("__import__('os').system('id')\nreturn 0.0, {}"),
     "'__import__' is not allowed"),
    ("builtins_dict", reward("__builtins__['open']('/etc/passwd')\nreturn 0.0, {}"),
     "'__builtins__' is not allowed"),
    ("eval", reward("eval(\"__import__('os')\")\nreturn 0.0, {}"), "'eval' is not allowed"),
    ("exec", reward("exec('x = 1')\nreturn 0.0, {}"), "'exec' is not allowed"),
    ("getattr_escape", reward("getattr(obs, '__cl' + 'ass__')\nreturn 0.0, {}"),
     "'getattr' is not allowed"),
    ("subclasses", reward("().__class__.__bases__[0].__subclasses__()\nreturn 0.0, {}"),
     "'__subclasses__' is not allowed"),
    ("globals_of_function", reward("reward_fn.__globals__\nreturn 0.0, {}"),
     "'__globals__' is not allowed"),
    ("mro", reward("type(obs).mro()\nreturn 0.0, {}"), "'.mro' is not allowed"),
    ("generator_frame", reward("g = (x for x in [1])\nf = g.gi_frame.f_back\nreturn 0.0, {}"),
     "'.f_back' is not allowed"),
    ("traceback_frame", reward(
        "try:\n    1 / 0\nexcept Exception as e:\n    tb = e.__traceback__\nreturn 0.0, {}"),
     "'__traceback__' is not allowed"),
    ("format_string", reward("s = '{0.__class__.__bases__}'.format(obs)\nreturn 0.0, {}"),
     "reads attributes or items"),
    ("format_computed", reward("t = '{0.__cl' + 'ass__}'\ns = t.format(obs)\nreturn 0.0, {}"),
     "computed string is not allowed"),
    ("format_method_reference", reward("f = '{0.__class__}'.format\ns = f(obs)\nreturn 0.0, {}"),
     "reads attributes or items"),
    ("typing_eval", reward("typing.get_type_hints(reward_fn, globalns={})\nreturn 0.0, {}",
                           "import typing"), "import of 'typing' is not allowed"),
    ("self_parameter_trick", reward("return 0.0, {}", "import collections\n"
                                    "def peek(self):\n    return self._sys\nx = peek(collections)"),
     "private attribute '._sys'"),
    ("module_reached_through_module", reward("statistics.sys.modules\nreturn 0.0, {}",
                                             "import statistics"), "'.sys' is not allowed"),
    ("not_in_numpy_allow_list", reward("np.fft.fft(obs)\nreturn 0.0, {}", "import numpy as np"),
     "'numpy.fft' is not available"),
    ("type_with_special_method", reward(
        "X = type('X', (), {'__init_subclass__': classmethod(print)})\nreturn 0.0, {}"),
     "the string '__init_subclass__' is not allowed"),
    ("string_annotation", "def reward_fn(obs, action, next_obs, info: '().__class__'):\n"
                          "    return 0.0, {}\n", "string annotations are not allowed"),
    ("numpy_frombuffer", reward("np.frombuffer(b'12345678')\nreturn 0.0, {}",
                                "import numpy as np"), "'.frombuffer' is not allowed"),
    ("numpy_raw_buffer_constructor", reward(
        "a = np.ndarray((1,), dtype=object, buffer=b'\\x00' * 8)\nreturn 0.0, {}",
        "import numpy as np"), "cannot be called in generated code"),
    ("infinite_loop", reward("while True:\n    pass"), "ran longer than its 1 s budget"),
    ("loop_swallowing_everything", reward(
        "while True:\n    try:\n        x = 1\n    except:\n        pass"),
     "ran longer than its 1 s budget"),
    ("memory_bomb_numpy", reward("big = np.ones((200000, 200000))\nreturn 0.0, {}",
                                 "import numpy as np"), "MemoryError"),
    ("memory_bomb_list", reward("big = [0] * (10 ** 10)\nreturn 0.0, {}"), "MemoryError"),
    ("deep_recursion", reward("def f(n):\n    return f(n + 1)\nreturn f(0), {}"),
     "RecursionError"),
    ("huge_output", reward("return 0.0, {f'term_{i}': 0.0 for i in range(100000)}"),
     "at most 64"),
    ("nan", reward("return float('nan'), {'x': float('nan')}"), "not finite"),
    ("inf", reward("return float('inf'), {'x': float('inf')}"), "not finite"),
    ("wrong_type_float", reward("return 1.0"), "got float"),
    ("wrong_type_terms", reward("return 1.0, [1.0]"), "got a tuple of 2 (float, list)"),
    ("wrong_type_string_term", reward("return 1.0, {'x': 'fast'}"), "must be numbers"),
    ("write_obs", reward("obs[0] = 1e6\nreturn 0.0, {'x': 0.0}"), "read-only"),
    ("write_qpos", reward("info['qpos'][2] = 10.0\nreturn 0.0, {'x': 0.0}"), "read-only"),
    ("syntax_error", "def reward_fn(obs, action, next_obs, info)\n    return 0.0, {}\n",
     "does not parse: line 1"),
    ("raises_at_import", "x = 1 / 0\n", "failed to load: ZeroDivisionError"),
]  # fmt: skip

STATEFUL_CLOSURE = """
def make_reward():
    steps = [0]

    def reward_fn(obs, action, next_obs, info):
        if info["_episode_start"]:
            steps[0] = 0
        steps[0] += 1
        if steps[0] > 200:
            raise RuntimeError("the counter was never reset at an episode start")
        return 1.0, {"alive": 1.0}

    return reward_fn


reward_fn = make_reward()
"""

DUCK_TYPED_CLASS = """
import numpy as np


class Upright:
    def __init__(self):
        self._prev = None

    def compute(self, obs, action, next_obs, info):
        self._prev = obs
        upright = float(np.cos(next_obs[1]))
        return upright, {"upright": upright}

    @property
    def latex(self):
        return r"r = \\cos\\theta"

    @property
    def terms(self):
        return ["upright"]
"""

PLAIN_REWARD_FN = """
import math

import numpy as np


def reward_fn(obs, action, next_obs, info):
    forward = float(info["x_velocity"])
    ctrl = -0.1 * float(np.sum(np.square(action)))
    return forward + ctrl, {"forward": forward, "ctrl": ctrl, "zero": math.sin(0.0)}
"""

SUBCLASS_WITH_SUPER = """
class Forward(RewardFunction):
    def __init__(self):
        super().__init__()
        self.scale = 1.0

    def compute(self, obs, action, next_obs, info):
        v = self.scale * info["x_velocity"]
        return v, {"forward": v}
"""
