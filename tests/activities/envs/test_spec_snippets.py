"""Every code snippet the author is shown runs as written, in the real sandbox.

The env spec of every env and the reward and judge contracts are searched for code: fenced
```python blocks and inline spans that call the behaviour library (`P.name(...)`). Each runs the
way the author's code would:

- a block that defines `judge_fn` is a judge module, judged in the sandbox on real episodes;
- a block that defines a `compute` class or `reward_fn` is a reward module, scored in the
  sandbox on every step of real episodes;
- any other block is a fragment: its imports and UPPER_CASE constants open a module and the
  rest runs inside `judge_fn` when it reads `trajectory`, else inside `compute`;
- an inline span runs as `value = <span>` in the same way, after its document's imports and
  constants (the blocks the text shows before it); a span that is a primitive's listed signature
  (`P.height(env, data)`) is checked against the library instead.

The episodes: random actions, then random states spinning the torso both ways (the envs' own
termination off where it can be), so that phases gated on heights and turns are reached. A
snippet that raises anywhere (a name the text never defines, a refused import or attribute)
fails its test, naming the snippet.
"""

from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import activities.llm.agents as agents
from activities.behaviours.catalog import primitives_for
from activities.behaviours.layout import FREE, PLANAR, SWIMMER, layout
from activities.envs.catalog import ENVS, facts
from activities.envs.spec import env_spec
from activities.sandbox.client import SandboxClient
from activities.sandbox.judge_client import judge_all
from activities.sandbox.judge_code import JudgeLoadError
from activities.sandbox.loaded_reward import load_reward
from activities.sandbox.policy import (
    ALLOWED_BUILTINS,
    ALLOWED_MODULES,
    FORBIDDEN_ATTRIBUTES,
    FORBIDDEN_NAMES,
)
from activities.sandbox.reward_client import SandboxRewards
from activities.sandbox.reward_code import RewardLoadError
from activities.sandbox.static_check import SandboxViolation, check_source
from activities.training.reward_runtime import LocalRewards
from activities.training.rollout import collect
from activities.training.sim import make_env
from workflows.contracts.session import ENV_IDS

PROMPTS = Path(agents.__file__).parent / "prompts"
CONTRACTS = ("reward_contract", "judge_contract")
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
CALL = re.compile(r"\bP\.\w+\(")
REWARD_NAMES = {"obs", "action", "next_obs", "info"}
STEPS = 60
SPIN = 8.0  # rad/s added about each root axis in the spinning episodes
ZERO = 'def reward_fn(obs, action, next_obs, info):\n    return 0.0, {"zero": 0.0}\n'


@pytest.fixture(scope="module")
def box() -> Iterator[SandboxClient]:
    with SandboxClient() as client:
        yield client


# --- finding the snippets ---------------------------------------------------------------------


def _contract(name: str) -> str:
    return (PROMPTS / f"{name}.md").read_text()


def _blocks(text: str) -> list[str]:
    found = FENCE.findall(text)
    # Every fence the author sees holds Python that runs: no other kind of code block.
    assert all(lang == "python" for lang, _ in found), [lang for lang, _ in found]
    return [body for _, body in found]


def _inline(text: str) -> list[str]:
    return [s for s in re.findall(r"`([^`\n]+)`", FENCE.sub("", text)) if CALL.search(s)]


def _split(block: str) -> tuple[list[str], list[str]]:
    """(prelude, body): imports and UPPER_CASE constants, then everything else."""
    prelude: list[str] = []
    body: list[str] = []
    for stmt in ast.parse(block).body:
        constant = isinstance(stmt, ast.Assign) and all(
            isinstance(t, ast.Name) and t.id.isupper() for t in stmt.targets
        )
        (prelude if isinstance(stmt, ast.Import | ast.ImportFrom) or constant else body).append(
            ast.unparse(stmt)
        )
    return prelude, body


def _defines(block: str) -> set[str]:
    tree = ast.parse(block)
    names = {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef)}
    methods = {
        m.name
        for n in tree.body
        if isinstance(n, ast.ClassDef)
        for m in n.body
        if isinstance(m, ast.FunctionDef)
    }
    return names | ({"reward_fn"} if "compute" in methods else set())


