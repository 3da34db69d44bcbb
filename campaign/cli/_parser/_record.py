"""``record``: one session into a batch, with the flags of ``run`` that one session takes."""

from __future__ import annotations

from pathlib import Path

from campaign.batch import SESSION_TIMEOUT_S, WATCHDOG_S
from recorder import POST_RESULT_GRACE_S

from .._args import RecordArgs
from .._types import duration_s, nonnegative_int
from ._base import Subparsers, add_command
from ._common import (
    harness_args,
    network_args,
    provider_args,
    session_limit_args,
    workspace_path_arg,
)


def add_record_command(sub: Subparsers) -> None:
    """Add ``record``."""
    p = add_command(sub, "record", RecordArgs, "_record", "cmd_record", corpus=True,
                    help="record one session into a batch (named r<N>)")
    p.add_argument("--probe", required=True, metavar="ID", help="the probe's id")
    p.add_argument("--arm", required=True, metavar="ARM",
                   help="an arm of the tier (present, absent, no-hook, no-skills, "
                        "no-claude-md, mcp)")
    p.add_argument("--tier",
                   help="a tier of probe.yml (default campaign); the arm must be one of its")
    p.add_argument("--seed", type=nonnegative_int, metavar="N",
                   help="the transcripts' identity seed (default 0)")
    provider_args(p)
    p.add_argument("--produced", action="append", metavar="PATH",
                   help="an artifact the log cannot name (relative to the workspace unless "
                        "absolute); repeatable")
    p.add_argument("--batch-dir", type=Path, metavar="DIR", required=True,
                   help="the batch directory: a new or empty one, or an existing batch "
                        "(the session is added to its ledger and transcript, if the corpus "
                        "and options still match it); never under $HOME")
    p.add_argument("--session-timeout", dest="session_timeout_s", type=duration_s,
                   metavar="S", help=f"wall limit of the session (default "
                                     f"{SESSION_TIMEOUT_S:g} s)")
    p.add_argument("--watchdog", dest="watchdog_s", type=duration_s, metavar="S",
                   help=f"end the session when stdout is silent this long (default "
                        f"{WATCHDOG_S:g} s)")
    p.add_argument("--post-result-grace", dest="post_result_grace_s", type=duration_s,
                   metavar="S", help=f"see run (default {POST_RESULT_GRACE_S:g} s)")
    p.add_argument("--allow-identical-arms", action="store_true",
                   help="record an arm that would differ from present in nothing")
    harness_args(p)
    network_args(p)
    workspace_path_arg(p)
    session_limit_args(p)
