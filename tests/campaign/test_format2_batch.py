"""A batch written at config format 2 stays readable and resumable: status, report, show,
retranscribe, resume.

``tests/fixtures/batches/format2/`` holds a real batch written by the runner while
``config.yaml``'s ``format`` was 2 and the ledger's was 1: every session saw its workspace at
one fixed path, ``/workspace/corpus``. It was made with the pinned CLI under real bwrap, as
root, against the scripted provider, by::

    headwater-campaign run /var/tmp/hw-format2/corpus --tier campaign --provider scripted \\
        --scripts /var/tmp/hw-format2/scripts --batch-dir /var/tmp/hw-format2/batch \\
        --seed 1 --concurrency 1 --retries 0 --max-cost-cents 3

which exited 3 (a budget stopped the batch). ``corpus/`` and ``scripts/`` are those two
directories and ``batch/`` is that batch, as it was written: 3 probes x arms present and
absent x 1 repetition = 6 planned sessions. Seed 1 runs them one at a time in the order
FX-PRB-0003 (absent, present), FX-PRB-0002 (present, absent), FX-PRB-0001 (present, absent).
FX-PRB-0003's script answers 529 three times, so the CLI gives up and both its sessions end
``harness-error``, worth another attempt, with no final text. The four others would record;
after present FX-PRB-0001 the 3-cent budget could be passed (2.915 cents spent, 0.995
projected), so the ledger ends with a ``budget-stop`` and a ``stopped`` record and absent
FX-PRB-0001 never started. Three sessions are outstanding. Each session that ran has its
workspace, manifest, empty stderr tail and kept stream; the recorded ones have a final text.
The batch has ``tree.json`` and config.yaml's ``budget``, which format 1 lacked. Only the
five session ``log/`` directories are missing: they were empty, and git keeps no empty
directory. FX-PRB-0001's script reads ``/workspace/corpus/docs/decisions/FX-DR-0002.md``, the
absolute path a real model often gives; at format 2 it is inside the workspace in both arms.

The absolute paths written into the fixture are kept as they are (the batch's own path,
``/var/tmp/hw-format2/batch``, appears nowhere). The tests copy it to a new directory:

- ``config.yaml``: ``options.corpus`` ``/var/tmp/hw-format2/corpus``, ``options.scripts``
  ``/var/tmp/hw-format2/scripts`` (also named in ``facts.provider_note``), ``options.harness``
  ``/work/wt-fix2/.harness/node_modules/@anthropic-ai/claude-code/bin/claude.exe``,
  ``options.workspace_path`` ``/workspace/corpus``;
- ``ledger.jsonl``: each final record's ``init_policy``, ``config_dir`` ``/run/headwater/config``
  and ``cwd`` ``/workspace/corpus``, the same for every session; the harness-error reasons and
  every ``egress.allowed_target`` name the provider's loopback address then, 127.0.0.1:43663;
- ``transcripts/*.md``: the provider sentence naming ``/var/tmp/hw-format2/scripts``, and the
  sentence naming ``/workspace/corpus``, ``/run/headwater/config`` and ``/run/headwater/log``;
- each ``attempt-1/stdout.jsonl.zst``: the init line's ``cwd`` ``/workspace/corpus``, a memory
  path ``/run/headwater/config/projects/-workspace-corpus/memory/``, and in present
  FX-PRB-0001's stream the Read's absolute path above;
- ``scripts/FX-PRB-0001.json``: that absolute path.

``resume`` takes the harness and the scripts from config.yaml's options and has no flag for
either, so before resuming a copy the tests point those two options at this checkout's pinned
CLI and the copy's scripts (``_relocate``). The expected values come from the fixture's own
files, read here with ``json``, ruamel and zstandard, and not from an earlier run of the
command under test.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import pytest

from recorder import PINNED_RELEASE
from tests.campaign.batch_fixture import (
    FIXTURES,
    Key,
    arm_cost,
    assert_show_prints_the_last_attempt,
    cli,
    fixture_copy,
    init_cwd,
    last_finals,
    names_its_workspace,
    read_ledger,
    read_yaml,
    record_key,
)

if TYPE_CHECKING:
    from collections.abc import Iterator

FIXTURE: Final = FIXTURES / "format2"
SHOW_SESSION: Final = ("present", "FX-PRB-0002", "s1")
"""The session ``show`` is asked for: the one with a Glob, a Write and a produced note."""
FAILED_SESSION: Final = ("absent", "FX-PRB-0003", "s1")
"""A session whose one attempt ended harness-error: no calls, no final text."""
LARGER_BUDGET_CENTS: Final = 100
"""A budget resume is given: far above what the six sessions cost (about 5 cents)."""


@pytest.fixture(scope="module")
def shared() -> Iterator[Path]:
    """One copy for the commands that write nothing (status, report, show, check-transcript)."""
    yield from fixture_copy("format2")


@pytest.fixture
def own() -> Iterator[Path]:
    """A copy of its own for a command that writes to the batch (retranscribe, resume)."""
    yield from fixture_copy("format2")


def _one(batch: Path, kind: str) -> dict[str, Any]:
    (record,) = (r for r in read_ledger(batch) if r["kind"] == kind)
    return record


def _planned_keys(batch: Path) -> set[Key]:
    plan = read_yaml(batch / "plan.yaml")
    return {(arm, probe["id"], f"s{rep}") for arm in plan["arms"] for probe in plan["probes"]
            for rep in range(1, int(plan["repetitions"]) + 1)}


def _outstanding(batch: Path) -> dict[Key, str]:
    """Each session left to run, with why: never started, or its last attempt is retryable."""
    finals = last_finals(batch)
    why = dict.fromkeys(_planned_keys(batch) - set(finals), "not started")
    why |= {k: f"{r['state']} (worth another attempt)" for k, r in finals.items()
            if r["retryable"]}
    return why


def _failed(record: dict[str, Any]) -> bool:
    return record["state"] != "recorded" and not record["state"].startswith("refused-")


def test_the_fixture_is_a_format_2_batch_stopped_by_its_budget() -> None:
    """What the other tests rely on: format 2, a tree, a budget, 6 planned sessions of which 3
    are recorded, 2 ended harness-error worth another attempt and 1 never started."""
    batch = FIXTURE / "batch"
    config = read_yaml(batch / "config.yaml")
    ledger = read_ledger(batch)
    assert (config["format"], ledger[0]["kind"], ledger[0]["format"]) == (2, "ledger", 1)
    assert config["options"]["workspace_path"] == "/workspace/corpus"
    assert config["budget"]["max_cost_cents"] == config["options"]["max_cost_cents"] == 3
    assert set(json.loads((batch / "tree.json").read_text())["files"]) == {
        str(p.relative_to(FIXTURE / "corpus")) for p in (FIXTURE / "corpus").rglob("*")
        if p.is_file()}
    finals = last_finals(batch)
    assert len(_planned_keys(batch)) == 6
    assert Counter(r["state"] for r in finals.values()) == {"recorded": 3, "harness-error": 2}
    assert _outstanding(batch) == {
        ("absent", "FX-PRB-0001", "s1"): "not started",
        ("absent", "FX-PRB-0003", "s1"): "harness-error (worth another attempt)",
        ("present", "FX-PRB-0003", "s1"): "harness-error (worth another attempt)"}
    assert (_one(batch, "stopped")["reason"], ledger[-1]["kind"]) == ("budget", "stopped")
    for (arm, probe, session), final in finals.items():
        root = batch / "sessions" / arm / probe / session
        assert (root / "manifest.json").is_file() and (root / "stderr.tail").is_file()
        assert (batch / final["stream"]).is_file()
        assert (root / "attempt-1" / "final.txt").is_file() == (final["state"] == "recorded")


def test_status_of_a_format_2_batch_counts_every_arm_and_what_is_outstanding(
        shared: Path) -> None:
    """``status`` exits 0 and prints each arm's counts, the budget, the stop and what is left."""
    batch = shared / "batch"
    run = cli("status", str(batch))
    assert run.returncode == 0, run.stderr
    plan, config = read_yaml(batch / "plan.yaml"), read_yaml(batch / "config.yaml")
    planned = len(plan["probes"]) * int(plan["repetitions"])
    finals = last_finals(batch)
    rows = [line.split() for line in run.stdout.splitlines()]
    total = Decimal(0)
    for arm in plan["arms"]:
        mine = [r for k, r in finals.items() if k[0] == arm]
        recorded = sum(1 for r in mine if r["state"] == "recorded")
        # queued, running, interrupted, recorded of planned, refused, failed, retried
        assert [arm, str(planned - len(mine)), "0", "0", f"{recorded}/{planned}", "0",
                str(sum(map(_failed, mine))), "0", f"${arm_cost(batch, arm):.4f}"] in rows
        total += arm_cost(batch, arm)
    budget = config["budget"]
    assert (f"spend ${total:.4f} of a ${Decimal(budget['max_cost_cents']) / 100:.2f} budget "
            f"(--max-cost-cents {budget['max_cost_cents']}; set by {budget['command']}, "
            f"invocation {budget['invocation']})") in run.stdout
    stopped = _one(batch, "stopped")
    assert (f"last invocation ({stopped['invocation']}) ended: {stopped['reason']}: "
            f"{stopped['detail']}") in run.stdout
    assert f"outstanding: {len(_outstanding(batch))} " in run.stdout


