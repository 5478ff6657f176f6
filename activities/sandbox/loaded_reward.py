"""Loading reward code (`load_reward`) and the guarded instance it becomes: `LoadedReward`, one
uniform view over either form of the contract (`reward_code.py`), with the sandbox's runtime
guards around each call (read-only inputs, a time budget, checked and repaired results) and its
batch path for code that declares `vectorized = True` (`score_rows`, confirmed against rows
scored one by one).

Generated code is loaded here inside the sandbox process (`activities.sandbox.host`) only; the
trainer, the evaluator and the workers never run it. No gymnasium import: the sandbox process
stays small and quick to start.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from activities.behaviours.layout import reads_sensors
from activities.sandbox import guards
from activities.sandbox.restricted import exec_untrusted
from activities.sandbox.reward_code import (
    BATCH_BUDGET_CALLS,
    CONFIRM_ROWS,
    INF,
    LARGE,
    MAX_NONFINITE_FRACTION,
    MAX_TERM_NAME,
    MAX_TERMS,
    RewardFunction,
    RewardLoadError,
    _shaping_data,
    _term_names,
    without_own_import,
)
from activities.sandbox.static_check import SandboxViolation


class LoadedReward:
    """Uniform view over either form of the contract, with the sandbox's runtime guards.

    Each call gets read-only copies of obs, action and info (so writing to them raises and
    never reaches the simulator), runs under a time budget, and its result is checked. With
    `strict` (validation) a NaN/inf reward is an error; otherwise (training) it becomes 0 and
    is counted, and the run fails when more than 1% of the steps are non-finite.
    """

    def __init__(
        self,
        compute: Callable[..., Any],
        latex: str,
        terms: list[str],
        *,
        strict: bool = True,
        guarded: bool = True,
        copy_inputs: bool = True,
        vectorized: bool = False,
    ) -> None:
        self._compute = compute
        # The code says compute() also takes a batch of rows (see `score_rows`); None until a
        # first batch confirms it, False once a batch refutes it.
        self.vectorized = vectorized
        self.vector_ok: bool | None = None if vectorized else False
        self.vector_note = ""
        self.latex = latex
        self.terms = terms
        self.strict = strict
        self.guarded = guarded
        # The sandbox process hands over views of an immutable buffer: no copies needed there.
        self.copy_inputs = copy_inputs
        self.python_layers = True
        self.calls = 0
        self.nonfinite = 0
        self.clipped = 0
        self._budget = guards.Budget(guards.call_budget_s(), "the reward") if guarded else None
        self._batch_budget = (
            guards.Budget(guards.call_budget_s() * BATCH_BUDGET_CALLS, "the reward on a batch")
            if guarded and vectorized
            else None
        )
        self._next_src: Any = None
        self._next_ro: Any = None
        self.source: str | None = None  # set by load_reward, for clone()
        # Fresh instances made while loading (inside the module's budget) for the first batch's
        # confirmation, so that no module body runs inside a scoring call (see `score_rows`).
        self.spares: list[LoadedReward] = []
        # The module's SHAPING (plain data the trusted side checks and applies), or None.
        self.shaping: Any = None
        self.filename = "<reward>"

    @property
    def reads_sensors(self) -> bool:
        """Whether the code reads foot or knee readings (the trusted side adds them then)."""
        return reads_sensors(self.source or "")

    def clone(self) -> LoadedReward:
        """A fresh instance (the module run again): one per env, so that state a reward keeps
        across steps is never shared between the vectorised envs."""
        if self.source is None:
            return self
        return load_reward(
            self.source,
            self.filename,
            strict=self.strict,
            guarded=self.guarded,
            copy_inputs=self.copy_inputs,
            python_layers=self.python_layers,
        )

    def make_spares(self, n: int) -> None:
        """Run the module for `n` fresh instances now, for a vectorized reward's confirmation."""
        if self.vectorized and self.source is not None:
            self.spares = [self.clone() for _ in range(n)]

    def _fresh(self) -> LoadedReward:
        return self.spares.pop() if self.spares else self.clone()

    def __call__(self, obs, action, next_obs, info) -> tuple[float, dict[str, float]]:
        self.calls += 1
        if self._budget is None:
            return self._check(self._compute(obs, action, next_obs, info))
        if self.copy_inputs:
            ro = guards.readonly
            # This step's obs is the last step's next_obs: reuse its read-only copy.
            obs_ro = self._next_ro if obs is self._next_src else ro(obs)
            next_ro = ro(next_obs)
            self._next_src, self._next_ro = next_obs, next_ro
            args = (obs_ro, ro(action), next_ro, guards.readonly_info(info))
        else:
            args = (obs, action, next_obs, info)
        budget = self._budget
        budget.arm()
        try:
            # The answer is read inside the budget too: float() and str() of what the code
            # returned run its own __float__ and __str__, if it has them.
            return self._check(self._compute(*args))
        finally:
            budget.disarm()

    def score_rows(
        self, obs: Any, action: Any, next_obs: Any, info: dict[str, Any]
    ) -> tuple[np.ndarray, dict[str, np.ndarray]] | None:
        """Score n rows with one call of compute() on the whole batch (arrays with a leading
        row axis, info fields as columns, "_episode_start" a bool column): (totals, terms) as
        float arrays of n, or None when this reward is not scored in batches.

        Only for code that declares `vectorized = True` (its compute keeps no state across
        calls and uses array operations). The first batch goes to a fresh instance, and a few
        of its rows to another fresh instance one by one: any error or disagreement turns
        batches off for good (`vector_note` says why) and this instance, untouched, scores
        the rows one by one.
        """
        if self.vector_ok is False:
            return None
        n = len(obs)
        confirming = self.vector_ok is None
        target = self._fresh() if confirming else self
        try:
            totals, terms = target._batched(obs, action, next_obs, info, n)
        except Exception as exc:  # noqa: BLE001 - any failure of user code is reported
            if not confirming:
                raise RewardLoadError(f"reward failed on a batch: {_one(exc)}") from None
            self._refute(f"the batched call failed: {_one(exc)}")
            return None
        counts = (self.calls, self.nonfinite, self.clipped)
        self.calls += n
        totals, terms = self._repair_rows(totals, terms)  # strict: a non-finite row raises
        if confirming:
            why = self._disagreement(obs, action, next_obs, info, totals, terms)
            if why:
                self.calls, self.nonfinite, self.clipped = counts
                self._refute(why)
                return None
            self.vector_ok = True
        return totals, terms

    def _disagreement(
        self,
        obs: Any,
        action: Any,
        next_obs: Any,
        info: dict[str, Any],
        totals: np.ndarray,
        terms: dict[str, np.ndarray],
    ) -> str:
        """Why the batch's first rows differ from the same rows scored one by one ("" if not)."""
        alone = self._fresh()
        for i in range(min(len(obs), CONFIRM_ROWS)):
            row = {k: (v[i] if np.ndim(v) > 1 else v[i].item()) for k, v in info.items()}
            try:
                total, got = alone(obs[i], action[i], next_obs[i], row)
            except RewardLoadError as exc:
                return f"row {i} alone failed: {exc}"
            if set(got) != set(terms) or not all(
                math.isclose(v, float(terms[k][i]), rel_tol=1e-6, abs_tol=1e-9)
                for k, v in got.items()
            ):
                return f"row {i}'s terms differ alone ({got}) and in a batch"
            if not math.isclose(total, float(totals[i]), rel_tol=1e-6, abs_tol=1e-9):
                return f"row {i} scored {total} alone and {float(totals[i])} in a batch"
        return ""

    def _refute(self, why: str) -> None:
        """Batches off for good, with the reason."""
        self.vector_ok = False
        self.vector_note = why[:300]

    def _batched(
        self, obs: Any, action: Any, next_obs: Any, info: dict[str, Any], n: int
    ) -> tuple[Any, dict[str, Any]]:
        args = (obs, action, next_obs, info)
        if self.copy_inputs:
            args = (
                guards.readonly(obs),
                guards.readonly(action),
                guards.readonly(next_obs),
                guards.readonly_info(info),
            )
        budget = self._batch_budget
        # Reading the answer runs the code's own hooks (__float__, __array__, __str__): timed too.
        with budget.holding() if budget is not None else contextlib.nullcontext():
            return self._batch_answer(self._compute(*args), n)

    def _batch_answer(self, out: Any, n: int) -> tuple[Any, dict[str, Any]]:
        if not (type(out) is tuple and len(out) == 2 and isinstance(out[1], dict)):
            raise RewardLoadError("a batched reward must return (totals, {term: values})")
        if len(out[1]) > MAX_TERMS:
            raise RewardLoadError(f"reward returned {len(out[1])} terms; at most {MAX_TERMS}")

        def column(value: Any) -> Any:
            arr = np.array(value, dtype=np.float64)  # a copy: repairs write to it
            if arr.ndim == 0:
                return np.full(n, float(arr))
            if arr.shape != (n,):
                raise RewardLoadError(f"a batched reward returned shape {arr.shape}, not ({n},)")
            return arr

        terms = {
            (k if type(k) is str and len(k) <= MAX_TERM_NAME else str(k)[:MAX_TERM_NAME]): column(v)
            for k, v in out[1].items()
        }
        return column(out[0]), terms

    def _repair_rows(
        self, totals: np.ndarray, terms: dict[str, np.ndarray]
    ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """`_repair` for a batch: the same rule row by row, counted the same way."""
        finite = np.isfinite(totals)
        for v in terms.values():
            finite &= np.isfinite(v)
        if not finite.all():
            bad = np.flatnonzero(~finite)
            if self.strict:
                i = int(bad[0])
                row = {k: float(v[i]) for k, v in terms.items()}
                raise RewardLoadError(f"reward is not finite ({totals[i]}); terms: {row}")
            self.nonfinite += len(bad)
            if self.calls >= 1000 and self.nonfinite > MAX_NONFINITE_FRACTION * self.calls:
                raise RewardLoadError(
                    f"reward was NaN or infinite in {self.nonfinite} of {self.calls} steps"
                )
            for v in terms.values():
                v[~finite & ~np.isfinite(v)] = 0.0
            summed = sum(terms.values()) if terms else np.zeros_like(totals)
            totals = np.where(finite, totals, summed)
        huge = np.abs(totals) > LARGE
        if huge.any():
            self.clipped += int(huge.sum())
            scale = np.where(huge, LARGE / np.maximum(np.abs(totals), LARGE), 1.0)
            terms = {k: v * scale for k, v in terms.items()}
            totals = np.where(huge, np.copysign(LARGE, totals), totals)
        return totals, terms

    def _check(self, out: Any) -> tuple[float, dict[str, float]]:
        if not (type(out) is tuple and len(out) == 2 and isinstance(out[1], dict)):
            got = type(out).__name__
            if isinstance(out, tuple):
                got = f"a tuple of {len(out)} ({', '.join(type(x).__name__ for x in out)})"
            raise RewardLoadError(
                f"reward must return (float, dict[str, float]), e.g. (r, {{'forward': r}}); "
                f"got {got}"
            )
        total, terms = out
        if len(terms) > MAX_TERMS:
            raise RewardLoadError(f"reward returned {len(terms)} terms; at most {MAX_TERMS}")
        if type(total) is float and -LARGE <= total <= LARGE and type(terms) is dict:
            # The common answer (plain floats under short names), checked without copying.
            plain = all(
                type(k) is str and len(k) <= MAX_TERM_NAME and type(v) is float and -INF < v < INF
                for k, v in terms.items()
            )
            if plain:
                return total, terms
        try:
            total = float(total)
            terms = {
                (k if type(k) is str and len(k) <= MAX_TERM_NAME else str(k)[:MAX_TERM_NAME]): (
                    float(v)
                )
                for k, v in terms.items()
            }
        except (TypeError, ValueError) as exc:
            raise RewardLoadError(
                f"reward total and terms must be numbers ({exc}); got total "
                f"{type(total).__name__} and terms {_types(terms)}"
            ) from None
        finite = math.isfinite(total) and all(map(math.isfinite, terms.values()))
        if finite and -LARGE <= total <= LARGE:
            return total, terms
        return self._repair(total, terms, finite)

    def _repair(
        self, total: float, terms: dict[str, float], finite: bool
    ) -> tuple[float, dict[str, float]]:
        """Non-finite or huge rewards: an error in validation; zeroed or clipped in training."""
        if not finite:
            if self.strict:
                raise RewardLoadError(f"reward is not finite ({total}); terms: {terms}")
            self.nonfinite += 1
            if self.calls >= 1000 and self.nonfinite > MAX_NONFINITE_FRACTION * self.calls:
                raise RewardLoadError(
                    f"reward was NaN or infinite in {self.nonfinite} of {self.calls} steps; "
                    f"the last terms: {terms}"
                )
            terms = {k: (v if math.isfinite(v) else 0.0) for k, v in terms.items()}
            total = sum(terms.values())
        if abs(total) > LARGE:
            self.clipped += 1
            scale = LARGE / abs(total)
            terms = {k: v * scale for k, v in terms.items()}
            total = math.copysign(LARGE, total)
        return total, terms


def counts_of(rewards: Iterable[LoadedReward]) -> dict[str, int]:
    """Calls, and rewards repaired (non-finite zeroed, huge clipped), over reward instances."""
    rs = list(rewards)
    return {
        "calls": sum(r.calls for r in rs),
        "nonfinite": sum(r.nonfinite for r in rs),
        "clipped": sum(r.clipped for r in rs),
    }


def _types(terms: Any) -> str:
    if not isinstance(terms, dict):
        return type(terms).__name__
    return "{" + ", ".join(f"{k!r}: {type(v).__name__}" for k, v in list(terms.items())[:4]) + "}"


def load_reward(
    source: str,
    filename: str = "<reward>",
    *,
    strict: bool = True,
    guarded: bool = True,
    copy_inputs: bool = True,
    python_layers: bool = True,
) -> LoadedReward:
    """Load reward code through the Python layers (static check, restricted builtins).

    guarded=False: plain exec and no runtime guards, only for the overhead benchmark's fixed
    reward. python_layers=False (tests only): plain exec with the real builtins but the runtime
    guards kept, to show that the OS layer contains the code on its own.
    """
    predefined = {"RewardFunction": RewardFunction}
    source = without_own_import(source)
    guards.register_generated_file(filename)
    # The module body, the class's constructor and properties and SHAPING's conversion all
    # run the code: one budget over them (within a load that is already timed, that one's).
    budget = guards.module_budget() if guarded else None
    with budget.holding() if budget is not None else contextlib.nullcontext():
        try:
            if guarded and python_layers:
                namespace = exec_untrusted(source, filename, predefined)
            else:
                namespace = {"__name__": "reward_module", **predefined}
                exec(compile(source, filename, "exec"), namespace)  # noqa: S102 - see docstring
        except SandboxViolation as exc:
            raise RewardLoadError(str(exc)) from None
        except Exception as exc:  # noqa: BLE001 - any failure of user code is reported
            raise RewardLoadError(f"{filename} failed to load: {_one(exc)}") from None
        reward = _reward_from(
            namespace, filename, strict=strict, guarded=guarded, copy_inputs=copy_inputs
        )
        reward.shaping = _shaping_data(namespace.get("SHAPING"), filename)
    reward.python_layers = python_layers
    reward.source = source
    reward.filename = filename
    return reward


def _reward_from(
    namespace: dict[str, Any], filename: str, *, strict: bool, guarded: bool, copy_inputs: bool
) -> LoadedReward:
    classes = [
        v
        for v in namespace.values()
        if isinstance(v, type) and v is not RewardFunction and callable(getattr(v, "compute", None))
    ]
    # Prefer classes that derive from our base; a duck-typed class with compute() also works.
    classes.sort(key=lambda c: not issubclass(c, RewardFunction))
    opts = {"strict": strict, "guarded": guarded, "copy_inputs": copy_inputs}
    if classes:
        try:
            obj = classes[0]()
        except Exception as exc:  # noqa: BLE001
            raise RewardLoadError(f"{classes[0].__name__}() failed: {_one(exc)}") from None
        return LoadedReward(
            obj.compute,
            str(getattr(obj, "latex", "")),
            _term_names(getattr(obj, "terms", []), filename),
            vectorized=getattr(classes[0], "vectorized", False) is True,
            **opts,
        )
    fn = namespace.get("reward_fn")
    if callable(fn):
        return LoadedReward(
            fn,
            str(namespace.get("LATEX", "")),
            _term_names(namespace.get("TERMS", []), filename),
            **opts,
        )
    raise RewardLoadError(
        f"{filename} defines no RewardFunction subclass "
        "and no reward_fn(obs, action, next_obs, info)"
    )


def _one(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"
