"""What a scripted language model answers with in the tests and the chaos drill: the criteria,
the trajectory judge, and which agent a request is for (read from its system prompt)."""

from __future__ import annotations

from typing import Any

CRITERIA = [
    {
        "name": "stays_up",
        "description": "It does not end the episode early.",
        "measure": "1 when terminated[-1] is false",
        "target": 1.0,
        "direction": "at_least",
    },
    {
        "name": "moves",
        "description": "Its joints move.",
        "measure": "mean absolute qvel, rad/s",
        "target": 0.001,
        "direction": "at_least",
    },
    {
        "name": "finite_reward",
        "description": "The reward stays finite.",
        "measure": "1 when every step's reward is finite",
        "target": 1.0,
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

# The trajectory judge is satisfied by any policy that stays up, moves and acts steadily (a
# deterministic policy, trained or not); random actions jump about and a fall ends early, so
# validation's episodes fail it, as they must. What passes or fails an iteration is the
# scripted video judge, and a disagreement brings in the synthesizer.
JUDGE = """
import numpy as np

def judge_fn(trajectory):
    up = 0.0 if trajectory["terminated"][-1] else 1.0
    motion = float(np.mean(np.abs(trajectory["qvel"])))
    moves = 1.0 if motion >= 0.001 else 0.0
    finite = 1.0 if np.all(np.isfinite(trajectory["reward"])) else 0.0
    actions = trajectory["action"]
    jumps = float(np.mean(np.abs(np.diff(actions, axis=0)))) if len(actions) > 1 else 0.0
    steady = 1.0 if jumps <= 0.3 else 0.0
    return {
        "criteria": {"stays_up": up, "moves": moves, "finite_reward": finite, "steady": steady},
        "measured": {"stays_up": up, "moves": motion, "finite_reward": finite, "steady": jumps},
        "diagnosis": f"mean |qvel| {motion:.3f}; terminated: {bool(trajectory['terminated'][-1])}; "
        f"mean action change {jumps:.2f}",
        "failure_tags": [] if up else ["fell"],
    }
"""

AGENTS = {
    "judgment synthesizer": "synthesizer",
    "video question answerer": "video_question",
    "visual judge planner": "vlm_criteria",
    "visual judge.": "vlm_judge",
    "intent elicitor": "elicitor",
    "reward author": "reward_author",
    "judge author": "judge_author",
    "reward reviewer": "reviewer",
    "code fixer": "fixer",
    "reward reviser": "reviser",
}


def agent_of(system: str) -> str:
    first = system.strip().splitlines()[0]
    return next(name for key, name in AGENTS.items() if f"policyforge's {key}" in first)


def agent_asked(body: dict[str, Any]) -> str:
    """Which agent an Anthropic request body is from (its system prompt, text or blocks)."""
    system = body.get("system")
    if isinstance(system, list):
        system = " ".join(block.get("text", "") for block in system)
    return agent_of(str(system))
