"""The context every session of an opened batch shares, built one way for run, demo, resume
and record, and the batch's one way to the provider it is built over (`supervise`)."""

from __future__ import annotations

import contextlib
import ssl
from pathlib import Path
from typing import TYPE_CHECKING

from campaign.batch import host_skill_dirs
from campaign.supervisor import BatchContext
from sandbox import CredentialsMissing, measure_host_layout
from sandbox.gateway import open_upstream

from ._errors import PreflightStop, UsageError

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from campaign.batch import OpenBatch
    from campaign.supervisor import BatchOutcome, SessionSpec, Supervisor
    from sandbox.gateway import Upstream


def batch_context(opened: OpenBatch, upstream: Upstream, *,
                  produced_extra: tuple[str, ...] = ()) -> BatchContext:
    """The `BatchContext` of ``opened``: its options, its settled network, the batch's
    ``upstream`` (every session's gateway forwards through it), the host's layout and skill
    directories (RC-07), measured now; ``produced_extra``: the artifacts ``record
    --produced`` names."""
    options = opened.options
    # Every batch this runner opens to run has a workspace path (format 2): a batch of
    # format 1 is refused by open_batch before anything runs.
    assert options.workspace_path is not None, "a batch of format 1 is never run"
    return BatchContext(
        batch=opened.path, corpus=opened.corpus, plan=opened.plan,
        harness_path=Path(options.harness_path), bwrap=options.bwrap,
        layout=measure_host_layout(),
        session_timeout_s=options.session_timeout_s, watchdog_s=options.watchdog_s,
        post_result_grace_s=options.post_result_grace_s, invocation=opened.invocation,
        workspace_path=options.workspace_path, sessions=opened.sessions, upstream=upstream,
        host_skill_dirs=host_skill_dirs(), produced_extra=produced_extra,
        discard_workspaces=options.discard_workspaces, keep_streams=options.keep_streams,
        network=opened.network, limits=options.session_limits())


async def supervise(opened: OpenBatch, build: Callable[[BatchContext], Supervisor],
                    specs: Iterable[SessionSpec], *, provider_ca: Path | None,
                    produced_extra: tuple[str, ...] = ()) -> BatchOutcome:
    """Run ``specs`` with the supervisor ``build`` makes, over the batch's one `Upstream`.

    The upstream (`sandbox.gateway.open_upstream`: the provider's URL, the host's credential,
    the TLS trust of ``provider_ca`` or the system's) is opened once for the invocation and
    closed when its sessions have ended; it is the one holder of the host's credential
    (RC-03).

    Raises:
        PreflightStop: the host's credential cannot be read (exit 12; nothing was spent).
        UsageError: the provider's URL is not one the gateway can forward to (exit 2).
    """
    async with contextlib.AsyncExitStack() as stack:
        try:
            upstream = await stack.enter_async_context(open_upstream(
                opened.provider_url, opened.credentials, ca_file=provider_ca))
        except CredentialsMissing as exc:
            raise PreflightStop(f"{exc}; nothing was started or spent. Fix: log in with "
                                "Claude Code on the host, or pass --api-key-env NAME") from exc
        except ValueError as exc:
            raise UsageError(f"the provider {opened.provider_url}: {exc}") from exc
        supervisor = build(batch_context(opened, upstream, produced_extra=produced_extra))
        return await supervisor.run(specs)


def provider_ca_file(path: Path | None) -> Path | None:
    """``--provider-ca FILE`` resolved and readable, or None for the system's trust store.

    Raises:
        UsageError: the file is missing, not a regular file, unreadable or holds no PEM CA
            certificate (exit 2), named.
    """
    if path is None:
        return None
    resolved = path.expanduser().resolve()
    try:
        if not resolved.exists():
            raise OSError(f"no such file: {resolved}")
        if not resolved.is_file():
            raise OSError(f"{resolved} is not a regular file")
        ssl.create_default_context(cafile=str(resolved))
    except ssl.SSLError as exc:
        raise UsageError(f"--provider-ca {path}: holds no CA certificate in PEM form "
                         f"({exc.reason or exc}); the provider's TLS certificate is checked "
                         "against the CA certificates in this file") from exc
    except OSError as exc:
        why = exc.strerror or str(exc)
        raise UsageError(f"--provider-ca {path}: cannot be read ({why}); the provider's TLS "
                         "certificate is checked against the CA certificates in this file "
                         "(PEM), so it must be a readable file") from exc
    return resolved
