"""Removing what hostile code left in its scratch: a tree 3,000 levels deep (deeper than
Python's recursion and PATH_MAX allow), directories it made unreadable, links to outside.
The removal never recurses, never follows a link, never raises, and touches nothing outside.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from activities.sandbox import layers, scrub
from activities.sandbox.client import SandboxClient
from activities.sandbox.limits import SCRATCH_TMPFS
from activities.sandbox.reward_client import SandboxRewards

DEPTH = 3_000
SCRUB = Path(scrub.__file__)
# A uid no account has, for the removal by an owner that is not root.
OTHER_UID = 0x7EFF0000 + os.getpid() % 0x10000


@pytest.fixture
def base() -> Iterator[Path]:
    """A folder on a tmpfs when there is one: a deep tree is slow to build on a disk."""
    root = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
    path = Path(tempfile.mkdtemp(prefix="pf-scrub-", dir=root))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _outside(base: Path) -> dict[Path, tuple[bytes, int, int]]:
    """Files and a folder that links in the tree point at; their state before."""
    victims = base / "outside"
    (victims / "folder").mkdir(parents=True)
    for path in (victims / "secret.txt", victims / "folder" / "inner.txt"):
        path.write_text("must stay")
    return {
        p: (p.read_bytes(), p.stat().st_mode, p.stat().st_mtime_ns)
        for p in (victims / "secret.txt", victims / "folder" / "inner.txt")
    }


def _hostile_tree(scratch: Path, outside: Path) -> None:
    """3,000 levels, each level's files and links made through a handle (the paths outgrow
    PATH_MAX); an unreadable folder with content, links to a file and a folder outside."""
    scratch.mkdir()
    fd = os.open(scratch, os.O_RDONLY)
    for level in range(DEPTH):
        os.mkdir("d", dir_fd=fd)
        deeper = os.open("d", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = deeper
        if level % 1000 == 0:
            os.symlink(outside / "folder", "to-folder", dir_fd=fd)
            os.symlink(outside / "secret.txt", "to-file", dir_fd=fd)
    os.mkdir("locked", dir_fd=fd)
    locked = os.open("locked", os.O_RDONLY, dir_fd=fd)
    sealed = os.open("sealed.txt", os.O_WRONLY | os.O_CREAT, 0o000, dir_fd=locked)
    os.write(sealed, b"x" * 1000)
    os.close(sealed)
    os.mkfifo("fifo", dir_fd=locked)
    os.fchmod(locked, 0)
    os.close(locked)
    os.close(fd)
    (scratch / "top-link").symlink_to(outside)
    (scratch / "locked-top").mkdir()
    (scratch / "locked-top" / "f").write_text("x")
    (scratch / "locked-top").chmod(0)


def _unchanged(before: dict[Path, tuple[bytes, int, int]]) -> None:
    for path, state in before.items():
        assert (path.read_bytes(), path.stat().st_mode, path.stat().st_mtime_ns) == state


def test_a_hostile_tree_is_removed_and_nothing_outside_is_touched(base: Path) -> None:
    before = _outside(base)
    scratch = base / "scratch"
    _hostile_tree(scratch, base / "outside")
    assert scrub.usage(scratch, 10_000)[1] > DEPTH
    with pytest.raises(RecursionError):
        shutil.rmtree(scratch, ignore_errors=True)  # what clean-up did before
    assert scrub.remove_tree(scratch) is None
    assert not os.path.lexists(scratch)
    _unchanged(before)
    assert scrub.remove_tree(scratch) is None  # gone already: nothing to say


def test_a_link_given_as_the_tree_is_removed_not_followed(base: Path) -> None:
    before = _outside(base)
    link = base / "scratch-link"
    link.symlink_to(base / "outside")
    assert scrub.remove_tree(link) is None
    assert not os.path.lexists(link)
    _unchanged(before)


def test_what_cannot_be_removed_is_one_line_not_an_exception(base: Path) -> None:
    assert scrub.remove_tree(base / "missing" / "scratch") is None  # nothing there: done
    (base / "file").write_text("x")
    left = scrub.remove_tree(base / "file" / "below")  # its parent is no folder
    assert left is not None and "\n" not in left and "left behind" in left


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as another uid")
def test_an_owner_that_is_not_root_removes_folders_it_made_unreadable(base: Path) -> None:
    """A sandbox in a user namespace writes as its worker's uid, and that worker removes it."""
    base.chmod(0o777)
    script = textwrap.dedent(
        f"""
        import importlib.util, os, sys
        spec = importlib.util.spec_from_file_location("scrub", {str(SCRUB)!r})
        scrub = sys.modules["scrub"] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(scrub)
        top = {str(base / "mine")!r}
        os.makedirs(top + "/a/b/c")
        open(top + "/a/b/c/f", "w").write("x")
        os.chmod(top + "/a/b/c", 0)
        os.chmod(top + "/a/b", 0o100)  # search only: its entries cannot be listed or removed
        os.chmod(top + "/a", 0o500)  # no write: its entries cannot be removed
        print(scrub.remove_tree(top), os.path.lexists(top))
        """
    )
    python = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else sys.executable
    out = subprocess.run(
        [python, "-c", script],
        user=OTHER_UID,
        group=OTHER_UID,
        extra_groups=[],
        capture_output=True,
        text=True,
        timeout=60,
        cwd="/",
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["None", "False"]


def test_a_sandbox_that_left_a_hostile_tree_in_plain_scratch_is_cleaned_up(
    base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a tmpfs (which goes with the process) the tree is on disk: close() removes it."""
    before = _outside(base)
    base.chmod(0o755)
    (base / "outside").chmod(0o755)
    monkeypatch.setenv(layers.TEST_DISABLE_VAR, SCRATCH_TMPFS)
    monkeypatch.setenv("POLICYFORGE_RUN_TMP", str(base))  # a tmpfs: the tree builds fast
    src = textwrap.dedent(
        f"""
        import os
        for _ in range({DEPTH}):
            os.mkdir("d")
            os.chdir("d")
        os.mkdir("locked")
        open("locked/f", "w").write("x")
        os.mkdir("locked/sealed", 0)  # chmod is refused; a mode at creation is not
        os.rename("locked", "made-unreadable")
        for name, target in (("to-folder", {str(base / "outside" / "folder")!r}),
                             ("to-file", {str(base / "outside" / "secret.txt")!r})):
            try:
                os.symlink(target, name)
            except OSError:
                pass

        def reward_fn(obs, action, next_obs, info):
            return 0.0, {{"zero": 0.0}}
        """
    )
    box = SandboxClient()
    try:
        assert SCRATCH_TMPFS in box.missing
        rewards = SandboxRewards(box, src, "tree.py", python_layers=False)
        rid = rewards.new_instance()
        obs = np.zeros(17)
        rewards.score([(rid, obs, np.zeros(6), obs, {"x_velocity": 0.0})])
        assert scrub.usage(box.scratch, 10_000)[1] > DEPTH
    finally:
        box.close()
    assert not os.path.lexists(box.scratch)
    _unchanged(before)
    assert stat.S_ISDIR((base / "outside" / "folder").lstat().st_mode)
