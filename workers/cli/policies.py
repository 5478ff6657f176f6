"""A trained policy to act with, from a run folder or a session's best run, read without
unpickling anything.

A folder (or its model.zip) is read with the project's safe loaders (`policy_io`: only
policyforge.json, the weights' `.pth` members and vecnormalize.npz beside it; a tampered or
foreign file is refused in one line). A session id is looked up on Temporal (its result, or its
status while it runs), and its best run's files come from S3 into a temporary folder, read the
same way. `policyforge.load_policy`, `policyforge.Session.policy` and `policyforge play` are
this module.

A policy trained with SHAPING's `phases` or `clock` takes inputs no env gives: its run's
summary.json (written by the trainer) says how they were counted, and `Policy.make_env`
appends them as training did (`phase_clock`). A bare model.zip that needs them cannot be
played on the env alone, and says so.
"""

from __future__ import annotations

import json
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from activities.envs.catalog import ENVS, facts
from workflows.contracts.judging import CriterionScore
from workflows.contracts.keys import MODEL, SUMMARY, VECNORMALIZE
from workflows.contracts.shown import shown


class PolicyError(ValueError):
    """A policy that cannot be loaded or played here; the message says why, in one line."""


@dataclass(frozen=True)
class Origin:
    """Where a policy came from: a file, or a session's best run and how it was judged."""

    label: str
    session_id: str | None = None
    iteration: int | None = None
    run_name: str | None = None
    score: float | None = None
    # The judged episode: its seed and step cap (None: the env's episode length).
    seed: int = 0
    eval_steps: int | None = None
    criteria: tuple[CriterionScore, ...] = ()


class Policy:
    """A loaded policy: `predict` acts on the env's observations (with the phase and clock
    inputs appended when it has them: use `make_env`), through its normaliser."""

    def __init__(
        self,
        model: Any,
        normalizer: Any,
        *,
        env_id: str | None,
        shaping: dict[str, Any] | None,
        env_kwargs: dict[str, Any],
        origin: Origin,
    ) -> None:
        from activities.training.evaluation import deterministic_act

        self.model, self.normalizer = model, normalizer
        self.env_id = env_id
        # What the run trained under (its summary.json): SHAPING, and the env's settings.
        self.shaping, self.env_kwargs = shaping, env_kwargs
        self.origin = origin
        self._act = deterministic_act(model, normalizer)

    @property
    def algo(self) -> str:
        """ppo, sac or td3."""
        from activities.training.policy_meta import algo_name

        return algo_name(self.model)

    @property
    def inputs(self) -> int:
        """How many numbers the policy acts on."""
        return int(self.model.observation_space.shape[0])

    def predict(
        self,
        observation: np.ndarray,
        state: Any = None,
        episode_start: Any = None,
        deterministic: bool = True,
    ) -> tuple[np.ndarray, None]:
        """The action for an observation (or a batch of them), as Stable-Baselines3's
        `predict` returns it: (action, None). The normaliser is applied here."""
        obs = np.asarray(observation, dtype=np.float64)
        if obs.ndim == 0 or obs.shape[-1] != self.inputs:
            raise PolicyError(
                f"the policy acts on {self.inputs} numbers, got an observation of shape "
                f"{obs.shape}" + (" (use policy.make_env(): it adds them)" if self._extra else "")
            )
        if deterministic:
            return np.asarray(self._act(obs)), None
        norm = self.normalizer.normalize_obs(obs) if self.normalizer is not None else obs
        return np.asarray(self.model.predict(norm, deterministic=False)[0]), None

    @property
    def _extra(self) -> int:
        return self.inputs - facts(self.env_id).obs_dim if self.env_id in ENVS else 0

    def make_env(self, render_size: int | None = None) -> gym.Env:
        """The policy's env as it was judged (SHAPING's termination band), its observations
        followed by the phase and clock inputs the policy takes, counted as training counted
        them; `info` holds qpos and qvel after each step."""
        from activities.training.batched.shaping import evaluation_clock, termination_kwargs
        from activities.training.phase_clock import with_inputs
        from activities.training.reward_runtime import TransitionTap
        from activities.training.sim import make_env

        if self.env_id is None:
            raise PolicyError("which environment? give env_id (play: --env)")
        try:
            kwargs = {**self.env_kwargs, **termination_kwargs(self.shaping, self.env_id)}
            # Foot and knee readings in info too: criteria may measure them.
            tap = TransitionTap(make_env(self.env_id, None, kwargs, render_size), sensors=True)
            limit = int(tap.spec.max_episode_steps or 0) if tap.spec is not None else 0
            tap.clock = evaluation_clock(self.shaping, self.env_id, limit)
        except ValueError as exc:  # ShapingError: a summary.json that does not apply
            raise PolicyError(f"SHAPING of this policy: {shown(exc)}") from None
        width = tap.clock.width if tap.clock is not None else 0
        if width != self._extra:
            tap.close()
            raise PolicyError(_needs_inputs(self.origin.label, self.inputs, self.env_id))
        return _WithInputs(tap, with_inputs(tap, width).observation_space)


