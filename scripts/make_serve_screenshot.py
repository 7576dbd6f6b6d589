"""Make the voice guide's screenshot of ``rxvoice serve`` (docs/images/serve.png) in headless Chromium.

The page's fake microphone plays a recording (default: rxvoice's own demo
call, ``rxvoice/data/demo.wav``) to a real ``rxvoice serve`` (Silero,
PocketSphinx when installed, Smart Turn, espeak-ng); when the call is over
the page is saved as a PNG. Needs the ``test`` extra (selenium), Chromium and
chromium-driver, espeak-ng and the Smart Turn model::

    .venv/bin/python scripts/make_serve_screenshot.py [WAV] [--out docs/images/serve.png]

The browser is polled for its state (a real clock is the point here: the
recording plays in real time).
"""

from __future__ import annotations

import argparse
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import wave
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def start_server(stt: str) -> tuple[subprocess.Popen[str], str]:
    """``rxvoice serve`` on a free port; returns it and the page's address."""
    command = [sys.executable, "-m", "rxvoice.cli", "serve", "--port", "0", "--stt", stt, "--tts", "espeak",
               "--stop", "smart-turn"]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)

    threading.Thread(target=pump, daemon=True).start()
    seen: list[str] = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=1)
        except queue.Empty:
            if proc.poll() is not None:
                break
            continue
        seen.append(line)
        if "open http://" in line:
            return proc, line.split("open ", 1)[1].split()[0]
    proc.kill()
    raise SystemExit("rxvoice serve did not start: " + "".join(seen))


def browser(wav: Path, profile: Path) -> Any:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver_path = shutil.which("chromedriver")
    if chromium is None or driver_path is None:
        raise SystemExit("needs Chromium and its driver: sudo apt-get install chromium chromium-driver")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
                "--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream",
                f"--use-file-for-fake-audio-capture={wav}%noloop", f"--user-data-dir={profile}",
                "--window-size=1400,1000", "--hide-scrollbars"):
        options.add_argument(arg)
    return webdriver.Chrome(options=options, service=Service(driver_path))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("wav", nargs="?", default=str(REPO / "rxvoice" / "data" / "demo.wav"),
                        help="the call the fake microphone plays (16 kHz mono WAV; default the demo call)")
    parser.add_argument("--out", default=str(REPO / "docs" / "images" / "serve.png"), help="the PNG to write")
    parser.add_argument("--stt", default="pocketsphinx", help="the server's --stt (default pocketsphinx)")
    args = parser.parse_args(argv)
    wav = Path(args.wav).resolve()
    with wave.open(str(wav)) as w:
        seconds = w.getnframes() / w.getframerate()
    proc, url = start_server(args.stt)
    driver = None
    try:
        with tempfile.TemporaryDirectory() as profile:
            driver = browser(wav, Path(profile))
            driver.get(url)
            driver.find_element("id", "start").click()
            deadline = time.monotonic() + seconds + 60
            while time.monotonic() < deadline and driver.execute_script("return window.rxvoice.t") < seconds - 0.3:
                time.sleep(0.25)  # polling the page while the call plays
            time.sleep(3.0)  # the last turn's end and the bot's answer
            driver.save_screenshot(args.out)
    finally:
        if driver is not None:
            driver.quit()
        proc.terminate()
        proc.wait(10)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
