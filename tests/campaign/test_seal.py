"""RC-09: the plan of removals, the executor, the verification (docs/sealing.md).

Expected removals are written from the rule text against `corpora.seal_corpus`
(its docstring lists them), never read back from the code.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import shutil
import subprocess
import sys
import time
import types
from pathlib import Path
from typing import Any

import anyio
import pytest

from campaign._errors import ArmError, SealRefused, UnknownProbe, WorkspaceNotEmpty
from campaign.corpus._corpus import Corpus, load_corpus
from campaign.seal import resolve_session
from campaign.seal._names import Text, doc_names, names_for
from campaign.seal._prefilter import candidates
from campaign.seal._seal import SealResult, explain, plan_seal, seal_workspace, verify_workspace
from sandbox import Child, LiveChildren, spawn
from tests.campaign.corpora import (
    ANSWER_KEY,
    BINARY_BYTES,
    PROBE_001,
    TITLE_001,
    doc,
    probe_yml,
    seal_corpus,
    seal_files,
    write_files,
)

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "demo" / "example" / "corpus"
SHELF_AND_HEADWATER = {"docs/probes/retry-budget.md", "docs/probes/client-retries.md",
                       "docs/probes/hook-log.md", ".headwater/probe.yml",
                       ".headwater/taxonomy.lock"}


@pytest.fixture
def corpus(tmp_path: Path) -> Corpus:
    return load_corpus(seal_corpus(tmp_path / "corpus"))


def _seal(corpus: Corpus, tmp_path: Path, probe: str = "HW-PRB-001",
          arm: str = "present") -> tuple[SealResult, Path]:
    out = tmp_path / f"ws-{probe}-{arm}"
    return seal_workspace(corpus, resolve_session(corpus, probe, arm), out=out), out


def _variant(tmp_path: Path, changes: dict[str, str | bytes]) -> Corpus:
    """`seal_corpus` with ``changes`` (path -> content) written over it."""
    files = seal_files()
    files.update(changes)
    return load_corpus(seal_corpus(tmp_path / "variant", files))


def _files(result: SealResult) -> dict[str, int | None]:
    """Whole-file removals: path -> deciding line."""
    return {r.path: r.line for r in result.removals if r.kind == "file"}


def _reasons(result: SealResult) -> dict[str, str]:
    """Removal reasons by path (the last one when a path has several)."""
    return {r.path: r.reason for r in result.removals}


def _lines(result: SealResult) -> dict[str, list[int | None]]:
    out: dict[str, list[int | None]] = {}
    for r in result.removals:
        if r.kind == "line":
            out.setdefault(r.path, []).append(r.line)
    return out


# --- rule 1 and 3: what never enters, and every file that names the probe -----------------

def test_seal_removes_exactly_what_rc09_names(corpus: Corpus, tmp_path: Path) -> None:
    result, out = _seal(corpus, tmp_path)
    # assets/logo.png is binary and holds the id after two newlines: removed whole (line 3).
    named = {"docs/guide/by-id.md": 8, "docs/guide/by-path.md": 6, "notes/title.txt": 1,
             "assets/logo.png": 3}
    assert _files(result) == {**dict.fromkeys(SHELF_AND_HEADWATER), **named, ANSWER_KEY: None}
    assert _lines(result) == {"docs/guide/links.md": [9]}
    assert set(result.manifest) == set(corpus.files) - SHELF_AND_HEADWATER - set(named) \
        - {ANSWER_KEY}
    assert not (out / ".git").exists() and not (out / ".headwater").exists()


def test_seal_reasons_say_how_the_probe_was_named(corpus: Corpus, tmp_path: Path) -> None:
    reasons = {r.path: r.reason for r in _seal(corpus, tmp_path)[0].removals}
    assert "by id" in reasons["docs/guide/by-id.md"]
    assert "by path" in reasons["docs/guide/by-path.md"]
    assert "by title" in reasons["notes/title.txt"]
    assert "by relative link" in reasons["docs/guide/links.md"]


def test_probe_named_only_by_title_outside_docs(tmp_path: Path) -> None:
    # Any letter case, words split over lines, outside docs/: the file goes.
    corpus = _variant(tmp_path, {"ops/faq.txt": "Q: WHICH decision governs\tthe\nretry budget\n"})
    assert _files(_seal(corpus, tmp_path)[0])["ops/faq.txt"] == 1


@pytest.mark.parametrize("text", ["Which decision governs the retry budgets\n",
                                  "which decision governs the retry budget_v2\n",
                                  "which decision-governs the retry budget\n"])
def test_title_on_word_boundaries_only(tmp_path: Path, text: str) -> None:
    corpus = _variant(tmp_path, {"ops/faq.txt": text})
    assert "ops/faq.txt" not in _files(_seal(corpus, tmp_path)[0])


def test_path_that_holds_the_probe_id_is_removed(tmp_path: Path) -> None:
    files = seal_files()
    files["notes/HW-PRB-001.txt"] = "nothing inside names it\n"
    corpus = load_corpus(seal_corpus(tmp_path / "c2", files))
    assert _files(_seal(corpus, tmp_path)[0])["notes/HW-PRB-001.txt"] is None


@pytest.mark.parametrize(
    ("text", "how"),
    [("see [the probe](../probes/retry%2Dbudget.md#task)\n", "relative link"),
     ("[p]: /docs/probes/retry-budget.md\n", "relative link"),  # the link starts first
     ('<a href="../probes/retry-budget.md?x=1">p</a>\n', "relative link")],
    ids=["percent-encoded-link", "reference-definition", "html-href"],
)
def test_markdown_link_targets_name_the_probe(tmp_path: Path, text: str, how: str) -> None:
    corpus = _variant(tmp_path, {"docs/guide/more.md": doc("HW-GD-0010", text)})
    result = _seal(corpus, tmp_path)[0]
    reason = next(r.reason for r in result.removals if r.path == "docs/guide/more.md")
    assert f"by {how}" in reason


def test_link_resolves_even_when_the_file_name_is_ambiguous(tmp_path: Path) -> None:
    # Another retry-budget.md exists: the bare name stops being a name, a link still is.
    corpus = _variant(tmp_path, {
        "src/retry.py": "BUDGET = 3\n",
        "docs/old/retry-budget.md": doc("HW-GD-0011", "An old page.\n"),
        "docs/guide/a.md": doc("HW-GD-0012", "[p](../probes/retry-budget.md)\n"),
        "docs/guide/b.md": doc("HW-GD-0013", "mentions retry-budget.md only\n"),
        "docs/guide/c.md": doc("HW-GD-0014", "[o](../old/retry-budget.md)\n")})
    files = _files(_seal(corpus, tmp_path)[0])
    assert files["docs/guide/a.md"] == 6
    assert "docs/guide/b.md" not in files and "docs/guide/c.md" not in files


def test_file_naming_a_different_probe_stays(corpus: Corpus, tmp_path: Path) -> None:
    result, out = _seal(corpus, tmp_path)
    assert (out / "docs/guide/other-probe.md").exists()
    result, _ = _seal(corpus, tmp_path, "HW-PRB-002")
    assert _files(result)["docs/guide/other-probe.md"] == 6
    assert "docs/guide/by-id.md" not in _files(result)


def test_id_that_is_a_prefix_of_another_is_no_match(corpus: Corpus, tmp_path: Path) -> None:
    _, out = _seal(corpus, tmp_path)
    assert (out / "docs/guide/prefix.md").exists()  # HW-PRB-0012 and HW-PRB-001-2
    result, _ = _seal(corpus, tmp_path, "HW-PRB-0012")
    assert _files(result)["docs/guide/prefix.md"] == 6


@pytest.mark.parametrize(
    ("text", "hit"),
    [("HW-PRB-001", True), ("(HW-PRB-001)", True), ("HW-PRB-001.", True), ("HW-PRB-001-", True),
     ("docs/HW-PRB-001.md", True), ("`hw-prb-001`", True), ("--HW-PRB-001", True),
     ("é HW-PRB-001", True), ("HW-PRB-0012", False), ("HW-PRB-001-2", False),
     ("XHW-PRB-001", False), ("A-HW-PRB-001", False), ("HW-PRB-001_b", False),
     ("0HW-PRB-001", False)],
)
def test_word_boundary_definition(text: str, hit: bool) -> None:
    names = doc_names("docs/probes/p.md", doc_id="HW-PRB-001", title=None, unique_name=False)
    assert (names.first(Text(text.encode()), "notes/x.md") is not None) is hit


@pytest.mark.parametrize(
    ("text", "hit"),
    [("docs/probes/p.md", True), ("../probes/p.md.", True), ("p.md", True), ("(p.md)", True),
     ("p.md.bak", False), ("xp.md", False), ("p.md-2", False), ("top.md", False),
     ("docs/probes/P.md", False)],
)
def test_path_boundary_definition(text: str, hit: bool) -> None:
    names = doc_names("docs/probes/p.md", doc_id=None, title=None, unique_name=True)
    assert (names.first(Text(text.encode()), "notes/x.md") is not None) is hit


# --- folds --------------------------------------------------------------------------------

def test_fold_that_names_the_probe_by_path_is_kept(corpus: Corpus, tmp_path: Path) -> None:
    result, out = _seal(corpus, tmp_path)
    assert (out / "src/retry.py").read_bytes() == (corpus.root / "src/retry.py").read_bytes()
    assert "src/retry.py" not in _files(result)
    assert [(p, line, how) for p, line, how, _ in result.folds] == [("src/retry.py", 1, "path")]


def test_fold_is_kept_only_for_its_own_probe(tmp_path: Path) -> None:
    corpus = _variant(tmp_path, {"src/retry.py": "# HW-PRB-002 and docs/probes/retry-budget.md\n"})
    assert "src/retry.py" in _files(_seal(corpus, tmp_path, "HW-PRB-002")[0])


@pytest.mark.parametrize("line", ["Answer: HW-DR-0053.", "hw-dr-0052 is current"])
def test_fold_that_states_an_answer_is_refused(tmp_path: Path, line: str) -> None:
    corpus = _variant(tmp_path, {"src/retry.py": f"# by docs/probes/retry-budget.md\n# {line}\n"})
    out = tmp_path / "ws"
    with pytest.raises(SealRefused) as caught:
        seal_workspace(corpus, resolve_session(corpus, "HW-PRB-001", "present"), out=out)
    assert (caught.value.path, caught.value.line) == ("src/retry.py", 2)
    assert caught.value.exit_status == 2 and "src/retry.py:2" in str(caught.value)
    assert "states the declared answer" in str(caught.value)
    assert not out.exists()  # refused before anything was written


def test_answer_words_in_any_order_on_one_line_are_stated(tmp_path: Path) -> None:
    files = seal_files()
    files[PROBE_001] = str(files[PROBE_001]).replace('"HW-DR-0053"', '"current HW-DR-0053"')
    files["src/retry.py"] = "# docs/probes/retry-budget.md\n# HW-DR-0053 is current\n"
    with pytest.raises(SealRefused):
        _seal(load_corpus(seal_corpus(tmp_path / "c", files)), tmp_path)
    files["src/retry.py"] = "# docs/probes/retry-budget.md\n# HW-DR-0053\n# current\n"
    _seal(load_corpus(seal_corpus(tmp_path / "c2", files)), tmp_path)  # words on two lines


def test_binary_fold_is_refused(tmp_path: Path) -> None:
    corpus = _variant(tmp_path, {"src/retry.py": b"\x00binary"})
    with pytest.raises(SealRefused, match="UTF-8 text"):
        _seal(corpus, tmp_path)


# --- rule 4: answer keys ------------------------------------------------------------------

def test_answer_key_named_by_a_relative_link_loses_only_that_line(corpus: Corpus,
                                                                 tmp_path: Path) -> None:
    _, out = _seal(corpus, tmp_path)
    before = (corpus.root / "docs/guide/links.md").read_bytes()
    assert (out / "docs/guide/links.md").read_bytes() == before.replace(
        b"See [the run](../runs/2026-09-30/transcript.md) for details.\n", b"")
    assert not (out / ANSWER_KEY).exists()
    assert (out / "docs/runs/2026-09-29/transcript.md").exists()  # same file name, other run


def test_answer_key_named_by_id_or_path_in_lines(tmp_path: Path) -> None:
    corpus = _variant(tmp_path, {
        "docs/guide/cites.md": doc("HW-GD-0009", "a\nsee HW-RUN-0001 here\nb\n"),
        "ops/runbook.txt": "x\nsee docs/runs/2026-09-30/transcript.md\ny\r\n"})
    result, out = _seal(corpus, tmp_path)
    assert _lines(result) == {"docs/guide/cites.md": [7], "docs/guide/links.md": [9],
                              "ops/runbook.txt": [2]}
    assert (out / "ops/runbook.txt").read_bytes() == b"x\ny\r\n"


def test_ambiguous_file_name_is_not_a_name_of_the_key(tmp_path: Path) -> None:
    text = "older: docs/runs/2026-09-29/transcript.md\nnewer: transcript.md\n"
    result, out = _seal(_variant(tmp_path, {"ops/runs.txt": text}), tmp_path)
    assert (out / "ops/runs.txt").read_text() == text
    assert "ops/runs.txt" not in _lines(result)


def test_dropping_key_lines_that_joins_the_title_removes_the_file(tmp_path: Path) -> None:
    text = "Which decision governs\nsee HW-RUN-0001\nthe retry budget\n"
    result, out = _seal(_variant(tmp_path, {"ops/joined.txt": text}), tmp_path)
    assert "once the answer key's lines are gone" in next(
        r.reason for r in result.removals if r.path == "ops/joined.txt")
    assert not (out / "ops/joined.txt").exists()


# --- binary files, the executor, the manifest --------------------------------------------

def test_binary_file_naming_the_probe_is_removed_whole(corpus: Corpus, tmp_path: Path) -> None:
    # RC-09: every file that names the probe goes; a binary one cannot lose a line.
    assert b"HW-PRB-001" in BINARY_BYTES
    result, out = _seal(corpus, tmp_path)
    assert not (out / "assets/logo.png").exists()
    assert "binary or non-UTF-8" in _reasons(result)["assets/logo.png"]


@pytest.mark.parametrize("data", [b"\x00\x01 nothing named, but binary",
                                  "café, nothing named\n".encode("latin-1")],
                         ids=["nul", "latin1"])
def test_binary_is_a_nul_byte_or_not_utf8_and_left_alone(tmp_path: Path, data: bytes) -> None:
    result, out = _seal(_variant(tmp_path, {"assets/blob.bin": data}), tmp_path)
    assert "assets/blob.bin" in result.binary and (out / "assets/blob.bin").read_bytes() == data


@pytest.mark.parametrize("data", [b"\x00\x01 HW-PRB-001 but binary",
                                  "café HW-PRB-001\n".encode("latin-1")], ids=["nul", "latin1"])
def test_binary_or_non_utf8_naming_the_probe_is_removed(tmp_path: Path, data: bytes) -> None:
    _, out = _seal(_variant(tmp_path, {"assets/blob.bin": data}), tmp_path)
    assert not (out / "assets/blob.bin").exists()


def test_manifest_is_sha256_of_the_workspace_bytes(corpus: Corpus, tmp_path: Path) -> None:
    result, out = _seal(corpus, tmp_path, arm="no-hook")
    on_disk = {p.relative_to(out).as_posix(): p for p in out.rglob("*") if p.is_file()}
    assert set(result.manifest) == set(on_disk)
    for rel, path in on_disk.items():
        assert result.manifest[rel] == "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()
    assert list(result.manifest) == sorted(result.manifest, key=lambda p: p.encode())


def test_mode_bits_are_kept_and_nothing_is_linked(tmp_path: Path) -> None:
    root = seal_corpus(tmp_path / "c")
    (root / "src/retry.py").chmod(0o750)
    _, out = _seal(load_corpus(root), tmp_path)
    assert (out / "src/retry.py").stat().st_mode & 0o777 == 0o750
    assert all(p.stat().st_nlink == 1 for p in out.rglob("*") if p.is_file())
    assert (out / "src/retry.py").stat().st_ino != (root / "src/retry.py").stat().st_ino


def test_out_must_be_new_or_empty(corpus: Corpus, tmp_path: Path) -> None:
    out = write_files(tmp_path / "ws", {"x": "occupied"})
    with pytest.raises(WorkspaceNotEmpty):
        seal_workspace(corpus, resolve_session(corpus, "HW-PRB-001", "present"), out=out)
    (out / "x").unlink()
    seal_workspace(corpus, resolve_session(corpus, "HW-PRB-001", "present"), out=out)


def test_unknown_probe_and_arm_are_refused_before_writing(corpus: Corpus, tmp_path: Path) -> None:
    with pytest.raises(UnknownProbe, match="HW-PRB-404"):
        seal_workspace(corpus, resolve_session(corpus, "HW-PRB-404", "present"), out=tmp_path / "a")
    with pytest.raises(ArmError, match="presnt"):
        seal_workspace(corpus, resolve_session(corpus, "HW-PRB-001", "presnt"), out=tmp_path / "b")
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_symlinks_are_not_copied(tmp_path: Path) -> None:
    root = seal_corpus(tmp_path / "c")
    (root / "notes/link.txt").symlink_to("/etc/hostname")
    result, out = _seal(load_corpus(root), tmp_path)
    assert "notes/link.txt" in _files(result) and not (out / "notes/link.txt").exists()


def test_without_declarations_a_fold_is_an_ordinary_file(tmp_path: Path) -> None:
    result, out = _seal(_variant(tmp_path, {".headwater/probe.yml": probe_yml()}), tmp_path)
    assert "src/retry.py" in _files(result)  # not a fold any more: it names the probe
    assert (out / ANSWER_KEY).exists()  # not an answer key any more


def test_a_corpus_changed_since_loading_is_refused(corpus: Corpus, tmp_path: Path) -> None:
    (corpus.root / "docs/decisions/HW-DR-0053.md").write_text("edited after loading\n")
    with pytest.raises(SealRefused, match="changed since it was loaded"):
        _seal(corpus, tmp_path)


def _clock(monkeypatch: pytest.MonkeyPatch, ahead_s: float) -> None:
    """Loading starts ``ahead_s`` seconds from now, as campaign.corpus._corpus sees it."""
    import campaign.corpus._corpus as corpus_module

    real = time.time_ns
    monkeypatch.setattr(corpus_module, "time",
                        types.SimpleNamespace(time_ns=lambda: real() + int(ahead_s * 1e9)))


@pytest.fixture(autouse=True, params=["fresh", "quiet"])
def loading(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test of this module twice: corpora loaded right after writing them (every file
    searched), and 10 s later (quiet: the prefilter's files only, campaign.seal._prefilter)."""
    _clock(monkeypatch, 10.0 if request.param == "quiet" else 0.0)
    return str(request.param)


