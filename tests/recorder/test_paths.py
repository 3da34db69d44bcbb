"""RC-08: paths named outside the workspace; in-workspace symlink resolution."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from recorder._paths import (
    MAX_PATH_LOOKUPS,
    Lookups,
    outside_paths,
    relative_if_inside,
    resolve_in_workspace,
)

WS = Path("/workspace")  # not on this host: no symlink to follow, pure lexical


@pytest.mark.parametrize(
    ("tool", "tool_input", "expected"),
    [
        ("Read", {"file_path": "/workspace/docs/x.md"}, set()),
        ("Read", {"file_path": "docs/x.md"}, set()),  # relative: against the workspace
        ("Read", {"file_path": "/etc/hostname"}, {"/etc/hostname"}),
        ("Read", {"file_path": "/workspace/../etc/passwd"}, {"/etc/passwd"}),  # .. lexically
        ("Read", {"file_path": "../sibling/x"}, {"/sibling/x"}),
        ("Write", {"file_path": "/workspaceX/a"}, {"/workspaceX/a"}),  # prefix is not inside
        ("Edit", {"file_path": "~/.bashrc"}, {"~/.bashrc"}),
        ("NotebookEdit", {"notebook_path": "/opt/nb.ipynb"}, {"/opt/nb.ipynb"}),
        ("Grep", {"pattern": "TODO", "path": "/workspace"}, set()),
        ("Grep", {"pattern": "TODO", "path": "/usr/share"}, {"/usr/share"}),
        ("Glob", {"pattern": "**/*.md"}, set()),
        ("Glob", {"pattern": "/etc/*.conf"}, {"/etc/*.conf"}),
        ("Glob", {"pattern": "*.md", "path": "/home"}, {"/home"}),
        ("Read", {"file_path": "/tmp/scratch.txt"}, set()),  # /tmp is private: exempt
        ("Write", {"file_path": "/dev/null"}, set()),
        ("Write", {"file_path": "/tmpfoo"}, {"/tmpfoo"}),  # not under /tmp
        ("mcp__x__y", {"path": "/srv/data"}, {"/srv/data"}),
        ("Agent", {"description": "Read /etc", "prompt": "read /etc/passwd"}, set()),
    ],
)
def test_outside_paths_tools(tool: str, tool_input: dict[str, object], expected: set[str]) -> None:
    assert outside_paths(tool, tool_input, workspace=WS) == expected


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("cat docs/x.md", set()),
        ("cat /etc/passwd", {"/etc/passwd"}),
        ("ls ~", {"~"}),
        ("cat ~/.claude/settings.json", {"~/.claude/settings.json"}),
        ("cat ../other/x.md", {"/other/x.md"}),
        ("cat docs/../docs/x.md", set()),  # contains .. but resolves inside
        ("grep -r x /workspace/docs 2>/dev/null", set()),
        ("echo hi >/tmp/out", set()),  # redirection split off, /tmp exempt
        ("echo hi>/etc/x", {"/etc/x"}),
        ("cat /etc/a /etc/a /etc/b", {"/etc/a", "/etc/b"}),  # distinct
        ("cat 'unclosed /etc/shadow", {"/etc/shadow"}),  # bad quoting tolerated
        ("cat \"/etc/with space\"", {"/etc/with space"}),
        ("git clone https://example.invalid/repo", set()),
        ("cd docs && ls ..", {"/"}),  # words resolve against the workspace, not a cd
    ],
)
def test_outside_paths_bash_words(command: str, expected: set[str]) -> None:
    assert outside_paths("Bash", {"command": command}, workspace=WS) == expected


HOME = "/run/headwater/config"
"""The session's config directory inside the sandbox, its HOME (docs/confinement.md)."""


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        # the part after the first = when it starts with / or ~ (dd's if=, --opt=, VAR=)
        ("dd if=/etc/shadow of=out.bin", {"/etc/shadow"}),
        ("dd if=docs/x.md of=/var/tmp/y", {"/var/tmp/y"}),
        ("tool --config=/etc/tool.conf", {"/etc/tool.conf"}),
        ("DATA=/srv/data ./run.sh", {"/srv/data"}),
        ("tool --config=~/.toolrc", {f"{HOME}/.toolrc"}),
        ("tool --out=$HOME/x", {f"{HOME}/x"}),
        ("tool --out=../x", {"/x"}),  # the value's .. climbs from the workspace
        ("tool --level=3 --name=x=/y", set()),  # the first = only: x=/y is no path
        ("tool --opt=docs/x.md A=b", set()),  # relative values without .. are inside words
        ("echo a==b", set()),
        # ~ and $HOME are the config directory, not the workspace
        ("ls ~", {HOME}),
        ("cat ~/.claude/settings.json", {f"{HOME}/.claude/settings.json"}),
        ("cat $HOME/.claude.json", {f"{HOME}/.claude.json"}),
        ("cat ${HOME}/.claude.json ~/.claude.json", {f"{HOME}/.claude.json"}),  # one path
        ("ls $HOME", {HOME}),
        ("cat ~/../etc/passwd", {"/run/headwater/etc/passwd"}),  # .. lexically, from HOME
        ("ls ~root", {"~root"}),  # another user's home: as written, outside
        ("echo $HOMEWORK", set()),  # another variable
        # a short option's value glued on: the rest of the word is the path
        ("tar -C/etc -cf out.tar .", {"/etc"}),
        ("curl -o/var/tmp/x http://h", {"/var/tmp/x"}),
        ("cp -t~/x a", {f"{HOME}/x"}),
        ("ls -la -1", set()),  # options without a path
        # brace expansion: each alternative is a word of its own
        ("cat {/etc,/srv}/passwd", {"/etc/passwd", "/srv/passwd"}),
        ("cat docs/{a,b}.md", set()),  # alternatives inside the workspace
        ("echo {a,b}", set()),
        ("cat /srv/{a,{b,c}}", {"/srv/a", "/srv/b", "/srv/c"}),  # nested, as bash expands
        ("cat /srv/" + "{a,b}" * 7, {"/srv/" + "{a,b}" * 7}),  # 128 words: taken as written
    ],
)
def test_outside_paths_bash_value_words_and_home(command: str, expected: set[str]) -> None:
    assert outside_paths("Bash", {"command": command}, workspace=WS, home=HOME) == expected


