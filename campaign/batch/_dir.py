"""The batch directory: where it goes, what it must not be, and its layout.

Layout (docs/batch.md, "Layout")::

    <batch>/plan.yaml  config.yaml  ledger.jsonl
    <batch>/transcripts/<arm>.md
    <batch>/sessions/<arm>/<probe>/<session>/{workspace/, manifest.json, log/, stderr.tail}

RC-06: the batch directory is outside ``$HOME`` (both resolved, symlinks
followed); under it the run is refused with exit 2 before anything is spent.
"""

from __future__ import annotations

import datetime as _dt
import os
import pwd
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from campaign._errors import CampaignError

from ._lock import LOCK_NAME

FALLBACK_ROOT: Final = Path("/var/tmp/headwater-campaign/batches")
"""Default batch root when the checkout's ``batches/`` resolves under ``$HOME``."""
BATCH_DIR_MODE: Final = 0o700
"""A batch directory is the runner's alone: no other host user reaches a session's files,
running or kept (a root runner's session user reaches its own workspace through search-only
ACL entries, `sandbox.hand_over`)."""


class BatchDirRefused(CampaignError):
    """Raised when a batch directory may not be used (exit status 2).

    Attributes:
        path: the directory as given.
        rule: the rule that refuses it ("RC-06" or "not empty").
    """

    def __init__(self, path: Path, rule: str, detail: str) -> None:
        code = f" (docs/glossary.md: {rule})" if rule.startswith("RC-") else ""
        super().__init__(f"batch directory {path}: {detail}{code}")
        self.path = path
        self.rule = rule
        self.detail = detail


def _home(environ: os._Environ[str] | dict[str, str] | None = None) -> Path | None:
    """``$HOME`` resolved; when unset or empty, the runner's home from the passwd database.

    RC-06 must hold even when the caller cleared ``HOME``: an unset variable
    does not move the user's home directory.
    """
    env = os.environ if environ is None else environ
    home = env.get("HOME")
    if not home:
        try:
            home = pwd.getpwuid(os.getuid()).pw_dir
        except KeyError:
            return None
    return Path(home).resolve()


def is_under_home(path: Path, *, home: Path | None) -> bool:
    """True when ``path`` (resolved, symlinks followed) is ``home`` or inside it (RC-06)."""
    if home is None:
        return False
    resolved = path.expanduser().resolve()
    return resolved == home or home in resolved.parents


def default_root(*, home: Path | None = None) -> Path:
    """The default batch root (docs/batch.md): ``batches/`` of the checkout, else /var/tmp.

    The checkout's ``batches/`` is used when it exists (an editable install or
    a source tree) and resolves outside ``$HOME``.
    """
    home = _home() if home is None else home
    checkout = Path(__file__).resolve().parents[2] / "batches"
    if checkout.is_dir() and not is_under_home(checkout, home=home):
        return checkout
    return FALLBACK_ROOT


def new_batch_name(command: str, *, now: _dt.datetime | None = None) -> str:
    """``<command>-<UTC yyyymmddThhmmssZ>``, the default batch directory name."""
    now = now or _dt.datetime.now(_dt.UTC)
    return f"{command}-{now.strftime('%Y%m%dT%H%M%SZ')}"


def prepare_batch_dir(
    batch_dir: Path | None, *, command: str, home: Path | None = None, must_be_new: bool = True
) -> Path:
    """Resolve, check and create the batch directory; nothing is spent before this passes.

    Args:
        batch_dir: ``--batch-dir`` as given, or None for the default root.
        command: the command name, for the default directory's name.
        home: ``$HOME`` resolved (tests pass their own); None reads the environment.
        must_be_new: False for ``record``, which adds to an existing batch.

    Returns:
        The resolved directory, created and, when ``must_be_new``, empty; its mode is
        `BATCH_DIR_MODE` (an existing batch's too: one made by an older runner is closed).

    Raises:
        BatchDirRefused: under ``$HOME`` (RC-06), or not empty for a new batch
            (the message names ``resume``).
    """
    home = _home() if home is None else home
    if batch_dir is None:
        root = default_root(home=home)
        batch_dir = root / new_batch_name(command)
    resolved = batch_dir.expanduser().resolve()
    if is_under_home(resolved, home=home):
        raise BatchDirRefused(
            batch_dir,
            "RC-06",
            f"resolves to {resolved}, inside $HOME ({home}); a session's batch must live "
            "outside the home directory. Pass --batch-dir under /var/tmp or another path",
        )
    _refuse_kernel_tree(batch_dir, resolved)
    if not must_be_new and resolved.is_dir() and not (resolved / "plan.yaml").exists() \
            and any(not _setup_leftover(p, resolved) for p in resolved.iterdir()):
        # record adds to a batch or starts one in an empty directory; refused before its
        # lock, so a refused directory is left exactly as it was (no .lock, its mode).
        raise BatchDirRefused(batch_dir, "usage", "exists and is not empty and is not a batch "
                              "(it holds no plan.yaml): pass an empty or new --batch-dir")
    if must_be_new and resolved.exists():
        if not resolved.is_dir():
            raise BatchDirRefused(batch_dir, "usage", "exists and is not a directory")
        if any(not _setup_leftover(p, resolved) for p in resolved.iterdir()):
            raise BatchDirRefused(batch_dir, "usage", _not_empty(resolved))
    try:
        existed = resolved.exists()
        resolved.mkdir(parents=True, exist_ok=True)
        # An existing directory becomes a batch's only once it holds one or is empty: one
        # refused later (record into a directory that is not a batch) keeps its mode.
        if not existed or _holds_batch(resolved) or not any(resolved.iterdir()):
            os.chmod(resolved, BATCH_DIR_MODE)
    except OSError as exc:
        raise BatchDirRefused(batch_dir, "usage", _cannot_make(resolved, exc)) from exc
    return resolved