def test_status_json_of_a_format_2_batch_matches_its_ledger(shared: Path) -> None:
    """``status --json`` exits 0; its counts, spend, budget, stop and failures are the ledger's."""
    batch = shared / "batch"
    run = cli("status", str(batch), "--json")
    assert run.returncode == 0, run.stderr
    data = json.loads(run.stdout)
    ledger = read_ledger(batch)
    invocations = [r for r in ledger if r["kind"] == "invocation"]
    assert (data["batch"], data["command"], data["invocations"]) == (
        str(batch.resolve()), invocations[0]["command"], len(invocations))
    assert (data["running"], data["outstanding"], data["in_flight"], data["interrupted"]) == (
        False, len(_outstanding(batch)), [], [])
    assert (data["stopped"], data["budget_stop"]) == (
        _one(batch, "stopped"), _one(batch, "budget-stop"))
    assert data["max_cost_cents"] == read_yaml(batch / "config.yaml")["budget"]["max_cost_cents"]
    finals = last_finals(batch)
    assert sorted((f["arm"], f["probe"], f["session"], f["attempt"], f["state"], f["reason"])
                  for f in data["last_failures"]) == sorted(
        (*k, r["attempt"], r["state"], r["reason"]) for k, r in finals.items() if _failed(r))
    total = Decimal(0)
    for arm, counts in data["arms"].items():
        mine = [r for k, r in finals.items() if k[0] == arm]
        assert (counts["planned"], counts["queued"], counts["failed"], counts["recorded"]) == (
            3, 3 - len(mine), sum(map(_failed, mine)),
            sum(1 for r in mine if r["state"] == "recorded"))
        assert Decimal(counts["cost_usd"]) == arm_cost(batch, arm)
        total += arm_cost(batch, arm)
    assert Decimal(data["spend_usd"]) == total


