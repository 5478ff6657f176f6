"""Bounded reward shapes: a measured value in, a reward in [0, 1] out.

`tolerance` is 1 inside [lower, upper] and falls off outside it to `value_at_margin` at a
distance of `margin` (the idea of DeepMind's control-suite rewards, written for this project):
a term shaped this way can never outgrow the others however extreme the state, which keeps a
sum of weighted terms readable as "weight = how much this part of the behaviour counts".
"""

from __future__ import annotations

import math

import numpy as np

SIGMOIDS = ("gaussian", "linear", "quadratic", "reciprocal")


def _falloff(d: np.ndarray, value_at_1: float, sigmoid: str) -> np.ndarray:
    """A curve that is 1 at d = 0 and `value_at_1` at d = 1 (d >= 0 is the scaled distance)."""
    if sigmoid == "gaussian":
        scale = math.sqrt(-2.0 * math.log(value_at_1))
        return np.exp(-0.5 * (d * scale) ** 2)
    if sigmoid == "reciprocal":
        scale = 1.0 / value_at_1 - 1.0
        return 1.0 / (1.0 + scale * d)
    if sigmoid == "linear":
        scale = 1.0 - value_at_1
        return np.where(d * scale < 1.0, 1.0 - d * scale, 0.0)
    if sigmoid == "quadratic":
        scale = math.sqrt(1.0 - value_at_1)
        return np.where(d * scale < 1.0, 1.0 - (d * scale) ** 2, 0.0)
    raise ValueError(f"sigmoid must be one of {', '.join(SIGMOIDS)} (got {sigmoid!r})")


def tolerance(
    x,
    lower: float = 0.0,
    upper: float = 0.0,
    margin: float = 0.0,
    sigmoid: str = "gaussian",
    value_at_margin: float = 0.1,
):
    """1 where lower <= x <= upper; outside, a `sigmoid` fall-off that reaches
    `value_at_margin` at `margin` from the nearer bound. margin = 0 makes it a 0/1 step.

    Works on a number (returns a float) or an array (returns an array). Bounds may be +-inf
    (e.g. lower=target, upper=inf: "at least target").
    """
    if lower > upper:
        raise ValueError(f"tolerance: lower ({lower}) must not exceed upper ({upper})")
    if margin < 0:
        raise ValueError(f"tolerance: margin must be >= 0 (got {margin})")
    # 0 at the margin is fine for the shapes that reach it (linear, quadratic), not the others.
    reaches_zero = sigmoid in ("linear", "quadratic") and value_at_margin == 0.0
    if margin > 0 and not reaches_zero and not 0.0 < value_at_margin < 1.0:
        raise ValueError("tolerance: value_at_margin must be in (0, 1)")
    if isinstance(x, (float, int)):  # a plain number: the per-step case, 20x faster in math
        return _tolerance_scalar(float(x), lower, upper, margin, sigmoid, value_at_margin)
    arr = np.asarray(x, dtype=np.float64)
    inside = (arr >= lower) & (arr <= upper)
    if margin == 0:
        out = np.where(inside, 1.0, 0.0)
    else:
        d = np.where(arr < lower, lower - arr, arr - upper) / margin
        out = np.where(inside, 1.0, _falloff(np.maximum(d, 0.0), value_at_margin, sigmoid))
    return float(out) if out.ndim == 0 else out


def _tolerance_scalar(
    x: float, lower: float, upper: float, margin: float, sigmoid: str, value_at_1: float
) -> float:
    """`tolerance` of one number (the same curves as `_falloff`, without arrays)."""
    if lower <= x <= upper:
        return 1.0
    if margin == 0:
        return 0.0
    d = (lower - x if x < lower else x - upper) / margin
    if sigmoid == "gaussian":
        return math.exp(-0.5 * (d * math.sqrt(-2.0 * math.log(value_at_1))) ** 2)
    if sigmoid == "reciprocal":
        return 1.0 / (1.0 + (1.0 / value_at_1 - 1.0) * d)
    if sigmoid == "linear":
        scaled = d * (1.0 - value_at_1)
        return 1.0 - scaled if scaled < 1.0 else 0.0
    if sigmoid == "quadratic":
        scaled = d * math.sqrt(1.0 - value_at_1)
        return 1.0 - scaled**2 if scaled < 1.0 else 0.0
    raise ValueError(f"sigmoid must be one of {', '.join(SIGMOIDS)} (got {sigmoid!r})")
