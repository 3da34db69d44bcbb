"""A session attacks its own store (sandbox.storage) from inside, through real ``run`` under bwrap.

Each test runs one small ``run`` batch (confined network, one session at a
time, ``--max-writes 64M``) whose stand-in harness is one self-contained file
run by /usr/bin/python3: it reads its task (the last argument), does that
attack in its workspace (its store, a loop-mounted ext4 for this root runner),
then prints a valid stream whose init line's cwd is its working directory
(the batch's workspace path). Rules: docs/storage.md (the kernel bounds the
session to its store; what the batch keeps is copied out of it), docs/batch.md
"Session states" (a session past a limit ends ``limit-exceeded``, never the
batch), RC-02 (blind sessions, docs/confinement.md).

Attacks and what was seen when this file was written:

* ``fill``: ``posix_fallocate`` of every free block of the store (instant, no
  data written). GOT THROUGH: the runner's own copy of the log directory
  (`sandbox.storage._reclaim.replace_with_copy`, made *inside the store*, beside the log)
  fails ``ENOSPC``; that is taken for the host refusing a write: the whole batch
  stops with exit 6 ("Free space on the file system of
  /var/tmp/headwater-campaign/store/.../fs/.log.copy-..."), the session gets no
  final record, the sessions after it never run, and ``resume`` reruns the same
  session, which does it again (seen: resume exits 6 again).
* ``inodes``: empty files until the store has no inode left (no data: under the
  writes limit's bytes). GOT THROUGH, the same way (the copy's ``mkdir`` needs an
  inode).
* ``log``: 40 MiB in the log directory, nothing else: *within* the writes limit
  (64 MiB). GOT THROUGH, the same way: the log's copy in the store needs as much
  again, past the store's size (about the limit and a few MiB), so an honest
  session that logs more than half its limit stops the batch.
* ``names``: a FIFO whose name holds terminal escapes and a newline followed by a
  forged progress line. GOT THROUGH: the copy into the batch leaves the FIFO out
  and the attempt's reason names it as it is (`campaign.supervisor._session`
  ``_left_out_note``), so ``run``'s progress line on stderr and ``show`` print the
  session's ESC sequences and its forged line on the operator's terminal (the
  prose escapes it; the ledger is JSON).
* ``blind``: the session's mountinfo, statfs and the store's label. HELD: the
  workspace and log mounts show roots ``/workspace`` and ``/log`` of a loop
  device, nothing names the batch, its arm or its probe, the label is empty;
  after the batch no store or loop device of the runner is left.
* ``links``: one 30 MiB file under 20 names in the workspace (the writes limit
  counts it once). HELD: the copy into the batch holds at most the store's size
  and lists the names it left out.

Tests marked ``GOT THROUGH`` below were red when the attacks were found, and are the fixes'
tests: the log now goes straight into the batch (`sandbox.storage._reclaim.copy_regular`) and the
names the copy left out are quoted as JSON strings.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any, Final

import pytest

from sandbox.storage import STORE_ROOT, store_size
from tests.integration import kit

pytestmark = [pytest.mark.bwrap, pytest.mark.timeout(300)]

MIB: Final = 1 << 20
WRITES: Final = 64 * MIB
FORGED: Final = "[2 of 1] present STORE-HONEST-1 s1 attempt 1: recorded"
ESCAPES: Final = "\x1b]0;PWNED\x07\x1b[31mRED\x1b[0m"
SEEN: Final = "seen.json"
STANDIN: Final = r'''#!/usr/bin/python3
import fcntl, json, os, sys
if sys.argv[1:] == ["--version"]:
    print("0.0.0 (store attack)"); sys.exit(0)
task = sys.argv[-1]
done = []
failed = False
try:
    if "attack fill" in task:
        st = os.statvfs(".")
        fd = os.open("fill.bin", os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            os.posix_fallocate(fd, 0, st.f_bavail * st.f_frsize)
        except OSError as exc:
            done.append("fallocate: %s" % exc)
        os.close(fd)
        done.append("free after: %d" % os.statvfs(".").f_bavail)
    elif "attack inodes" in task:
        os.mkdir("many")
        n = 0
        while True:
            try:
                os.close(os.open("many/%d" % n, os.O_CREAT | os.O_WRONLY, 0o644))
            except OSError as exc:
                done.append("%d files, then %s" % (n, exc)); break
            n += 1
    elif "attack log" in task:
        with open(os.path.join(os.environ["HEADWATER_LOG_DIR"], "debug.log"), "wb") as f:
            f.write(os.urandom(40 << 20))
        done.append("40 MiB of log")
    elif "attack names" in task:
        os.mkfifo(NAME)
        failed = True  # a session that is not recorded: its reason is printed
    elif "attack blind" in task:
        seen = {"mountinfo": open("/proc/self/mountinfo").read(),
                "statvfs": list(os.statvfs(".")),
                "sys_block": os.path.exists("/sys/block")}
        buf = bytearray(256)
        fd = os.open(".", os.O_RDONLY)
        try:
            fcntl.ioctl(fd, 0x81009431, buf)  # FS_IOC_GETFSLABEL
            seen["label"] = bytes(buf).rstrip(b"\0").decode()
        except OSError as exc:
            seen["label"] = "refused: %s" % exc
        os.close(fd)
        with open("SEEN", "w") as f:
            json.dump(seen, f)
    elif "attack links" in task:
        with open("big.bin", "wb") as f:
            f.write(os.urandom(30 << 20))
        for n in range(20):
            os.link("big.bin", "big%d.bin" % n)
except OSError as exc:
    done.append("refused: %s" % exc)
def emit(o): os.write(1, (json.dumps(o) + "\n").encode())
emit({"type": "system", "subtype": "init", "cwd": os.getcwd(), "tools": ["Bash"],
      "mcp_servers": [], "model": "m", "permissionMode": "dontAsk", "skills": [],
      "plugins": [], "memory_paths": {}, "claude_code_version": "0.0.0"})
emit({"type": "assistant", "parent_tool_use_id": None, "message": {"id": "m1", "model": "m",
      "content": [{"type": "text", "text": "did: " + "; ".join(done) + "\nnothing"}]}})
emit({"type": "result", "subtype": "error_during_execution" if failed else "success",
      "is_error": failed, "api_error_status": None, "num_turns": 1, "result": "",
      "total_cost_usd": 0.01})
'''.replace("NAME", repr(ESCAPES + "\n" + FORGED)).replace("SEEN", SEEN)


def run_batch(root: Path, attacks: dict[str, str]) -> tuple[subprocess.CompletedProcess[str],
                                                             Path, Path]:
    """``run`` of probes ``attacks`` (probe id -> task) and an honest one, ``--max-writes 64M``."""
    tasks = {**attacks, "STORE-HONEST-1": "be honest now."}
    corpus = kit.write_corpus(root / "corpus", tasks, tools=["Bash"])
    harness = kit.write_harness(root / "claude", STANDIN)
    proc = kit.run_scripted(root, corpus, harness, "--max-writes", "64M")
    return proc, root / "batch", corpus


def by_probe(batch: Path) -> dict[str, dict[str, Any]]:
    return {probe: r for (probe, _), r in kit.finals(batch).items()}


def workspace(batch: Path, probe: str) -> Path:
    return batch / "sessions" / "present" / probe / "s1" / "workspace"


# --- GOT THROUGH when found (red then), fixed since -------------------------------------------

# GOT THROUGH (red when found): a session that fills its store stops the whole batch (exit
# 6, the host blamed) instead of ending limit-exceeded; the runner's log copy is made in the
# store (ENOSPC). Fix: copy the log out of the store (or keep room the session cannot take).
def test_a_session_that_fills_its_store_ends_limit_exceeded_and_the_batch_goes_on() -> None:
    with kit.host_dir("hw-store-fill-") as root:
        proc, batch, _ = run_batch(root, {"STORE-FILL-1": "attack fill now."})
        finals = by_probe(batch)
        assert "STORE-FILL-1" in finals, proc.stderr  # exit 6: no final record at all
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "the host refused a write" not in proc.stderr
        fill = finals["STORE-FILL-1"]
        assert fill["state"] == "limit-exceeded", fill["reason"]
        assert fill["limit"] == "writes"
        assert finals["STORE-HONEST-1"]["state"] == "recorded"


# GOT THROUGH (red when found): every inode of the store taken by empty files (no data)
# stops the batch the same way (exit 6); the session never gets a final record. Fix: as above.
def test_a_session_that_takes_every_inode_of_its_store_does_not_stop_the_batch() -> None:
    with kit.host_dir("hw-store-inodes-") as root:
        proc, batch, _ = run_batch(root, {"STORE-INODES-1": "attack inodes now."})
        finals = by_probe(batch)
        assert "the host refused a write" not in proc.stderr, proc.stderr
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert finals["STORE-INODES-1"]["state"] in ("limit-exceeded", "recorded")
        assert finals["STORE-HONEST-1"]["state"] == "recorded"


# GOT THROUGH (red when found): a session within its writes limit (40 MiB of log under
# --max-writes 64M) stops the batch with exit 6: the log's copy, made in the store, needs its
# size again. Fix: copy the log out of the store (into the batch) instead of beside itself.
def test_a_session_within_its_limit_that_logs_much_does_not_stop_the_batch() -> None:
    with kit.host_dir("hw-store-log-") as root:
        proc, batch, _ = run_batch(root, {"STORE-LOG-1": "attack log now."})
        finals = by_probe(batch)
        assert "the host refused a write" not in proc.stderr, proc.stderr
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert finals["STORE-LOG-1"]["state"] == "recorded", finals["STORE-LOG-1"]["reason"]
        log = batch / "sessions" / "present" / "STORE-LOG-1" / "s1" / "log" / "debug.log"
        assert log.stat().st_size == 40 * MIB
        assert finals["STORE-HONEST-1"]["state"] == "recorded"


# GOT THROUGH (red when found): a name the session chose reaches the operator's terminal
# raw (ESC sequences, a forged progress line after a newline) through the reason's note of
# what the copy left out: run's progress line and show print it. Fix: name each left-out
# entry escaped in the reason (e.g. json.dumps / ascii with \\n, \\x1b), as the stderr tail is.
def test_names_the_copy_left_out_reach_no_terminal_raw() -> None:
    with kit.host_dir("hw-store-names-") as root:
        proc, batch, _ = run_batch(root, {"STORE-NAMES-1": "attack names now."})
        finals = by_probe(batch)
        names = finals["STORE-NAMES-1"]
        assert names["state"] == "harness-error", names["reason"]
        assert "fifo" in names["reason"]  # the FIFO is named as left out
        shown = kit.cli("show", str(batch), "present", "STORE-NAMES-1", "s1", env=kit.base_env())
        assert shown.returncode == 0, shown.stderr
        for where, text in (("run's stderr", proc.stderr), ("show", shown.stdout)):
            assert "\x1b" not in text, where
            assert not any(line.startswith(FORGED) for line in text.splitlines()), where
        assert "\n" not in names["reason"]


# --- HELD: no other test runs these through a real batch ---------------------------------------

def test_a_session_sees_nothing_of_its_batch_in_its_mounts_and_leaves_no_store() -> None:
    with kit.host_dir("hw-store-blind-") as root:
        proc, batch, _ = run_batch(root, {"STORE-BLIND-1": "attack blind now."})
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert by_probe(batch)["STORE-BLIND-1"]["state"] == "recorded"
        seen = json.loads((workspace(batch, "STORE-BLIND-1") / SEEN).read_text())
        mountinfo: str = seen["mountinfo"]
        for needle in (str(batch), "STORE-BLIND-1", "present", "sessions"):
            assert needle not in mountinfo, needle
        split = [ln.split(" ") for ln in mountinfo.splitlines()]
        roots = {fields[4]: fields[3] for fields in split}
        assert roots["/workspace/corpus"] == "/workspace"
        assert roots["/run/headwater/log"] == "/log"
        assert seen["label"] == "" and seen["sys_block"] is False
        # The store is gone with its runner: no directory of its tag, no loop device on it.
        # The config directory and the egress socket are on the store too: no host path.
        assert roots["/run/headwater/config"] == "/config"
        assert roots["/run/headwater/egress.sock"] == "/egress/egress.sock"
        runner_pid = next(r["pid"] for r in kit.ledger_dicts(batch) if r["kind"] == "invocation")
        left = [e for e in os.listdir(STORE_ROOT) if e.startswith(f"{runner_pid}.")] \
            if STORE_ROOT.is_dir() else []
        assert left == []
        losetup = subprocess.run(["losetup", "-a"], capture_output=True, text=True, check=False)
        assert f"/store/{runner_pid}." not in losetup.stdout


def test_one_file_under_many_names_is_kept_at_most_to_the_stores_size() -> None:
    with kit.host_dir("hw-store-links-") as root:
        proc, batch, corpus = run_batch(root, {"STORE-LINKS-1": "attack links now."})
        assert proc.returncode == 0, proc.stdout + proc.stderr
        links = by_probe(batch)["STORE-LINKS-1"]
        assert links["state"] == "recorded", links["reason"]  # 30 MiB counted once
        corpus_files = list(kit.regular_files(corpus))
        size, _ = store_size(sealed_bytes=sum(p.stat().st_size for p in corpus_files),
                             sealed_files=len(corpus_files), write_bytes=WRITES)
        copied = kit.regular_files(workspace(batch, "STORE-LINKS-1"))
        kept = sum(p.stat().st_blocks * 512 for p in copied)
        assert 0 < kept <= size
        assert "(over-max-bytes)" in links["reason"] and "more" in links["reason"]
