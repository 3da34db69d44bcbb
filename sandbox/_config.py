"""Host credentials and the per-session config directory (RC-03).

Lifecycle: `host_credentials` finds the credentials once per batch, for the batch's
provider gateway (`sandbox.gateway.open_upstream`), their one holder, outside every
sandbox; `session_config_dir` creates an empty directory under `CONFIG_ROOT`, yields it
and removes it when the session ends, however it ends: it receives no credentials file
(a session presents its gateway's placeholder instead). `sweep_config_root` removes what
a killed runner left, credentials copies of older runners included.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Final

from ._errors import CredentialsMissing
from ._owner import runner_gone, runner_tag
from ._remove import remove_tree
from ._roots import usable_root
from .users import SessionUser

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping


CONFIG_ROOT: Final = Path("/var/tmp/headwater-campaign/cfg")
"""One fixed root for all session config dirs, where a restarted runner finds left-overs."""
CONFIG_ROOT_MODE: Final = 0o711
"""Search without listing: the session user of a root runner must reach its own directory
(mode 0700, its own) under the root's; nobody can list the names under it."""

CREDENTIALS_FILE_NAME: Final = ".credentials.json"
"""The file Claude Code keeps its login in, under its config directory."""

_DIR_MODE: Final = 0o700
_ENTRY_NAME: Final = re.compile(r"^(?P<tag>[0-9]+(?:\.[0-9]+){0,2})-")
"""``<runner tag>-...`` (`sandbox._owner`): ``<pid>.<start>.<ns>``, or an older ``<pid>``."""


@dataclass(frozen=True, slots=True)
class Credentials:
    """The host's credential the batch's gateway forwards with (RC-03); never a session's.
    The key never shows in ``repr``.

    Attributes:
        credentials_file: Host path of the login's ``.credentials.json``, or None.
        api_key_env: Name of the host variable the key came from, or None.
        api_key: The key itself, or None; excluded from ``repr``/``str``.
    """

    credentials_file: Path | None
    api_key_env: str | None
    api_key: str | None = field(repr=False)


def host_credentials(
    *, api_key_env: str | None, environ: Mapping[str, str], host_config_dir: Path | None = None
) -> Credentials:
    """Find the host's credentials for the sessions (RC-03): reads ``environ`` and one stat.

    Args:
        api_key_env: Name of the variable holding an API key; when given, the
            key is taken from it and no file is looked for.
        environ: The runner's environment (pass ``os.environ``).
        host_config_dir: The host's Claude config directory; default
            ``$CLAUDE_CONFIG_DIR``, else ``$HOME/.claude``.

    Returns:
        Credentials with either ``api_key`` or ``credentials_file`` set.

    Raises:
        CredentialsMissing: the variable is unset or empty (named, its value
            never shown), or ``.credentials.json`` is not a regular file.
    """
    if api_key_env is not None:
        key = environ.get(api_key_env, "")
        if not key:
            raise CredentialsMissing(f"the variable {api_key_env} is not set or is empty")
        return Credentials(credentials_file=None, api_key_env=api_key_env, api_key=key)
    config_dir = host_config_dir or _default_host_config_dir(environ)
    credentials_file = config_dir / CREDENTIALS_FILE_NAME
    if not credentials_file.is_file():
        raise CredentialsMissing(
            f"{credentials_file} is not a file (log in with `claude`, or name an API key variable)"
        )
    return Credentials(credentials_file=credentials_file, api_key_env=None, api_key=None)


def _default_host_config_dir(environ: Mapping[str, str]) -> Path:
    if configured := environ.get("CLAUDE_CONFIG_DIR"):
        return Path(configured)
    home = environ.get("HOME")
    return (Path(home) if home else Path.home()) / ".claude"


