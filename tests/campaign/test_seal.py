"""seal_workspace, verify_workspace and the arms (RC-09; docs/sealing.md).

Expected removals are written from the rule text against `corpora.seal_corpus`,
never read back from the code.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from campaign._arms import ARMS, apply_arm, arm_layer_digest
from campaign._corpus import Corpus, load_corpus
from campaign._errors import ArmError, ArmUnsupported, SealRefused, UnknownProbe, WorkspaceNotEmpty
from campaign._seal import SealResult, seal_workspace, verify_workspace, word_pattern
from tests.campaign.corpora import (
    ANSWER_KEY,
    BINARY_BYTES,
    PROBE_001,
    SETTINGS,
    doc,
    probe_yml,
    seal_corpus,
    seal_files,
    write_files,
)

EXAMPLE = Path(__file__).resolve().parents[2] / "campaign" / "example" / "corpus"
LAYER = {"CLAUDE.md", "CLAUDE.local.md", "pkg/sub/CLAUDE.md", ".claude/settings.json",
         ".claude/hooks/log.sh", ".claude/skills/style/SKILL.md", ".mcp.json"}


@pytest.fixture
def corpus(tmp_path: Path) -> Corpus:
    return load_corpus(seal_corpus(tmp_path / "corpus"))


def _seal(corpus: Corpus, tmp_path: Path, probe: str = "HW-PRB-001",
          arm: str = "present") -> tuple[SealResult, Path]:
    out = tmp_path / f"ws-{probe}-{arm}"
    return seal_workspace(corpus, probe_id=probe, arm=arm, out=out), out


def _removed(result: SealResult) -> dict[str, int | None]:
    return {r.path: r.line for r in result.removals}


def test_seal_removes_exactly_what_rc09_names(corpus: Corpus, tmp_path: Path) -> None:
    result, out = _seal(corpus, tmp_path)
    removed = _removed(result)
    shelf = {"docs/probes/retry-budget.md", "docs/probes/client-retries.md",
             "docs/probes/hook-log.md", ".headwater/probe.yml", ".headwater/taxonomy.lock"}
    named = {"docs/guide/by-id.md": 8, "docs/guide/by-path.md": 6, "notes/title.txt": 1}
    assert {p: removed[p] for p in named} == named
    assert removed[ANSWER_KEY] is None and removed["docs/guide/links.md"] == 9
    assert set(removed) == shelf | set(named) | {ANSWER_KEY, "docs/guide/links.md"}
    expected_files = set(corpus.files) - shelf - set(named) - {ANSWER_KEY}
    assert set(result.manifest) == expected_files
    assert not (out / ".git").exists()


def test_seal_reasons_name_how_the_probe_was_named(corpus: Corpus, tmp_path: Path) -> None:
    reasons = {r.path: r.reason for r in _seal(corpus, tmp_path)[0].removals}
    assert "by id" in reasons["docs/guide/by-id.md"]
    assert "by path" in reasons["docs/guide/by-path.md"]
    assert "by title" in reasons["notes/title.txt"]
    assert "by relative link" in reasons["docs/guide/links.md"]


def test_answer_key_naming_line_alone_is_removed(corpus: Corpus, tmp_path: Path) -> None:
    _, out = _seal(corpus, tmp_path)
    before = (corpus.root / "docs/guide/links.md").read_text()
    after = (out / "docs/guide/links.md").read_text()
    assert after == before.replace(
        "See [the run](../runs/2026-09-30/transcript.md) for details.\n", "")
    assert (out / "docs/runs/2026-09-29/transcript.md").exists()  # same file name, other run


def test_fold_outside_docs_that_names_the_probe_is_kept(corpus: Corpus, tmp_path: Path) -> None:
    result, out = _seal(corpus, tmp_path)
    assert (out / "src/retry.py").read_bytes() == (corpus.root / "src/retry.py").read_bytes()
    assert "src/retry.py" not in _removed(result)


def test_fold_kept_only_for_its_own_probe(corpus: Corpus, tmp_path: Path) -> None:
    files = seal_files()
    files["src/retry.py"] = "# see HW-PRB-002 and docs/probes/retry-budget.md\n"
    result, _ = _seal(load_corpus(seal_corpus(tmp_path / "c2", files)), tmp_path, "HW-PRB-002")
    assert "src/retry.py" in _removed(result)


@pytest.mark.parametrize("line", ["Answer: HW-DR-0053.", "hw-dr-0052 is current"])
def test_fold_that_states_an_answer_is_refused(tmp_path: Path, line: str) -> None:
    files = seal_files()
    files["src/retry.py"] = f"# exercised by docs/probes/retry-budget.md\n# {line}\n"
    corpus = load_corpus(seal_corpus(tmp_path / "c", files))
    out = tmp_path / "ws"
    with pytest.raises(SealRefused) as caught:
        seal_workspace(corpus, probe_id="HW-PRB-001", arm="present", out=out)
    assert (caught.value.path, caught.value.line) == ("src/retry.py", 2)
    assert caught.value.exit_status == 2 and "src/retry.py:2" in str(caught.value)
    assert not out.exists()  # refused before anything was written


def test_answer_words_in_any_order_on_one_line_are_stated(tmp_path: Path) -> None:
    files = seal_files()
    files[PROBE_001] = str(files[PROBE_001]).replace('"HW-DR-0053"', '"current HW-DR-0053"')
    files["src/retry.py"] = "# docs/probes/retry-budget.md\n# HW-DR-0053 is current\n"
    with pytest.raises(SealRefused):
        _seal(load_corpus(seal_corpus(tmp_path / "c", files)), tmp_path)
    files["src/retry.py"] = "# docs/probes/retry-budget.md\n# HW-DR-0053\n# current\n"
    _seal(load_corpus(seal_corpus(tmp_path / "c2", files)), tmp_path)  # words on two lines


def test_file_naming_a_different_probe_stays(corpus: Corpus, tmp_path: Path) -> None:
    result, out = _seal(corpus, tmp_path)
    assert (out / "docs/guide/other-probe.md").exists()
    result, _ = _seal(corpus, tmp_path, "HW-PRB-002")
    assert "docs/guide/other-probe.md" in _removed(result)
    assert "docs/guide/by-id.md" not in _removed(result)


def test_id_prefix_is_no_match(corpus: Corpus, tmp_path: Path) -> None:
    result, out = _seal(corpus, tmp_path)
    assert (out / "docs/guide/prefix.md").exists()  # HW-PRB-0012 and HW-PRB-001-2
    result, _ = _seal(corpus, tmp_path, "HW-PRB-0012")
    assert _removed(result)["docs/guide/prefix.md"] == 6


@pytest.mark.parametrize(
    ("text", "hit"),
    [("HW-PRB-001", True), ("(HW-PRB-001)", True), ("HW-PRB-001.", True), ("HW-PRB-001-", True),
     ("docs/HW-PRB-001.md", True), ("`hw-prb-001`", True), ("--HW-PRB-001", True),
     ("HW-PRB-0012", False), ("HW-PRB-001-2", False), ("XHW-PRB-001", False),
     ("A-HW-PRB-001", False), ("HW-PRB-001_b", False)],
)
def test_word_boundary_definition(text: str, hit: bool) -> None:
    assert (word_pattern("HW-PRB-001").search(text) is not None) is hit


def test_verification_refuses_a_name_that_survives(corpus: Corpus, tmp_path: Path) -> None:
    _, out = _seal(corpus, tmp_path)
    assert verify_workspace(corpus, "HW-PRB-001", out) == ["assets/logo.png"]
    (out / "docs/guide/other-probe.md").write_text("one\nnow HW-PRB-001 leaks\n")
    with pytest.raises(SealRefused) as caught:
        verify_workspace(corpus, "HW-PRB-001", out)
    assert (caught.value.path, caught.value.line) == ("docs/guide/other-probe.md", 2)


@pytest.mark.parametrize(
    ("path", "text"),
    [("src/retry.py", "see docs/runs/2026-09-30/transcript.md\n"),
     ("notes/x.md", "HW-RUN-0001\n"),
     ("notes/y.md", "the title: Which decision governs the retry budget\n"),
     ("docs/probes/hook-log.md", "a shelf file\n"),
     ("notes/HW-PRB-001.txt", "its path names the probe\n")],
    ids=["fold-names-answer-key", "answer-key-id", "title", "shelf", "path"],
)
def test_verification_refuses_each_kind_of_name(corpus: Corpus, tmp_path: Path, path: str,
                                                text: str) -> None:
    _, out = _seal(corpus, tmp_path)
    write_files(out, {path: text})
    with pytest.raises(SealRefused, match=path.replace(".", r"\.")):
        verify_workspace(corpus, "HW-PRB-001", out)


def test_binary_file_left_alone_and_reported(corpus: Corpus, tmp_path: Path) -> None:
    result, out = _seal(corpus, tmp_path)
    assert (out / "assets/logo.png").read_bytes() == BINARY_BYTES
    assert result.binary == ["assets/logo.png"]


def test_nul_byte_is_binary_even_when_utf8(tmp_path: Path) -> None:
    files = seal_files()
    files["assets/blob.bin"] = b"\x00\x01 HW-PRB-001 but binary"
    result, out = _seal(load_corpus(seal_corpus(tmp_path / "c", files)), tmp_path)
    assert "assets/blob.bin" in result.binary and (out / "assets/blob.bin").exists()


def test_ambiguous_file_name_is_not_a_name(tmp_path: Path) -> None:
    files = seal_files()
    text = "older: docs/runs/2026-09-29/transcript.md\nnewer: transcript.md\n"
    files["ops/runs.txt"] = text
    result, out = _seal(load_corpus(seal_corpus(tmp_path / "c", files)), tmp_path)
    assert (out / "ops/runs.txt").read_text() == text
    assert "ops/runs.txt" not in _removed(result)


def test_not_utf8_is_binary(tmp_path: Path) -> None:
    files = seal_files()
    files["notes/latin1.txt"] = "café HW-PRB-001\n".encode("latin-1")
    result, _ = _seal(load_corpus(seal_corpus(tmp_path / "c", files)), tmp_path)
    assert "notes/latin1.txt" in result.binary and "notes/latin1.txt" in result.manifest


def test_manifest_digests_are_sha256_of_the_workspace_bytes(corpus: Corpus,
                                                             tmp_path: Path) -> None:
    result, out = _seal(corpus, tmp_path, arm="no-hook")
    on_disk = {p.relative_to(out).as_posix(): p for p in out.rglob("*") if p.is_file()}
    assert set(result.manifest) == set(on_disk)
    for rel, path in on_disk.items():
        assert result.manifest[rel] == "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()
    assert result.manifest["src/retry.py"] == corpus.files["src/retry.py"]


def test_out_must_be_new_or_empty(corpus: Corpus, tmp_path: Path) -> None:
    out = tmp_path / "ws"
    write_files(out, {"x": "occupied"})
    with pytest.raises(WorkspaceNotEmpty):
        seal_workspace(corpus, probe_id="HW-PRB-001", arm="present", out=out)
    (out / "x").unlink()
    seal_workspace(corpus, probe_id="HW-PRB-001", arm="present", out=out)


def test_unknown_probe_and_arm_are_refused_before_writing(corpus: Corpus, tmp_path: Path) -> None:
    with pytest.raises(UnknownProbe, match="HW-PRB-404"):
        seal_workspace(corpus, probe_id="HW-PRB-404", arm="present", out=tmp_path / "a")
    with pytest.raises(ArmError, match="presnt"):
        seal_workspace(corpus, probe_id="HW-PRB-001", arm="presnt", out=tmp_path / "b")
    with pytest.raises(ArmUnsupported):
        seal_workspace(corpus, probe_id="HW-PRB-001", arm="mcp", out=tmp_path / "c")
    assert not any((tmp_path / d).exists() for d in "abc")


def test_present_keeps_the_layer(corpus: Corpus, tmp_path: Path) -> None:
    result, _ = _seal(corpus, tmp_path, arm="present")
    assert set(result.manifest) >= LAYER


def test_absent_drops_the_whole_layer(corpus: Corpus, tmp_path: Path) -> None:
    result, out = _seal(corpus, tmp_path, arm="absent")
    assert not LAYER & set(result.manifest)
    assert not (out / ".claude").exists() and not (out / "pkg").exists()
    assert set(_removed(result)) >= LAYER


@pytest.mark.parametrize(
    ("arm", "gone"),
    [("no-skills", {".claude/skills/style/SKILL.md"}),
     ("no-claude-md", {"CLAUDE.md", "CLAUDE.local.md", "pkg/sub/CLAUDE.md"}),
     ("no-hook", {".claude/hooks/log.sh"})],
)
def test_component_arms_remove_one_component(corpus: Corpus, tmp_path: Path, arm: str,
                                             gone: set[str]) -> None:
    result, _ = _seal(corpus, tmp_path, arm=arm)
    assert not gone & set(result.manifest)
    assert LAYER - gone <= set(result.manifest)


def test_no_hook_rewrites_settings_without_hooks(corpus: Corpus, tmp_path: Path) -> None:
    _, out = _seal(corpus, tmp_path, arm="no-hook")
    settings = json.loads((out / ".claude/settings.json").read_text())
    assert settings == {k: v for k, v in SETTINGS.items() if k != "hooks"}


def test_no_hook_removes_a_settings_file_of_hooks_only(tmp_path: Path) -> None:
    ws = write_files(tmp_path / "ws", {".claude/settings.local.json": '{"hooks": {}}',
                                       "sub/.claude/settings.json": '{"model": "x"}'})
    removed = apply_arm(ws, "no-hook")
    assert [r.path for r in removed] == [".claude/settings.local.json"]
    assert not (ws / ".claude").exists() and (ws / "sub/.claude/settings.json").exists()


def test_arm_layer_digest_covers_what_the_arm_keeps(corpus: Corpus) -> None:
    digests = {arm: arm_layer_digest(corpus, arm) for arm in ARMS if arm != "mcp"}
    assert len(set(digests.values())) == len(digests)
    assert digests["absent"] == "sha256:" + hashlib.sha256(b"").hexdigest()
    lines = sorted(f"{corpus.files[p]} {p}\n" for p in LAYER)
    ordered = sorted(LAYER, key=lambda p: p.encode())
    expected = "".join(f"{corpus.files[p]} {p}\n" for p in ordered)
    assert len(lines) == len(LAYER)
    assert digests["present"] == "sha256:" + hashlib.sha256(expected.encode()).hexdigest()


def test_answer_key_named_by_id_in_a_line(tmp_path: Path) -> None:
    files = seal_files()
    files["docs/guide/cites.md"] = doc("HW-GD-0009", "a\nsee HW-RUN-0001 here\nb\n")
    files["ops/runbook.txt"] = "x\nsee docs/runs/2026-09-30/transcript.md\n"
    result, out = _seal(load_corpus(seal_corpus(tmp_path / "c", files)), tmp_path)
    assert _removed(result)["docs/guide/cites.md"] == 7
    assert (out / "ops/runbook.txt").read_text() == "x\n"


def test_symlinks_are_not_copied(tmp_path: Path) -> None:
    root = seal_corpus(tmp_path / "c")
    (root / "notes/link.txt").symlink_to("/etc/hostname")
    result, out = _seal(load_corpus(root), tmp_path)
    assert "notes/link.txt" in _removed(result) and not (out / "notes/link.txt").exists()


def test_no_probe_yml_declarations_needed(tmp_path: Path) -> None:
    files = seal_files()
    files[".headwater/probe.yml"] = probe_yml()
    result, out = _seal(load_corpus(seal_corpus(tmp_path / "c", files)), tmp_path)
    assert "src/retry.py" in _removed(result)  # not a fold any more: it names the probe
    assert (out / ANSWER_KEY).exists()  # not an answer key any more


@pytest.mark.skipif(not EXAMPLE.is_dir(), reason="the bundled example corpus is not written yet")
@pytest.mark.parametrize("arm", ["present", "absent"])
def test_example_corpus_seals_every_probe(tmp_path: Path, arm: str) -> None:
    corpus = load_corpus(EXAMPLE)
    for probe in corpus.probes:
        result, out = _seal(corpus, tmp_path, probe, arm)
        assert not [p for p in result.manifest if p.startswith(("docs/probes/", ".headwater/"))]
        for key in corpus.answer_keys_of(probe):
            assert key not in result.manifest
        assert verify_workspace(corpus, probe, out) == result.binary
