"""The event of a recorded session (RC-10..RC-13, RC-15; recorder/_event.py, recorder/_findings.py).

Each test names the rule it checks; expected values are written from the rule's text
(docs/recorder.md, docs/glossary.md) and the inputs built here, never read off the code's output.
"""

from __future__ import annotations

import builtins
import io
import os
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from recorder._digest import digest_bytes, digest_file
from recorder._event import CitesScanner, build_event, cites_in_file, produced_artifacts
from recorder._findings import FindingsParser, resolve_checker
from recorder._transform import Observation, ObservedCall
from recorder.transcript import Artifact, Call, Event

# --- the event (RC-10..RC-12, recorder/_event.py) ----------------------------------------------


def _call(tool: str, argument: str, *, digest: str | None = "sha256:" + "a" * 64,
          read_path: str | None = None, is_error: bool = False) -> ObservedCall:
    return ObservedCall(tool=tool, argument=argument, tool_use_id="t", result_digest=digest,
                        result_is_error=is_error, read_path=read_path,
                        outside_paths=frozenset(), in_subagent=False)


def _obs(calls: tuple[ObservedCall, ...] = (), produced: tuple[str, ...] = (),
         final_text: str | None = None, state: str = "recorded") -> Observation:
    return Observation(state=state,  # type: ignore[arg-type]
                       reason="", calls=calls, produced_paths=produced,
                       final_text=final_text, served_model=None, cost_usd=None,
                       claude_code_version=None, anomalies=(), anomaly_count=0,
                       outside_paths=frozenset(), retryable=False, api_error_status=None)


TEXT_DIGEST = "sha256:" + "a" * 64
SEALED = "sha256:" + "5" * 64


def test_event_read_results(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "docs").mkdir(parents=True)
    (ws / "docs" / "sealed.md").write_text("changed after sealing")
    (ws / "made.md").write_text("created by the session")
    (ws / "link-out").symlink_to("/etc")
    calls = (
        _call("Read", "docs/sealed.md", read_path=str(ws / "docs" / "sealed.md")),  # manifest
        _call("Read", "docs/sealed.md", read_path="docs/sealed.md", is_error=True),  # failed
        _call("Read", "made.md", read_path="made.md"),  # created: bytes after the session
        _call("Read", "/etc/hostname", read_path="/etc/hostname"),  # outside
        _call("Read", "link-out/hostname", read_path="link-out/hostname"),  # outside via link
        _call("Read", "gone.md", read_path="gone.md"),  # neither sealed nor present now
        _call("Bash", "cat docs/sealed.md"),  # other tool
        _call("Read", "docs/sealed.md", digest=None, read_path="docs/sealed.md"),  # no result
    )
    event = build_event(_obs(calls), probe="p", session="r1", workspace=ws,
                        manifest={"docs/sealed.md": SEALED}, declared_answers=[], corpus_ids=[])
    got = [c.result if "result" in c.model_fields_set else "ABSENT" for c in event.calls or []]
    assert got == [SEALED, TEXT_DIGEST, digest_bytes(b"created by the session"), TEXT_DIGEST,
                   TEXT_DIGEST, TEXT_DIGEST, TEXT_DIGEST, "ABSENT"]


def test_event_three_states_watched_and_empty() -> None:
    event = build_event(_obs(), probe="p", session="r1", workspace=Path("/workspace"),
                        manifest={}, declared_answers=["yes"], corpus_ids=[])
    assert event.model_dump(exclude_unset=True) == {
        "probe": "p", "session": "r1", "calls": [], "produced": [], "answer": None}


def test_event_only_for_recorded() -> None:
    with pytest.raises(ValueError, match="not 'no-result'"):
        build_event(_obs(state="no-result"), probe="p", session="r1", workspace=Path("/w"),
                    manifest={}, declared_answers=[], corpus_ids=[])


def test_event_answer_from_final_text() -> None:
    event = build_event(_obs(final_text="Checked.\nHW-DR-0052 current"), probe="p", session="r1",
                        workspace=Path("/w"), manifest={}, declared_answers=["current HW-DR-0052"],
                        corpus_ids=[])
    assert event.answer == "current HW-DR-0052"


