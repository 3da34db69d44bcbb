"""A batch written at config format 1 stays readable: status, report, show, retranscribe, resume.

``tests/fixtures/batches/format1/`` holds a real batch written by the runner while
``config.yaml``'s ``format`` was 1 and each session's workspace was bound into its sandbox at
its own host path. It was made with the pinned CLI under real bwrap, against the scripted
provider, by::

    headwater-campaign run /var/tmp/oldfix-corpus --tier campaign --provider scripted \\
        --scripts /var/tmp/oldfix-scripts --batch-dir /var/tmp/oldfix-batch

``corpus/`` and ``scripts/`` are those two directories and ``batch/`` is that batch, as it
was written: 2 probes x arms present and absent x 1 repetition = 4 sessions, each recorded on
its first attempt, with its workspace, manifest, empty stderr tail, kept stream and final
text. Only the four session ``log/`` directories are missing: they were empty, and git keeps
no empty directory. The commands must not need them. FX-PRB-0001's script reads
``/var/tmp/oldfix-batch/sessions/present/FX-PRB-0001/s1/workspace/docs/decisions/FX-DR-0002.md``.
A real model often names a file by its absolute path, as this does. In present's session
that path is inside the workspace, and the ledger records the relative argument
``docs/decisions/FX-DR-0002.md``. Absent's session reads the same path, which is outside its
own workspace, and the ledger records one outside path.

The absolute paths written into the fixture are kept as they are. The tests copy the batch to a
new directory, so every command sees them the way it would see a batch that was moved:

- ``config.yaml``: ``options.corpus`` ``/var/tmp/oldfix-corpus``, ``options.scripts``
  ``/var/tmp/oldfix-scripts`` (also named in ``facts.provider_note``), ``options.harness``
  ``/work/wt-oldfix/.harness/node_modules/@anthropic-ai/claude-code/bin/claude.exe``;
- ``ledger.jsonl``: each final record's ``init_policy.config_dir``,
  ``/var/tmp/headwater-campaign/cfg/10405-<arm>-<probe>-s1-<8 random characters>``, and
  the argument of absent FX-PRB-0001's Read, the absolute path above;
- ``transcripts/*.md``: the prose's provider sentence naming ``/var/tmp/oldfix-scripts``;
  ``absent.md`` also has that Read's absolute argument;
- each ``attempt-1/stdout.jsonl.zst``: the init line's ``cwd``, the workspace where it was
  mounted then, ``/var/tmp/oldfix-batch/sessions/<arm>/<probe>/s1/workspace``, a memory path
  under that config_dir (``.../projects/-var-tmp-oldfix-batch-sessions-<arm>-<probe>-s1-
  workspace/memory/``), and in FX-PRB-0001's two streams the Read's absolute path above;
- ``scripts/FX-PRB-0001.json``: that absolute path.

Outside the streams, the batch path ``/var/tmp/oldfix-batch`` appears only in that Read's
path. The ledger and the config name a session's files relative to the batch.

The expected values come from the fixture's own files, read here with ``json``, ruamel and
zstandard, and not from an earlier run of the command under test.
"""

from __future__ import annotations

import json
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import pytest
from ruamel.yaml import YAML

from tests.campaign.batch_fixture import (
    FIXTURES,
    arm_cost,
    assert_show_prints_the_last_attempt,
    cli,
    fixture_copy,
    last_finals,
    names_its_workspace,
    read_ledger,
    read_yaml,
)

if TYPE_CHECKING:
    from collections.abc import Iterator

FIXTURE: Final = FIXTURES / "format1"
SHOW_SESSION: Final = ("present", "FX-PRB-0002", "s1")
"""The session ``show`` is asked for: the one with a Glob, a Write and a produced note."""


@pytest.fixture(scope="module")
def shared() -> Iterator[Path]:
    """One copy for the commands that write nothing (status, report, show, check-transcript)."""
    yield from fixture_copy("format1")


