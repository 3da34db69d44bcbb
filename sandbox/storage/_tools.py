"""The external commands a store needs (mkfs.ext4, mount, umount, losetup), each bounded.

Every command runs with an environment of its own (``PATH`` and ``LC_ALL=C``,
so its messages can be read) and a timeout; a command that overruns it is
killed (`subprocess.run`) and reported as `StoreUnavailable`.
"""

from __future__ import annotations

import shutil
import subprocess
from typing import TYPE_CHECKING, Final

from ._errors import StoreUnavailable

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["TOOL_PATH", "failed", "run_tool"]

TOOL_PATH: Final = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
"""Where the tools are looked for: the sbin directories hold mkfs.ext4 and losetup."""
_FIXES: Final = {
    "mkfs.ext4": "install e2fsprogs (it provides mkfs.ext4)",
    "mount": "install util-linux (it provides mount, umount and losetup)",
    "umount": "install util-linux (it provides mount, umount and losetup)",
    "losetup": "install util-linux (it provides mount, umount and losetup)",
}


def run_tool(argv: Sequence[str], *, timeout_s: float) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` (its first item a tool's name) to completion within ``timeout_s`` seconds.

    Returns:
        The finished command; a non-zero exit status is the caller's to judge.

    Raises:
        StoreUnavailable: the tool is not installed, or did not finish in time.
    """
    name = argv[0]
    exe = shutil.which(name, path=TOOL_PATH)
    fix = _FIXES.get(name, f"install {name}")
    if exe is None:
        raise StoreUnavailable(f"{name} is not found on {TOOL_PATH}", fix)
    try:
        return subprocess.run([exe, *argv[1:]], capture_output=True, text=True, check=False,
                              timeout=timeout_s, env={"PATH": TOOL_PATH, "LC_ALL": "C"},
                              stdin=subprocess.DEVNULL)  # fmt: skip
    except subprocess.TimeoutExpired as exc:
        raise StoreUnavailable(f"{' '.join(argv)} did not finish in {timeout_s:.0f} s",
                               "look for a hung loop device or file system") from exc  # fmt: skip


def failed(run: subprocess.CompletedProcess[str]) -> str:
    """One line naming a failed command, its exit status and the start of its stderr."""
    return f"{' '.join(map(str, run.args))} exited {run.returncode}: {run.stderr.strip()[:300]}"
