"""The bwrap argv: exactly the RC-02 mounts, the RC-03 environment route, loud validation."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from sandbox import (
    Confinement,
    HostLayout,
    bwrap_argv,
    bwrap_options,
    check_workspace_path,
    default_workspace_path,
)

MERGED_USR = HostLayout(
    symlinks=(
        ("/bin", "usr/bin"),
        ("/lib", "usr/lib"),
        ("/lib64", "usr/lib64"),
        ("/sbin", "usr/sbin"),
    ),
    directories=(),
)
CFG = "/var/tmp/headwater-campaign/cfg/4242-p1-r1-abc"
SECRET = "sk-ant-test-7b1f0c55e2d94d1a"


def _conf(**changes: object) -> Confinement:
    fields: dict[str, object] = {
        "workspace": Path("/srv/batch/sessions/present/p1/r1/workspace"),
        "harness": Path("/opt/pinned/claude.exe"),
        "log_dir": Path("/srv/batch/sessions/present/p1/r1/log"),
        "config_dir": Path(CFG),
        "host_layout": MERGED_USR,
    }
    fields.update(changes)
    return Confinement(**fields)  # type: ignore[arg-type]


def _as_bwrap_reads_it(conf: Confinement, command: list[str], **kwargs: object) -> list[str]:
    """The command line with the ``--args`` options put in at ``--args FD``, as bwrap parses it."""
    argv = bwrap_argv(conf, command, args_fd=3, **kwargs)  # type: ignore[arg-type]
    at = argv.index("--args")
    return [*argv[:at], *bwrap_options(conf), *argv[at + 2 :]]


def test_bwrap_argv_is_exactly_the_rc02_mount_plan_for_a_known_confinement() -> None:
    """Written from RC-02/RC-03's text: every element, in order; the mounts and the working
    directory on the ``--args`` fd, never on the command line."""
    ws = "/srv/batch/sessions/present/p1/r1/workspace"
    log = "/srv/batch/sessions/present/p1/r1/log"
    conf = _conf()
    argv = bwrap_argv(conf, ["/opt/harness/claude", "-p", "-starts with a dash"],
                      bwrap="/usr/bin/bwrap", args_fd=7)  # fmt: skip
    # fmt: off
    assert argv == [
        "/usr/bin/bwrap",
        "--die-with-parent", "--new-session", "--unshare-user", "--disable-userns",
        "--unshare-pid",
        "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
        "--clearenv",
        "--args", "7",
        "--",
        "/opt/harness/claude", "-p", "-starts with a dash",
    ]
    assert bwrap_options(conf) == [
        "--ro-bind", "/usr", "/usr",
        "--ro-bind", "/etc", "/etc",
        "--symlink", "usr/bin", "/bin",
        "--symlink", "usr/lib", "/lib",
        "--symlink", "usr/lib64", "/lib64",
        "--symlink", "usr/sbin", "/sbin",
        "--proc", "/proc",
        "--dev", "/dev",
        "--tmpfs", "/dev/shm",
        "--remount-ro", "/dev",
        "--tmpfs", "/tmp",
        "--bind", ws, ws,
        "--ro-bind", "/opt/pinned/claude.exe", "/opt/harness/claude",
        "--bind", log, log,
        "--bind", CFG, CFG,
        "--remount-ro", "/",
        "--chdir", ws,
    ]
    # fmt: on


def test_a_session_confinement_mounts_its_directories_at_fixed_paths() -> None:
    """Blind sessions (RC-02): the workspace at the batch's workspace path, the config and log
    directories at theirs, the working directory the workspace path; each host path only as
    a bind's source, and no host path on the command line at all."""
    conf = _conf(workspace_mount="/workspace/corpus", log_mount="/run/headwater/log",
                 config_mount="/run/headwater/config")  # fmt: skip
    options = bwrap_options(conf)
    binds = [options[i : i + 3] for i, a in enumerate(options) if a == "--bind"]
    assert binds == [["--bind", str(conf.workspace), "/workspace/corpus"],
                     ["--bind", str(conf.log_dir), "/run/headwater/log"],
                     ["--bind", CFG, "/run/headwater/config"]]  # fmt: skip
    assert options[-2:] == ["--chdir", "/workspace/corpus"]
    argv = bwrap_argv(conf, ["/opt/harness/claude"], args_fd=3)
    assert not [arg for arg in argv if "/srv/batch" in arg or "headwater-campaign" in arg]