def test_event_produced_entries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "out.md").write_text("See HW-DR-0052 and (HW-DR-0051), not HW-DR-00521 or XHW-DR-0053.")
    (ws / "escape").symlink_to("/etc")
    opened: list[str] = []
    real_open = Path.open

    def spy_open(self: Path, *args: Any, **kwargs: Any) -> Any:
        opened.append(str(self))
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", spy_open)
    obs = _obs(produced=(str(ws / "out.md"), str(ws / "missing.md"), "/etc/passwd",
                         str(ws / "escape" / "hosts")))
    event = build_event(obs, probe="p", session="r1", workspace=ws, manifest={},
                        declared_answers=[], produced_extra=["out.md", "/var/x", "extra.txt"],
                        corpus_ids=["HW-DR-0051", "HW-DR-0052", "HW-DR-0053", "HW-DR-0521"])
    dumped = [a.model_dump(exclude_unset=True) for a in event.produced or []]
    assert dumped == [
        {"path": "out.md", "result": digest_file(ws / "out.md"),
         "cites": ["HW-DR-0051", "HW-DR-0052"]},
        {"path": "missing.md"},
        {"path": "/etc/passwd"},
        # the name used; a workspace symlink pointing outside is outside: path only
        {"path": "escape/hosts"},
        {"path": "/var/x"},
        {"path": "extra.txt"},
    ]
    assert all(p.startswith(str(ws)) for p in opened)  # never a host file outside


@pytest.mark.parametrize(
    ("text", "cited"),
    [
        ("HW-DR-0052", True), ("x HW-DR-0052.", True), ("docs/HW-DR-0052.md", True),
        ("`HW-DR-0052`", True), ("é HW-DR-0052\n", True),
        ("HW-DR-00521", False), ("XHW-DR-0052", False), ("HW-DR-0052-draft", False),
        ("_HW-DR-0052", False), ("éHW-DR-0052", False), ("HW-DR-0052é", False),
    ],
)
def test_cites_word_boundaries(text: str, cited: bool) -> None:
    assert cites_of([text], ["HW-DR-0052"]) == (["HW-DR-0052"] if cited else [])


def cites_of(pieces: list[str], ids: list[str]) -> list[str]:
    scanner = CitesScanner(ids)
    for i, piece in enumerate(pieces):
        scanner.feed(piece, i == len(pieces) - 1)
    return scanner.cites()


@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 11, 64])
def test_cites_across_piece_boundaries(tmp_path: Path, chunk: int) -> None:
    body = "é HW-DR-00521 A-1 xA-2 HW-DR-0052, B-7é B-8\n"
    ids = ["HW-DR-0052", "HW-DR-00521", "A-1", "A-2", "B-7", "B-8", "B-9"]
    pieces = [body[i:i + chunk] for i in range(0, len(body), chunk)]
    path = tmp_path / "a.md"
    path.write_text(body)
    assert cites_of(pieces, ids) == cites_in_file(path, ids) == [
        "A-1", "B-8", "HW-DR-0052", "HW-DR-00521"]


# --- named corner cases of the recorder's reads ------------------------------------------------

def test_rc10_read_result_is_the_document_digest_never_bytes(tmp_path: Path) -> None:
    """RC-10: a Read's ``result`` is the digest of the document's bytes as sealed, in the plan's
    form ``sha256:<64 hex>`` (the manifest's value: a partial read too); any other tool's is the
    digest of the returned text; the event holds no bytes of either."""
    ws = tmp_path / "ws"
    ws.mkdir()
    body = b"# Decision 52\nstatus: current\n"
    (ws / "d.md").write_bytes(body)
    sealed = digest_bytes(body)  # what the plan writes for this document: sha256 of its bytes
    partial = ObservedCall(tool="Read", argument="d.md", tool_use_id="r", read_path="d.md",
                           result_digest=digest_bytes(b"2\tstatus: current"),
                           result_is_error=False, outside_paths=frozenset(), in_subagent=False)
    grep = _call("Grep", "status", digest=digest_bytes(b"d.md:2:status: current"))
    event = build_event(_obs((partial, grep)), probe="p", session="r1", workspace=ws,
                        manifest={"d.md": sealed}, declared_answers=[], corpus_ids=[])
    assert [c.result for c in event.calls or []] == [sealed,
                                                    digest_bytes(b"d.md:2:status: current")]
    assert sealed.startswith("sha256:") and len(sealed) == 71
    dumped = repr(event.model_dump())
    assert "Decision 52" not in dumped and "status: current" not in dumped