def _reads(code: str) -> set[str]:
    return {n.id for n in ast.walk(ast.parse(code)) if isinstance(n, ast.Name)}


def _env_of(prelude: list[str], default: str | None) -> str:
    for line in prelude:
        if line.startswith("ENV = "):
            return str(ast.literal_eval(line.partition("=")[2].strip()))
    assert default, f"a snippet with no env id to run on: {prelude}"
    return default


def _fragment(prelude: list[str], body: list[str]) -> tuple[str, str]:
    """A fragment as a whole module: ("reward" or "judge", source)."""
    code = "\n".join(body)
    head = "\n".join(prelude)
    reads = _reads(code) if code else set()
    if "trajectory" in reads:
        assert not reads & REWARD_NAMES, f"reward and judge names in one snippet: {code}"
        return "judge", (
            f"{head}\n\n\ndef judge_fn(trajectory):\n{textwrap.indent(code, '    ')}\n"
            '    return {"criteria": {}, "measured": {}, "diagnosis": "ran", "failure_tags": []}\n'
        )
    return "reward", (
        f"{head}\n\n\nclass Snippet(RewardFunction):\n"
        f"    def compute(self, obs, action, next_obs, info):\n"
        f"{textwrap.indent(code or 'pass', ' ' * 8)}\n"
        '        return 0.0, {"snippet": 0.0}\n'
    )


def snippets(text: str, env_id: str | None) -> list[tuple[str, str, str, str]]:
    """(kind, env id, module source, the snippet as shown) for every snippet in a text."""
    out, shown_prelude = [], []
    for block in _blocks(text):
        prelude, body = _split(block)
        shown_prelude += [p for p in prelude if p not in shown_prelude]
        defined = _defines(block)
        if "judge_fn" in defined:
            out.append(("judge", _env_of(prelude, env_id), block, block))
        elif "reward_fn" in defined:
            out.append(("reward", _env_of(prelude, env_id), block, block))
        else:
            kind, source = _fragment(prelude, body)
            out.append((kind, _env_of(prelude, env_id), source, block))
    signatures = {i.signature for e in ENVS for i in primitives_for(e)}
    for span in _inline(text):
        if span in signatures:
            continue
        kind, source = _fragment(shown_prelude, [f"value = {span}"])
        out.append((kind, _env_of(shown_prelude, env_id), source, span))
    return out


# --- running them as the author's code runs ----------------------------------------------------


def _spinning(env: Any, spin: float, seed: int) -> Any:
    """An act() that first puts the body in a random state turning about its root axes."""
    u, lay = env.unwrapped, layout(env.spec.id)
    rng = np.random.default_rng(seed)

    def act(_obs: np.ndarray) -> np.ndarray:
        q, v = u.data.qpos.copy(), rng.normal(scale=2.0, size=u.model.nv)
        if lay.root == PLANAR:
            v[2] -= spin  # rooty turns nose-down: this pitches nose-up
        elif lay.root == SWIMMER:
            v[2] += spin
        elif lay.root == FREE:
            v[3:6] += (spin, -spin, spin)
        if lay.height_index is not None:
            q[lay.height_index] = rng.uniform(0.3, 1.8) - lay.height_offset
        u.set_state(q, v)
        return env.action_space.sample()

    return act


def episodes(env_id: str, rewards: Any) -> list[dict[str, np.ndarray]]:
    """Random actions, then random states spinning one way and the other, scored by `rewards`."""
    out = []
    for k, spin in enumerate((0.0, SPIN, -SPIN)):
        free = spin and facts(env_id).terminates and layout(env_id).root != "fixed"
        env = make_env(env_id, rewards, {"terminate_when_unhealthy": False} if free else None)
        env.action_space.seed(k)
        act = _spinning(env, spin, k) if spin else (lambda _obs, e=env: e.action_space.sample())
        try:
            out.append(collect(env, act, k, STEPS)[0])
        finally:
            env.close()
    return out


@cache
def _trajectories(env_id: str) -> tuple[dict[str, np.ndarray], ...]:
    """What judge snippets are tried on: the episodes above, and one cut to its first step."""
    full = episodes(env_id, LocalRewards(load_reward(ZERO)))
    short = {k: (v[:1] if np.ndim(v) else v) for k, v in full[0].items()}
    return (*full, short)