@pytest.fixture
def own() -> Iterator[Path]:
    """A copy of its own for a command that writes to the batch (retranscribe, resume)."""
    yield from fixture_copy("format1")


def _plan(batch: Path) -> dict[str, Any]:
    return read_yaml(batch / "plan.yaml")


def _planned(batch: Path) -> int:
    """Sessions planned per arm: probes x repetitions, from plan.yaml."""
    plan = _plan(batch)
    return len(plan["probes"]) * int(plan["repetitions"])


def test_the_fixture_is_a_format_1_batch_with_four_recorded_sessions() -> None:
    """What the other tests rely on: format 1 in config and ledger, 2 arms, 4 recorded sessions."""
    batch = FIXTURE / "batch"
    config = YAML(typ="safe", pure=True).load((batch / "config.yaml").read_text())
    ledger = read_ledger(batch)
    assert (config["format"], ledger[0]["kind"], ledger[0]["format"]) == (1, "ledger", 1)
    finals = last_finals(batch)
    assert sorted({arm for arm, _, _ in finals}) == ["absent", "present"]
    assert len(finals) == 4 and {r["state"] for r in finals.values()} == {"recorded"}
    for arm, probe, session in finals:
        root = batch / "sessions" / arm / probe / session
        assert (root / "manifest.json").is_file() and (root / "stderr.tail").is_file()
        assert (root / "attempt-1" / "stdout.jsonl.zst").is_file()
        assert (root / "attempt-1" / "final.txt").is_file()


def test_status_of_a_format_1_batch_counts_every_arm_from_its_ledger(shared: Path) -> None:
    """``status`` exits 0 and prints each arm's planned, recorded and spend from the ledger."""
    batch = shared / "batch"
    run = cli("status", str(batch))
    assert run.returncode == 0, run.stderr
    planned = _planned(batch)
    finals = last_finals(batch)
    rows = [line.split() for line in run.stdout.splitlines()]
    for arm in _plan(batch)["arms"]:
        recorded = sum(1 for (a, _, _), r in finals.items()
                       if a == arm and r["state"] == "recorded")
        # queued, running, interrupted, recorded of planned, refused, failed, retried
        assert [arm, "0", "0", "0", f"{recorded}/{planned}", "0", "0", "0",
                f"${arm_cost(batch, arm):.4f}"] in rows
    assert "outstanding: 0" in run.stdout.splitlines()


def test_status_json_of_a_format_1_batch_matches_its_ledger(shared: Path) -> None:
    """``status --json`` exits 0; its batch, command, counts and spend are the ledger's own."""
    batch = shared / "batch"
    run = cli("status", str(batch), "--json")
    assert run.returncode == 0, run.stderr
    data = json.loads(run.stdout)
    ledger = read_ledger(batch)
    invocations = [r for r in ledger if r["kind"] == "invocation"]
    assert (data["batch"], data["command"], data["invocations"]) == (
        str(batch.resolve()), invocations[0]["command"], len(invocations))
    assert (data["running"], data["outstanding"], data["in_flight"], data["interrupted"],
            data["last_failures"]) == (False, 0, [], [], [])
    planned = _planned(batch)
    finals = last_finals(batch)
    total = Decimal(0)
    for arm in _plan(batch)["arms"]:
        counts = data["arms"][arm]
        recorded = sum(1 for (a, _, _) in finals if a == arm)
        assert (counts["planned"], counts["recorded"], counts["queued"]) == (planned, recorded, 0)
        assert Decimal(counts["cost_usd"]) == arm_cost(batch, arm)
        total += arm_cost(batch, arm)
    assert Decimal(data["spend_usd"]) == total


def test_report_of_a_format_1_batch_names_every_probe_and_arm(shared: Path) -> None:
    """``report`` exits 0 and shows each probe of plan.yaml and each arm, present the reference."""
    batch = shared / "batch"
    run = cli("report", str(batch))
    assert run.returncode == 0, run.stderr
    plan = _plan(batch)
    for probe in plan["probes"]:
        assert f"{probe['id']}: {probe['title']}" in run.stdout
        for answer in probe["answers"]:
            assert f'answer "{answer}"' in run.stdout
    assert "present (reference)" in run.stdout and "absent" in run.stdout
    assert "every planned session is finished" in run.stdout