def _load_as_if_later(root: Path, monkeypatch: pytest.MonkeyPatch) -> Corpus:
    """Load ``root`` as if 10 s had passed since it was written: every file is quiet."""
    _clock(monkeypatch, 10.0)
    return load_corpus(root)


def test_only_files_quiet_for_two_seconds_before_loading_get_a_signature(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """FileSignature rule: a ctime within QUIET_S of the start of loading gets none."""
    root = seal_corpus(tmp_path / "c")
    _clock(monkeypatch, 0.0)
    assert load_corpus(root).signatures == {}  # all just written
    quiet = _load_as_if_later(root, monkeypatch)
    assert set(quiet.signatures) == set(quiet.files)


def test_a_quiet_file_rewritten_with_its_size_and_mtime_kept_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Same size, mtime put back with utime: only ctime shows the write (FileSignature)."""
    root = seal_corpus(tmp_path / "c")
    corpus = _load_as_if_later(root, monkeypatch)
    path = root / "docs/decisions/HW-DR-0053.md"
    before = path.stat()
    data = path.read_bytes()
    path.write_bytes(data[:-2] + (b"XY" if data[-2:] != b"XY" else b"ZW"))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_size == before.st_size
    with pytest.raises(SealRefused, match="changed since it was loaded"):
        _seal(corpus, tmp_path)


def test_a_quiet_corpus_seals_to_the_digests_it_was_loaded_with(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = seal_corpus(tmp_path / "c")
    corpus = _load_as_if_later(root, monkeypatch)
    result, out = _seal(corpus, tmp_path)
    for rel, digest in result.manifest.items():  # the manifest is of the workspace's bytes
        assert digest == "sha256:" + hashlib.sha256((out / rel).read_bytes()).hexdigest()


def test_plan_seal_writes_nothing_and_agrees_with_the_seal(corpus: Corpus,
                                                         tmp_path: Path) -> None:
    before = sorted(tmp_path.rglob("*"))
    plan = plan_seal(corpus, resolve_session(corpus, "HW-PRB-001", "absent"))
    assert sorted(tmp_path.rglob("*")) == before
    result, _ = _seal(corpus, tmp_path, arm="absent")
    assert plan.removals == result.removals


# --- rule 6: the verification -------------------------------------------------------------

def test_verification_of_a_clean_workspace(corpus: Corpus, tmp_path: Path) -> None:
    result, out = _seal(corpus, tmp_path)
    session = resolve_session(corpus, "HW-PRB-001", "present")
    assert verify_workspace(corpus, session, out) == (result.manifest, [])


def test_verification_names_the_file_and_line(corpus: Corpus, tmp_path: Path) -> None:
    _, out = _seal(corpus, tmp_path)
    (out / "docs/guide/other-probe.md").write_text("one\nnow HW-PRB-001 leaks\n")
    with pytest.raises(SealRefused) as caught:
        verify_workspace(corpus, resolve_session(corpus, "HW-PRB-001", "present"), out)
    assert (caught.value.path, caught.value.line) == ("docs/guide/other-probe.md", 2)
    assert "docs/guide/other-probe.md:2" in str(caught.value)


@pytest.mark.parametrize(
    ("path", "text"),
    [("src/retry.py", "see docs/runs/2026-09-30/transcript.md\n"),
     ("notes/x.md", "HW-RUN-0001\n"),
     ("notes/y.md", f"the title: {TITLE_001}\n"),
     ("notes/z.md", "[l](../docs/probes/retry-budget.md)\n"),
     ("docs/probes/hook-log.md", "a shelf file\n"),
     (".headwater/probe.yml", "{}\n"),
     (ANSWER_KEY, "no name inside\n"),
     ("notes/HW-PRB-001.txt", "its path names the probe\n")],
    ids=["fold-names-answer-key", "answer-key-id", "title", "link", "shelf", "headwater",
         "answer-key-itself", "path"],
)
def test_verification_refuses_each_kind_of_name(corpus: Corpus, tmp_path: Path, path: str,
                                                text: str) -> None:
    _, out = _seal(corpus, tmp_path)
    write_files(out, {path: text})
    with pytest.raises(SealRefused, match=path.replace(".", r"\.")):
        verify_workspace(corpus, resolve_session(corpus, "HW-PRB-001", "present"), out)


def test_verification_refuses_a_symlink(corpus: Corpus, tmp_path: Path) -> None:
    _, out = _seal(corpus, tmp_path)
    (out / "src/link").symlink_to("/etc/hostname")
    with pytest.raises(SealRefused, match="not a regular file"):
        verify_workspace(corpus, resolve_session(corpus, "HW-PRB-001", "present"), out)


def test_the_seals_own_verification_catches_a_bad_executor(
        corpus: Corpus, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A writer that corrupts one copy is refused, though the plan judged the bytes clean."""
    from campaign.seal import _seal as seal_module

    real = seal_module._write

    def corrupting(target: str, data: bytes, mode: int) -> None:
        real(target, data + b"HW-PRB-001\n" if target.endswith("other-probe.md") else data, mode)

    monkeypatch.setattr(seal_module, "_write", corrupting)
    with pytest.raises(SealRefused, match=r"other-probe\.md:7: still names the probe by id"):
        _seal(corpus, tmp_path)


# --- --explain and the CLI ----------------------------------------------------------------

def test_explain_lists_every_removal_and_why(corpus: Corpus, tmp_path: Path) -> None:
    text = explain(_seal(corpus, tmp_path)[0])
    assert "docs/probes/ (3 files)" in text and ".headwater/ (2 files)" in text
    assert "docs/guide/by-id.md:8" in text and "names HW-PRB-001 by id" in text
    assert "docs/guide/links.md:9" in text and "| See [the run]" in text
    assert "src/retry.py:1" in text and "assets/logo.png" in text


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "campaign", *args], capture_output=True,
                          text=True, cwd=REPO, check=False, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO)})


