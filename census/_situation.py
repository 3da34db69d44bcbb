"""A recorded situation as the census replays it: its ``situation.json``, scripts and files.

One directory per situation (tests/fixtures/census/situations/<name>/, docs/census.md):
``situation.json`` (format 1: the prompt, the harness arguments after ``-p PROMPT
--output-format stream-json --verbose``, extra environment, a stop signal, read-only
mounts, a timeout, whether it is best effort), ``scripts/*.json`` (the scripted provider's
scripts, `demo.load_scripts`), ``workspace/`` (the files before the run) and, optionally,
``config/`` (the config directory's files before the run).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TypeAlias

from demo import SITUATION_FILE, SituationSpec, read_situation

__all__ = ["SITUATION_FILE", "LoadedSituation", "Situation", "SituationError", "load_situation",
           "load_situations"]

Situation: TypeAlias = SituationSpec
"""``situation.json`` of format 1, as the scripted provider's package defines it
(`demo.SituationSpec`: the situations and their provider's faults are written together)."""


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
        SituationError: the file is missing, not JSON, breaks format 1 (`demo.read_situation`),
            names another directory than its own, or a mount's fixture or the scripts are
            missing.
    """
    path = directory / SITUATION_FILE
    try:
        situation = read_situation(directory)
    except ValueError as exc:
        raise SituationError(str(exc)) from exc
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