KERNEL_TREES: Final = (Path("/proc"), Path("/sys"), Path("/dev"))
"""Trees the kernel makes up: a batch there would not be kept (nor could it be made)."""


def _refuse_kernel_tree(batch_dir: Path, resolved: Path) -> None:
    """Refuse a batch directory in `KERNEL_TREES` (one line, exit 2), before anything is made."""
    for tree in KERNEL_TREES:
        if resolved == tree or tree in resolved.parents:
            raise BatchDirRefused(
                batch_dir, "usage",
                f"resolves to {resolved}, in {tree}, a file system the kernel makes up: "
                "nothing written there is kept. Pass --batch-dir under /var/tmp or another "
                "path")  # fmt: skip


def _not_empty(resolved: Path) -> str:
    """Why a non-empty directory is refused; the hint to resume only when it holds a batch."""
    if _holds_batch(resolved):
        return ("exists and is not empty: it holds a batch; pass a new --batch-dir, or, to "
                "finish that batch, "
                f"`headwater-campaign resume {resolved}`")  # fmt: skip
    return "exists and is not empty (and holds no batch); pass a new or empty --batch-dir"


def _cannot_make(resolved: Path, exc: OSError) -> str:
    """Why ``resolved`` could not be made, naming the part of its path that is in the way."""
    for parent in (resolved, *resolved.parents):
        if parent.exists():
            if not parent.is_dir():
                return f"cannot be made: {parent} is a file, not a directory"
            break
    reason = exc.strerror or type(exc).__name__
    where = f" ({exc.filename})" if exc.filename and exc.filename != str(resolved) else ""
    return f"cannot be made: {reason.lower()}{where}"


_SETUP_FILES: Final = frozenset({LOCK_NAME, "config.yaml", "tree.json"})
"""What a runner writes into a new batch before plan.yaml, which marks the batch as made."""


def _setup_leftover(path: Path, batch: Path) -> bool:
    """True for a file a runner killed while making the batch left behind (it holds no session:
    plan.yaml, written last of the set-up, is not there yet). A ``config.yaml`` counts only when
    it reads as a batch's config: a user's own file of that name is never taken for one."""
    if (batch / "plan.yaml").exists():
        return path.name == LOCK_NAME
    name = path.name
    if name == "config.yaml":  # a runner takes the lock (.lock) before it writes the config
        return (batch / LOCK_NAME).exists() and _reads_as_config(batch)
    return name in _SETUP_FILES or (name.startswith((".config.yaml.", ".plan.yaml.",
                                                     ".tree.json."))
                                    and name.endswith(".tmp"))


def _reads_as_config(batch: Path) -> bool:
    from ._config import BatchFileError, read_config  # the config's reader imports the plan's

    try:
        read_config(batch)
    except BatchFileError:
        return False
    return True


def _holds_batch(directory: Path) -> bool:
    """True when ``directory`` holds what ``resume`` needs: plan.yaml and config.yaml."""
    return all((directory / name).is_file() for name in ("plan.yaml", "config.yaml"))


@dataclass(frozen=True, slots=True)
class SessionPaths:
    """Where one session's files live inside the batch (docs/batch.md, "Layout")."""

    root: Path
    """``<batch>/sessions/<arm>/<probe>/<session>``."""

    @property
    def workspace(self) -> Path:
        """The sealed workspace, bound read-write at its own path."""
        return self.root / "workspace"

    @property
    def manifest(self) -> Path:
        """``manifest.json``: workspace path -> sha256 as sealed."""
        return self.root / "manifest.json"

    @property
    def log_dir(self) -> Path:
        """The session's own log directory (``HEADWATER_LOG_DIR``)."""
        return self.root / "log"

    @property
    def stderr_tail(self) -> Path:
        """Last 64 KiB of the harness's stderr."""
        return self.root / "stderr.tail"

    def attempt_dir(self, attempt: int) -> Path:
        """``attempt-<n>/``: what the runner kept of attempt ``attempt`` (its stream, its final
        text); kept across retries, unlike the workspace."""
        return self.root / f"attempt-{attempt}"


def session_paths(batch: Path, *, arm: str, probe: str, session: str) -> SessionPaths:
    """The paths of one session of ``batch``."""
    return SessionPaths(batch / "sessions" / arm / probe / session)


def transcript_path(batch: Path, arm: str) -> Path:
    """``<batch>/transcripts/<arm>.md``."""
    return batch / "transcripts" / f"{arm}.md"
