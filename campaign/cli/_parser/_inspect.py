"""``plan``, ``seal``, ``check-transcript`` and ``doctor``: the commands that run no session."""

from __future__ import annotations

from pathlib import Path

from .._args import CheckTranscriptArgs, DoctorArgs, PlanArgs, SealArgs
from ._base import Subparsers, add_command
from ._common import harness_args, tier_args


def add_inspect_commands(sub: Subparsers) -> None:
    """Add ``plan``; ``seal``, ``check-transcript`` and ``doctor`` (`add_check_commands`)."""
    p = add_command(sub, "plan", PlanArgs, "_inspect", "cmd_plan", corpus=True,
                    help="print the plan: identity, probes, read set, session count")
    tier_args(p)
    p.add_argument("--format", choices=("text", "yaml", "json"),
                   help="text for people; yaml/json are exactly what `run --plan FILE` reads")


def add_check_commands(sub: Subparsers) -> None:
    """Add ``seal``, ``check-transcript`` and ``doctor``."""
    p = add_command(sub, "seal", SealArgs, "_inspect", "cmd_seal", corpus=True,
                    help="write one sealed workspace (the seal's rules: docs/sealing.md)")
    p.add_argument("--probe", required=True, metavar="ID", help="the probe whose session it is")
    p.add_argument("--arm", metavar="ARM", help="the arm (default present)")
    p.add_argument("--out", type=Path, required=True, metavar="DIR",
                   help="where to write it (must not exist, or be empty)")
    p.add_argument("--explain", action="store_true", help="list every removal and why")

    p = add_command(sub, "check-transcript", CheckTranscriptArgs, "_inspect",
                    "cmd_check_transcript",
                    help="the contract check (the form: well-formed); with --batch, the "
                         "evidence too: 0 clean, 1 refused, 4 could not verify",
                    description="Alone, it checks a transcript's form: the closed key sets "
                                "and the layout of the recorder contract "
                                "(docs/transcript.md). A well-formed file may still hold a "
                                "hand-edited answer: --batch BATCH also derives every event "
                                "of the file's arm again from the streams the batch kept, "
                                "with this recorder, and compares them.")
    p.add_argument("files", type=Path, nargs="+", metavar="FILE",
                   help="a transcript (transcripts/<arm>.md, or a copy); several give one "
                        "line each. Exit 0 every file well-formed (with --batch: verified "
                        "clean), 1 any refused, else 4 any could not be verified")
    p.add_argument("--batch", type=Path, metavar="BATCH",
                   help="the batch the files are transcripts of: each file's identity, rows "
                        "and events are held to what its ledger and kept streams derive to "
                        "(writes nothing; exit 4 when a stream or workspace needed was not "
                        "kept, or another runner wrote the file)")
    p.add_argument("--corpus", type=Path, metavar="DIR",
                   help="with --batch: where the batch's corpus is now (default: the path "
                        "config.yaml records); it must still plan to the same tree")

    p = add_command(sub, "doctor", DoctorArgs, "_inspect", "cmd_doctor",
                    help="host preflight: 0 all ok, 12 broken, 4 could not verify")
    p.add_argument("--api-key-env", metavar="NAME",
                   help="take the API key from this variable instead of the host's "
                        ".credentials.json")
    harness_args(p)
