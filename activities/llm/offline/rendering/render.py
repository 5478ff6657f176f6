"""Rendering reward templates (string.Template files) into reward code, with latex and summary.

A template line tagged `# term: <name>` is kept only when that term is in the reward; a term is
left out when its weight parameter is exactly 0 (e.g. no alive bonus on envs that never end an
episode early). The latex and summary are read back from the rendered source with `ast`, never by
running it: generated code never runs in a worker process.
"""

from __future__ import annotations

import ast
import re
import textwrap
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from string import Template

from activities.llm.offline.behaviours.library import BODIES, POLE_ANGLE_SQ, SPECS, TemplateSpec

TEMPLATE_DIR = Path(__file__).parent / "templates"
_TAG = re.compile(r"#\s*term:\s*(\w+)\s*$")


@dataclass(frozen=True)
class RenderedReward:
    """Reward code rendered from a template, with what the UI and the reviser need to know of it."""

    code: str
    latex: str
    terms: list[str]
    summary: str
    template: str
    params: dict[str, float]


@cache
def template_source(name: str) -> str:
    """The source of templates/<name>.py.tmpl (cached)."""
    return (TEMPLATE_DIR / f"{name}.py.tmpl").read_text()


def num(value: float) -> str:
    """A float literal with at most 6 significant digits (0.05, not 0.05000000000000001)."""
    text = f"{float(value):.6g}"
    return text if re.search(r"[.einf]", text) else text + ".0"


def clean_params(params: dict[str, float]) -> dict[str, float]:
    """Parameters rounded as `num` writes them, so rendered code and stored params agree."""
    return {k: float(num(v)) for k, v in params.items()}


def included_terms(spec: TemplateSpec, params: dict[str, float]) -> list[str]:
    """The template's terms whose weight is not zero: the ones the rendered code returns."""
    return [t for t in spec.terms if params.get(spec.weight_param(t), 1.0) != 0.0]


def _derived(spec: TemplateSpec, env_id: str, params: dict[str, float]) -> dict[str, str]:
    """Substitutions computed from the env's body and the direction parameter."""
    forward = params.get("direction", 1.0) >= 0
    out = {
        "velocity_tex": r"\dot{x}_t" if forward else r"(-\dot{x}_t)",
        "yaw_tex": r"\dot{\psi}_t" if forward else r"(-\dot{\psi}_t)",
        "direction_word": (
            ("counter-clockwise" if forward else "clockwise")
            if spec.family == "spinning"
            else ("forward" if forward else "backward")
        ),
        "angle_tex": r"\theta_1^2"
        if env_id == "InvertedPendulum-v5"
        else r"(\theta_1^2 + (\theta_1 + \theta_2)^2)",
    }
    # track_speed's wide bell: as wide as the target (at least 0.6 m/s), so that a standing
    # start already earns a third of it.
    out["speed_pull"] = num(round(max(abs(float(params.get("target_speed", 0.0))), 0.6), 4))
    # Rewards rendered before the forward template had a speed cap re-render uncapped.
    cap = float(params.get("speed_cap", 0.0))
    out["speed_cap"] = num(cap)
    out["capped_velocity_tex"] = (
        rf"\min({out['velocity_tex']}, {num(cap)})" if cap > 0 else out["velocity_tex"]
    )
    out["cap_words"] = f", up to {num(cap)} m/s" if cap > 0 else ""
    body = BODIES.get(env_id)
    if body is not None:
        for key in ("height", "vertical_speed", "upright", "planar_speed_sq", "yaw_rate"):
            expr = getattr(body, key)
            if expr is not None:
                out[key] = expr
    if env_id in POLE_ANGLE_SQ:
        out["pole_angle_sq"] = POLE_ANGLE_SQ[env_id]
    return out


# Swimmer travels by a slow drift that pays over the whole episode (rl-zoo trains it with
# gamma 0.9999 and a time feature): its locomotion rewards show the policy the episode's clock.
# "swim forward" on the 1M budget, the engine's preset, deterministic replays: 0.141 m/s
# without it (seed 0; two revisions warm-started from it stayed at 0.14), 0.162 with it (seed
# 0), against a target of 0.15.
TIME_FEATURE_ENVS = ("Swimmer-v5",)
TIME_FEATURE_LINES = (
    "# The policy sees how far into the episode it is (a time feature, as rl-zoo's Swimmer",
    "# recipe): the drift pays off over the whole episode.",
    'SHAPING = {"clock": True}',
)
TIME_FEATURE_NOTE = "the policy sees the episode's clock (SHAPING clock), as rl-zoo's time feature"


def render_reward(
    template: str,
    env_id: str,
    params: dict[str, float],
    prompt: str,
    notes: tuple[str, ...] = (),
    revision: str | None = None,
) -> RenderedReward:
    """Reward code for a template; `revision` (what the reviser changed) becomes a comment."""
    spec = SPECS.get(template)
    if spec is None:
        raise ValueError(f"unknown reward template {template!r}; known: {', '.join(SPECS)}")
    if env_id not in spec.envs:
        raise ValueError(f"template {template!r} does not support {env_id}")
    params = clean_params(params)
    terms = included_terms(spec, params)
    shown = "".join(c for c in " ".join(prompt.split()) if c.isprintable())[:200]
    subs = {
        **{k: num(v) for k, v in params.items()},
        **_derived(spec, env_id, params),
        "prompt": shown.replace('"', "'"),
        "env_id": env_id,
        "terms": repr(terms),
    }
    try:
        text = Template(template_source(template)).substitute(subs)
    except KeyError as exc:
        raise ValueError(f"template {template!r} on {env_id} needs parameter {exc}") from None
    lines = []
    for line in text.splitlines():
        tag = _TAG.search(line)
        if tag and tag.group(1) not in terms:
            continue
        lines.append(line)
    if env_id in TIME_FEATURE_ENVS and spec.family == "locomotion":
        lines += ["", "", *TIME_FEATURE_LINES]
        notes = (*notes, TIME_FEATURE_NOTE)
    if revision:
        # After the header comment: says in the code itself why it differs from the last one.
        at = next(i for i, line in enumerate(lines) if not line.startswith("#"))
        note = "".join(c for c in " ".join(revision.split()) if c.isprintable())
        lines[at:at] = ["#", *("# " + part for part in textwrap.wrap(note, 95))]
    code = "\n".join(lines) + "\n"
    latex_parts, summary_parts = _read_parts(code)
    summary = "Reward: " + ", ".join(summary_parts) + "."
    if notes:
        summary += " " + " ".join(n[0].upper() + n[1:] + "." for n in notes)
    return RenderedReward(
        code=code,
        latex="r_t = " + " ".join(latex_parts),
        terms=terms,
        summary=summary,
        template=template,
        params=params,
    )


def _read_parts(code: str) -> tuple[list[str], list[str]]:
    found: dict[str, list[str]] = {}
    for node in ast.parse(code).body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id in ("LATEX_PARTS", "SUMMARY_PARTS")
        ):
            found[node.targets[0].id] = list(ast.literal_eval(node.value))
    return found["LATEX_PARTS"], found["SUMMARY_PARTS"]
