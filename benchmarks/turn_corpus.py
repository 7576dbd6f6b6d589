"""A labelled turn-taking corpus made on demand: hundreds of synthetic calls, split into tune and report.

Every call is one caller's side of a phone call, spoken by espeak-ng and laid
out with sox and numpy, with a ``<name>.transcript.json`` beside each WAV in
the format ``rxvoice eval`` and ``rxvoice turns`` read (segments with
``text``/``start``/``end``/``turn_end``, plus a ``meta`` object). Nothing is
committed: the calls are generated into a cache folder, the same bytes for
the same ``--series`` and ``--calls`` on the same espeak-ng and sox.

What varies, so that no word list or timeout can learn it by heart:

* where a caller pauses mid-turn: after a subordinator ("because", "unless"),
  a relative pronoun ("that", "which"), a modal and its subject ("could you"),
  any preposition ("towards", "behind"), a determiner or possessive ("another",
  "her"), a verb that needs its object, an adjective before its noun, a filler,
  between list items, inside a number or a spelled name read in groups, and
  after a restart ("I want" ... "actually");
* turn ends that look unfinished to a word list: short answers, a name or a
  number alone, "... or something", "so" said as an end, statements used as
  questions, a trailing pronoun or particle;
* pauses of 0.3 to 2.0 s (log-uniform), gaps of 1.2 to 2.5 s between turns;
* how the pause sounds (the call's *prosody*, half the calls each, by a fixed
  rule):

  - ``sentence``: each turn is spoken as **one** utterance (espeak-ng's SSML
    mode, a ``<break/>`` at each pause), so the words before a mid-turn pause
    keep the sentence's unfinished intonation, as a person pausing
    mid-sentence does; only the turn's last words fall like an end;
  - ``segments``: each segment is spoken on its own, so every pause comes
    after words said like a sentence of their own (three in four with espeak's
    comma intonation, the others flat): a voice that gives the audio model no
    cue, the hard case for it (and what many TTS-made test sets sound like);
* the voice (espeak-ng languages and variants), 130-200 words a minute,
  pitch 25-75, speech level -18 to -36 dBFS RMS, drawn pink noise in about
  four calls of ten, a telephone band (300-3400 Hz through 8 kHz) in one of five.

The split is fixed by rule, not by chance: the templates of each kind and the
voices are numbered, even numbers go to ``tune``, odd ones to ``report``, and a
call draws only from its split's templates and voices. Tune on ``tune``; report
``report``, whose texts a tuner never reads. The prosody is in the file name
(``c0001-sentence.wav``, ``c0003-segments.wav``): calls 0, 1, 4, 5, ... are
``sentence``, 2, 3, 6, 7, ... ``segments``, so each split has both.

    python benchmarks/turn_corpus.py                     # 240 calls into the cache, prints the two folders
    python benchmarks/turn_corpus.py --calls 400 --jobs 2
    rxvoice eval "$(python benchmarks/turn_corpus.py --print report)"
    rxvoice eval "$(python benchmarks/turn_corpus.py --print report)"/*-sentence.wav   # one prosody

The cache is ``$RXVOICE_CORPUS_CACHE`` or ``~/.cache/rxvoice/turn-corpus``; a
folder per version, series and size (``v3-series1-240/tune``, ``.../report``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile
import wave
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from xml.sax.saxutils import escape

import numpy as np

VERSION = 3
RATE = 16000
SPLITS = ("tune", "report")
PROSODIES = ("sentence", "segments")
"""How a call's pauses sound: inside one spoken sentence (continuation intonation) or after a segment
spoken alone (see the module's docstring)."""
_BREAK = 1.5
"""Seconds of each SSML break while synthesizing a ``sentence`` turn: longer than any pause espeak makes
itself, so the breaks are found again exactly; each is then replaced by the call's own pause."""

# -- what callers say ----------------------------------------------------------------------------
# A template is one turn; "|" marks a mid-turn pause. Slots: {name} a first name, {place} a place,
# {day} a weekday, {thing} a thing to order, {number} digits read in groups ("four five | seven two"),
# {spell} a surname spelled in groups, {items} a list read item by item. Each kind's list is split by
# position: even entries tune, odd entries report.

PAUSES: dict[str, list[str]] = {
    "subordinator": [
        "I need to cancel my booking because | my flight was moved to the evening.",
        "I'd like to keep the room unless | it costs more than last time.",
        "Could you call me back when | the parts arrive at the shop?",
        "I can't come in on {day} although | I could do the following week.",
        "I want to know whether | the store is open on public holidays.",
        "Please hold the package until | I'm back from {place}.",
        "We moved the meeting since | half of the team was away.",
        "I'll pay the rest as soon as | the invoice reaches me.",
        "Let me know if | there is anything else you need from me.",
        "I was charged twice while | I was travelling in {place}.",
        "I'd prefer the morning slot so that | I can still get to work.",
        "Nobody told me that | the office had moved to a new building.",
    ],
    "relative": [
        "I'm calling about the order that | was supposed to arrive yesterday.",
        "Is this the number which | handles lost luggage?",
        "I spoke to a woman who | said she would email me the forms.",
        "I want the table by the window where | we sat last time.",
        "The charger which | came with the laptop stopped working.",
        "There's a man whose | car is blocking my driveway.",
        "I need the form that | lets me change my address.",
        "We stayed at the hotel where | the pool was closed all week.",
    ],
    "modal": [
        "I was wondering if you could | send me a copy of the contract.",
        "I think we should | move the appointment to {day}.",
        "Do you know if I can | bring my dog on the train?",
        "My sister said she might | come along as well.",
        "Is there any way we could | get a later check out?",
        "I'm not sure they will | accept a card payment.",
        "Maybe you would | know who handles refunds.",
        "Honestly I must | have left it at the front desk.",
        "I guess I should | have called sooner.",
        "So the technician can | come on {day} morning?",
    ],
    "preposition": [
        "I'm driving towards | the north entrance right now.",
        "The parcel is sitting behind | the garage door.",
        "We'll be staying near | the old harbour for a week.",
        "I left my umbrella under | the seat on the bus.",
        "Can you book me on the train after | the one at six?",
        "I've been waiting since | nine o'clock this morning.",
        "My house is just across | the road from the school.",
        "The noise comes from somewhere above | my kitchen ceiling.",
        "I'd like a room overlooking | the garden if possible.",
        "There's a leak right beside | the washing machine.",
        "We walked along | the river to get here.",
        "I want to sit somewhere away from | the speakers.",
        "I'm calling on behalf of | my elderly father.",
        "The gate opens onto | a small car park.",
        "It broke down somewhere past | the second bridge.",
        "I need it delivered before | the weekend.",
    ],
    "determiner": [
        "Can I get another | blanket for the room?",
        "I'd like to order some | spare batteries for the remote.",
        "Do you have any | tables free tonight?",
        "I need to return these | shoes because they don't fit.",
        "Is every | room on that floor booked?",
        "I'll take both | of the blue jackets.",
        "Could you check each | item on the receipt?",
        "I want this | sent to my office instead.",
        "There was no | hot water this morning.",
        "Which | platform does the airport train leave from?",
    ],
    "possessive": [
        "I forgot her | password for the account.",
        "Can I change our | delivery address?",
        "I think their | office closes at five.",
        "He lost his | wallet somewhere on the train.",
        "I'm calling to renew my | parking permit.",
        "Could you update your | records with my new number?",
        "We need to reschedule our | dinner reservation.",
        "I'd like to cancel my | gym membership.",
    ],
    "verb": [
        "Could you send | me the receipt by email?",
        "I'd like to change | the delivery date.",
        "We need to reschedule | the kitchen inspection.",
        "Can you tell | me when the next bus leaves?",
        "I'm trying to find | the entrance to the clinic.",
        "I want to report | a broken street light.",
        "Would you mind checking | the status of my claim?",
        "Please remind | me the day before.",
    ],
    "adjective": [
        "I need a large | pepperoni pizza with extra cheese.",
        "Do you have a quieter | room at the back?",
        "I'd like the cheapest | flight to {place}.",
        "It's a small blue | suitcase with a red tag.",
        "We want a round | table for six.",
        "Can I get a decaf | latte with oat milk?",
    ],
    "filler": [
        "I'd like to, um | book a table for tonight.",
        "The name is, uh | {name} {spelled_last}.",
        "Um | can you hear me okay?",
        "We need, er | two adult tickets.",
        "I was going to ask, hmm | whether you deliver.",
        "So I'm looking for, uh | the opening hours.",
    ],
    "restart": [
        "I want | actually, can I speak to a manager?",
        "Can you | sorry, I mean, is the pharmacy open?",
        "I need the | no wait, I need to cancel the order.",
        "We'll be arriving at | actually make that seven.",
        "My appointment is on | no, it's on {day}.",
        "Could I get the | actually, never mind, just the bill.",
    ],
    "number": [
        "My account number is {number}.",
        "The reference is {number}.",
        "You can reach me on {number}.",
        "My order number is {number}.",
        "The code on the card is {number}.",
        "It's flat {number}.",
    ],
    "spelling": [
        "My surname is {spell}.",
        "That's {name}, spelled {spell}.",
        "The last name is {spell}.",
        "It's under {spell}.",
    ],
    "list": [
        "I'd like {items}.",
        "We need {items}.",
        "Can you add {items}?",
        "The allergies are {items}.",
    ],
}

ENDS: dict[str, list[str]] = {
    "statement": [
        "I'd like to book a table for four tonight.",
        "My internet has been down since yesterday.",
        "I'm calling about a delivery that never arrived.",
        "The heating in my flat stopped working.",
        "I need to renew my passport before {day}.",
        "We'd like to stay two more nights.",
        "I want to change my flight to {place}.",
        "My card was declined at the shop.",
        "I'm looking for a dentist near {place}.",
        "The train was forty minutes late again.",
        "I'd like to speak to someone about my bill.",
        "I lost my keys on the bus this morning.",
    ],
    "question": [
        "What time do you close on {day}?",
        "How much is a return ticket to {place}?",
        "Can I pay by card over the phone?",
        "Is there parking nearby?",
        "Do you have anything earlier in the week?",
        "How long will the repair take?",
        "Where do I pick up the keys?",
        "Could you check if my payment went through?",
        "Which documents should I bring?",
        "Why was my order cancelled?",
    ],
    "short": [
        "Yes.", "No.", "Sure.", "{day}.", "The blue one.", "Around noon.", "Both.", "Not really.",
        "Just the one.", "Probably.", "Tomorrow.", "In the morning.", "About twenty.", "Cash.",
        "Neither.", "Friday works.", "That one.", "Maybe later.",
    ],
    "name": [
        "{name} {last}.", "It's {name}.", "{last}.", "{name}.",
    ],
    "number_alone": [
        "{number_plain}.", "Four.", "Twenty five.", "Seven thirty.", "Two adults.", "Eleven.",
    ],
    "or_something": [
        "Maybe a window seat or something.", "Just a sandwich or something.",
        "A taxi or something.", "Somewhere quiet or something like that.",
        "A refund or a voucher or something.", "Next week or so.",
    ],
    "so_end": [
        "I was hoping to get it fixed today so.", "It still isn't working so.",
        "I've tried restarting it twice so.", "The shop was already closed so.",
        "I don't really have a car so.", "It was my mistake so.",
    ],
    "statement_question": [
        "You're open on {day}?", "That includes breakfast?", "So the delivery is free?",
        "It comes with a charger?", "You can do it today?", "The price is the same?",
    ],
    "trailing": [
        "Could you help me with it?", "I'd love to see it.", "Can you turn it on for me?",
        "What are you looking at?", "Where are you calling from?", "I can't find them.",
        "Who should I talk to?", "That's what I was thinking of.", "I'm not sure about that.",
        "Thanks for that.",
    ],
    "closing": [
        "Thank you so much.", "That's all, thanks.", "Great, bye.", "Perfect.", "Okay, thanks for your help.",
        "No, that's everything.", "Brilliant, cheers.", "Alright, have a good day.",
    ],
}

NAMES = ["Jordan", "Priya", "Tomasz", "Aisha", "Liam", "Mei", "Oscar", "Fatima", "Diego", "Hannah", "Kofi", "Ingrid"]
LASTS = ["Kowalski", "Nguyen", "Okafor", "Lindqvist", "Marsh", "Delgado", "Brennan", "Haddad", "Sato", "Fischer"]
PLACES = ["Boston", "Leeds", "Dublin", "Madrid", "Toronto", "Glasgow", "Lisbon", "Denver", "Cardiff", "Oslo"]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
THINGS = ["milk", "bread", "eggs", "rice", "apples", "cheese", "coffee", "butter", "onions", "soap",
          "tomatoes", "peanuts", "shellfish", "gluten", "dairy", "soy"]
DIGITS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]

