"""The one reward the runner runs in-process, unguarded: the benches' own ("run forward").

x velocity minus 0.1 |a|^2. `policyforge bench-sandbox` trains it with and without the sandbox
(`ChildRequest.unguarded`), and the child refuses any other source in an unguarded run;
`bench` trains it through the real child. Tests use it as their well-behaved reward.
"""

RUN_FORWARD = """import numpy as np


class RunForward(RewardFunction):
    @property
    def terms(self):
        return ["forward", "ctrl"]

    @property
    def latex(self):
        return r"v_x - 0.1 \\lVert a \\rVert^2"

    def compute(self, obs, action, next_obs, info):
        terms = {
            "forward": float(info["x_velocity"]),
            "ctrl": -0.1 * float(np.sum(np.square(action))),
        }
        return sum(terms.values()), terms
"""
