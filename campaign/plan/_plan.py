"""The plan: six identity members, the probes with their tasks, the read set, the count.

Digest rules (docs/plan.md, "The six identity members"; the file shape is there too):

* ``tree`` - `tree_digest` over every regular file of the corpus except ``.git/``.
* ``lock`` - the lock file's digest; without one, probe.yml's (``lock_source`` says so).
* ``selection`` - sha256 of the sorted selected probe ids joined by ``\\n``.
* ``read_set`` - `tree_digest` over the selected probe files and what they examine.
* ``seed`` - the caller's. ``harness`` - the runner's version, ``headwater-campaign <version>``
  (`Plan.runner_version`).

Each arm of the tier is stated with its identity (`campaign.plan._arms.ArmSpec`):
its allowed tools, the digest of its workspace layer and of its harness flags,
so a plan file fixes what every arm ran, and the session passes
``plan.arm_spec(arm).allowed_tools`` to the harness.

The built-in planner selects every probe on the shelf; the tier selects arms
and repetitions. A plan file (``--plan``) may select fewer probes. The plan
lists the corpus's untyped files (``untyped_files``: Markdown under docs/
without front matter) and refuses an allowed-tools entry the pinned harness
does not know (`campaign.corpus._tools`).
"""

from __future__ import annotations

import importlib.metadata
import json
from collections.abc import Iterable, Mapping, Sequence
from io import StringIO
from pathlib import Path
from typing import Annotated, Any, ClassVar, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError
from ruamel.yaml.scalarstring import LiteralScalarString

from campaign._errors import PlanError, TreeMismatch, UnknownTier
from campaign.corpus import (
    DIGEST_PATTERN,
    PROBE_YML,
    Corpus,
    Tier,
    TierConfig,
    check_allowed_tools,
    describe_validation,
    describe_yaml_error,
    load_yaml,
)
from campaign.expect import Expectations, checked_expectations
from recorder import digest_text, tree_digest

from ._arms import Arm, ArmSpec, arm_spec
from ._plan_text import plan_text

DISTRIBUTION: Final = "headwater-campaign"
UNKNOWN_VERSION: Final = "0+unknown"
"""The version when the distribution is not installed (a bare checkout on sys.path)."""

UNTYPED_KEY: Final = "untyped_files"
"""The plan key listing the corpus's untyped files (a plan file without it is refused)."""

Digest = Annotated[str, Field(pattern=DIGEST_PATTERN)]


class _Closed(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)


class FileDigest(_Closed):
    """One corpus file by path and content."""

    path: str
    """Corpus-relative POSIX path."""
    digest: Digest


class PlanProbe(_Closed):
    """One selected probe, as the plan prints it."""

    id: str
    title: str
    path: str
    digest: Digest
    task: str
    """The ``## Task`` body, word for word: the whole first turn (RC-04)."""
    answers: tuple[str, ...]
    examines: tuple[FileDigest, ...]


class PlanArm(_Closed):
    """One arm as the plan runs it (`campaign.plan._arms.ArmSpec`)."""

    arm: Arm
    allowed_tools: tuple[str, ...]
    """The one ``--allowedTools`` list of the arm's sessions (RC-04)."""
    layer: Digest
    """Tree digest of the workspace layer files the arm keeps, as it leaves them."""
    flags: Digest
    """Digest of the harness flags: permission mode, setting sources, allowed/disallowed tools."""
    identity: Digest
    """Digest of ``layer`` and ``flags``: equal identities, the same arm."""


