"""Round three of the attacks on a session's confinement: the ones that got through.

Every test here was red on the code it was written against (main at e22abda): each asserts
the behaviour the rules ask for, where the attack showed the runner did otherwise; each is
now the test of its fix (docs/recorder.md "Sharing the event loop", docs/storage.md,
docs/cli.md, docs/recorder.md RC-08). The findings as they were seen:

Each runs a stand-in harness (one self-contained /usr/bin/python3 file: the attack, then a
valid stream) through the real ``run`` under real bwrap, with small limits.

* **Blank lines blind the writes sampler** (a runner that is not root). The recorder
  frames and parses stdout on the event loop; it awaits only when it needs another read,
  so the up to 1 MiB one read returns is framed and parsed without a yield. A blank line
  is an anomaly whose ``json.loads`` raises, about 5 us each: one read of 1 MiB of "\\n"
  holds the loop about 5 s. `sandbox.cgroup._watch.LimitWatch` runs on that loop, so while a
  session prints blank lines its writes sampler (every 0.05 s, docs/storage.md "What a
  runner that is not root gives up") does not run. A child writing 60 MiB files (each
  under ``RLIMIT_FSIZE``, so only the sampler stops them) wrote 3,840 MiB into the host's
  /var/tmp with ``--max-writes 64M`` (the harness's own cap; 135 MiB without the flood).
  Seen: ``limit-exceeded: the session wrote 3932300 KiB ... over its 64 MiB``.
* **Unlinked files are invisible to the sampler** (a runner that is not root). The walk
  counts what a directory reaches; a file made ``O_TMPFILE`` (or unlinked while open) is in
  none. 64 such files of 60 MiB, held open 4 s: /var/tmp's free space fell 3,840 MiB with
  ``--max-writes 64M``, and the session was ``recorded`` (the space comes back when it
  ends; meanwhile the host, and the batch's own writes, may find the disk full).
* **Blank lines end another session ``timed-out``.** The egress proxy and the scripted
  provider's replies go through the same loop: beside a session printing 8 MiB of blank
  lines (concurrency 2), an honest session's first request to the provider took 43.3 s
  (3 ms alone); with ``--watchdog 15`` the honest session ended ``timed-out: the no-output
  watchdog fired`` and the flooding one was ``recorded``.
* **Blank lines cost the runner a core.** 16 MiB of "\\n" (under the default
  ``--max-stdout 256M``): 90 s of wall and 82 s of the runner's CPU for one session
  (4 MiB: 22 s; linear, so the default 256 MiB is about 23 minutes of a core, inside the
  default 1800 s session timeout, and the event loop every other session of the runner
  shares is held about 5 s per read the whole time). 16 MiB of ``{}`` lines: 8.5 s.
* **stderr is not bounded.** ``--max-stdout`` counts stdout only; a stand-in that wrote
  stderr for 10 s at pipe speed (7.5 GB) was ``recorded``, the runner spending 6.2 s of
  CPU in those 10 s (the default session timeout lets it go on for 30 minutes). Only the
  last 64 KiB are kept, so memory holds; the bytes received and the runner's CPU do not.
* **One long stdout line costs the runner 30 times its size in memory.** A line under
  the 64 MiB line cap, ``{"type":"assistant","message":{"content":[{},{},...]}}`` of
  60 MiB, is decoded whole (`recorder._harness.observe_line` decodes ``message`` as any
  JSON value: 20 million dicts). Three such lines took the runner's peak RSS to 1,788 MiB
  (54 MiB for the same session with short lines) while the session's own
  ``--max-memory`` was 256M: the runner's memory is in no cgroup of the session's, so a
  concurrency of 2 (the default) is about 3.5 GiB, and 64 sessions the host's memory.
* **RC-08 misses a glued short option and a brace.** The outside-paths count takes a word
  starting with ``/`` and the value of ``x=value``; ``tar -C/etc``, ``curl -o/etc/x`` and
  ``cat {/etc,/usr}/passwd`` name paths outside the workspace that bash hands to the
  program as they are (``-C/etc`` is ``-C /etc``), and count 0 (``cat /etc/passwd`` in
  the same session counts). Also uncounted, and listed here only: ``file:///etc/passwd``,
  ``cat${IFS}/etc/passwd``, ``--file:/etc/passwd``, ``python3 -c 'open("/etc/passwd")'``.
* **``workspace.listing.json`` writes a name that is not UTF-8 as a lone surrogate.** A
  session past its writes limit with a file ``b"bad\\xff"`` gets a listing whose
  ``path`` is ``"bad\\udcff"`` (``json.dumps`` of the ``surrogateescape`` string):
  what `campaign._json_text` exists to keep out of the batch's JSON (serde_json refuses
  it, jq replaces it); the ledger beside it writes ``bad\\xff``.
* **The scripted provider's body bound counts bytes, not what they parse to.** Four
  requests of 32 MiB (`demo._server.MAX_REQUEST_BYTES`; 128 MiB in flight, the bound's
  whole budget), each ``{"messages":[{},{},...]}``, posted through the egress proxy at once:
  the runner's peak RSS was 3,171 MiB (the provider runs in the runner's process; the
  session's ``--max-memory`` was 512M). `BODIES_IN_FLIGHT_BYTES` says it exists because
  "64 bodies of MAX_REQUEST_BYTES are 2 GiB": parsed, 128 MiB of them is 3 GiB.
* **``report --json`` writes C1 controls and bidi overrides raw.** It dumps with
  ``ensure_ascii=False``: a served model or Claude Code version holding U+009B (CSI) or
  U+202E reaches the terminal as those characters (``status --json`` writes ``\\u009b``).
  docs/cli.md: off a terminal "the commands write no control byte but newline and tab",
  and ``campaign._terminal_text`` names U+0080..U+009F and U+202A..U+202E as what a
  session may not put on the operator's terminal.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import time
import unicodedata
from pathlib import Path
from typing import Final

import pytest

from tests.integration import kit
from tests.integration.test_blind_lookup import RUNNER_ROOT, non_root_runner
from tests.integration.test_disk_attack import _open_to

pytestmark = [pytest.mark.bwrap, pytest.mark.timeout(600)]

MIB: Final = 1 << 20
INIT: Final = r'''#!/usr/bin/python3
import json, os, sys, time
if sys.argv[1:] == ["--version"]:
    print("0.0.0 (round 3)"); sys.exit(0)
task = sys.argv[-1]
MIB = 1 << 20
def out(data):
    view = memoryview(data)
    while view:
        view = view[os.write(1, view):]
def emit(o): out((json.dumps(o) + "\n").encode())
def init(version="0.0.0", model="m"):
    emit({"type": "system", "subtype": "init", "cwd": os.getcwd(), "tools": ["Bash"],
          "mcp_servers": [], "model": model, "permissionMode": "dontAsk", "skills": [],
          "plugins": [], "memory_paths": {}, "claude_code_version": version,
          "additional_directories": [], "sandbox_enabled": False, "capabilities": [],
          "original_cwd": os.getcwd()})
def finish(model="m", text="done"):
    emit({"type": "assistant", "parent_tool_use_id": None, "message": {"id": "m1",
          "model": model, "content": [{"type": "text", "text": text + "\nnothing"}]}})
    emit({"type": "result", "subtype": "success", "is_error": False,
          "api_error_status": None, "num_turns": 1, "result": "", "total_cost_usd": 0.01})
'''
STARVE: Final = INIT + r'''
init()
flood = "flood" in task
if os.fork() == 0:  # the writer: 64 files of 60 MiB, each under RLIMIT_FSIZE
    time.sleep(2.0 if flood else 0.5)
    chunk = b"w" * MIB
    os.makedirs("w", exist_ok=True)
    for n in range(64):
        with open("w/f%d" % n, "wb", buffering=0) as f:
            for _ in range(60):
                f.write(chunk)
    os._exit(0)
if flood:
    for _ in range(12):
        out(b"\n" * MIB)
else:
    time.sleep(20)
finish()
'''
BLANK: Final = INIT + r'''
init()
for _ in range(16):
    out(b"\n" * MIB)
finish()
'''
STDERR: Final = INIT + r'''
init()
block, sent, end = b"e" * MIB, 0, time.monotonic() + 10
while time.monotonic() < end:
    sent += os.write(2, block)
finish(text="stderr %d" % sent)
'''
CONTROLS: Final = "\u009b31m\u202eRTL\u0085"
FIELDS: Final = INIT + r'''
init(version="0.0.0" + CONTROLS, model="m" + CONTROLS)
finish(model="mm" + CONTROLS, text="answer" + CONTROLS)
'''.replace("CONTROLS", repr(CONTROLS))
WIDE: Final = INIT + r'''
init()
line = (b'{"type":"assistant","parent_tool_use_id":null,"message":{"id":"mx","model":"m",'
        b'"content":[' + b"{}," * ((60 << 20) // 3 - 1) + b'{}]}}\n')
for _ in range(3):
    out(line)
finish()
'''
EVADED: Final = ("tar -C/etc -cf /tmp/x .", "curl -o/etc/hw-x http://127.0.0.1:9",
                  "cat {/etc,/usr}/hw-passwd")
"""Each names a path outside the workspace that RC-08 does not count now."""
COUNTED: Final = "cat /etc/passwd"
RC08: Final = INIT + r'''
init()
for n, command in enumerate(COMMANDS):
    emit({"type": "assistant", "parent_tool_use_id": None, "message": {"id": "m%d" % n,
          "model": "m", "content": [{"type": "tool_use", "id": "t%d" % n, "name": "Bash",
                                     "input": {"command": command}}]}})
    emit({"type": "user", "parent_tool_use_id": None, "message": {"role": "user", "content": [
          {"type": "tool_result", "tool_use_id": "t%d" % n, "content": "ok"}]}})
finish()
'''
LISTED: Final = INIT + r'''
open(b"bad\xff", "w").close()
fd = os.open("big.bin", os.O_WRONLY | os.O_CREAT, 0o644)
try:
    os.posix_fallocate(fd, 0, 1 << 30)
except OSError:
    pass
init()
finish()
'''
POSTS: Final = INIT + r'''
import socket, threading
url = os.environ["ANTHROPIC_BASE_URL"].rstrip("/")
body = b'{"model":"m","max_tokens":1,"messages":[' + b"{}," * ((32 << 20) // 3 - 1000) + b'{}]}'
def post():
    with socket.create_connection(("127.0.0.1", 3128), timeout=60) as s:
        s.sendall(("POST %s/v1/messages HTTP/1.1\r\nHost: %s\r\nContent-Type: "
                   "application/json\r\nx-api-key: k\r\nContent-Length: %d\r\n"
                   "Connection: close\r\n\r\n" % (url, url.split("//")[1], len(body))
                   ).encode() + body)
        s.recv(100)
threads = [threading.Thread(target=post) for _ in range(4)]
[t.start() for t in threads]
[t.join() for t in threads]
init()
finish()
'''
UNLINKED: Final = INIT + r'''
fds = []
for n in range(64):
    fd = os.open(".", os.O_TMPFILE | os.O_WRONLY, 0o600)
    for _ in range(60):
        os.write(fd, b"u" * MIB)
    fds.append(fd)
os.fsync(fds[-1])
time.sleep(4)
init()
finish()
'''
NEIGHBOURS: Final = INIT + r'''
import socket
init()
if "flood" in task:
    for _ in range(8):
        out(b"\n" * MIB)
else:  # honest: asks the provider (through the egress proxy) now and then
    url = os.environ["ANTHROPIC_BASE_URL"].rstrip("/")
    time.sleep(2)
    for _ in range(15):
        with socket.create_connection(("127.0.0.1", 3128), timeout=120) as s:
            s.sendall(("GET %s/ HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n"
                       % (url, url.split("//")[1])).encode())
            s.recv(100)
        time.sleep(0.5)
finish()
'''
SMALL: Final = ("--max-writes", "64M", "--max-tmp", "8M")


def _used_bytes(*roots: Path) -> int:
    """Bytes ``du`` counts under ``roots`` (each file once)."""
    out = subprocess.run(["du", "-sbc", *map(str, roots)], capture_output=True, text=True,
                         check=False).stdout.splitlines()  # fmt: skip
    return int(out[-1].split()[0]) if out else 0


def _free_drop(start: os.statvfs_result) -> int:
    """How far the free space of /var/tmp's file system fell below ``start`` (bytes)."""
    now = os.statvfs("/var/tmp")
    return (start.f_bfree - now.f_bfree) * now.f_frsize


