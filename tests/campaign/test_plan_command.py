"""The ``plan`` command: ``--probe``, the expectations, the sizing and ``--from BATCH``
(docs/plan.md, "Before spending"), run in-process on the bundled example corpus."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path

import pytest

from campaign.cli._errors import UsageError
from campaign.cli._parser import parse_command
from campaign.corpus._corpus import load_corpus
from campaign.stats import fisher_power
from tests.campaign.corpora import probe_yml, seal_files, write_files

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "demo" / "example" / "corpus"
FORMAT2 = REPO / "tests" / "fixtures" / "batches" / "format2" / "batch"


def _plan(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[str, str]:
    assert parse_command(["plan", *argv]).run() == 0
    out = capsys.readouterr()
    return out.out, out.err


def _member(text: str, name: str) -> str:
    return next(line.split()[1] for line in text.splitlines() if line.startswith(f"  {name} "))


def test_probe_chooses_a_subset_and_its_digests(capsys: pytest.CaptureFixture[str]) -> None:
    out, _ = _plan(capsys, str(EXAMPLE), "--probe", "HW-PRB-0002", "--probe", "HW-PRB-0001")
    assert "plan: tier campaign, 2 probes" in out
    assert "sessions: 2 probes x 2 arms x 2 repetitions = 8" in out
    # docs/plan.md: selection is sha256 of the sorted ids joined by a newline.
    expected = "sha256:" + hashlib.sha256(b"HW-PRB-0001\nHW-PRB-0002").hexdigest()
    assert _member(out, "selection") == expected
    whole, _ = _plan(capsys, str(EXAMPLE))
    assert _member(whole, "tree") == _member(out, "tree")
    assert _member(whole, "read_set") != _member(out, "read_set")
    assert "probe HW-PRB-0003" not in out and "probe HW-PRB-0003" in whole


def test_probe_subset_read_set_is_its_own_files(capsys: pytest.CaptureFixture[str]) -> None:
    out, _ = _plan(capsys, str(EXAMPLE), "--probe", "HW-PRB-0001", "--format", "json")
    plan = json.loads(out)
    corpus = load_corpus(EXAMPLE)
    probe = corpus.probes["HW-PRB-0001"]
    assert sorted(f["path"] for f in plan["read_set_files"]) == sorted(
        {probe.path, *probe.examines})


def test_an_unknown_probe_is_refused_with_the_known_ones() -> None:
    with pytest.raises(UsageError) as caught:
        parse_command(["plan", str(EXAMPLE), "--probe", "HW-PRB-9999"]).run()
    message = str(caught.value)
    assert "--probe HW-PRB-9999" in message
    assert "HW-PRB-0001, HW-PRB-0002, HW-PRB-0003, HW-PRB-0004" in message


def test_probe_twice_is_refused() -> None:
    with pytest.raises(UsageError, match="given twice"):
        parse_command(["plan", str(EXAMPLE), "--probe", "HW-PRB-0001",
                       "--probe", "HW-PRB-0001"]).run()


def test_run_refuses_probe_with_a_plan_file(tmp_path: Path) -> None:
    plan_file = write_files(tmp_path, {"plan.yaml": "{}\n"}) / "plan.yaml"
    with pytest.raises(UsageError, match="--probe and --plan"):
        parse_command(["run", str(EXAMPLE), "--plan", str(plan_file), "--probe", "HW-PRB-0001",
                       "--batch-dir", str(tmp_path / "b")]).run()
    assert not (tmp_path / "b").exists()


def test_sizing_says_two_repetitions_detect_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    out, _ = _plan(capsys, str(EXAMPLE), "--tier", "campaign")
    assert ("tier campaign: none: 2 repetitions cannot tell any difference from noise at 95%"
            in out)
    assert "from a base rate of 50%" in out
    assert "tier regression" not in out  # the chosen tier only


def test_sizing_is_never_in_the_plan_file(capsys: pytest.CaptureFixture[str]) -> None:
    out, err = _plan(capsys, str(EXAMPLE), "--format", "yaml")
    assert "sizing" not in out and "sizing" in err


def _ledger_figures(batch: Path) -> tuple[float, int, float]:
    """Spend (USD), recorded sessions, summed attempt seconds, read off the ledger's JSON."""
    finals = [json.loads(line) for line in (batch / "ledger.jsonl").read_text().splitlines()]
    finals = [r for r in finals if r["kind"] == "final"]
    last = {(r["arm"], r["probe"], r["session"]): r["state"] for r in finals}
    return (sum(float(r["cost_usd"] or 0) for r in finals),
            sum(state == "recorded" for state in last.values()),
            sum(r["duration_s"] or 0.0 for r in finals))