def test_report_json_of_a_format_1_batch_holds_the_ledgers_answers_and_calls(
        shared: Path) -> None:
    """``report --json``: per probe and arm, the answers and call counts of the ledger's events."""
    batch = shared / "batch"
    run = cli("report", str(batch), "--json")
    assert run.returncode == 0, run.stderr
    data = json.loads(run.stdout)
    plan = _plan(batch)
    assert [c["id"] for c in data["columns"]] == plan["arms"]
    finals = last_finals(batch)
    assert [p["id"] for p in data["probes"]] == [p["id"] for p in plan["probes"]]
    for probe in data["probes"]:
        for cell in probe["cells"]:
            events = [r["event"] for (arm, p, _), r in finals.items()
                      if arm == cell["column"] and p == probe["id"]]
            answers = {a["answer"]: a["count"] for a in cell["answers"] if a["count"]}
            assert answers == Counter(e.get("answer") for e in events)
            assert (cell["planned"], cell["recorded"]) == (int(plan["repetitions"]), len(events))
            assert cell["calls"]["median"] == len(events[0]["calls"])
    for arm in data["arms"]:
        ran = [r for (a, _, _), r in finals.items() if a == arm["column"]]
        assert arm["served_versions"] == dict(Counter(r["served_model"] for r in ran))
        assert arm["networks"] == dict(Counter(r["network"] for r in ran))


def test_show_of_a_format_1_session_prints_its_ledger_record_and_final_text(
        shared: Path) -> None:
    """``show`` exits 0 and prints the state, reason, calls, answer and final.txt of the attempt."""
    assert_show_prints_the_last_attempt(shared / "batch", SHOW_SESSION)


def test_check_transcript_finds_the_format_1_transcripts_well_formed_and_verified(
        shared: Path) -> None:
    """``check-transcript`` alone checks the form: exit 0, "well-formed" for each arm's
    transcript. With ``--batch`` (and the copy's corpus) each is held to the batch's kept
    streams, which the honest files match: exit 0, "verified clean" each."""
    batch = shared / "batch"
    paths = [batch / "transcripts" / f"{arm}.md" for arm in _plan(batch)["arms"]]
    run = cli("check-transcript", *map(str, paths))
    assert run.returncode == 0, run.stdout + run.stderr
    assert sorted(run.stdout.splitlines()) == sorted(f"{p}: well-formed" for p in paths)
    run = cli("check-transcript", *map(str, paths), "--batch", str(batch),
              "--corpus", str(shared / "corpus"))
    assert run.returncode == 0, run.stdout + run.stderr
    assert sorted(run.stdout.splitlines()) == sorted(f"{p}: verified clean" for p in paths)


def _retranscribed(copy: Path) -> tuple[dict[tuple[str, str, str], dict[str, Any]],
                                        list[dict[str, Any]]]:
    """Run ``retranscribe`` over ``copy``'s corpus (exit 0, one line per count) and return the
    last final records from before the run and the ``rederived`` records it appended."""
    batch = copy / "batch"
    finals = last_finals(batch)
    before = len(read_ledger(batch))
    run = cli("retranscribe", str(batch), "--corpus", str(copy / "corpus"))
    assert run.returncode == 0, run.stderr
    kept = [r for r in finals.values() if r.get("stream")]
    assert f"re-derived {len(kept)} sessions from their kept streams" in run.stdout
    rederived = [r for r in read_ledger(batch)[before:] if r["kind"] == "rederived"]
    assert len(rederived) == len(kept)
    return finals, rederived


def _named(batch: Path, final: dict[str, Any]) -> bool:
    return names_its_workspace(batch / final["stream"])


