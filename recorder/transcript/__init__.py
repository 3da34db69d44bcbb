"""Transcripts: the four closed key sets, the RC-16 layout, its writer and its reader.

A transcript is one Markdown file per arm (docs/glossary.md RC-14..RC-16, seed spec
"The recorder contract"). The package is split by concern:

* ``_models``  the closed key sets `Identity`, `Event`, `Call`, `Artifact`,
  the ``## Sessions`` row `SessionRow`, and `Transcript` (cross-section checks)
* ``_yaml``    the YAML dialect of the two blocks (the only importer of ruamel)
* ``_layout``  the layout's pieces and `parse_transcript`, which reads it whole
* ``_events``  the ``## Events`` block: each event's item dumped and proved on
  its own (`item_of`), and the block read whole (`read_events`)
* ``_closed``  reading loaded YAML through the closed models
* ``_literal`` `prose_value`: how a session's value enters the prose
* ``_provider_prose`` the cost source and its agreement with the harness's figure
  (`CostSource`, `cost_source_line`), the system prompts met (`system_prompts_line`)
* ``_prose``   `prose_for`,
  `harness_versions_line` (the Claude Code versions and their census coverage),
  `served_version_of` and `unknown_init_keys_line`
* ``_spool``   `ItemSpool`: a growing transcript's proved items on disk, not in memory
* ``_streamed`` `write_streamed`, the one writer: a transcript written and proved a row at a
  time, replaced atomically
* ``_io``      `read_transcript`
* ``_errors``  the error tree below

Errors:

* TranscriptRefused  - the text (or the values) break the contract; carries ``rule``
* TranscriptUnproven - the writer's output did not read back as its input (a bug)
"""

from __future__ import annotations

from ._errors import TranscriptRefused as TranscriptRefused
from ._errors import TranscriptUnproven as TranscriptUnproven
from ._io import read_transcript as read_transcript
from ._layout import parse_transcript as parse_transcript
from ._models import HEADINGS as HEADINGS
from ._models import SESSIONS_HEADER as SESSIONS_HEADER
from ._models import Artifact as Artifact
from ._models import Call as Call
from ._models import Event as Event
from ._models import Identity as Identity
from ._models import SessionRow as SessionRow
from ._models import Transcript as Transcript
from ._prose import harness_versions_line as harness_versions_line
from ._prose import prose_for as prose_for
from ._prose import prose_value as prose_value
from ._prose import served_version_of as served_version_of
from ._prose import unknown_init_keys_line as unknown_init_keys_line
from ._provider_prose import CostSource as CostSource
from ._provider_prose import agreement_sentence as agreement_sentence
from ._provider_prose import cost_source_line as cost_source_line
from ._provider_prose import system_prompts_line as system_prompts_line
from ._spool import ItemSpool as ItemSpool
from ._streamed import write_streamed as write_streamed

__all__ = [
    "HEADINGS",
    "SESSIONS_HEADER",
    "Artifact",
    "Call",
    "CostSource",
    "Event",
    "Identity",
    "ItemSpool",
    "SessionRow",
    "Transcript",
    "TranscriptRefused",
    "TranscriptUnproven",
    "agreement_sentence",
    "cost_source_line",
    "harness_versions_line",
    "parse_transcript",
    "prose_for",
    "prose_value",
    "read_transcript",
    "served_version_of",
    "system_prompts_line",
    "unknown_init_keys_line",
    "write_streamed",
]
