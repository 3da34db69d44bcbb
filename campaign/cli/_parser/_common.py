"""The argument groups several commands share: one definition each, so a flag reads the same
in every command that takes it."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Final

from campaign.batch import CONCURRENCY, RETRIES, RETRY_BACKOFF_S, SESSION_TIMEOUT_S, WATCHDOG_S
from recorder import POST_RESULT_GRACE_S
from sandbox import (
    DEFAULT_CONNECTIONS,
    DEFAULT_MEMORY_BYTES,
    DEFAULT_OPEN_FILES,
    DEFAULT_PIDS,
    DEFAULT_STDOUT_BYTES,
    DEFAULT_TMP_BYTES,
    DEFAULT_WRITE_BYTES,
    MAX_POOL_USERS,
    MIN_STDOUT_BYTES,
    format_bytes,
)

from .._types import (
    COUNT_FLOORS,
    SIZE_FLOORS,
    concurrency,
    count_at_least,
    duration_s,
    nonnegative_int,
    positive_int,
    size_at_least,
    stdout_bound,
    workspace_path,
)

SEED_HELP: Final = ("seeds the order in which the batch runs its sessions (shuffled within "
                    "each repetition; docs/batch.md) and is the transcripts' identity seed "
                    "(default 0)")


def harness_args(p: argparse.ArgumentParser) -> None:
    """``--harness PATH`` and ``--bwrap PATH``: what runs, and what confines it."""
    p.add_argument("--harness", dest="harness_path", type=Path, metavar="PATH",
                   help="the harness executable (default: the pinned Claude Code CLI under "
                        ".harness/, installed by `make`)")
    p.add_argument("--bwrap", metavar="PATH",
                   help="the bubblewrap binary (default: bwrap on PATH)")


def network_args(p: argparse.ArgumentParser) -> None:
    """``--network``: how sessions reach the provider (docs/network.md)."""
    p.add_argument("--network", choices=("confined", "host"),
                   help="confined: each session in its own network namespace whose only way "
                        "out is an egress proxy that allows its own provider gateway's "
                        "loopback host:port and nothing else; the gateway, outside the "
                        "sandbox, alone reaches the provider (default where the host "
                        "supports it; docs/network.md); host: the host's network, open: a "
                        "session may reach anything, the provider too, but holds no "
                        "credential, only a placeholder its own gateway takes (the "
                        "transcripts say the channel was open)")


def provider_ca_arg(p: argparse.ArgumentParser) -> None:
    """``--provider-ca FILE``: the TLS trust of the batch's provider gateway's upstream."""
    p.add_argument("--provider-ca", type=Path, metavar="FILE",
                   help="check the provider's TLS certificate against the CA certificates in "
                        "FILE (PEM) instead of the system's: for a provider with a private CA, "
                        "and for tests; given per invocation (resume asks for it again), "
                        "never recorded in the batch")


def provider_args(p: argparse.ArgumentParser) -> None:
    """``--model``, ``--provider``, ``--scripts``, ``--provider-url``, ``--api-key-env``,
    ``--provider-ca``."""
    p.add_argument("--model", help="the model passed to the harness (default: probe.yml's)")
    p.add_argument("--provider", choices=("anthropic", "scripted"),
                   help="anthropic: a real Messages API (default); scripted: a loopback "
                        "test double that plays --scripts, for a dry run that spends "
                        "nothing (docs/provider.md); the transcripts say which")
    p.add_argument("--scripts", type=Path, metavar="DIR",
                   help="the scripted provider's scripts (one JSON file per probe)")
    p.add_argument("--provider-url", metavar="URL",
                   help="the Messages API base URL (default $ANTHROPIC_BASE_URL, else the "
                        "public API)")
    p.add_argument("--api-key-env", metavar="NAME",
                   help="take the API key from this variable instead of the host's "
                        ".credentials.json (the name is recorded, never the value)")
    provider_ca_arg(p)


def budget_args(p: argparse.ArgumentParser) -> None:
    """The budgets: retries, cost (a batch's) and wall clock (an invocation's)."""
    p.add_argument("--retries", type=nonnegative_int, metavar="N",
                   help=f"at most N further attempts per session in this invocation, for "
                        f"states worth another attempt (default {RETRIES})")
    p.add_argument("--max-cost-cents", type=positive_int, metavar="N",
                   help="the batch's budget in US cents, over every attempt of every "
                        "invocation. The spend is the provider's own token usage of each "
                        "request, read by the session's provider gateway and priced with the "
                        "price table that ships with the product (against the scripted "
                        "provider: priced, not billed). No session starts once the spend plus "
                        "a projection for each session in flight could pass N, and once the "
                        "spend reaches N the gateways refuse further requests (the session "
                        "ends budget-stopped); exit 3, resumable with a larger N. The last N "
                        "given stays the batch's budget: a plain resume runs with it")
    p.add_argument("--est-session-cents", type=positive_int, metavar="N",
                   help="the projected cost of one session before any has a cost, in cents, "
                        "at least 1 (without it, nothing is projected until the first "
                        "attempt's cost is known)")
    p.add_argument("--max-wall", dest="max_wall_s", type=duration_s, metavar="D",
                   help="this invocation's wall-clock budget: seconds, or with s, m or h "
                        "(e.g. 8h); no session starts once it could be passed (exit 3), and "
                        "sessions already running finish, each within --session-timeout, "
                        "so the invocation may end past D (unless --hard-wall)")
    p.add_argument("--hard-wall", action=argparse.BooleanOptionalAction,
                   help="with --max-wall: at D, cancel the sessions still running (each is "
                        "written killed and rerun by resume; exit 3), so the invocation "
                        "ends at D plus the sessions' grace to stop")


def limits_args(p: argparse.ArgumentParser) -> None:
    """How sessions run: at once, their time bounds, what is kept of them."""
    p.add_argument("--concurrency", type=concurrency, metavar="N",
                   help=f"sessions at once (default {CONCURRENCY}, at most {MAX_POOL_USERS})")
    p.add_argument("--session-timeout", dest="session_timeout_s", type=duration_s,
                   metavar="S", help=f"wall limit of one session (default {SESSION_TIMEOUT_S:g} "
                                     "s); passing it ends the session timed-out")
    p.add_argument("--watchdog", dest="watchdog_s", type=duration_s, metavar="S",
                   help=f"end a session whose stdout is silent this long (default "
                        f"{WATCHDOG_S:g} s)")
    p.add_argument("--post-result-grace", dest="post_result_grace_s", type=duration_s,
                   metavar="S", help="end a harness that neither prints nor exits this long "
                                     "after its result line, and decide the session from what "
                                     f"it printed (default {POST_RESULT_GRACE_S:g} s)")
    p.add_argument("--retry-backoff", dest="retry_backoff_s", type=duration_s, metavar="S",
                   help=f"wait before a session's first retry (default {RETRY_BACKOFF_S:g} s; "
                        "doubled per retry, jittered, at most 300 s)")
    p.add_argument("--discard-workspaces", action="store_true",
                   help="delete each workspace once its attempt is recorded (large batches)")
    p.add_argument("--no-keep-streams", dest="keep_streams", action="store_false",
                   help="do not keep each attempt's stdout (compressed, in attempt-<n>/ of the "
                        "session; `show` and `retranscribe` read it): for very large batches")

    p.add_argument("--allow-identical-arms", action="store_true",
                   help="run an arm whose component the corpus lacks (it would differ from "
                        "present in nothing); refused by default, before anything is spent")


def session_limit_args(p: argparse.ArgumentParser) -> None:
    """Per-session limits: passing one ends that session limit-exceeded, never the batch."""
    g = p.add_argument_group("per-session limits (passing one ends that session "
                             "limit-exceeded, never the batch; docs/session-reach.md)")
    g.add_argument("--max-processes", type=count_at_least(COUNT_FLOORS["max_processes"]),
                   metavar="N",
                   help=f"processes and threads at once (default {DEFAULT_PIDS})")
    g.add_argument("--max-memory", dest="max_memory_bytes",
                   type=size_at_least(SIZE_FLOORS["max_memory_bytes"]), metavar="SIZE",
                   help="memory, its page cache and /tmp included, no swap (default "
                        f"{format_bytes(DEFAULT_MEMORY_BYTES)}; SIZE: bytes, or with K, M or G)")
    g.add_argument("--max-tmp", dest="max_tmp_bytes",
                   type=size_at_least(SIZE_FLOORS["max_tmp_bytes"]), metavar="SIZE",
                   help="the size of its private /tmp, and again of its private /dev/shm: "
                        "each a tmpfs of this size (default "
                        f"{format_bytes(DEFAULT_TMP_BYTES)})")
    g.add_argument("--max-writes", dest="max_write_bytes",
                   type=size_at_least(SIZE_FLOORS["max_write_bytes"]), metavar="SIZE",
                   help="bytes it may add to its workspace, log and config directories, "
                        "held by a file system of its own (a root runner) and checked while "
                        "it runs and after; past it only its workspace's listing is kept "
                        f"(default {format_bytes(DEFAULT_WRITE_BYTES)})")
    g.add_argument("--max-stdout", dest="max_stdout_bytes", type=stdout_bound, metavar="SIZE",
                   help="bytes it may print on stdout, counted as the runner reads them "
                        f"(default {format_bytes(DEFAULT_STDOUT_BYTES)}, at least "
                        f"{format_bytes(MIN_STDOUT_BYTES)})")
    g.add_argument("--max-open-files", type=count_at_least(COUNT_FLOORS["max_open_files"]),
                   metavar="N",
                   help=f"open files of each of its processes (default {DEFAULT_OPEN_FILES}; "
                        "past it a call fails, the session goes on)")
    g.add_argument("--max-connections", type=positive_int, metavar="N",
                   help="connections open at once through its egress proxy (default "
                        f"{DEFAULT_CONNECTIONS})")


def workspace_path_arg(p: argparse.ArgumentParser) -> None:
    """``--workspace-path``: where every session sees its workspace (RC-02)."""
    p.add_argument("--workspace-path", type=workspace_path, metavar="PATH",
                   help="where every session of the batch sees its workspace (its working "
                        "directory): one fixed path that names no arm, probe, session or "
                        "batch (default /workspace/<the corpus root's directory name>); "
                        "absolute, not in /tmp, /dev, /proc, /usr, /etc or another system "
                        "directory (docs/confinement.md, 'Blind sessions')")


def batch_dir_arg(p: argparse.ArgumentParser) -> None:
    """``--batch-dir`` of a new batch."""
    p.add_argument("--batch-dir", type=Path, metavar="DIR",
                   help="the batch directory (must not exist or be empty; never under "
                        "$HOME). Default: batches/ of the checkout, else "
                        "/var/tmp/headwater-campaign/batches")


def tier_args(p: argparse.ArgumentParser, *, plan_file: bool = False) -> None:
    """``--tier`` and ``--seed``; ``plan_file``: the command also takes ``--plan``."""
    p.add_argument("--tier",
                   help="a tier of probe.yml: its arms and repetitions (default campaign"
                        + ("; with --plan, the plan's)" if plan_file else ")"))
    p.add_argument("--seed", type=nonnegative_int, metavar="N", help=SEED_HELP)


def probe_arg(p: argparse.ArgumentParser) -> None:
    """``--probe ID``, repeatable: a subset of the shelf (``plan`` and ``run``)."""
    p.add_argument("--probe", dest="probes", action="append", metavar="ID",
                   help="this probe only (repeatable; default every probe of the shelf): "
                        "the plan's selection and read set are then the chosen probes', so "
                        "its identity is not the whole shelf's; an id not on the shelf is "
                        "refused with the ids that are")