def _non_root_peak(task: str, harness_text: str = STARVE, *,
                   free_space: bool = False) -> tuple[int, dict[str, object]]:  # fmt: skip
    """`STARVE` run by a runner that is not root whose runner root is on disk (a real host's
    /var/tmp; the suites' tmpfs would charge the files to memory); the most the runner root
    and the batch held while it ran (with ``free_space``: how far /var/tmp's free space fell,
    which sees unlinked files too), and the session's final record."""
    with non_root_runner() as runner, kit.host_dir("hw-r3-") as root:
        if runner.user is None:
            pytest.skip("needs root to set up the unprivileged runner")
        corpus = kit.write_corpus(root / "corpus", {"R3-WRITE-1": task}, tools=["Bash"])
        harness = kit.write_harness(root / "claude", harness_text)
        kit.write_script(root / "scripts", "unused", "no task says this")
        _open_to(root, runner.user)
        disk_root = root / "runner-root"
        disk_root.mkdir()
        os.chown(disk_root, *runner.user)
        argv = runner.argv("run", str(corpus), "--tier", "regression", "--batch-dir",
                           str(root / "batch"), "--harness", str(harness), "--provider",
                           "scripted", "--scripts", str(root / "scripts"), "--concurrency",
                           "1", "--retries", "0", *SMALL)  # fmt: skip
        shell = argv.index("-c") + 1
        tmpfs = (f"mount -t tmpfs -o mode=0755,uid={runner.user[0]},gid={runner.user[1]} "
                 f"tmpfs {RUNNER_ROOT}")  # fmt: skip
        assert tmpfs in argv[shell]
        argv[shell] = argv[shell].replace(tmpfs, f"mount --bind {disk_root} {RUNNER_ROOT}")
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env=runner.env(), cwd=kit.REPO)  # fmt: skip
        peak, start = 0, os.statvfs("/var/tmp")
        try:
            while proc.poll() is None:
                with contextlib.suppress(ValueError, IndexError):
                    peak = max(peak, _free_drop(start) if free_space else
                               _used_bytes(disk_root, root / "batch"))  # fmt: skip
                time.sleep(0.1)
            out, err = proc.communicate(timeout=kit.CLI_TIMEOUT_S)
        except BaseException:
            proc.kill()
            proc.communicate()
            raise
        assert proc.returncode in (0, 5), out + err
        final = next(iter(kit.finals(root / "batch").values()))
        return peak, final


