"""A session attacks the host's disk and memory from inside, through real ``run`` under bwrap.

Each batch runs one session at a time, ``--max-writes 64M --max-tmp 8M``; its
stand-in harness is one self-contained file run by /usr/bin/python3: it reads
its task (the last argument), does that attack, writes what it saw into its
workspace (or, when the session may be ended mid-attack, leaves the batch to
say it), then prints a valid stream. Rules: docs/confinement.md "Disk" (what
stays writable inside: the workspace, log and config directories, and /tmp and
/dev/shm, each sized; ``/`` and ``/dev`` read-only), docs/storage.md (a root
runner's store bounds the session's disk; a session past its writes limit keeps
its workspace's listing, not its bytes; a runner that is not root bounds each
file with ``RLIMIT_FSIZE``), docs/batch.md "Session states" (``limit-exceeded``).

Attacks (a root runner unless said):

* ``falloc``: sixteen ``fallocate(fd, 0, 0, 1 GiB)`` in the workspace (no data
  written, so nothing the page cache would slow): the store refuses what is
  past its size; the session ends ``limit-exceeded`` (writes), the batch keeps
  the workspace's listing and no file past the limit, and the host's disk under
  the stores and the batch never grows by much more than the limit while it runs.
* ``allocfree``: a GiB allocated and unlinked, forty times, faster than a
  sampler can see: bounded all the same (the store, not the sampling, holds it).
* ``roots``: a file in ``/``, ``/var``, ``/opt``, ``/run``, ``/workspace`` and
  ``/dev``: each refused ``EROFS`` (bwrap's own tmpfs are unsized); ``/tmp`` and
  ``/dev/shm`` take one (the control).
* ``shm``: ``/dev/shm`` written full: it stops at ``--max-tmp`` (ENOSPC) and the
  watch ends the session ``limit-exceeded`` (tmp), naming ``/dev/shm``.
* non-root ``sparse``: one write of 8 KiB at the writes limit's offset: the
  kernel writes the 4 KiB below ``RLIMIT_FSIZE`` (the limit and one block) and
  refuses the rest ``EFBIG`` (Python ignores SIGXFSZ, as the pinned CLI's Node
  does); a ``dd`` doing the same is killed by SIGXFSZ. Nothing past the writes
  limit was written, so the session is ``recorded``, its report kept.
* non-root ``dense``: 80 MiB written in 1 MiB writes: the file stops at
  ``RLIMIT_FSIZE``, which is past the writes limit, so the session ends
  ``limit-exceeded`` (writes) and its listing shows the file at exactly that size.

Seen red with each fix reverted:
``READ_ONLY_ROOT`` emptied in sandbox/_argv.py (roots: /x, /opt/x, ... written);
``--remount-ro /dev`` taken out (roots: /dev/x written); the ``--tmpfs /dev/shm``
taken out (shm: EROFS, /dev being read-only, not a sized tmpfs); ``/dev/shm``
taken out of ``TMPFS_MOUNTS`` in sandbox/cgroup/_watch.py (shm: recorded, not
limit-exceeded); ``over_writes`` ignored in campaign/supervisor/_staging.py
``keep`` (falloc: a workspace kept, a file past the limit in the batch);
``_file_bound`` returning None in campaign/supervisor/_session.py (sparse, dense); the
store made a plain directory (sandbox/storage/_store.py ``open_session_store``: ``mkdir``
instead of ``_make_fs``, so the preflight still passes) with ``_file_bound`` returning None
(host: 11,264 MiB taken by falloc's files, the bound 128 MiB; 0.2 MiB with the store).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest

from sandbox.storage import STORE_ROOT
from tests.integration import kit
from tests.integration.test_blind_lookup import Runner, non_root_runner

pytestmark = [pytest.mark.bwrap, pytest.mark.timeout(600)]

MIB: Final = 1 << 20
WRITES: Final = 64 * MIB
TMP: Final = 8 * MIB
FSIZE: Final = WRITES + 4096
"""`sandbox.storage.file_size_limit` of the writes limit, from its rule: one block past it."""
HOST_SLACK: Final = 2 * WRITES
"""How much more of the host's disk the stores and the batch may take while a batch runs:
the store (about the limit and its metadata) and the batch's copy. An unbounded attack
takes gigabytes."""
READ_ONLY: Final = ("/x", "/var/x", "/opt/x", "/run/x", "/workspace/x", "/dev/x")
WRITABLE: Final = ("/tmp/x", "/dev/shm/x")
STANDIN: Final = r'''#!/usr/bin/python3
import errno, json, os, subprocess, sys, time
if sys.argv[1:] == ["--version"]:
    print("0.0.0 (disk attack)"); sys.exit(0)
task = sys.argv[-1]
MIB = 1 << 20
seen = {}
def name(exc): return errno.errorcode.get(exc.errno, str(exc.errno))
def save(file):
    with open(file, "w") as f:
        json.dump(seen, f)
if "attack falloc" in task:
    for n in range(16):
        fd = os.open("f%d.bin" % n, os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            os.posix_fallocate(fd, 0, 1 << 30)
        except OSError as exc:
            seen["f%d" % n] = name(exc)
        os.close(fd)
elif "attack allocfree" in task:
    for n in range(40):
        fd = os.open("af.bin", os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            os.posix_fallocate(fd, 0, 1 << 30)
        except OSError as exc:
            seen[str(n)] = name(exc)
        os.close(fd)
        os.unlink("af.bin")
elif "attack roots" in task:
    for path in PATHS:
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write("x")
            seen[path] = "ok"
        except OSError as exc:
            seen[path] = name(exc)
    save("roots.json")
elif "attack shm" in task:
    total, chunk = 0, b"s" * MIB
    try:
        with open("/dev/shm/fill", "wb", buffering=0) as f:
            while total < 32 * MIB:
                total += f.write(chunk)
        seen["error"] = None
    except OSError as exc:
        seen["error"] = name(exc)
    seen["bytes"] = total
    save("shm.json")
    time.sleep(3)  # the watch reads /dev/shm every 0.2 s: it ends the session here
elif "attack sparse" in task:
    fd = os.open("sparse.bin", os.O_WRONLY | os.O_CREAT, 0o644)
    seen["first"] = os.pwrite(fd, b"p" * 8192, WRITES)
    try:
        seen["second"] = os.pwrite(fd, b"p" * 4096, WRITES + seen["first"])
    except OSError as exc:
        seen["second"] = name(exc)
    os.close(fd)
    dd = subprocess.run(["dd", "if=/dev/zero", "of=dd.bin", "bs=8192", "count=1",
                         "seek=%d" % (WRITES // 8192)], capture_output=True)
    seen["dd"] = dd.returncode
    seen["dd_size"] = os.stat("dd.bin").st_size
    save("sparse.json")
elif "attack dense" in task:
    chunk = b"d" * MIB
    try:
        with open("dense.bin", "wb", buffering=0) as f:
            for _ in range(80):
                f.write(chunk)
    except OSError as exc:
        seen["dense"] = name(exc)
def emit(o): os.write(1, (json.dumps(o) + "\n").encode())
emit({"type": "system", "subtype": "init", "cwd": os.getcwd(), "tools": ["Bash"],
      "mcp_servers": [], "model": "m", "permissionMode": "dontAsk", "skills": [],
      "plugins": [], "memory_paths": {}, "claude_code_version": "0.0.0"})
emit({"type": "assistant", "parent_tool_use_id": None, "message": {"id": "m1", "model": "m",
      "content": [{"type": "text", "text": "saw: " + json.dumps(seen) + "\nnothing"}]}})
emit({"type": "result", "subtype": "success", "is_error": False, "api_error_status": None,
      "num_turns": 1, "result": "", "total_cost_usd": 0.01})
'''.replace("PATHS", repr(READ_ONLY + WRITABLE)).replace("WRITES", str(WRITES))
LIMITS: Final = ("--max-writes", "64M", "--max-tmp", "8M")


def host_bytes(roots: list[Path]) -> int:
    """Bytes allocated on the host's file systems under ``roots``: the stores' images and the
    batch, not what lies inside a store's own mount (another device), nor other work on the
    host (its free space moves by hundreds of MiB with the other jobs of a shared machine)."""
    total = 0
    for root in roots:
        with contextlib.suppress(OSError):
            dev = os.stat(root).st_dev
            for directory, dirs, files in os.walk(root):
                for name in files:
                    with contextlib.suppress(OSError):
                        info = os.lstat(os.path.join(directory, name))
                        total += info.st_blocks * 512 if info.st_dev == dev else 0
                dirs[:] = [d for d in dirs
                           if not os.path.ismount(os.path.join(directory, d))]  # fmt: skip
    return total


def runner_stores(pid: int) -> list[Path]:
    """The stores of the runner ``pid`` (``<pid>.<n>-<random>`` under `STORE_ROOT`); other
    runners of the host (other suites) have theirs there too."""
    with contextlib.suppress(OSError):
        return [STORE_ROOT / n for n in os.listdir(STORE_ROOT) if n.startswith(f"{pid}.")]
    return []


def run_watching_host(root: Path, corpus: Path, harness: Path) -> tuple[int, int]:
    """`kit.run_scripted`'s ``run`` with `LIMITS`, and the most `host_bytes` of its stores
    and of ``root`` rose over their start while it ran (bytes, sampled every 20 ms)."""
    kit.write_script(root / "scripts", "unused", "no task says this")
    start = host_bytes([root])
    proc = kit.start_cli("run", str(corpus), "--tier", "regression", "--batch-dir",
                         str(root / "batch"), "--harness", str(harness), "--provider",
                         "scripted", "--scripts", str(root / "scripts"), "--concurrency", "1",
                         "--retries", "0", *LIMITS, env=kit.base_env())  # fmt: skip
    peak = start
    try:
        while proc.poll() is None:
            peak = max(peak, host_bytes([root, *runner_stores(proc.pid)]))
            threading.Event().wait(0.02)
        out, err = proc.communicate(timeout=kit.CLI_TIMEOUT_S)
    except BaseException:
        kit.kill_group(proc)
        raise
    assert proc.returncode == 0, out + err
    return proc.returncode, peak - start


@pytest.fixture(scope="module")
def root_batch(bwrap: str) -> Iterator[tuple[Path, dict[str, dict[str, Any]], int]]:
    """One ``run`` of every root-runner attack and an honest session: the batch, its final
    records by probe, and how far the host's free space dropped meanwhile."""
    if os.geteuid() != 0:
        pytest.skip("the runner must be root for its store")
    tasks = {f"DISK-{name.upper()}-1": f"attack {name} now." for name in
             ("falloc", "allocfree", "roots", "shm")}
    tasks["DISK-HONEST-1"] = "be honest now."
    with kit.host_dir("hw-disk-") as root:
        corpus = kit.write_corpus(root / "corpus", tasks, tools=["Bash"])
        harness = kit.write_harness(root / "claude", STANDIN)
        _, rise = run_watching_host(root, corpus, harness)
        finals = {probe: r for (probe, _), r in kit.finals(root / "batch").items()}
        yield root / "batch", finals, rise