def test_report_of_a_format_2_batch_names_every_probe_arm_and_outstanding_session(
        shared: Path) -> None:
    """``report`` exits 0: each probe and answer of plan.yaml, each arm, the stop, and each
    outstanding session with why it is outstanding."""
    batch = shared / "batch"
    run = cli("report", str(batch))
    assert run.returncode == 0, run.stderr
    for probe in read_yaml(batch / "plan.yaml")["probes"]:
        assert f"{probe['id']}: {probe['title']}" in run.stdout
        for answer in probe["answers"]:
            assert f'answer "{answer}"' in run.stdout
    assert "present (reference)" in run.stdout and "absent" in run.stdout
    stopped = _one(batch, "stopped")
    assert f"stopped: {stopped['reason']}: {stopped['detail']}" in run.stdout
    outstanding = _outstanding(batch)
    (line,) = (x for x in run.stdout.splitlines() if x.startswith("outstanding:"))
    assert line.startswith(f"outstanding: {len(outstanding)} session(s): ")
    for (arm, probe, session), why in outstanding.items():
        assert f"{arm} {probe} {session} ({why})" in line


def test_report_json_of_a_format_2_batch_holds_the_ledgers_answers_states_and_calls(
        shared: Path) -> None:
    """``report --json``: per probe and arm the answers, states and calls of the last finals;
    the batch's outstanding sessions and stop."""
    batch = shared / "batch"
    run = cli("report", str(batch), "--json")
    assert run.returncode == 0, run.stderr
    data = json.loads(run.stdout)
    plan = read_yaml(batch / "plan.yaml")
    assert [c["id"] for c in data["columns"]] == plan["arms"]
    assert [p["id"] for p in data["probes"]] == [p["id"] for p in plan["probes"]]
    finals = last_finals(batch)
    for probe in data["probes"]:
        for cell in probe["cells"]:
            mine = [r for (arm, p, _), r in finals.items()
                    if arm == cell["column"] and p == probe["id"]]
            events = [r["event"] for r in mine if r["state"] == "recorded"]
            answers = {a["answer"]: a["count"] for a in cell["answers"] if a["count"]}
            assert answers == Counter(e.get("answer") for e in events)
            assert (cell["planned"], cell["recorded"], cell["not_started"]) == (
                int(plan["repetitions"]), len(events), int(plan["repetitions"]) - len(mine))
            assert {s: n for s, n in cell["states"].items() if n} == Counter(
                r["state"] for r in mine if r["state"] != "recorded")
            assert (cell["calls"] or {}).get("median") == (
                len(events[0]["calls"]) if events else None)
    (entry,) = data["batches"]
    stopped = _one(batch, "stopped")
    assert entry["stopped"] == {"reason": stopped["reason"], "detail": stopped["detail"]}
    assert {(o["arm"], o["probe"], o["session"]): o["why"] for o in entry["outstanding"]} == (
        _outstanding(batch))
    for arm in data["arms"]:
        ran = [r for (a, _, _), r in finals.items() if a == arm["column"]]
        assert arm["served_versions"] == dict(Counter(r["served_model"] for r in ran
                                                      if r["state"] == "recorded"))
        assert arm["networks"] == dict(Counter(r["network"] for r in ran))
        assert arm["first_attempt"] == dict(Counter(r["state"] for r in ran))


