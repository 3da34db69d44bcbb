"""``config.yaml`` and ``plan.yaml``: what a batch ran with, read back by resume.

``config.yaml`` holds the `BatchOptions` (``options``) and the facts the
runner measured when the batch was made (`BatchFacts`: harness version,
network mode, arm identities, the order's algorithm), both written once, and
the cost budget as last set (`BudgetSetting`, ``budget``), rewritten by the
invocation that sets it (docs/batch.md, "config.yaml"). No secret is written:
the API key's *variable name* is an option, its value never is.
``plan.yaml`` is the plan exactly as ``plan --format yaml`` prints it.
Both are written atomically (`write_atomic`).
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from campaign.corpus import describe_validation
from campaign.plan import Plan, PlanArm, dump_plan
from recorder import DISALLOWED_TOOLS, PERMISSION_MODE, SETTING_SOURCES, write_atomic
from sandbox import CONFIG_MOUNT, LOG_MOUNT

from ._options import BatchOptions

if TYPE_CHECKING:
    from pathlib import Path

    from ._records import InvocationRecord

CONFIG_NAME: Final = "config.yaml"
PLAN_NAME: Final = "plan.yaml"
CONFIG_FORMAT: Final = 2
"""The format this runner writes. 2: every session sees its workspace, config and log
directories at fixed paths (``options.workspace_path``; blind sessions, RC-02). 1: each
session saw them at their host paths, which named its arm, probe, session and batch; such
a batch is still read (status, report, show, retranscribe), never resumed or recorded into."""
READ_FORMATS: Final = (1, 2)
"""The formats this runner reads."""


class BatchFileError(Exception):
    """``config.yaml`` or ``plan.yaml`` of a batch is missing or unreadable (exit 2)."""

    def __init__(self, path: Path, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem


class OrderFacts(BaseModel):
    """How the batch orders its sessions (docs/batch.md, "Order")."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    algorithm: str
    seed: int


class ArmFacts(BaseModel):
    """One arm as config.yaml records it: its identity (`PlanArm`) and the harness flags that
    identity covers (RC-04), spelled out."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    permission_mode: str
    setting_sources: str
    allowed_tools: tuple[str, ...]
    disallowed_tools: tuple[str, ...]
    layer: str
    flags: str
    """Digest of the four flags above (`campaign.plan._arms.harness_flags`)."""
    identity: str

    @classmethod
    def of(cls, arm: PlanArm) -> ArmFacts:
        """The facts of the plan's ``arm``: its digests as the plan holds them (nothing is
        computed again), with the flags every arm's harness runs with."""
        return cls(permission_mode=PERMISSION_MODE, setting_sources=SETTING_SOURCES,
                   allowed_tools=arm.allowed_tools, disallowed_tools=DISALLOWED_TOOLS,
                   layer=arm.layer, flags=arm.flags, identity=arm.identity)


class BatchFacts(BaseModel):
    """What the runner measured or decided when the batch was made."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    runner: str
    """``headwater-campaign <version>`` that made the batch."""
    harness_version: str
    """The first line of the harness's ``--version`` (bounded)."""
    network: Literal["confined", "host"]
    network_note: str
    """Why this mode: asked, verified, or fallen back (with the preflight's finding)."""
    provider_note: str
    """Which provider, said plainly: the real API at its URL, or the scripted loopback one."""
    arms: dict[str, ArmFacts]
    """Per arm: its identity, layer and flags digests and the harness flags it runs with."""
    order: OrderFacts
    disk_bound: Literal["kernel", "sampled"] | None = None
    """How the runner that made the batch held its sessions to ``--max-writes``
    (docs/storage.md): ``kernel``, each in a file system of its own (a root runner);
    ``sampled``, each file by ``RLIMIT_FSIZE`` and their sum by sampling (a runner that is
    not root); None in a batch made before this was recorded."""


