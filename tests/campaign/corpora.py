"""Builders of small synthetic corpora under tmp_path for the corpus, plan and seal tests.

Every builder writes plain files and returns the corpus root; nothing here
reads the bundled example corpus or anything outside the test's directory.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

BINARY_BYTES = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR HW-PRB-001 \xff\xfe"
"""A binary file (NUL in the first bytes, not UTF-8) that even names the probe."""


def write_files(root: Path, files: Mapping[str, str | bytes]) -> Path:
    """Write each ``relpath -> text or bytes`` under ``root`` (text as UTF-8, no newline added)."""
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_bytes(content.encode("utf-8"))
    return root


def probe_yml(**overrides: Any) -> str:
    """A valid ``.headwater/probe.yml`` (as JSON, which is YAML), with keys replaced or added.

    A value of None removes the key.
    """
    config: dict[str, Any] = {
        "tiers": {
            "campaign": {"arms": ["present", "absent"], "repetitions": 2},
            "regression": {"arms": ["present"], "repetitions": 1},
        },
        "tools": ["Read", "Grep", "Glob"],
        "model": "claude-test-1",
    }
    config.update(overrides)
    return json.dumps({k: v for k, v in config.items() if v is not None}, indent=2) + "\n"


def probe_doc(probe_id: str, title: str, *, answers: Iterable[str] = (),
              examines: Iterable[str] = (), task: str = "Do the task.\n",
              after: str = "") -> str:
    """A probe file: front matter, a ``# title``, ``## Task`` with ``task``, then ``after``."""
    front = json.dumps({"id": probe_id, "title": title, "answers": list(answers),
                        "examines": list(examines)})
    return f"---\n{front}\n---\n\n# {title}\n\n## Task\n\n{task}\n{after}"


def doc(doc_id: str, body: str) -> str:
    """A corpus document with ``id:`` front matter and ``body``."""
    return f"---\nid: {doc_id}\nkind: note\n---\n\n{body}"


def minimal_corpus(root: Path) -> Path:
    """Three files: probe.yml (no lock file), one probe, the one document it examines."""
    return write_files(root, {
        ".headwater/probe.yml": probe_yml(),
        "docs/probes/p1.md": probe_doc("HW-PRB-0001", "Where is the budget",
                                       answers=["budget"], examines=["docs/a.md"]),
        "docs/a.md": doc("HW-DOC-0001", "The budget lives here.\n"),
    })


TITLE_001 = "Which decision governs the retry budget"
PROBE_001 = "docs/probes/retry-budget.md"
ANSWER_KEY = "docs/runs/2026-09-30/transcript.md"
SETTINGS = {"hooks": {"PostToolUse": [{"matcher": "*", "hooks": [
    {"type": "command", "command": "sh .claude/hooks/log.sh"}]}]},
    "permissions": {"deny": ["WebFetch"]}}


def seal_files() -> dict[str, str | bytes]:
    """The files of `seal_corpus`; tests edit this mapping to build variants."""
    return {
        ".headwater/probe.yml": probe_yml(
            folds={"HW-PRB-001": ["src/retry.py"]},
            answer_keys={"HW-PRB-001": [ANSWER_KEY]},
        ),
        ".headwater/taxonomy.lock": "lock v1\n",
        PROBE_001: probe_doc("HW-PRB-001", TITLE_001, answers=["HW-DR-0052", "HW-DR-0053"],
                             examines=["docs/decisions/HW-DR-0052.md"]),
        "docs/probes/client-retries.md": probe_doc(
            "HW-PRB-002", "How many retries does the client make", answers=["three", "five"],
            examines=["docs/decisions/HW-DR-0052.md"]),
        "docs/probes/hook-log.md": probe_doc("HW-PRB-0012", "Which hook logs intents"),
        "docs/decisions/HW-DR-0052.md": doc("HW-DR-0052", "The client retries three times.\n"),
        "docs/decisions/HW-DR-0053.md": doc("HW-DR-0053", "Superseded retry rule.\n"),
        "docs/guide/by-id.md": doc("HW-GD-0001", "Intro.\n\nSee HW-PRB-001 for the probe.\n"),
        "docs/guide/by-path.md": doc("HW-GD-0002",
                                     "The shelf file is docs/probes/retry-budget.md.\n"),
        "docs/guide/links.md": doc("HW-GD-0003", "# Links\n\nIntro line.\n"
                                   "See [the run](../runs/2026-09-30/transcript.md) for details.\n"
                                   "Closing line.\n"),
        "docs/guide/other-probe.md": doc("HW-GD-0004", "HW-PRB-002 asks about client retries.\n"),
        "docs/guide/prefix.md": doc("HW-GD-0005", "HW-PRB-0012 and HW-PRB-001-2 are other ids.\n"),
        ANSWER_KEY: doc("HW-RUN-0001", "Answer: HW-DR-0052\n"),
        "docs/runs/2026-09-29/transcript.md": doc("HW-RUN-0002", "An older run.\n"),
        "notes/title.txt": "We asked: which decision\ngoverns the RETRY budget?\n",
        "src/retry.py": "# exercised by docs/probes/retry-budget.md\nBUDGET = 3\n",
        "assets/logo.png": BINARY_BYTES,
        "CLAUDE.md": "House rules.\n",
        "CLAUDE.local.md": "Local rules.\n",
        "pkg/sub/CLAUDE.md": "Nested rules.\n",
        ".claude/settings.json": json.dumps(SETTINGS, indent=2) + "\n",
        ".claude/hooks/log.sh": "#!/bin/sh\necho logged\n",
        ".claude/skills/style/SKILL.md": "---\nname: style\n---\nWrite plainly.\n",
        ".mcp.json": '{"mcpServers": {}}\n',
        ".git/HEAD": "ref: refs/heads/main\n",
        ".git/objects/ab/cdef": "HW-PRB-001\n",
    }


def seal_corpus(root: Path, files: Mapping[str, str | bytes] | None = None) -> Path:
    """Three probes (HW-PRB-001, HW-PRB-002, HW-PRB-0012), a fold, an answer key, a layer.

    Expected removals when sealing HW-PRB-001, from RC-09's text:
    by-id.md (id), by-path.md (path), notes/title.txt (title, outside docs/),
    the answer key, line 9 of links.md (relative link); kept: the fold
    src/retry.py, other-probe.md, prefix.md, the binary logo.
    """
    return write_files(root, seal_files() if files is None else files)
