"""Helpers of the provider gateway's suites: a scripted provider over TLS, a batch run against
it with a real credential, and the batch read back (its request rows, every byte of it).

The provider is the scripted one, served over HTTPS with a certificate made per test
(trustme) and taking one credential only (``credential=``, as a real provider): a request that
reached it with anything but the real credential is answered 401 and counted, so a session
that ran at all shows the gateway swapped the credential in. The batch is a real ``run`` with
``--provider-url`` naming that provider and ``--provider-ca`` its CA (docs/gateway.md), the
real CLI under real bwrap.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import ssl
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal, TypeAlias

import trustme
import zstandard

from demo import ScriptedProvider, load_scripts
from tests.integration import kit

NETWORKS: Final = ("confined", "host")
"""Every gateway test runs once per network mode (docs/gateway.md: the way in differs)."""
KEY_VARIABLE: Final = "HEADWATER_TEST_CANARY_KEY"
"""The runner's variable that holds the canary API key (``--api-key-env``)."""

CredentialKind: TypeAlias = Literal["api-key", "login"]


def canary() -> str:
    """A fresh canary credential: no session may ever see it, no batch file may hold it."""
    return f"HEADWATER_TEST_CANARY_{secrets.token_hex(16)}"


@dataclass(frozen=True)
class Host:
    """The runner's side of one test: its credential, where it is, the provider's CA."""

    root: Path
    kind: CredentialKind
    secret: str
    """The real credential: the API key, or the login's access token."""
    refresh: str | None
    """The login's refresh token (a second canary), None for an API key."""
    ca: trustme.CA
    """The test's CA: it signs the provider's certificate, and `ca_file` holds it."""
    ca_file: Path

    def env(self) -> dict[str, str]:
        """The runner's environment: the key in `KEY_VARIABLE`, or a config directory whose
        ``.credentials.json`` holds the login (valid for an hour; never refreshed)."""
        if self.kind == "api-key":
            return kit.base_env(**{KEY_VARIABLE: self.secret})
        return kit.base_env(CLAUDE_CONFIG_DIR=str(self.root / "host-config"))

    def args(self, provider: ScriptedProvider) -> list[str]:
        """The options that point a batch at ``provider`` with this credential."""
        key = ["--api-key-env", KEY_VARIABLE] if self.kind == "api-key" else []
        return ["--provider-url", provider.url, "--provider-ca", str(self.ca_file), *key]

    @property
    def key_variable(self) -> str:
        """Where a session finds its placeholder (docs/gateway.md)."""
        return "ANTHROPIC_API_KEY" if self.kind == "api-key" else "ANTHROPIC_AUTH_TOKEN"


@contextlib.contextmanager
def host(root: Path, kind: CredentialKind = "api-key") -> Iterator[Host]:
    """A `Host` under ``root``: a fresh canary credential and a CA file (``ca.pem``)."""
    secret, refresh = canary(), canary() if kind == "login" else None
    if kind == "login":
        config = root / "host-config"
        config.mkdir(mode=0o700)
        expires_ms = int((time.time() + 3600) * 1000)
        (config / ".credentials.json").write_text(json.dumps({"claudeAiOauth": {
            "accessToken": secret, "refreshToken": refresh, "expiresAt": expires_ms,
            "scopes": ["user:inference"]}}))  # fmt: skip
        (config / ".credentials.json").chmod(0o600)
    ca = trustme.CA()
    ca_file = root / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    yield Host(root=root, kind=kind, secret=secret, refresh=refresh, ca=ca, ca_file=ca_file)


@contextlib.contextmanager
def provider(h: Host, scripts: Path, **options: Any) -> Iterator[ScriptedProvider]:
    """The scripted provider of ``scripts`` over TLS (a certificate for 127.0.0.1 from
    ``h``'s CA), taking ``h``'s credential only; ``options`` go to `ScriptedProvider`."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    h.ca.issue_cert("127.0.0.1").configure_cert(context)
    with ScriptedProvider(load_scripts(scripts), tls=context, credential=h.secret,
                          **options) as served:  # fmt: skip
        yield served


def run(h: Host, served: ScriptedProvider, corpus: Path, batch: Path, harness: Path,
        network: str, *extra: str) -> subprocess.CompletedProcess[str]:
    """``run`` of ``corpus``'s regression tier into ``batch`` against ``served``."""
    return kit.cli("run", str(corpus), "--tier", "regression", "--batch-dir", str(batch),
                   "--harness", str(harness), "--network", network, *h.args(served), *extra,
                   env=h.env())  # fmt: skip


