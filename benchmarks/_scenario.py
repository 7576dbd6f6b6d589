"""A synthetic conversation, described independently of any library.

One turn is exactly 39 events::

    ("vad_start",)                      user starts speaking (VAD)
    ("interim", text)          x 3      interim transcriptions
    ("final", text, finalized) x 2      final transcriptions, finalized=True on the last
    ("vad_stop",)                       user stops speaking (VAD)
    ("response_start",)                 LLM full-response start
    ("text", token)            x 30     LLM text tokens, a sentence end every 10th
    ("response_end",)                   LLM full-response end

The words change from turn to turn (deterministically, no randomness), so no
library can get away with caching a single string.  Text tokens carry their
own spacing, as LLM tokens do (``"Sure"``, ``" thing"``, ...), so the
assistant message is ``"".join(tokens).strip()``; the user message is the two
finals joined by one space.

Each benchmark turns these tuples into its own library's frames *before* the
timed region.  Nothing here imports Pipecat or rxvoice.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "FRAMES_PER_TURN",
    "TURNS_USER_SPEECH_TIMEOUT",
    "Event",
    "Result",
    "build_conversation",
    "build_slotted_frames",
    "check_messages",
    "expected_messages",
]

Event = tuple  # ("kind", *payload); see the module docstring.

FRAMES_PER_TURN = 39

# "turns" mode: the speech-timeout stop strategy's ``user_speech_timeout``.
# 0.0 is the smallest value that still ends every turn exactly once (the
# timer is ``asyncio.sleep(0)``: it fires on the next loop pass, after the
# VAD stop).  Both libraries use the same value; see README.md.
TURNS_USER_SPEECH_TIMEOUT = 0.0


@dataclass(frozen=True, slots=True)
class Result:
    """One timed run.

    ``seconds``: from the first queued scenario frame to the final barrier
    reaching the sink.  ``frames``: scenario frames fed (39 per turn; pacing
    probes and the barrier are not counted).  ``messages``: number of messages
    in the context at the end.  ``ok``: the context holds exactly 2N messages,
    alternating user/assistant, with the expected contents.
    """

    seconds: float
    frames: int
    messages: int
    ok: bool

    @property
    def us_per_frame(self) -> float:
        return self.seconds / self.frames * 1e6

    @property
    def frames_per_second(self) -> float:
        return self.frames / self.seconds


# --- the conversation -------------------------------------------------------

_USER_TEXT = (
    "could you book a table for two tomorrow evening near the station "
    "please maybe at seven or eight and check whether they have a vegan "
    "menu also tell me how long it takes to walk there from my hotel"
)
_BOT_TEXT = (
    "sure thing I found a quiet place with good reviews and a vegan menu "
    "they have a free table at seven thirty the walk takes about twelve "
    "minutes along the river shall I confirm the booking for you now"
)
_USER_WORDS = _USER_TEXT.split()
_BOT_WORDS = _BOT_TEXT.split()


def _words(pool: list[str], start: int, count: int) -> list[str]:
    return [pool[(start + k) % len(pool)] for k in range(count)]


def build_conversation(turns: int) -> list[Event]:
    """Return the events of ``turns`` turns (39 events a turn)."""
    events: list[Event] = []
    for i in range(turns):
        # Two finals of 4 and 3 words; the interims grow through the first.
        first = _words(_USER_WORDS, 3 * i, 4)
        second = _words(_USER_WORDS, 3 * i + 4, 3)
        events.append(("vad_start",))
        events.append(("interim", " ".join(first[:1])))
        events.append(("interim", " ".join(first[:2])))
        events.append(("interim", " ".join(first[:3])))
        events.append(("final", " ".join(first), False))
        events.append(("final", " ".join(second) + f" {i}", True))
        events.append(("vad_stop",))
        events.append(("response_start",))
        words = _words(_BOT_WORDS, 5 * i, 30)
        for j, word in enumerate(words):
            token = word if j == 0 else " " + word
            if (j + 1) % 10 == 0:
                token += "."
            events.append(("text", token))
        events.append(("response_end",))
    assert len(events) == FRAMES_PER_TURN * turns
    return events


def expected_messages(events: list[Event]) -> list[dict[str, str]]:
    """The context a correct pair ends with: one user and one assistant message a turn."""
    messages: list[dict[str, str]] = []
    finals: list[str] = []
    tokens: list[str] = []
    for ev in events:
        kind = ev[0]
        if kind == "final":
            finals.append(ev[1])
        elif kind == "vad_stop":
            messages.append({"role": "user", "content": " ".join(finals).strip()})
            finals = []
        elif kind == "text":
            tokens.append(ev[1])
        elif kind == "response_end":
            messages.append({"role": "assistant", "content": "".join(tokens).strip()})
            tokens = []
    return messages


def check_messages(messages: list, events: list[Event]) -> bool:
    """True when ``messages`` (dicts with role/content) match the scenario.

    Requires exactly 2N messages, user/assistant alternating, with the
    expected texts.  Merged turns (N+1 messages) or lost transcripts fail.
    """
    expected = expected_messages(events)
    if len(messages) != len(expected):
        return False
    for got, want in zip(messages, expected, strict=True):
        if not isinstance(got, dict):
            return False
        if got.get("role") != want["role"] or got.get("content") != want["content"]:
            return False
    return True


# --- library-neutral slotted frames (for the reactivex floor) ---------------


@dataclass(frozen=True, slots=True)
class VadStart:
    pass


@dataclass(frozen=True, slots=True)
class VadStop:
    pass


@dataclass(frozen=True, slots=True)
class Interim:
    text: str


@dataclass(frozen=True, slots=True)
class Final:
    text: str
    finalized: bool


@dataclass(frozen=True, slots=True)
class ResponseStart:
    pass


@dataclass(frozen=True, slots=True)
class Text:
    text: str


@dataclass(frozen=True, slots=True)
class ResponseEnd:
    pass


def build_slotted_frames(events: list[Event]) -> list[object]:
    """One frozen slotted dataclass instance per event (fresh instances)."""
    out: list[object] = []
    for ev in events:
        kind = ev[0]
        if kind == "vad_start":
            out.append(VadStart())
        elif kind == "interim":
            out.append(Interim(ev[1]))
        elif kind == "final":
            out.append(Final(ev[1], ev[2]))
        elif kind == "vad_stop":
            out.append(VadStop())
        elif kind == "response_start":
            out.append(ResponseStart())
        elif kind == "text":
            out.append(Text(ev[1]))
        elif kind == "response_end":
            out.append(ResponseEnd())
        else:
            raise ValueError(f"unknown event {ev!r}")
    return out