class _WithInputs(gym.ObservationWrapper):
    """Observations followed by the policy's phase and clock inputs (the tap keeps them)."""

    def __init__(self, tap: Any, space: gym.Space) -> None:
        super().__init__(tap)
        self.tap = tap
        self.observation_space = space

    def observation(self, observation: Any) -> Any:
        return self.tap.policy_obs(observation)


def _needs_inputs(label: str, inputs: int, env_id: str) -> str:
    return (
        f"{label} takes {inputs} inputs, {env_id} gives {facts(env_id).obs_dim}: the policy "
        "needs its session's phase/clock inputs (SHAPING); play it by session id"
    )


def is_local(source: str | Path) -> bool:
    """Whether `source` names a file or folder (else it is a session id)."""
    text = str(source)
    return Path(text).exists() or text.endswith((".zip", "/"))


def load_policy(source: str | Path, env_id: str | None = None) -> Policy:
    """A policy from a model.zip (its vecnormalize.npz and summary.json beside it, if there),
    a folder holding one, or a session id (its best run so far, from S3); PolicyError in one
    line for a file that is not a policyforge policy or a session with none yet."""
    if is_local(source):
        path = Path(source)
        return load_folder(path / MODEL if path.is_dir() else path, env_id)
    from workers.client import connect, run_sync
    from workers.dev.dev_record import use_dev_record

    use_dev_record()

    async def fetch() -> Policy:
        return await load_session_policy(await connect(), str(source), env_id)

    return run_sync(fetch)


def load_folder(
    model_path: Path, env_id: str | None = None, origin: Origin | None = None
) -> Policy:
    """The policy saved at `model_path` with what lies beside it (see `load_policy`)."""
    from stable_baselines3.common.vec_env import DummyVecEnv

    from activities.training import policy_io
    from activities.training.policy_meta import read_meta
    from activities.training.rollout import load_model

    label = origin.label if origin else shown(model_path.name)
    if env_id is not None and env_id not in ENVS:
        raise PolicyError(f"unknown environment {env_id!r}; choose one of {', '.join(ENVS)}")
    if not model_path.is_file():
        raise PolicyError(f"{shown(model_path)}: no such file")
    try:
        # A tampered file's weights make torch warn before it refuses them: one line, not two.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = load_model(read_meta(model_path)["algo"], model_path)
            normalizer = None
            if (model_path.parent / VECNORMALIZE).is_file():
                spaces = DummyVecEnv([lambda: _Spaces(model)])
                normalizer = policy_io.load_vecnormalize(model_path.parent / VECNORMALIZE, spaces)
                normalizer.training = normalizer.norm_reward = False
    except (ValueError, OSError, KeyError, TypeError, RuntimeError) as exc:
        # A tampered or foreign file: the loaders' one line (they never unpickle).
        prefix = f"{origin.label}: " if origin else ""
        # The first sentence: torch goes on to suggest weights_only=False, which would run it.
        text = shown(" ".join(str(exc).split()).split(". ", 1)[0], 300)
        raise PolicyError(f"{prefix}{text} (refused)") from None
    shaping, env_kwargs, trained_on = _summary(model_path.parent / SUMMARY)
    env_id = env_id or trained_on or _env_of(model)
    if env_id is not None:
        _check_fits(model, env_id, shaping, label)
    return Policy(
        model,
        normalizer,
        env_id=env_id,
        shaping=shaping,
        env_kwargs=env_kwargs,
        origin=origin or Origin(label),
    )