def test_a_blank_line_flood_does_not_blind_the_writes_sampler_of_a_runner_that_is_not_root(
        bwrap: str) -> None:  # fmt: skip
    """Was red: 3,840 MiB on the host for a 64 MiB limit (the control: 135 MiB).

    The flood (12.6 million blank lines) now also passes the bound on a session's lines
    (docs/recorder.md "Sharing the event loop"), which may end it first: either limit is
    the rule kept, as long as the host took no more than the writes limit allows."""
    peak, final = _non_root_peak("flood now.")
    assert final["state"] == "limit-exceeded", final["reason"]
    assert final.get("limit") in ("writes", "lines"), final["reason"]
    assert peak < 512 * MIB, (f"the host took {peak // MIB} MiB for a 64 MiB writes limit "
                              f"while stdout held the runner's loop: {final['reason']}")


def test_without_the_flood_the_sampler_stops_the_same_writer_early(bwrap: str) -> None:
    """The control (passes now): the same writer, no blank lines, is stopped near the limit."""
    peak, final = _non_root_peak("control now.")
    assert (final["state"], final.get("limit")) == ("limit-exceeded", "writes")
    assert peak < 512 * MIB, peak


def test_unlinked_files_of_a_runner_that_is_not_root_count_against_the_writes_limit(
        bwrap: str) -> None:  # fmt: skip
    """Was red: 3,840 MiB of the host's disk taken, the session ``recorded``; a sampled bound
    now counts the unlinked files a session holds open (docs/storage.md)."""
    peak, final = _non_root_peak("attack now.", UNLINKED, free_space=True)
    assert peak < 512 * MIB, (f"/var/tmp lost {peak // MIB} MiB to a session with a 64 MiB "
                              f"writes limit, which ended {final['state']}")