def test_cli_seal_explain_on_the_example_corpus(tmp_path: Path) -> None:
    proc = _cli("seal", "--corpus", str(EXAMPLE), "--probe", "HW-PRB-0002", "--arm", "present",
                "--out", str(tmp_path / "ws"), "--explain")
    assert proc.returncode == 0, proc.stderr
    assert "docs/notes/index-page-size-answer.md" in proc.stdout
    assert "an answer key of HW-PRB-0002" in proc.stdout
    assert "docs/notes/reading-list.md:11" in proc.stdout and "by relative link" in proc.stdout
    proc = _cli("seal", "--corpus", str(EXAMPLE), "--probe", "HW-PRB-0004", "--arm", "absent",
                "--out", str(tmp_path / "ws4"), "--explain")
    assert proc.returncode == 0, proc.stderr
    assert "ROADMAP.md:4" in proc.stdout and "names HW-PRB-0004 by path" in proc.stdout
    assert "CLAUDE.md" in proc.stdout and "harness layer (arm absent)" in proc.stdout


def test_cli_seal_refusal_exits_2(tmp_path: Path) -> None:
    corpus = _variant(tmp_path, {"src/retry.py": "# docs/probes/retry-budget.md\n# HW-DR-0052\n"})
    proc = _cli("seal", "--corpus", str(corpus.root), "--probe", "HW-PRB-001",
                "--out", str(tmp_path / "ws"))
    assert proc.returncode == 2 and "src/retry.py:2" in proc.stderr


