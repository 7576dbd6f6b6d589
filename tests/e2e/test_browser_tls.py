"""The microphone off localhost, in headless Chromium: refused on a plain-http page, working over `--self-signed`.

Chromium resolves ``rxvoice.test`` to 127.0.0.1 (``--host-resolver-rules``), so the page has a name that is
not localhost, as on a LAN, while everything stays on loopback. Over http the page is not a secure context:
it says so instead of failing with a bare TypeError. Over https (a self-signed certificate, accepted with
``--ignore-certificate-errors`` as a person accepts the warning once) the microphone works and turns end;
with ``--max-sessions 1`` a second tab is told "server full".
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from importlib import resources
from pathlib import Path
from typing import Any

from tests.e2e.test_browser import _wait
from tests.support import require_program


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start(port: int, cache: Path, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "XDG_CACHE_HOME": str(cache)}  # the certificate goes there
    env.pop("OPENAI_BASE_URL", None)
    proc = subprocess.Popen([sys.executable, "-m", "rxvoice.cli", "serve", "--port", str(port), "--stt", "none",
                             "--tts", "paced", "--stop", "speech-timeout", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    while line and "open http" not in line:
        line = proc.stdout.readline()
    assert "open http" in line, "rxvoice serve did not start"
    return proc


def _driver(wav: Path, profile: Path) -> Any:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = require_program("chromium")
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
                "--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream",
                f"--use-file-for-fake-audio-capture={wav}%noloop", f"--user-data-dir={profile}",
                "--host-resolver-rules=MAP rxvoice.test 127.0.0.1", "--ignore-certificate-errors"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(options=options, service=Service(require_program("chromedriver")))


def test_the_microphone_needs_https_off_localhost_and_self_signed_gives_it(tmp_path: Path) -> None:
    for program in ("chromium", "chromedriver"):
        require_program(program)
    plain_port, tls_port = _free_port(), _free_port()
    token = "browser-test-token"
    plain = _start(plain_port, tmp_path, "--allow-origin", f"http://rxvoice.test:{plain_port}")
    secure = _start(tls_port, tmp_path, "--self-signed", "--token", token, "--max-sessions", "1",
                    "--allow-origin", f"https://rxvoice.test:{tls_port}")
    driver = None
    try:
        with resources.as_file(resources.files("rxvoice.data") / "demo.wav") as wav:
            driver = _driver(wav, tmp_path / "profile")
            driver.set_script_timeout(30)
            driver.get(f"http://rxvoice.test:{plain_port}/")
            assert driver.execute_script("return window.isSecureContext") is False
            driver.find_element("id", "start").click()
            status = _wait(driver, "const s = document.getElementById('status').textContent;"
                                   "return s.startsWith('no microphone') && s", 20)
            assert status and "not a secure context" in status and "--self-signed" in status, status

            driver.get(f"https://rxvoice.test:{tls_port}/?token={token}")
            assert driver.execute_script("return window.isSecureContext") is True
            driver.find_element("id", "start").click()
            assert _wait(driver, "return document.getElementById('status').textContent.startsWith('listening')",
                         30), driver.execute_script("return document.getElementById('status').textContent")
            ends = _wait(driver, "return window.rxvoice.counts.turnEnds >= 1 && window.rxvoice.counts.turnEnds", 60)
            log = "return [...document.querySelectorAll('#log li')].map(l => l.textContent)"
            assert ends, driver.execute_script(log)

            first = driver.current_window_handle
            driver.switch_to.new_window("tab")  # a second caller while the first one holds the only session
            driver.get(f"https://rxvoice.test:{tls_port}/?token={token}")
            driver.find_element("id", "start").click()
            full = _wait(driver, "const s = document.getElementById('status').textContent;"
                                 "return s.startsWith('server full') && s", 30)
            assert full, driver.execute_script("return document.getElementById('status').textContent")
            driver.switch_to.window(first)
            errors = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
            assert errors == [], errors
    finally:
        if driver is not None:
            driver.quit()
        for proc in (plain, secure):
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
