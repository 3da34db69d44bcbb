"""Front matter and lines (campaign.corpus): the split, against its definition by lines."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from campaign.corpus._markdown import opens_front_matter, split_front_matter, split_lines


def _by_definition(text: str) -> tuple[str | None, str]:
    """docs/plan.md: front matter is the lines between a first line `---` and the next line
    `---`, lines ending at `\\n` only, `\\r` allowed before the `\\n` of both."""
    lines = text.split("\n")
    lines = [line + "\n" for line in lines[:-1]] + ([lines[-1]] if lines[-1] else [])
    if not lines or lines[0].rstrip("\r\n") != "---":
        return None, text
    for i in range(1, len(lines)):
        if lines[i].rstrip("\r\n") == "---":
            return "".join(lines[1:i]), "".join(lines[i + 1 :])
    return None, text


PIECES = ["---", "--", "----", " ---", "--- ", "\n", "\r", "\r\n", "id: x", "a", "", "...", "#"]


@settings(max_examples=2000, derandomize=True, database=None, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=12).map("".join))
def test_split_front_matter_is_the_line_definition(text: str) -> None:
    assert split_front_matter(text) == _by_definition(text)
    assert opens_front_matter(text.encode("utf-8")) == opens_front_matter(text)
    assert opens_front_matter(text) == (split_lines(text)[:1] != []
                                        and split_lines(text)[0].rstrip("\r\n") == "---")


def test_split_front_matter_examples() -> None:
    assert split_front_matter("---\nid: x\n---\nbody\n") == ("id: x\n", "body\n")
    assert split_front_matter("---\r\nid: x\r\n---\r\n\r\nbody") == ("id: x\r\n", "\r\nbody")
    assert split_front_matter("---\n---") == ("", "")
    assert split_front_matter("---\nid: x\n") == (None, "---\nid: x\n")
    assert split_front_matter("# Title\n---\n") == (None, "# Title\n---\n")
    assert opens_front_matter("---\nid: x\n") and not opens_front_matter("--- x\n")
    assert opens_front_matter(b"---\r\nid: x\n") and not opens_front_matter(b"----\n\xe9")
