"""``headwater-campaign report``: the terminal form, plain in a pipe, the JSON form, exit 2."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from campaign.report import Report, print_report
from campaign.report._summary import SUMMARY_TITLE
from campaign.report._text import MARK_NOTE, SHARES_NOTE, arm_rows, probe_rows
from tests.report.batches import HandBatch
from tests.report.scenario import scenario_batch


@pytest.fixture(scope="module")
def batch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return scenario_batch(tmp_path_factory.mktemp("cli"))


def _report(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items()
               if k not in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE")}
    environ.update(env or {})
    return subprocess.run([sys.executable, "-m", "campaign", "report", *args],
                          capture_output=True, text=True, timeout=120, check=False, env=environ)


def test_in_a_pipe_it_prints_plain_text_with_both_arms_and_no_control_codes(batch: Path) -> None:
    run = _report(str(batch))
    assert run.returncode == 0, run.stderr
    assert "\x1b" not in run.stdout
    assert run.stdout.startswith(SUMMARY_TITLE)
    assert "present (reference)" in run.stdout and "absent" in run.stdout
    assert "HW-PRB-0001: Title of HW-PRB-0001" in run.stdout
    assert all(ord(ch) < 128 for ch in run.stdout)
    longest = max(len(line) for line in run.stdout.splitlines())
    assert "| planned" in run.stdout and longest < 400  # tables drawn whole, never wrapped


def test_on_a_terminal_it_draws_rich_tables(batch: Path) -> None:
    run = _report(str(batch), env={"FORCE_COLOR": "1"})
    assert run.returncode == 0, run.stderr
    assert "\x1b[" in run.stdout and "\u2502" in run.stdout  # colour codes and box drawing


def test_the_terminal_shows_every_figure_of_every_row(report: Report) -> None:
    out = io.StringIO()
    print_report(report, out)
    lines = out.getvalue().splitlines()
    sections = [(f"{p.id}: {p.title}", probe_rows(p)) for p in report.probes]
    for title, rows in [*sections, ("per arm, over the batch", arm_rows(report))]:
        start = lines.index(title)
        for row in rows:
            line = next(x for x in lines[start:] if x.startswith(f"| {row.label} "))
            assert [v.strip() for v in line.strip("| ").split(" | ")[1:]] == list(row.values)


def test_json_is_one_versioned_object(batch: Path) -> None:
    run = _report(str(batch), "--json")
    assert run.returncode == 0, run.stderr
    data = json.loads(run.stdout)
    assert (data["format"], data["layout"], [c["id"] for c in data["columns"]]) == (
        2, "single", ["present", "absent"])


def test_not_a_batch_exits_2_and_says_so(tmp_path: Path) -> None:
    run = _report(str(tmp_path))
    assert run.returncode == 2
    assert "is not a batch the report can read" in run.stderr and "Traceback" not in run.stderr


def test_batches_that_cannot_merge_exit_2_naming_the_member(tmp_path: Path) -> None:
    paths = []
    for seed in (0, 3):
        b = HandBatch(tmp_path / str(seed), {"HW-PRB-0001": (["yes"], [])}, seed=seed)
        b.attempt("present", "HW-PRB-0001", 1, answer="yes", calls=[])
        paths.append(str(b.close()))
    run = _report(*paths)
    assert run.returncode == 2
    assert "differ in seed (0 against 3)" in run.stderr and "--side-by-side" in run.stderr
    side = _report(*paths, "--side-by-side")
    assert side.returncode == 0, side.stderr
    assert "1:present (reference)" in side.stdout and "2:absent" in side.stdout


@pytest.mark.parametrize("form", [[], ["--json"]], ids=["text", "json"])
def test_a_reader_that_stops_early_ends_it_quietly(tmp_path: Path, form: list[str]) -> None:
    probes: dict[str, tuple[list[str], list[str]]] = {
        f"HW-PRB-{n:04d}": (["yes", "no"], [f"docs/d{n}.md"]) for n in range(120)}
    batch = HandBatch(tmp_path, probes).close()  # far more output than a pipe holds
    with subprocess.Popen([sys.executable, "-m", "campaign", "report", str(batch), *form],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE) as child:
        assert child.stdout is not None and child.stderr is not None
        child.stdout.readline()
        child.stdout.close()  # `| head -1`
        assert child.wait(timeout=120) == 0
        assert child.stderr.read() == b""


def test_how_to_read_the_tables_is_said_once_before_them(report: Report) -> None:
    out = io.StringIO()
    print_report(report, out)
    text = out.getvalue().replace("\n", " ")  # the notes are filled: words, not lines
    assert len(report.probes) > 1 and any(any(r.marked) for p in report.probes
                                          for r in probe_rows(p))
    assert text.count(SHARES_NOTE) == 1 and text.count(MARK_NOTE) == 1
    assert text.index(MARK_NOTE) < text.index("| planned ")


FORMAT2 = Path(__file__).resolve().parents[1] / "fixtures" / "batches" / "format2"


def _format2(tmp_path: Path, *, corpus: Path | None) -> Path:
    """A copy of the format-2 fixture batch whose config.yaml records ``corpus``."""
    import shutil

    batch = tmp_path / "batch"
    shutil.copytree(FORMAT2 / "batch", batch)
    config = batch / "config.yaml"
    where = corpus if corpus is not None else tmp_path / "gone"
    config.write_text(config.read_text().replace("  corpus: /var/tmp/hw-format2/corpus",
                                                 f"  corpus: {where}"))
    return batch


def test_the_command_grades_with_the_grader_and_counts_what_it_counts(tmp_path: Path) -> None:
    import shutil

    from tests.grade.batches import declare

    corpus = tmp_path / "corpus"
    shutil.copytree(FORMAT2 / "corpus", corpus)
    declare(corpus)  # writing expect: moves the read set
    batch = _format2(tmp_path, corpus=corpus)
    run = _report(str(batch), "--json")
    assert run.returncode == 0, run.stderr
    data = json.loads(run.stdout)
    assert data["grading"] == {"grader": "2", "corpus": str(corpus), "moved_read_set": True,
                               "ungraded": None}
    graded = subprocess.run([sys.executable, "-m", "campaign", "grade", str(batch), "--json"],
                            capture_output=True, text=True, timeout=120, check=True)
    for theirs in json.loads(graded.stdout)["probes"]:
        ours = next(p for p in data["probes"] if p["id"] == theirs["id"])
        assert ours["graded"]
        for cell, arm in zip(ours["cells"], theirs["arms"], strict=True):
            assert cell["column"] == arm["arm"]
            assert {k: cell["graded"][k] for k in ("satisfied", "unsatisfied", "not_observed",
                                                   "recorded", "apart")} == {
                k: arm[k] for k in ("satisfied", "unsatisfied", "not_observed", "recorded",
                                    "apart")}
    text = _report(str(batch)).stdout
    assert "graded over a moved read set" in text and "none recorded" in text


def test_no_corpus_where_config_yaml_says_is_ungraded_not_an_error(tmp_path: Path) -> None:
    batch = _format2(tmp_path, corpus=None)
    run = _report(str(batch))
    assert run.returncode == 0, run.stderr
    assert f"ungraded: no corpus at {tmp_path / 'gone'} (the path {batch}/config.yaml " \
           "records)" in run.stdout
    assert "(ungraded)" in run.stdout
    data = json.loads(_report(str(batch), "--json").stdout)
    assert data["grading"]["grader"] is None
    assert data["grading"]["ungraded"].startswith(f"no corpus at {tmp_path / 'gone'}")
