"""harness_command (RC-04): flags of every arm, the task word for word as the prompt."""

from __future__ import annotations

import json
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any, ClassVar

import pytest

from recorder._command import PERMISSION_MODE, harness_command

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

MOUNT = "/opt/harness/claude"
DASH_TASK = "-x task: find the decision record\n  -- and end with its id alone  \n"


def test_harness_command_is_exactly_the_rc04_flags_then_the_prompt() -> None:
    argv = harness_command(
        harness_mount=MOUNT,
        task="Find it.",
        model="claude-sonnet-4-5",
        allowed_tools=["Read", "Grep", "Glob"],
    )
    assert argv == [
        MOUNT,
        "--output-format", "stream-json", "--verbose",
        "--model", "claude-sonnet-4-5",
        "--permission-mode", "dontAsk",
        "--setting-sources", "project,local",
        "--allowedTools", "Read Grep Glob",
        "--disallowedTools", "WebSearch WebFetch",
        "-p", "--", "Find it.",
    ]  # fmt: skip
    assert PERMISSION_MODE == "dontAsk"


@pytest.mark.parametrize("task", ["-x task", "--help", "--", DASH_TASK, "a\u2028b", " lead"])
def test_harness_command_passes_the_task_verbatim_after_p_and_the_options_end(task: str) -> None:
    argv = harness_command(harness_mount=MOUNT, task=task, model="m", allowed_tools=["Read"])
    assert argv[-3:] == ["-p", "--", task]
    assert argv.index("--") == len(argv) - 2  # every flag comes before the options end


def test_harness_command_passes_each_tool_list_as_one_argument() -> None:
    argv = harness_command(
        harness_mount=MOUNT, task="t", model="m", allowed_tools=["Read", "Bash(git log:*)"]
    )
    assert argv[argv.index("--allowedTools") + 1] == "Read Bash(git log:*)"
    assert argv[argv.index("--disallowedTools") + 1] == "WebSearch WebFetch"


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"allowed_tools": "Read"}, TypeError),
        ({"harness_mount": "claude"}, ValueError),
        ({"task": "  \n"}, ValueError),
        ({"model": ""}, ValueError),
        ({"allowed_tools": ["Read", ""]}, ValueError),
    ],
    ids=["tools-as-str", "relative-mount", "empty-task", "empty-model", "empty-tool"],
)
def test_harness_command_rejects_bad_input(kwargs: dict[str, Any], error: type[Exception]) -> None:
    args: dict[str, Any] = {
        "harness_mount": MOUNT,
        "task": "t",
        "model": "m",
        "allowed_tools": ["Read"],
    }
    args.update(kwargs)
    with pytest.raises(error):
        harness_command(**args)


class _Recorder(BaseHTTPRequestHandler):
    """A Messages API that records each request body and refuses it (400, not retried)."""

    bodies: ClassVar[list[dict[str, Any]]] = []

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length", "0"))
        self.bodies.append(json.loads(self.rfile.read(length)))
        payload = b'{"type":"error","error":{"type":"invalid_request_error","message":"test"}}'
        self.send_response(400)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def recording_api() -> Iterator[str]:
    _Recorder.bodies = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def run_cli(argv: list[str], home: Path, base_url: str) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8",
        "HOME": str(home), "CLAUDE_CONFIG_DIR": str(home),
        "ANTHROPIC_BASE_URL": base_url, "ANTHROPIC_API_KEY": "sk-test-not-a-key",
        "CLAUDE_CODE_MAX_RETRIES": "0", "DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }  # fmt: skip
    return subprocess.run(
        argv,
        env=env,
        cwd=home,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )


def first_turn_texts(bodies: list[dict[str, Any]]) -> list[str]:
    """The last text block of the first user message of each request."""
    texts = []
    for body in bodies:
        content = body["messages"][0]["content"]
        texts.append(content if isinstance(content, str) else content[-1]["text"])
    return texts


@pytest.mark.harness
@pytest.mark.timeout(120)
def test_real_cli_takes_a_task_starting_with_dash_as_the_prompt(
    harness: Path, tmp_path: Path, recording_api: str
) -> None:
    argv = harness_command(
        harness_mount=str(harness),
        task=DASH_TASK,
        model="claude-sonnet-4-5",
        allowed_tools=["Read", "Grep"],
    )
    done = run_cli(argv, tmp_path, recording_api)
    assert "unknown option" not in done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    init = [line for line in lines if line.get("subtype") == "init"]
    assert init
    assert init[0]["permissionMode"] == PERMISSION_MODE
    assert DASH_TASK in first_turn_texts(_Recorder.bodies)  # word for word, as the first turn


@pytest.mark.harness
@pytest.mark.timeout(120)
def test_real_cli_refuses_a_dash_task_placed_right_after_p(
    harness: Path, tmp_path: Path, recording_api: str
) -> None:
    """Why harness_command puts ``--`` between -p and the task: the plain form is misparsed."""
    argv = [str(harness), "-p", "-x task", "--output-format", "stream-json", "--verbose"]
    done = run_cli(argv, tmp_path, recording_api)
    assert done.returncode != 0
    assert "unknown option '-x task'" in done.stderr
    assert _Recorder.bodies == []