def start(h: Host, served: ScriptedProvider, corpus: Path, batch: Path, harness: Path,
          network: str, *extra: str) -> subprocess.Popen[str]:
    """`run`, started in the background (`kit.start_cli`)."""
    return kit.start_cli("run", str(corpus), "--tier", "regression", "--batch-dir", str(batch),
                         "--harness", str(harness), "--network", network, *h.args(served),
                         *extra, env=h.env())  # fmt: skip


def request_rows(batch: Path, probe: str | None = None,
                 attempt: int | None = None) -> list[dict[str, Any]]:
    """The ledger's ``request`` rows (docs/batch.md), of one probe and attempt when named."""
    return [r for r in kit.ledger_dicts(batch) if r["kind"] == "request"
            and (probe is None or r["probe"] == probe)
            and (attempt is None or r["attempt"] == attempt)]


def final_of(batch: Path, probe: str, attempt: int) -> dict[str, Any]:
    """The final record of ``probe``'s attempt ``attempt`` (its only session)."""
    (found,) = [r for r in kit.final_list(batch) if r["probe"] == probe
                and r["attempt"] == attempt]  # fmt: skip
    return found


def every_text(batch: Path) -> Iterator[tuple[Path, bytes]]:
    """Every regular file under ``batch`` with its bytes, a kept ``.zst`` stream decompressed
    (what a colleague the batch is shared with can read)."""
    for path in kit.regular_files(batch):
        data = path.read_bytes()
        if path.name.endswith(".zst"):
            data = zstandard.ZstdDecompressor().stream_reader(data).read()
        yield path, data


def holding(batch: Path, needle: str) -> list[Path]:
    """The files of ``batch`` (streams decompressed) whose bytes contain ``needle``."""
    return [path for path, data in every_text(batch) if needle.encode() in data]


def workspace(batch: Path, probe: str, session: str = "s1") -> Path:
    """A session's kept workspace (docs/batch.md layout)."""
    return batch / "sessions" / "present" / probe / session / "workspace"


def dumped_env(text: str) -> dict[str, str]:
    """``env``'s output as name -> value (a value spanning lines is cut at its first)."""
    return dict(line.split("=", 1) for line in text.splitlines()
                if re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", line))


def live_workspace_files(pid: int, name: str) -> list[Path]:
    """Files ``attempts/<name>`` in the workspaces of runner ``pid``'s running sessions: in
    each attempt's store while it runs (docs/storage.md), a root runner's or another's."""
    from sandbox.storage import STORE_ROOT

    roots = [STORE_ROOT, Path(f"/var/tmp/headwater-campaign-{os.geteuid()}/store")]
    return sorted(path for root in roots if root.is_dir()
                  for path in root.glob(f"{pid}.*/fs/workspace/attempts/{name}"))


def hand_over(path: Path, text: str) -> None:
    """Write ``text`` at ``path`` in a running session's workspace, owned like its directory
    (the session's user) and readable by it."""
    owner = path.parent.stat()
    path.write_text(text)
    os.chown(path, owner.st_uid, owner.st_gid)
    path.chmod(0o644)


def write_script(directory: Path, name: str, match: str, turns: Sequence[Mapping[str, Any]],
                 *, model: str = kit.SERVED_MODEL) -> None:
    """One provider script of ``turns`` as given (each a turn or a fault step), no final turn
    added (`kit.write_script` adds one)."""
    directory.mkdir(parents=True, exist_ok=True)
    body = {"match": match, "model": model, "turns": list(turns)}
    (directory / f"{name}.json").write_text(json.dumps(body, indent=1), encoding="utf-8")


def curl(url: str, out: str, *, key: str, body: str = "{}") -> str:
    """A Bash command: POST ``body`` to ``url`` with ``x-api-key: key`` through the session's
    proxy when it has one (confined), the answer's body in ``attempts/<out>.json`` and its
    status in ``attempts/<out>.status``. ``url`` and ``key`` are shell words (may name
    variables)."""
    return (f'mkdir -p attempts; curl -s ${{HTTP_PROXY:+--proxy "$HTTP_PROXY"}} -X POST '
            f'-H "x-api-key: {key}" -H "content-type: application/json" '
            f"-d '{body}' -o attempts/{out}.json -w '%{{http_code}}' \"{url}\" "
            f"> attempts/{out}.status")