@pytest.mark.parametrize("arm", ["present", "absent", "no-hook", "no-skills", "no-claude-md",
                                 "mcp"])
def test_example_corpus_seals_every_probe(tmp_path: Path, arm: str) -> None:
    corpus = load_corpus(EXAMPLE)
    for probe in corpus.probes:
        result, out = _seal(corpus, tmp_path, probe, arm)
        assert not [p for p in result.manifest if p.startswith(("docs/probes/", ".headwater/"))]
        assert not set(corpus.answer_keys_of(probe)) & set(result.manifest)
        session = resolve_session(corpus, probe, "present")
        assert verify_workspace(corpus, session, out) == (result.manifest, result.binary)


def test_seal_non_utf8_file_naming_the_probe_is_removed_whole(tmp_path: Path) -> None:
    # RC-09: every file that names the probe is removed; a Latin-1 (non-UTF-8) file
    # is no exception. A fresh-eyes review found one copied into the workspace.
    root = tmp_path / "corpus"
    shutil.copytree(EXAMPLE, root)
    (root / "docs" / "notes" / "latin1.txt").write_bytes(b"Caf\xe9: see HW-PRB-0001 here\n")
    (root / "notes-binary.bin").write_bytes(b"\x00\x01 HW-PRB-0001 \x02")
    (root / "innocent.bin").write_bytes(b"\x00\x01 nothing here \x02")
    corpus = load_corpus(root)
    session = resolve_session(corpus, "HW-PRB-0001", "present")
    result = seal_workspace(corpus, session, out=tmp_path / "ws")
    removed = {r.path for r in result.removals}
    assert {"docs/notes/latin1.txt", "notes-binary.bin"} <= removed
    assert not (tmp_path / "ws" / "docs" / "notes" / "latin1.txt").exists()
    assert (tmp_path / "ws" / "innocent.bin").exists()