def session_dir(batch: Path, probe: str) -> Path:
    return batch / "sessions" / "present" / probe / "s1"


def largest_file(root: Path, *, allocated: bool = False) -> tuple[int, str]:
    """The largest regular file under ``root`` and its path: by length (holes included), or
    by the bytes it takes on disk with ``allocated``."""
    return max(((p.stat().st_blocks * 512 if allocated else p.stat().st_size, str(p))
                for p in kit.regular_files(root)), default=(0, ""))  # fmt: skip


def test_sixteen_gib_of_fallocate_ends_limit_exceeded_and_only_its_listing_is_kept(
        root_batch: tuple[Path, dict[str, dict[str, Any]], int]) -> None:  # fmt: skip
    batch, finals, _ = root_batch
    falloc = finals["DISK-FALLOC-1"]
    assert (falloc["state"], falloc.get("limit")) == ("limit-exceeded", "writes"), \
        falloc["reason"]
    where = session_dir(batch, "DISK-FALLOC-1")
    assert not (where / "workspace").exists()  # its bytes are not kept
    listing = json.loads((where / "workspace.listing.json").read_text())
    sizes = {e["path"]: e["size_bytes"] for e in listing["entries"] if e["kind"] == "file"}
    assert "f0.bin" in sizes and "docs/guide.md" in sizes  # the listing names what was there
    assert "workspace.listing.json" in falloc["reason"]


