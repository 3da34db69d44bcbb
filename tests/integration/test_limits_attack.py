"""Sessions that try to exhaust the host end ``limit-exceeded``; the batch goes on.

One ``run`` batch under real bwrap (confined network, one session at a time),
one stand-in harness for every session (a single self-contained file run by
/usr/bin/python3: it reads its task, the last argument, does that attack,
then "thinks" for a few seconds and prints a valid stream):

* ``fork``: 2,000 processes (the default limit of 512 stops it);
* ``workspace``: 1 GiB written into the workspace (``--max-writes 64M``);
* ``tmp``: 1 GiB written into the private /tmp (``--max-tmp 64M``);
* ``memory``: 1 GiB of anonymous memory (``--max-memory 256M``);
* ``stdout``: 400 lines of 1.4 MB that zstd barely shrinks, printed after an init line:
  the runner keeps what a session prints, in the batch, so it counts against the writes
  limit (``--max-writes 64M``);
* ``inodes``: 100,000 empty files in the workspace (no data block; ``--max-writes 64M``):
  each takes one of the host filesystem's inodes, so each counts a block;
* ``honest``: nothing; it must be recorded.

Rules (sandbox/cgroup/_limits.py, docs/batch.md "Session states"): the kernel refuses
past the limit, the runner ends that session at once with the limit named in
its reason (ledger and prose), never the batch; every session of the batch
runs. The defaults stop these sizes too (the last test).

Seen red by reverting the enforcement in `sandbox/confined/` (no limit
cgroups, no ``--size``, no watch): all four attacks run to their end and are
recorded, the 1 GiB files left behind; ``inodes`` went red by itself with the writes
counted by allocated blocks alone (`sandbox.cgroup._watch.MIN_ENTRY_BYTES` taken out): recorded,
its 100,000 files costing under 2 MB of directory blocks (at that rate the default 512 MiB
let one session take every inode of the host's root filesystem); ``stdout`` went red
by itself without the kept stream's check (`campaign.supervisor._session`
``_kept_stream_check``): recorded, all of its 560 MB printed kept (base64 of random bytes,
which zstd shrinks by a quarter at most; 1 GB printed in 3 s had kept 586 MB under
``--max-writes 16M``: a session could fill the host's disk in minutes).
"""

from __future__ import annotations

import json

import pytest

from sandbox.cgroup import DEFAULT_LIMITS
from tests.integration import kit

pytestmark = [pytest.mark.bwrap, pytest.mark.timeout(300)]

ATTACKS = ("fork", "workspace", "tmp", "memory", "inodes", "stdout")
STANDIN = r'''#!/usr/bin/python3
import json, os, sys, time
if sys.argv[1:] == ["--version"]:
    print("0.0.0 (limits attack)"); sys.exit(0)
task = sys.argv[-1]
done = "nothing"
MiB = b"x" * (1024 * 1024)
try:
    if "attack fork" in task:
        for n in range(2000):
            if os.fork() == 0:
                time.sleep(60); os._exit(0)
        done = "2000 processes"
    elif "attack workspace" in task:
        with open("big.bin", "wb") as f:
            for _ in range(1024):
                f.write(MiB)
        done = "1 GiB in the workspace"
    elif "attack tmp" in task:
        with open("/tmp/big.bin", "wb") as f:
            for _ in range(1024):
                f.write(MiB)
        done = "1 GiB in /tmp"
    elif "attack memory" in task:
        held = [bytearray(MiB) for _ in range(1024)]
        done = "1 GiB of memory"
    elif "attack inodes" in task:
        for d in range(10):
            os.mkdir("d%d" % d)
            for n in range(10000):
                os.close(os.open("d%d/%d" % (d, n), os.O_CREAT | os.O_WRONLY, 0o644))
        done = "100,000 empty files"
    elif "attack stdout" in task:
        import base64
        os.write(1, (json.dumps({"type": "system", "subtype": "init", "cwd": os.getcwd(),
            "tools": ["Bash"], "mcp_servers": [], "model": "m", "permissionMode": "dontAsk",
            "skills": [], "plugins": [], "memory_paths": {}, "claude_code_version": "0.0.0"})
            + "\n").encode())
        for _ in range(400):
            line = b'{"type":"stream_event","x":"' + base64.b64encode(os.urandom(1 << 20)) + b'"}\n'
            view = memoryview(line)
            while view:
                view = view[os.write(1, view):]
        done = "400 MB printed"
except OSError as exc:
    done = "refused: %s" % exc
if "honest" not in task:
    time.sleep(5)  # the model thinks; a session past a limit is ended meanwhile
def emit(o): os.write(1, (json.dumps(o) + "\n").encode())
emit({"type": "system", "subtype": "init", "cwd": os.getcwd(), "tools": ["Bash"],
      "mcp_servers": [], "model": "m", "permissionMode": "dontAsk", "skills": [],
      "plugins": [], "memory_paths": {}, "claude_code_version": "0.0.0"})
emit({"type": "assistant", "parent_tool_use_id": None, "message": {"id": "m1", "model": "m",
      "content": [{"type": "text", "text": "did: " + done + "\nnothing"}]}})
emit({"type": "result", "subtype": "success", "is_error": False, "api_error_status": None,
      "num_turns": 1, "result": "", "total_cost_usd": 0.01})
'''
LIMITS = {"fork": "processes", "workspace": "writes", "tmp": "tmp", "memory": "memory",
          "inodes": "writes", "stdout": "writes"}
