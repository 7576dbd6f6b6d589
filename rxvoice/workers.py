"""The one worker pool rxvoice's stages share, and the default ``offload``.

Heavy work (an end-of-turn model's verdict, a dedicated summary model, a
speech recognizer) runs here, off the session; its result re-enters the
session through its gate. A stage takes an ``offload`` (see
:mod:`rxvoice.pipeline.offload`, where these live with the rest of the
runtime); :func:`default_offload` is what it uses when none is given. The
executors for tests are re-exported here.
"""

from __future__ import annotations

from .pipeline.offload import Offload, SchedulerOffload, default_offload, inline_offload, shared_pool

__all__ = ["Offload", "SchedulerOffload", "default_offload", "inline_offload", "shared_pool"]
