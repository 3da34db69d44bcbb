"""RC-09's path rules: the one table the seal's plan and its verification both judge by.

A file's path alone can keep it out of a workspace (docs/sealing.md, rules 1
and 3-4). In table order, the first rule a path breaks decides:

=================  =============================================================
rule               a workspace never holds
=================  =============================================================
shelf              a file under ``docs/probes/`` (every probe, with its task)
headwater          a file under ``.headwater/`` (probe.yml names every probe)
answer-key         an answer key of the probe, declared in probe.yml
path-names-probe   a file whose path names the probe by id (a fold excepted)
=================  =============================================================

The plan (`campaign.seal._sealplan`) removes such a file before reading it,
with the rule's `PathRule.removal` as the reason; the verification
(`campaign.seal._seal`) refuses a finished workspace that holds one, with its
`PathRule.refusal`. Both ask `broken_path_rule`, so the two cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from campaign.corpus import HEADWATER, SHELF

if TYPE_CHECKING:
    from ._names import Names


@dataclass(frozen=True, slots=True)
class PathRule:
    """One path rule: which paths break it, and what the plan and the verification say."""

    name: str
    """The rule's name in the table of the module doc."""
    breaks: Callable[[str, Names], bool]
    """True when the workspace-relative POSIX path breaks the rule for the probe of ``names``."""
    removal: str
    """The plan's reason for removing the file; ``{probe}`` stands for the probe's id."""
    refusal: str
    """The verification's reason for refusing the workspace that holds it."""


PATH_RULES: Final[tuple[PathRule, ...]] = (
    PathRule("shelf", lambda rel, names: rel.startswith(SHELF),
             "the probe shelf docs/probes/ never enters a workspace",
             "the probe shelf must not be in a sealed workspace"),
    PathRule("headwater", lambda rel, names: rel.startswith(HEADWATER),
             ".headwater/ never enters a workspace: it names every probe",
             ".headwater/ must not be in a sealed workspace"),
    PathRule("answer-key", lambda rel, names: rel in names.key_paths,
             "an answer key of {probe}, declared in probe.yml",
             "an answer key of the probe is in the workspace"),
    PathRule("path-names-probe",
             lambda rel, names: rel not in names.folds and names.probe_names.in_path(rel),
             "its path names {probe} by id",
             "its path names the probe by id"),
)
"""The table, in the order its rules are asked (the first one broken decides)."""


def broken_path_rule(rel: str, names: Names) -> PathRule | None:
    """The first rule of `PATH_RULES` the path ``rel`` breaks for ``names``' probe; None: none."""
    for rule in PATH_RULES:
        if rule.breaks(rel, names):
            return rule
    return None
