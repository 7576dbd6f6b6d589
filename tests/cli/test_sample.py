"""The labelled sample shipped with rxvoice: `rxvoice eval` without a path scores it, and the wheel carries it."""

from __future__ import annotations

import configparser
import csv
import fnmatch
import json
from pathlib import Path

from rxvoice.cli.sample import sample_paths
from tests.support import REPO

from .conftest import run_cli


def test_eval_without_a_path_scores_the_sample(with_model: Path) -> None:
    """The demo call and eight utterances: the recommended setup finds every end and cuts no pause off."""
    r = run_cli("eval")
    assert r.code == 0, r.err
    assert r.err.startswith("note: scoring the labelled sample shipped with rxvoice")
    assert r.out.splitlines()[0].startswith(
        "smart-turn (defaults): ends found 7/7 (100%), missed 0; cut-offs 0/5 (0%)")
    assert len(r.out.splitlines()) == 1 + 9  # the totals, then the demo call and the eight utterances


def test_the_sample_shows_what_a_silence_timeout_costs(without_model: Path) -> None:
    r = run_cli("eval", "--stop", "speech-timeout", "--json")
    assert r.code == 0, r.err
    totals = json.loads(r.out)["runs"][0]["totals"]
    assert (totals["found"], totals["turn_ends"], totals["cut_offs"], totals["pauses"]) == (7, 7, 5, 5)


def test_sample_adds_it_to_the_paths_given(with_model: Path, booking_wav: Path) -> None:
    r = run_cli("eval", str(booking_wav), "--sample", "--json")
    assert r.code == 0, r.err
    files = [Path(x["file"]).name for x in json.loads(r.out)["runs"][0]["recordings"]]
    assert files[:2] == ["booking.wav", "demo.wav"] and len(files) == 10


def test_the_sample_is_labelled_and_in_the_wheel() -> None:
    """Four complete and four unfinished utterances with their text; every file matched by the package data."""
    demo, folder = sample_paths()
    rows = list(csv.DictReader((folder / "labels.csv").open(encoding="utf-8")))
    assert sorted(r["label"] for r in rows) == ["complete"] * 4 + ["incomplete"] * 4
    assert all(r["text"] and (folder / r["file"]).is_file() for r in rows)
    assert demo.is_file() and demo.with_name("demo.transcript.json").is_file()
    config = configparser.ConfigParser()
    config.read(REPO / "setup.cfg")
    patterns = config["options.package_data"]["rxvoice"].split()
    package = REPO / "rxvoice"
    shipped = [p.relative_to(package).as_posix() for p in (package / "data").rglob("*") if p.is_file()]
    assert shipped and all(any(fnmatch.fnmatch(f, pat) and "/" not in f[len(pat.rstrip("*")):]
                               for pat in patterns) for f in shipped)
    assert sum((package / f).stat().st_size for f in shipped) < 1_500_000
