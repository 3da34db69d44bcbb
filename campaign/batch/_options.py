"""The options a batch runs with: one frozen object, built once, recorded in config.yaml.

The command line builds a `BatchOptions` once (``campaign.cli``); everything
below the CLI reads this object and never an argparse namespace. The batch
directory records it in ``config.yaml`` (`campaign.batch._config`), and
``resume`` reads it back from there, never from the defaults; the only values
a resume may replace are the per-invocation ones (`ResumeOverrides`).
"""

from __future__ import annotations

from typing import Final, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field

from recorder import POST_RESULT_GRACE_S, Tier
from sandbox import (
    DEFAULT_CONNECTIONS,
    DEFAULT_MEMORY_BYTES,
    DEFAULT_OPEN_FILES,
    DEFAULT_PIDS,
    DEFAULT_STDOUT_BYTES,
    DEFAULT_TMP_BYTES,
    DEFAULT_WRITE_BYTES,
    MIN_STDOUT_BYTES,
    Limits,
)

SESSION_TIMEOUT_S: Final = 1800.0
"""Default wall limit of one session, seconds (docs/cli.md "Defaults")."""
WATCHDOG_S: Final = 600.0
"""Default no-output watchdog, seconds: no stdout byte for this long ends the session."""
RETRIES: Final = 2
"""Default further attempts per session per invocation, for retryable states."""
CONCURRENCY: Final = 2
"""Default sessions at once."""
RETRY_BACKOFF_S: Final = 10.0
"""Default wait before a session's first retry, seconds; doubled per retry, jittered, capped."""

Provider: TypeAlias = Literal["anthropic", "scripted"]
"""``anthropic``: a real Messages API (the public one or ``--provider-url``); ``scripted``: the
loopback provider that plays scripts from ``--scripts DIR`` (a dry run, spends nothing real)."""
NetworkAsk: TypeAlias = Literal["confined", "host"] | None
"""``--network`` as asked; None = confined where the host supports it, else host with a warning."""


class BatchOptions(BaseModel):
    """Every option a batch runs with (recorded once, in config.yaml, under ``options``).

    Paths are absolute strings (resolved once, when the options are built).
    """

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True,
                              validate_by_name=True, validate_by_alias=True,
                              serialize_by_alias=True)

    command: Literal["run", "demo", "record"]
    """The command that made the batch."""
    corpus: str
    """The corpus root, resolved."""
    tier: Tier
    seed: int = Field(ge=0)
    """Seeds the order of the sessions (docs/batch.md) and is the identity's ``seed``."""
    plan_file: str | None = None
    """``--plan FILE`` as given (resolved), or None when the plan was composed."""
    model: str | None = None
    """``--model``; None = probe.yml's ``model``."""
    harness_path: str = Field(alias="harness")
    """The harness executable (the claude CLI), resolved; config.yaml's key ``harness``."""
    bwrap: str = "bwrap"
    provider: Provider = "anthropic"
    provider_url: str | None = None
    """``--provider-url`` (or ``ANTHROPIC_BASE_URL`` when it was read); None = the public API,
    or, for ``scripted``, the loopback address each invocation starts."""
    scripts: str | None = None
    """The scripted provider's scripts directory (``provider == "scripted"`` only)."""
    api_key_env: str | None = None
    """The variable that holds the API key (its name, never its value)."""
    network: NetworkAsk = None
    concurrency: int = Field(default=CONCURRENCY, ge=1)
    session_timeout_s: float = Field(default=SESSION_TIMEOUT_S, gt=0)
    watchdog_s: float = Field(default=WATCHDOG_S, gt=0)
    post_result_grace_s: float = Field(default=POST_RESULT_GRACE_S, gt=0)
    retries: int = Field(default=RETRIES, ge=0)
    retry_backoff_s: float = Field(default=RETRY_BACKOFF_S, gt=0)
    max_cost_cents: int | None = Field(default=None, ge=1)
    """Budget for the whole batch, every attempt of every invocation, cents."""
    est_session_cents: int | None = Field(default=None, ge=1)
    """The cost projected for a session in flight before any session has a cost, cents."""
    max_wall_s: float | None = Field(default=None, gt=0)
    """Wall-clock budget of one invocation, seconds."""
    hard_wall: bool = False
    """``--hard-wall``: at ``max_wall_s``, sessions still running are cancelled (written
    ``killed``, ``counts: false``; resume reruns them) instead of finishing within their
    ``--session-timeout`` (docs/batch.md, "Budgets"). An optional key: False in a batch
    written before it."""
    discard_workspaces: bool = False
    keep_streams: bool = True
    """Keep each attempt's stdout, compressed, and its final text (``--no-keep-streams``)."""
    allow_identical_arms: bool = False
    max_processes: int = Field(default=DEFAULT_PIDS, ge=1)
    """Per session: processes and threads at once (``--max-processes``; `sandbox.Limits`)."""
    max_memory_bytes: int = Field(default=DEFAULT_MEMORY_BYTES, ge=1)
    """Per session: memory, bytes, page cache and /tmp included (``--max-memory``)."""
    max_tmp_bytes: int = Field(default=DEFAULT_TMP_BYTES, ge=1)
    """Per session: the size of its private /tmp, bytes (``--max-tmp``)."""
    max_write_bytes: int = Field(default=DEFAULT_WRITE_BYTES, ge=1)
    """Per session: bytes added to its workspace, log and config directories (``--max-writes``)."""
    max_open_files: int = Field(default=DEFAULT_OPEN_FILES, ge=1)
    """Per session: open files of each of its processes (``--max-open-files``)."""
    max_connections: int = Field(default=DEFAULT_CONNECTIONS, ge=1)
    """Per session: connections open at once through its egress proxy (``--max-connections``)."""
    max_stdout_bytes: int = Field(default=DEFAULT_STDOUT_BYTES, ge=MIN_STDOUT_BYTES)
    """Per session: bytes it may print on stdout, counted as the runner reads them
    (``--max-stdout``). A batch recorded before the option has no such key: it reads, and
    resumes, with the default."""
    workspace_path: str | None = None
    """Where every session sees its workspace (``--workspace-path``; RC-02, blind sessions);
    set in every batch of config format 2. None only in a batch of format 1, whose sessions
    saw their workspace at its host path."""

    def session_limits(self) -> Limits:
        """The per-session limits these options ask for (the sandbox's `Limits`)."""
        return Limits(pids=self.max_processes, memory_bytes=self.max_memory_bytes,
                      tmp_bytes=self.max_tmp_bytes, write_bytes=self.max_write_bytes,
                      open_files=self.max_open_files, connections=self.max_connections,
                      stdout_bytes=self.max_stdout_bytes)


class ResumeOverrides(BaseModel):
    """What ``resume`` may change: the per-invocation options, and where the corpus is now."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    corpus: str | None = None
    retries: int | None = Field(default=None, ge=0)
    max_cost_cents: int | None = Field(default=None, ge=1)
    est_session_cents: int | None = Field(default=None, ge=1)
    max_wall_s: float | None = Field(default=None, gt=0)
    hard_wall: bool | None = None

    def apply(self, options: BatchOptions) -> BatchOptions:
        """``options`` with every override that was given put in (the rest as recorded)."""
        given = self.model_dump(exclude_none=True)
        return options.model_copy(update=given) if given else options