def test_no_file_in_the_batch_is_larger_than_the_writes_limit(
        root_batch: tuple[Path, dict[str, dict[str, Any]], int]) -> None:  # fmt: skip
    batch, _, _ = root_batch
    size, path = largest_file(batch)
    assert size <= WRITES, path


def test_the_host_never_gives_the_sessions_much_more_than_the_limit(
        root_batch: tuple[Path, dict[str, dict[str, Any]], int]) -> None:  # fmt: skip
    _, finals, rise = root_batch
    print(f"the stores and the batch took {rise / MIB:.1f} MiB more of the host at most")
    assert rise <= HOST_SLACK, f"{rise / MIB:.0f} MiB"
    assert finals["DISK-ALLOCFREE-1"]["state"] in ("limit-exceeded", "recorded")


def test_nothing_is_written_at_the_root_or_in_dev_but_tmp_and_shm_are_writable(
        root_batch: tuple[Path, dict[str, dict[str, Any]], int]) -> None:  # fmt: skip
    batch, finals, _ = root_batch
    assert finals["DISK-ROOTS-1"]["state"] == "recorded", finals["DISK-ROOTS-1"]["reason"]
    seen = json.loads((session_dir(batch, "DISK-ROOTS-1") / "workspace" / "roots.json")
                      .read_text())  # fmt: skip
    assert {p: seen[p] for p in READ_ONLY} == dict.fromkeys(READ_ONLY, "EROFS")
    assert {p: seen[p] for p in WRITABLE} == dict.fromkeys(WRITABLE, "ok")


