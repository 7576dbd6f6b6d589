"""A long, realistic streamed model response for the text benchmarks.

Deterministic (seeded), voice-assistant style prose with the things that make
sentence splitting hard (abbreviations, prices, times, URLs, ellipses, numbered
lists), ``<spell>`` tags and ``<code>`` blocks, cut into tokens the size a model
streams (a word with its leading space, a number group, a punctuation mark).
"""

from __future__ import annotations

import random
import re

__all__ = ["response_text", "stream_tokens"]

_NAMES = ["Smith", "Garcia", "Nguyen", "Okafor", "Jones", "Novak", "Haddad"]
_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]
_CODE = [
    "def total(items):\n    return sum(i.price for i in items)",
    "area = 3.14159 * r ** 2; print(f'{area:.2f}')",
    "for user in users:\n    if user.active:\n        notify(user.email)",
    "SELECT name, price FROM items WHERE price > 9.99 ORDER BY price;",
    "const url = 'https://api.example.com/v1/orders?id=42';\nfetch(url).then(r => r.json());",
]


_TEMPLATES = [
    "Dr. {name} will see you at {hour}:{minute} p.m. on {day}.",
    "The plan costs ${d}.{cc}/month, e.g. about ${year} a year.",
    "Your confirmation code is <spell>{code}</spell>.",
    "You can write to <spell>{lower}.support@example.com</spell> or visit "
    "https://www.example.com/help.",
    "Version {v1}.{v2}.{v3} fixed it, i.e. the crash on start-up.",
    "Here is an example: <code>\n{snippet}\n</code> Let me know if that works for you.",
    "Mr. and Mrs. {name} arrived in the U.S. last week, didn't they?",
    "The temperature is {t1}.{t2} degrees; it feels quite warm.",
    "Well... let me check that for you.",
    "Here are the steps: 1. Open the app. 2. Tap Settings. 3. Choose Privacy and turn it on.",
    "Wow! That's great news.",
    "Is there anything else I can help you with today?",
    "I would recommend option {option} because it is faster and cheaper.",
    "Your order No. {order} ships on Jan. {dom} via express delivery.",
    "Sure, I can help with that, and it should only take a minute or two of your time.",
    "According to Prof. {name}, roughly {pct}% of users never change the default settings.",
]


def _sentence(rng: random.Random) -> str:
    name = rng.choice(_NAMES)
    d = rng.randint(5, 99)
    return rng.choice(_TEMPLATES).format(
        name=name,
        lower=name.lower(),
        hour=rng.randint(1, 12),
        minute=rng.choice(["00", "15", "30", "45"]),
        day=rng.choice(_DAYS),
        d=d,
        cc=f"{rng.randint(0, 99):02d}",
        year=d * 12,
        code="".join(rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZ23456789") for _ in range(6)),
        v1=rng.randint(1, 4),
        v2=rng.randint(0, 12),
        v3=rng.randint(0, 9),
        snippet=rng.choice(_CODE),
        t1=rng.randint(10, 30),
        t2=rng.randint(0, 9),
        option=rng.choice("ABC"),
        order=rng.randint(100, 999),
        dom=rng.randint(1, 28),
        pct=rng.randint(2, 90),
    )


def response_text(min_tokens: int = 12_000, seed: int = 7) -> str:
    """A response of at least ``min_tokens`` stream tokens."""
    rng = random.Random(seed)
    parts: list[str] = []
    count = 0
    while count < min_tokens:
        sentence = _sentence(rng)
        parts.append(sentence + ("\n\n" if rng.random() < 0.1 else " "))
        count += len(stream_tokens(sentence))
    return "".join(parts).rstrip() + "\n"


_TOKEN = re.compile(r"\s*(?:[A-Za-z]{1,7}|\d{1,3}|[^\sA-Za-z\d])|\s+")


def stream_tokens(text: str) -> list[str]:
    """Cut ``text`` into model-sized tokens; they join back to ``text`` exactly."""
    tokens = _TOKEN.findall(text)
    assert "".join(tokens) == text
    return tokens
