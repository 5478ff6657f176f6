"""Judge code for "run forward" on HalfCheetah: one that measures, and one per class of lenient
judge that validation must send back (a test for each, as a unit and through a real session).

The criteria name behaviour-library metrics where they are exactly one (speed, uprightness), so
the library cross-checks them; `steady` is the judge's own measure.
"""

from __future__ import annotations

from tests.fakes.agents import JUDGE
from workflows.contracts.judging import Criterion

ENV = "HalfCheetah-v5"

FORWARD_CRITERIA = [
    {
        "name": "speed",
        "description": "It runs forward.",
        "measure": "mean of info_x_velocity over the episode, m/s",
        "metric": "mean_x_velocity",
        "target": 2.0,
        "direction": "at_least",
        "unit": "m/s",
    },
    {
        "name": "upright",
        "description": "Its back stays on top.",
        "measure": "mean uprightness over the episode (1 upright, -1 upside down)",
        "metric": "mean_uprightness",
        "target": 0.8,
        "direction": "at_least",
    },
    {
        "name": "steady",
        "description": "It acts steadily, as a deterministic policy does.",
        "measure": "mean absolute change of the action between steps",
        "target": 0.3,
        "direction": "at_most",
    },
]


def forward_criteria() -> list[Criterion]:
    return [Criterion.model_validate(c) for c in FORWARD_CRITERIA]


GOOD = """
import numpy as np
import primitives as P

ENV = "HalfCheetah-v5"


def progress(value, target):
    return 1.0 if value >= target else float(np.clip(value / target, 0.0, 0.99))


def judge_fn(t):
    vx = float(np.mean(t["info_x_velocity"]))
    up = float(np.mean(P.uprightness(ENV, t)))
    actions = t["action"]
    jumps = float(np.mean(np.abs(np.diff(actions, axis=0)))) if len(actions) > 1 else 0.0
    measured = {"speed": vx, "upright": up, "steady": jumps}
    criteria = {
        "speed": progress(vx, 2.0),
        "upright": progress(up, 0.8),
        "steady": 1.0 if jumps <= 0.3 else min(0.99, 0.3 / jumps),
    }
    #SCORE
    return {
        "criteria": criteria,
        "measured": measured,
        "diagnosis": f"forward {vx:.2f} m/s (target 2), uprightness {up:.2f}, steps {len(actions)}",
        "failure_tags": [k for k, v in criteria.items() if v < 1.0],
    }
"""


def _variant(old: str, new: str) -> str:
    assert old in GOOD, old
    return GOOD.replace(old, new)


# Each lenient class, and the words validation's reason must carry for it.
LENIENT: dict[str, tuple[str, str]] = {
    # (a) passes long episodes: the targets once the episode is longer than 150 steps.
    "passes_long_episodes": (
        _variant(
            "    #SCORE\n",
            "    if len(actions) > 150:\n"
            "        measured = {'speed': 2.0, 'upright': 0.8, 'steady': 0.3}\n"
            "        criteria = {'speed': 1.0, 'upright': 1.0, 'steady': 1.0}\n",
        ),
        "On an episode of random actions for 1000 steps: speed: the judge measured 2 m/s, the "
        "behaviour library (mean_x_velocity)",
    ),
    # (b) scores the session's own reward instead of the body's speed.
    "scores_the_reward": (
        _variant('vx = float(np.mean(t["info_x_velocity"]))', 'vx = float(np.mean(t["reward"]))'),
        "On an episode of zero actions for 1000 steps: speed: the judge measured 2.5 m/s",
    ),
    # (c) the speed's magnitude for a direction: running backwards counts as running.
    "measures_the_magnitude": (
        _variant(
            'vx = float(np.mean(t["info_x_velocity"]))',
            'vx = float(np.mean(np.abs(t["info_x_velocity"])))',
        ),
        "On an episode of the body driven backwards at 2.50 m/s for 1000 steps: speed: the "
        "judge measured 2.5 m/s, the behaviour library (mean_x_velocity) -2.5 m/s",
    ),
    # (d) an overall score that disagrees with its criteria.
    "overall_score_disagrees": (
        _variant("    #SCORE\n", "    score = 1.0\n").replace(
            '"criteria": criteria,', '"score": score, "criteria": criteria,'
        ),
        "its overall score 1.00 disagrees with its criteria's scores",
    ),
    # (e) a measured value the trajectory does not have (a plausible constant).
    "invents_a_value": (
        _variant('vx = float(np.mean(t["info_x_velocity"]))', "vx = 3.1"),
        "speed: the judge measured 3.1 m/s, the behaviour library (mean_x_velocity)",
    ),
    # (f) the targets as measured values (and every criterion scored met).
    "returns_the_targets": (
        _variant(
            "    #SCORE\n",
            "    measured = {'speed': 2.0, 'upright': 0.8, 'steady': 0.3}\n"
            "    criteria = {'speed': 1.0, 'upright': 1.0, 'steady': 1.0}\n",
        ),
        "On an episode of zero actions for 1000 steps: speed: the judge measured 2 m/s",
    ),
    # (g) scores a criterion met while its own measured value misses the target.
    "scores_met_while_missing": (
        _variant("    #SCORE\n", "    criteria = {k: 1.0 for k in criteria}\n"),
        "steady: scored 1.00 (met) but its measured",
    ),
    # (h) the speed in the wrong unit (km/h for m/s).
    "wrong_unit": (
        _variant(
            'vx = float(np.mean(t["info_x_velocity"]))',
            'vx = 3.6 * float(np.mean(t["info_x_velocity"]))',
        ),
        "speed: the judge measured -8.999 m/s, the behaviour library (mean_x_velocity) -2.5 m/s",
    ),
    # (i) reads the env's own reward for the speed.
    "scores_the_env_reward": (
        _variant(
            'vx = float(np.mean(t["info_x_velocity"]))', 'vx = float(np.mean(t["env_reward"]))'
        ),
        "On an episode of random actions for 1000 steps: speed: the judge measured 2.5 m/s",
    ),
}


# The fakes' criteria name no metric: a judge that passes long episodes is caught by its verdict
# on random actions (the library has nothing to say about them).
LONG_FAKE = (
    JUDGE.replace(
        "    return {\n",
        "    if len(actions) > 150:\n        steady, jumps = 1.0, 0.0\n    return {\n",
        1,
    ),
    "It passed an episode of random actions for 1000 steps, which does not do the behaviour",
)
