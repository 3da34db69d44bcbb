"""``run``, ``demo`` and ``resume``: the commands that run a batch's sessions."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Final

from campaign.batch import CONCURRENCY
from sandbox import MAX_POOL_USERS

from .._args import DemoArgs, ResumeArgs, RunArgs
from .._types import concurrency
from ._base import EPILOG, Subparsers, add_command
from ._common import (
    batch_dir_arg,
    budget_args,
    harness_args,
    limits_args,
    network_args,
    probe_arg,
    provider_args,
    provider_ca_arg,
    session_limit_args,
    tier_args,
    workspace_path_arg,
)

_EXITS: Final[dict[str, Any]] = {"epilog": EPILOG,
                                 "formatter_class": argparse.RawDescriptionHelpFormatter}
"""A batch command's help ends with the exit statuses and the quick start."""


def add_batch_commands(sub: Subparsers) -> None:
    """Add ``run``, ``demo`` and ``resume``."""
    p = add_command(sub, "run", RunArgs, "_batch", "cmd_run", corpus=True,
                    help="run a batch: probes x arms x repetitions sessions", **_EXITS)
    tier_args(p, plan_file=True)
    p.add_argument("--plan", type=Path, metavar="FILE",
                   help="a plan from `plan --format yaml|json` (its selection and tier)")
    probe_arg(p)
    provider_args(p)
    harness_args(p)
    network_args(p)
    batch_dir_arg(p)
    workspace_path_arg(p)
    limits_args(p)
    session_limit_args(p)
    budget_args(p)

    p = add_command(sub, "demo", DemoArgs, "_batch", "cmd_demo",
                    help="the bundled example corpus (tier campaign: arms present and absent, "
                         "2 repetitions, 16 sessions), the scripted provider, the real pinned "
                         "CLI under real bwrap; session timeout 300 s, watchdog 120 s (short "
                         "scripted sessions)", **_EXITS)
    batch_dir_arg(p)
    harness_args(p)
    network_args(p)
    provider_ca_arg(p)
    workspace_path_arg(p)
    p.add_argument("--concurrency", type=concurrency, metavar="N",
                   help=f"sessions at once (default {CONCURRENCY}, at most {MAX_POOL_USERS})")
    budget_args(p)

    p = add_command(sub, "resume", ResumeArgs, "_batch", "cmd_resume",
                    help="run what did not finish in a batch, with its recorded options (never "
                         "started, interrupted, or retryable)", **_EXITS)
    p.add_argument("batch", type=Path, metavar="BATCH", help="the batch directory")
    p.add_argument("--corpus", type=Path, metavar="DIR",
                   help="where the corpus is now (default: the path config.yaml records); it "
                        "must still plan to the same tree, read set, selection and lock")
    provider_ca_arg(p)
    budget_args(p)
