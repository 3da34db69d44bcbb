"""A session's sandbox under the real bwrap: what it can see (RC-02, RC-03).

The first test runs the very recipe a session runs (`sandbox.open_confined`);
the second shows why its argv is ordered as it is, with bwrap alone.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from sandbox import (
    HARNESS_MOUNT,
    measure_host_layout,
    session_config_dir,
    session_environment,
    setenv_payload,
)
from sandbox.checks._probes import run_confined
from sandbox.confined import ConfinedSpec
from sandbox.users import session_user

SECRET = "placeholder-real-bwrap-3f9d0a71"
"""What a session is given as its key (a gateway's placeholder): set, and off bwrap's argv."""
CANARY = "HW_PARENT_CANARY"
PROVIDER = "http://127.0.0.1:8765"
SCRIPT = r"""
echo '==env'; env
echo '==cmdline'; cat /proc/1/cmdline | tr "\0" " "; echo
echo '==environ'; cat /proc/1/environ | tr "\0" "\n"
echo '==probes'
for p in "$@"; do ls "$p" >/dev/null 2>&1 && echo "visible $p" || echo "absent $p"; done
touch /usr/hw-write-probe 2>/dev/null && echo 'usr writable' || echo 'usr read-only'
touch "$HEADWATER_LOG_DIR/written" && echo 'log writable'
[ -r /opt/harness/claude ] && echo 'harness mounted'
"""


def _sections(stdout: str) -> dict[str, list[str]]:
    sections: dict[str, list[str]] = {}
    current = ""
    for line in stdout.splitlines():
        if line.startswith("=="):
            current = line[2:]
            sections[current] = []
        elif current:
            sections[current].append(line)
    return sections


@pytest.mark.bwrap
def test_session_under_real_bwrap_sees_only_rc03_env_and_rc02_mounts(
    bwrap: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CANARY, "parent-value-must-not-leak")
    host_home = Path.home().resolve()
    workspace, log_dir, other = tmp_path / "ws", tmp_path / "log", tmp_path / "other-session"
    for path in (workspace, log_dir, other):
        path.mkdir()
    (other / "secret.txt").write_text("another session's file")
    harness = tmp_path / "stand-in-harness"
    harness.write_text("#!/bin/sh\necho stand-in\n")
    harness.chmod(0o755)
    assert not str(workspace).startswith(str(host_home) + "/")

    with (
        session_config_dir(name="real", root=tmp_path / "cfg") as config_dir,
        session_config_dir(name="neighbour", root=tmp_path / "cfg") as neighbour,
    ):
        env = session_environment(
            config_dir=config_dir, log_dir=log_dir, provider_url=PROVIDER,
            provider_key=("ANTHROPIC_API_KEY", SECRET),
        )
        spec = ConfinedSpec(
            command=["/bin/sh", "-c", SCRIPT, "sh", str(host_home), str(other), str(neighbour),
                     str(workspace)],
            executable=harness, network="host", env=env, workspace=workspace, log_dir=log_dir,
            config_dir=config_dir, layout=measure_host_layout(), user=session_user(),
        )  # fmt: skip
        run = run_confined(spec, timeout_s=30)

    assert run.returncode == 0, run.stderr
    out = _sections(run.stdout)
    inside = dict(line.split("=", 1) for line in out["env"])
    # bwrap 0.8.0 itself sets PWD to the --chdir directory after --clearenv; nothing else is added.
    assert inside.pop("PWD") == str(workspace)
    assert inside == {
        "HOME": str(config_dir),
        "CLAUDE_CONFIG_DIR": str(config_dir),
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_TELEMETRY": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "HEADWATER_LOG_DIR": str(log_dir),
        "ANTHROPIC_BASE_URL": PROVIDER,
        "ANTHROPIC_API_KEY": SECRET,
    }
    assert CANARY not in run.stdout
    # pid 1 is bwrap: its command line is readable (so the check is not vacuous) and clean.
    cmdline = " ".join(out["cmdline"])
    assert "--clearenv --args" in cmdline
    assert SECRET not in cmdline
    assert "ANTHROPIC" not in cmdline
    assert [line for line in out["environ"] if line] == []
    assert out["probes"] == [
        f"absent {host_home}",
        f"absent {other}",
        f"absent {neighbour}",  # another session's config dir under the same root
        f"visible {workspace}",
        "usr read-only",
        "log writable",
        "harness mounted",
    ]
    assert (log_dir / "written").exists()
    assert not config_dir.exists()


@pytest.mark.bwrap
def test_args_before_clearenv_would_lose_the_environment(bwrap: str) -> None:
    """Why --args follows --clearenv (RC-03): bwrap applies both while parsing, in order."""
    payload = setenv_payload({"HW_PROBE": "set"})
    results = {}
    for order in (["--clearenv", "--args", "{fd}"], ["--args", "{fd}", "--clearenv"]):
        read_fd, write_fd = os.pipe()
        os.write(write_fd, payload)
        os.close(write_fd)
        try:
            argv = [
                bwrap,
                "--unshare-user",
                "--ro-bind",
                "/",
                "/",
                *(a.format(fd=read_fd) for a in order),
                "--",
                "/usr/bin/env",
            ]
            run = subprocess.run(
                argv,
                env={},
                pass_fds=(read_fd,),
                capture_output=True,
                text=True,
                timeout=30,
                check=True,
            )
        finally:
            os.close(read_fd)
        results[order[0]] = "HW_PROBE=set" in run.stdout.splitlines()
    assert results == {"--clearenv": True, "--args": False}


def test_harness_mount_is_a_path_of_its_own() -> None:
    assert HARNESS_MOUNT == "/opt/harness/claude"