def _run_root(prefix: str, harness_text: str, *args: str) -> \
        tuple[float, dict[str, object], subprocess.CompletedProcess[str]]:  # fmt: skip
    with kit.host_dir(prefix) as root:
        corpus = kit.write_corpus(root / "corpus", {"R3-ONE-1": "attack now."}, tools=["Bash"])
        harness = kit.write_harness(root / "claude", harness_text)
        started = time.monotonic()
        proc = kit.run_scripted(root, corpus, harness, *SMALL, *args)
        took = time.monotonic() - started
        assert proc.returncode in (0, 1, 5), proc.stdout + proc.stderr
        final = next(iter(kit.finals(root / "batch").values()))
        if harness_text is FIELDS:
            report = kit.cli("report", str(root / "batch"), "--json", env=kit.base_env())
            return took, final, report
        return took, final, proc


def test_sixteen_mib_of_blank_lines_cost_the_runner_seconds_not_minutes(bwrap: str) -> None:
    """Was red: 90 s (82 s of the runner's CPU) for 16 MiB under the default stdout bound;
    16 MiB of ``{}`` lines take 8.5 s, and an honest session about 1 s.

    16.8 million lines are past the bound on a session's lines (1,000,000:
    docs/recorder.md "Sharing the event loop"), so the session ends ``limit-exceeded``
    at that bound, with the reason naming it."""
    took, final, _ = _run_root("hw-r3-blank-", BLANK, "--max-stdout", "256M")
    assert (final["state"], final.get("limit"), final.get("end")) == (
        "limit-exceeded", "lines", "line-limit"), final["reason"]
    assert "1,000,000 lines on stdout" in str(final["reason"]), final["reason"]
    assert took < 30, f"16 MiB of blank lines held the runner {took:.0f} s"