VOICES = [
    "en-us", "en-gb", "en-us+f2", "en-gb+f3", "en-gb-scotland", "en-us+m3", "en-gb-x-rp", "en-029+f1",
    "en-us-nyc", "en-gb+m4", "en-gb-x-gbclan", "en-us+f4", "en-gb-x-gbcwmd", "en-us+m5", "en-us+Annie",
    "en-gb+Andy", "en-us+Michael", "en-gb-x-rp+Linda", "en-us+john", "en-gb-scotland+steph",
    "en-us+belinda", "en-gb+david", "en-us+max", "en-029+m7", "en-us+klatt", "en-gb+f5", "en-us+edward",
    "en-gb+m6",
]


@dataclass(frozen=True)
class Spoken:
    """One segment of a call: what is said (and written), whether it ends the turn, the silence after it."""

    text: str
    turn_end: bool
    gap: float


@dataclass(frozen=True)
class CallSpec:
    """Everything a call is made from (all drawn from the series)."""

    name: str
    split: str
    voice: str
    wpm: int
    pitch: int
    level_dbfs: float
    noise_dbfs: float | None
    telephone: bool
    series: int
    segments: tuple[Spoken, ...]
    prosody: str = "segments"


def split_of(index: int) -> str:
    """The fixed rule: even-numbered templates and voices tune, odd ones report."""
    return SPLITS[index % 2]


