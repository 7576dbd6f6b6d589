"""``python -m rxvoice.cli``: the same as the ``rxvoice`` command."""

from __future__ import annotations

from . import main

raise SystemExit(main())