class Plan(_Closed):
    """A composed plan. Dumped by `dump_plan`, read back by `load_plan_file`."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True,
                              validate_by_name=True, validate_by_alias=True,
                              serialize_by_alias=True)

    tree: Digest
    lock: Digest
    selection: Digest
    read_set: Digest
    seed: int = Field(strict=True, ge=0)
    runner_version: str = Field(alias="harness")
    """``headwater-campaign <version>``: the planner's version, never Claude Code's (the key
    ``harness`` in a plan file, as it always was)."""
    tier: Tier
    arms: tuple[Arm, ...] = Field(min_length=1)
    repetitions: int = Field(ge=1, strict=True)
    session_count: int = Field(ge=1, strict=True)
    """probes x arms x repetitions, printed before anything is spent."""
    model: str
    tools: tuple[str, ...]
    """probe.yml's ``tools``: the allowed tools of every arm but ``mcp`` (see ``arm_specs``)."""
    arm_specs: tuple[PlanArm, ...]
    """One per arm of ``arms``, in that order."""
    lock_source: str
    """The lock file's corpus path, or ``probe.yml (no lock file)``."""
    probes: tuple[PlanProbe, ...] = Field(min_length=1)
    read_set_files: tuple[FileDigest, ...]
    """The files ``read_set`` covers, sorted by path bytes."""
    untyped_files: tuple[str, ...]
    """The corpus's untyped files (Markdown under docs/ without front matter), sorted by path
    bytes: in ``tree``, sealed and acted on by the arms, never cited (`Corpus.untyped`)."""

    @model_validator(mode="after")
    def _count(self) -> Plan:
        expected = len(self.probes) * len(self.arms) * self.repetitions
        if self.session_count != expected:
            raise ValueError(f"session_count {self.session_count} is not probes x arms x "
                             f"repetitions = {expected}")
        if tuple(a.arm for a in self.arm_specs) != self.arms:
            raise ValueError("arm_specs must state each arm of `arms`, in that order")
        return self

    COMPARABLE: ClassVar[tuple[str, ...]] = (
        "tree", "lock", "selection", "read_set", "seed", "runner_version", "arm_specs")
    """The members that make two plans the same measurement: equal in each, two batches
    measure the same thing (``resume`` and ``record`` continue a batch only then, the report
    merges batches only then, and a given plan file must compose to them). Compared in this
    order, by `moved`."""

    @classmethod
    def key(cls, member: str) -> str:
        """The key a plan file spells ``member`` with (``runner_version``: ``harness``); what
        a message names, so a reader finds it in plan.yaml."""
        return cls.model_fields[member].alias or member

    def moved(self, other: Plan) -> list[str]:
        """The `COMPARABLE` members in which ``other`` differs from this plan, in that order."""
        return [m for m in self.COMPARABLE if getattr(self, m) != getattr(other, m)]

    def first_difference(self, other: Plan) -> tuple[str, str, str] | None:
        """Why two batches of these plans are not one measurement, or None when they are.

        Returns:
            ``(member, this value, other value)`` as text for the first `COMPARABLE` member
            that differs (its plan-file key; ``arms`` for the arms' specs, each arm with the
            head of its identity), else for ``model`` (the model the runner asked for, RC-14:
            sessions asked of another model measured another thing); None when all agree.
        """
        for member in self.moved(other)[:1]:
            if member == "arm_specs":
                return "arms", _arms_text(self), _arms_text(other)
            return self.key(member), str(getattr(self, member)), str(getattr(other, member))
        if other.model != self.model:
            return "model", self.model, other.model
        return None

    def arm_spec(self, arm: str) -> PlanArm:
        """The spec of ``arm``.

        Raises:
            PlanError: ``arm`` is not an arm of this plan's tier.
        """
        for spec in self.arm_specs:
            if spec.arm == arm:
                return spec
        raise PlanError(f"tier {self.tier}", f"arm {arm!r} is not an arm of this tier "
                                             f"({', '.join(self.arms)})")


def _arms_text(plan: Plan) -> str:
    return ", ".join(f"{a.arm} {a.identity[:19]}" for a in plan.arm_specs)


def runner_version() -> str:
    """``headwater-campaign <version>`` from the installed distribution's metadata."""
    try:
        version = importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        version = UNKNOWN_VERSION
    return f"{DISTRIBUTION} {version}"


def selection_digest(probe_ids: Iterable[str]) -> str:
    """sha256 of the sorted probe ids joined by ``\\n`` (no trailing newline)."""
    return digest_text("\n".join(sorted(probe_ids)))


def _files(corpus: Corpus, paths: Iterable[str]) -> tuple[FileDigest, ...]:
    ordered = sorted(set(paths), key=lambda p: p.encode("utf-8"))
    return tuple(FileDigest(path=p, digest=corpus.files[p]) for p in ordered)


def _check_tools(corpus: Corpus, tools: tuple[str, ...], source: str) -> None:
    """`check_allowed_tools` against the servers the corpus's root ``.mcp.json`` declares
    (`Corpus.mcp`, read once at load)."""
    check_allowed_tools(tools, mcp_servers=corpus.mcp.servers, source=source)


def plan_probe(corpus: Corpus, probe_id: str) -> PlanProbe:
    """The probe ``probe_id`` of ``corpus`` as a plan states it (KeyError: not on the shelf)."""
    p = corpus.probes[probe_id]
    return PlanProbe(id=p.id, title=p.title, path=p.path, digest=p.digest, task=p.task,
                     answers=p.answers,
                     examines=tuple(FileDigest(path=e, digest=corpus.files[e])
                                    for e in p.examines))


def plan_arm(corpus: Corpus, arm: str, tools: Iterable[str]) -> PlanArm:
    """``arm`` over ``corpus`` with ``tools`` as a plan states it (`campaign.plan._arms.arm_spec`).

    Raises:
        ArmError: see `arm_spec`.
    """
    return _plan_arm(arm_spec(corpus, arm, tools))


def _plan_arm(spec: ArmSpec) -> PlanArm:
    """``spec`` as a plan states it (its layer's file count is not a plan member)."""
    return PlanArm(arm=spec.arm, allowed_tools=spec.allowed_tools, layer=spec.layer,
                   flags=spec.flags, identity=spec.identity)