def test_dev_shm_stops_at_the_tmp_size_and_filling_it_ends_the_session(
        root_batch: tuple[Path, dict[str, dict[str, Any]], int]) -> None:  # fmt: skip
    batch, finals, _ = root_batch
    shm = finals["DISK-SHM-1"]
    seen = json.loads((session_dir(batch, "DISK-SHM-1") / "workspace" / "shm.json").read_text())
    assert seen["error"] == "ENOSPC" and seen["bytes"] <= TMP, seen
    assert (shm["state"], shm.get("limit")) == ("limit-exceeded", "tmp"), shm["reason"]
    assert "/dev/shm" in shm["reason"]


def test_an_honest_session_beside_them_is_recorded_with_its_workspace(
        root_batch: tuple[Path, dict[str, dict[str, Any]], int]) -> None:  # fmt: skip
    batch, finals, _ = root_batch
    assert finals["DISK-HONEST-1"]["state"] == "recorded", finals["DISK-HONEST-1"]["reason"]
    assert (session_dir(batch, "DISK-HONEST-1") / "workspace" / "docs" / "guide.md").is_file()


# --- a runner that is not root: RLIMIT_FSIZE beside the sampler ---------------------------------

def _open_to(path: Path, owner: tuple[int, int] | None) -> None:
    """Everything under ``path`` readable by anyone, ``path`` itself the runner's."""
    for directory, _, names in os.walk(path):
        os.chmod(directory, 0o755)
        for name in names:
            os.chmod(Path(directory) / name, 0o755 if name == "claude" else 0o644)
    if owner is not None:
        os.chown(path, *owner)


