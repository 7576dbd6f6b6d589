"""examples/marble_test.py: its marble tests run here, and so does its script form."""

from __future__ import annotations

import pytest

from tests.support import load_example

example = load_example("marble_test")

# The example's own tests, collected here (they use rxvoice's `marbles` fixture).
test_a_slow_tool_call_gets_a_filler = example.test_a_slow_tool_call_gets_a_filler
test_a_quick_tool_call_says_nothing = example.test_a_quick_tool_call_says_nothing
test_an_interruption_cancels_the_filler = example.test_an_interruption_cancels_the_filler
test_the_stage_alone_with_marbles = example.test_the_stage_alone_with_marbles
test_bad_configuration_fails_at_construction = example.test_bad_configuration_fails_at_construction


def test_every_test_of_the_example_is_collected() -> None:
    """A test added to the example is collected here too (this list is complete)."""
    theirs = {name for name in vars(example) if name.startswith("test_")}
    ours = {name for name in globals() if name.startswith("test_")}
    assert theirs <= ours


def test_marble_example_runs_as_a_script(capsys: pytest.CaptureFixture[str]) -> None:
    """`python examples/marble_test.py` runs the tests without pytest and prints the slow-tool timeline."""
    example.main()
    out = capsys.readouterr().out
    assert out.count("ok  test_") == 5
    assert "   1100  TTSSpeakFrame 'One moment.'" in out