def test_rc11_produced_once_each_and_merged_with_produced_flag(tmp_path: Path) -> None:
    """RC-11: one entry per path named by Edit/Write/MultiEdit/NotebookEdit, however named
    (absolute, relative, with ``..``), plus each ``--produced`` path (relative to the workspace
    unless absolute); a path both name is one entry, in first-named order."""
    ws = tmp_path / "ws"
    (ws / "docs").mkdir(parents=True)
    (ws / "docs" / "a.md").write_text("HW-DR-0052\n")
    (ws / "nb.ipynb").write_text("{}")
    named = (str(ws / "docs" / "a.md"), "docs/../docs/a.md", "nb.ipynb", str(ws / "nb.ipynb"))
    event = build_event(_obs(produced=named), probe="p", session="r1", workspace=ws,
                        manifest={}, declared_answers=[], corpus_ids=["HW-DR-0052"],
                        produced_extra=["docs/a.md", str(ws / "nb.ipynb"), "notes/new.md"])
    assert [a.path for a in event.produced or []] == ["docs/a.md", "nb.ipynb", "notes/new.md"]
    assert event.produced is not None
    assert event.produced[0].cites == ["HW-DR-0052"]
    assert "result" not in event.produced[2].model_fields_set  # never made: path only


def test_rc11_outside_path_is_never_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """RC-11: a produced path outside the workspace (directly, by ``..`` or through a workspace
    symlink) gets ``path`` only, and the transform opens, stats or reads no host file outside
    the workspace to compute anything (no result, no cites, no findings)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    secret = tmp_path / "host-secret.md"
    secret.write_text("HW-DR-0052")
    (ws / "escape").symlink_to(tmp_path)
    touched: list[str] = []
    (ws / "inside.md").write_text("HW-DR-0052")  # read, so the spies are seen to work
    for module, name in ((builtins, "open"), (io, "open"), (os, "open"), (os, "stat"),
                         (os, "lstat"), (os, "readlink"), (Path, "open")):
        real = getattr(module, name)

        def spy(path: Any, *args: Any, _real: Any = real, _link: Any = os.readlink,
                **kwargs: Any) -> Any:
            if isinstance(path, str | bytes | os.PathLike):
                name = os.fsdecode(path)
                if kwargs.get("dir_fd") is not None:  # relative to an open directory
                    name = os.path.join(_link(f"/proc/self/fd/{kwargs['dir_fd']}"), name)
                touched.append(name)
            return _real(path, *args, **kwargs)

        monkeypatch.setattr(module, name, spy)
    artifacts = produced_artifacts(
        [str(secret), "../host-secret.md", "escape/host-secret.md", "inside.md"], workspace=ws,
        corpus_ids=["HW-DR-0052"], findings={"host-secret.md": ["R1"]})
    monkeypatch.undo()
    # One entry per path named: the absolute name and its ../ spelling are one path;
    # escape/host-secret.md is another name (it resolves outside: path only, as named).
    assert [a.model_dump(exclude_unset=True) for a in artifacts] == [
        {"path": str(secret)},
        {"path": "escape/host-secret.md"},
        {"path": "inside.md", "result": digest_bytes(b"HW-DR-0052"), "cites": ["HW-DR-0052"],
         "findings": []}]
    assert any(path.endswith("inside.md") for path in touched)
    assert all(path.startswith(str(ws)) for path in touched), touched


def test_rc11_cites_come_from_the_corpus_id_list_same_for_every_probe(tmp_path: Path) -> None:
    """RC-11: ``cites`` = the sorted, unique corpus ids occurring in the artifact on word
    boundaries; the list is the corpus's, so two probes' sessions producing the same bytes get
    the same cites, and a string that only looks like an id is not cited."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "out.md").write_text("HW-DR-0052 twice: HW-DR-0052; HW-PRB-0001; HW-DR-9999 unknown\n")
    ids = ["HW-PRB-0001", "HW-DR-0052", "HW-DR-0040"]  # probes' ids are corpus ids too
    cites = [build_event(_obs(produced=("out.md",)), probe=probe, session="r1", workspace=ws,
                         manifest={}, declared_answers=[], corpus_ids=ids).produced
             for probe in ("HW-PRB-0001", "HW-PRB-0002")]
    assert cites[0] == cites[1]
    assert cites[0] is not None
    assert cites[0][0].cites == ["HW-DR-0052", "HW-PRB-0001"]


