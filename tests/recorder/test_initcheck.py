"""RC-07, the init-line check: BC-08's shape drift, and one test per policed field."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from recorder._initcheck import (
    MAX_MCP_JSON_BYTES,
    InitPolicy,
    McpConfigError,
    check_init,
    declared_mcp_servers_of,
    failed_declared_mcp_servers,
    host_skill_names,
    read_mcp_declaration,
)

BUG_INPUTS = Path(__file__).resolve().parent.parent / "fixtures" / "bug_inputs"
VARIANTS = [json.loads(line)
            for line in (BUG_INPUTS / "BC-08_variants.jsonl").read_text().splitlines()
            if line.strip()]
EXPECTED = {k: v for k, v in json.loads((BUG_INPUTS / "BC-08_expected.json").read_text()).items()
            if not k.startswith("_")}
# The shared fixture (bug_inputs/README.md): workspace /ws, config dir /cfg, dontAsk,
# and a .mcp.json (BC-08_mcp.json) that declares only `docs`.
BC08_POLICY = InitPolicy(
    permission_mode="dontAsk",
    declared_mcp_servers=frozenset(
        json.loads((BUG_INPUTS / "BC-08_mcp.json").read_text())["mcpServers"]),
    host_skill_names=frozenset(),
    config_dir="/cfg",
)


def test_bc08_fixture_is_complete() -> None:
    assert BC08_POLICY.declared_mcp_servers == frozenset({"docs"})
    assert sorted(v["_variant"] for v in VARIANTS) == sorted(EXPECTED)


@pytest.mark.parametrize("variant", VARIANTS, ids=[v["_variant"] for v in VARIANTS])
def test_check_init_bc08_variants(variant: dict[str, Any]) -> None:
    verdict = EXPECTED[variant["_variant"]]["verdict"]
    reasons = check_init(variant, BC08_POLICY)
    failed = failed_declared_mcp_servers(variant, BC08_POLICY)
    if verdict == "refuse":
        assert reasons, EXPECTED[variant["_variant"]]["why"]
        assert all(r.startswith("") for r in reasons)
    elif verdict == "accept":
        assert reasons == []
        assert failed == []
    else:
        assert verdict == "accept_with_env_fault"
        assert reasons == []
        assert failed == ["docs"]


# A clean 2.1.197 init line (captures/a_read_answer.jsonl, trimmed) for the unit tests.
CLEAN: dict[str, Any] = {
    "type": "system", "subtype": "init", "cwd": "/workspace", "tools": ["Read"],
    "mcp_servers": [], "model": "claude-opus-4-8[1m]", "permissionMode": "dontAsk",
    "skills": ["deep-research", "verify"], "plugins": [],
    "memory_paths": {"auto": "/home/agent/projects/-workspace/memory/"},
    "claude_code_version": "2.1.197",
}
POLICY = InitPolicy("dontAsk", frozenset({"echo"}), frozenset({"my-host-skill"}), "/home/agent")


def _with(**changes: Any) -> dict[str, Any]:
    init = copy.deepcopy(CLEAN)
    for key, value in changes.items():
        if value is _ABSENT:
            del init[key]
        else:
            init[key] = value
    return init


_ABSENT = object()


def test_check_init_clean_line_accepts() -> None:
    assert check_init(CLEAN, POLICY) == []


@pytest.mark.parametrize(
    "mode", ["bypassPermissions", "default", "acceptEdits", "plan", "auto", "DONTASK"])
def test_check_init_permission_mode_allow_list(mode: str) -> None:
    assert check_init(_with(permissionMode=mode), POLICY) == [
        f"permissionMode = {mode!r}: the driver asked for 'dontAsk' (an allow-list of one) "
        "(docs/glossary.md: RC-07)"
    ]


@pytest.mark.parametrize(
    ("plugins", "refused"),
    [
        ([{"name": "x", "path": "builtin", "source": "x@builtin"}], False),
        ([{"name": "x", "path": "builtin"}], False),
        (["x@builtin"], False),
        # --plugin-dir: the real 2.1.197 shape (captures/g_config.jsonl)
        ([{"name": "demo-plugin", "path": "/opt/plugins/demo-plugin",
           "source": "demo-plugin@inline"}], True),
        # a real path that claims a builtin source is not builtin
        ([{"name": "x", "path": "/cfg/plugins/x", "source": "x@builtin"}], True),
        ([{"name": "x", "path": "builtin", "source": "x@market"}], True),
        (["x@market"], True),
        ([{"name": "x"}], True),  # no path: unknown shape
        ([42], True),
    ],
)
def test_check_init_plugins_must_be_builtin(plugins: list[Any], refused: bool) -> None:
    assert bool(check_init(_with(plugins=plugins), POLICY)) is refused


@pytest.mark.parametrize(
    ("servers", "refused"),
    [
        ([{"name": "echo", "status": "connected"}], False),
        ([{"name": "echo", "status": "failed"}], False),  # env-fault, not a refusal
        ([{"name": "other", "status": "connected"}], True),
        ([{"name": "other", "status": "failed"}], True),
        (["echo"], True),
        ([{"name": "echo"}], True),
    ],
)
def test_check_init_mcp_servers_must_be_declared(servers: list[Any], refused: bool) -> None:
    assert bool(check_init(_with(mcp_servers=servers), POLICY)) is refused


def test_failed_declared_mcp_servers_names_only_declared_failed() -> None:
    init = _with(mcp_servers=[{"name": "echo", "status": "failed"},
                              {"name": "other", "status": "failed"},
                              {"name": "ok", "status": "connected"}])
    assert failed_declared_mcp_servers(init, POLICY) == ["echo"]


@pytest.mark.parametrize(
    ("skills", "refused"),
    [
        (["hello", "verify"], False),
        (["demo-plugin:plug-skill"], True),  # plugin namespace (captures/g_config.jsonl)
        (["my-host-skill"], True),  # a host skill directory's name
        ([{"name": "hello"}], True),
    ],
)
def test_check_init_skills(skills: list[Any], refused: bool) -> None:
    assert bool(check_init(_with(skills=skills), POLICY)) is refused


@pytest.mark.parametrize(
    ("memory", "refused"),
    [
        ({"auto": "/home/agent/projects/-workspace/memory/"}, False),
        ({}, False),
        ([], False),
        (["/home/agent/m"], False),
        ({"auto": "/home/agent"}, False),
        ({"team": "/home/hostuser/team/"}, True),
        ({"auto": "/home/agent/../hostuser/m"}, True),  # .. resolved lexically
        ({"auto": "/home/agentx/m"}, True),  # a sibling with a common prefix
        ({"auto": "projects/m"}, True),  # relative: not provably inside
        ({"auto": ["/home/agent/m"]}, True),
        ("/home/agent/m", True),  # unknown shape, even though inside
        (None, True),
    ],
)
def test_check_init_memory_paths(memory: Any, refused: bool) -> None:
    assert bool(check_init(_with(memory_paths=memory), POLICY)) is refused


@pytest.mark.parametrize(
    "field", ["permissionMode", "plugins", "mcp_servers", "skills", "memory_paths"])
def test_check_init_missing_policed_field_refuses(field: str) -> None:
    reasons = check_init(_with(**{field: _ABSENT}), POLICY)
    assert reasons == [
        f"{field} is missing from the init line: a policed field (fail closed) "
        "(docs/glossary.md: RC-07)"]


@pytest.mark.parametrize(
    ("changes", "named"),
    [
        ({"permissionMode": "plan"}, "permissionMode = 'plan': "),
        ({"permissionMode": 7}, "permissionMode = 7: unknown shape (int; fail closed)"),
        ({"plugins": [{"name": "lsp", "path": "/cfg/plugins/lsp"}]},
         "plugins[0].path = '/cfg/plugins/lsp': plugin 'lsp' is not builtin"),
        ({"plugins": ["ok@builtin", "lsp@market"]}, "plugins[1] = 'lsp@market': "),
        ({"mcp_servers": [{"name": "echo", "status": "connected"},
                          {"name": "search", "status": "needs-auth"}]},
         "mcp_servers[1].name = 'search': not declared by the workspace's .mcp.json "
         "(status 'needs-auth')"),
        ({"skills": ["hello", "p:s"]}, "skills[1] = 'p:s': carries a plugin namespace"),
        ({"skills": ["my-host-skill"]},
         "skills[0] = 'my-host-skill': is the name of a host skill directory"),
        ({"memory_paths": {"team": "/home/u/m"}},
         "memory_paths.team = '/home/u/m': outside the session's config directory"),
        ({"memory_paths": "/home/agent/m"},
         "memory_paths = '/home/agent/m': unknown shape (str; fail closed)"),
    ],
)
def test_check_init_refusal_names_rule_field_and_value(changes: dict[str, Any], named: str) -> None:
    """a refusal names the rule, the field and the value."""
    reasons = check_init(_with(**changes), POLICY)
    assert len(reasons) == 1
    assert reasons[0].startswith(named), reasons[0]


def test_check_init_refusal_value_is_bounded() -> None:
    reasons = check_init(_with(permissionMode="x" * 10_000), POLICY)
    assert len(reasons[0]) < 300 and reasons[0].startswith("permissionMode = 'xxx")


def test_check_init_ignores_unknown_fields() -> None:
    assert check_init(_with(new_thing={"a": 1}, betas=["x"]), POLICY) == []


def test_declared_mcp_servers_of(tmp_path: Path) -> None:
    assert declared_mcp_servers_of(tmp_path) == frozenset()  # absent
    (tmp_path / ".mcp.json").write_text('{"mcpServers": {"echo": {}, "broken": {}}}')
    assert declared_mcp_servers_of(tmp_path) == frozenset({"echo", "broken"})
    (tmp_path / ".mcp.json").write_text("{}")
    assert declared_mcp_servers_of(tmp_path) == frozenset()


@pytest.mark.parametrize("text", ['{"mcpServers": ', "[]", '{"mcpServers": []}', "\xff"])
def test_declared_mcp_servers_of_unparsable_raises(tmp_path: Path, text: str) -> None:
    (tmp_path / ".mcp.json").write_bytes(text.encode("latin-1"))
    with pytest.raises(McpConfigError, match=r"\.mcp\.json"):
        declared_mcp_servers_of(tmp_path)


@pytest.mark.parametrize("name", ["a b", "x/y", "", "é", "a\nb"])
def test_a_server_name_that_cannot_be_a_tool_name_is_refused(tmp_path: Path, name: str) -> None:
    # The one reader checks the name too: the mcp arm allows each server as mcp__<server>.
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"ok": {}, name: {}}}))
    with pytest.raises(McpConfigError, match="is not \\[A-Za-z0-9_-\\]\\+"):
        read_mcp_declaration(tmp_path)


def test_the_declaration_names_its_file_and_sorts_its_servers(tmp_path: Path) -> None:
    (tmp_path / ".mcp.json").write_text('{"mcpServers": {"b-2": {}, "A_1": {}}}')
    declaration = read_mcp_declaration(tmp_path)
    assert declaration.path == tmp_path / ".mcp.json"
    assert declaration.sorted() == ("A_1", "b-2")


def test_a_mcp_json_over_the_bound_is_refused_unread(tmp_path: Path) -> None:
    # The runner reads at most its bound of it (here 64 bytes): the valid 65-byte
    # declaration is refused, the 64-byte one read.
    head = '{"mcpServers": {"echo": {}}, "pad": "'
    (tmp_path / ".mcp.json").write_text(head + "x" * (64 - len(head) - 2) + '"}')
    assert read_mcp_declaration(tmp_path, max_bytes=64).servers == frozenset({"echo"})
    (tmp_path / ".mcp.json").write_text(head + "x" * (65 - len(head) - 2) + '"}')
    with pytest.raises(McpConfigError, match="over 64 bytes"):
        read_mcp_declaration(tmp_path, max_bytes=64)


def test_the_mcp_json_bound_is_8_mib() -> None:
    """docs/arms.md: a server declaration is read up to 8 MiB."""
    assert MAX_MCP_JSON_BYTES == 8 * 1024 * 1024


def test_host_skill_names(tmp_path: Path) -> None:
    first, second = tmp_path / "cfg-skills", tmp_path / "home-skills"
    (first / "alpha").mkdir(parents=True)
    (second / "beta").mkdir(parents=True)
    (second / "not-a-skill.md").write_text("x")
    assert host_skill_names([first, second, tmp_path / "absent"]) == frozenset({"alpha", "beta"})


CWD_POLICY = InitPolicy("dontAsk", frozenset({"echo"}), frozenset({"my-host-skill"}),
                        "/home/agent", cwd="/workspace")


def test_check_init_accepts_the_batch_workspace_path_as_cwd() -> None:
    """Blind sessions (RC-02, RC-07): the only cwd an init line may show is the batch's one
    workspace path."""
    assert check_init(CLEAN, CWD_POLICY) == []


@pytest.mark.parametrize(
    ("cwd", "reason"),
    [
        ("/var/tmp/b/sessions/absent/HW-PRB-0003/r1/workspace",
         "cwd = '/var/tmp/b/sessions/absent/HW-PRB-0003/r1/workspace': is not the batch's "
         "workspace path /workspace (docs/glossary.md: RC-07)"),
        ("/workspace/", "cwd = '/workspace/': is not the batch's workspace path /workspace "
                        "(docs/glossary.md: RC-07)"),
        ("/workspace/sub", "cwd = '/workspace/sub': is not the batch's workspace path "
                           "/workspace (docs/glossary.md: RC-07)"),
        (_ABSENT, "cwd is missing from the init line: a policed field (fail closed) "
                  "(docs/glossary.md: RC-07)"),
        (["/workspace"], "cwd = ['/workspace']: unknown shape (list; fail closed) "
                         "(docs/glossary.md: RC-07)"),
    ],
    ids=["a-batch-path", "trailing-slash", "below", "missing", "a-list"],
)
def test_check_init_refuses_any_other_cwd(cwd: Any, reason: str) -> None:
    """Fail closed: another path, a missing cwd or a shape not a string refuses."""
    assert check_init(_with(cwd=cwd), CWD_POLICY) == [reason]


def test_check_init_without_a_workspace_path_does_not_police_cwd() -> None:
    assert check_init(_with(cwd="/anywhere"), POLICY) == []
