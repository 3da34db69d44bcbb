"""Nothing a session can look up names its condition: what it reads of itself, as it reports it.

A session is the subject of a measurement (RC-02, "Blind sessions" in
docs/confinement.md): nothing it can look up may name its arm, its probe,
its session or its batch. A stand-in harness (one self-contained file run by
/usr/bin/python3) reads, inside the sandbox, what a curious session would:
``/proc/self/mountinfo``, ``/proc/self/cgroup``, ``env``, the hostname, the
command line of every process it sees, ``/proc/1/environ``, ``pwd``, ``ls -la``
of ``$HOME`` and ``$HEADWATER_LOG_DIR``, and the links of ``/proc/self/cwd``
and ``/proc/self/fd/*``; then it prints a valid session whose final message
holds all of it. It runs through the real ``record`` into a batch directory
named ``absent-HW-PRB-0003`` (its arm and probe) under /var/tmp, and the
final text the batch kept is searched for the condition's names.

A root runner seals each attempt into a loop-mounted file system of its own
(docs/storage.md): its mounts show ``/workspace`` and ``/log``, and nothing
under ``/var/tmp/headwater-campaign`` nor a runner-tagged name shows at all.
A runner that is not root stages the attempt in
``/var/tmp/headwater-campaign-<uid>/store/<tag>-<random>/fs``, which its
mountinfo shows (the documented limitation): that path is allowed here, a
name of the condition is not.

Seen red with ``HW_WEAKEN=host-paths`` (the directories bound at their host
paths too, the session started in the host path of its workspace) and
``HW_WEAKEN=options-on-argv`` (the mounts on bwrap's command line, which is
``/proc/1/cmdline`` inside), with ``PYTHONPATH=tests/integration/weaken``.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import re
import subprocess
import sys
import sysconfig
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import pytest

from tests.campaign.corpora import doc, probe_doc, write_files
from tests.conftest import missing
from tests.integration import kit
from tests.standin import STANDIN_PYTHON

pytestmark = [pytest.mark.bwrap, pytest.mark.timeout(180)]

BATCH_NAME: Final = "absent-HW-PRB-0003"
"""The batch directory's own name: the arm and the probe of its one session."""
ARM: Final = "absent"
PROBE: Final = "HW-PRB-0003"
CORPUS_NAME: Final = "lookup-corpus"
"""The corpus root's name: the batch's workspace path is ``/workspace/<it>`` (RC-02)."""
WORKSPACE_PATH: Final = f"/workspace/{CORPUS_NAME}"
CONFIG_MOUNT: Final = "/run/headwater/config"
LOG_MOUNT: Final = "/run/headwater/log"
RUNNER_ROOT: Final = "/var/tmp/headwater-campaign"
"""Where a runner keeps its stores, config and egress directories (docs/storage.md)."""
NON_ROOT_STORE: Final = re.compile(r"/store/[0-9]+\.[0-9]+(?:\.[0-9]+)?-[A-Za-z0-9_]{8}"
                                   r"/fs/(?:workspace|log)$")
"""A non-root runner's staging directory (docs/storage.md), as mountinfo shows it (the path
within its file system): allowed in its session's view."""
TAGGED: Final = re.compile(r"(?<![0-9A-Za-z.])[0-9]+(?:\.[0-9]+){0,2}-session-[A-Za-z0-9_]{8}"
                           r"|(?<![0-9A-Za-z.])[0-9]+\.[0-9]+(?:\.[0-9]+)?-[A-Za-z0-9_]{8}(?![A-Za-z0-9_])")
"""The names a runner gives its host directories: a config directory ``<runner
tag>-session-<random>``, a store ``<runner tag>-<random>`` (runner tag ``<pid>.<start>.<ns>``,
an older ``<pid>.<start>`` or ``<pid>``; then mkdtemp's eight characters)."""
STORE: Final = re.compile(re.escape(RUNNER_ROOT) + r"/store|(?<![0-9A-Za-z.])"
                          r"[0-9]+\.[0-9]+(?:\.[0-9]+)?-[A-Za-z0-9_]{8}(?![A-Za-z0-9_])")
