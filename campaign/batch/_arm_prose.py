"""The arm's prose lines the builder adds from facts beyond its rows (RC-10, RC-11, RC-16).

What a final record says beyond its row (a limit passed, an unread artifact, orphan
results), the arm's tools and identity sentence, and the sentence of an incomplete batch.
A value that came from the session goes through `recorder.transcript.prose_value`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from recorder.transcript import prose_value

if TYPE_CHECKING:
    from campaign.plan import Plan

    from ._records import FinalRecord


def incomplete_line(outstanding: int, planned: int) -> str:
    """The prose sentence of a transcript whose batch has sessions outstanding."""
    return (f"This batch is incomplete: {outstanding} of the {planned} planned sessions of this "
            "arm are not final yet (never started, interrupted, or ended in a state worth "
            "another attempt); `headwater-campaign resume` on this batch runs them "
            "(`headwater-campaign status` names the larger --max-cost-cents it needs when "
            "the batch's cost budget would stop it).")


def arm_tools_and_identity(plan: Plan, arm: str) -> tuple[tuple[str, ...], str | None]:
    """The arm's allowed tools and its identity sentence for the prose.

    A plan without the arm (cannot happen for a batch's own arms) gives the
    plan's tools and no identity sentence.
    """
    spec = next((s for s in plan.arm_specs if s.arm == arm), None)
    if spec is None:
        return plan.tools, None
    return spec.allowed_tools, (
        f"{spec.identity}, the digest of the arm's workspace layer {spec.layer} (the tree "
        f"formula over the layer files the arm keeps) and of its harness flags {spec.flags} "
        "(permission mode, setting sources, allowed and disallowed tools). Batches whose arm "
        "identities are equal ran the same arm.")


def session_notes(name: str, record: FinalRecord) -> tuple[str, ...]:
    """Prose lines for what a final record says beyond its row (RC-10, RC-11; a limit passed,
    an uncontained end: docs/batch.md "Session states")."""
    notes = []
    if record.state in ("limit-exceeded", "uncontained"):  # the reason may name a tool
        notes.append(f"{name} ended {record.state}: {prose_value(record.reason)}.")
    if record.findings_note:  # may quote what the checker printed of the session's files
        notes.append(f"{name}: {prose_value(record.findings_note)}; its artifacts carry no "
                     "findings key (not checked, which is not a pass).")
    for unread in record.unread_artifacts or []:  # the path is the session's: a literal
        size = unread.size_bytes
        notes.append(f"{name}: the produced file {prose_value(unread.path)} was not "
                     f"read after the session ({unread.reason}"
                     + (f"; {size} bytes" if size is not None else "") + "): it keeps its "
                     "path only.")
    if record.orphan_results:
        notes.append(f"{name}: {len(record.orphan_results)} tool_result(s) answered no "
                     "tool_use seen before them; the ledger keeps their ids and digests.")
    return tuple(notes)
