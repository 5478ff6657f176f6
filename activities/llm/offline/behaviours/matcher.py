"""From (intent, env) to a template, its parameters and its criteria, or an honest refusal."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from temporalio.exceptions import ApplicationError

import activities.llm.offline.behaviours.library as lib
from activities.envs.catalog import ENVS, facts
from activities.llm.offline.behaviours.assemble import compose
from activities.llm.offline.reading.intents import Intent, template_intent, verb_fits
from activities.llm.offline.reading.reader import read
from activities.llm.offline.words.refusals import NotExpressible
from workflows.contracts.judging import Criterion


@dataclass(frozen=True)
class Match:
    """A template chosen for an intent on an env, with its parameters and criteria."""

    template: str
    family: str
    env_id: str
    params: dict[str, float]
    criteria: list[Criterion]
    # How the intent was read where a person might expect otherwise; goes into the summary.
    notes: tuple[str, ...] = field(default_factory=tuple)
    # Style words and details of the prompt that no criterion measures ("gracefully", "with a
    # relaxed stride"): the behaviour is expressed, these parts of it are not.
    unmeasured: tuple[str, ...] = field(default_factory=tuple)


def not_supported(prompt: str, env_id: str, why: str) -> ApplicationError:
    """The non-retryable refusal for a prompt no template expresses, with how to use an LLM
    instead."""
    shown = " ".join(prompt.split())  # one line, whatever the prompt held
    return ApplicationError(
        f"the offline author (no LLM) cannot express '{shown}' on {env_id}: {why}; "
        "set ANTHROPIC_API_KEY, OPENAI_API_KEY or GEMINI_API_KEY and pass --llm MODEL to use "
        "a language model",
        type="IntentNotSupported",
        non_retryable=True,
    )


def match_intent(prompt: str, env_id: str) -> Match:
    """The template and parameters for an intent on an env; ApplicationError when none fits.

    The prompt is read once (reader.py); a single plain behaviour keeps its tuned template,
    anything more (qualifiers, numbers, poses, steps one after another) is composed from the
    behaviour library."""
    if env_id not in ENVS:
        raise ApplicationError(
            f"env_id: unknown environment {env_id!r}; choose one of {', '.join(ENVS)}",
            type="InvalidInput",
            non_retryable=True,
        )
    try:
        parsed = read(prompt)
    except NotExpressible as exc:
        raise not_supported(prompt, env_id, str(exc)) from None
    template_why = None
    intent = template_intent(parsed)
    if intent is not None:
        try:
            found = _BUILDERS[intent.family](intent, env_id)
            return replace(found, notes=found.notes + parsed.notes, unmeasured=parsed.unmeasured)
        except NotExpressible as exc:
            template_why = str(exc)
    try:
        comp = compose(parsed, env_id)
    except NotExpressible as exc:
        raise not_supported(prompt, env_id, template_why or str(exc)) from None
    return Match(
        "composed",
        comp.core,
        env_id,
        comp.weights(),
        list(comp.criteria),
        comp.notes,
        comp.unmeasured,
    )


def _require(template: str, env_id: str, why: str = "") -> lib.TemplateSpec:
    spec = lib.SPECS[template]
    if env_id not in spec.envs:
        raise NotExpressible(
            why
            or f"the {spec.family} template '{template}' supports {', '.join(spec.envs)}; "
            f"{env_id} is not one of them"
        )
    return spec


def _locomotion(intent: Intent, env_id: str) -> Match:
    f = facts(env_id)
    if not f.locomotion:
        hint = " (Humanoid-v5 walks)" if env_id == "HumanoidStandup-v5" else ""
        raise NotExpressible(
            f"{env_id} has no free-moving body whose forward velocity could be rewarded{hint}"
        )
    why = verb_fits(intent.verb, env_id)
    if why:
        raise NotExpressible(why)
    base = lib.base_params(env_id)
    weights = lib.LOCOMOTION_WEIGHTS.get(env_id, {})
    base.update({k: v for k, v in weights.items() if k in base})
    notes: list[str] = []
    if intent.natural:
        # A natural gait is approximated by smoother, cheaper motion; style itself is unmeasured.
        base["ctrl_weight"] *= 2.0
        notes.append(
            "'natural' is read as smooth, energy-efficient motion (a doubled control penalty); "
            "the code judge does not score gait style"
        )
    fast = f.reachable_speed
    target = {
        "max": fast,
        "plain": 0.5 * fast,
        "slow": 0.4 * fast,
        "steady": 0.6 * fast,
        "exact": intent.target_speed,
    }[intent.speed]
    assert target is not None
    if target > 1.5 * fast:
        notes.append(
            f"{target:g} m/s is well above the ~{fast:g} m/s a PPO policy typically reaches on "
            f"{env_id} within a few hundred thousand steps"
        )
    if intent.speed in ("max", "plain"):
        # A plain "walk forward" asks for walking, not a sprint: on a body that can fall, speed
        # above twice the judged target pays nothing more (see the forward template).
        capped = intent.speed == "plain" and f.terminates
        params = {
            "forward_weight": weights.get(
                "forward_weight", 1.25 if env_id == "Humanoid-v5" else 1.0
            ),
            "direction": intent.direction,
            "speed_cap": round(2.0 * target, 3) if capped else 0.0,
            **base,
        }
        template = "forward"
    else:
        params = {
            "speed_weight": 2.0 * max(1.0, base["healthy_bonus"]),
            "target_speed": round(target, 4),
            "speed_tolerance": round(max(0.15 * target, 0.15), 4),
            "direction": intent.direction,
            **base,
        }
        template = "track_speed"
    exact = template == "track_speed"
    return Match(
        template,
        "locomotion",
        env_id,
        params,
        lib.locomotion_criteria(
            env_id,
            intent.direction,
            target,
            exact,
            stated=intent.speed == "exact",
            maximise=intent.speed == "max",
        ),
        tuple(notes),
    )


def _stand(intent: Intent, env_id: str) -> Match:
    _require("stand", env_id)
    body = lib.BODIES[env_id]
    params = {
        "height_weight": 2.0,
        "upright_weight": 0.5,
        "still_weight": 0.5 if intent.still else 0.1,
        **lib.base_params(env_id),
    }
    criteria = [
        lib.crit(
            "stands_tall",
            f"torso at least {0.9 * body.stand_height:.2f} m high over the second half",
            "late_mean_height",
            0.9 * body.stand_height,
            weight=2.0,
        ),
        lib.crit("upright", "torso upright over the second half", "late_uprightness", 0.9),
        *lib.alive_criteria(env_id),
    ]
    if intent.still:
        criteria.append(_still_criterion(0.2))
    return Match("stand", "standing", env_id, params, criteria)


def _still_criterion(limit: float) -> Criterion:
    return lib.crit(
        "stays_in_place",
        f"mean horizontal speed at most {limit:g} m/s",
        "mean_horizontal_speed",
        limit,
        "at_most",
    )


def _hold(intent: Intent, env_id: str) -> Match:
    table = lib.SQUAT_HEIGHT if intent.family == "squat" else lib.SIT_HEIGHT
    if env_id not in table:
        if intent.family == "sit" and env_id == "Humanoid-v5":
            why = (
                "Humanoid-v5 ends the episode when its torso drops below 1.0 m, so it cannot "
                "sit (HumanoidStandup-v5 can)"
            )
        else:
            why = (
                f"a {intent.family} needs a body with legs to bend; the template supports "
                f"{', '.join(table)}"
            )
        raise NotExpressible(why)
    target = table[env_id]
    notes: list[str] = []
    if env_id == "Humanoid-v5":
        notes.append(
            "Humanoid-v5 ends an episode when the torso drops below 1.0 m, so the squat holds "
            f"the torso at {target:g} m (standing: 1.4 m)"
        )
    params = {
        "height_weight": 2.0,
        "target_height": target,
        "height_tolerance": 0.2,
        "upright_weight": 1.0,
        "still_weight": 0.1,
        **lib.base_params(env_id),
    }
    word = "sits" if intent.family == "sit" else "squats"
    tol = 0.1 if intent.family == "sit" else 0.08
    criteria = [
        lib.crit(
            f"{word}_at_height",
            f"torso at {target:g} m (within {tol:g} m) over the second half",
            "late_mean_height",
            target,
            "near",
            tol,
            weight=2.0,
        ),
        lib.crit(
            "upright",
            "torso upright over the second half",
            "late_uprightness",
            0.8,
            weight=2.0 if intent.family == "sit" else 1.0,
        ),
        *lib.alive_criteria(env_id),
    ]
    return Match("hold_height", "standing", env_id, params, criteria, tuple(notes))


def _spin(intent: Intent, env_id: str) -> Match:
    _require("spin", env_id)
    params = {
        "spin_weight": 1.0,
        "direction": intent.direction,
        "drift_weight": 0.5 if intent.in_place else 0.1,
        **lib.base_params(env_id),
    }
    rate = lib.SPIN_RATE[env_id]
    ccw = intent.direction > 0
    criteria = [
        lib.crit(
            "spins",
            f"mean {'counter-clockwise' if ccw else 'clockwise'} yaw rate at least {rate:g} rad/s",
            "mean_yaw_rate" if ccw else "mean_clockwise_yaw_rate",
            rate,
            weight=3.0,
        ),
        *lib.alive_criteria(env_id),
    ]
    if intent.in_place:
        criteria.append(_still_criterion(0.3))
    return Match("spin", "spinning", env_id, params, criteria)


def _jump(intent: Intent, env_id: str) -> Match:
    _require("jump", env_id)
    body = lib.BODIES[env_id]
    target = lib.JUMP_TARGET[env_id]
    # Paid per step, a jump's height has to outweigh the alive bonus it risks: at 2 per metre
    # a 0.3 m rise paid 0.6 against 1.0 for standing, and Hopper stood (1.25 m peak at 200k
    # steps); at 10 it jumps (1.87 m at 400k, alive throughout).
    params = {
        "height_weight": 10.0,
        "base_height": body.stand_height,
        "rise_weight": 1.0,
        **lib.base_params(env_id),
    }
    criteria = [
        lib.crit(
            "jumps_high",
            f"torso reaches at least {target:g} m (standing: {body.stand_height:g} m)",
            "max_height",
            target,
            weight=2.0,
            maximise=intent.utmost,
        ),
        *lib.alive_criteria(env_id),
    ]
    return Match("jump", "jumping", env_id, params, criteria)


def _balance(intent: Intent, env_id: str) -> Match:
    _require(
        "balance",
        env_id,
        f"balancing here means keeping a pole upright (InvertedPendulum-v5, "
        f"InvertedDoublePendulum-v5); {env_id} has no pole",
    )
    double = env_id == "InvertedDoublePendulum-v5"
    params = {"alive_bonus": 1.0, "angle_weight": 0.5 if double else 1.0, "center_weight": 0.05}
    return Match("balance", "balancing", env_id, params, lib.balance_criteria(double))


def _rear_up(intent: Intent, env_id: str) -> Match:
    _require("rear_up", env_id, f"standing on rear legs needs a quadruped (Ant-v5); not {env_id}")
    params = {
        "pitch_weight": 2.0,
        "target_pitch": 1.2,
        "drift_weight": 0.1,
        **lib.base_params(env_id),
    }
    criteria = [
        lib.crit(
            "rears_up",
            "torso pitched nose-up at least 0.8 rad (46 degrees) over the second half",
            "late_torso_pitch_up",
            0.8,
            weight=2.0,
        ),
        *lib.alive_criteria(env_id),
    ]
    notes = (lib.REAR_UP_NOTE,)
    return Match("rear_up", "balancing", env_id, params, criteria, notes)


def _reach(intent: Intent, env_id: str) -> Match:
    _require("reach", env_id, f"reaching needs an arm and a target (Reacher-v5); not {env_id}")
    params = {
        "distance_weight": 1.0,
        # Lighter than the env's own 1.0: a heavy control cost teaches the arm to stay put.
        "ctrl_weight": 0.1,
        # Joint speeds of a flailing arm reach ~25 rad/s: a small weight, felt only within a
        # few hold radii of the target, keeps the stillness term from drowning the distance.
        "still_weight": 0.01 if intent.still else 0.0,
        "hold_radius": 0.02,
    }
    criteria = [lib.reaches_target()]
    if intent.quick:
        criteria.append(
            lib.crit(
                "reaches_quickly",
                "mean fingertip distance over the episode at most 0.05 m",
                "mean_distance_to_target",
                0.05,
                "at_most",
            )
        )
    if intent.still:
        criteria.append(
            lib.crit(
                "holds_still",
                "arm joint speed at most 0.5 rad/s at the end",
                "final_joint_speed",
                0.5,
                "at_most",
            )
        )
    return Match("reach", "reaching", env_id, params, criteria)


_BUILDERS = {
    "locomotion": _locomotion,
    "stand": _stand,
    "squat": _hold,
    "sit": _hold,
    "spin": _spin,
    "jump": _jump,
    "balance": _balance,
    "rear_up": _rear_up,
    "reach": _reach,
}