_MOUNTS = ("--bind", "--ro-bind", "--symlink", "--tmpfs", "--dev", "--proc")


def test_the_root_and_dev_are_read_only_and_each_tmpfs_a_session_writes_is_sized() -> None:
    """docs/confinement.md "Disk": bwrap's root tmpfs and /dev's are unsized, so both are
    remounted read-only, the root after every mount (a mount point made after it would fail);
    /tmp and /dev/shm are tmpfs of their own, each of --max-tmp's size."""
    options = bwrap_options(_conf(tmp_bytes=8 << 20, workspace_mount="/workspace/corpus"))
    last_mount = max(i for i, a in enumerate(options) if a in _MOUNTS)
    assert options[last_mount + 3 : last_mount + 5] == ["--remount-ro", "/"]
    assert options.index("--remount-ro") > options.index("/dev/shm")
    assert options[options.index("--remount-ro") + 1] == "/dev"
    for tmpfs in ("/dev/shm", "/tmp"):
        at = options.index(tmpfs)
        assert options[at - 3 : at] == ["--size", str(8 << 20), "--tmpfs"], tmpfs


def test_two_mounts_may_not_share_an_inside_path() -> None:
    with pytest.raises(ValueError, match="share one path"):
        _conf(workspace_mount="/run/headwater/log", log_mount="/run/headwater/log")


@pytest.mark.parametrize(
    ("path", "message"),
    [("workspace/x", "absolute"), ("/", "/ itself"), ("/tmp/ws", "/tmp"),
     ("/dev/shm/ws", "/dev"), ("/proc", "/proc"), ("/usr/local/ws", "/usr"),
     ("/etc/ws", "/etc"), ("/run/headwater/ws", "/run"), ("/opt/harness", "/opt/harness"),
     ("/workspace/../tmp", r"\.\."), ("/workspace/a\nb", "printable")],
)
def test_a_workspace_path_in_a_system_directory_is_refused(path: str, message: str) -> None:
    """RC-02: absolute, not in /tmp (RC-08's private scratch), /dev, /proc, /usr, /etc or
    another of the sandbox's or the host's system directories."""
    with pytest.raises(ValueError, match=message):
        check_workspace_path(path)


def test_a_workspace_path_elsewhere_is_taken_normalised() -> None:
    assert check_workspace_path("/workspace/corpus/") == "/workspace/corpus"
    assert check_workspace_path("/srv//data") == "/srv/data"
    assert check_workspace_path("/tmpfoo/x") == "/tmpfoo/x"  # a sibling of /tmp is no /tmp


@pytest.mark.parametrize(("name", "expected"), [
    ("corpus", "/workspace/corpus"), ("my docs", "/workspace/my docs"),
    ("", "/workspace/corpus"), ("..", "/workspace/corpus"), ("a\nb", "/workspace/corpus"),
    ("a\x1b]0;x\x07", "/workspace/corpus"),
])
def test_the_default_workspace_path_is_the_corpus_root_name_under_workspace(
        name: str, expected: str) -> None:
    assert default_workspace_path(name) == expected


def test_bwrap_argv_default_executable_and_harness_mount() -> None:
    argv = _as_bwrap_reads_it(_conf(), ["/opt/harness/claude"])
    assert argv[0] == "bwrap"
    assert argv[argv.index("/opt/pinned/claude.exe") + 1] == "/opt/harness/claude"


