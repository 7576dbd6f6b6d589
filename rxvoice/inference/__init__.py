"""Inference backends: the shared model work of many sessions (Smart Turn windows, STT segments), anywhere.

* :class:`InferenceBackend` — the protocol: windows and segments in, futures out.
* :class:`InProcessBackend` (the default), :class:`ProcessPoolBackend`
  (local worker processes), :class:`RayServeBackend` (a Ray Serve
  deployment, ``pip install 'rxvoice[ray]'``).
* :class:`BackendTurnAnalyzer` — an end-of-turn analyzer judging through a
  backend, each verdict bounded in time, then the documented fallback
  (:class:`InferenceFallback`); :class:`BackendSTT` — the same for words.
* :class:`DecoderPool`, :class:`PooledPocketSphinxSTT` — PocketSphinx
  decoders lent per utterance, not made per connection.

See ``docs/deployment.md`` for running them on one machine and on a Ray cluster.
"""

from .analyzer import BackendTurnAnalyzer
from .backend import (
    STT_ENGINES,
    InferenceBackend,
    InferenceError,
    InferenceFallback,
    InProcessBackend,
    waiter_offload,
)
from .pool import ProcessPoolBackend
from .rayserve import APP_NAME, RayServeBackend, check_ray_address, inference_app
from .sphinx import DecoderPool, PooledPocketSphinxSTT
from .stt import BackendSTT

__all__ = [
    "APP_NAME",
    "STT_ENGINES",
    "BackendSTT",
    "BackendTurnAnalyzer",
    "DecoderPool",
    "InProcessBackend",
    "InferenceBackend",
    "InferenceError",
    "InferenceFallback",
    "PooledPocketSphinxSTT",
    "ProcessPoolBackend",
    "RayServeBackend",
    "check_ray_address",
    "inference_app",
    "waiter_offload",
]
