"""RC-14 when a session prints several result lines, on the releases the census covers.

The streams (tests/fixtures/cost/README.md) were printed by the real CLI, 2.1.197 and
2.1.332, playing ``background-bash.script.json``: a background Bash ends the first result
and its notification starts a second. Every expected figure is derived here from the
script's ``usage`` and the CLI's price of the model (docs/provider.md: claude-opus-4-8,
$5 per million input tokens, $25 per million output tokens; a turn without ``usage`` is
100 in, 20 out), never from the recorder.
"""

from __future__ import annotations

import json
import math
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from recorder._cost import cost_cents
from recorder._initcheck import InitPolicy
from recorder._transform import StreamObserver

COST = Path(__file__).resolve().parent.parent / "fixtures" / "cost"
SCRIPT = COST / "background-bash.script.json"
RELEASES = ("2.1.197", "2.1.332")
INPUT_USD_PER_TOKEN = Decimal(5) / 1_000_000
OUTPUT_USD_PER_TOKEN = Decimal(25) / 1_000_000
RESULT_TURNS = ((0, 1), (2,))
"""The script's turns each result line closes: the Bash and the first text, then the text
the background command's notification asked for."""


def turn_tokens() -> list[tuple[int, int]]:
    """(input, output) tokens of each scripted turn, the provider's default where none."""
    turns = json.loads(SCRIPT.read_text(encoding="utf-8"))["turns"]
    return [(turn.get("usage", {}).get("input_tokens", 100),
             turn.get("usage", {}).get("output_tokens", 20)) for turn in turns]


def priced(tokens: list[tuple[int, int]]) -> Decimal:
    """USD of these turns as the CLI prices them."""
    return sum((inp * INPUT_USD_PER_TOKEN + out * OUTPUT_USD_PER_TOKEN for inp, out in tokens),
               Decimal(0))


def summed(tokens: list[tuple[int, int]]) -> tuple[int, int]:
    """(input, output) tokens of these turns together."""
    return sum(inp for inp, _ in tokens), sum(out for _, out in tokens)


def results(release: str) -> list[dict[str, Any]]:
    lines = (COST / f"background-bash.{release}.jsonl").read_text(encoding="utf-8").splitlines()
    return [obj for obj in map(json.loads, lines) if obj.get("type") == "result"]


def close(value: float, expected: Decimal) -> bool:
    """The CLI adds floats: 0.0035 prints as 0.0034999999999999996."""
    return abs(Decimal(repr(value)) - expected) < Decimal("1e-12")


def test_the_script_prices_to_what_the_test_expects() -> None:
    tokens = turn_tokens()
    assert tokens == [(100, 20), (300, 40), (2000, 200)]
    assert priced(tokens) == Decimal("0.0185")  # 2400 x $5/M + 260 x $25/M


@pytest.mark.parametrize("release", RELEASES)
def test_total_cost_is_cumulative_and_usage_per_result(release: str) -> None:
    """What each result line's figures mean, against what the provider sent."""
    tokens = turn_tokens()
    lines = results(release)
    assert len(lines) == len(RESULT_TURNS)
    so_far: list[tuple[int, int]] = []
    for line, turns in zip(lines, RESULT_TURNS, strict=True):
        mine = [tokens[i] for i in turns]
        so_far += mine
        assert close(line["total_cost_usd"], priced(so_far))  # cumulative
        usage = line["usage"]
        assert (usage["input_tokens"], usage["output_tokens"]) == summed(mine)
        (model_usage,) = line["modelUsage"].values()
        assert (model_usage["inputTokens"], model_usage["outputTokens"]) == summed(so_far)
        assert close(model_usage["costUSD"], priced(so_far))
        since = line.get("model_usage_since_last_result")
        if release == "2.1.197":
            assert since is None and "result_index" not in line
        else:
            assert since is not None
            (per_result,) = since.values()
            assert (per_result["inputTokens"], per_result["outputTokens"]) == summed(mine)
            assert close(per_result["costUSD"], priced(mine))
    if release != "2.1.197":
        assert [line["result_index"] for line in lines] == [0, 1]


@pytest.mark.parametrize("release", RELEASES)
def test_the_recorders_cost_cents_is_the_ceiling_of_what_the_provider_sent(
        release: str, tmp_path: Path) -> None:
    """RC-14: ceiling(100 x the session's cost) = ceiling(100 x $0.0185) = 2 cents; the
    first result alone would give 1, the two results summed 3 ($0.0035 + $0.0185)."""
    observer = StreamObserver(policy=InitPolicy("dontAsk", frozenset(), frozenset(),
                                                "/run/headwater/config"),
                              workspace=tmp_path, inside="/workspace/corpus")
    for line in (COST / f"background-bash.{release}.jsonl").read_bytes().splitlines():
        observer.feed(line)
    obs = observer.finish(end="exited", exit_status=0, tail=None)
    assert obs.state == "recorded", obs.reason
    expected = math.ceil(priced(turn_tokens()) * 100)
    assert expected == 2
    assert cost_cents([obs.cost_usd]).cents == expected
