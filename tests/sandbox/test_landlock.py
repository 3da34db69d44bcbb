"""The session's Landlock domain (`sandbox._landlock`), run on the host without bwrap.

Rule (docs/confinement.md "Process containment", point 5): a process of the domain
cannot open the memory of, nor signal, a process outside it (its parent here), while
the same calls succeed from outside; the harness is executed in place (argv untouched),
and a command that cannot be executed ends with a shell's 126 or 127.

Seen red: with the ruleset's ``scoped`` field 0 in the script the signal is not refused;
with ``landlock_restrict_self`` removed both calls succeed.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from sandbox._landlock import (
    LANDLOCK_FAILED_STATUS,
    PYTHON,
    REFER_ABI,
    SCOPE_ABI,
    host_abi,
    scoped_command,
)

pytestmark = pytest.mark.skipif(not Path(PYTHON).is_file(), reason=f"no {PYTHON}")

PROBE = r"""
import errno, os, sys
def answer(call):
    try:
        call()
        return "ok"
    except OSError as exc:
        return errno.errorcode[exc.errno]
target = int(sys.argv[1])
print(answer(lambda: os.close(os.open("/proc/%d/mem" % target, os.O_RDONLY))),
      answer(lambda: os.kill(target, 0)), " ".join(sys.argv[2:]))
"""
"""Opens the memory of the process ``argv[1]`` and signals it; prints both answers and the
rest of its argv."""


def run(command: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, timeout=30, check=False)


def test_the_command_is_wrapped_untouched() -> None:
    command = ["/opt/harness/claude", "-p", "--", "a b", "$HOME", ""]
    argv = scoped_command(command)
    assert argv[:4] == [PYTHON, "-I", "-S", "-c"] and argv[5:] == command
    with pytest.raises(ValueError, match="empty"):
        scoped_command([])


@pytest.mark.skipif(host_abi() is None, reason="the kernel has no Landlock")
def test_inside_the_domain_the_parent_is_out_of_reach() -> None:
    me = str(os.getpid())
    outside = run([PYTHON, "-c", PROBE, me, "x"])
    assert outside.stdout.split() == ["ok", "ok", "x"], outside.stderr
    inside = run(scoped_command([PYTHON, "-c", PROBE, me, "a b", "c"]))
    assert inside.returncode == 0, inside.stderr
    abi = host_abi()
    assert abi is not None
    signal = "EPERM" if abi >= SCOPE_ABI else "ok"
    assert inside.stdout.split() == ["EACCES", signal, "a", "b", "c"], inside.stderr


def test_a_command_that_cannot_be_executed_ends_like_a_shell(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.write_text("not a program\n")
    missing = run(scoped_command([str(tmp_path / "missing")]))
    refused = run(scoped_command([str(plain)]))
    if host_abi() is None:
        assert missing.returncode == refused.returncode == LANDLOCK_FAILED_STATUS
        assert "no Landlock" in missing.stderr
        return
    assert (missing.returncode, refused.returncode) == (127, 126)
    assert str(tmp_path / "missing") in missing.stderr


def test_the_domain_is_inherited_by_what_the_harness_starts() -> None:
    """A grandchild of the wrapped command cannot reach the runner either, but can reach the
    wrapped command (the same domain)."""
    if host_abi() is None:
        pytest.skip("the kernel has no Landlock")
    nested = (f"import os, subprocess; "
              f"subprocess.call([{PYTHON!r}, '-c', {PROBE!r}, '{os.getpid()}']); "
              f"subprocess.call([{PYTHON!r}, '-c', {PROBE!r}, str(os.getpid())])")
    inside = run(scoped_command([PYTHON, "-c", nested]))
    signal = "EPERM" if (host_abi() or 0) >= SCOPE_ABI else "ok"
    assert inside.stdout.split() == ["EACCES", signal, "ok", "ok"], inside.stderr


RENAME = r"""
import os, sys
base = sys.argv[1]
os.rename(os.path.join(base, "a", "x"), os.path.join(base, "b", "x"))
os.link(os.path.join(base, "b", "x"), os.path.join(base, "a", "y"))
os.rename(os.path.join(base, "a"), os.path.join(base, "b", "a"))
print("moved")
"""
"""A rename and a hard link into another directory, and a directory moved under another."""


@pytest.mark.skipif((host_abi() or 0) < REFER_ABI, reason="no Landlock ABI 2")
@pytest.mark.parametrize("cap", [None, 5, REFER_ABI])
def test_a_session_may_move_files_between_directories(tmp_path: Path, cap: int | None) -> None:
    """The domain changes nothing of the file system: a rename or link into another
    directory works (``git`` writes objects so), on this kernel's ABI and on the older ABIs'
    path (device nodes and REFER handled, REFER allowed on ``/``), where pid 1 is still out
    of reach. Seen red with REFER not allowed (no rule): EXDEV; and with the file accesses
    handled on ABI 6+ too: EXDEV."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "x").write_text("x")
    moved = run(scoped_command([PYTHON, "-c", RENAME, str(tmp_path)], abi_cap=cap))
    assert (moved.returncode, moved.stdout.strip()) == (0, "moved"), moved.stderr
    assert (tmp_path / "b" / "a" / "y").read_text() == "x"
    inside = run(scoped_command([PYTHON, "-c", PROBE, str(os.getpid())], abi_cap=cap))
    assert inside.stdout.split()[0] == "EACCES", inside.stderr


@pytest.mark.skipif(host_abi() is None, reason="the kernel has no Landlock")
def test_abi_1_is_refused_before_the_command_runs() -> None:
    refused = run(scoped_command([PYTHON, "-c", "print('ran')"], abi_cap=1))
    assert refused.returncode == LANDLOCK_FAILED_STATUS and "ran" not in refused.stdout
    assert "cannot allow renames" in refused.stderr
