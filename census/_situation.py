"""A recorded situation as the census replays it: its ``situation.json``, scripts and files.

One directory per situation (tests/fixtures/census/situations/<name>/, docs/census.md):
``situation.json`` (format 1: the prompt, the harness arguments after ``-p PROMPT
--output-format stream-json --verbose``, extra environment, a stop signal, read-only
mounts, a timeout, whether it is best effort), ``scripts/*.json`` (the scripted provider's
scripts, `demo.load_scripts`), ``workspace/`` (the files before the run) and, optionally,
``config/`` (the config directory's files before the run).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from recorder import describe_errors

__all__ = ["SITUATION_FILE", "LoadedSituation", "Mount", "Situation", "SituationError", "Stop",
           "load_situation",
           "load_situations"]

SITUATION_FILE: Final = "situation.json"
"""The file that makes a directory a situation."""


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
    at: str = Field(min_length=2)
    """The absolute path inside the sandbox (e.g. ``/opt/mcp/echo.py``)."""

    @field_validator("fixture")
    @classmethod
    def _inside(cls, value: str) -> str:
        pure = PurePosixPath(value)
        if pure.is_absolute() or ".." in pure.parts:
            raise ValueError("a mount's fixture is a relative path inside the situation's "
                             f"directory, got {value!r}")
        return value


class Situation(_Strict):
    """``situation.json`` of format 1 (docs/census.md)."""

    format: Literal[1]
    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.-]+$")
    shows: str
    """One line: what the situation shows (and, when best effort, why)."""
    prompt: str
    args: list[str]
    """The harness arguments after ``-p PROMPT --output-format stream-json --verbose``."""
    env: dict[str, str] = {}
    stop: Stop | None = None
    mounts: list[Mount] = []
    timeout_s: float = Field(gt=0)
    best_effort: bool = False
    """True when the sandbox cannot reproduce the recorded situation faithfully."""
    omit_verbose: bool = False
    """Leave ``--verbose`` out (the situation shows what the harness does without it)."""


class SituationError(ValueError):
    """A situation directory that cannot be read: the message names the file and the rule."""


@dataclass(frozen=True, slots=True)
class LoadedSituation:
    """A situation and where its files are."""

    situation: Situation
    directory: Path

    @property
    def name(self) -> str:
        """The situation's name (its directory's name)."""
        return self.situation.name

    @property
    def scripts(self) -> Path:
        """The directory of its provider scripts."""
        return self.directory / "scripts"

    @property
    def workspace(self) -> Path:
        """The directory of its workspace files before the run."""
        return self.directory / "workspace"

    @property
    def config(self) -> Path | None:
        """The directory of its config files before the run, or None when it has none."""
        config = self.directory / "config"
        return config if config.is_dir() else None


def load_situation(directory: Path) -> LoadedSituation:
    """Read ``directory/situation.json`` and check what it names exists.

    Raises:
        SituationError: the file is missing, not JSON, breaks format 1, names another
            directory than its own, or a mount's fixture or the scripts are missing.
    """
    path = directory / SITUATION_FILE
    try:
        situation = Situation.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except OSError as exc:
        raise SituationError(f"{path}: cannot be read: {exc.strerror or exc}") from exc
    except json.JSONDecodeError as exc:
        raise SituationError(f"{path}: not JSON: {exc}") from exc
    except ValidationError as exc:
        raise SituationError(f"{path}: {'; '.join(describe_errors(exc))}") from exc
    if situation.name != directory.name:
        raise SituationError(f"{path}: its name {situation.name!r} is not its directory's "
                             f"({directory.name!r}): a situation is named by its directory")
    loaded = LoadedSituation(situation, directory)
    if not loaded.scripts.is_dir():
        raise SituationError(f"{directory}: no scripts/ directory (the provider's scripts)")
    for mount in situation.mounts:
        if not (directory / mount.fixture).exists():
            raise SituationError(f"{path}: the mount's fixture {mount.fixture!r} is missing")
    return loaded


def load_situations(root: Path, names: list[str] | None = None) -> list[LoadedSituation]:
    """Every situation under ``root`` (sorted by name), or only ``names``, in that order.

    Raises:
        SituationError: ``root`` holds no situation, a name is not one of them, or a
            situation cannot be read (`load_situation`).
    """
    found = sorted(p.parent.name for p in root.glob(f"*/{SITUATION_FILE}"))
    if not found:
        raise SituationError(f"{root}: no situation there (directories with {SITUATION_FILE})")
    if names is not None:
        unknown = [name for name in names if name not in found]
        if unknown:
            raise SituationError(f"no situation named {', '.join(unknown)} under {root}")
        found = list(names)
    return [load_situation(root / name) for name in found]