def _build(corpus: Corpus, ids: Iterable[str], *, tier: str, arms: tuple[str, ...],
           repetitions: int, seed: int, runner: str, model: str,
           tools: tuple[str, ...], tools_source: str | None = None) -> Plan:
    """The plan of ``ids`` over ``corpus``; ``tools_source`` names where ``tools`` come from in
    an error (default: the corpus's probe.yml)."""
    _check_tools(corpus, tools, tools_source or f"corpus {corpus.root}: {PROBE_YML} `tools`")
    chosen = [corpus.probes[i] for i in sorted(ids)]
    read = _files(corpus, [p.path for p in chosen] + [e for p in chosen for e in p.examines])
    probes = [plan_probe(corpus, p.id) for p in chosen]
    return Plan(
        tree=corpus.tree, lock=corpus.lock, selection=selection_digest(ids),
        read_set=tree_digest({f.path: f.digest for f in read}), seed=seed,
        runner_version=runner, tier=tier, arms=arms, repetitions=repetitions,
        session_count=len(probes) * len(arms) * repetitions, model=model,
        tools=tools, lock_source=corpus.lock_source, probes=tuple(probes),
        arm_specs=tuple(_plan_arm(arm_spec(corpus, arm, tools)) for arm in arms),
        read_set_files=read, untyped_files=corpus.untyped)


def compose_plan(corpus: Corpus, *, tier: str, seed: int = 0,
                 probes: Sequence[str] | None = None) -> Plan:
    """Compose the plan of ``tier``: the probes ``probes`` (None: every probe of the shelf),
    the tier's arms and repetitions; ``selection`` and ``read_set`` are those of the probes
    chosen. The chosen probes' ``expect:`` is checked against the corpus and dropped: a plan
    never holds an expectation (RC-13; `campaign.expect.checked_expectations`).

    Raises:
        UnknownTier: probe.yml declares no tier ``tier`` (the message lists those it does).
        PlanError: the shelf holds no probe; a probe of ``probes`` is not on it (the message
            lists those that are) or is given twice; the corpus's ``.mcp.json`` cannot be read.
        ExpectationsRefused: a chosen probe's ``expect:`` breaks a rule (docs/expectations.md).
        UnknownTool: probe.yml's ``tools`` holds an entry the pinned harness does not
            know (`campaign.corpus._tools.check_allowed_tools`).
        ArmError: an arm's settings file or ``.mcp.json`` is not a JSON object (`arm_spec`).
    """
    declared: dict[str, TierConfig] = {str(k): v for k, v in corpus.config.tiers.items()}
    if tier not in declared:
        raise UnknownTier(tier, declared, corpus_root=str(corpus.root))
    if not corpus.probes:
        raise PlanError(f"tier {tier!r}", f"corpus {corpus.root}: the shelf docs/probes/ holds no "
                                          "probe (a Markdown file there with front matter); "
                                          "nothing to run")
    ids = list(corpus.probes) if probes is None else _chosen(corpus, probes)
    checked_expectations(corpus, ids)
    chosen = declared[tier]
    return _build(corpus, ids, tier=tier, arms=chosen.arms,
                  repetitions=chosen.repetitions, seed=seed, runner=runner_version(),
                  model=corpus.config.model, tools=corpus.config.tools)


def _chosen(corpus: Corpus, probes: Sequence[str]) -> list[str]:
    """``probes`` (``--probe ID``), each checked to be on the shelf once."""
    for probe_id in probes:
        if probe_id not in corpus.probes:
            raise PlanError(f"--probe {probe_id}", f"no probe of the shelf docs/probes/ of "
                                                   f"corpus {corpus.root} has this id; its "
                                                   f"probes are {', '.join(corpus.probes)}")
    if len(set(probes)) != len(probes):
        twice = next(p for p in probes if probes.count(p) > 1)
        raise PlanError(f"--probe {twice}", "given twice; name each probe once")
    if not probes:
        raise PlanError("--probe", "no probe chosen")
    return list(probes)


def _yaml_value(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _yaml_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_yaml_value(v) for v in value]
    if isinstance(value, str) and _literal_safe(value):
        return LiteralScalarString(value)
    return value


def _literal_safe(text: str) -> bool:
    """A multi-line string that a block scalar carries byte for byte (no ``\\r``, no controls)."""
    return "\n" in text and all(c in "\n\t" or c.isprintable() for c in text)


