"""The typed parts of a ledger record: what a ``final`` line holds besides plain values.

Each part is closed (an unknown key refuses the line, as a record does) and frozen, and
writes exactly the keys it was given: a part read from a ledger line is written back as
that line held it, byte for byte (docs/batch.md "The ledger" lists each key). A cost is
a `Decimal` in memory and its JSON text (a string) in the ledger.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    PlainSerializer,
    SerializerFunctionWrapHandler,
    StringConstraints,
    model_serializer,
)

from recorder import Anomaly, InitPolicy, OrphanResult, UnreadFile, decimal_cost
from sandbox.gateway import MAX_TEXT


def _cost(value: object) -> Decimal:
    """A cost as the ledger writes it (its JSON text, a string), or a `Decimal` already
    (`recorder.decimal_cost`: JSON number grammar, finite, non-negative)."""
    if not isinstance(value, str | Decimal):
        raise ValueError(f"not a cost: exact USD is written as the JSON text of a number in "
                         f"a string, never a bare number (got {value!r})")
    cost = decimal_cost(value)
    assert cost is not None  # only None gives None
    return cost


Cost = Annotated[Decimal, BeforeValidator(_cost), PlainSerializer(str)]
"""Exact USD: a `Decimal` in memory, its text in the ledger (``"0.0123"``), never a float.
``str`` of a `Decimal` read from that text gives the text again."""


class RecordPart(BaseModel):
    """A closed, frozen part of a record that writes only the keys it was given."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    @model_serializer(mode="wrap")
    def _as_given(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        return {k: v for k, v in data.items() if k in self.model_fields_set}


class EgressCounts(RecordPart):
    """What a session's egress proxy counted once its harness had exited (``egress``)."""

    allowed_target: str
    """The one ``host:port`` allowed (the provider's)."""
    allowed: int
    """Connections relayed to it."""
    denied: dict[str, int]
    """Denied ``host:port`` (or what the proxy names an unnamed one) -> count."""
    upstream_failures: int = 0
    """Allowed connections whose upstream could not be reached (answered 502)."""
    most_open: int = 0
    """The most connections the session held open at once."""


class AnomalyLine(RecordPart):
    """A stdout line that is not a JSON object (RC-07), kept aside (``anomaly_lines``)."""

    line: int
    """1-based line number in the stream."""
    size_bytes: int
    excerpt: str
    """The line's start, decoded with replacement."""

    @classmethod
    def of(cls, anomaly: Anomaly) -> AnomalyLine:
        """The ledger's line of the recorder's `Anomaly`."""
        return cls(line=anomaly.line_number, size_bytes=anomaly.size_bytes,
                   excerpt=anomaly.excerpt)


class OrphanResultLine(RecordPart):
    """A tool_result that answered no tool_use seen before it (RC-10; ``orphan_results``)."""

    line: int
    """1-based stdout line that carried it."""
    tool_use_id: str | None
    result: str
    """``sha256:`` of its text."""
    repeated: bool
    """The tool_use it names had been answered already."""

    @classmethod
    def of(cls, orphan: OrphanResult) -> OrphanResultLine:
        """The ledger's line of the recorder's `OrphanResult`."""
        return cls(line=orphan.line_number, tool_use_id=orphan.tool_use_id,
                   result=orphan.result_digest, repeated=orphan.repeated)


class UnreadArtifact(RecordPart):
    """A produced file inside the workspace not read after the session (``unread_artifacts``):
    a symlink, not a regular file, or over the size cap; its event keeps its path only."""

    path: str
    reason: str
    size_bytes: int | None
    """Its size when known."""

    @classmethod
    def of(cls, unread: UnreadFile) -> UnreadArtifact:
        """The ledger's line of the recorder's `UnreadFile`."""
        return cls(path=unread.path, reason=unread.reason, size_bytes=unread.size_bytes)


class InitPolicyRecord(RecordPart):
    """What the init check held the stream to (``init_policy``), so ``retranscribe`` holds
    it to the same (RC-07); server and skill names sorted."""

    permission_mode: str
    declared_mcp_servers: list[str]
    host_skill_names: list[str]
    config_dir: str
    cwd: str | None = None
    """The workspace path the session saw; absent in a batch of config format 1 (its init
    line's ``cwd`` then tells)."""

    @classmethod
    def of(cls, policy: InitPolicy) -> InitPolicyRecord:
        """The record of ``policy`` (every key written, ``cwd`` included)."""
        return cls(permission_mode=policy.permission_mode,
                   declared_mcp_servers=sorted(policy.declared_mcp_servers),
                   host_skill_names=sorted(policy.host_skill_names),
                   config_dir=policy.config_dir, cwd=policy.cwd)

    def policy(self) -> InitPolicy:
        """The `InitPolicy` this record keeps."""
        return InitPolicy(permission_mode=self.permission_mode,
                          declared_mcp_servers=frozenset(self.declared_mcp_servers),
                          host_skill_names=frozenset(self.host_skill_names),
                          config_dir=self.config_dir, cwd=self.cwd)



Bounded = Annotated[str, StringConstraints(max_length=MAX_TEXT)]
"""A string the gateway reports: what a session or the provider sent, cut to `MAX_TEXT`."""


class TokenUsage(RecordPart):
    """A provider response's token usage as the gateway read it (``usage`` of a request).

    The fields of `sandbox.gateway.Usage`: ``message_start``'s figures, each replaced by the
    last ``message_delta`` that carries it."""

    input_tokens: int
    output_tokens: int
    cache_creation_input_tokens: int
    cache_read_input_tokens: int
    cache_creation_5m_tokens: int | None = None
    cache_creation_1h_tokens: int | None = None


class GatewayCounts(RecordPart):
    """What an attempt's provider gateway saw, summed once its harness had exited
    (``gateway``; absent in attempts written before the gateway)."""

    forwarded: int
    """Requests forwarded to the provider."""
    refused: dict[str, int]
    """What the gateway refused (its reason, with the path for a path) -> count."""
    provider_cost_usd: Cost
    """The priced requests' cost, exact USD: the provider's usage x the price table (RC-14)."""
    prices: str
    """The price table's date, ``YYYY-MM-DD``: the figures it priced with."""
    unpriced_models: list[Bounded] = []
    """Served models the price table lacks: their requests add nothing (a lower bound)."""
    unpriced_requests: int = 0
    """Forwarded requests whose cost is unknown in whole or in part (an unpriced model, no
    usage read, or a response cut before its final usage: its known part priced)."""
    login_failure: Bounded | None = None
    """Why the host's login could not be used, with how to log in again."""
    refused_rows_not_written: int = 0
    """Refused requests past the rows one attempt may write (a flood): counted in
    ``refused``, without a ``request`` row each."""