def test_rc11_findings_from_the_checker_map(tmp_path: Path) -> None:
    """RC-11: with a checker's report, each produced file inside the workspace carries the
    sorted unique rules reported over it (``[]``: checked, none); a path outside, or a file the
    session never made, carries no findings key (nothing was checked)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.md").write_text("a")
    (ws / "b.md").write_text("b")
    event = build_event(_obs(produced=("a.md", "b.md", "gone.md", "/etc/x")), probe="p",
                        session="r1", workspace=ws, manifest={}, declared_answers=[],
                        corpus_ids=[], findings={"a.md": ["R2", "R1", "R2"], "c.md": ["R9"]})
    assert [(a.path, a.findings if "findings" in a.model_fields_set else "ABSENT")
            for a in event.produced or []] == [
        ("a.md", ["R1", "R2"]), ("b.md", []), ("gone.md", "ABSENT"), ("/etc/x", "ABSENT")]


def test_rc11_no_checker_no_findings_key(tmp_path: Path) -> None:
    """RC-11: with no checker there is no ``findings`` key, never ``[]``."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.md").write_text("a")
    event = build_event(_obs(produced=("a.md",)), probe="p", session="r1", workspace=ws,
                        manifest={}, declared_answers=[], corpus_ids=[])
    assert event.produced is not None
    assert "findings" not in event.produced[0].model_dump(exclude_unset=True)


@pytest.mark.parametrize(
    ("observed", "unobserved", "key"),
    [
        (Event(probe="p", session="r", calls=[]), Event(probe="p", session="r"), "calls"),
        (Event(probe="p", session="r", produced=[]), Event(probe="p", session="r"), "produced"),
        (Event(probe="p", session="r", answer=None), Event(probe="p", session="r"), "answer"),
        (Artifact(path="a.md", findings=[]), Artifact(path="a.md"), "findings"),
    ],
    ids=["calls", "produced", "answer", "findings"],
)
def test_rc12_three_states_both_ways(observed: Any, unobserved: Any, key: str) -> None:
    """RC-12: watched-and-empty writes the key (``[]`` or ``null``); not watched writes none.
    Both ways: the observed form keeps the key, the unobserved form has no key."""
    assert key in observed.model_dump(exclude_unset=True)
    assert key not in unobserved.model_dump(exclude_unset=True)
    assert observed != unobserved


def test_rc12_recorded_event_is_watched_even_when_empty() -> None:
    """RC-12: a recorded session was watched: ``calls: []``, ``produced: []``, ``answer: null``
    (the rule ran and found nothing), never absent."""
    event = build_event(_obs(), probe="p", session="r1", workspace=Path("/workspace"),
                        manifest={}, declared_answers=["yes"], corpus_ids=[])
    assert event.model_dump(exclude_unset=True) == {
        "probe": "p", "session": "r1", "calls": [], "produced": [], "answer": None}


# --- the checker's interface (recorder/_findings.py) -------------------------------------------

def test_findings_parser_reads_path_rule_lines(tmp_path: Path) -> None:
    parser = FindingsParser(tmp_path)
    for line in (b'{"path": "a.md", "rule": "R2"}', b"", b'{"path": "./a.md", "rule": "R1"}',
                 f'{{"path": "{tmp_path}/b/c.md", "rule": "R1", "message": "x"}}'.encode()):
        parser.feed(line)
    assert parser.error is None
    assert dict(parser.findings()) == {"a.md": ("R1", "R2"), "b/c.md": ("R1",)}


@pytest.mark.parametrize(
    ("line", "said"),
    [(b"not json", "line 1 is not"), (b'{"path": "a.md"}', "line 1 is not"),
     (b'{"path": "", "rule": "R"}', "line 1 is not"), (b'["a.md", "R"]', "line 1 is not"),
     (b'{"path": "../x", "rule": "R"}', "outside the workspace"),
     (b'{"path": "/etc/passwd", "rule": "R"}', "outside the workspace")],
)
def test_findings_parser_refuses_a_bad_line(tmp_path: Path, line: bytes, said: str) -> None:
    """A malformed report is a failed check (never a pass)."""
    parser = FindingsParser(tmp_path)
    parser.feed(line)
    parser.feed(b'{"path": "a.md", "rule": "R"}')
    assert parser.error is not None and said in parser.error


def test_findings_parser_bounds_what_a_check_adds(tmp_path: Path) -> None:
    """A line over 64 KiB, a rule over 256 characters, the 10,001st distinct finding: each a
    failed check, at that line (the numbers from docs/recorder.md, not from the code)."""
    long_line = b'{"path": "a.md", "rule": "R", "pad": "' + b"x" * (64 * 1024) + b'"}'
    for line, said in ((long_line, "line 1 is 65,"),
                       (b'{"path": "a.md", "rule": "' + b"r" * 257 + b'"}', "rule of 257")):
        parser = FindingsParser(tmp_path)
        parser.feed(line)
        assert parser.error is not None and said in parser.error, parser.error
    at_bound = FindingsParser(tmp_path)
    at_bound.feed(b'{"path": "a.md", "rule": "' + b"r" * 256 + b'"}')
    for n in range(1, 10_000):
        at_bound.feed(f'{{"path": "f{n}.md", "rule": "R"}}'.encode())
    at_bound.feed(b'{"path": "f1.md", "rule": "R"}')  # a repeat is no new finding
    assert at_bound.error is None and sum(map(len, at_bound.findings().values())) == 10_000
    at_bound.feed(b'{"path": "g.md", "rule": "R"}')
    assert at_bound.error is not None and "line 10002 is past the 10,000" in at_bound.error