def dump_plan(plan: Plan, fmt: Literal["text", "yaml", "json"],
              expectations: Mapping[str, Expectations] | None = None) -> str:
    """Render ``plan``: ``text`` for people; ``yaml`` and ``json`` are what `load_plan_file` reads.

    ``expectations`` (probe id -> its checked ``expect:``) are listed under each probe in
    ``text`` only: a plan file never holds them, since the supervisor reads the plan (RC-13).

    Raises:
        ValueError: ``fmt`` is not one of the three.
    """
    data = plan.model_dump(mode="json")
    if fmt == "json":
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    if fmt == "yaml":
        yaml = YAML()
        yaml.default_flow_style = False
        yaml.width = 4096
        out = StringIO()
        yaml.dump(_yaml_value(data), out)
        return out.getvalue()
    if fmt == "text":
        return plan_text(plan, expectations or {})
    raise ValueError(f"format must be text, yaml or json, not {fmt!r}")


def _parse(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PlanError(str(path), f"cannot read: {exc}") from exc
    if path.suffix == ".json" or text.lstrip().startswith("{"):
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise PlanError(str(path), f"not valid JSON, at line {exc.lineno}, column "
                                       f"{exc.colno}: {exc.msg}") from exc
    try:
        return load_yaml(text)
    except YAMLError as exc:
        raise PlanError(str(path), f"not valid YAML, at {describe_yaml_error(exc, text)}") from exc


def load_plan_file(path: Path, corpus: Corpus) -> Plan:
    """Read a plan file (the yaml or json of `dump_plan`) and recompose it over ``corpus``.

    The file fixes the selection (its probe ids), tier, arms, repetitions,
    seed, runner version, model and tools. Tasks, answers, titles and digests are
    read from the corpus, so the result is what `compose_plan` would give
    for that selection.

    Raises:
        PlanError: unreadable; not YAML/JSON; a key outside the closed set
            or missing (``untyped_files`` too: a file of an older planner);
            a probe not on the shelf or listed twice; ``untyped_files``,
            ``lock``, ``selection`` or ``read_set`` not what the corpus composes.
        TreeMismatch: the file's ``tree`` differs from the corpus's (exit 2).
        ExpectationsRefused: a probe's ``expect:`` breaks a rule (docs/expectations.md).
        UnknownTool: the file's ``tools`` holds an entry the pinned harness does not know.
    """
    where = str(path)
    data = _parse(path)
    if isinstance(data, dict) and UNTYPED_KEY not in data:
        raise PlanError(where, f"missing key {UNTYPED_KEY!r}, the corpus's untyped files "
                               "(Markdown under docs/ without front matter): the file was "
                               "composed by an older planner; compose it again with "
                               "`headwater-campaign plan CORPUS --format yaml`")
    try:
        given = Plan.model_validate(data, by_name=False)  # a file spells keys as written
    except ValidationError as exc:
        raise PlanError(where, describe_validation(exc, Plan)) from exc
    if given.tree != corpus.tree:
        raise TreeMismatch(where, given.tree, corpus.tree)
    if given.untyped_files != corpus.untyped:
        raise PlanError(where, f"{UNTYPED_KEY} differs from the corpus's untyped files "
                               f"({', '.join(corpus.untyped) or 'none'}); compose the plan again")
    ids = [p.id for p in given.probes]
    if len(set(ids)) != len(ids):
        raise PlanError(where, "a probe is listed twice")
    missing = [i for i in ids if i not in corpus.probes]
    if missing:
        raise PlanError(where, f"probe {missing[0]!r} is not on the shelf docs/probes/")
    checked_expectations(corpus, ids)
    plan = _build(corpus, ids, tier=given.tier, arms=given.arms, repetitions=given.repetitions,
                  seed=given.seed, runner=given.runner_version, model=given.model,
                  tools=given.tools, tools_source=f"{where} `tools`")
    for member in given.moved(plan):  # tree: checked above; seed, runner: given's own
        if member == "arm_specs":
            raise PlanError(where, "an arm's identity differs from what this corpus and "
                                   "runner compose (another layer or other harness flags)")
        raise PlanError(where, f"{Plan.key(member)} {getattr(given, member)} differs from the "
                               f"{getattr(plan, member)} this corpus composes")
    return plan


def recompose(given: Plan, corpus: Corpus) -> Plan:
    """``given``'s selection, tier, arms, repetitions, seed and model recomposed over ``corpus``.

    Nothing is compared here (``resume`` compares each member and names the
    one that moved); this planner's version is the current one.

    Raises:
        PlanError: a probe of ``given`` is no longer on the shelf.
        ArmError: an arm's settings file or ``.mcp.json`` is not a JSON object.
    """
    ids = [p.id for p in given.probes]
    missing = [i for i in ids if i not in corpus.probes]
    if missing:
        raise PlanError("plan.yaml", f"probe {missing[0]!r} is no longer on the shelf "
                                     "docs/probes/ of the corpus")
    return _build(corpus, ids, tier=given.tier, arms=given.arms, repetitions=given.repetitions,
                  seed=given.seed, runner=runner_version(), model=given.model,
                  tools=corpus.config.tools)
