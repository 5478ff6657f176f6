"""The session's current details for the Temporal Web UI, as markdown (workflow-safe)."""

from __future__ import annotations

from workflows.contracts.session import SessionStatus
from workflows.contracts.shown import shown_markdown
from workflows.verdict import record_verdict


def details_markdown(status: SessionStatus, dashboard: str | None = None) -> str:
    """The session's status as markdown: what the Web UI shows as the workflow's details, with
    a link to the session's dashboard page when there is one."""
    lines = [
        f"**{shown_markdown(status.prompt, 300)}** on `{status.env_id}`, "
        f"author {shown_markdown(status.model_label)}",
        f"stage **{status.stage}**, iteration {status.iteration}/{status.max_iterations}"
        + (f", best score {status.best_score:.2f}" if status.best_score is not None else ""),
    ]
    if status.verdict:
        lines.append(f"verdict: **{shown_markdown(status.verdict, 300)}**")
    if dashboard:
        lines.append(f"[Open in the policyforge dashboard]({dashboard}): videos, curves, code")
    if status.train_queue:
        # The workflow cannot see the queue's pollers: it says where its training waits, and
        # `policyforge status` and the dashboard say whether a worker polls it.
        kind = status.accelerator
        start = "policyforge worker train" + (" --gpu" if kind == "gpu" else "")
        lines.append(
            f"training on queue `{status.train_queue}` (accelerator {kind}): only "
            f"{kind.upper()} training workers take it (`{start}`); "
            "`policyforge status ID` says when none polls it"
        )
    if status.awaiting_approval is not None:
        lines.append(
            f"waiting for approval of iteration {status.awaiting_approval}: "
            "`policyforge approve ID` or the `approve` signal"
        )
    usage = status.llm_usage
    if usage.calls:
        lines.append(f"LLM: {usage.calls} calls, ~${usage.cost_usd:.4f}")
    if status.iterations:
        lines += [
            "",
            "| iter | score | verdict | revised from | diagnosis |",
            "| --- | --- | --- | --- | --- |",
        ]
        for rec in status.iterations:
            # Generated text: shown as text, never as markdown (a link, an image that fetches).
            diagnosis = shown_markdown(rec.diagnosis, 200)
            base = "-" if rec.based_on is None else str(rec.based_on)
            lines.append(
                f"| {rec.iteration} | {rec.score:.2f} | {shown_markdown(record_verdict(rec), 160)} "
                f"| {base} | {diagnosis} |"
            )
    if status.signal_errors:
        errors = status.signal_errors[-3:]
        lines += ["", "Ignored signals:", *(f"- {shown_markdown(e, 300)}" for e in errors)]
    if status.note:
        lines += ["", shown_markdown(status.note, 500)]
    return "\n".join(lines)
