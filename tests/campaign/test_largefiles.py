"""``plan`` names the corpus files over 50 MB, one note line each, at most ten lines and a
count (docs/cli.md, "plan"). Only sizes are asked, so the files here are sparse."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from campaign.corpus._corpus import load_corpus
from campaign.corpus._largefiles import large_file_notes

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "demo" / "example" / "corpus"
MB = 1_000_000


def _corpus(tmp_path: Path, sizes: dict[str, int]) -> Path:
    root = tmp_path / "c"
    shutil.copytree(EXAMPLE, root)
    for rel, size in sizes.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("wb") as fp:
            fp.truncate(size)
    return root


def test_plan_names_each_file_over_50_mb_and_none_at_50_mb(tmp_path: Path) -> None:
    root = _corpus(tmp_path, {"data/at.bin": 50 * MB, "data/over.bin": 50 * MB + 1,
                              "data/big.bin": 300 * MB})
    done = subprocess.run([sys.executable, "-m", "campaign", "plan", str(root)],
                          capture_output=True, text=True, cwd=REPO, check=False)
    assert done.returncode == 0, done.stderr
    notes = [line for line in done.stderr.splitlines() if "(over 50 MB)" in line]
    assert [line.split()[1] for line in notes] == ["data/big.bin", "data/over.bin"]
    assert notes[0].startswith("note: data/big.bin is 300.0 MB (over 50 MB)")


def test_past_ten_files_the_rest_are_counted_on_one_line(tmp_path: Path) -> None:
    root = _corpus(tmp_path, {f"data/f{i:02d}.bin": (51 + i) * MB for i in range(13)})
    notes = large_file_notes(load_corpus(root))
    assert len(notes) == 11
    assert notes[0].split()[0] == "data/f12.bin"  # largest first
    assert notes[-1] == "and 3 more files over 50 MB"
