"""Every reward form the README documents checks and loads through `policyforge check-reward`
(the sandbox sessions use), and so does the Prompt2Policy user guide's example class as written
there, with its own import line replaced by ours (p2p's cannot exist here)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from activities.sandbox.loaded_reward import load_reward
from activities.sandbox.reward_code import RewardLoadError
from tests.workers.test_cli import run_cli

GUIDE = """from policyforge import RewardFunction

class SpeedReward(RewardFunction):
    def compute(self, obs, action, next_obs, info):
        v = float(info.get("x_velocity", 0.0))
        ctrl = -0.1 * float(sum(a**2 for a in action))
        return v + ctrl, {"speed": v, "ctrl": ctrl}

    @property
    def latex(self):
        return r"r = v_x - 0.1 \\|a\\|^2"

    @property
    def terms(self):
        return {"speed": "forward velocity", "ctrl": "control penalty"}
"""

README_CLASS = """import numpy as np


class RunForward(RewardFunction):
    def compute(self, obs, action, next_obs, info):
        terms = {"speed": info["x_velocity"], "ctrl": -0.1 * float(np.sum(np.square(action)))}
        return sum(terms.values()), terms

    @property
    def latex(self):
        return r"r = v_x - 0.1 \\|a\\|^2"

    @property
    def terms(self):
        return ["speed", "ctrl"]
"""

PLAIN_FUNCTION = """TERMS = ["speed", "ctrl"]
LATEX = r"r = v_x - 0.1 \\|a\\|^2"


def reward_fn(obs, action, next_obs, info):
    v = float(info["x_velocity"])
    ctrl = -0.1 * float(sum(a * a for a in action))
    return v + ctrl, {"speed": v, "ctrl": ctrl}
"""

CLOSURE = """def make(weight):
    def reward(obs, action, next_obs, info):
        v = float(info["x_velocity"])
        ctrl = -weight * float(sum(a * a for a in action))
        return v + ctrl, {"speed": v, "ctrl": ctrl}
    return reward


reward_fn = make(0.1)
"""

DUCK_CLASS = """class Speed:
    latex = "r = v_x - 0.1 |a|^2"
    terms = ["speed", "ctrl"]

    def compute(self, obs, action, next_obs, info):
        v = float(info["x_velocity"])
        ctrl = -0.1 * float(sum(a * a for a in action))
        return v + ctrl, {"speed": v, "ctrl": ctrl}
"""

SHAPED = README_CLASS + '\nSHAPING = {"max_episode_steps": 500}\n'

FORMS = {
    "prompt2policy_guide": GUIDE,
    "readme_class": README_CLASS,
    "plain_reward_fn": PLAIN_FUNCTION,
    "closure": CLOSURE,
    "class_without_base": DUCK_CLASS,
    "with_shaping": SHAPED,
    "own_import_and_list": "from policyforge import RewardFunction  # for editors\n" + README_CLASS,
}


@pytest.mark.parametrize("form", sorted(FORMS))
def test_each_documented_reward_form_loads_through_the_python_layers(form: str):
    """The loader the sandbox runs (static check, restricted builtins, runtime guards)."""
    reward = load_reward(FORMS[form], f"{form}.py")
    assert reward.terms in ([], ["speed", "ctrl"])
    obs = np.zeros(17)
    total, terms = reward(obs, np.full(6, 0.5), obs, {"x_velocity": 1.0})
    assert terms == {"speed": 1.0, "ctrl": pytest.approx(-0.15)}
    assert total == pytest.approx(0.85)


@pytest.mark.parametrize("form", ["prompt2policy_guide", "own_import_and_list"])
def test_the_guides_example_checks_in_the_sandbox_as_written(form: str, tmp_path: Path):
    path = tmp_path / f"{form}.py"
    path.write_text(FORMS[form])
    proc = run_cli("check-reward", str(path), "--env", "HalfCheetah-v5", "--steps", "50")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "OK on HalfCheetah-v5" in proc.stdout
    rows = {line.split()[0] for line in proc.stdout.splitlines()[3:] if line.strip()}
    assert {"speed", "ctrl"} <= rows, proc.stdout


def test_the_guides_class_loads_outside_the_sandbox_too():
    """`from policyforge import RewardFunction` is a real import: the file runs as a module."""
    namespace: dict = {}
    exec(compile(GUIDE, "guide.py", "exec"), namespace)  # noqa: S102 - our own test source
    reward = namespace["SpeedReward"]()
    total, terms = reward.compute(None, [0.5, 0.5], None, {"x_velocity": 1.0})
    assert terms == {"speed": 1.0, "ctrl": -0.05} and total == pytest.approx(0.95)


def test_terms_of_another_shape_are_refused_in_one_line():
    source = README_CLASS.replace('return ["speed", "ctrl"]', 'return {"speed": 1}')
    with pytest.raises(RewardLoadError) as info:
        load_reward(source, "bad_terms.py")
    assert "`terms` must be a list of term names, or a dict of term name to description" in (
        str(info.value)
    )


@pytest.mark.parametrize(
    "line",
    [
        "from policyforge import RewardFunction; import os",
        "from policyforge import RewardFunction, Session",
        "from policyforge import *",
        "import policyforge",
    ],
)
def test_only_the_exact_import_line_of_the_base_class_is_blanked(line: str):
    """Anything more on the line than the base class's import stays and is refused."""
    with pytest.raises(RewardLoadError, match="not allowed"):
        load_reward(line + "\n" + README_CLASS, "sneaky.py")
