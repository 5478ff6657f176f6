"""The vision-language judge: visual criteria from the intent and the robot, then a verdict per
rollout video.

Models that take video (Gemini) get the mp4; the others get at least 16 evenly spaced frames,
each with its time in the episode. Both are told what robot they watch and how the camera
moves (it follows the body: forward motion shows as the floor sliding by).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from temporalio.exceptions import ApplicationError

from activities.llm.agents.common import answer_text, ask, render_prompt
from activities.llm.agents.context import intent_text, join
from activities.llm.frames import timed_frames, video_length
from activities.llm.providers.base import Media, ToolSpec
from workflows.contracts.judging import Criterion
from workflows.contracts.usage import LLMCall
from workflows.verdict import target_text

VERDICT_SCORES = {"met": 1.0, "partly": 0.5, "not_met": 0.0}

# What each robot looks like on screen, in words (the env spec lists bodies and joints by name,
# not what a viewer sees).
ROBOTS: dict[str, str] = {
    "HalfCheetah-v5": "a two-dimensional running robot like a flat cat: a horizontal torso with "
    "a head at the front (+x) end, a back leg and a front leg (thigh, shin, foot each). It moves "
    "only in the vertical x-z plane; it cannot fall sideways but can flip onto its back.",
    "Hopper-v5": "a two-dimensional one-legged hopper: a torso on top of a thigh, a leg and a "
    "foot. It moves only in the vertical x-z plane.",
    "Walker2d-v5": "a two-dimensional biped: a torso on two legs (thigh, leg, foot each). It "
    "moves only in the vertical x-z plane.",
    "Ant-v5": "a quadruped: a round torso with four legs spread out (hip and ankle joints each). "
    "It moves in three dimensions and may turn and walk in any direction.",
    "Humanoid-v5": "a three-dimensional humanoid: head, torso, abdomen and pelvis, two legs "
    "(thigh, shin, foot) and two arms (upper arm, forearm). It starts standing.",
    "HumanoidStandup-v5": "a three-dimensional humanoid (head, torso, two legs, two arms) that "
    "starts lying on its back on the floor.",
    "Swimmer-v5": "a three-segment swimmer, like a short snake, in a viscous fluid on the floor "
    "plane; it moves by undulating its two joints.",
    "Reacher-v5": "a two-link arm fixed at the centre of a small square arena, with a target "
    "ball its fingertip should reach.",
    "InvertedPendulum-v5": "a cart on a rail with a pole hinged on top; the cart slides left "
    "and right to keep the pole upright.",
    "InvertedDoublePendulum-v5": "a cart on a rail with two poles hinged one on the other; the "
    "cart slides to keep both upright.",
}
# Envs rendered through their model's "track" camera (activities/training/sim.py, which a test
# keeps in step with this): mode trackcom, placed beside the body, looking along +y, so +x is to
# the right of the frame; Swimmer's looks down on it at 45 degrees.
TRACKED = frozenset(
    ("HalfCheetah-v5", "Ant-v5", "Hopper-v5", "Walker2d-v5", "Humanoid-v5")
    + ("HumanoidStandup-v5", "Swimmer-v5")
)

SUBMIT_VISUAL_CRITERIA = ToolSpec(
    name="submit_visual_criteria",
    description="Submit the visual criteria.",
    input_schema={
        "type": "object",
        "properties": {
            "criteria": {
                "type": "array",
                "minItems": 2,
                "maxItems": 5,
                "items": {
                    "type": "object",
                    "properties": {"name": {"type": "string"}, "look_for": {"type": "string"}},
                    "required": ["name", "look_for"],
                },
            }
        },
        "required": ["criteria"],
    },
)

SUBMIT_VISUAL_JUDGMENT = ToolSpec(
    name="submit_visual_judgment",
    description="Submit a verdict for every visual criterion.",
    input_schema={
        "type": "object",
        "properties": {
            "verdicts": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string"},
                        "verdict": {"type": "string", "enum": list(VERDICT_SCORES)},
                        "reason": {"type": "string"},
                    },
                    "required": ["name", "verdict", "reason"],
                },
            }
        },
        "required": ["verdicts"],
    },
)


def camera_text(env_id: str) -> str:
    """How the video's camera moves, which decides how motion looks on screen."""
    if env_id not in TRACKED:
        return "A fixed camera that does not move shows the whole scene."
    if env_id == "Swimmer-v5":
        view = "from behind and above, looking down at 45 degrees; +x is to the right"
    else:
        view = "from the side (the robot's left, looking along +y); +x (forward) is to the right"
    return (
        f"The camera follows the body: it moves with the robot's centre of mass, without "
        f"turning, seen {view} of the frame. So the robot stays near the centre of every frame, "
        "and its travel shows as the checkered floor sliding past (leftwards when it moves "
        "forward), not as the robot crossing the frame: a still floor means it is not going "
        "anywhere, however much its limbs move. Sideways travel (+-y) shows as the robot "
        "growing or shrinking."
    )


