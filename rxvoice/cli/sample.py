"""The labelled sample shipped with rxvoice (``rxvoice/data``): what ``rxvoice eval`` scores without a path.

The demo call (``demo.wav`` with its transcript: three ends of turn, one
mid-sentence pause) and ``sample/``, eight single utterances with a
``labels.csv`` (four complete, four cut off mid-sentence); see
``rxvoice/data/sample/README.md``.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from ._common import CLIError

__all__ = ["SAMPLE_NOTE", "sample_paths"]

SAMPLE_NOTE = ("the labelled sample shipped with rxvoice: the demo call (3 ends of turn, 1 mid-sentence pause) "
               "and 8 single utterances with a labels.csv")


def sample_paths() -> list[Path]:
    """The demo call and the folder of labelled utterances, as files on disk.

    Raises:
        CLIError: the package was installed without its data files.
    """
    data = Path(str(resources.files("rxvoice") / "data"))
    paths = [data / "demo.wav", data / "sample"]
    missing = [p for p in (data / "demo.transcript.json", data / "sample" / "labels.csv") if not p.is_file()]
    if missing:
        raise CLIError(f"the labelled sample is not installed ({missing[0]} is missing): reinstall rxvoice")
    return paths