def test_bwrap_argv_places_args_fd_after_clearenv() -> None:
    """RC-03: --args before --clearenv would have the variables wiped by --clearenv."""
    argv = bwrap_argv(_conf(), ["/usr/bin/env"], args_fd=5)
    assert argv.count("--clearenv") == 1
    assert argv.count("--args") == 1
    assert argv.index("--clearenv") < argv.index("--args")
    assert argv[argv.index("--args") + 1] == "5"
    assert argv.index("--args") < argv.index("--")


def test_bwrap_argv_unshares_no_network_with_network_host() -> None:
    argv = _as_bwrap_reads_it(_conf(), ["/usr/bin/true"])
    assert "--unshare-net" not in argv
    assert "--unshare-all" not in argv
    assert "--share-net" not in argv


def test_bwrap_argv_network_none_unshares_the_network_and_binds_no_socket() -> None:
    argv = _as_bwrap_reads_it(_conf(network="none"), ["/usr/bin/true"])
    assert argv.count("--unshare-net") == 1 and argv.index("--unshare-net") < argv.index("--")
    assert "/run/headwater/egress.sock" not in argv
    with pytest.raises(ValueError, match="egress_socket"):
        _conf(network="none", egress_socket=Path("/var/tmp/e.sock"))


def test_bwrap_argv_read_only_workspace_is_a_read_only_bind_at_its_path() -> None:
    """A reader of the workspace after the session (the checker) must not change it."""
    ws = str(_conf().workspace)
    argv = _as_bwrap_reads_it(_conf(workspace_read_only=True), ["/usr/bin/true"])
    binds = [argv[i : i + 3] for i, a in enumerate(argv) if a in ("--bind", "--ro-bind")]
    assert ["--ro-bind", ws, ws] in binds and ["--bind", ws, ws] not in binds
    assert argv[argv.index("--chdir") + 1] == ws


def test_bwrap_argv_mounts_nothing_else() -> None:
    """RC-02: no host home, no batch dir, nothing beyond the listed destinations."""
    argv = _as_bwrap_reads_it(_conf(), ["/usr/bin/true"])
    dests = [argv[i + 2] for i, a in enumerate(argv) if a in ("--bind", "--ro-bind", "--symlink")]
    dests += [argv[i + 1] for i, a in enumerate(argv) if a in ("--proc", "--dev", "--tmpfs")]
    conf = _conf()
    assert sorted(dests) == sorted(
        [
            "/usr",
            "/etc",
            "/bin",
            "/lib",
            "/lib64",
            "/sbin",
            "/proc",
            "/dev",
            "/dev/shm",
            "/tmp",
            str(conf.workspace),
            "/opt/harness/claude",
            str(conf.log_dir),
            str(conf.config_dir),
        ]
    )


@pytest.mark.parametrize(
    "command",
    [[], ["claude"], ["./claude", "-p"], [""]],
    ids=["empty", "bare-name", "relative", "empty-string"],
)
def test_bwrap_argv_rejects_empty_or_relative_command(command: list[str]) -> None:
    with pytest.raises(ValueError, match="absolute"):
        bwrap_argv(_conf(), command, args_fd=3)


def test_bwrap_argv_passes_the_seccomp_filter_on_its_fd_before_the_command() -> None:
    argv = bwrap_argv(_conf(), ["/usr/bin/true"], args_fd=3, seccomp_fd=7)
    at = argv.index("--seccomp")
    assert argv[at + 1] == "7" and at < argv.index("--")
    assert "--seccomp" not in bwrap_argv(_conf(), ["/usr/bin/true"], args_fd=3)
    with pytest.raises(ValueError, match="seccomp_fd"):
        bwrap_argv(_conf(), ["/usr/bin/true"], args_fd=3, seccomp_fd=-1)


