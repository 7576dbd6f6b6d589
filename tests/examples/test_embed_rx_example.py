"""examples/embed_rx.py: rxvoice operators inside an existing Rx app, in virtual time."""

from __future__ import annotations

import pytest

from tests.support import load_example

example = load_example("embed_rx")


def test_the_app_sees_sentences_replies_and_the_conversation_at_exact_times() -> None:
    """Turns end 0.6 s after the last message, sentences follow the tokens, every write is saved, once."""
    desk = example.run(echo=False)
    assert desk.displayed == [
        (0.7, "Hello!"), (0.85, "How can I help?"),
        (3.2, "I'm sorry to hear that."), (3.6, "I have started a refund for order 1042."),
        (3.75, "It takes three days."),
        (5.75, "You're welcome."), (5.9, "Have a good day!"),
    ]
    assert [(at, done.completed) for at, done in desk.audit] == [(0.85, True), (3.75, True), (5.9, True)]
    assert desk.audit[1][1].text == " ".join(text for at, text in desk.displayed[2:5])
    assert [n for _, n in desk.saved] == [1, 2, 3, 4, 5, 6, 7]
    assert desk.sentences_per_second == [2, 0, 0, 3, 0, 2, 0, 0]
    messages = desk.context.messages
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user", "assistant", "user", "assistant"]
    assert messages[3]["content"] == "My parcel arrived broken. I'd like a refund."  # two messages, one turn


def test_runs_are_deterministic() -> None:
    """Two runs of the same events record exactly the same thing (virtual time, no threads)."""
    first, second = example.run(echo=False), example.run(echo=False)
    assert first.displayed == second.displayed and first.saved == second.saved


def test_heartbeats_never_reach_the_conversation() -> None:
    """The app's own filter runs before rxvoice: a bus of heartbeats only writes nothing."""
    desk = example.run([(0.0, example.Heartbeat()), (1.0, example.Heartbeat())], echo=False)
    assert desk.displayed == [] and [n for _, n in desk.saved] == [1]


def test_embed_example_runs_as_a_script(capsys: pytest.CaptureFixture[str]) -> None:
    """`python examples/embed_rx.py` prints what the app displayed, logged and saved."""
    example.run()
    out = capsys.readouterr().out
    assert "   3.60  I have started a refund for order 1042." in out
    assert "saved conversation sizes: [1, 2, 3, 4, 5, 6, 7]" in out
    assert "  user: My parcel arrived broken. I'd like a refund." in out
