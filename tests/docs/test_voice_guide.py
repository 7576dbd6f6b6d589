"""The voice guide's own-server example, run as a script: on a taken port it says so in one line."""

from __future__ import annotations

import contextlib
import re
import socket
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)


def test_the_voice_app_example_on_a_taken_port_is_one_line(tmp_path: Path) -> None:
    (code,) = [b for b in PYTHON_BLOCK.findall((REPO / "docs" / "voice.md").read_text()) if "voice_app(" in b]
    assert 'port=8765' in code
    script = tmp_path / "my_voice_server.py"
    script.write_text(code)
    with contextlib.ExitStack() as stack:
        holder = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
        with contextlib.suppress(OSError):  # if someone else holds it already, it is just as taken
            holder.bind(("127.0.0.1", 8765))
            holder.listen()
        done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120,
                              cwd=tmp_path)
    assert done.returncode == 1, done
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("cannot listen on 127.0.0.1:8765: "), done.stderr
    assert "address already in use" in lines[0].lower() and "Traceback" not in done.stderr


def test_the_guide_lists_what_serve_offers() -> None:
    """The synopsis names every --stop setup and every --stt/--tts choice the command has."""
    from rxvoice.cli.serve import STT_CHOICES, TTS_CHOICES
    from rxvoice.cli.setups import STOP_CHOICES

    text = (REPO / "docs" / "voice.md").read_text()
    synopsis = text.split("## `rxvoice serve`", 1)[1].split("```", 2)[1]
    assert f"--stop {'|'.join(STOP_CHOICES)}" in synopsis
    assert f"--stt {'|'.join(STT_CHOICES)}" in synopsis and f"--tts {'|'.join(TTS_CHOICES)}" in synopsis


def test_the_reasons_the_guide_quotes_are_the_strategies_own() -> None:
    """Each turn-end reason quoted on the page is what the stop strategy reports in that case, word for word."""
    from rxvoice import frames as F
    from rxvoice.turns import FusedTurnStop, SpeechTimeoutStop
    from tests.turns.helpers import FakeAnalyzer, StrategyBench

    def reason(strategy: object, words: str) -> str:
        b = StrategyBench(strategy, latency=0.05)
        b.turn_started()
        b.at(0.0, F.VADUserStartedSpeakingFrame(0.2)).at(1.1, F.TranscriptionFrame(words, finalized=True))
        b.at(1.2, F.VADUserStoppedSpeakingFrame(0.2)).at(6.0)
        (r,) = b.reasons
        return str(r)

    def smart_turn(complete: bool, p: float) -> FakeAnalyzer:
        analyzer = FakeAnalyzer(default=(complete, p))
        analyzer.label = "Smart Turn"  # type: ignore[attr-defined]  # SmartTurnAnalyzer's label
        return analyzer

    page = " ".join((REPO / "docs" / "voice.md").read_text().split())
    for quoted in (
        reason(FusedTurnStop(smart_turn(True, 0.87)), "on the fourteenth"),
        reason(FusedTurnStop(smart_turn(False, 0.1)), "the fourteenth of march"),
        reason(FusedTurnStop(smart_turn(True, 0.9)), "I would like a flight to"),
        reason(SpeechTimeoutStop(0.6), "hello there"),
    ):
        assert f"`{quoted}`" in page, quoted
