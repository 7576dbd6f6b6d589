"""``python -m rxvoice``: the ``rxvoice`` command (see :mod:`rxvoice.cli`)."""

from __future__ import annotations

from .cli import main

raise SystemExit(main())
