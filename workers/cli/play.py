"""`policyforge play SESSION_ID|MODEL.zip`: watch a trained policy and see what it does.

The policy (workers/cli/policies.py: a session's best run from S3, or a local model.zip, read
without unpickling) plays deterministic episodes in its env, tracking SHAPING's phase and clock
inputs as training did. Each episode's env return, length and the judge's key measures
(`activities/behaviours/metrics.py`: mean forward velocity and torso height where the env has
them, and for a session every criterion the code judge measured, beside its judged value) are
printed, and the episodes are drawn, one after another, into one mp4 from their recorded
states by the evaluation video's renderer. By default a session's policy replays its judged
episode: the run's seed and the session's evaluation step cap.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console

from workers.cli.input_checks import env_errors, exit_on
from workers.cli.render import say
from workflows.contracts.shown import shown

if TYPE_CHECKING:  # gymnasium and torch load only when a policy is played: `--help` needs none
    import numpy as np

    from workers.cli.policies import Policy

# Measured on every episode where the env has them: what most criteria are about.
KEY_MEASURES = ("mean_x_velocity", "mean_height")
VIDEO_SIZE = 480


@dataclass
class Episode:
    """One played episode: its figures and the states its video is drawn from."""

    seed: int
    env_return: float
    length: int
    terminated: bool
    measures: dict[str, float]
    arrays: dict[str, np.ndarray] = field(repr=False)

    def as_json(self, criteria: list[dict[str, Any]]) -> dict[str, Any]:
        """The episode for `--json`."""
        return {
            "seed": self.seed,
            "return": self.env_return,
            "length": self.length,
            "terminated": self.terminated,
            "measures": self.measures,
            "criteria": criteria,
        }


def add_parser(sub: Any) -> None:
    """`policyforge play`'s arguments."""
    play = sub.add_parser(
        "play", help="watch a session's best policy or a model.zip: returns, measures, a video"
    )
    play.add_argument("source", metavar="SESSION_ID|MODEL.zip")
    play.add_argument("--env", dest="env_id", default=None, help="for a model.zip (else guessed)")
    play.add_argument("--episodes", type=int, default=1)
    play.add_argument("--out", type=Path, default=Path("play.mp4"), help="the video (play.mp4)")
    play.add_argument(
        "--seed", type=int, default=None, help="first episode's seed (a session's: its judged one)"
    )
    play.add_argument(
        "--max-steps", type=int, default=None, help="steps per episode (a session's: as judged)"
    )
    play.add_argument("--json", action="store_true", help="print the figures as JSON")


def cmd_play(args: argparse.Namespace) -> None:
    """`policyforge play`: load, play, print, draw; one line on stderr for what cannot be."""
    errors = env_errors(args.env_id) if args.env_id is not None else []
    if args.episodes < 1:
        errors.append(f"--episodes: must be at least 1 (got {args.episodes})")
    if args.max_steps is not None and args.max_steps < 1:
        errors.append(f"--max-steps: must be at least 1 (got {args.max_steps})")
    if args.out.suffix.lower() != ".mp4":
        errors.append(f"--out: name an .mp4 file (got {shown(args.out)})")
    exit_on(errors)
    from workers.cli.policies import PolicyError, candidate_envs, load_policy

    console = Console(stderr=args.json, soft_wrap=True)
    try:
        policy = load_policy(args.source, args.env_id)
        if policy.env_id is None:
            fits = ", ".join(candidate_envs(policy)) or "none of the environments"
            raise PolicyError(f"--env: which environment? {policy.origin.label} fits {fits}")
        origin = policy.origin
        seed = origin.seed if args.seed is None else args.seed
        steps = args.max_steps or origin.eval_steps
        say(console, _heading(policy, args.episodes, steps))
        episodes = [play_episode(policy, seed + i, steps) for i in range(args.episodes)]
    except PolicyError as exc:
        raise SystemExit(f"error: {exc}") from None
    rows = []
    for i, episode in enumerate(episodes):
        judged = i == 0 and episode.seed == origin.seed and steps == origin.eval_steps
        criteria = criteria_rows(policy, episode, judged)
        rows.append(episode.as_json(criteria))
        if not args.json:
            _print_episode(console, i + 1, episode, criteria)
    frames = draw(policy, episodes, args.out)
    say(console, f"video: {shown(args.out.resolve())} ({frames} frames)")
    if args.json:
        print(json.dumps(_report(policy, rows, args.out, frames), indent=2))


def play_episode(policy: Policy, seed: int, max_steps: int | None) -> Episode:
    """One deterministic episode (at most `max_steps`), its figures and states."""
    import numpy as np

    from activities.behaviours.layout import SENSOR_KEYS
    from activities.training.sim import scalar_info

    env = policy.make_env()
    try:
        limit = int(env.spec.max_episode_steps or 1000) if env.spec else 1000
        limit = min(limit, max_steps) if max_steps else limit
        rows: dict[str, list[Any]] = defaultdict(list)
        obs, _ = env.reset(seed=seed)
        ret, terminated, info_keys = 0.0, False, None
        for _ in range(limit):
            action, _ = policy.predict(obs)
            obs, _, terminated, truncated, info = env.step(action)
            scalars = scalar_info(info)
            info_keys = info_keys if info_keys is not None else sorted(scalars)
            rows["action"].append(np.asarray(action, dtype=np.float64))
            rows["qpos"].append(info["qpos"])
            rows["qvel"].append(info["qvel"])
            rows["terminated"].append(bool(terminated))
            for key in SENSOR_KEYS:
                if key in info:
                    rows[key].append(info[key])
            for key in info_keys:
                rows[f"info_{key}"].append(scalars.get(key, np.nan))
            ret += float(info["env_reward"])
            if terminated or truncated:
                break
        arrays = {k: np.asarray(v) for k, v in rows.items()}
        arrays["meta_dt"] = np.array(float(env.unwrapped.dt))  # type: ignore[attr-defined]
    finally:
        env.close()
    episode = Episode(seed, ret, len(rows["action"]), bool(terminated), {}, arrays)
    episode.measures = measures(policy, episode, limit)
    return episode