"""A root runner's store, by its path or its name ``<runner tag>-<random>``."""
SNIPPET_CHARS: Final = 60
"""Context quoted either side of a leak in a failure message."""

_LOOKUP: Final = r'''#!{python}
"""Stand-in written by tests/integration/test_blind_lookup.py: reports what it can look up."""
import base64, json, os, subprocess, sys

WORKSPACE, SLEEP_S = {workspace!r}, {sleep_s!r}
if sys.argv[1:] == ["--version"]:
    print("0.0.0 (lookup stand-in)")
    sys.exit(0)


def read(path):
    try:
        with open(path, "rb") as f:
            return f.read().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError as exc:
        return "error: %s" % exc


def run(*argv):
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=10)
        return done.stdout + done.stderr + "rc=%d" % done.returncode
    except OSError as exc:
        return "error: %s" % exc


def link(path):
    try:
        return os.readlink(path)
    except OSError as exc:
        return "error: %s" % exc


seen = [("mountinfo", read("/proc/self/mountinfo")), ("cgroup", read("/proc/self/cgroup")),
        ("env", run("/usr/bin/env")), ("hostname", run("/bin/sh", "-c", "hostname || uname -n")),
        ("kernel hostname", read("/proc/sys/kernel/hostname")),
        ("pid1 environ", read("/proc/1/environ")), ("pwd", run("/bin/sh", "-c", "pwd")),
        ("getcwd", os.getcwd()), ("ls home", run("/bin/ls", "-la", os.environ.get("HOME", "/"))),
        ("ls log", run("/bin/ls", "-la", os.environ.get("HEADWATER_LOG_DIR", "/"))),
        ("cwd link", link("/proc/self/cwd"))]
for name in sorted(os.listdir("/proc/self/fd")):
    seen.append(("fd " + name, link("/proc/self/fd/" + name)))
for pid in sorted((p for p in os.listdir("/proc") if p.isdigit()), key=int):
    seen.append(("cmdline " + pid, read("/proc/%s/cmdline" % pid)))
    seen.append(("cwd " + pid, link("/proc/%s/cwd" % pid)))
text = "".join("== %s ==\n%s\n" % (name, value) for name, value in seen)


def out(obj):
    data = memoryview(json.dumps(obj).encode() + b"\n")
    while data:
        data = data[os.write(1, data):]


out({{"type": "system", "subtype": "init", "cwd": WORKSPACE, "tools": ["Read", "Bash"],
     "mcp_servers": [], "model": "claude-test-model", "permissionMode": "dontAsk",
     "skills": [], "plugins": [], "memory_paths": {{}}, "claude_code_version": "2.1.197"}})
import time
time.sleep(SLEEP_S)
out({{"type": "assistant", "parent_tool_use_id": None, "message": {{
    "id": "m1", "model": "claude-test-model", "content": [{{"type": "text", "text": text}}]}}}})
out({{"type": "result", "subtype": "success", "is_error": False, "api_error_status": None,
     "num_turns": 1, "result": "", "total_cost_usd": 0.001}})
'''


def write_lookup_standin(path: Path, *, sleep_s: float = 0.0) -> Path:
    """The lookup stand-in at ``path``, readable and executable by anyone (a non-root runner)."""
    path.write_text(_LOOKUP.format(python=STANDIN_PYTHON, workspace=WORKSPACE_PATH,
                                   sleep_s=float(sleep_s)), encoding="ascii")
    path.chmod(0o755)
    return path


