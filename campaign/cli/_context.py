"""The context every session of an opened batch shares, built one way for run, demo, resume
and record."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from campaign.batch import host_skill_dirs
from campaign.supervisor import BatchContext
from sandbox import measure_host_layout

if TYPE_CHECKING:
    from campaign.batch import OpenBatch


def batch_context(opened: OpenBatch, *, produced_extra: tuple[str, ...] = ()) -> BatchContext:
    """The `BatchContext` of ``opened``: its options, its settled network and provider, the
    host's layout and skill directories (RC-07), measured now; ``produced_extra``: the
    artifacts ``record --produced`` names."""
    options = opened.options
    # Every batch this runner opens to run has a workspace path (format 2): a batch of
    # format 1 is refused by open_batch before anything runs.
    assert options.workspace_path is not None, "a batch of format 1 is never run"
    return BatchContext(
        batch=opened.path, corpus=opened.corpus, plan=opened.plan,
        harness_path=Path(options.harness_path), bwrap=options.bwrap,
        credentials=opened.credentials, provider_url=opened.provider_url,
        layout=measure_host_layout(),
        session_timeout_s=options.session_timeout_s, watchdog_s=options.watchdog_s,
        post_result_grace_s=options.post_result_grace_s, invocation=opened.invocation,
        workspace_path=options.workspace_path, sessions=opened.sessions,
        host_skill_dirs=host_skill_dirs(), produced_extra=produced_extra,
        discard_workspaces=options.discard_workspaces, keep_streams=options.keep_streams,
        network=opened.network, limits=options.session_limits())
