"""Small real events for the verdict tests: `recorder.transcript.Event` built as the recorder
builds one (three-state keys left out when not observed)."""

from __future__ import annotations

from typing import Any, Final

from recorder.transcript import Artifact, Call, Event

DIGEST: Final = "sha256:" + "0" * 64
WORKSPACE: Final = "/workspace/corpus"
"""The workspace path the sessions saw (config.yaml ``workspace_path``)."""
DOC: Final = "docs/decisions/FX-DR-0001.md"


def call(tool: str, argument: str) -> Call:
    """One call with a result."""
    return Call(tool=tool, argument=argument, result=DIGEST)


def event(**keys: Any) -> Event:
    """An event of probe FX-PRB-0001, session s1, with exactly ``keys`` besides."""
    return Event(probe="FX-PRB-0001", session="s1", **keys)


def artifact(path: str, **keys: Any) -> Artifact:
    """A produced artifact with exactly ``keys`` besides its path."""
    return Artifact(path=path, **keys)