@dataclass(frozen=True)
class Runner:
    """Who runs ``record``: root, or an unprivileged user (uid, gid) set up to run it."""

    user: tuple[int, int] | None
    cgroups: tuple[Path, ...] = ()
    """The user's delegated cgroups (root sets them up), which the runner joins."""

    def argv(self, *args: str) -> list[str]:
        """The runner's command line: ``python -m campaign ARGS``, dropped to the user if any."""
        if self.user is None:
            return [sys.executable, "-m", "campaign", *args]
        uid, gid = self.user
        # A host where no root runner ran: this machine's runner directory is root's (0711,
        # unwritable for another user), so a private mount namespace hides it under an empty
        # one of the user's. Debian's interpreter (the venv's lies under root's 0700 home) with
        # the venv's packages: the same Python minor version, so its compiled modules load.
        # And a cgroup v2 subtree delegated to the user (as systemd's Delegate=yes gives one).
        joins = "".join(f"echo $$ > {cgroup}/cgroup.procs && " for cgroup in self.cgroups)
        fresh = (f"mkdir -p {RUNNER_ROOT} && mount -t tmpfs -o mode=0755,uid={uid},gid={gid} "
                 f'tmpfs {RUNNER_ROOT} && {joins}exec "$@"')
        return ["unshare", "--mount", "--propagation", "private", "/bin/sh", "-c", fresh,
                "fresh-host", "setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups",
                "--", STANDIN_PYTHON, "-m", "campaign", *args]  # fmt: skip

    def env(self, **extra: str) -> dict[str, str]:
        env = kit.base_env(HW_KEY="sk-lookup-placeholder", **extra)
        if self.user is not None:
            site = sysconfig.get_paths()["purelib"]
            paths = [p for p in env.get("PYTHONPATH", "").split(":") if p]
            env["PYTHONPATH"] = ":".join([*(str(kit.REPO / p) for p in paths), str(kit.REPO),
                                          site])  # fmt: skip
            env["PYTHONDONTWRITEBYTECODE"] = "1"
            env["HOME"] = "/nonexistent"
        return env


def _open(path: Path, owner: tuple[int, int] | None) -> None:
    """Everything under ``path`` readable by anyone, ``path`` itself the runner's."""
    for directory, _, names in os.walk(path):
        os.chmod(directory, 0o755)
        for name in names:
            os.chmod(Path(directory) / name, 0o755 if name == "claude" else 0o644)
    if owner is not None:
        os.chown(path, *owner)


@contextlib.contextmanager
def lookup_batch(runner: Runner, *, sleep_s: float = 0.0) -> Iterator[tuple[Path, list[str]]]:
    """A host root holding the corpus and the stand-in, and the ``record`` args into its
    ``absent-HW-PRB-0003`` batch; everything removed afterwards."""
    with kit.host_dir("hw-lookup-") as root, kit.host_dir("hw-harness-") as bin_dir:
        corpus = write_files(root / CORPUS_NAME, {
            ".headwater/probe.yml": "tiers:\n  campaign: {arms: [present, absent], "
                                    "repetitions: 1}\ntools: [Read, Bash]\n"
                                    "model: claude-test-model\n",
            "docs/probes/p3.md": probe_doc(PROBE, "Look around", examines=["docs/notes.md"],
                                           task="Say what you can see of yourself.\n"),
            "docs/notes.md": doc("HW-NOTE-0001", "# notes\n"),
        })
        harness = write_lookup_standin(bin_dir / "claude", sleep_s=sleep_s)
        _open(root, runner.user)
        _open(bin_dir, None)
        batch = root / BATCH_NAME
        args = ["record", "--corpus", str(corpus), "--probe", PROBE, "--arm", ARM,
                "--batch-dir", str(batch), "--harness", str(harness),
                "--provider-url", "http://127.0.0.1:9", "--api-key-env", "HW_KEY",
                "--allow-identical-arms"]
        try:
            yield batch, args
        finally:
            kit.kill_all(kit.processes_under(root))


