"""The scripted provider's fault steps: what a request gets instead of its turn.

A fault step (docs/provider.md, "Faults") applies, ``times`` requests in a row, to the
requests for the next real turn of its script. Its kinds are the ones the pinned CLI was
seen meeting (tests/fixtures/captures/STREAM_JSON_FACTS.md, section 4): an HTTP error
status (`HttpFault`), a connection reset mid-stream (`CutFault`), and an ``error`` event in
the stream (`SseErrorFault`). ``stream_only`` makes a fault spare the CLI's non-streaming
fallback, so the fallback gets the turn. The statuses and error types are allow-lists:
those of the Messages API the captures exercised, nothing invented.
"""

from __future__ import annotations

from typing import Annotated, Final, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field

Status: TypeAlias = Literal[400, 401, 403, 404, 429, 500, 529]
"""The HTTP statuses a script may answer with (the captures' f_* situations; 403 and 404, the
answers a provider gateway may give, as docs/gateway.md observed the pinned CLI meeting them)."""
ErrorType: TypeAlias = Literal[
    "invalid_request_error", "authentication_error", "permission_error", "not_found_error",
    "rate_limit_error", "api_error", "overloaded_error"]
"""The Messages API's error types a script may name."""
ERROR_TYPES: Final[dict[int, ErrorType]] = {
    400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
    404: "not_found_error", 429: "rate_limit_error", 500: "api_error", 529: "overloaded_error"}
"""Each allowed status's error type, as the Messages API pairs them."""
STATUS_OF: Final[dict[ErrorType, Status]] = {
    "invalid_request_error": 400, "authentication_error": 401, "permission_error": 403,
    "not_found_error": 404, "rate_limit_error": 429, "api_error": 500, "overloaded_error": 529}
"""Each error type's status: how an ``sse_error`` answers a non-streaming request."""
HeaderName: TypeAlias = Literal["retry-after", "retry-after-ms", "x-should-retry"]
"""The response headers an HTTP fault may add: those the CLI's client reads to retry."""
HeaderValue: TypeAlias = Annotated[str, Field(pattern=r"^[\x20-\x7e]*$", max_length=256)]
"""A header's value: printable ASCII (no line break could end the header early)."""
CUT_AFTER_EVENTS: Final = 2
"""How many SSE events a ``cut`` sends before it resets the connection, by default."""
SSE_ERROR_AFTER_EVENTS: Final = 2
"""How many SSE events an ``sse_error`` sends before its ``error`` event, by default."""


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class HttpFault(_Strict):
    """Answer ``times`` requests for the next turn with an HTTP error status.

    The body is the Messages API's error object: ``error_type`` (default: the status's,
    `ERROR_TYPES`) and ``message`` (default ``scripted <status>``); ``headers`` are added to
    the response (e.g. ``{"retry-after": "0"}``).
    """

    fault: Literal["http"]
    status: Status
    times: int = Field(default=1, ge=1)
    error_type: ErrorType | None = None
    message: str | None = None
    headers: dict[HeaderName, HeaderValue] = Field(default_factory=dict)
    stream_only: bool = False
    """Spare a non-streaming request (the CLI's fallback): it gets the turn."""

    def kind(self) -> ErrorType:
        """The error object's ``type``: ``error_type``, else the status's."""
        return self.error_type or ERROR_TYPES[self.status]

    def text(self) -> str:
        """The error object's ``message``: ``message``, else ``scripted <status>``."""
        return self.message if self.message is not None else f"scripted {self.status}"


class CutFault(_Strict):
    """Reset the connection of ``times`` requests for the next turn: a stream after its
    first ``after_events`` SSE events, a non-streaming request before any answer."""

    fault: Literal["cut"]
    times: int = Field(default=1, ge=1)
    after_events: int = Field(default=CUT_AFTER_EVENTS, ge=0)
    stream_only: bool = False
    """Spare a non-streaming request (the CLI's fallback): it gets the turn."""


class SseErrorFault(_Strict):
    """Send ``times`` streams for the next turn an SSE ``error`` event after their first
    ``after_events`` events, then end them. A non-streaming request is answered with the
    HTTP status of ``error_type`` (`STATUS_OF`) and the same error object."""

    fault: Literal["sse_error"]
    times: int = Field(default=1, ge=1)
    error_type: ErrorType = "overloaded_error"
    message: str = "scripted stream error"
    after_events: int = Field(default=SSE_ERROR_AFTER_EVENTS, ge=0)
    stream_only: bool = False
    """Spare a non-streaming request (the CLI's fallback): it gets the turn."""


Fault: TypeAlias = HttpFault | CutFault | SseErrorFault
"""A fault step of any kind."""
FAULT_TAGS: Final = ("http", "cut", "sse_error")
"""The ``fault`` values, one per kind."""