def run(box: SandboxClient, kind: str, env_id: str, source: str) -> None:
    """Run one module as the author's would run; raises what the sandbox reports."""
    if kind == "judge":
        judge_all(box, source, "judge_fn.py", list(_trajectories(env_id)), [])
    else:
        episodes(env_id, SandboxRewards(box, source, "reward_fn.py"))


def _run_all(box: SandboxClient, text: str, env_id: str | None) -> int:
    found = snippets(text, env_id)
    for kind, env, source, shown in found:
        try:
            run(box, kind, env, source)
        except (RewardLoadError, JudgeLoadError) as exc:
            pytest.fail(f"this {kind} snippet fails on {env}: {exc}\n---\n{shown}")
    return len(found)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_every_snippet_of_the_env_spec_runs_as_written(box, env_id):
    assert _run_all(box, env_spec(env_id).to_prompt(), env_id) >= 2


@pytest.mark.parametrize("name", CONTRACTS)
def test_every_snippet_of_the_contracts_runs_as_written(box, name):
    assert _run_all(box, _contract(name), None) >= 1


@pytest.mark.parametrize(
    "text",
    [
        "Measures take the env id first: `P.height(ENV, info)`.",  # the spec's old idiom
        "```python\nimport typing\n\nENV = 'Hopper-v5'\nx = 1\n```",
        "```python\nENV = 'Hopper-v5'\nok = hasattr(info, 'qpos')\n```",
        "```python\nENV = 'Hopper-v5'\n\n\nclass R(RewardFunction):\n    def compute(self, obs, "
        "action, next_obs, info):\n        self.data = 1\n        return 0.0, {}\n```",
        "```python\nimport numpy as np\n\nENV = 'Hopper-v5'\nfirst = trajectory['qpos'][0, 0]\n"
        "x = np.fft.rfft(trajectory['qpos'][:, 0])\n```",
    ],
)
def test_the_check_catches_what_cost_authors_fix_rounds(box, text):
    with pytest.raises(pytest.fail.Exception, match="snippet fails"):
        _run_all(box, text, "Hopper-v5")


def test_the_spec_lists_every_primitive_with_its_full_signature():
    for env_id in ENV_IDS:
        prompt = env_spec(env_id).to_prompt()
        for item in primitives_for(env_id):
            assert f"`{item.signature}`" in prompt, (env_id, item.signature)
    assert "`P.height(env, data)`" in env_spec("Hopper-v5").to_prompt()


# --- the refusals, listed where the author reads them ------------------------------------------


def _listed(text: str, head: str) -> list[str]:
    """The comma-separated names after `head` on its line, up to the first full stop."""
    line = next(ln for ln in text.splitlines() if ln.startswith(head))
    return [n.strip() for n in line[len(head) :].split(". ")[0].split(",")]


@pytest.mark.parametrize("name", CONTRACTS)
def test_the_contracts_list_exactly_what_the_sandbox_refuses(name):
    """Read off the same constants the sandbox's layers enforce, so the lists cannot drift."""
    text = _contract(name)
    modules = {m.partition(".")[0] for m in ALLOWED_MODULES} - {"__future__"}
    assert set(_listed(text, "- imports of anything but:")) == modules
    assert set(_listed(text, "- the names:")) == {n for n in FORBIDDEN_NAMES if n[0] != "_"}
    builtins = {n for n in ALLOWED_BUILTINS if n[0].islower()}
    assert set(_listed(text, "- any builtin but:")) == builtins
    attributes = _listed(text, "- attributes with these names, on any object, `self` included:")
    assert set(attributes) == FORBIDDEN_ATTRIBUTES
    for what in ("`typing`", "`dataclasses`", "hasattr", "`self.data`"):
        assert what in text


@pytest.mark.parametrize(
    "code",
    [
        "import typing\n",
        "import dataclasses\n",
        "x = hasattr(1, 'real')\n",
        "class R:\n    def f(self):\n        return self.data\n",
    ],
)
def test_the_named_examples_are_refused(code):
    with pytest.raises(SandboxViolation):
        check_source(code, "snippet.py")