def test_a_session_flooding_stderr_is_held_to_a_bound(bwrap: str) -> None:
    """Was red: 7.5 GB on stderr in 10 s, ``recorded``; stderr is now held to --max-stdout."""
    took, final, _ = _run_root("hw-r3-stderr-", STDERR, "--max-stdout", "8M")
    assert final["state"] == "limit-exceeded", (
        f"{final['state']} after {took:.0f} s of an unbounded stderr: {final['reason']}")
    assert (final.get("limit"), final.get("end")) == ("stderr", "stderr-limit"), final
    assert "more than 8 MiB on stderr" in str(final["reason"]), final["reason"]


def test_report_json_puts_no_c1_control_or_bidi_override_on_the_terminal(bwrap: str) -> None:
    """Was red: ``report --json`` wrote U+009B, U+0085 and U+202E raw (ensure_ascii=False)."""
    _, final, report = _run_root("hw-r3-json-", FIELDS)
    assert final["state"] == "recorded", final["reason"]
    assert report.returncode == 0, report.stderr
    assert "RTL" in report.stdout  # the session's value is in the report
    bad = sorted({f"U+{ord(c):04X}" for c in report.stdout
                  if (unicodedata.category(c) == "Cc" and c not in "\n\t")
                  or "\u202a" <= c <= "\u202e" or "\u2066" <= c <= "\u2069"})  # fmt: skip
    assert not bad, f"report --json wrote {bad} raw"


def _peak_rss(pid: int) -> int:
    """``VmHWM`` of ``pid`` in bytes (0 once it is gone)."""
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def test_one_long_stdout_line_costs_the_runner_a_bounded_memory(bwrap: str) -> None:
    """Three 60 MiB lines of 20 million empty objects each held the runner 1,788 MiB (54 MiB
    with short lines). A bound a few times the 64 MiB line cap is what the line cap is for.
    Such a line is not decoded: it may decode to more JSON values than one line may
    (`recorder._bounds.MAX_LINE_VALUES`), so the session ends ``limit-exceeded`` naming the
    line (docs/recorder.md); the batch's one session is not recorded: exit 5."""
    with kit.host_dir("hw-r3-wide-") as root:
        corpus = kit.write_corpus(root / "corpus", {"R3-WIDE-1": "attack now."}, tools=["Bash"])
        harness = kit.write_harness(root / "claude", WIDE)
        kit.write_script(root / "scripts", "unused", "no task says this")
        proc = kit.start_cli("run", str(corpus), "--tier", "regression", "--batch-dir",
                             str(root / "batch"), "--harness", str(harness), "--provider",
                             "scripted", "--scripts", str(root / "scripts"), "--concurrency",
                             "1", "--retries", "0", *SMALL, "--max-memory", "256M",
                             "--max-stdout", "256M", env=kit.base_env())  # fmt: skip
        peak = 0
        try:
            while proc.poll() is None:
                peak = max(peak, _peak_rss(proc.pid))
                time.sleep(0.02)
            out, err = proc.communicate(timeout=kit.CLI_TIMEOUT_S)
        except BaseException:
            kit.kill_group(proc)
            raise
        assert peak < 384 * MIB, f"the runner's peak RSS was {peak // MIB} MiB"
        assert proc.returncode == 5, out + err
        final = next(iter(kit.finals(root / "batch").values()))
        assert final["state"] == "limit-exceeded", final["reason"]
        assert "stdout line 2 (62914652 bytes) may hold" in final["reason"], final["reason"]
        assert "over the 1000000 one line may decode to" in final["reason"], final["reason"]


