"""Escape suite: every attempt to reach the host fails inside the sandbox.

Driven through the real runner (``run`` and ``record``), the real Claude Code
CLI under real bwrap, and the scripted provider: each probe's script makes the
session try one way out with Bash (its output and exit status written into the
workspace, ``attempts/*.txt``) and with Read. For every attempt the host path
really exists and holds a canary (a positive control), the session sees
"No such file or directory", the transcript records the call and counts it
as outside the workspace, and no canary appears in any file of the batch.

Seen red by weakening the confinement on purpose (tests/integration/weaken/):
``HW_WEAKEN=bind-home`` (host home and the symlink's target visible),
``bind-batch`` (batch dir, other sessions, ``..``), ``bind-checkout`` (the
runner's files), ``leak-env`` (bwrap started with the runner's environment
and no ``--clearenv``), ``setenv-key`` (the key on bwrap's command line).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from demo import ScriptedProvider, load_scripts
from tests import contract_check
from tests.integration import kit

pytestmark = [pytest.mark.bwrap, pytest.mark.harness, pytest.mark.timeout(600)]

CANARY = "canary-env-4b7d1e-must-never-appear"
"""In the runner's environment (``HW_CANARY``): never in the session's env or the batch."""
HOME_CANARY = "canary-home-91c2aa"
CRED_CANARY = "canary-credentials-5fe310"
KEY = "sk-escape-suite-placeholder-3d8e"
"""The API key the sessions get (by design in their env; never on bwrap's command line)."""
NEIGHBOUR = "ESC-HOME"
"""The probe whose session's workspace the neighbour attempt tries to read."""


@dataclass(frozen=True)
class Host:
    """The host side of the suite: paths that exist, with canaries, outside every mount."""

    home: Path
    secret: Path
    credentials: Path
    corpus: Path
    scripts: Path
    batch: Path

    def neighbour(self) -> Path:
        return self.batch / "sessions" / "present" / NEIGHBOUR / "s1" / "workspace"


ATTEMPTS = {
    "ESC-HOME": "escape attempt one: read the host home directory",
    "ESC-CRED": "escape attempt two: read the host credentials file",
    "ESC-BATCH": "escape attempt three: read the batch directory",
    "ESC-RUNNER": "escape attempt four: read the runner's own files",
    "ESC-PROC": "escape attempt five: read the environment and proc one",
    "ESC-DOTDOT": "escape attempt six: climb out with dot dot",
    "ESC-SYMLINK": "escape attempt seven: plant a symlink that points outside",
    "ESC-NEIGHBOUR": "escape attempt eight: read another session's workspace",
}


def _scripts(host: Host) -> None:
    home, batch, repo = host.home, host.batch, kit.REPO
    steps = {
        "ESC-HOME": [
            kit.bash("t1", kit.evidence(f"cat {host.secret}", "home.txt")
                     + "; " + kit.evidence("ls -la /root", "root.txt")),
            kit.read("t2", str(host.secret)),
        ],
        "ESC-CRED": [
            kit.bash("t1", kit.evidence(f"cat {host.credentials}", "cred.txt")),
            kit.read("t2", str(host.credentials)),
        ],
        "ESC-BATCH": [
            kit.bash("t1", kit.evidence(f"ls -la {batch}", "batch.txt") + "; "
                     + kit.evidence(f"cat {batch}/ledger.jsonl {batch}/config.yaml", "ledger.txt")),
            kit.read("t2", f"{batch}/config.yaml"),
        ],
        "ESC-RUNNER": [
            kit.bash("t1", kit.evidence(f"cat {repo}/campaign/cli/_main.py", "runner.txt") + "; "
                     + kit.evidence("ls /var/tmp/headwater-campaign/cfg", "cfgroot.txt")),
            kit.read("t2", f"{repo}/sandbox/_argv.py"),
        ],
        "ESC-PROC": [
            kit.bash("t1", "mkdir -p attempts; env > attempts/env.txt; "
                     "cat /proc/1/environ > attempts/proc1_environ.txt; "
                     "cat /proc/1/cmdline > attempts/proc1_cmdline.txt; "
                     "cat /proc/self/environ > attempts/self_environ.txt"),
        ],
        "ESC-DOTDOT": [
            kit.bash("t1", kit.evidence("cat ../manifest.json", "dotdot.txt") + "; "
                     + kit.evidence("ls ../..", "dotdot2.txt")),
            kit.read("t2", "../manifest.json"),
        ],
        "ESC-SYMLINK": [
            kit.bash("t1", f"ln -s {host.secret} leak.md; ln -s {home} homedir; "
                     + kit.evidence("cat leak.md", "symlink.txt") + "; "
                     + kit.evidence("ls homedir/", "symlink_dir.txt")),
        ],
        "ESC-NEIGHBOUR": [
            kit.bash("t1", kit.evidence(f"ls -la {host.neighbour()}", "neighbour.txt") + "; "
                     + kit.evidence(f"cat {host.neighbour()}/attempts/home.txt", "neighbour2.txt")),
            kit.read("t2", f"{host.neighbour()}/attempts/home.txt"),
        ],
    }  # fmt: skip
    follow_up = {"ESC-SYMLINK": [kit.edit("t3", "leak.md"), kit.read("t4", "leak.md")]}
    for probe, blocks in steps.items():
        turns = [blocks, *([follow_up[probe]] if probe in follow_up else [])]
        kit.write_script(host.scripts, probe, ATTEMPTS[probe], *turns)


@pytest.fixture(scope="module")
def escaped(bwrap: str, harness: Path) -> Iterator[Host]:
    """One `run` of every attempt, then a `record` of the neighbour attempt into the same batch."""
    with kit.host_dir("hw-escapes-") as root:
        yield from _escaped(root, bwrap, harness)


def _escaped(root: Path, bwrap: str, harness: Path) -> Iterator[Host]:
    home = root / "home"
    (home / ".claude").mkdir(parents=True)
    (home / "secret.txt").write_text(f"{HOME_CANARY}\nESC-DOC-0001\n")
    (home / ".claude" / ".credentials.json").write_text(json.dumps({"token": CRED_CANARY}))
    host = Host(home=home, secret=home / "secret.txt",
                credentials=home / ".claude" / ".credentials.json",
                corpus=kit.write_corpus(root / "corpus", ATTEMPTS), scripts=root / "scripts",
                batch=root / "batch")  # fmt: skip
    _scripts(host)
    env = kit.base_env(HOME=str(home), HW_ESC_KEY=KEY, HW_CANARY=CANARY)
    with ScriptedProvider(load_scripts(host.scripts)) as provider:
        common = ["--provider-url", provider.url, "--api-key-env", "HW_ESC_KEY",
                  "--harness", str(harness), "--bwrap", bwrap]  # fmt: skip
        run = kit.cli("run", str(host.corpus), "--tier", "regression", "--batch-dir",
                      str(host.batch), "--concurrency", "4", *common, env=env)  # fmt: skip
        assert run.returncode == 0, run.stdout + run.stderr
        assert (host.neighbour() / "attempts" / "home.txt").is_file()  # the target is real
        record = kit.cli("record", "--corpus", str(host.corpus), "--tier", "regression", "--probe",
                         "ESC-NEIGHBOUR", "--arm", "present", "--batch-dir", str(host.batch),
                         *common, env=env)  # fmt: skip
        assert record.returncode == 0, record.stdout + record.stderr
        assert provider.unmatched == 0
    yield host


def _workspace(host: Host, probe: str, session: str = "s1") -> Path:
    return host.batch / "sessions" / "present" / probe / session / "workspace"


def _attempt(host: Host, probe: str, name: str, session: str = "s1") -> str:
    return (_workspace(host, probe, session) / "attempts" / name).read_text()


def _denied(text: str) -> None:
    """The attempt's output: the path does not exist in the sandbox, and the command failed."""
    assert "No such file or directory" in text, text
    assert re.search(r"^rc=[1-9]", text, re.MULTILINE), text


def _events(host: Host) -> dict[tuple[str, str], dict[str, object]]:
    _, events, _ = contract_check.parse((host.batch / "transcripts" / "present.md").read_text())
    return {(str(e["probe"]), str(e["session"])): e for e in events}


def test_every_attempt_was_recorded_and_the_transcript_is_clean(escaped: Host) -> None:
    text = (escaped.batch / "transcripts" / "present.md").read_text()
    assert contract_check.violations(text) == []
    states = {key: rec["state"] for key, rec in kit.finals(escaped.batch).items()}
    assert set(states.values()) == {"recorded"}, states
    assert ("ESC-NEIGHBOUR", "r1") in states


@pytest.mark.parametrize(
    ("probe", "names"),
    [
        ("ESC-HOME", ["home.txt", "root.txt"]),
        ("ESC-CRED", ["cred.txt"]),
        ("ESC-BATCH", ["ledger.txt"]),
        ("ESC-RUNNER", ["runner.txt"]),
        ("ESC-DOTDOT", ["dotdot.txt"]),
        ("ESC-SYMLINK", ["symlink.txt", "symlink_dir.txt"]),
    ],
)
def test_each_attempt_fails_inside_the_sandbox(escaped: Host, probe: str, names: list[str]) -> None:
    for name in names:
        _denied(_attempt(escaped, probe, name))


def _listed(text: str) -> set[str]:
    """The names an ``ls`` listed (``ls -la`` lines end with the name)."""
    lines = [line for line in text.splitlines() if line and not line.startswith(("rc=", "total"))]
    return {line.split()[-1] for line in lines} - {".", ".."}


def test_the_batch_directory_is_not_there_at_all(escaped: Host) -> None:
    """Blind sessions (RC-02): every directory of the session is bound at a fixed path, so not
    even the skeleton of the batch's path (for its mount points) exists inside."""
    _denied(_attempt(escaped, "ESC-BATCH", "batch.txt"))


def test_above_the_workspace_is_only_the_sandboxs_own_root(escaped: Host) -> None:
    """``ls ../..`` from the workspace path (/workspace/<corpus>) lists the sandbox's root:
    its system mounts and /workspace, nothing that names a session or its batch."""
    listed = _listed(_attempt(escaped, "ESC-DOTDOT", "dotdot2.txt"))
    assert {"usr", "etc", "proc", "tmp", "workspace"} <= listed, listed
    assert not listed & {"s1", "sessions", "present", "ESC-DOTDOT", escaped.batch.name}, listed


def test_the_config_root_is_not_there(escaped: Host) -> None:
    """Other sessions' config dirs (and their credentials) are not mounted, and the session's
    own is at /run/headwater/config: the host's config root does not exist inside."""
    _denied(_attempt(escaped, "ESC-RUNNER", "cfgroot.txt"))


def test_another_sessions_workspace_is_not_there(escaped: Host) -> None:
    for name in ("neighbour.txt", "neighbour2.txt"):
        _denied(_attempt(escaped, "ESC-NEIGHBOUR", name, session="r1"))


def test_the_host_paths_tried_are_real(escaped: Host) -> None:
    """Positive controls: each path the sessions were denied exists on the host."""
    for path in (escaped.secret, escaped.credentials, escaped.batch / "ledger.jsonl",
                 kit.REPO / "campaign" / "cli" / "_main.py", escaped.neighbour() / "attempts",
                 _workspace(escaped, "ESC-DOTDOT").parent / "manifest.json"):  # fmt: skip
        assert path.exists(), path
    assert HOME_CANARY in escaped.secret.read_text()


@pytest.mark.parametrize(
    ("probe", "session", "named"),
    [
        ("ESC-HOME", "s1", 2),  # the secret (Bash and Read name the same path), /root
        ("ESC-CRED", "s1", 1),
        ("ESC-BATCH", "s1", 3),  # the batch, its ledger, its config
        ("ESC-RUNNER", "s1", 3),  # _main.py, _argv.py, the config root
        ("ESC-PROC", "s1", 3),  # /proc/1/environ, /proc/1/cmdline, /proc/self/environ
        ("ESC-DOTDOT", "s1", 2),  # ../manifest.json, ../..
        ("ESC-SYMLINK", "s1", 2),  # the secret, the home (ln -s targets), and leak.md
        ("ESC-NEIGHBOUR", "r1", 2),  # the workspace, its file
    ],
)
def test_the_transcript_records_the_calls_and_counts_them_outside(
    escaped: Host, probe: str, session: str, named: int
) -> None:
    record = kit.finals(escaped.batch)[(probe, session)]
    assert record["outside_paths"] >= named, record
    event = _events(escaped)[(probe, session)]
    calls = event["calls"]
    assert isinstance(calls, list)
    script = json.loads((escaped.scripts / f"{probe}.json").read_text())
    uses = [b for turn in script["turns"] for b in turn["blocks"] if b["type"] == "tool_use"]
    expected = [b["input"].get("command") or b["input"].get("file_path") for b in uses]
    assert [c["argument"] for c in calls] == expected
    rows = (escaped.batch / "transcripts" / "present.md").read_text()
    assert re.search(rf"\| {probe} \| {session} \| recorded \| {record['outside_paths']} \|", rows)


def test_a_planted_symlink_is_never_followed_by_the_runner(escaped: Host) -> None:
    """The Edit through leak.md is produced as a path only: no digest, no cites of the host file."""
    event = _events(escaped)[("ESC-SYMLINK", "s1")]
    produced = event["produced"]
    assert isinstance(produced, list)
    assert [dict(p) for p in produced] == [{"path": "leak.md"}] or all(
        set(p) == {"path"} for p in produced
    ), produced
    host_digest = "sha256:" + hashlib.sha256(escaped.secret.read_bytes()).hexdigest()
    assert kit.files_containing(escaped.batch, host_digest) == []
    assert (_workspace(escaped, "ESC-SYMLINK") / "leak.md").is_symlink()  # left as planted


def test_the_runners_environment_never_reaches_the_session(escaped: Host) -> None:
    env = _attempt(escaped, "ESC-PROC", "env.txt")
    assert "ANTHROPIC_API_KEY=" in env  # the file is real: the session's own variables are there
    assert CANARY not in env
    assert "HW_ESC_KEY" not in env and "HW_CANARY" not in env
    for name in ("proc1_environ.txt", "proc1_cmdline.txt", "self_environ.txt"):
        seen = _attempt(escaped, "ESC-PROC", name)
        assert CANARY not in seen, name
        assert "HW_CANARY" not in seen, name
    for name in ("proc1_environ.txt", "proc1_cmdline.txt"):
        assert KEY not in _attempt(escaped, "ESC-PROC", name), f"the key is readable in {name}"
    cmdline = _attempt(escaped, "ESC-PROC", "proc1_cmdline.txt")
    assert "--clearenv" in cmdline and "--args" in cmdline  # pid 1 is bwrap itself (RC-03)


@pytest.mark.parametrize("needle", [CANARY, HOME_CANARY, CRED_CANARY])
def test_nothing_of_the_host_appears_anywhere_in_the_batch(escaped: Host, needle: str) -> None:
    assert kit.files_containing(escaped.batch, needle) == []
