"""A recorded situation's spec: ``situation.json`` of tests/fixtures/census/situations/<name>/.

A situation is one of the 41 captures of the pinned CLI (tests/fixtures/captures/), converted
once to what the census replays: ``situation.json`` (this model), ``scripts/*.json`` (the
scripted provider's scripts, `demo.load_scripts`), ``workspace/`` (the files before the run)
and, optionally, ``config/`` (the config directory's files before the run). The census
runner gives the sandbox, the provider's URL and the key; the spec holds only what differs
between situations: the prompt, the harness arguments, extra environment, a stop signal,
read-only mounts and a timeout.
"""

from __future__ import annotations

import json
from pathlib import Path, PurePosixPath
from typing import Final, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from recorder import describe_errors

SITUATION_FILE: Final = "situation.json"
"""The file that makes a directory a situation."""
RUNNER_ARGS: Final = frozenset({"-p", "--print", "--output-format", "--verbose"})
"""Harness arguments the runner itself puts first (``-p PROMPT --output-format stream-json
--verbose``): a situation's ``args`` never repeat them."""
RUNNER_ENV: Final = frozenset({"ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", "HOME",
                               "CLAUDE_CONFIG_DIR", "PATH"})
"""Environment the runner and its sandbox give every session: a situation never sets it."""


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Stop(_Strict):
    """The signal the runner sends the harness ``after_s`` seconds after it started."""

    signal: Literal["SIGTERM", "SIGINT", "SIGKILL"]
    after_s: float = Field(gt=0)


class Mount(_Strict):
    """A fixture of the situation's directory, bound read-only at ``at`` inside the sandbox."""

    fixture: str = Field(min_length=1)
    """A path relative to the situation's directory (a file or a directory)."""
    at: str = Field(pattern=r"^/opt/[A-Za-z0-9_./-]+$")
    """The absolute path inside the sandbox, under ``/opt`` (e.g. ``/opt/mcp/echo.py``)."""

    @model_validator(mode="after")
    def _inside(self) -> Self:
        fixture = PurePosixPath(self.fixture)
        if fixture.is_absolute() or ".." in fixture.parts:
            raise ValueError(f"a mount's fixture is a path inside the situation's directory, "
                             f"got {self.fixture!r}")
        if ".." in PurePosixPath(self.at).parts:
            raise ValueError(f"a mount's place is a plain path under /opt, got {self.at!r}")
        return self


class SituationSpec(_Strict):
    """``situation.json`` of format 1 (every key written, docs/provider.md "Situations")."""

    format: Literal[1]
    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    """The situation's name: its directory's and its capture's (``f_cut_once``)."""
    shows: str = Field(min_length=1, pattern=r"^[^\n]+$")
    """One line: what the situation shows (and, when best effort, why)."""
    prompt: str = Field(min_length=1)
    """The ``-p`` text; every script's ``match`` of the main conversation is a phrase of it."""
    args: list[str]
    """The harness arguments after ``-p PROMPT --output-format stream-json --verbose``."""
    env: dict[str, str] = Field(default_factory=dict)
    """Extra environment (e.g. ``CLAUDE_CODE_MAX_RETRIES``), never `RUNNER_ENV`."""
    stop: Stop | None = None
    mounts: list[Mount] = Field(default_factory=list)
    timeout_s: float = Field(gt=0, le=600)
    best_effort: bool = False
    """True when the census's sandbox cannot reproduce the capture faithfully."""
    omit_verbose: bool = False
    """Leave ``--verbose`` out (m_no_verbose: what the harness does without it)."""

    @model_validator(mode="after")
    def _runner_owns(self) -> Self:
        repeated = sorted(RUNNER_ARGS.intersection(self.args))
        if repeated:
            raise ValueError(f"args repeat {', '.join(repeated)}: the runner puts -p PROMPT "
                             "--output-format stream-json --verbose first itself")
        owned = sorted(RUNNER_ENV.intersection(self.env))
        if owned:
            raise ValueError(f"env sets {', '.join(owned)}: the runner and its sandbox give "
                             "every session those")
        return self


def read_situation(directory: Path) -> SituationSpec:
    """Read and check ``directory/situation.json``.

    Raises:
        ValueError: the file cannot be read, is not JSON, breaks `SituationSpec`, or names
            another situation than its directory (the message names the file).
    """
    path = directory / SITUATION_FILE
    try:
        spec = SituationSpec.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except OSError as exc:
        raise ValueError(f"{path}: cannot be read: {exc.strerror or exc}") from exc
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not JSON: {exc.msg} at line {exc.lineno}") from exc
    except ValidationError as exc:
        raise ValueError(f"{path}: {'; '.join(describe_errors(exc))}") from exc
    if spec.name != directory.name:
        raise ValueError(f"{path}: its name {spec.name!r} is not its directory's "
                         f"({directory.name!r})")
    return spec