def test_home_resolves_against_the_config_directory_for_every_tool() -> None:
    assert outside_paths("Read", {"file_path": "~/.claude.json"}, workspace=WS, home=HOME) == {
        f"{HOME}/.claude.json"}
    assert resolve_in_workspace("~", WS, home=HOME) == (HOME, False)
    # A workspace under HOME (never a session's: its own mount) would hold ~/x inside.
    assert resolve_in_workspace("~/ws/x", Path(f"{HOME}/ws"), home=HOME) == (
        f"{HOME}/ws/x", True)


def test_outside_paths_bash_dotdot_word_of_root() -> None:
    assert outside_paths("Bash", {"command": "ls .."}, workspace=WS) == {"/"}


def test_outside_paths_symlink_inside_workspace_pointing_out(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "docs").mkdir(parents=True)
    (ws / "docs" / "real.md").write_text("x")
    (ws / "docs" / "inner").symlink_to("real.md")
    (ws / "escape").symlink_to("/etc")  # not under /tmp, which is exempt (tmp_path is there)
    (ws / "abs-in").symlink_to(ws / "docs")
    assert outside_paths("Read", {"file_path": str(ws / "docs" / "inner")}, workspace=ws) == set()
    assert outside_paths("Read", {"file_path": "abs-in/real.md"}, workspace=ws) == set()
    assert outside_paths("Read", {"file_path": "escape/secret"}, workspace=ws) == {"/etc/secret"}
    # a planted link to a host path under /tmp is a way out of the workspace: only a
    # path NAMED as /tmp/... that names nothing on the host is private scratch (RC-08)
    (ws / "to-tmp").symlink_to(tmp_path)
    assert outside_paths("Read", {"file_path": "to-tmp/x"}, workspace=ws) == {
        str(tmp_path / "x")
    }
    # .. is collapsed lexically first: escape/../x is x, inside
    assert outside_paths("Bash", {"command": "cat escape/../x"}, workspace=ws) == set()