def test_verification_searches_binary_files_too(tmp_path: Path) -> None:
    root = tmp_path / "corpus"
    shutil.copytree(EXAMPLE, root)
    corpus = load_corpus(root)
    ws = tmp_path / "ws"
    seal_workspace(corpus, resolve_session(corpus, "HW-PRB-0001", "present"), out=ws)
    (ws / "planted.bin").write_bytes(b"\xff\xfe HW-PRB-0001 \x00")
    with pytest.raises(SealRefused):
        verify_workspace(corpus, resolve_session(corpus, "HW-PRB-0001", "present"), ws)


# --- the prefilter (campaign/seal/_prefilter.py) ------------------------------------------------

def test_without_grep_the_seal_searches_every_file_and_agrees(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import campaign.seal._prefilter as prefilter

    corpus = _load_as_if_later(seal_corpus(tmp_path / "c"), monkeypatch)
    with_grep, _ = _seal(corpus, tmp_path / "a")
    no_grep = prefilter.GrepCheck(str(tmp_path / "no-grep"))
    assert prefilter.candidates(corpus, names_for(corpus, "HW-PRB-001"), no_grep) is None
    session = dataclasses.replace(resolve_session(corpus, "HW-PRB-001", "present"), grep=no_grep)
    without = seal_workspace(corpus, session, out=tmp_path / "b")
    assert (without.manifest, without.removals) == (with_grep.manifest, with_grep.removals)


def test_the_prefilter_lists_every_file_that_names_the_probe_or_a_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Completeness, file by file, against the matcher itself (campaign.seal._names)."""
    files = seal_files()
    files["ops/mixed.txt"] = "see hW-pRb-001 here\n"
    files["ops/wrapped.txt"] = "WHICH decision\r\n governs\t\tthe\vretry\fbudget\n"
    files["ops/encoded.md"] = "[x](../docs/probes/retry%2Dbudget.md)\n"
    files["ops/nul.bin"] = "\0\0HW-PRB-001\0"
    corpus = _load_as_if_later(seal_corpus(tmp_path / "c", files), monkeypatch)
    names = names_for(corpus, "HW-PRB-001")
    listed = candidates(corpus, names)
    assert listed is not None
    for rel in corpus.files:
        text = Text((corpus.root / rel).read_bytes())
        if names.probe_names.first(text, rel) or any(k.first(text, rel) for k in names.keys):
            assert rel in listed, rel
    assert {"ops/mixed.txt", "ops/wrapped.txt", "ops/encoded.md", "ops/nul.bin"} <= listed
    assert len(listed) < len(corpus.files)  # it does filter


@pytest.mark.timeout(60)
def test_a_seal_in_a_worker_thread_of_the_batch_loop_starts_no_loop_of_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No nested event loop: the seal runs in a worker thread of the batch's trio loop, as a
    session's does (campaign.supervisor._session), and waits for its grep there by blocking.
    ``run_sync`` refuses to start a loop in such a thread, so a prefilter that reached it would
    raise; this one answers, and leaves no grep unreaped."""
    files = {**seal_files(), "notes/leak.md": LEAK}
    corpus = _load_as_if_later(seal_corpus(tmp_path / "c", files), monkeypatch)
    session = resolve_session(corpus, "HW-PRB-001", "present")
    live = LiveChildren()

    def in_the_worker() -> tuple[SealResult, frozenset[str] | None]:
        sealed = seal_workspace(corpus, session, out=tmp_path / "ws")
        return sealed, candidates(corpus, session.names)  # the prefilter's wait, too

    async def batch_loop() -> tuple[SealResult, frozenset[str] | None]:
        with live.tracking():
            return await anyio.to_thread.run_sync(in_the_worker)

    result, listed = anyio.run(batch_loop, backend="trio")
    assert listed is not None and "notes/leak.md" in listed  # grep answered, in the thread
    assert "names HW-PRB-001" in _reasons(result)["notes/leak.md"]
    assert not (tmp_path / "ws" / "notes" / "leak.md").exists()
    assert len(live) == 0  # every grep it spawned (in the thread, so registered) is reaped


@pytest.mark.timeout(30)
def test_a_fifo_in_the_corpus_is_not_opened_by_the_prefilter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = seal_corpus(tmp_path / "c")
    os.mkfifo(root / "notes" / "pipe")
    corpus = _load_as_if_later(root, monkeypatch)
    assert candidates(corpus, names_for(corpus, "HW-PRB-001")) is not None
    _, out = _seal(corpus, tmp_path)
    assert not (out / "notes" / "pipe").exists()


LEAK = "HW-PRB-001 is the probe\n"


def test_a_write_between_the_seals_fstat_and_its_read_is_seen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Same size, after the fstat that gave the size: the fstat after the read shows it."""
    import campaign.seal._sealplan as sealplan

    files = {**seal_files(), "notes/plain.md": "x" * len(LEAK)}
    corpus = _load_as_if_later(seal_corpus(tmp_path / "c", files), monkeypatch)
    real = sealplan.read_all

    def read_all(fd: int, size: int) -> bytes:
        if os.readlink(f"/proc/self/fd/{fd}").endswith("notes/plain.md"):
            (corpus.root / "notes/plain.md").write_text(LEAK)
        return real(fd, size)

    monkeypatch.setattr(sealplan, "read_all", read_all)
    result, out = _seal(corpus, tmp_path)
    assert not (out / "notes/plain.md").exists()
    assert "names HW-PRB-001" in _reasons(result)["notes/plain.md"]


def test_a_directory_swapped_while_grep_runs_turns_the_prefilter_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """grep reads a clean decoy in place of notes/; the swap back is seen in the ctimes."""
    import campaign.seal._prefilter as prefilter

    files = {**seal_files(), "notes/leak.md": LEAK}
    root = seal_corpus(tmp_path / "c", files)
    decoy = tmp_path / "decoy"
    decoy.mkdir()
    (decoy / "leak.md").write_text("x" * len(LEAK))
    corpus = _load_as_if_later(root, monkeypatch)
    real = spawn  # what the prefilter runs grep with

    def swapped(argv: Any, **kwargs: Any) -> Any:
        os.rename(root / "notes", tmp_path / "real-notes")
        os.rename(decoy, root / "notes")
        try:
            child = real(argv, **kwargs)
            assert child.wait_exit_blocking(30)
            return child
        finally:
            os.rename(root / "notes", decoy)
            os.rename(tmp_path / "real-notes", root / "notes")

    monkeypatch.setattr(prefilter, "spawn", swapped)
    assert candidates(corpus, names_for(corpus, "HW-PRB-001")) is None
    _, out = _seal(corpus, tmp_path)
    assert not (out / "notes/leak.md").exists()


def test_only_gnu_grep_at_its_fixed_path_is_trusted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import campaign.seal._prefilter as prefilter

    fake = tmp_path / "grep"
    fake.write_text("#!/bin/sh\necho 'grep (BSD grep, GNU compatible) 2.6.0-FreeBSD'\n")
    fake.chmod(0o755)
    assert prefilter.GrepCheck(str(fake)).gnu() is None
    assert prefilter.GrepCheck().gnu() == prefilter.GREP == "/usr/bin/grep"


def test_the_grep_check_remembers_a_yes_and_asks_again_after_a_no(tmp_path: Path) -> None:
    """GrepCheck (campaign.seal._prefilter): one run per check object once it is GNU grep;
    a no (a loaded host may miss the bound once) is asked again by the next seal."""
    from campaign.seal._prefilter import GrepCheck

    runs = tmp_path / "runs"
    answer = tmp_path / "answer"
    fake = tmp_path / "grep"
    fake.write_text(f'#!/bin/sh\necho run >> {runs}\ncat {answer}\n')
    fake.chmod(0o755)
    answer.write_text("grep (BSD grep) 2.6.0\n")
    check = GrepCheck(str(fake))
    assert check.gnu() is None and check.gnu() is None
    assert runs.read_text().count("run") == 2  # a no is not remembered
    answer.write_text("grep (GNU grep) 3.11\n")
    assert check.gnu() == str(fake) and check.gnu() == str(fake)
    assert runs.read_text().count("run") == 3  # a yes is: asked once more, then never


def test_a_title_holding_a_nul_byte_turns_the_prefilter_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A NUL cannot be a grep argument: no prefilter, rather than a crash."""
    import dataclasses

    corpus = _load_as_if_later(seal_corpus(tmp_path / "c"), monkeypatch)
    names = names_for(corpus, "HW-PRB-001")
    odd = doc_names(names.probe_names.path, doc_id="HW-PRB-001", title="a\0b title",
                    unique_name=True)  # fmt: skip
    assert candidates(corpus, dataclasses.replace(names, probe_names=odd)) is None


class _HeldGrep:
    """Wraps grep's spawn (campaign.seal._prefilter): grep starts only when released, through a
    shell that waits on a FIFO before it execs grep; `release` lets it go and waits for it."""

    def __init__(self, fifo: Path) -> None:
        os.mkfifo(fifo)
        self.fifo = fifo
        self.child: Child | None = None

    def spawn(self, argv: Any, **kwargs: Any) -> Child:
        held = ["/bin/sh", "-c", 'read _ < "$0"; exec "$@"', str(self.fifo), *argv]
        self.child = spawn(held, **kwargs)
        return self.child

    def release(self) -> None:
        assert self.child is not None
        with open(self.fifo, "w") as fifo:
            fifo.write("go\n")
        assert self.child.wait_exit_blocking(30)


def test_grep_done_only_after_the_seal_read_a_file_does_not_vouch_for_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The seal reads leak.md (naming the probe), then the file is cleaned and grep runs: grep's
    list came after the read, so it must not spare leak.md its search."""
    import campaign.seal._prefilter as prefilter
    import campaign.seal._sealplan as sealplan

    files = {**seal_files(), "notes/leak.md": LEAK}
    corpus = _load_as_if_later(seal_corpus(tmp_path / "c", files), monkeypatch)
    held = [_HeldGrep(tmp_path / "fifo")]
    session = resolve_session(corpus, "HW-PRB-001", "present")
    assert session.grep.gnu() is not None  # asked now, before spawn is replaced
    monkeypatch.setattr(prefilter, "spawn", held[0].spawn)
    real = sealplan._read

    def read(path: str) -> Any:
        got = real(path)  # bytes, mode, and the signature of the fstat after the read
        if path.endswith("notes/leak.md"):
            target = corpus.root / "notes/leak.md"
            before = target.stat()
            target.write_bytes(b"x" * len(got[0]))
            os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))
            held[0].release()
        return got

    monkeypatch.setattr(sealplan, "_read", read)
    out = tmp_path / "ws"
    seal_workspace(corpus, session, out=out)
    assert held[0].child is not None and held[0].child.returncode in (0, 1)
    assert not (out / "notes/leak.md").exists() or "HW-PRB-001" not in (
        out / "notes/leak.md").read_text()


def test_a_seal_that_fails_midway_stops_its_grep_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not at a later garbage collection: the traceback keeps the plan's generator alive."""
    import campaign.seal._prefilter as prefilter
    import campaign.seal._seal as seal

    corpus = _load_as_if_later(seal_corpus(tmp_path / "c"), monkeypatch)
    closed: list[bool] = []
    real_close = prefilter.Prefilter.close
    def close(self: Any) -> None:
        closed.append(True)
        real_close(self)

    monkeypatch.setattr(prefilter.Prefilter, "close", close)
    monkeypatch.setattr(seal._Verifier, "check", lambda *a, **k: (_ for _ in ()).throw(
        SealRefused("HW-PRB-001", "x", None, "a failure midway")))
    with pytest.raises(SealRefused, match="midway") as caught:
        _seal(corpus, tmp_path)
    assert caught.value is not None and closed  # the generator is still referenced here


@pytest.mark.timeout(60)
def test_a_grep_that_floods_stderr_cannot_hang_the_seal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import campaign.seal._prefilter as prefilter

    fake = tmp_path / "grep"
    fake.write_text('#!/bin/sh\nif [ "$1" = --version ]; then echo "grep (GNU grep) 3.8"; '
                    'exit 0; fi\nhead -c 200000 /dev/zero >&2\nexit 1\n')
    fake.chmod(0o755)
    corpus = _load_as_if_later(seal_corpus(tmp_path / "c"), monkeypatch)
    grep = prefilter.GrepCheck(str(fake))
    assert grep.gnu() == str(fake)  # it passes for GNU grep, and then floods
    assert candidates(corpus, names_for(corpus, "HW-PRB-001"), grep) is None
