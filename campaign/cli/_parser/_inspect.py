"""``plan``, ``seal``, ``check-transcript`` and ``doctor``: the commands that run no session."""

from __future__ import annotations

from pathlib import Path

from campaign.batch import CONCURRENCY

from .._args import CheckTranscriptArgs, DoctorArgs, PlanArgs, SealArgs
from .._types import concurrency, probability
from ._base import Subparsers, add_command
from ._common import harness_args, probe_arg, tier_args


def add_inspect_commands(sub: Subparsers) -> None:
    """Add ``plan``; ``seal``, ``check-transcript`` and ``doctor`` (`add_check_commands`)."""
    p = add_command(sub, "plan", PlanArgs, "_inspect", "cmd_plan", corpus=True,
                    help="print the plan before spending: identity, probes with their "
                         "expectations, read set, session count, the smallest difference "
                         "its repetitions can detect, and with --from BATCH its cost",
                    description="Print what a batch would run, before anything is spent. Each "
                                "probe's `expect:` is checked against the corpus (an answer "
                                "not among its answers, a path no workspace of it holds, a "
                                "cite that is no document's id: refused, exit 2; "
                                "docs/expectations.md) and listed under the probe. Then, per "
                                "tier, the smallest difference in a probe's satisfied share "
                                "its repetitions can tell from noise, and with --from BATCH "
                                "the projected cost and wall time (docs/plan.md).")
    tier_args(p)
    probe_arg(p)
    p.add_argument("--format", choices=("text", "yaml", "json"),
                   help="text for people; yaml/json are exactly what `run --plan FILE` reads "
                        "(never the expectations, the sizing or the projection)")
    p.add_argument("--base-rate", dest="base_rate", type=probability, metavar="P",
                   help="the satisfied share assumed for the reference arm when sizing "
                        "(default 0.5, where a difference is hardest to detect): the plan "
                        "prints, for every tier of probe.yml (or the --tier given), the "
                        "smallest difference in a probe's satisfied share that the tier's "
                        "repetitions detect with 80%% power, two-sided 95%%")
    p.add_argument("--from", dest="from_batch", type=Path, metavar="BATCH",
                   help="project this plan's cost and wall time from a finished batch's "
                        "realized cost and mean wall time per recorded session")
    p.add_argument("--concurrency", type=concurrency, metavar="N",
                   help=f"sessions at once for the wall-time projection (default "
                        f"{CONCURRENCY}, as run)")


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
