"""A runner falls back to roots of its own when the shared ones are another user's."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sandbox import _roots
from sandbox._roots import usable_root


def test_a_writable_shared_root_is_used_and_left_to_its_caller_to_make(tmp_path: Path) -> None:
    # The caller makes the root with its own mode (the config root 0711): made here, it had
    # the umask's 0755 (found by the second attack from inside).
    root = tmp_path / "shared" / "cfg"
    assert usable_root(root, "cfg") == root
    assert root.parent.is_dir() and not root.exists()
    root.mkdir(mode=0o711)
    assert usable_root(root, "cfg") == root


def test_a_shared_root_the_runner_may_not_write_gives_its_own(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another user's root (root's 0711 cfg, seen by a runner that is not root): the runner
    gets ``<own>/<name>``, its parent 0700, and never the shared one."""
    shared = tmp_path / "shared"
    shared.mkdir()
    own = tmp_path / "own-{uid}"
    monkeypatch.setattr(_roots, "OWN_ROOT", str(own))
    real_access = os.access
    monkeypatch.setattr(os, "access",
                        lambda path, mode: False if Path(path) == shared else real_access(path,
                                                                                         mode))
    got = usable_root(shared, "cfg")
    assert got == Path(str(own).format(uid=os.geteuid())) / "cfg"
    assert oct(got.parent.stat().st_mode & 0o777) == oct(0o700)