def _wanted(policy: Policy) -> list[str]:
    """The key measures and the session's code-judged criteria's metrics, each once."""
    names = list(KEY_MEASURES)
    names += [c.metric for c in policy.origin.criteria if c.metric not in names]
    return names


def measures(policy: Policy, episode: Episode, horizon: int) -> dict[str, float]:
    """The judge's metrics of `episode` that its env supports (behaviours/metrics.py)."""
    from activities.behaviours.metrics import (
        METRICS,
        MetricUnavailable,
        Trajectory,
        TrajectoryError,
        compute,
    )
    from activities.envs.catalog import facts

    assert policy.env_id is not None
    f = facts(policy.env_id)
    traj = Trajectory(policy.env_id, f, float(episode.arrays["meta_dt"]), horizon, episode.arrays)
    out: dict[str, float] = {}
    for name in _wanted(policy):
        metric = METRICS.get(name)
        if metric is None or not metric.supports(policy.env_id):
            continue  # an LLM judge's own measure: its judge code, not ours, computes it
        try:
            out[name] = compute(traj, name)
        except (MetricUnavailable, TrajectoryError):
            continue
    return out


def criteria_rows(policy: Policy, episode: Episode, judged: bool) -> list[dict[str, Any]]:
    """Each session criterion the code judge measured: this episode's value, and the judged
    one when this episode is the judged one (same seed and step cap)."""
    from activities.behaviours.metrics import METRICS

    rows = []
    for c in policy.origin.criteria:
        if c.metric not in episode.measures or not c.measured:
            continue
        rows.append(
            {
                "name": c.name,
                "metric": c.metric,
                "value": episode.measures[c.metric],
                "judged": c.value if judged else None,
                "unit": c.unit or METRICS[c.metric].unit,
            }
        )
    return rows


def _heading(policy: Policy, episodes: int, steps: int | None) -> str:
    o = policy.origin
    where = o.label
    if o.session_id is not None:
        score = f", score {o.score:.2f}" if o.score is not None else ""
        where += f": iteration {o.iteration}, run {shown(o.run_name)}{score}"
    cap = f", at most {steps} steps" if steps else ""
    return (
        f"playing {where} on {policy.env_id} ({policy.algo.upper()}), "
        f"{episodes} episode{'s' if episodes > 1 else ''}{cap}"
    )


def _print_episode(
    console: Console, n: int, episode: Episode, criteria: list[dict[str, Any]]
) -> None:
    from activities.behaviours.metrics import METRICS

    parts = [
        f"return {episode.env_return:,.2f}",
        f"{episode.length} steps" + (" (fell)" if episode.terminated else ""),
    ]
    for name in KEY_MEASURES:
        if name in episode.measures:
            metric = METRICS[name]
            parts.append(f"{metric.label} {episode.measures[name]:.3f} {metric.unit}".rstrip())
    say(console, f"  episode {n} (seed {episode.seed}): {', '.join(parts)}")
    for row in criteria:
        unit = f" {shown(row['unit'])}" if row["unit"] else ""
        judged = f" (judged {row['judged']:.3f}{unit})" if row["judged"] is not None else ""
        say(console, f"    {shown(row['name'])}: {row['value']:.3f}{unit}{judged}")


def draw(policy: Policy, episodes: list[Episode], out: Path) -> int:
    """The episodes, one after another, into one mp4 at `out` (each from its reset state, as
    the evaluation video draws them); the frames written."""
    from activities.training.video import Mp4Writer, StateRenderer, frame_steps, video_stride

    assert policy.env_id is not None
    stride, fps = video_stride(float(episodes[0].arrays["meta_dt"]))
    renderer = StateRenderer(policy.env_id, VIDEO_SIZE, episodes[0].seed, policy.env_kwargs)
    writer = Mp4Writer(out, fps)
    try:
        for episode in episodes:
            renderer.reseed(episode.seed)
            qpos, qvel = episode.arrays["qpos"], episode.arrays["qvel"]
            for t in frame_steps(episode.length, stride, None):
                writer.add(
                    renderer.reset_frame() if t is None else renderer.frame(qpos[t], qvel[t])
                )
    finally:
        writer.close()
        renderer.close()
    return writer.frames


def _report(policy: Policy, rows: list[dict[str, Any]], out: Path, frames: int) -> dict[str, Any]:
    o = policy.origin
    return {
        "source": o.label,
        "session_id": o.session_id,
        "iteration": o.iteration,
        "run": o.run_name,
        "env_id": policy.env_id,
        "algo": policy.algo,
        "video": str(out.resolve()),
        "frames": frames,
        "episodes": rows,
    }
