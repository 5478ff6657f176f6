"""Quieten MuJoCo's warnings, once per process: for the env spec's live envs and the trainer's."""

from __future__ import annotations

import sys

import mujoco

_QUIET = False


def quiet_mujoco() -> None:
    """Drop MuJoCo 4's per-env `settotalmass` deprecation warning; forward any other warning."""
    global _QUIET
    if _QUIET:
        return

    def _warn(msg: str) -> None:
        if "settotalmass" not in msg:
            sys.stderr.write(f"MuJoCo warning: {msg}\n")

    mujoco.set_mju_user_warning(_warn)
    _QUIET = True
