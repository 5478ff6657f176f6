"""The S3 key layout of a session's artifacts: the one place it is spelled.

    benchmarks/<benchmark_id>/result.json            benchmark_result_key
    lessons/<env_id>/<behaviour>.md                 lesson_key (what sessions learnt)
    sessions/<session_id>/                          session_prefix
        judge_fn.py (judge_fn.fix<k>.py)            judge_key
        iter_<n>/                                   iteration_prefix
            reward_fn.py, reward_fn_c<k>.py         reward_key (versions: .reviewed, .fix<k>)
            revision_c<k>/                          revision_folder: history.json, turn_<r>.json,
                                                    tool_<r>_<i>.txt
            c<k>_<config>_seed_<s>/                 run_prefix (run_name)
                model.zip, vecnormalize.npz, summary.json, metrics/scalars.jsonl
                checkpoints/step_<t>/               checkpoint_key (resumable training)
                evals/pct_<p>/                      evaluation checkpoints
                videos/eval.mp4, trajectories/eval.npz, judgment.json,
                visual_judgment.json
                synthesis/                          synthesis_folder (the judges' settlement)

The workflow, the activities and the workers build keys with these functions; the training
child writes a run's files under the same relative names, and uploads keep them. Plain string
functions: safe in the workflow sandbox.
"""

from __future__ import annotations

# A run's files, relative to its prefix.
MODEL = "model.zip"
VECNORMALIZE = "vecnormalize.npz"
SCALARS = "metrics/scalars.jsonl"
SUMMARY = "summary.json"
VIDEO = "videos/eval.mp4"
TRAJECTORY = "trajectories/eval.npz"
JUDGMENT = "judgment.json"
VISUAL_JUDGMENT = "visual_judgment.json"  # the video judge's verdicts, next to the code judge's
# What a finished training run uploads (besides evals/ and tensorboard/, file by file).
TRAIN_OUTPUTS = (MODEL, VECNORMALIZE, SCALARS, SUMMARY)

_TRAJECTORY_DIR = "/" + TRAJECTORY.split("/", 1)[0] + "/"


def session_prefix(session_id: str) -> str:
    """sessions/<sid>/: the folder of everything a session stores."""
    return f"sessions/{session_id}/"


def iteration_prefix(session_id: str, iteration: int) -> str:
    """sessions/<sid>/iter_<n>/: the folder of one iteration's rewards and runs."""
    return f"{session_prefix(session_id)}iter_{iteration}/"


def run_name(candidate: int, config: str, seed: int) -> str:
    """c<candidate>_<config>_seed_<seed>: one training run of an iteration."""
    return f"c{candidate}_{config}_seed_{seed}"


def batch_name(seed: int) -> str:
    """batch_seed_<seed>: the runs of one seed trained together (their checkpoints' folder)."""
    return f"batch_seed_{seed}"


def run_prefix(session_id: str, iteration: int, run_name: str) -> str:
    """sessions/<sid>/iter_<n>/<run_name>/: the folder of one training run's files."""
    return f"{iteration_prefix(session_id, iteration)}{run_name}/"


def _versioned(stem: str, version: str) -> str:
    """A version suffix (reviewed, fix2) keeps every rewrite next to the original."""
    return stem + (f".{version}" if version else "") + ".py"


def reward_filename(candidate: int = 0, version: str = "") -> str:
    """reward_fn.py for the first candidate, reward_fn_c<k>.py for the others."""
    return _versioned("reward_fn" + (f"_c{candidate}" if candidate else ""), version)


def reward_key(session_id: str, iteration: int, candidate: int = 0, version: str = "") -> str:
    """iter_<n>/reward_fn.py for the first candidate, reward_fn_c<k>.py for the others."""
    return iteration_prefix(session_id, iteration) + reward_filename(candidate, version)


def judge_filename(version: str = "") -> str:
    """judge_fn.py, or judge_fn.<version>.py for a rewrite (fix<k>)."""
    return _versioned("judge_fn", version)


def judge_key(session_id: str, version: str = "") -> str:
    """sessions/<sid>/judge_fn.py: the session's judge code (versions: .fix<k>)."""
    return session_prefix(session_id) + judge_filename(version)


def revision_dir(candidate: int) -> str:
    """revision_c<k>/: the reviser's folder for candidate k, relative to its iteration."""
    return f"revision_c{candidate}/"


def revision_folder(session_id: str, iteration: int, candidate: int) -> str:
    """Where the reviser's conversation, the history its tools read and their answers go."""
    return iteration_prefix(session_id, iteration) + revision_dir(candidate)


def history_key(folder: str) -> str:
    """<folder>history.json: the session's iterations, as the reviser's tools read them."""
    return folder + "history.json"


def turn_key(folder: str, round_: int) -> str:
    """An agent's conversation after one of its calls (one immutable file per turn)."""
    return folder + f"turn_{round_}.json"


def folder_of(key: str) -> str:
    """The folder (with its slash) a key lies in."""
    return key.rsplit("/", 1)[0] + "/"


def tool_result_key(folder: str, round_: int, index: int) -> str:
    """The answer to an agent's tool call, next to its conversation."""
    return f"{folder}tool_{round_}_{index}.txt"


def synthesis_folder(run_prefix: str) -> str:
    """<run_prefix>synthesis/: where the synthesizer's conversation and tool answers go."""
    return run_prefix + "synthesis/"


def checkpoint_key(run_prefix: str, timesteps: int) -> str:
    """The folder of a training checkpoint (what a retried training resumes from)."""
    return f"{run_prefix}checkpoints/step_{timesteps}/"


def eval_checkpoints_prefix(run_prefix: str) -> str:
    """The prefix of a run's evaluation checkpoints: evals/pct_<p>/..."""
    return run_prefix + "evals/pct_"


def visual_judgment_key(video_key: str) -> str | None:
    """<run_prefix>visual_judgment.json for a run's <run_prefix>videos/eval.mp4 (None: a video
    not under a run)."""
    head, sep, _ = video_key.rpartition("/" + VIDEO)
    return head + "/" + VISUAL_JUDGMENT if sep else None


def run_prefix_of(trajectory_key: str) -> str | None:
    """<run_prefix> of a key like <run_prefix>trajectories/eval.npz (None: not under a run)."""
    head, sep, _ = trajectory_key.rpartition(_TRAJECTORY_DIR)
    return head + "/" if sep else None


def benchmark_prefix(benchmark_id: str) -> str:
    """benchmarks/<id>/: the folder of a benchmark's files."""
    return f"benchmarks/{benchmark_id}/"


def benchmark_result_key(benchmark_id: str) -> str:
    """benchmarks/<id>/result.json: the benchmark's aggregate and cases, as JSON."""
    return benchmark_prefix(benchmark_id) + "result.json"


LESSONS = "lessons/"


def lesson_key(env_id: str, behaviour: str) -> str:
    """lessons/<env_id>/<behaviour>.md: the lesson page of one behaviour on one env."""
    return f"{LESSONS}{env_id}/{behaviour}.md"