def scene_text(env_id: str) -> str:
    """What the video shows: the robot, the camera, how long an episode lasts and when it ends
    early ("" without an env, as in requests recorded before the env was passed)."""
    if not env_id:
        return ""
    from activities.envs.catalog import facts

    f = facts(env_id)
    length = f.max_episode_steps * f.dt
    if f.terminates and f.healthy_z is not None:
        low, high = f.healthy_z
        band = f"{low:g} m" if high == float("inf") else f"{low:g}-{high:g} m"
        ends = (
            f"It ends early when the robot becomes unhealthy (torso height outside {band}: a "
            "fall), so a video shorter than that means it fell."
        )
    elif f.terminates:
        ends = "It ends early when the robot fails (e.g. the pole falls past its limit)."
    else:
        ends = "It never ends early."
    return (
        f"# What you are watching: {env_id}\n\n"
        f"The robot: {ROBOTS.get(env_id, 'a Gymnasium MuJoCo robot.')}\n\n"
        f"Camera: {camera_text(env_id)}\n\n"
        f"An episode lasts at most {f.max_episode_steps} steps of {f.dt:g} s "
        f"({length:g} s); the video plays in real time. {ends}"
    )


def measured_text(criteria: Sequence[Criterion]) -> str:
    """The criteria the trajectory judge measures, each with its comparison, target (and
    tolerance) and unit, for the video judge and its planner ("" when not told)."""
    if not criteria:
        return ""
    lines = [
        "# What the trajectory judge measures",
        "",
        "Another judge measures these criteria exactly on the episode's recorded states, each "
        "against its target; you do not score them.",
        "",
    ]
    for c in criteria:
        what = (c.measure or c.metric or "").strip().rstrip(".")
        most = " (as much as possible: the target is the least that passes)" if c.maximise else ""
        lines.append(
            f"- `{c.name}`: {c.description.strip()}"
            + (f" Measured: {what}." if what else "")
            + f" Target: {target_text(c)}{most}."
        )
    return "\n".join(lines)


def rollout_media(
    video: bytes, takes_video: bool, frames: int = 0
) -> tuple[tuple[Media, ...], str, str]:
    """What a model is shown of a rollout video: (media, a short label for the record, a
    sentence telling the model what it sees and when). Models without video get `frames_for`
    the episode's length (at least 16; `frames` may ask for more), each captioned with its
    time."""
    if takes_video:
        duration, fps = video_length(video)
        told = f"You are shown the episode's video: {duration:.1f} s at {fps:g} fps, real time."
        return (Media("video/mp4", video),), "video", told
    picked = timed_frames(video, at_least=frames)
    media = tuple(
        Media("image/jpeg", f.jpeg, caption=f"Frame {i + 1} at t = {f.time_s:.2f} s")
        for i, f in enumerate(picked.frames)
    )
    times = ", ".join(f"{f.time_s:.2f}" for f in picked.frames)
    told = (
        f"You are shown {len(media)} frames of the {picked.duration_s:.1f} s episode, in order, "
        f"each right after a line giving its time. Times (s): {times}."
    )
    return media, f"{len(media)} frames", told


def visual_criteria(
    prompt: str, model: str, env_id: str = "", measured: Sequence[Criterion] = ()
) -> tuple[list[dict[str, str]], LLMCall]:
    """Two to five things to look for in a rollout video, from the prompt and (when given) the
    robot and the camera that films it, and the criteria the trajectory judge measures."""
    answer = ask(
        "vlm_criteria",
        model,
        system=render_prompt("vlm_criteria"),
        user=join(intent_text(prompt), scene_text(env_id), measured_text(measured)),
        tool=SUBMIT_VISUAL_CRITERIA,
        parse=_visual_criteria,
    )
    return answer.value, answer.call


def _visual_criteria(args: dict[str, Any]) -> list[dict[str, str]]:
    raw = args.get("criteria")
    if not isinstance(raw, list) or not 2 <= len(raw) <= 5:
        raise ApplicationError("expected a list of 2-5 visual criteria", type="LLMBadAnswer")
    if not all(isinstance(c, dict) and c.get("name") and c.get("look_for") for c in raw):
        raise ApplicationError(
            "every visual criterion needs a 'name' and a 'look_for'", type="LLMBadAnswer"
        )
    return [{"name": str(c["name"]), "look_for": str(c["look_for"])} for c in raw]


def judge_video(
    prompt: str,
    criteria: list[dict[str, str]],
    media: tuple[Media, ...],
    model: str,
    env_id: str = "",
    told: str = "",
    measured: Sequence[Criterion] = (),
) -> tuple[list[dict[str, Any]], LLMCall]:
    """[{name, verdict, score, reason}] for every criterion (a missing one is 'not_met').
    `told`: what the model is shown and when (from `rollout_media`); `measured`: the
    criteria the trajectory judge measures, with their targets, which what the model sees
    should be consistent with."""
    listed = "\n".join(f"- `{c['name']}`: {c['look_for']}" for c in criteria)
    if not told:
        shown = "a video" if media and media[0].kind == "video" else f"{len(media)} frames"
        told = f"You are shown {shown}, in order."
    answer = ask(
        "vlm_judge",
        model,
        system=render_prompt("vlm_judge"),
        user=join(
            intent_text(prompt),
            scene_text(env_id),
            measured_text(measured),
            f"# Visual criteria (yours to judge)\n\n{listed}",
            told,
        ),
        tool=SUBMIT_VISUAL_JUDGMENT,
        media=media,
    )
    given = {
        str(v.get("name")): v for v in answer.arguments.get("verdicts") or [] if isinstance(v, dict)
    }
    out = []
    for c in criteria:
        v = given.get(c["name"], {})
        said = v.get("verdict")
        verdict = said if isinstance(said, str) and said in VERDICT_SCORES else "not_met"
        out.append(
            {
                "name": c["name"],
                "verdict": verdict,
                "score": VERDICT_SCORES[verdict],
                "reason": answer_text(v, "reason", 300, default="no verdict given"),
            }
        )
    return out, answer.call
