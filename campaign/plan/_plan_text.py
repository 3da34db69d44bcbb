"""The plan as ``plan`` prints it for people (``--format text``; docs/plan.md)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from campaign.corpus import SHELF
from campaign.expect import Expectations, expectation_lines

from ._sizing import plural

if TYPE_CHECKING:
    from ._plan import Plan


def plan_text(plan: Plan, expectations: Mapping[str, Expectations]) -> str:
    """``plan`` in words: its identity, arms, each probe (with its ``expectations``, probe id
    -> ``expect:``), the read set and the untyped files."""
    lines = [
        f"plan: tier {plan.tier}, {plural(len(plan.probes), 'probe')}, arms "
        f"{', '.join(plan.arms)}",
        f"sessions: {plural(len(plan.probes), 'probe')} x {plural(len(plan.arms), 'arm')} x "
        f"{plural(plan.repetitions, 'repetition')} = {plan.session_count}",
        "",
        "identity:",
        f"  tree       {plan.tree}",
        f"  lock       {plan.lock}  ({plan.lock_source})",
        f"  selection  {plan.selection}",
        f"  read_set   {plan.read_set}",
        f"  seed       {plan.seed}",
        f"  harness    {plan.runner_version}",
        f"model: {plan.model}",
        f"tools: {', '.join(plan.tools) or '(none)'}",
        "arms (identity = layer + harness flags):",
    ]
    for spec in plan.arm_specs:
        lines += [f"  {spec.arm:<13}{spec.identity}",
                  f"  {'':<13}layer {spec.layer}, flags {spec.flags}"]
        if spec.allowed_tools != plan.tools:
            lines.append(f"  {'':<13}allowed tools: {', '.join(spec.allowed_tools)}")
    first: dict[str, str] = {s.identity: s.arm for s in plan.arm_specs if s.arm == "present"}
    for spec in plan.arm_specs:
        earlier = first.setdefault(spec.identity, spec.arm)
        if earlier == spec.arm:
            continue
        lines.append(f"  note: arm {spec.arm} has the identity of {earlier}: "
                     + ("it would change nothing" if earlier == "present" else
                        f"its sessions would repeat {earlier}'s") + " (`run` refuses it)")
    for probe in plan.probes:
        lines += ["", f"probe {probe.id}: {probe.title}", f"  {probe.digest} {probe.path}",
                  f"  answers: {' | '.join(probe.answers) or '(none declared)'}", "  task:"]
        lines += [f"    {line}".rstrip() for line in probe.task.split("\n")]
        lines += ["  examines:"] + [f"    {e.digest} {e.path}" for e in probe.examines]
        lines += expectation_lines(expectations.get(probe.id))
    lines += ["", f"read set ({len(plan.read_set_files)} documents):"]
    lines += [f"  {f.digest} {f.path}" for f in plan.read_set_files]
    lines += ["", f"untyped files: {len(plan.untyped_files)} (Markdown under docs/ without front "
                  "matter: in the tree, sealed and acted on by the arms, never cited; "
                  "--format yaml lists them)"]
    lines += [f"  {p}: on the shelf without front matter, so not a probe"
              for p in plan.untyped_files if p.startswith(SHELF) and "/" not in p[len(SHELF):]]
    return "\n".join(lines) + "\n"