EXPECTED = {
    "fork": "more than 512 processes and threads at once (--max-processes)",
    "workspace": "over its 64 MiB (--max-writes)",
    "tmp": "filled its private /tmp of 64 MiB (--max-tmp)",
    "memory": "all of its 256 MiB of memory and the kernel ended",
    "inodes": "over its 64 MiB (--max-writes)",
    "stdout": "of what it printed, over its 64 MiB (--max-writes)",
}


def test_each_exhausting_session_ends_limit_exceeded_and_the_others_still_run(
        bwrap: str) -> None:
    tasks = {f"LIM-{name.upper()}-1": f"attack {name} now." for name in ATTACKS}
    tasks["LIM-HONEST-1"] = "be honest now."
    with kit.host_dir("hw-limits-") as root:
        corpus = kit.write_corpus(root / "corpus", tasks, tools=["Bash"])
        harness = kit.write_harness(root / "claude", STANDIN)
        batch = root / "batch"
        proc = kit.run_scripted(root, corpus, harness, "--max-writes", "64M", "--max-tmp",
                                "64M", "--max-memory", "256M")
        assert proc.returncode == 0, proc.stdout + proc.stderr
        finals = {probe: r for (probe, _), r in kit.finals(batch).items()}
        assert finals["LIM-HONEST-1"]["state"] == "recorded"
        prose = (batch / "transcripts" / "present.md").read_text()
        for name in ATTACKS:
            final = finals[f"LIM-{name.upper()}-1"]
            assert final["state"] == "limit-exceeded", (name, final["reason"])
            assert EXPECTED[name] in final["reason"], final["reason"]
            assert not final["retryable"] and final["limit"] == LIMITS[name]
            assert f"LIM-{name.upper()}-1/s1 ended limit-exceeded" in prose
        assert kit.processes_under(root) == {}
        # The stream does not hold what the sandbox saw: re-deriving keeps it.
        again = kit.cli("retranscribe", str(batch), env=kit.base_env())
        assert again.returncode == 0, again.stdout + again.stderr
        rederived = {r["probe"]: r for r in kit.ledger_dicts(batch) if r["kind"] == "rederived"}
        for name in ATTACKS:
            final, redone = finals[f"LIM-{name.upper()}-1"], rederived[f"LIM-{name.upper()}-1"]
            assert (redone["state"], redone["reason"]) == (final["state"], final["reason"])
        # Past its writes limit a session keeps its workspace's listing, not its bytes
        # (docs/storage.md "Past the writes limit").
        where = batch / "sessions" / "present" / "LIM-WORKSPACE-1" / "s1"
        assert not (where / "workspace").exists()
        listing = json.loads((where / "workspace.listing.json").read_text())
        big = next(e for e in listing["entries"] if e["path"] == "big.bin")
        assert big["size_bytes"] < 1024**3  # ended before it had written its 1 GiB


def test_the_default_limits_stop_the_sizes_these_attacks_use() -> None:
    assert DEFAULT_LIMITS.pids is not None and DEFAULT_LIMITS.pids < 2000
    for limit in (DEFAULT_LIMITS.write_bytes, DEFAULT_LIMITS.tmp_bytes):
        assert limit is not None and limit < 1024**3