def _record(runner: Runner, args: list[str], **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(runner.argv(*args), capture_output=True, text=True,
                          env=runner.env(**extra), timeout=kit.CLI_TIMEOUT_S, check=False,
                          cwd=kit.REPO)  # fmt: skip


def _final_text(batch: Path) -> tuple[str, str]:
    """The one session's name and the final text the batch kept for it."""
    (final,) = kit.final_list(batch)
    assert final["state"] == "recorded", final["reason"]
    assert (final["arm"], final["probe"]) == (ARM, PROBE)
    attempt = batch / "sessions" / ARM / PROBE / final["session"] / f"attempt-{final['attempt']}"
    return final["session"], (attempt / "final.txt").read_text()


def _section(text: str, name: str) -> str:
    found = re.search(rf"^== {re.escape(name)} ==\n(.*?)(?=^== |\Z)", text, re.S | re.M)
    assert found is not None, f"no {name} in the final text"
    return found.group(1).strip()


def _leaks(text: str, batch: Path, session: str, *, runner_paths: bool) -> list[str]:
    """Each condition-naming match in ``text``, quoted with its context."""
    component = r"(?<=[/_-]){0}(?=[/_-]|$)|(?<![A-Za-z0-9]){0}(?=[/_-])"
    matchers = {
        "arm": re.compile(component.format(ARM), re.M),
        "probe": re.compile(re.escape(PROBE)),
        "session": re.compile(component.format(re.escape(session)), re.M),
        "batch": re.compile(re.escape(str(batch))),
        "batch's parent": re.compile(re.escape(batch.parent.name)),
        "sessions dir": re.compile("/sessions/"),
    }
    if runner_paths:
        matchers["runner's directories"] = re.compile(re.escape(RUNNER_ROOT))
        matchers["runner-tagged name"] = TAGGED
    found = []
    for what, pattern in matchers.items():
        for match in pattern.finditer(text):
            lo, hi = max(0, match.start() - SNIPPET_CHARS), match.end() + SNIPPET_CHARS
            found.append(f"{what}: ...{text[lo:hi]}...")
    return found


def _mount_roots(mountinfo: str) -> dict[str, str]:
    """Mount point -> root field of each line of a mountinfo (proc(5))."""
    return {fields[4]: fields[3] for fields in (line.split() for line in mountinfo.splitlines())}


def _check_told(text: str) -> None:
    """What the session is told, as the rule defines it (docs/confinement.md, its table)."""
    env = dict(line.split("=", 1) for line in _section(text, "env").splitlines() if "=" in line)
    assert (env["HOME"], env["CLAUDE_CONFIG_DIR"]) == (CONFIG_MOUNT, CONFIG_MOUNT)
    assert env["HEADWATER_LOG_DIR"] == LOG_MOUNT
    assert env["PWD"] == WORKSPACE_PATH
    for name in ("pwd", "getcwd", "cwd link"):
        assert _section(text, name).removesuffix("rc=0").strip() == WORKSPACE_PATH, name
    assert _section(text, "kernel hostname") == os.uname().nodename
    # /proc/1/cmdline is bwrap's: namespace flags and --args N, no mount and no variable.
    pid1 = _section(text, "cmdline 1").split()
    assert pid1[0].endswith("bwrap") and "--args" in pid1, " ".join(pid1)
    mounts = {"--bind", "--ro-bind", "--symlink", "--chdir", "--setenv"}
    assert not mounts & set(pid1[:pid1.index("--")]), " ".join(pid1)


def test_the_matchers_find_what_they_look_for(tmp_path: Path) -> None:
    """The positive control: each name, planted as a path would show it, is found."""
    batch = Path("/var/tmp/hw-lookup-abc123") / BATCH_NAME
    planted = (f"{batch}/sessions/{ARM}/{PROBE}/r1/workspace /workspace "
               f"{RUNNER_ROOT}/cfg/4242-session-abcd_123 /s/4242.99-abcdefgh/fs")
    kinds = {leak.split(":", 1)[0] for leak in _leaks(planted, batch, "r1", runner_paths=True)}
    assert kinds == {"arm", "probe", "session", "batch", "batch's parent", "sessions dir",
                     "runner's directories", "runner-tagged name"}
    assert _leaks("/workspace/lookup-corpus absently r10 present",
                  batch, "r1", runner_paths=True) == []


@dataclass(frozen=True)
class Looked:
    """One recorded session's batch, its name, and the final text it printed."""

    batch: Path
    session: str
    text: str


@pytest.fixture(scope="module")
def root_run(bwrap: str) -> Iterator[Looked]:
    """The lookup session recorded by a root runner."""
    if os.geteuid() != 0:
        missing("a root runner")
    with lookup_batch(Runner(None)) as (batch, args):
        done = _record(Runner(None), args)
        assert done.returncode == 0, done.stdout + done.stderr
        yield Looked(batch, *_final_text(batch))


def test_a_root_runners_session_looks_up_nothing_of_its_condition(root_run: Looked) -> None:
    """Mounts, cgroup, environment, processes, links: none names the arm, probe, session or
    batch, nor a store; the workspace's and log's mounts are the store's ``/workspace`` and
    ``/log``."""
    text = root_run.text
    _check_told(text)
    roots = _mount_roots(_section(text, "mountinfo"))
    assert (roots[WORKSPACE_PATH], roots[LOG_MOUNT]) == ("/workspace", "/log")
    # The v2 line is the session's own cgroup, as the cgroup namespace's root; a hybrid
    # host's v1 lines are the runner's and name nothing of the session (checked below).
    assert "0::/" in _section(text, "cgroup").splitlines()
    leaks = _leaks(text, root_run.batch, root_run.session, runner_paths=False)
    leaks += [f"store: {m.group()}" for m in STORE.finditer(text)]
    assert not leaks, "\n".join(leaks)


def test_a_root_runners_session_sees_none_of_the_runners_directories(root_run: Looked) -> None:
    """Nothing under /var/tmp/headwater-campaign and no runner-tagged name shows at all."""
    leaks = _leaks(root_run.text, root_run.batch, root_run.session, runner_paths=True)
    assert not leaks, "\n".join(leaks)


def _unprivileged() -> tuple[int, int]:
    """A user that is not root to run the runner as: nobody (root sets it up)."""
    user = pwd.getpwnam("nobody")
    return user.pw_uid, user.pw_gid


@contextlib.contextmanager
def non_root_runner() -> Iterator[Runner]:
    """This process, if it is not root; else nobody, with cgroups of its own: a v2 subtree, and
    on a hybrid host the v1 ``pids`` and ``memory`` ones its limits go in."""
    if os.geteuid() != 0:
        yield Runner(None)
        return
    from sandbox.cgroup import find_cgroups

    host = find_cgroups()
    if host.v2 is None:
        missing("a cgroup v2 hierarchy")
    hierarchies = {h for h in (host.v2, *host.limits.values()) if h is not None}
    uid, gid = _unprivileged()
    made = [h.mount / h.own.lstrip("/") / f"hw-lookup-{os.getpid()}" for h in hierarchies]
    try:
        for cgroup in made:
            cgroup.mkdir()
            for path in (cgroup, *(cgroup / n for n in ("cgroup.procs", "cgroup.subtree_control",
                                                       "cgroup.threads", "tasks"))):
                with contextlib.suppress(FileNotFoundError):
                    os.chown(path, uid, gid)
        yield Runner((uid, gid), tuple(made))
    finally:
        for cgroup in made:
            for directory in sorted((p for p in cgroup.rglob("*") if p.is_dir()),
                                    key=lambda p: len(p.parts), reverse=True):
                directory.rmdir()
            with contextlib.suppress(FileNotFoundError):
                cgroup.rmdir()


def test_a_non_root_runners_session_looks_up_nothing_of_its_condition(bwrap: str) -> None:
    """The weaker documented property: the staging directory's path shows in the mounts (a
    random name under ``/var/tmp/headwater-campaign-<uid>/store``), no name of the arm, probe,
    session or batch does."""
    with non_root_runner() as runner, lookup_batch(runner) as (batch, args):
        done = _record(runner, args)
        assert done.returncode == 0, done.stdout + done.stderr
        session, text = _final_text(batch)
        _check_told(text)
        roots = _mount_roots(_section(text, "mountinfo"))
        for mount, name in ((WORKSPACE_PATH, "workspace"), (LOG_MOUNT, "log")):
            assert NON_ROOT_STORE.search(roots[mount]), roots[mount]  # the limitation, seen
            assert roots[mount].endswith(f"/fs/{name}"), roots[mount]
        leaks = _leaks(text, batch, session, runner_paths=False)
        assert not leaks, "\n".join(leaks)
