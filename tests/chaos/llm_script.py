"""What the fake LLM server answers in chaos sessions: every agent of a one-iteration session
without the video judge answers at once, with the test suite's criteria, reward and judge."""

from __future__ import annotations

from typing import Any

from tests.builders import FORWARD_REWARD
from tests.fakes.agents import CRITERIA, JUDGE, agent_of
from tests.fakes.llm_server import Tools


class ChaosScript:
    """A stateless responder for `FakeLLMServer.responder` (safe under concurrent sessions)."""

    _reward = FORWARD_REWARD

    def __call__(self, provider: str, body: dict[str, Any]) -> Any:
        """The reply (a `Tools`) to one request, chosen by the agent its system prompt names."""
        system = body.get("system")
        if isinstance(system, list):
            system = " ".join(block.get("text", "") for block in system)
        agent = agent_of(str(system))
        call = self._answer(agent)
        return Tools([call], input_tokens=1000, output_tokens=100)

    def _answer(self, agent: str) -> tuple[str, dict[str, Any]]:
        if agent == "elicitor":
            return "submit_criteria", {"criteria": CRITERIA}
        if agent == "reward_author":
            return "submit_reward", {"code": self._reward, "summary": "forward speed"}
        if agent == "judge_author":
            return "submit_judge", {"code": JUDGE, "summary": "up and moving"}
        if agent == "reviewer":
            return "submit_review", {"verdict": "LGTM", "notes": "fine"}
        if agent == "fixer":
            terms = ["forward", "ctrl"]
            return "submit_reward", {"code": self._reward, "latex": "r = v_x", "terms": terms}
        if agent == "reviser":
            args = {
                "diagnosis": "slow",
                "changes": "none",
                "code": self._reward,
                "terms": ["forward", "ctrl"],
                "timesteps": 1024,
            }
            return "submit_revision", args
        raise ValueError(f"the chaos script does not answer the {agent}")
