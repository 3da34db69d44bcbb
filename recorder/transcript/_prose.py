"""The prose of a transcript (RC-16) and the served version of its identity (RC-14).

Nothing reads the prose except for its ``Outside-workspace paths named: N``
line; what it must say is the contract the batch ran under, the Claude Code
version, the cost source and that line.

A value that came from the session (the init line's ``claude_code_version``,
an assistant line's ``message.model``, the egress proxy's denied targets, a
checker's note) enters the prose only through `prose_value`: one line of
printable ASCII between double quotes. Written raw, such a value could start
a line of its own (a heading, a second ``Outside-workspace paths named:``
line, a fence) or open an HTML comment that hides the lines after it; a
heading or a second total also made every later render of the batch fail.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Final

from .._releases import COVERED_RELEASES, coverage
from ._literal import prose_value as prose_value
from ._provider_prose import CostSource, cost_source_line

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

    from .._cost import CostFigure
    from .._vocab import Arm, Tier


def served_version_of(values: Iterable[str], *, fallback: str | None = None) -> str:
    """The identity's ``served_version`` (RC-14): the most frequent served model.

    Args:
        values: One ``message.model`` per recorded session of the arm.
        fallback: Returned when ``values`` is empty (the model *name*, written
            as a name where no version was exposed).

    Returns:
        The most frequent value; on a tie, the lexicographically first (by
        code point) among the most frequent, so the choice is deterministic.

    Raises:
        ValueError: ``values`` is empty and no ``fallback`` was given.
    """
    counts = Counter(values)
    if not counts:
        if fallback is None:
            raise ValueError("no served version observed and no fallback given")
        return fallback
    top = max(counts.values())
    return min(v for v, n in counts.items() if n == top)


_NETWORK_PROSE: Final = {
    "host": "the session shared the host network, so a Bash call could reach the public internet "
    "(the channel was open)",
    "confined": "each session ran in its own network namespace (bwrap --unshare-net, loopback "
    "only, no resolver) whose only way out was an egress proxy outside the sandbox, reached over "
    "a Unix socket, that allowed one host and port and nothing else: the session's own "
    "provider gateway, which alone reaches the provider (in a batch written before the "
    "gateway, the provider itself)",
    "mixed": "the sessions ran under different network modes, listed below",
}
_CONTRACT: Final = (
    "Contract: every session ran headless Claude Code (`claude -p`, stream-json read from its "
    "stdout pipe) in permission mode dontAsk with one allowed-tools list ({tools}), WebSearch "
    "and WebFetch denied, confined under bwrap in a sealed workspace. Network mode `{network}`: "
    "{net}. Rates from bypassPermissions batches do not compare with rates from this one."
)
_LOWER_BOUND: Final = (
    " This is a lower bound: the cost of {n} is unknown and adds nothing: {names}."
)
_SERVED_DIFFER: Final = (
    "Served versions differ across this arm's sessions: {listed}; served_version names the most "
    "frequent (a tie goes to the lexicographically first)."
)


def unknown_init_keys_line(counts: Mapping[str, int]) -> str:
    """The prose sentence listing the init keys the recorder has not decided (RC-07).

    Args:
        counts: each key (as the session printed it, bounded: `recorder._initkeys`) -> how
            many of the arm's sessions printed it; not empty.

    Returns:
        One paragraph: every key as `prose_value` writes it, with its count, in code-point
        order, e.g. ``Init keys the recorder has not decided: "betas" (2 sessions). Listed,
        not refused: ...``
    """
    listed = ", ".join(f"{prose_value(key)} ({_plural(n, 'session')})"
                       for key, n in sorted(counts.items()))
    return (f"Init keys the recorder has not decided: {listed}. Listed, not refused: a "
            "release the census has not read prints them (docs/glossary.md: RC-07); "
            "docs/recorder.md says how each known key is decided.")


_COVERAGE_PROSE: Final = {
    "covered": "covered by the harness census",
    "uncovered": "not covered by the harness census",
    "unreadable": "not a release number, so not covered by the harness census",
}
_UNCOVERED: Final = (
    " The census covers {covered}: the recorder was not checked against what {which} "
    "prints, so a line or key it changed may have been read wrong without a refusal "
    "(\"make census CENSUS_VERSION=RELEASE\" checks a release)."
)


def harness_versions_line(claude_code_versions: Iterable[str]) -> str:
    """The prose's Claude Code version sentence: each distinct version and its coverage.

    Each version is written as `prose_value` writes it, followed by where it stands
    against the releases the harness census covers (`recorder.coverage`); when any is not
    covered the sentence names the covered releases and what that means, so a batch on a
    release nobody checked the recorder against says so in its own transcript.

    Args:
        claude_code_versions: ``claude_code_version`` of each init line (repeats fine).

    Returns:
        One paragraph, e.g. ``Claude Code version: "2.1.332" (covered by the harness
        census).``; ``Claude Code version: not observed.`` when there is none.
    """
    versions = sorted(set(claude_code_versions))
    if not versions:
        return "Claude Code version: not observed."
    label = "Claude Code versions" if len(versions) > 1 else "Claude Code version"
    stands = {version: coverage(version) for version in versions}
    listed = ", ".join(f"{prose_value(v)} ({_COVERAGE_PROSE[stands[v]]})" for v in versions)
    line = f"{label}: {listed}."
    outside = [v for v in versions if stands[v] != "covered"]
    if outside:
        which = "this release" if len(outside) == 1 else "these releases"
        line += _UNCOVERED.format(covered=", ".join(COVERED_RELEASES), which=which)
    return line


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def prose_for(
    *,
    arm: Arm,
    tier: Tier,
    allowed_tools: Sequence[str],
    network: str,
    claude_code_versions: Iterable[str],
    served_versions: Mapping[str, int],
    cost: CostFigure,
    unknown_cost_sessions: Sequence[str],
    outside_paths_total: int,
    anomalies_total: int = 0,
    arm_identity: str | None = None,
    extra: Sequence[str] = (),
    cost_source: CostSource | None = None,
) -> str:
    """Build the prose RC-16 requires of a transcript, from facts only.

    Args:
        arm: The arm; tier: the tier (RC-14 vocabularies).
        allowed_tools: The one ``--allowedTools`` list every session got (RC-04).
        network: The network mode: ``"confined"``, ``"host"`` (the admitted
            exception, RC-05: the prose says the channel was open) or ``"mixed"``.
        claude_code_versions: ``claude_code_version`` of each init line (repeats fine);
            each distinct one is written as `prose_value` writes it, with its coverage
            by the harness census (`harness_versions_line`).
        served_versions: served ``message.model`` -> number of recorded sessions; each
            model is written as `prose_value` writes it.
        cost: The arm's figure from `recorder._cost.cost_cents`.
        unknown_cost_sessions: Names of the attempts whose cost is unknown
            (e.g. ``"probe-a/r2 attempt 1"``); required when ``cost.lower_bound``.
        outside_paths_total: Sum of the table's outside-paths column (RC-08).
        anomalies_total: Non-JSON stdout lines counted across sessions (RC-07).
        arm_identity: One line naming what the arm is (e.g. its config digest).
        extra: Further paragraphs appended before the outside-paths line, as given:
            a caller that puts a session's value in one passes it through `prose_value`.
        cost_source: Where the cost came from (`CostSource`: the provider's usage priced
            with the shipped table, the harness's figure, their agreement); None (or no
            provider-priced attempt): the harness's figure, said as batches written before
            the provider gateway say it (`recorder.transcript._provider_prose`).

    Returns:
        Markdown paragraphs ending with ``Outside-workspace paths named: <total>``.

    Raises:
        ValueError: unknown-cost names and ``cost.unknown`` disagree on zero.
    """
    if cost.lower_bound != bool(unknown_cost_sessions):
        raise ValueError("a lower-bound cost must name its unknown-cost attempts, and only then")
    net = _NETWORK_PROSE.get(network, "the session reached the network only as that mode allows")
    tools = ", ".join(allowed_tools) or "none"
    paras = [
        f"Transcript of arm `{arm}`, tier `{tier}`, recorded by headwater-campaign.",
        _CONTRACT.format(tools=tools, network=network, net=net),
    ]
    paras.append(harness_versions_line(claude_code_versions))
    served = sorted(served_versions.items())
    if len(served) > 1:
        listed = ", ".join(f"{prose_value(v)} ({_plural(n, 'session')})" for v, n in served)
        paras.append(_SERVED_DIFFER.format(listed=listed))
    elif served:
        paras.append(
            f"Served version: {prose_value(served[0][0])} "
            f"({_plural(served[0][1], 'recorded session')})."
        )
    cost_line = cost_source_line(cost_source, cents=cost.cents)
    if cost.lower_bound:
        names = ", ".join(unknown_cost_sessions)
        cost_line += _LOWER_BOUND.format(n=_plural(cost.unknown, "attempt"), names=names)
    paras.append(cost_line)
    if arm_identity:
        paras.append(f"Arm identity: {arm_identity}")
    if anomalies_total:
        paras.append(
            f"Non-JSON stdout lines (anomalies, kept aside, never merged): {anomalies_total}."
        )
    paras += list(extra)
    paras.append(f"Outside-workspace paths named: {outside_paths_total}")
    return "\n\n".join(paras)