def test_show_of_a_format_2_session_prints_its_ledger_record_and_final_text(
        shared: Path) -> None:
    """``show`` exits 0 and prints the state, reason, calls, answer and final.txt of the attempt."""
    assert_show_prints_the_last_attempt(shared / "batch", SHOW_SESSION)


def test_show_of_a_failed_format_2_session_prints_its_state_and_reason(shared: Path) -> None:
    """``show`` of the harness-error attempt exits 0: its state, reason, no calls, no text."""
    batch = shared / "batch"
    run = cli("show", str(batch), *FAILED_SESSION)
    assert run.returncode == 0, run.stderr
    final = last_finals(batch)[FAILED_SESSION]
    lines = run.stdout.splitlines()
    assert f"  state: {final['state']}" in lines and f"  reason: {final['reason']}" in lines
    assert f"  calls ({len(final['calls'])}):" in lines
    assert f"  kept stream: {final['stream']} ({final['stream_bytes']} bytes received)" in lines


def test_show_of_a_session_that_never_started_is_a_usage_error(shared: Path) -> None:
    """``show`` of the planned session the budget kept from starting: exit 2, said in words."""
    batch = shared / "batch"
    (key,) = (k for k, why in _outstanding(batch).items() if why == "not started")
    run = cli("show", str(batch), *key)
    assert run.returncode == 2, run.stdout + run.stderr
    assert "has no attempt yet" in run.stderr