class _Spaces(gym.Env):
    """Only the model's spaces: what its normaliser is checked against (never stepped)."""

    def __init__(self, model: Any) -> None:
        self.observation_space, self.action_space = model.observation_space, model.action_space


def _summary(path: Path) -> tuple[dict[str, Any] | None, dict[str, Any], str | None]:
    """SHAPING, the env settings and the env the run trained under, from its summary.json when
    there is one: plain data, checked where it is applied; env settings only as numbers (never
    a file name such as xml_file); the env only when it is one of ours."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None, {}, None
    if not isinstance(data, dict):
        return None, {}, None
    env = data.get("env_id")
    shaping = data.get("shaping")
    raw = data.get("env_kwargs")
    kwargs = {
        k: v
        for k, v in (raw.items() if isinstance(raw, dict) else [])
        if isinstance(k, str) and isinstance(v, int | float) and not isinstance(v, bool)
    }
    return (
        (shaping if isinstance(shaping, dict) else None),
        kwargs,
        env if isinstance(env, str) and env in ENVS else None,
    )


def _env_of(model: Any) -> str | None:
    """The one env whose observations and actions the model's match, if just one does."""
    obs, act = model.observation_space.shape[0], model.action_space.shape[0]
    fits = [e for e, f in ENVS.items() if (f.obs_dim, f.act_dim) == (obs, act)]
    return fits[0] if len(fits) == 1 else None


def candidate_envs(policy: Policy) -> list[str]:
    """The envs a policy without one could be for (its action count matches)."""
    act = policy.model.action_space.shape[0]
    return [e for e, f in ENVS.items() if f.act_dim == act and f.obs_dim <= policy.inputs]


def _check_fits(model: Any, env_id: str, shaping: dict[str, Any] | None, label: str) -> None:
    """PolicyError unless the model acts on `env_id` (its observation plus, with SHAPING's
    phases or clock, their inputs)."""
    f = facts(env_id)
    obs, act = model.observation_space.shape[0], model.action_space.shape[0]
    if act != f.act_dim:
        raise PolicyError(f"{label} gives {act} actions, {env_id} takes {f.act_dim}")
    if obs < f.obs_dim:
        raise PolicyError(f"{label} takes {obs} inputs, {env_id} gives {f.obs_dim}")
    if obs > f.obs_dim and not shaping:
        raise PolicyError(_needs_inputs(label, obs, env_id))


async def load_session_policy(client: Any, session_id: str, env_id: str | None = None) -> Policy:
    """A session's best run so far, from S3 (see `load_policy`)."""
    from activities.artifacts import ArtifactStore
    from workers.cli.session_state import NoSuchSession, best_record, session_state, start_input

    try:
        state = await session_state(client, session_id)
    except NoSuchSession as exc:
        raise PolicyError(str(exc)) from None
    record = best_record(state)
    if record is None:
        raise PolicyError(
            f"session {shown(session_id)} has no judged policy yet (stage {state.stage})"
        )
    asked = await start_input(client, session_id)
    session_env = asked.get("env_id") or (state.status.env_id if state.status else None)
    if env_id is not None and session_env is not None and env_id != session_env:
        raise PolicyError(f"session {shown(session_id)} trained on {session_env}, not {env_id}")
    run = record.best_run
    steps = asked.get("eval_max_steps")
    origin = Origin(
        label=f"session {shown(session_id)}",
        session_id=session_id,
        iteration=record.iteration,
        run_name=run.run_name,
        score=record.score,
        seed=run.seed,
        eval_steps=steps if isinstance(steps, int) and steps > 0 else None,
        criteria=tuple(record.criteria),
    )
    store = ArtifactStore()
    with tempfile.TemporaryDirectory(prefix="pf-play-") as tmp:
        folder = Path(tmp)
        try:
            store.download(run.model_key, folder / MODEL)
            if run.vecnormalize_key:
                store.download(run.vecnormalize_key, folder / VECNORMALIZE)
            if store.exists(run.run_prefix + SUMMARY):
                store.download(run.run_prefix + SUMMARY, folder / SUMMARY)
        except Exception as exc:  # noqa: BLE001 - S3 unreachable, no credentials, key gone
            raise PolicyError(
                f"session {shown(session_id)}: its policy could not be fetched from S3 "
                f"({type(exc).__name__}: {shown(' '.join(str(exc).split()), 200)})"
            ) from None
        return load_folder(folder / MODEL, env_id or session_env, origin)
