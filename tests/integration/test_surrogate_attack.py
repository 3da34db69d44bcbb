"""A session that prints lone surrogates stops nothing: its batch runs to its end.

JSON text may escape a lone surrogate (``"\\udfff"``), which no UTF-8 file can hold, or a
NUL, which no file name can hold. A stand-in harness for every session of one ``run``
batch (real bwrap, host network, one session at a time) prints, for the task that asks
it, a stream whose Write and Read paths, Bash words, tool result, final message and
result text hold them; for the other task, a plain stream.

Rule (docs/batch.md: a session's stream decides its own state, never the batch's; the
ledger writes a lone surrogate as the text ``\\uHHHH``, digests take its three-byte form):
the batch ends with status 0, every session has its final record, the hostile one is
recorded with its answer, and ``show`` prints it.

Seen red, each alone, as it was: RC-08's ``lstat`` of a path word catching only OSError
(`recorder._paths`), the final text written as strict UTF-8 (``final_text.encode()`` in
`campaign.supervisor._session`), and the read of a produced file catching only OSError
(`recorder._beneath._step`): the runner stopped on "an unexpected error (a bug)"
(UnicodeEncodeError, or ValueError: embedded null byte), exit 1, the ledger's last
record ``stopped`` with reason ``error``, the hostile session without a final record (so
each ``resume`` would run it, and stop, again). ``show`` printing the argument as strict
UTF-8 failed the same way.
"""

from __future__ import annotations

import pytest

from tests.integration import kit

pytestmark = [pytest.mark.bwrap, pytest.mark.timeout(180)]

STANDIN = r'''#!/usr/bin/python3
import json, os, sys
if sys.argv[1:] == ["--version"]:
    print("0.0.0 (surrogates)"); sys.exit(0)
odd = "surrogates" in sys.argv[-1]
s = "\\udfff" if odd else ""
n = "\\u0000" if odd else ""
lines = [
    '{"type":"system","subtype":"init","cwd":%s,"tools":["Write"],"mcp_servers":[],'
    '"model":"m","permissionMode":"dontAsk","skills":[],"plugins":[],"memory_paths":{},'
    '"claude_code_version":"0.0.0"}' % json.dumps(os.getcwd()),
    '{"type":"assistant","parent_tool_use_id":null,"message":{"id":"m1","model":"m","content":'
    '[{"type":"tool_use","id":"t1","name":"Write",'
    '"input":{"file_path":"x%s.md","content":"x"}}]}}' % s,
    '{"type":"user","parent_tool_use_id":null,"message":{"role":"user","content":'
    '[{"type":"tool_result","tool_use_id":"t1","content":"ok %s"}]}}' % s,
    '{"type":"assistant","parent_tool_use_id":null,"message":{"id":"m3","model":"m","content":'
    '[{"type":"tool_use","id":"t2","name":"Read","input":{"file_path":"x%s.md"}},'
    '{"type":"tool_use","id":"t3","name":"Write","input":{"file_path":"n%s.md","content":"x"}},'
    '{"type":"tool_use","id":"t4","name":"Bash","input":{"command":"cat ../a%s x/../%s"}}]}}'
    % (s, n, s, n),
    '{"type":"user","parent_tool_use_id":null,"message":{"role":"user","content":'
    '[{"type":"tool_result","tool_use_id":"t2","content":"x"},'
    '{"type":"tool_result","tool_use_id":"t3","content":"ok"},'
    '{"type":"tool_result","tool_use_id":"t4","content":"ok"}]}}',
    '{"type":"assistant","parent_tool_use_id":null,"message":{"id":"m2","model":"m","content":'
    '[{"type":"text","text":"Found it %s.\\nyes"}]}}' % s,
    '{"type":"result","subtype":"success","is_error":false,"api_error_status":null,'
    '"num_turns":2,"result":"%s","total_cost_usd":0.01}' % s,
]
os.write(1, ("\n".join(lines) + "\n").encode())
'''


def test_lone_surrogates_in_a_sessions_stream_are_recorded_and_the_batch_goes_on(
        bwrap: str) -> None:
    tasks = {"SUR-ODD-1": "print surrogates now.", "SUR-PLAIN-1": "print plain text now."}
    with kit.host_dir("hw-surrogate-") as root:
        corpus = kit.write_corpus(root / "corpus", tasks, tools=["Write"])
        harness = kit.write_harness(root / "claude", STANDIN)
        batch = root / "batch"
        proc = kit.run_scripted(root, corpus, harness, "--network", "host")
        assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
        finals = {probe: r for (probe, _), r in kit.finals(batch).items()}
        assert sorted(finals) == sorted(tasks)
        for probe in tasks:
            assert finals[probe]["state"] == "recorded", finals[probe]["reason"]
        odd = finals["SUR-ODD-1"]["event"]
        # A lone surrogate outside U+DC80..U+DCFF is kept as the text \uHHHH, which strict
        # JSON readers take (docs/batch.md, "Names that are not UTF-8").
        assert [c["argument"] for c in odd["calls"]] == [
            "x\\udfff.md", "x\\udfff.md", "n\0.md", "cat ../a\\udfff x/../\0"]
        stopped = [r for r in kit.ledger_dicts(batch) if r["kind"] == "stopped"]
        assert [r["reason"] for r in stopped] == ["done"]
        shown = kit.cli("show", str(batch), "present", "SUR-ODD-1", "s1", env=kit.base_env())
        assert shown.returncode == 0 and "Found it" in shown.stdout, shown.stderr
        assert kit.processes_under(root) == {}
