"""The last main-thread assistant line's ``message.id`` on the `Observation`.

Rule (docs/gateway.md, ``served_version``): the provider gateway's row whose
``message_id`` is the ``message.id`` of the last main-thread non-synthetic assistant
line names the model that served the final message. So the observation carries that id:
a subagent's line or a synthetic one never replaces it; a line without a string id
leaves none; it is cut as a row keeps it (`sandbox.gateway.MAX_TEXT`).
"""

from __future__ import annotations

from sandbox.gateway import MAX_TEXT
from tests.recorder.test_transform import asst, init, observe, result, text


def test_the_id_is_the_last_main_thread_non_synthetic_lines() -> None:
    obs = observe(
        init(),
        text("first", msg="msg_a", model="served-1"),
        text("answer", msg="msg_b", model="served-2"),
        text("sub text", msg="msg_sub", model="sub-model", parent="A"),
        text("API Error: Overloaded", msg="uuid-1", model="<synthetic>"),
        result(is_error=False),
    )
    assert obs.served_message_id == "msg_b"


def test_no_id_when_the_line_has_none_that_is_a_string() -> None:
    line = asst({"type": "text", "text": "x"}).replace(b'"id": "msg_1"', b'"id": 7')
    assert observe(init(), line, result()).served_message_id is None
    assert observe(init(), result()).served_message_id is None


def test_a_long_id_is_cut_as_a_gateway_row_keeps_it() -> None:
    long_id = "msg_" + "x" * (2 * MAX_TEXT)
    obs = observe(init(), text("answer", msg=long_id), result())
    assert obs.served_message_id == long_id[:MAX_TEXT]
