"""The session's current details for the Temporal Web UI, as markdown (workflow-safe)."""

from __future__ import annotations

from workflows.contracts.session import SessionStatus


def details_markdown(status: SessionStatus, dashboard: str | None = None) -> str:
    """The session's status as markdown: what the Web UI shows as the workflow's details, with
    a link to the session's dashboard page when there is one."""
    lines = [
        f"**{status.prompt}** on `{status.env_id}`, author {status.model_label}",
        f"stage **{status.stage}**, iteration {status.iteration}/{status.max_iterations}"
        + (f", best score {status.best_score:.2f}" if status.best_score is not None else ""),
    ]
    if dashboard:
        lines.append(f"[Open in the policyforge dashboard]({dashboard}): videos, curves, code")
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
            "| iter | score | pass | revised from | diagnosis |",
            "| --- | --- | --- | --- | --- |",
        ]
        for rec in status.iterations:
            diagnosis = rec.diagnosis.replace("|", "/")[:200]
            base = "-" if rec.based_on is None else str(rec.based_on)
            lines.append(
                f"| {rec.iteration} | {rec.score:.2f} | {'yes' if rec.passed else 'no'} "
                f"| {base} | {diagnosis} |"
            )
    if status.signal_errors:
        lines += ["", "Ignored signals:", *(f"- {e}" for e in status.signal_errors[-3:])]
    if status.note:
        lines += ["", status.note]
    return "\n".join(lines)