def prosody_of(index: int) -> str:
    """The fixed rule for a call's prosody: calls 0, 1, 4, 5, ... ``sentence``, 2, 3, 6, 7, ... ``segments``."""
    return PROSODIES[(index // 2) % 2]


def _mine(entries: Sequence[str], split: str) -> list[str]:
    return [e for i, e in enumerate(entries) if split_of(i) == split]


def _digits(rng: random.Random, groups: int) -> list[str]:
    return [" ".join(rng.choice(DIGITS) for _ in range(rng.randint(2, 4))) for _ in range(groups)]


def _spelled(rng: random.Random) -> list[str]:
    last = rng.choice(LASTS).lower()
    size = rng.choice([3, 4])
    return [", ".join(last[i:i + size].upper()) for i in range(0, len(last), size)]


def _pause(rng: random.Random, low: float = 0.3, high: float = 2.0) -> float:
    return round(math.exp(rng.uniform(math.log(low), math.log(high))), 2)


def _fill(template: str, rng: random.Random) -> list[tuple[str, bool]]:
    """A turn's parts (text, followed-by-a-reading-pause) with its slots filled."""
    last = rng.choice(LASTS)
    text = (template.replace("{name}", rng.choice(NAMES)).replace("{last}", last)
            .replace("{place}", rng.choice(PLACES)).replace("{day}", rng.choice(DAYS))
            .replace("{thing}", rng.choice(THINGS)).replace("{spelled_last}", last)
            .replace("{number_plain}", " ".join(_digits(rng, 1))))
    if "{number}" in text:
        text = text.replace("{number}", " | ".join(_digits(rng, rng.randint(2, 3))))
    if "{spell}" in text:
        text = text.replace("{spell}", " | ".join(_spelled(rng)))
    if "{items}" in text:
        things = rng.sample(THINGS, rng.randint(2, 4))
        text = text.replace("{items}", ", | ".join(things[:-1]) + ", | and " + things[-1])
    return [(p.strip(), True) for p in text.split("|")]


def _turn(kind_lists: dict[str, list[str]], rng: random.Random, used: set[str]) -> tuple[str, str]:
    kind = rng.choice(sorted(kind_lists))
    fresh = [t for t in kind_lists[kind] if t not in used] or kind_lists[kind]
    template = rng.choice(fresh)
    used.add(template)
    return kind, template


def _written(part: str, last: bool, reading: bool, comma: bool) -> str:
    """How the part is spoken and written: mid-turn, with a comma (espeak's continuation intonation) or
    nothing."""
    part = part.strip()
    if last:
        return part
    part = part.rstrip(",")
    return part + ("," if reading or comma else "")


def call_spec(index: int, series: int) -> CallSpec:
    """The ``index``-th call of the corpus made with ``series`` (its split by :func:`split_of`)."""
    split = split_of(index)
    prosody = prosody_of(index)
    rng = random.Random(f"{series}:{index}")
    pauses = {k: _mine(v, split) for k, v in PAUSES.items()}
    ends = {k: _mine(v, split) for k, v in ENDS.items()}
    voice = rng.choice(_mine(VOICES, split))
    segments: list[Spoken] = []
    used: set[str] = set()
    for _ in range(rng.randint(5, 8)):
        with_pause = rng.random() < 0.55
        _, template = _turn(pauses if with_pause else ends, rng, used)
        parts = _fill(template, rng)
        reading = "{number}" in template or "{spell}" in template or "{items}" in template
        for j, (part, _) in enumerate(parts):
            last = j == len(parts) - 1
            if last:
                gap = round(rng.uniform(1.2, 2.5), 2)
            elif reading:
                gap = _pause(rng, 0.4, 1.6)
            else:
                gap = _pause(rng)
            # A segment spoken alone: mostly with espeak's "more to come" intonation (a comma), sometimes
            # flat. Inside one sentence the sentence's own intonation carries over the pause: no comma.
            comma = rng.random() < 0.75 and prosody == "segments"
            segments.append(Spoken(_written(part, last, reading, comma), last, gap))
    noise = round(rng.uniform(-60.0, -45.0), 1) if rng.random() < 0.4 else None
    level = -35.0 if rng.random() < 0.15 else round(rng.uniform(-30.0, -18.0), 1)
    return CallSpec(
        name=f"c{index:04d}-{prosody}", split=split, voice=voice, wpm=rng.randint(130, 200), pitch=rng.randint(25, 75),
        level_dbfs=level, noise_dbfs=noise, telephone=rng.random() < 0.2, series=rng.randrange(2**31),
        segments=tuple(segments), prosody=prosody,
    )


# -- making the audio -----------------------------------------------------------------------------


def _speak(text: str, spec: CallSpec, tmp: Path) -> np.ndarray:
    # sox -D: no dither (its dither is random; the corpus must be the same bytes every time)
    raw, trimmed = tmp / "raw.wav", tmp / "trim.wav"
    spoken = text.replace(",", " ,")  # espeak pauses at a comma: keep it, the timeline is what is labelled
    subprocess.run(["espeak-ng", "-v", spec.voice, "-s", str(spec.wpm), "-p", str(spec.pitch), "-w", str(raw),
                    spoken], check=True, capture_output=True)
    subprocess.run(["sox", "-D", str(raw), "-r", str(RATE), "-c", "1", "-b", "16", str(trimmed),
                    "silence", "1", "0.01", "0.5%", "reverse", "silence", "1", "0.01", "0.5%", "reverse"],
                   check=True, capture_output=True)
    return _read(trimmed)


def _speak_turn(parts: Sequence[str], spec: CallSpec, tmp: Path) -> list[np.ndarray]:
    """A turn spoken as one sentence with a break at each pause, cut into its parts (``sentence`` prosody).

    espeak-ng's SSML mode keeps the sentence's intonation across a ``<break/>``; each break is
    :data:`_BREAK` long while synthesizing, found again as the only silences that long, and dropped
    (the call lays its own pauses between the parts).
    """
    if len(parts) == 1:
        return [_speak(parts[0], spec, tmp)]
    raw, wide = tmp / "raw.wav", tmp / "wide.wav"
    marker = f' <break time="{round(_BREAK * 1000)}ms"/> '
    ssml = "<speak>" + marker.join(escape(p) for p in parts) + "</speak>"
    subprocess.run(["espeak-ng", "-m", "-v", spec.voice, "-s", str(spec.wpm), "-p", str(spec.pitch), "-w",
                    str(raw), ssml], check=True, capture_output=True)
    subprocess.run(["sox", "-D", str(raw), "-r", str(RATE), "-c", "1", "-b", "16", str(wide)],
                   check=True, capture_output=True)
    audio = _read(wide)
    frame = RATE // 100
    n = len(audio) // frame
    rms = np.sqrt(np.mean(audio[: n * frame].reshape(n, frame) ** 2, axis=1))
    loud = rms >= 0.005 * float(np.max(np.abs(audio)))
    sounding = np.flatnonzero(loud)
    first, last = int(sounding[0]), int(sounding[-1]) + 1
    gaps: list[tuple[int, int]] = []
    start: int | None = None
    for i in range(first, last + 1):
        if i < last and not loud[i]:
            start = i if start is None else start
        elif start is not None:
            if i - start >= round(0.8 * _BREAK * 100):
                gaps.append((start, i))
            start = None
    if len(gaps) != len(parts) - 1:
        raise RuntimeError(f"{spec.name}: found {len(gaps)} breaks in {ssml!r}, expected {len(parts) - 1}")
    edges = [first, *(e for g in gaps for e in g), last]
    return [audio[edges[2 * k] * frame: edges[2 * k + 1] * frame] for k in range(len(parts))]


def _read(path: Path) -> np.ndarray:
    with wave.open(str(path)) as w:
        return np.frombuffer(w.readframes(w.getnframes()), "<i2").astype(np.float64) / 32768.0


def _write(path: Path, samples: np.ndarray) -> None:
    pcm = np.clip(np.round(samples * 32767.0), -32768, 32767).astype("<i2")
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(RATE)
        w.writeframes(pcm.tobytes())


def _pink(n: int, rng: np.random.Generator) -> np.ndarray:
    spectrum = np.fft.rfft(rng.standard_normal(n))
    f = np.fft.rfftfreq(n)
    f[0] = f[1]
    pink = np.fft.irfft(spectrum / np.sqrt(f), n)
    return pink / np.sqrt(np.mean(pink**2))


def _telephone(samples: np.ndarray, tmp: Path) -> np.ndarray:
    src, dst = tmp / "wide.wav", tmp / "band.wav"
    _write(src, samples)
    subprocess.run(["sox", "-D", str(src), str(dst), "sinc", "300-3400", "rate", "8000", "rate", str(RATE)],
                   check=True, capture_output=True)
    out = _read(dst)[: len(samples)]
    return np.pad(out, (0, len(samples) - len(out)))


def make_call(spec: CallSpec, folder: Path) -> Path:
    """Write ``<name>.wav`` and ``<name>.transcript.json`` into ``folder``; returns the WAV."""
    rng = np.random.default_rng(spec.series)
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        parts = [np.zeros(round(0.5 * RATE))]
        t = 0.5
        labels = []
        spoken: list[np.ndarray] = []
        turn: list[str] = []
        for seg in spec.segments:
            turn.append(seg.text)
            if seg.turn_end:
                spoken += _speak_turn(turn, spec, tmp) if spec.prosody == "sentence" else [
                    _speak(text, spec, tmp) for text in turn]
                turn = []
        for seg, audio in zip(spec.segments, spoken, strict=True):
            start, end = t, t + len(audio) / RATE
            labels.append({"text": seg.text, "start": round(start, 3), "end": round(end, 3),
                           "turn_end": seg.turn_end})
            parts += [audio, np.zeros(round(seg.gap * RATE))]
            t = end + seg.gap
        speech = np.concatenate(parts)
        voiced = np.concatenate([p for p in parts if np.any(p)])
        speech *= 10 ** (spec.level_dbfs / 20) / max(1e-9, float(np.sqrt(np.mean(voiced**2))))
        if spec.telephone:
            speech = _telephone(speech, tmp)
        if spec.noise_dbfs is not None:
            speech = speech + _pink(len(speech), rng) * 10 ** (spec.noise_dbfs / 20)
    folder.mkdir(parents=True, exist_ok=True)
    wav = folder / f"{spec.name}.wav"
    _write(wav, speech)
    meta = {k: v for k, v in asdict(spec).items() if k not in ("segments", "name")}
    meta["generator"] = f"turn_corpus v{VERSION}"
    doc = {"sample_rate": RATE, "duration": round(len(speech) / RATE, 3), "segments": labels, "meta": meta}
    (folder / f"{spec.name}.transcript.json").write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    return wav


# -- the corpus -----------------------------------------------------------------------------------


def cache_root() -> Path:
    """Where corpora are generated (never into the repository or a shared data folder)."""
    env = os.environ.get("RXVOICE_CORPUS_CACHE")
    if env:
        return Path(env)
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "rxvoice" / "turn-corpus"


def corpus_dir(calls: int, series: int, root: Path | None = None) -> Path:
    return (root or cache_root()) / f"v{VERSION}-series{series}-{calls}"


def _make(job: tuple[int, int, str]) -> str:
    index, series, folder = job
    spec = call_spec(index, series)
    return str(make_call(spec, Path(folder) / spec.split))


def fingerprint(folder: Path) -> str:
    """A digest of every file of a generated corpus (equal for equal corpora)."""
    h = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        if path.is_file() and path.name != "DONE":
            h.update(path.relative_to(folder).as_posix().encode())
            h.update(path.read_bytes())
    return h.hexdigest()


def generate(calls: int = 240, series: int = 1, *, root: Path | None = None, jobs: int = 1,
             force: bool = False) -> Path:
    """Make the corpus (or find it made) and return its folder (``tune/`` and ``report/`` inside)."""
    if shutil.which("espeak-ng") is None or shutil.which("sox") is None:
        raise SystemExit("turn_corpus needs espeak-ng and sox on PATH (apt-get install espeak-ng sox)")
    folder = corpus_dir(calls, series, root)
    done = folder / "DONE"
    if done.is_file() and not force:
        return folder
    if folder.exists():
        shutil.rmtree(folder)
    work = [(i, series, str(folder)) for i in range(calls)]
    if jobs > 1:
        with ProcessPoolExecutor(jobs) as pool:
            list(pool.map(_make, work, chunksize=4))
    else:
        for job in work:
            _make(job)
    done.write_text(json.dumps({"calls": calls, "series": series, "version": VERSION}) + "\n")
    return folder


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--calls", type=int, default=240, help="how many calls (half tune, half report; default 240)")
    p.add_argument("--series", type=int, default=1)
    p.add_argument("--out", type=Path, help="the cache root (default: $RXVOICE_CORPUS_CACHE or ~/.cache/...)")
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--force", action="store_true", help="make it again even if it is there")
    p.add_argument("--print", choices=SPLITS, help="print only that split's folder")
    args = p.parse_args(argv)
    folder = generate(args.calls, args.series, root=args.out, jobs=args.jobs, force=args.force)
    if args.print:
        print(folder / args.print)
    else:
        for split in SPLITS:
            print(folder / split)
    return 0


if __name__ == "__main__":
    sys.exit(main())