def test_bwrap_argv_rejects_negative_fd_and_empty_bwrap() -> None:
    with pytest.raises(ValueError, match="args_fd"):
        bwrap_argv(_conf(), ["/usr/bin/true"], args_fd=-1)
    with pytest.raises(ValueError, match="bwrap"):
        bwrap_argv(_conf(), ["/usr/bin/true"], bwrap="", args_fd=3)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("workspace", Path("ws"), "absolute"),
        ("log_dir", Path("log"), "absolute"),
        ("config_dir", Path("cfg"), "absolute"),
        ("harness", Path("claude.exe"), "absolute"),
        ("harness_mount", "opt/claude", "absolute"),
        ("workspace", Path("/srv/ws/../../root"), r"\.\."),
        ("workspace", Path("/"), "system mount"),
        ("workspace", Path("/usr"), "system mount"),
        ("config_dir", Path("/tmp"), "system mount"),
        ("log_dir", Path("/lib64"), "system mount"),
    ],
)
def test_confinement_rejects_unusable_mount_paths(field: str, value: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _conf(**{field: value})


def test_confinement_accepts_only_the_three_network_options() -> None:
    with pytest.raises(ValueError, match="network"):
        _conf(network="bridged")


def test_confinement_is_frozen() -> None:
    conf = _conf()
    with pytest.raises(AttributeError):
        conf.workspace = Path("/elsewhere")  # type: ignore[misc]


@pytest.mark.bwrap
def test_every_flag_of_the_argv_exists_in_the_installed_bwrap(bwrap: str) -> None:
    """Each option we emit is listed by the installed bwrap's --help (checked on 0.8.0)."""
    help_text = subprocess.run(
        [bwrap, "--help"], capture_output=True, text=True, check=False, timeout=10
    ).stdout
    argv = _as_bwrap_reads_it(_conf(network="none", workspace_read_only=True),
                              ["/usr/bin/true"], seccomp_fd=4)  # fmt: skip
    flags = {arg for arg in argv[1 : argv.index("--")] if arg.startswith("--")}
    assert {"--seccomp", "--unshare-net", "--ro-bind"} <= flags
    listed = {line.split()[0] for line in help_text.splitlines() if line.strip().startswith("--")}
    assert flags <= listed, flags - listed
    assert "[--] COMMAND" in help_text


def test_an_extra_read_only_bind_comes_after_the_session_mounts_and_before_the_root_is_sealed(
) -> None:
    """A fixture bound for a replayed situation (docs/census.md) is read-only, at its own inside
    path, and made before ``--remount-ro /`` (a mount point made after it would fail)."""
    options = bwrap_options(_conf(extra_ro_binds=((Path("/srv/fx/echo.py"), "/opt/mcp/echo.py"),)))
    at = options.index("/srv/fx/echo.py")
    assert options[at - 1 : at + 2] == ["--ro-bind", "/srv/fx/echo.py", "/opt/mcp/echo.py"]
    assert options[at + 2 : at + 4] == ["--remount-ro", "/"]
    assert "/srv/fx/echo.py" not in bwrap_argv(_conf(extra_ro_binds=(
        (Path("/srv/fx/echo.py"), "/opt/mcp/echo.py"),)), ["/usr/bin/true"], args_fd=3)


@pytest.mark.parametrize(("inside", "message"), [
    ("/run/headwater/log", "/run"), ("/tmp/x", "/tmp"), ("/opt/harness/claude", "/opt/harness"),
    ("relative", "absolute")])
def test_an_extra_bind_in_a_system_tree_or_on_another_mount_is_refused(inside: str,
                                                                         message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _conf(extra_ro_binds=((Path("/srv/fx/echo.py"), inside),))


def test_two_extra_binds_may_not_share_an_inside_path() -> None:
    with pytest.raises(ValueError, match="share one path"):
        _conf(extra_ro_binds=((Path("/srv/a"), "/opt/x"), (Path("/srv/b"), "/opt/x")))