def test_resolve_checker_relative_to_the_corpus(tmp_path: Path) -> None:
    script = tmp_path / ".headwater" / "check.sh"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\n")
    with pytest.raises(ValueError, match="not executable"):
        resolve_checker(".headwater/check.sh --strict", corpus_root=tmp_path)
    script.chmod(0o755)
    assert resolve_checker(".headwater/check.sh --strict 'a b'", corpus_root=tmp_path) == (
        script.resolve(), ["--strict", "a b"])
    for bad in ("", "'unclosed", "missing.sh"):
        with pytest.raises(ValueError):
            resolve_checker(bad, corpus_root=tmp_path)


@pytest.mark.parametrize(
    "data",
    [{"tool": "Read", "argument": "a.md", "reasoning": "x"},
     {"path": "a.md", "reasoning": "x"},
     {"probe": "p", "session": "r1", "reasoning": "x"}],
    ids=["Call", "Artifact", "Event"],
)
def test_rc16_models_refuse_a_key_outside_their_closed_set(data: dict[str, str]) -> None:
    """RC-16: the event's key sets are closed in the models themselves, not only in the reader:
    an otherwise valid mapping with one extra key is refused for that key."""
    models: dict[str, type[Call] | type[Artifact] | type[Event]] = {
        "tool": Call, "path": Artifact, "probe": Event}
    model = models[next(iter(data))]
    with pytest.raises(ValidationError) as info:
        model.model_validate(data)
    assert [(e["type"], e["loc"]) for e in info.value.errors()] == [
        ("extra_forbidden", ("reasoning",))]


def test_event_produced_keeps_one_entry_per_name_even_through_symlinks(tmp_path: Path) -> None:
    # RC-11: one entry per path named. Two names whose symlinks lead to one host
    # file outside the workspace stay two path-only entries, each as named;
    # the host target's path is never written in their place.
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    host = tmp_path / "host-secret.md"
    host.write_text("secret")
    (ws / "report.md").symlink_to(host)
    (ws / "sub" / "n.md").symlink_to(host)
    obs = _obs(produced=(str(ws / "report.md"),))
    event = build_event(obs, probe="p", session="r1", workspace=ws, manifest={},
                        declared_answers=[], produced_extra=["sub/n.md"], corpus_ids=[])
    dumped = [a.model_dump(exclude_unset=True) for a in event.produced or []]
    assert dumped == [{"path": "report.md"}, {"path": "sub/n.md"}]


def test_the_reads_after_a_session_take_at_most_its_read_budget_in_all(tmp_path: Path) -> None:
    """docs/recorder.md: one session's reads after it (Reads of files it created, produced
    files) take at most `MAX_SESSION_READ_BYTES` in all. A 64 MiB sparse file under 40
    names, produced and read: 16 of them fit 1 GiB; the other produced ones keep their
    path, unread and said to be past the budget, the Reads past it keep their tool_result
    digests. Red without the budget: all 40 hashed (and 100,000 names: hours)."""
    from recorder._beneath import MAX_ARTIFACT_BYTES
    from recorder._event import UnreadFile

    with open(tmp_path / "f0", "wb") as f:
        f.truncate(MAX_ARTIFACT_BYTES)
    names = ["f0", *(f"f{n}" for n in range(1, 40))]
    for name in names[1:]:
        os.link(tmp_path / "f0", tmp_path / name)
    zero = digest_bytes(b"\0" * MAX_ARTIFACT_BYTES)
    said = "sha256:" + "a" * 64
    unread: list[UnreadFile] = []
    event = build_event(
        _obs(calls=tuple(_call("Read", n, read_path=n) for n in names), produced=tuple(names)),
        probe="P", session="s1", workspace=tmp_path, manifest={}, declared_answers=[],
        corpus_ids=[], unread=unread)  # fmt: skip
    fit = 16  # docs/recorder.md: 1 GiB in all, 64 MiB each
    results = [c.result for c in event.calls or []]
    assert results == [zero] * fit + [said] * (len(names) - fit)  # the Reads spent it all
    assert [a.result for a in event.produced or []] == [None] * len(names)
    assert len(unread) == len(names) and "read after a session in all" in unread[0].reason