@contextlib.contextmanager
def session_config_dir(
    *,
    name: str,
    root: Path = CONFIG_ROOT,
    owner: SessionUser | None = None,
    path: Path | None = None,
) -> Iterator[Path]:
    """Create one session's config directory, yield it, and always remove it (RC-03).

    The directory is ``root/<pid>-<name>-<random>/``, mode 0700 (``root`` is
    created with mode `CONFIG_ROOT_MODE`, 0711, when missing; a ``root`` this
    runner may not write, another user's, is replaced by its own,
    `sandbox._roots.usable_root`). It starts empty and stays so: no credentials
    file is copied in (the session's harness presents its gateway's placeholder,
    `session_environment`; the host's login stays with the batch's gateway). With
    ``owner`` (a root runner's session user, `session_user`), the directory is
    chowned to it, still 0700: the session runs as that user.

    **Cancellation:** removal runs in ``finally``, so it happens on normal
    exit, on an exception and on cancellation (trio's ``Cancelled``,
    ``KeyboardInterrupt``); a directory already gone is not an error.

    Args:
        name: A label for the directory, e.g. the session name; no ``/``.
        root: Where the directories live; `CONFIG_ROOT` in production.
        owner: Who the session runs as, or None for the runner itself.
        path: Make exactly this directory instead (it must not exist; its parent
            is the caller's): a session's in its own store, whose mounts show no
            host path (RC-02 blind sessions); ``root`` and ``name`` are unused.

    Yields:
        The directory's absolute path.

    Raises:
        ValueError: ``name`` is empty or contains ``/`` or NUL.
        OSError: the directory could not be created or removed.
    """
    if not name or "/" in name or "\0" in name:
        raise ValueError(f"name must be a non-empty label without '/' or NUL, got {name!r}")
    if path is None:
        root = usable_root(root, root.name)  # another user's root: the runner's own
        _ensure_root(root)
        path = Path(tempfile.mkdtemp(prefix=f"{runner_tag()}-{name}-", dir=root)).absolute()
    else:
        path = path.absolute()
        path.mkdir(mode=_DIR_MODE)
    try:
        os.chmod(path, _DIR_MODE)
        if owner is not None:
            os.lchown(path, owner.uid, owner.gid)
        yield path
    finally:
        remove_tree(path)


def _ensure_root(root: Path) -> None:
    if not root.is_dir():
        root.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):  # another runner won the race
            root.mkdir(mode=CONFIG_ROOT_MODE)
    st = root.stat()
    if st.st_uid == os.geteuid() and stat.S_IMODE(st.st_mode) != CONFIG_ROOT_MODE:
        # mkdir's mode is filtered by the umask, and roots made before the drop were 0700.
        os.chmod(root, CONFIG_ROOT_MODE)


def sweep_config_root(root: Path = CONFIG_ROOT) -> list[Path]:
    """Remove the config directories of runners that are no longer alive (RC-03, faults target).

    A directory ``<runner tag>-...`` whose runner is known dead
    (`sandbox._owner.runner_gone`: of this pid namespace, and its pid not
    running with its start time) was left by a killed runner; one an older
    runner made may still hold a credentials copy. A live runner keeps its directory, and so does a
    runner in another pid namespace, which this one cannot see (logged); an
    older ``<pid>-...`` name is of this namespace, kept while its pid runs
    (possibly a reused pid: keeping is the safe mistake). Entries that do not
    start with a tag, and symlinks, are left alone;
    so is a directory this runner may not remove (a root runner's left-over
    seen by a non-root runner: the next root runner removes it).

    Args:
        root: Where the directories live; `CONFIG_ROOT` in production.

    Returns:
        The removed directories, sorted; the caller prints them. A missing
        ``root`` gives ``[]``.

    Raises:
        OSError: a directory could not be removed.
    """
    root = usable_root(root, root.name)  # where this runner makes its directories
    try:
        entries = sorted(root.iterdir())
    except OSError:  # missing, or another user's and not listable: nothing of ours there
        return []
    removed: list[Path] = []
    for entry in entries:
        match = _ENTRY_NAME.match(entry.name)
        if match is None or entry.is_symlink() or not entry.is_dir():
            continue
        if runner_gone(match["tag"], entry=str(entry)):
            try:
                remove_tree(entry)
            except PermissionError:
                continue
            removed.append(entry)
    return removed

