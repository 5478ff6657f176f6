"""policyforge from Python: start and follow sessions, load their policies and act with them.

    from policyforge import Session, load_policy

    session = Session.start("run forward as fast as possible", "HalfCheetah-v5")
    result = session.wait()                 # the SessionResult, once it ends
    policy = session.policy()               # or load_policy("pf-run-forward-1a2b3c4d"),
                                            # load_policy("runs/my-run/model.zip")
    env = policy.make_env()                 # the env as judged, with any phase/clock inputs
    obs, _ = env.reset(seed=0)
    action, _ = policy.predict(obs)         # deterministic, normaliser applied

The same code as the `policyforge` command (workers/cli/sessions.py,
workers/cli/policies.py): it finds a running `policyforge dev` the same way, and loads policies
without unpickling anything.
"""

from activities.sandbox.reward_code import RewardFunction
from policyforge.session import Session, SessionFailed, sessions
from workers.cli.policies import Policy, PolicyError, load_policy
from workers.cli.session_state import SessionState

__all__ = [
    "Policy",
    "PolicyError",
    "RewardFunction",
    "Session",
    "SessionFailed",
    "SessionState",
    "load_policy",
    "sessions",
]
