"""A batch's sessions resolved once: one frozen `SessionPlan` per probe and arm.

Everything an attempt needs of its probe and its arm, beyond the plan's own
words, is resolved here once per batch, before any session starts, and never
again per attempt:

* the plan's `PlanProbe` and `PlanArm` themselves (the arm's identity is the
  plan's, ``plan.arm_specs``; never recomputed);
* the probe's `Names` (what its seal searches for), from one `NameCensus` of
  the corpus shared by every probe;
* its folds, checked once (`check_folds`: a fold that states an answer, or is
  binary, refuses the batch before it starts); a `SessionPlan` exists only
  for a probe whose folds passed;
* the corpus's root ``.mcp.json`` declaration (`Corpus.mcp`, read once at
  load by `recorder.read_mcp_declaration`);
* one `GrepCheck` for every seal's prefilter (is the host's grep GNU grep:
  asked by the first seal, remembered once it says yes).

What is read again per attempt is read as a proof, not to decide: the seal's
verification reads the finished workspace back (rule 6), and the init check
takes the servers from the workspace's own ``.mcp.json``, the file the
session's harness loads (after the arm: ``absent`` has none).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from campaign._errors import UnknownProbe
from campaign.plan import check_arm, plan_arm, plan_probe

from ._names import NameCensus, Names
from ._prefilter import GrepCheck
from ._sealplan import check_folds

if TYPE_CHECKING:
    from campaign.corpus import Corpus
    from campaign.plan import PlanArm, PlanProbe
    from recorder import McpDeclaration


@dataclass(frozen=True, slots=True)
class SessionPlan:
    """One probe under one arm, resolved once per batch: what each attempt seals and runs by."""

    probe: PlanProbe
    """The plan's probe (task, declared answers): the very object of ``plan.probes``."""
    arm: PlanArm
    """The plan's arm (allowed tools, identity): the very object of ``plan.arm_specs``."""
    names: Names
    """What the seal of the probe searches for (its folds checked when this was made)."""
    mcp: McpDeclaration
    """The corpus's root ``.mcp.json`` declaration (`Corpus.mcp`)."""
    grep: GrepCheck = field(default_factory=GrepCheck, compare=False)
    """Whether the host's grep is GNU grep, for the seal's prefilter: one check per batch,
    shared by its sessions (`resolve_sessions`)."""

    def __repr__(self) -> str:
        return f"<SessionPlan {self.arm.arm} {self.probe.id}>"


@dataclass(frozen=True, slots=True)
class ResolvedSessions:
    """Every `SessionPlan` of a batch, by (probe id, arm)."""

    sessions: Mapping[tuple[str, str], SessionPlan]

    def of(self, probe: str, arm: str) -> SessionPlan:
        """The resolved plan of ``probe`` under ``arm``.

        Raises:
            LookupError: the batch resolved no such session (a bug: every session a batch
                runs is one of its plan's probes and arms).
        """
        try:
            return self.sessions[probe, arm]
        except KeyError:
            raise LookupError(f"no resolved session for probe {probe!r} under arm {arm!r}; "
                              f"the batch resolved {len(self.sessions)}") from None


def resolve_sessions(corpus: Corpus, probes: Iterable[PlanProbe],
                     arms: Iterable[PlanArm]) -> ResolvedSessions:
    """One `SessionPlan` per probe of ``probes`` and arm of ``arms``: the batch's, once.

    The corpus's name census is taken once, each probe's `Names` built and its
    folds checked once (shared by its arms), each arm's name checked once.

    Raises:
        UnknownProbe: a probe is not on the corpus's shelf.
        ArmError: an arm is unknown.
        SealRefused: a declared fold of a probe states one of its declared answers, or is
            binary (naming the fold and the line).
    """
    arms = tuple(arms)
    for arm in arms:
        check_arm(arm.arm)
    census = NameCensus.of(corpus)
    grep = GrepCheck()  # asked by the first seal, in its worker thread
    sessions: dict[tuple[str, str], SessionPlan] = {}
    for probe in probes:
        names = census.names_of(probe.id)
        check_folds(corpus, probe.id)
        for arm in arms:
            sessions[probe.id, arm.arm] = SessionPlan(probe=probe, arm=arm, names=names,
                                                      mcp=corpus.mcp, grep=grep)
    return ResolvedSessions(sessions)


def resolve_session(corpus: Corpus, probe_id: str, arm: str) -> SessionPlan:
    """The `SessionPlan` of one session outside a batch (``seal``, tests): the probe as a plan
    would state it, and the arm with the corpus's tools (probe.yml ``tools``).

    Raises:
        UnknownProbe: ``probe_id`` is not on the shelf.
        ArmError: ``arm`` is unknown, or a settings file it edits is not JSON.
        SealRefused: see `resolve_sessions`.
    """
    if probe_id not in corpus.probes:
        raise UnknownProbe(probe_id, corpus.probes)
    planned = plan_arm(corpus, arm, corpus.config.tools)
    return resolve_sessions(corpus, [plan_probe(corpus, probe_id)], [planned]).of(probe_id, arm)
