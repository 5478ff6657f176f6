"""A session from Python: start one or follow one by id, with the session client the
`policyforge` command uses (workers/cli/sessions.py). Each call connects, does its work and
returns: plain blocking calls, safe inside a notebook's running event loop too."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from workers.client import connect, run_sync
from workers.dev.dev_record import use_dev_record
from workers.settings import Settings

if TYPE_CHECKING:
    from temporalio.client import Client

    from workers.cli.policies import Policy
    from workers.cli.session_state import SessionState
    from workflows.contracts.session import SessionResult, SessionStatus

# What `Session.wait` reports progress to: True for `policyforge run`'s progress bar (on
# stderr), or a function given each new status.
Progress = bool | Callable[["SessionStatus"], None]


class SessionFailed(RuntimeError):
    """The session ended without a result; the message is the one line that says why."""


async def _client() -> Client:
    # As the CLI does at start: a running `policyforge dev` fills in what is not configured.
    use_dev_record()
    return await connect(Settings())


class Session:
    """A session on Temporal, by id: `Session("pf-run-forward-1a2b3c4d")`, or `Session.start`."""

    def __init__(self, session_id: str) -> None:
        self.id = session_id

    def __repr__(self) -> str:
        return f"Session({self.id!r})"

    @classmethod
    def start(
        cls, prompt: str, env_id: str, *, workflow_id: str | None = None, **options: Any
    ) -> Session:
        """Start a session, as `policyforge run --detach` does: `options` are SessionInput's
        fields (total_timesteps, max_iterations, llm_model, seeds, candidates, ...). ValueError
        naming every bad field, before anything is sent."""
        from activities.llm.provider import default_model
        from workers.cli.input_checks import session_input_errors
        from workers.cli.sessions import start_session

        data: dict[str, Any] = {"prompt": prompt, "env_id": env_id, **options}
        data["llm_model"] = data.get("llm_model") or default_model()
        errors = session_input_errors(data)
        if errors:
            raise ValueError("; ".join(errors))

        async def go() -> str:
            handle = await start_session(await _client(), data, workflow_id=workflow_id)
            return handle.id

        return cls(run_sync(go))

    def status(self) -> SessionState:
        """What the session is now (`.stage`; `.status`: the live SessionStatus, `.result`
        once done, `.error` if it failed), as `policyforge status` shows it. LookupError
        (NoSuchSession) when there is no such session."""
        from workers.cli.session_state import session_state

        async def go() -> SessionState:
            return await session_state(await _client(), self.id)

        return run_sync(go)

    def result(self) -> SessionResult | None:
        """The result once the session completed, None while it runs; SessionFailed if it
        ended without one."""
        state = self.status()
        if state.error is not None:
            raise SessionFailed(state.error)
        return state.result

    def wait(self, timeout: float | None = None, progress: Progress = False) -> SessionResult:
        """Block until the session ends (across continue-as-new) and return its result;
        SessionFailed with the reason when it fails, TimeoutError after `timeout` seconds.
        `progress=True` shows `policyforge run`'s progress bar on stderr; a function is called
        with each new status (its stage, iteration, timesteps, best score) as it changes."""
        from temporalio.client import WorkflowFailureError

        from workers.cli.session_state import failure_reason
        from workflows.contracts.session import SessionResult

        async def go() -> SessionResult:
            client = await _client()
            handle = client.get_workflow_handle(self.id, result_type=SessionResult)
            if progress is True:
                from rich.console import Console

                from workers.cli.sessions import follow

                waiting = follow(handle, Console(stderr=True), client=client)
            elif callable(progress):
                waiting = _report(handle, progress)
            else:
                waiting = handle.result(follow_runs=True)
            try:
                return await asyncio.wait_for(waiting, timeout)
            except WorkflowFailureError as exc:
                raise SessionFailed(failure_reason(exc)) from None

        return run_sync(go)

    def policy(self, env_id: str | None = None) -> Policy:
        """The session's best policy so far (`policyforge play SESSION_ID` plays it)."""
        from workers.cli.policies import load_policy

        return load_policy(self.id, env_id)

    def links(self) -> dict[str, str]:
        """The session's pages: `dashboard` and `temporal_ui`."""
        use_dev_record()
        settings = Settings()
        return {
            "dashboard": settings.dashboard_link(self.id),
            "temporal_ui": settings.ui_link(self.id),
        }


async def _report(handle: Any, report: Callable[[SessionStatus], None]) -> SessionResult:
    """Call `report` with each status that differs from the last, until the session ends."""
    from temporalio.client import WorkflowExecutionStatus

    from workers.cli.session_state import query_status

    last: SessionStatus | None = None
    while (await handle.describe()).status == WorkflowExecutionStatus.RUNNING:
        status = await query_status(handle)
        if status is not None and status != last:
            report(status)
            last = status
        await asyncio.sleep(POLL_S)
    return await handle.result(follow_runs=True)


POLL_S = 1.0  # between status queries while reporting progress


def sessions(
    env_id: str | None = None, stage: str | None = None, limit: int = 20
) -> list[dict[str, Any]]:
    """The latest sessions, newest first, as `policyforge sessions --json` lists them."""
    from workers.cli.session_list import latest_sessions

    use_dev_record()
    return run_sync(lambda: latest_sessions(env_id, stage, limit))