def test_retranscribe_of_a_moved_format_1_batch_derives_the_same_events(own: Path) -> None:
    """``retranscribe`` over the copied corpus exits 0 and each kept stream re-derives unchanged.

    The sessions checked here name their files relative to the workspace. The streams
    also give the workspace's old location, under /var/tmp/oldfix-batch, in the init
    line's ``cwd``. The copy's workspaces are somewhere else, so no call, answer or produced
    file may depend on where the workspace was. The transcripts it rendered
    match the batch's kept streams (`check-transcript --batch`).
    """
    batch = own / "batch"
    finals, rederived = _retranscribed(own)
    relative = [r for r in rederived
                if not _named(batch, finals[(r["arm"], r["probe"], r["session"])])]
    assert len(relative) == len(rederived) - 1  # present FX-PRB-0001 names its workspace
    for record in relative:
        final = finals[(record["arm"], record["probe"], record["session"])]
        assert (record["state"], record["event"], record.get("outside_paths", 0)) == (
            final["state"], final["event"], final.get("outside_paths", 0))
    paths = [batch / "transcripts" / f"{arm}.md" for arm in _plan(batch)["arms"]]
    check = cli("check-transcript", *map(str, paths), "--batch", str(batch),
                "--corpus", str(own / "corpus"))
    assert check.returncode == 0, check.stdout + check.stderr


def test_retranscribe_of_a_moved_batch_keeps_a_call_that_named_its_workspace_absolutely(
        own: Path) -> None:
    """A call that named a workspace file by its absolute path, at the workspace's mount
    point then, re-derives to the same relative argument and no outside path after the move.

    Today it does not. present FX-PRB-0001's Read of ``<old workspace>/docs/decisions/
    FX-DR-0002.md`` re-derives to that absolute argument with one outside path, and
    ``retranscribe`` reports it as changed. A format-1 batch records its old mount point
    only in its streams' init ``cwd``.
    """
    batch = own / "batch"
    finals, rederived = _retranscribed(own)
    named = [r for r in rederived
             if _named(batch, finals[(r["arm"], r["probe"], r["session"])])]
    assert [(r["arm"], r["probe"]) for r in named] == [("present", "FX-PRB-0001")]
    final = finals[("present", "FX-PRB-0001", "s1")]
    assert (named[0]["event"], named[0].get("outside_paths", 0)) == (
        final["event"], final.get("outside_paths", 0))


def test_resume_of_a_finished_format_1_batch_has_nothing_to_run(own: Path) -> None:
    """``resume`` of a batch with nothing outstanding exits 0, says so, and writes no record:
    nothing would run, so no session of this runner's format meets the recorded ones."""
    batch = own / "batch"
    before = (batch / "ledger.jsonl").read_bytes()
    run = cli("resume", str(batch), "--corpus", str(own / "corpus"))
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"nothing to resume: every session of {batch.resolve()} is finished" in run.stdout
    assert (batch / "ledger.jsonl").read_bytes() == before


def test_resume_of_an_unfinished_format_1_batch_is_refused_naming_both_formats(
        own: Path) -> None:
    """A format-1 batch's sessions saw their workspace at its host path (naming their arm and
    probe); this runner's see one fixed path, so running more would mix two conditions in one
    batch: exit 2, the message naming format 1 and format 2, nothing written."""
    batch = own / "batch"
    lines = (batch / "ledger.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    last_final = max(i for i, line in enumerate(lines) if json.loads(line)["kind"] == "final")
    (batch / "ledger.jsonl").write_text("".join(lines[:last_final] + lines[last_final + 1:]),
                                        encoding="utf-8")
    before = (batch / "ledger.jsonl").read_bytes()
    run = cli("resume", str(batch), "--corpus", str(own / "corpus"))
    assert run.returncode == 2, run.stdout + run.stderr
    assert "batch format 1" in run.stderr and "writes format 2" in run.stderr, run.stderr
    assert (batch / "ledger.jsonl").read_bytes() == before