@pytest.fixture(scope="module")
def non_root_batch(bwrap: str) -> Iterator[tuple[Path, dict[str, dict[str, Any]]]]:
    """One ``run`` by a runner that is not root of the sparse and dense attacks."""
    tasks = {"DISK-SPARSE-1": "attack sparse now.", "DISK-DENSE-1": "attack dense now."}
    with non_root_runner() as runner, kit.host_dir("hw-disk-nr-") as root:
        corpus = kit.write_corpus(root / "corpus", tasks, tools=["Bash"])
        harness = kit.write_harness(root / "claude", STANDIN)
        kit.write_script(root / "scripts", "unused", "no task says this")
        _open_to(root, runner.user)
        batch = root / "batch"
        proc = _run(runner, ["run", str(corpus), "--tier", "regression", "--batch-dir",
                             str(batch), "--harness", str(harness), "--provider", "scripted",
                             "--scripts", str(root / "scripts"), "--concurrency", "1",
                             "--retries", "0", *LIMITS])  # fmt: skip
        assert proc.returncode == 0, proc.stdout + proc.stderr
        yield batch, {probe: r for (probe, _), r in kit.finals(batch).items()}


def _run(runner: Runner, args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(runner.argv(*args), capture_output=True, text=True, env=runner.env(),
                          timeout=kit.CLI_TIMEOUT_S, check=False, cwd=kit.REPO)  # fmt: skip


def test_a_non_root_sessions_write_past_the_file_bound_is_refused(
        non_root_batch: tuple[Path, dict[str, dict[str, Any]]]) -> None:  # fmt: skip
    batch, finals = non_root_batch
    sparse = finals["DISK-SPARSE-1"]
    assert sparse["state"] == "recorded", sparse["reason"]  # nothing past the writes limit
    seen = json.loads((session_dir(batch, "DISK-SPARSE-1") / "workspace" / "sparse.json")
                      .read_text())  # fmt: skip
    assert (seen["first"], seen["second"]) == (FSIZE - WRITES, "EFBIG"), seen
    assert seen["dd"] in (-25, 128 + 25) and seen["dd_size"] == FSIZE, seen  # SIGXFSZ


def test_a_non_root_session_writing_past_the_file_bound_ends_limit_exceeded(
        non_root_batch: tuple[Path, dict[str, dict[str, Any]]]) -> None:  # fmt: skip
    batch, finals = non_root_batch
    dense = finals["DISK-DENSE-1"]
    assert (dense["state"], dense.get("limit")) == ("limit-exceeded", "writes"), dense["reason"]
    where = session_dir(batch, "DISK-DENSE-1")
    assert not (where / "workspace").exists()
    listing = json.loads((where / "workspace.listing.json").read_text())
    sizes = {e["path"]: e["size_bytes"] for e in listing["entries"]}
    assert sizes["dense.bin"] == FSIZE  # stopped by the kernel, not 80 MiB
    size, path = largest_file(batch, allocated=True)  # the sparse session's file: 4 KiB of data
    assert size <= WRITES, path


def test_a_non_root_runners_batch_and_transcript_say_its_writes_limit_was_sampled(
        non_root_batch: tuple[Path, dict[str, dict[str, Any]]],
        root_batch: tuple[Path, dict[str, dict[str, Any]], int]) -> None:  # fmt: skip
    batch, _ = non_root_batch
    assert "disk_bound: sampled" in (batch / "config.yaml").read_text()
    transcript = (batch / "transcripts" / "present.md").read_text()
    assert "was not root" in transcript and "RLIMIT_FSIZE" in transcript
    root = root_batch[0]
    assert "disk_bound: kernel" in (root / "config.yaml").read_text()
    assert "RLIMIT_FSIZE" not in (root / "transcripts" / "present.md").read_text()