def test_check_transcript_finds_the_format_2_transcripts_well_formed_and_verified(
        shared: Path) -> None:
    """``check-transcript`` alone checks the form: exit 0, "well-formed" for each arm's
    transcript. With ``--batch`` (and the copy's corpus) each is held to the batch's kept
    streams, which the honest files match: exit 0, "verified clean" each."""
    batch = shared / "batch"
    paths = [batch / "transcripts" / f"{arm}.md" for arm in read_yaml(batch / "plan.yaml")["arms"]]
    run = cli("check-transcript", *map(str, paths))
    assert run.returncode == 0, run.stdout + run.stderr
    assert sorted(run.stdout.splitlines()) == sorted(f"{p}: well-formed" for p in paths)
    run = cli("check-transcript", *map(str, paths), "--batch", str(batch),
              "--corpus", str(shared / "corpus"))
    assert run.returncode == 0, run.stdout + run.stderr
    assert sorted(run.stdout.splitlines()) == sorted(f"{p}: verified clean" for p in paths)


def test_retranscribe_of_a_moved_format_2_batch_derives_the_same_records(own: Path) -> None:
    """``retranscribe`` over the copied corpus exits 0 and every kept stream re-derives to its
    final record's state, calls, event and outside paths: the Read that named
    ``/workspace/corpus/...`` absolutely among them, since that path is where every session
    saw its workspace. The transcripts it rendered match the batch's kept
    streams (`check-transcript --batch`)."""
    batch = own / "batch"
    finals = last_finals(batch)
    before = len(read_ledger(batch))
    run = cli("retranscribe", str(batch), "--corpus", str(own / "corpus"))
    assert run.returncode == 0, run.stderr
    kept = [r for r in finals.values() if r.get("stream")]
    assert f"re-derived {len(kept)} sessions from their kept streams" in run.stdout
    rederived = [r for r in read_ledger(batch)[before:] if r["kind"] == "rederived"]
    assert sorted(map(record_key, rederived)) == sorted(map(record_key, kept))
    assert any(names_its_workspace(batch / r["stream"]) for r in kept)
    for record in rederived:
        final = finals[record_key(record)]
        assert (record["state"], record.get("event"), record.get("calls"),
                record.get("outside_paths", 0)) == (
            final["state"], final.get("event"), final.get("calls"),
            final.get("outside_paths", 0))
    paths = [batch / "transcripts" / f"{arm}.md" for arm in read_yaml(batch / "plan.yaml")["arms"]]
    check = cli("check-transcript", *map(str, paths), "--batch", str(batch),
                "--corpus", str(own / "corpus"))
    assert check.returncode == 0, check.stdout + check.stderr


def _relocate(copy: Path, harness: Path) -> None:
    """Point the copy's config.yaml at this checkout's pinned CLI and the copy's scripts: the
    two paths ``resume`` takes from the options and no flag replaces. The batch was made with
    Claude Code 2.1.197; the pin is now another release, and ``resume`` refuses a batch whose
    recorded harness version is not the one it would run (test_compare_batch.py), so the
    copy records the pin's version line too (as the CLI prints it), the third input moved."""
    path = copy / "batch" / "config.yaml"
    text = path.read_text(encoding="utf-8")
    options = read_yaml(path)["options"]
    for name, new in (("harness", harness), ("scripts", copy / "scripts")):
        old = f"\n  {name}: {options[name]}\n"
        assert text.count(old) == 1, name
        text = text.replace(old, f"\n  {name}: {new}\n")
    recorded = "\n  harness_version: 2.1.197 (Claude Code)\n"
    assert text.count(recorded) == 1
    text = text.replace(recorded, f"\n  harness_version: {PINNED_RELEASE} (Claude Code)\n")
    path.write_text(text, encoding="utf-8")


_REFUSED: Final = re.compile(r"batch format (\d+) .*this runner writes format (\d+)")


def _refused_by_format(run: subprocess.CompletedProcess[str], batch: Path,
                       ledger: bytes) -> bool:
    """Whether ``resume`` refused the batch for its format (then: exit 2, the message naming
    format 2 and this runner's other one, nothing written): the one other allowed outcome."""
    found = _REFUSED.search(run.stderr)
    if found is None:
        return False
    assert run.returncode == 2, run.stdout + run.stderr
    assert found[1] == "2" and found[2] != "2", run.stderr
    assert (batch / "ledger.jsonl").read_bytes() == ledger
    return True


