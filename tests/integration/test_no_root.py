"""No root inside: a root runner's session runs as an unprivileged user.

bwrap's ``--uid`` only maps a uid inside the user namespace; started by root,
the sandbox is still root on the host, and ``/etc/shadow`` (under the
read-only ``/etc``) is readable. The runner drops to a user of its session
pool (``headwater-session`` first) before bwrap starts. Driven through
``record`` with the real CLI and the scripted provider; the session reports
its ids, tries ``/etc/shadow`` and stats its own directories, all written into
its workspace.

Seen red with ``HW_WEAKEN=no-drop`` (tests/integration/weaken/): ``id -u``
prints 0 and ``cat /etc/shadow`` succeeds.
"""

from __future__ import annotations

import os
import pwd
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from demo import ScriptedProvider, load_scripts
from sandbox import session_pool
from tests.integration import kit

pytestmark = [
    pytest.mark.bwrap,
    pytest.mark.harness,
    pytest.mark.timeout(300),
    pytest.mark.skipif(os.geteuid() != 0, reason="the runner must be root for this test"),
]

TASK = "no root inside: report who you are and try the shadow file"
COMMAND = (
    "mkdir -p attempts; id -u > attempts/uid.txt; id -g > attempts/gid.txt; "
    "id -G > attempts/groups.txt; "
    "{ cat /etc/shadow; } > attempts/shadow.txt 2>&1; echo \"rc=$?\" >> attempts/shadow.txt; "
    "grep -E '^(Uid|Gid|Groups|CapEff|CapPrm|NoNewPrivs)' /proc/self/status > attempts/status.txt; "
    'stat -c "%a %u %g" . "$CLAUDE_CONFIG_DIR" "$HEADWATER_LOG_DIR" > attempts/modes.txt'
)


@pytest.fixture(scope="module")
def session(bwrap: str, harness: Path) -> Iterator[Path]:
    """The workspace of one recorded session of a root runner."""
    with kit.host_dir("hw-noroot-") as root:
        corpus = kit.write_corpus(root / "corpus", {"ROOT-1": TASK})
        kit.write_script(root / "scripts", "ROOT-1", TASK, [kit.bash("t1", COMMAND)])
        batch = root / "batch"
        with ScriptedProvider(load_scripts(root / "scripts")) as provider:
            done = kit.cli(
                "record", "--corpus", str(corpus), "--tier", "regression", "--probe", "ROOT-1",
                "--arm", "present", "--batch-dir", str(batch), "--provider-url", provider.url,
                "--api-key-env", "HW_KEY", "--harness", str(harness), "--bwrap", bwrap,
                env=kit.base_env(HW_KEY="sk-no-root-placeholder"),
            )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        yield batch / "sessions" / "present" / "ROOT-1" / "r1" / "workspace"


def _seen(workspace: Path, name: str) -> str:
    return (workspace / "attempts" / name).read_text()


def test_the_runner_is_root_and_root_can_read_the_shadow_file() -> None:
    """The positive control: on the host, this runner reads /etc/shadow."""
    assert os.geteuid() == 0
    assert Path("/etc/shadow").read_bytes()


def _session_user(session: Path) -> pwd.struct_passwd:
    """The pool user the session ran as (the one its lease gave it; headwater-session unless
    another sandbox held it)."""
    uid = int(_seen(session, "uid.txt"))
    pool = session_pool()
    assert pool is not None and uid in {u.uid for u in pool.users}, uid
    return pwd.getpwuid(uid)


def test_the_session_is_not_root(session: Path) -> None:
    user = _session_user(session)
    assert _seen(session, "uid.txt").strip() == str(user.pw_uid) != "0"
    assert _seen(session, "gid.txt").strip() == str(user.pw_gid) != "0"
    assert _seen(session, "groups.txt").split() == [str(user.pw_gid)]
    status = dict(line.split(":", 1) for line in _seen(session, "status.txt").splitlines())
    assert status["Uid"].split() == [str(user.pw_uid)] * 4
    assert int(status["CapEff"], 16) == 0


def test_root_only_host_files_stay_unreadable(session: Path) -> None:
    shadow = _seen(session, "shadow.txt")
    assert "Permission denied" in shadow
    assert "rc=1" in shadow
    assert "root:" not in shadow


def test_the_session_user_owns_its_directories_0700_while_it_runs_and_then_the_runner(
        session: Path) -> None:
    user = _session_user(session)
    inside = [line.split() for line in _seen(session, "modes.txt").splitlines()]
    assert inside == [["700", str(user.pw_uid), str(user.pw_gid)]] * 3
    # After the session (sandbox.storage._reclaim): the workspace is the runner's, readable; the
    # log a copy, the runner's alone.
    for path, mode in ((session, 0o755), (session.parent / "log", 0o700)):
        st = path.stat()
        assert (stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid) == (mode, 0, 0)