def test_rc08_counts_a_glued_short_option_and_a_brace_expansion(bwrap: str) -> None:
    """Was red: ``outside_paths`` was 1 (only ``cat /etc/passwd``), not 1 + 3 (docs/recorder.md:
    a short option's glued value and each word of a brace expansion are path words)."""
    text = RC08.replace("COMMANDS", repr((COUNTED, *EVADED)))
    _, final, _ = _run_root("hw-r3-rc08-", text)
    assert final["state"] == "recorded", final["reason"]
    assert int(str(final["outside_paths"])) >= 1 + len(EVADED), (
        f"outside_paths {final['outside_paths']}: {EVADED} not counted")


def test_the_listing_of_a_session_past_its_writes_limit_holds_no_lone_surrogate(
        bwrap: str) -> None:  # fmt: skip
    """Was red: the listing named ``bad\\udcff``; it now writes ``bad\\xff``, as
    `campaign._json_text` does everywhere (docs/batch.md)."""
    if os.geteuid() != 0:
        pytest.skip("the runner must be root for its store")
    with kit.host_dir("hw-r3-list-") as root:
        corpus = kit.write_corpus(root / "corpus", {"R3-LIST-1": "attack now."}, tools=["Bash"])
        harness = kit.write_harness(root / "claude", LISTED)
        proc = kit.run_scripted(root, corpus, harness, *SMALL)
        assert proc.returncode in (0, 5), proc.stdout + proc.stderr
        final = next(iter(kit.finals(root / "batch").values()))
        assert (final["state"], final.get("limit")) == ("limit-exceeded", "writes")
        listing = root / "batch" / "sessions" / "present" / "R3-LIST-1" / "s1" / \
            "workspace.listing.json"
        paths = [e["path"] for e in json.loads(listing.read_text())["entries"]]
        assert any(p.startswith("bad") for p in paths), paths
        for path in paths:
            path.encode("utf-8")  # UnicodeEncodeError: a lone surrogate


def test_request_bodies_within_the_scripted_providers_bounds_cost_the_runner_bounded_memory(
        bwrap: str) -> None:  # fmt: skip
    """Four 32 MiB bodies (128 MiB in flight) of 11 million empty objects each held the
    runner 3,171 MiB. Each may decode to more JSON values than one body may
    (demo/_server.py `MAX_REQUEST_VALUES`): answered 413 undecoded (docs/provider.md)."""
    with kit.host_dir("hw-r3-posts-") as root:
        corpus = kit.write_corpus(root / "corpus", {"R3-POST-1": "attack now."}, tools=["Bash"])
        harness = kit.write_harness(root / "claude", POSTS)
        kit.write_script(root / "scripts", "unused", "no task says this")
        proc = kit.start_cli("run", str(corpus), "--tier", "regression", "--batch-dir",
                             str(root / "batch"), "--harness", str(harness), "--provider",
                             "scripted", "--scripts", str(root / "scripts"), "--concurrency",
                             "1", "--retries", "0", *SMALL, "--max-memory", "512M",
                             env=kit.base_env())  # fmt: skip
        peak = 0
        try:
            while proc.poll() is None:
                peak = max(peak, _peak_rss(proc.pid))
                time.sleep(0.02)
            out, err = proc.communicate(timeout=kit.CLI_TIMEOUT_S)
        except BaseException:
            kit.kill_group(proc)
            raise
        assert proc.returncode == 0, out + err
        assert peak < 1024 * MIB, f"the runner's peak RSS was {peak // MIB} MiB"


def test_a_neighbours_blank_lines_do_not_end_an_honest_session_timed_out(bwrap: str) -> None:
    """Was red: the honest session ended ``timed-out`` (its provider requests waited 40 s)."""
    with kit.host_dir("hw-r3-pair-") as root:
        corpus = kit.write_corpus(root / "corpus", {"R3-FLOOD-1": "flood now.",
                                                    "R3-HONEST-1": "be honest now."},
                                  tools=["Bash"])  # fmt: skip
        harness = kit.write_harness(root / "claude", NEIGHBOURS)
        kit.write_script(root / "scripts", "unused", "no task says this")
        proc = kit.cli("run", str(corpus), "--tier", "regression", "--batch-dir",
                       str(root / "batch"), "--harness", str(harness), "--provider",
                       "scripted", "--scripts", str(root / "scripts"), "--concurrency", "2",
                       "--retries", "0", *SMALL, "--max-stdout", "256M", "--watchdog", "15",
                       env=kit.base_env())  # fmt: skip
        assert proc.returncode in (0, 1), proc.stdout + proc.stderr
        finals = {probe: r for (probe, _), r in kit.finals(root / "batch").items()}
        honest = finals["R3-HONEST-1"]
        assert honest["state"] == "recorded", honest["reason"]