@pytest.mark.bwrap
@pytest.mark.harness
@pytest.mark.slow
def test_resume_of_a_moved_format_2_batch_runs_only_what_was_outstanding(
        own: Path, bwrap: str, harness: Path) -> None:
    """``resume`` with a larger budget, through the real CLI under bwrap: exit 0, one new
    invocation, an attempt for each outstanding session and for no other. The one that never
    started records the event its probe recorded in the other arm, at the batch's workspace
    path; the harness-error ones meet their script's 529s again (their next attempt). Or the
    runner refuses the batch by its format, naming both."""
    batch = own / "batch"
    outstanding = _outstanding(batch)
    finals = last_finals(batch)
    _relocate(own, harness)
    before = (batch / "ledger.jsonl").read_bytes()
    count = len(read_ledger(batch))
    run = cli("resume", str(batch), "--corpus", str(own / "corpus"), "--retries", "0",
               "--max-cost-cents", str(LARGER_BUDGET_CENTS))
    if _refused_by_format(run, batch, before):
        return
    assert run.returncode == 0, run.stdout + run.stderr
    added = read_ledger(batch)[count:]
    (invocation,) = (r for r in added if r["kind"] == "invocation")
    assert (invocation["command"], invocation["number"]) == ("resume", 2)
    planned = read_yaml(batch / "plan.yaml")["session_count"]
    assert (f"resuming (invocation 2): {len(outstanding)} of {planned} sessions outstanding"
            in run.stderr), run.stderr
    assert sorted(record_key(r) for r in added if r["kind"] == "started") == sorted(outstanding)
    new = {record_key(r): r for r in added if r["kind"] == "final"}
    assert set(new) == set(outstanding)
    workspace = read_yaml(batch / "config.yaml")["options"]["workspace_path"]
    for key, final in new.items():
        assert init_cwd(batch / final["stream"]) == workspace
        if key in finals:
            old = finals[key]
            assert (final["attempt"], final["state"], final["retryable"]) == (
                old["attempt"] + 1, old["state"], True)
            continue
        (sibling,) = (r for k, r in finals.items() if k[1:] == key[1:])
        assert (final["attempt"], final["state"]) == (1, "recorded")
        assert _comparable(final["event"]) == _comparable(sibling["event"])
    paths = [batch / "transcripts" / f"{arm}.md" for arm in read_yaml(batch / "plan.yaml")["arms"]]
    check = cli("check-transcript", *map(str, paths))
    assert check.returncode == 0, check.stdout + check.stderr


@pytest.mark.bwrap
@pytest.mark.harness
@pytest.mark.slow
def test_resume_of_a_format_2_batch_keeps_its_recorded_budget(
        own: Path, bwrap: str, harness: Path) -> None:
    """``resume`` with no budget of its own keeps the one config.yaml records (3 cents), which
    the spend plus one session's projection passes: exit 3, no session started, a new
    ``budget-stop`` against that limit. Or the runner refuses the batch by its format."""
    batch = own / "batch"
    _relocate(own, harness)
    before = (batch / "ledger.jsonl").read_bytes()
    count = len(read_ledger(batch))
    run = cli("resume", str(batch), "--corpus", str(own / "corpus"))
    if _refused_by_format(run, batch, before):
        return
    assert run.returncode == 3, run.stdout + run.stderr
    added = read_ledger(batch)[count:]
    assert [r for r in added if r["kind"] in ("started", "final")] == []
    (stop,) = (r for r in added if r["kind"] == "budget-stop")
    old = _one(FIXTURE / "batch", "budget-stop")
    assert (stop["budget"], stop["limit"], stop["used"]) == (
        old["budget"], old["limit"], old["used"])


def _comparable(event: dict[str, Any]) -> dict[str, Any]:
    """An event as two runs of one session must agree on it: a Grep call's result digest
    left out, since ripgrep prints the files that match in the order its threads finish
    them (seen to differ between a session and its sibling under load)."""
    calls = [{k: v for k, v in call.items() if not (call["tool"] == "Grep" and k == "result")}
             for call in event["calls"]]
    return {**event, "calls": calls}
