"""The recorder: one harness session's stream turned into its event, and its transcript.

This module is the one way in from outside the package (the import contracts of
pyproject.toml). What it offers, by concern:

* the session's command and its drive: `harness_command`, `drive_child`, `DriveResult`,
  `LineTooLong`;
* the stream read and judged: `StreamObserver`, `Observation` (with its `Anomaly` and
  `OrphanResult` lines), the init check (`InitPolicy`, `declared_mcp_servers_of`,
  `McpConfigError`), `build_event` and the `Event` and `Call` it makes;
* the one reader of a ``.mcp.json`` (`read_mcp_declaration`, `McpDeclaration`);
* every init key decided (`INIT_KEY_DECISIONS` of `InitKeyDecision`, `DECIDED_INIT_KEYS`,
  `POLICED_INIT_KEYS`, `KNOWN_CAPABILITIES`, from the releases `DECIDED_FROM`; RC-07), which
  the census reads;
* the vocabulary every layer shares: `Arm`, `ARMS`, `SessionState`, `STATES`, `Tier`,
  `DriveEnd`
  and the predicates over states (`is_recorded`, `is_failure`, `is_refusal`);
* digests, costs (`decimal_cost`, `cost_cents`, `CostSum`, `CENTS_PER_USD`,
  `SUM_PRECISION`), the price table of provider usage (`price_usage`, `priced_model`,
  `PRICE_TABLE`, `PRICE_TABLE_DATE`; RC-14), atomic writes and the bounds
  on what a session may print (`MAX_LINE_BYTES`, `MAX_SESSION_LINES`);
* the checker of a transcript file (`check_transcript_file`) and the optional checker a
  probe names (`run_checker`);
* the keys the transform reads of a line (`OBSERVED_KEYS`, `INIT_KEYS`, `LINE_KEYS`),
  which the census's printout names;
* the releases the harness census covers (`PINNED_RELEASE`, `COVERED_RELEASES`,
  `coverage`, `parse_release`), and every key of a result line decided (`RESULT_KEYS`,
  `ResultKey`, `result_keys_markdown`);
* the word set RC-13 compares answers by (`answer_words`), for the plan's check of an
  expected answer.

The transcript's models, layout and writer are the subpackage `recorder.transcript`.
See docs/internals.md.
"""

from __future__ import annotations

from ._answer import answer_words as answer_words
from ._atomic import fsync_dir as fsync_dir
from ._atomic import write_atomic as write_atomic
from ._bounds import MAX_SESSION_LINES as MAX_SESSION_LINES
from ._check import check_transcript_file as check_transcript_file
from ._command import DISALLOWED_TOOLS as DISALLOWED_TOOLS
from ._command import PERMISSION_MODE as PERMISSION_MODE
from ._command import SETTING_SOURCES as SETTING_SOURCES
from ._command import harness_command as harness_command
from ._cost import CENTS_PER_USD as CENTS_PER_USD
from ._cost import SUM_PRECISION as SUM_PRECISION
from ._cost import CostSum as CostSum
from ._cost import cost_cents as cost_cents
from ._cost import decimal_cost as decimal_cost
from ._digest import DIGEST_PREFIX as DIGEST_PREFIX
from ._digest import digest_bytes as digest_bytes
from ._digest import digest_file as digest_file
from ._digest import digest_text as digest_text
from ._digest import tree_digest as tree_digest
from ._driver import POST_RESULT_GRACE_S as POST_RESULT_GRACE_S
from ._driver import DriveResult as DriveResult
from ._driver import drive_child as drive_child
from ._errors import LineTooLong as LineTooLong
from ._event import UnreadFile as UnreadFile
from ._event import build_event as build_event
from ._event import observed_calls as observed_calls
from ._findings import run_checker as run_checker
from ._harness import INIT_KEYS as INIT_KEYS
from ._harness import LINE_KEYS as LINE_KEYS
from ._harness import OBSERVED_KEYS as OBSERVED_KEYS
from ._harness import json_values as json_values
from ._initcheck import MCP_JSON as MCP_JSON
from ._initcheck import InitPolicy as InitPolicy
from ._initcheck import McpConfigError as McpConfigError
from ._initcheck import McpDeclaration as McpDeclaration
from ._initcheck import declared_mcp_servers_of as declared_mcp_servers_of
from ._initcheck import host_skill_names as host_skill_names
from ._initcheck import read_mcp_declaration as read_mcp_declaration
from ._initkeys import DECIDED_FROM as DECIDED_FROM
from ._initkeys import DECIDED_INIT_KEYS as DECIDED_INIT_KEYS
from ._initkeys import INIT_KEY_DECISIONS as INIT_KEY_DECISIONS
from ._initkeys import KNOWN_CAPABILITIES as KNOWN_CAPABILITIES
from ._initkeys import POLICED_INIT_KEYS as POLICED_INIT_KEYS
from ._initkeys import InitKeyDecision as InitKeyDecision
from ._lines import MAX_LINE_BYTES as MAX_LINE_BYTES
from ._observation import Anomaly as Anomaly
from ._observation import OrphanResult as OrphanResult
from ._prices import PRICE_TABLE as PRICE_TABLE
from ._prices import PRICE_TABLE_DATE as PRICE_TABLE_DATE
from ._prices import price_usage as price_usage
from ._prices import priced_model as priced_model
from ._releases import COVERED_RELEASES as COVERED_RELEASES
from ._releases import PINNED_RELEASE as PINNED_RELEASE
from ._releases import Coverage as Coverage
from ._releases import coverage as coverage
from ._releases import parse_release as parse_release
from ._resultkeys import RESULT_KEYS as RESULT_KEYS
from ._resultkeys import ResultKey as ResultKey
from ._resultkeys import result_keys_markdown as result_keys_markdown
from ._transform import Observation as Observation
from ._transform import StreamObserver as StreamObserver
from ._validation import describe_errors as describe_errors
from ._validation import describe_validation as describe_validation
from ._vocab import ARMS as ARMS
from ._vocab import NOTHING_SPENT as NOTHING_SPENT
from ._vocab import STATES as STATES
from ._vocab import Arm as Arm
from ._vocab import DriveEnd as DriveEnd
from ._vocab import SessionState as SessionState
from ._vocab import Tier as Tier
from ._vocab import is_failure as is_failure
from ._vocab import is_recorded as is_recorded
from ._vocab import is_refusal as is_refusal
from .transcript import Call as Call
from .transcript import Event as Event