def test_from_batch_projects_cost_and_wall(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    batch = tmp_path / "b"
    shutil.copytree(FORMAT2, batch)
    spend, recorded, seconds = _ledger_figures(batch)
    out, _ = _plan(capsys, str(EXAMPLE), "--from", str(batch), "--concurrency", "4")
    cents = spend * 100 / recorded
    assert (f"cost: {cents * 16:.2f} cents = 16 sessions x {cents:.2f} cents per recorded "
            "session\n") in out
    per_s = seconds / recorded
    assert f"= 16 sessions x {per_s:.1f} s per recorded session / concurrency 4" in out
    assert f"wall time: about {16 * per_s / 4:.0f} s" in out
    # the fixture ran against the scripted provider: its figures project no real batch
    assert "that batch ran against the scripted provider" in out


def test_from_a_batch_of_a_real_provider_has_no_scripted_note(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    batch = tmp_path / "b"
    shutil.copytree(FORMAT2, batch)
    config = batch / "config.yaml"
    config.write_text(config.read_text().replace("  provider: scripted\n",
                                                 "  provider: anthropic\n"))
    out, _ = _plan(capsys, str(EXAMPLE), "--from", str(batch))
    assert "cost: " in out and "scripted provider" not in out


def test_from_batch_with_an_unknown_cost_says_at_least(tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    batch = tmp_path / "b"
    shutil.copytree(FORMAT2, batch)
    ledger = batch / "ledger.jsonl"
    lines = ledger.read_text().splitlines(keepends=True)
    first_failed = next(i for i, line in enumerate(lines) if '"state":"harness-error"' in line)
    record = json.loads(lines[first_failed])
    record.update(cost_usd=None, cost_known=False)
    lines[first_failed] = json.dumps(record, separators=(",", ":"), sort_keys=True) + "\n"
    ledger.write_text("".join(lines))
    out, _ = _plan(capsys, str(EXAMPLE), "--from", str(batch))
    assert "cost: at least " in out and "1 of its attempts has an unknown cost" in out


def test_from_a_directory_that_is_not_a_batch(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as caught:
        parse_command(["plan", str(EXAMPLE), "--from", str(tmp_path)]).run()
    assert "`plan --from` takes a batch directory" in str(caught.value)  # main: exit 2


def _expecting_corpus(root: Path, expect: dict[str, object]) -> Path:
    files = seal_files()
    front = json.dumps({"id": "HW-PRB-002", "title": "How many retries does the client make",
                        "answers": ["three", "five"], "examines": [], "expect": expect})
    files["docs/probes/client-retries.md"] = f"---\n{front}\n---\n\n# T\n\n## Task\n\nCount.\n"
    return write_files(root, files)


def test_plan_lists_a_probes_expectations(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    root = _expecting_corpus(tmp_path / "c", {"answered": "three", "cites": ["HW-DR-0052"]})
    out, _ = _plan(capsys, str(root), "--probe", "HW-PRB-002")
    assert "  expect (graded by `grade`, never seen by a session):\n    answered: three\n" \
           "    cites: HW-DR-0052\n" in out


def test_run_refuses_a_broken_expectation_before_making_the_batch(tmp_path: Path) -> None:
    root = _expecting_corpus(tmp_path / "c", {"answered": "seven"})
    with pytest.raises(UsageError, match="answered 'seven' is not one of the probe's answers"):
        parse_command(["run", str(root), "--batch-dir", str(tmp_path / "b")]).run()
    assert not (tmp_path / "b").exists()


def test_a_path_the_seal_removes_for_naming_the_probe_is_refused(tmp_path: Path) -> None:
    # seal_corpus: docs/guide/other-probe.md names HW-PRB-002 in its text, so the seal removes
    # it from HW-PRB-002's workspaces; docs/guide/prefix.md names other probes, not that one.
    root = _expecting_corpus(tmp_path / "c", {"not_opened": ["docs/guide/other-probe.md"]})
    with pytest.raises(UsageError) as caught:
        parse_command(["plan", str(root)]).run()
    message = str(caught.value)
    assert "docs/probes/client-retries.md: expect: not_opened: 'docs/guide/other-probe.md' " \
           "is never in a session's workspace (the seal removes it:" in message
    # and how to see which line made the seal remove it
    assert f"`headwater-campaign seal {root} --probe HW-PRB-002 --out DIR --explain`" in message
    with pytest.raises(UsageError, match="the seal removes it"):
        parse_command(["run", str(root), "--batch-dir", str(tmp_path / "b")]).run()
    assert not (tmp_path / "b").exists()


def test_a_path_the_seal_keeps_passes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _expecting_corpus(tmp_path / "c", {"opened": ["docs/guide/prefix.md"]})
    out, _ = _plan(capsys, str(root))
    assert "    opened: docs/guide/prefix.md\n" in out


def test_sizing_of_a_tier_that_can_detect_and_one_of_one_arm(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = write_files(tmp_path / "c", {**seal_files(), ".headwater/probe.yml": probe_yml(tiers={
        "campaign": {"arms": ["present", "absent"], "repetitions": 20},
        "regression": {"arms": ["present"], "repetitions": 1}})})
    out, _ = _plan(capsys, str(root), "--base-rate", "0.3")
    assert "from a base rate of 30%" in out
    assert "tier regression: one arm (present): no difference between arms to detect" in out
    found = re.search(r"tier campaign: 20 repetitions detect ([\d.]+) points \(30% against "
                      r"([\d.]+)%; Fisher's exact test, enumerated\)", out)
    assert found is not None, out
    points, other = float(found[1]), float(found[2])
    assert other == pytest.approx(30 + points, abs=0.06)
    # the definition: at that difference the power is 80%, a point below it is not
    assert fisher_power(20, 0.3, (30 + points + 0.05) / 100) >= 0.8
    assert fisher_power(20, 0.3, (30 + points - 1) / 100) < 0.8
