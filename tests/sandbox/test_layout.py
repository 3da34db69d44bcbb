"""Host layout of /bin, /lib, /lib64, /sbin and how it becomes mounts (RC-02, BC-16)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sandbox import Confinement, HostLayout, bwrap_options, measure_host_layout


def _fake_root(tmp_path: Path, *, links: dict[str, str], dirs: tuple[str, ...]) -> Path:
    root = tmp_path / "root"
    (root / "usr").mkdir(parents=True)
    for name, target in links.items():
        os.symlink(target, root / name)
    for name in dirs:
        (root / name).mkdir()
    return root


def _conf(layout: HostLayout) -> Confinement:
    return Confinement(
        workspace=Path("/srv/ws"),
        harness=Path("/srv/claude.exe"),
        log_dir=Path("/srv/log"),
        config_dir=Path("/srv/cfg"),
        host_layout=layout,
    )


def _pairs(argv: list[str], flag: str) -> list[tuple[str, str]]:
    return [(argv[i + 1], argv[i + 2]) for i, arg in enumerate(argv) if arg == flag]


def test_measure_host_layout_merged_usr_records_symlinks_with_their_readlink_targets(
    tmp_path: Path,
) -> None:
    # The targets point at directories that exist: a symlink to a directory is still a symlink.
    root = _fake_root(
        tmp_path,
        links={"bin": "usr/bin", "lib": "usr/lib", "lib64": "usr/lib64", "sbin": "usr/sbin"},
        dirs=(),
    )
    for sub in ("bin", "lib", "lib64", "sbin"):
        (root / "usr" / sub).mkdir()
    layout = measure_host_layout(root)
    assert layout == HostLayout(
        symlinks=(
            ("/bin", "usr/bin"),
            ("/lib", "usr/lib"),
            ("/lib64", "usr/lib64"),
            ("/sbin", "usr/sbin"),
        ),
        directories=(),
    )


def test_measure_host_layout_real_directories_and_absent_ones(tmp_path: Path) -> None:
    root = _fake_root(tmp_path, links={}, dirs=("bin", "lib", "sbin"))  # no /lib64 at all
    assert measure_host_layout(root) == HostLayout(
        symlinks=(), directories=("/bin", "/lib", "/sbin")
    )


def test_measure_host_layout_keeps_absolute_and_dangling_targets_unchanged(tmp_path: Path) -> None:
    root = _fake_root(
        tmp_path, links={"bin": "/usr/bin", "lib64": "usr/lib64-missing"}, dirs=("lib",)
    )
    layout = measure_host_layout(root)
    assert layout.symlinks == (("/bin", "/usr/bin"), ("/lib64", "usr/lib64-missing"))
    assert layout.directories == ("/lib",)


def test_bwrap_argv_on_symlinked_host_recreates_symlinks_and_never_binds_onto_them(
    tmp_path: Path,
) -> None:
    """BC-16: a merged-/usr host gets --symlink TARGET LINK for each, and no bind onto a link."""
    root = _fake_root(
        tmp_path,
        links={"bin": "usr/bin", "lib": "usr/lib", "lib64": "usr/lib64", "sbin": "usr/sbin"},
        dirs=(),
    )
    argv = bwrap_options(_conf(measure_host_layout(root)))
    assert _pairs(argv, "--symlink") == [
        ("usr/bin", "/bin"),
        ("usr/lib", "/lib"),
        ("usr/lib64", "/lib64"),
        ("usr/sbin", "/sbin"),
    ]
    bound = {dest for flag in ("--ro-bind", "--bind") for _, dest in _pairs(argv, flag)}
    assert bound.isdisjoint({"/bin", "/lib", "/lib64", "/sbin"})


def test_bwrap_argv_on_real_directory_host_binds_them_read_only(tmp_path: Path) -> None:
    """BC-16, other side: real directories are bound read-only at their own path."""
    root = _fake_root(tmp_path, links={}, dirs=("bin", "lib", "lib64", "sbin"))
    argv = bwrap_options(_conf(measure_host_layout(root)))
    assert _pairs(argv, "--ro-bind")[2:6] == [
        ("/bin", "/bin"),
        ("/lib", "/lib"),
        ("/lib64", "/lib64"),
        ("/sbin", "/sbin"),
    ]
    assert "--symlink" not in argv


def test_bwrap_argv_mixed_host_follows_each_path_and_skips_absent_ones(tmp_path: Path) -> None:
    root = _fake_root(tmp_path, links={"lib64": "usr/lib64", "bin": "usr/bin"}, dirs=("lib",))
    argv = bwrap_options(_conf(measure_host_layout(root)))
    start = argv.index("/etc") + 2  # after "--ro-bind /etc /etc"
    assert argv[start : argv.index("--proc")] == [
        "--symlink",
        "usr/bin",
        "/bin",
        "--ro-bind",
        "/lib",
        "/lib",
        "--symlink",
        "usr/lib64",
        "/lib64",
    ]


@pytest.mark.parametrize(
    ("symlinks", "directories"),
    [
        ((("/usr", "x"),), ()),
        ((("/bin", "usr/bin"),), ("/bin",)),
        ((("/bin", ""),), ()),
        ((), ("lib",)),
    ],
    ids=["not-a-top-level-dir", "both-symlink-and-dir", "empty-target", "relative-dir"],
)
def test_host_layout_rejects_impossible_layouts(
    symlinks: tuple[tuple[str, str], ...], directories: tuple[str, ...]
) -> None:
    with pytest.raises(ValueError, match="host layout"):
        HostLayout(symlinks=symlinks, directories=directories)
