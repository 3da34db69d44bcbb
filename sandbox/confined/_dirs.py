"""A sandbox's directories: made (scratch), handed over to its user, and taken back.

Steps 2 and 8 of `sandbox.confined`: the scratch directories the spec leaves
to it, the hand-over to the session user (`sandbox.users.hand_over`), what the
writable directories hold before it starts (for a writes limit), and, once
its cgroup is empty, the reclaim of the caller's directories it wrote
(`sandbox.storage`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Final

from .._layout import HostLayout, measure_host_layout
from ..cgroup import DEFAULT_WRITE_BYTES, allocated_bytes
from ..storage import reclaim_tree, replace_with_copy
from ..users import SessionUser, hand_over
from ._spec import ConfinedDirs

if TYPE_CHECKING:
    from ._spec import ConfinedSpec

__all__ = ["SCRATCH_DIR_MODE", "prepare", "reclaim"]

SCRATCH_DIR_MODE: Final = 0o700
"""Mode of the scratch directories before they are handed over."""


def prepare(
    spec: ConfinedSpec, user: SessionUser | None, scratch: Path | None
) -> tuple[ConfinedDirs, HostLayout, Path, int]:
    """Make the scratch directories and hand everything over to ``user`` (blocking: run in a
    thread).

    Returns the directories, the host layout, the resolved executable to bind
    and, with a writes limit, what the writable directories hold (bytes).
    """
    root = None if scratch is None else scratch.resolve()
    dirs = _dirs(spec, root)
    executable = spec.executable.resolve()
    own = [p for p in (root, dirs.log_dir, dirs.config_dir) if p is not None]
    if not spec.workspace_read_only:
        own.append(dirs.workspace)
    reach = [executable, *_given(spec.egress_socket),
             *(source.resolve() for source, _ in spec.extra_ro_binds)]
    if spec.workspace_read_only:
        reach.append(dirs.workspace)
    hand_over(user, own=own, reach=reach)
    writable = [dirs.log_dir, dirs.config_dir, *([] if spec.workspace_read_only
                                                 else [dirs.workspace])]  # fmt: skip
    baseline = allocated_bytes(writable) if spec.limits.write_bytes is not None else 0
    return dirs, spec.layout or measure_host_layout(), executable, baseline


def _dirs(spec: ConfinedSpec, scratch: Path | None) -> ConfinedDirs:
    made: dict[str, Path] = {}
    for name in ("workspace", "log_dir", "config_dir"):
        given = getattr(spec, name)
        if given is None:
            assert scratch is not None
            given = scratch / name
            given.mkdir(mode=SCRATCH_DIR_MODE)
        made[name] = given
    return ConfinedDirs(**made)


def reclaim(spec: ConfinedSpec) -> None:
    """Take back the caller's directories the session wrote (blocking; `sandbox.storage`)."""
    if spec.workspace is not None and not spec.workspace_read_only:
        reclaim_tree(spec.workspace)
    if spec.log_dir is not None and spec.reclaim_log:  # no more than the session may write
        bound = spec.limits.write_bytes
        replace_with_copy(spec.log_dir,
                          max_bytes=DEFAULT_WRITE_BYTES if bound is None else bound)


def _given(path: Path | None) -> list[Path]:
    return [] if path is None else [path]
