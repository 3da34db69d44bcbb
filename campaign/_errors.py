"""Errors raised by the campaign package for bad input (exit status 2, docs/cli.md).

* CampaignError                 - base class; ``exit_status`` 2 (usage or bad input)
  x CorpusError                 - a corpus file breaks the layout the planner reads
  x UnknownTool                 - an allowed-tools entry the pinned harness does not know
  x UnknownProbe                - a probe id that is not on the shelf ``docs/probes/``
  x PlanError                   - a plan cannot be composed or a plan file cannot be read
    x UnknownTier               - a tier that ``probe.yml`` does not declare
    x TreeMismatch              - ``--plan FILE`` names another corpus tree
  x SealError                   - a workspace cannot be sealed
    x SealRefused               - RC-09 refuses the workspace (``refused-seal``)
    x WorkspaceNotEmpty         - the seal's output directory is not new or empty
  x ArmError                    - an arm is unknown, or cannot be applied to a workspace

Every message names the input (a file, a probe, a tier) and the rule it breaks;
the same facts are kept as attributes so callers never parse a message.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar


class CampaignError(Exception):
    """Base class for every error raised by `campaign` for bad input.

    ``exit_status`` is the CLI's status for the error (docs/cli.md: 2 for usage
    or bad input). ``record`` maps `SealRefused` to 12 itself.
    """

    exit_status: ClassVar[int] = 2


class CorpusError(CampaignError):
    """A corpus file breaks the layout the built-in planner reads, or there is no corpus.

    Raised by `load_corpus`; never for a seal refusal (that is `SealRefused`).
    The message always names the corpus root: ``corpus /abs/root: docs/a.md:
    <problem>``, or ``corpus /abs/root: <problem>`` for the root itself.
    """

    def __init__(self, root: str, path: str | None, problem: str) -> None:
        where = f"corpus {root}: {path}: " if path else f"corpus {root}: "
        super().__init__(where + problem)
        self.root = root
        """The corpus root as given to `load_corpus`."""
        self.path = path
        """The corpus-relative POSIX path the problem is in; None for the root itself."""
        self.problem = problem
        """What is wrong, in words (a rule code may follow, never alone)."""


class UnknownTool(CampaignError):
    """An allowed-tools entry the pinned harness does not know (`campaign.corpus._tools`).

    Raised when a plan is composed or a plan file is read, before anything is
    spent: a name the harness does not know would silently allow nothing.
    """

    def __init__(self, tool: str, problem: str, *, source: str, version: str,
                 known: Iterable[str]) -> None:
        self.tool = tool
        self.problem = problem
        """Why ``tool`` is refused (a near name when there is one)."""
        self.source = source
        """Where the list is: ``.headwater/probe.yml`` or the plan file."""
        self.version = version
        """The pinned Claude Code version whose tool list applies."""
        self.known = tuple(known)
        """The tool names that version knows, sorted."""
        super().__init__(
            f"{source}: allowed tools: {problem}. Claude Code {version} knows "
            f"{', '.join(self.known)}. Also accepted: a permission rule over one of these, "
            "such as Bash(git log:*), and mcp__<server> or mcp__<server>__<tool> for a server "
            "the corpus's .mcp.json declares (docs/plan.md, \"Allowed tools\")"
        )


class UnknownProbe(CampaignError):
    """A probe id that is not on the corpus's shelf ``docs/probes/``."""

    def __init__(self, probe_id: str, known: Iterable[str]) -> None:
        self.probe_id = probe_id
        self.known = tuple(sorted(known))
        super().__init__(
            f"probe {probe_id!r} is not on the shelf docs/probes/ "
            f"(known: {', '.join(self.known) or 'none'})"
        )


class PlanError(CampaignError):
    """A plan cannot be composed, or a plan file cannot be read (exit 2)."""

    def __init__(self, source: str, problem: str) -> None:
        super().__init__(f"plan {source}: {problem}")
        self.source = source
        """The plan file, or ``tier <name>`` when composing."""
        self.problem = problem


class UnknownTier(PlanError):
    """A tier that ``.headwater/probe.yml`` does not declare."""

    def __init__(self, tier: str, known: Iterable[str], *, corpus_root: str | None = None) -> None:
        self.tier = tier
        self.known = tuple(sorted(known))
        where = f"corpus {corpus_root}: " if corpus_root else ""
        super().__init__(
            f"tier {tier!r}",
            f"{where}.headwater/probe.yml declares no such tier "
            f"(it declares: {', '.join(self.known) or 'none'})",
        )


class TreeMismatch(PlanError):
    """``--plan FILE`` was composed over another corpus tree (docs/plan.md, `tree`)."""

    def __init__(self, plan_file: str, plan_tree: str, corpus_tree: str) -> None:
        self.plan_tree = plan_tree
        self.corpus_tree = corpus_tree
        super().__init__(
            plan_file,
            f"tree {plan_tree} differs from the corpus tree {corpus_tree}; "
            "the corpus changed since the plan was composed",
        )


class SealError(CampaignError):
    """Base class for errors of `seal_workspace`."""


class SealRefused(SealError):
    """RC-09 refuses the workspace of ``probe_id``: no session may run in it.

    Raised for a declared fold that states a declared answer or is binary
    (before anything is copied), for a corpus that changed since it was
    loaded, and by the verification pass (the workspace is then left as
    built, for inspection). A session that was refused is ``refused-seal``.
    """

    def __init__(self, probe_id: str, path: str, line: int | None, reason: str) -> None:
        self.probe_id = probe_id
        self.path = path
        """Workspace- (= corpus-) relative POSIX path of the offending file."""
        self.line = line
        """1-based line of the offending text, or None when the whole file is at fault."""
        self.reason = reason
        where = f"{path}:{line}" if line is not None else path
        super().__init__(f"the seal of {probe_id} is refused: {where}: {reason} (the workspace "
                         "may not name its probe or an answer key; docs/glossary.md: RC-09)")


class WorkspaceNotEmpty(SealError):
    """The output directory of a seal exists and is not an empty directory."""

    def __init__(self, path: str) -> None:
        self.path = path
        super().__init__(f"workspace {path} exists and is not an empty directory")


class ArmError(CampaignError):
    """An arm cannot be applied: unknown, a settings file or ``.mcp.json`` it must read is not
    a JSON object, or (`arms_without_effect`, at the CLI) it would change nothing."""

    def __init__(self, arm: str, reason: str) -> None:
        self.arm = arm
        self.reason = reason
        super().__init__(f"arm {arm!r}: {reason}")