def test_resolve_in_workspace_never_looks_outside(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    host = tmp_path / "host"
    host.mkdir()
    (host / "link").symlink_to(ws / "inside")  # a host link back in must not be followed
    (ws / "out").symlink_to(host / "link")
    resolved, inside = resolve_in_workspace("out", ws)
    assert (resolved, inside) == (str(host / "link"), False)


def test_resolve_in_workspace_symlink_loop_counts_as_outside(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    os.symlink("b", ws / "a")
    os.symlink("a", ws / "b")
    assert resolve_in_workspace("a", ws)[1] is False


def test_relative_if_inside() -> None:
    assert relative_if_inside("/workspace/docs/x.md", WS) == "docs/x.md"
    assert relative_if_inside("docs/./x.md", WS) == "docs/x.md"
    assert relative_if_inside("/etc/hostname", WS) == "/etc/hostname"
    assert relative_if_inside("../x", WS) == "../x"


def test_outside_paths_tmp_exemption_is_for_private_scratch_only(tmp_path: Path) -> None:
    # RC-08 exempts /tmp because the sandbox mounts a private tmpfs there. A host
    # path under /tmp (a checkout, a batch) that the session names is still an
    # attempt on the host; so is a relative path whose .. climbs into /tmp.
    ws = tmp_path / "batch" / "ws"
    ws.mkdir(parents=True)
    host_file = tmp_path / "checkout" / "cli.py"
    host_file.parent.mkdir()
    host_file.write_text("x")
    assert outside_paths("Read", {"file_path": str(host_file)}, workspace=ws) == {str(host_file)}
    assert outside_paths("Bash", {"command": f"cat {host_file}"}, workspace=ws) == {str(host_file)}
    climbed = "../../etc/hostname"
    assert outside_paths("Read", {"file_path": climbed}, workspace=ws) == {
        str(tmp_path / "etc" / "hostname")
    }
    scratch = f"/tmp/{tmp_path.name}-absent-on-host/notes.txt"
    assert outside_paths("Write", {"file_path": scratch}, workspace=ws) == set()


def _deep_link_loop(ws: Path) -> None:
    """``a`` -> 62 directories down, whose bottom ``n`` links to itself: each word naming
    ``a`` costs 41 walks of 63 lstats, then counts as outside (the hop limit)."""
    bottom = ws.joinpath(*["d"] * 62)
    bottom.mkdir(parents=True)
    os.symlink("n", bottom / "n")
    os.symlink(os.path.relpath(bottom / "n", ws), ws / "a")


def test_a_sessions_lookups_are_bounded_and_what_is_past_them_counts_outside(
        tmp_path: Path) -> None:
    """docs/recorder.md, RC-08: the lstat calls one session's paths may cost are bounded
    (`MAX_PATH_LOOKUPS`), so a command of 3,000 short words naming a deep link loop is
    resolved in well under a second, its budget spent; past the budget a path counts as
    outside, unresolved, even one inside. Red without the budget: 7.7 M lstats, 35 s."""
    ws = tmp_path / "ws"
    ws.mkdir()
    _deep_link_loop(ws)
    (ws / "docs").mkdir()
    lookups = Lookups()
    started = time.monotonic()
    found = outside_paths("Bash", {"command": " ".join(["x/../a"] * 3000)}, workspace=ws,
                          lookups=lookups)  # fmt: skip
    assert time.monotonic() - started < 5.0
    assert lookups.exhausted and lookups.left == 0
    # the loop's bottom while lookups were left; then ``a`` itself, unresolved
    assert found == {str(ws.joinpath(*["d"] * 62, "n")), str(ws / "a")}
    assert resolve_in_workspace("docs", ws, lookups) == (str(ws / "docs"), False)
    assert resolve_in_workspace("docs", ws) == (str(ws / "docs"), True)  # a fresh budget


def test_the_lookup_budget_leaves_an_honest_session_room() -> None:
    # A path costs one lstat per component inside the workspace: a session naming
    # 10,000 paths of ten components each stays under it.
    assert MAX_PATH_LOOKUPS >= 10_000 * 10


def test_paths_resolve_against_the_workspace_path_the_session_saw(tmp_path: Path) -> None:
    """Blind sessions (RC-02, RC-08, RC-10): the session names paths under its fixed workspace
    path; each is looked up in the host copy and written in the session's terms."""
    host = tmp_path / "batch" / "sessions" / "absent" / "P-1" / "r1" / "workspace"
    (host / "docs").mkdir(parents=True)
    (host / "docs" / "a.md").write_text("a\n")
    os.symlink("/workspace/corpus/docs", host / "link")  # a target in the session's terms
    os.symlink("/etc", host / "out")
    inside = "/workspace/corpus"
    assert resolve_in_workspace("link/a.md", host, inside=inside) == (
        "/workspace/corpus/docs/a.md", True)
    assert resolve_in_workspace("/workspace/corpus/out/passwd", host, inside=inside) == (
        "/etc/passwd", False)
    assert relative_if_inside("/workspace/corpus/docs/a.md", host, inside=inside) == "docs/a.md"
    assert relative_if_inside(str(host / "docs" / "a.md"), host, inside=inside) == str(
        host / "docs" / "a.md")  # the host path is not where the session was
    command = f"cat {host}/docs/a.md {inside}/out/x"
    assert outside_paths("Bash", {"command": command}, workspace=host, inside=inside) == {
        f"{host}/docs/a.md", "/etc/x"}