class BudgetSetting(BaseModel):
    """The batch's cost budget as last set, and the invocation that set it (docs/batch.md,
    "Budgets": the last budget given stays the batch's until another is given)."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    max_cost_cents: int | None = Field(ge=1)
    """The budget, cents, a total over every attempt of every invocation; None = none."""
    invocation: int = Field(ge=1)
    """The `InvocationRecord.number` of the command that set it."""
    command: Literal["run", "demo", "resume"]
    at: str | None = None
    """When that invocation began (its record's ``at``, RFC 3339 UTC); None only for the
    budget `batch_budget` infers from ``options`` of a batch whose ledger holds none."""


class BatchConfig(BaseModel):
    """The whole of ``config.yaml``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    format: Literal[1, 2] = CONFIG_FORMAT
    options: BatchOptions
    facts: BatchFacts
    budget: BudgetSetting | None = None
    """The cost budget as last set (`BudgetSetting`). An optional key, read with a default:
    None in a batch written before it existed, whose budget is then the one its last run,
    demo or resume ran with (`batch_budget`)."""


def batch_budget(config: BatchConfig, last_run: InvocationRecord | None) -> BudgetSetting:
    """The batch's cost budget now: the one ``resume`` runs with when given none, and the
    one ``status`` shows the spend against (docs/batch.md, "Budgets").

    ``config.budget`` when config.yaml records it; in a batch written before that key
    existed, the budget ``last_run`` (the latest run, demo or resume invocation record of
    the ledger) ran with; with no such record, ``options.max_cost_cents``.
    """
    if config.budget is not None:
        return config.budget
    if last_run is not None and last_run.command != "record":
        return BudgetSetting(max_cost_cents=last_run.max_cost_cents, invocation=last_run.number,
                             command=last_run.command, at=last_run.at)
    command = config.options.command
    return BudgetSetting(max_cost_cents=config.options.max_cost_cents, invocation=1,
                         command="run" if command == "record" else command)


def budget_set_by(record: InvocationRecord) -> BudgetSetting:
    """The `BudgetSetting` that ``record``'s invocation (run, demo or resume) sets.

    Raises:
        ValueError: ``record`` is a ``record`` invocation, which sets no budget.
    """
    if record.command == "record":
        raise ValueError("a record invocation sets no budget")
    return BudgetSetting(max_cost_cents=record.max_cost_cents, invocation=record.number,
                         command=record.command, at=record.at)


SAMPLED_NOTE: Final = (
    " The runner that made this batch was not root: each session's writes limit "
    "(--max-writes) held every file it wrote (RLIMIT_FSIZE), but their sum was sampled, not "
    "bounded by the kernel (no file system of its own), so a session could pass it by what "
    "it wrote between two samples (docs/storage.md).")
"""The sentence `workspace_note` adds for a batch whose ``disk_bound`` is ``sampled``."""


def workspace_note(config: BatchConfig) -> str:
    """The transcripts' sentence on where the batch's sessions saw their directories (RC-02).

    Format 2: the workspace path (the working directory every session is
    told), and the fixed config and log paths; format 1: their host paths,
    which named each session's arm, probe and session. A batch made by a runner
    that is not root (``disk_bound`` ``sampled``) adds that its sessions' writes
    were bounded by sampling, not by the kernel (docs/storage.md).
    """
    path = config.options.workspace_path
    sampled = SAMPLED_NOTE if config.facts.disk_bound == "sampled" else ""
    if path is None:
        return ("The sessions of this batch (batch format 1) saw their workspace, config and "
                "log directories at their host paths, which named each session's arm, probe "
                "and session: they were not blind to their condition." + sampled)
    return (f"Every session saw its workspace at {path} (its working directory), its config "
            f"directory at {CONFIG_MOUNT} and its log directory at {LOG_MOUNT}: the same "
            "paths for every session of the batch, naming no arm, probe, session or batch."
            + sampled)


def _yaml() -> YAML:
    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    yaml.width = 2**31 - 1
    return yaml


def _dump(data: Any) -> bytes:
    buf = io.StringIO()
    _yaml().dump(data, buf)
    return buf.getvalue().encode("utf-8")


def _load(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        if not path.parent.exists():
            raise BatchFileError(path.parent, "does not exist") from exc
        raise BatchFileError(path, "missing: this directory is not a batch (or not a "
                                   "finished start of one)") from exc
    except NotADirectoryError as exc:
        raise BatchFileError(path.parent, "is not a directory, so not a batch") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise BatchFileError(path, f"cannot be read: {exc}") from exc
    try:
        return _yaml().load(text)
    except YAMLError as exc:
        raise BatchFileError(path, f"is not valid YAML:\n{exc}") from exc


def write_config(batch: Path, config: BatchConfig) -> None:
    """Write ``<batch>/config.yaml`` atomically.

    Raises:
        OSError: the host refused the write.
    """
    write_atomic(batch / CONFIG_NAME, _dump(config.model_dump(mode="json")))


def read_config(batch: Path) -> BatchConfig:
    """Read ``<batch>/config.yaml`` back.

    Raises:
        BatchFileError: missing, not YAML, or not the shape this runner writes.
    """
    path = batch / CONFIG_NAME
    data = _load(path)
    found = data.get("format") if isinstance(data, dict) else None
    if isinstance(found, int) and not isinstance(found, bool) and found not in READ_FORMATS:
        raise BatchFileError(path, f"is in batch format {found}; this runner reads formats "
                                   f"{', '.join(map(str, READ_FORMATS))} and writes format "
                                   f"{CONFIG_FORMAT}: read it with the runner that wrote it")
    try:
        return BatchConfig.model_validate(data, by_name=False)  # the keys as written
    except ValidationError as exc:
        raise BatchFileError(path, f"{describe_validation(exc, BatchConfig)} (not a config "
                                   "this runner wrote)") from exc


def write_plan(batch: Path, plan: Plan) -> None:
    """Write ``<batch>/plan.yaml``: the plan exactly as ``plan --format yaml`` prints it."""
    write_atomic(batch / PLAN_NAME, dump_plan(plan, "yaml").encode("utf-8"))


def read_plan(batch: Path) -> Plan:
    """Read ``<batch>/plan.yaml`` back (no comparison with any corpus here).

    Raises:
        BatchFileError: missing, not YAML, or not a plan.
    """
    path = batch / PLAN_NAME
    try:
        return Plan.model_validate(_load(path), by_name=False)
    except ValidationError as exc:
        raise BatchFileError(path, f"{describe_validation(exc, Plan)} (not a plan this runner "
                                   "wrote)") from exc

