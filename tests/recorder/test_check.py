"""check-transcript's three answers (docs/cli.md "Exit statuses").

Rule text: "check-transcript: 0 clean, 1 refused (the file breaks the
contract), 4 could not verify." A file that cannot be read is "could not
verify", never a pass and never a refusal.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from recorder._check import EXIT_STATUS, CheckResult, check_transcript_file
from recorder.transcript import Event, Identity, SessionRow, Transcript
from tests.recorder.oracle import write_transcript

DIGEST = "sha256:" + "0" * 64


def transcript() -> Transcript:
    identity = Identity(
        model="m",
        served_version="m-1",
        tree=DIGEST,
        lock=DIGEST,
        selection=DIGEST,
        read_set=DIGEST,
        seed=0,
        harness="headwater-campaign 0.1.0",
        tier="campaign",
        arm="absent",
        at="2026-11-30T12:00:00Z",
        cost_cents=7,
    )
    rows = [SessionRow(probe="p", session="r1", state="recorded", outside_paths=0)]
    return Transcript(
        prose="Outside-workspace paths named: 0",
        identity=identity,
        events=[Event(probe="p", session="r1", calls=[], answer=None)],
        sessions=rows,
    )


def test_clean_file(tmp_path: Path) -> None:
    path = tmp_path / "present.md"
    write_transcript(path, transcript())
    result = check_transcript_file(path)
    assert result == CheckResult("clean", [])
    assert result.exit_status == 0


def test_refused_file_names_rule(tmp_path: Path) -> None:
    path = tmp_path / "present.md"
    write_transcript(path, transcript())
    path.write_text(
        path.read_text(encoding="utf-8").replace("cost_cents: 7", "cost_cents: 7.5"),
        encoding="utf-8",
    )
    result = check_transcript_file(path)
    assert result.verdict == "refused"
    assert result.exit_status == 1
    assert result.reasons[0].endswith("(docs/glossary.md: RC-14)")  # words first, then the code


def test_missing_file_is_unverified(tmp_path: Path) -> None:
    result = check_transcript_file(tmp_path / "absent.md")
    assert result.verdict == "unverified"
    assert result.exit_status == 4
    assert "cannot read" in result.reasons[0]


def test_directory_is_unverified(tmp_path: Path) -> None:
    assert check_transcript_file(tmp_path).verdict == "unverified"


def test_not_utf8_is_refused(tmp_path: Path) -> None:
    # Read whole, the bytes are verified not to be the UTF-8 Markdown of RC-16.
    path = tmp_path / "present.md"
    path.write_bytes(b"prose \xff\xfe\n## Run identity\n")
    result = check_transcript_file(path)
    assert result.verdict == "refused" and result.exit_status == 1
    assert "UTF-8" in result.reasons[0]


def test_crlf_is_refused_with_a_clear_reason(tmp_path: Path) -> None:
    path = tmp_path / "present.md"
    path.write_bytes(b"prose\r\n## Run identity\r\n")
    result = check_transcript_file(path)
    assert result.verdict == "refused"
    assert "CRLF" in result.reasons[0] and "line 1" in result.reasons[0]


def test_permission_denied_is_unverified(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Simulated: the tests may run as root, who reads a mode-000 file anyway.
    path = tmp_path / "present.md"
    write_transcript(path, transcript())

    def denied(self: Path) -> bytes:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "read_bytes", denied)
    result = check_transcript_file(path)
    assert result.verdict == "unverified"
    assert "Permission denied" in result.reasons[0]


def test_exit_status_map() -> None:
    assert dict(EXIT_STATUS) == {"clean": 0, "refused": 1, "unverified": 4}
