"""The shared model work on a Ray Serve deployment: Smart Turn (and PocketSphinx) served to many machines.

Past one machine, the models can run on a Ray cluster (KubeRay on
Kubernetes, or ``ray start`` on a few hosts) while the rxvoice worker
processes, behind the app's load balancer, keep the sessions.
:func:`inference_app` is the Serve application: a ``SmartTurn`` deployment
whose ``judge`` method is batched by Serve itself (``@serve.batch``: the
windows of every worker that arrive within ``batch_wait`` seconds go to the
model in one call) and, with ``stt="pocketsphinx"``, a ``Recognizer``
deployment for segments. :class:`RayServeBackend` connects a worker to it
(deploying it first when asked); its windows go straight to the ``SmartTurn``
deployment (one hop: through the entry point they took two, and about 25 ms
more a verdict at 24 sessions), its segments through the entry point.

Each worker process is a Ray driver (``ray.init(address=...)``); the
address is checked before Ray is asked (an address that does not answer is
a clear error at start, not a hang). Needs ``pip install 'rxvoice[ray]'``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import socket
import threading
from collections.abc import Sequence
from typing import Any

from ..audio.pcm import Float32Array
from ..errors import ConfigurationError
from .backend import STT_ENGINES, InferenceError

__all__ = ["APP_NAME", "RayServeBackend", "check_ray_address", "inference_app"]

log = logging.getLogger("rxvoice.inference")

APP_NAME = "rxvoice-inference"
"""The Serve application's default name."""


def _serve() -> Any:
    try:
        from ray import serve
    except ImportError as exc:
        raise ConfigurationError("the Ray Serve backend needs Ray Serve: pip install 'rxvoice[ray]'") from exc
    return serve


def inference_app(model: str | None = None, *, stt: str | None = None, max_batch: int = 32,
                  batch_wait: float = 0.005, replicas: int = 1, concurrent_batches: int = 2) -> Any:
    """The Serve application (``serve.run(inference_app(...), name=APP_NAME, route_prefix=None)``).

    Args:
        model: The Smart Turn model file on the Ray nodes (default: each replica finds it the usual way:
            ``RXVOICE_SMART_TURN_MODEL``, then ``rxvoice model install``'s cache).
        stt: ``"pocketsphinx"`` to serve segments too.
        max_batch: Serve's ``max_batch_size`` for Smart Turn windows.
        batch_wait: Serve's ``batch_wait_timeout_s``: how long a batch waits to fill.
        replicas: Smart Turn replicas (one core each).
        concurrent_batches: Batches one replica judges at once (Serve's ``max_concurrent_batches``), each on a
            thread of its own.
    """
    serve = _serve()
    if stt is not None and stt not in STT_ENGINES:
        raise ConfigurationError(f"stt must be one of {', '.join(STT_ENGINES)} or None, got {stt!r}")

    class SmartTurn:
        def __init__(self, model: str | None) -> None:
            from rxvoice.audio.turn import SmartTurnAnalyzer

            self.analyzer = SmartTurnAnalyzer(model)

        @serve.batch(max_batch_size=max_batch, batch_wait_timeout_s=batch_wait,  # type: ignore[untyped-decorator]
                     max_concurrent_batches=concurrent_batches)
        async def judge(self, windows: list[Float32Array]) -> list[float]:
            # On a thread (onnxruntime releases the GIL): the replica's loop keeps taking windows meanwhile, and
            # the next batch need not wait for this one (a window that came just after a batch started did).
            return list(await asyncio.to_thread(self.analyzer.probabilities, windows))

    class Recognizer:
        def __init__(self) -> None:
            from rxvoice.inference.sphinx import DecoderPool

            self.pool = DecoderPool(keep=1)

        def transcribe(self, pcm: bytes, sample_rate: int) -> str:
            return str(self.pool._decode(pcm, sample_rate))

    class Inference:
        """The entry point the workers call: one window per request (Serve batches them), or a segment."""

        def __init__(self, turn: Any, recognizer: Any | None) -> None:
            self.turn = turn
            self.recognizer = recognizer

        async def judge(self, window: Float32Array) -> float:
            return float(await self.turn.judge.remote(window))

        async def transcribe(self, pcm: bytes, sample_rate: int) -> str:
            if self.recognizer is None:
                raise InferenceError("this deployment serves no speech-to-text (deploy it with stt='pocketsphinx')")
            return str(await self.recognizer.transcribe.remote(pcm, sample_rate))

    turn = serve.deployment(name="SmartTurn", num_replicas=replicas, ray_actor_options={"num_cpus": 1},
                            max_ongoing_requests=4 * max_batch)(SmartTurn)
    recognizer = serve.deployment(name="Recognizer", ray_actor_options={"num_cpus": 1})(Recognizer)
    entry = serve.deployment(name="Inference", ray_actor_options={"num_cpus": 0},
                             max_ongoing_requests=8 * max_batch)(Inference)
    return entry.bind(turn.bind(model), recognizer.bind() if stt else None)


def check_ray_address(address: str, timeout: float = 5.0) -> None:
    """Raise a ``ConfigurationError`` unless something answers at ``address`` (``host:port``, ``ray://host:port``)."""
    target = address.split("://", 1)[-1].rstrip("/")
    host, _, port_text = target.rpartition(":")
    host = host.strip("[]")
    try:
        port = int(port_text)
    except ValueError:
        raise ConfigurationError(f"a Ray address is host:port (the head's GCS port, 6379 by default), "
                                 f"got {address!r}") from None
    try:
        with socket.create_connection((host or "127.0.0.1", port), timeout=timeout):
            pass
    except OSError as exc:
        raise ConfigurationError(f"nothing answers at the Ray address {address} ({exc.strerror or exc}): start "
                                 f"the cluster (`ray start --head`) or give the address its head printed") from None


class RayServeBackend:
    """Smart Turn windows (and STT segments) judged by a Ray Serve deployment.

    Args:
        address: The Ray cluster (``host:port`` of its head, or ``ray://host:port``); ``None``: the Ray
            instance this process already runs (``ray.init()`` done by the caller), or a new local one.
        model: As for :func:`inference_app` (when deploying).
        stt: As for :func:`inference_app`.
        max_batch: As for :func:`inference_app`.
        batch_wait: As for :func:`inference_app`.
        replicas: As for :func:`inference_app`.
        deploy: Deploy the application (else use the one already running under ``app_name``).
        app_name: The Serve application's name.
        connect_timeout: Seconds to wait for the address to answer.

    Raises:
        ConfigurationError: the address does not answer, Ray is not installed, or the deployment failed.
    """

    name = "ray"

    def __init__(
        self,
        address: str | None = None,
        *,
        model: str | None = None,
        stt: str | None = None,
        deploy: bool = True,
        app_name: str = APP_NAME,
        max_batch: int = 32,
        batch_wait: float = 0.005,
        replicas: int = 1,
        connect_timeout: float = 5.0,
    ) -> None:
        serve = _serve()
        import ray

        if address is not None:
            check_ray_address(address, connect_timeout)
        try:
            if not ray.is_initialized():
                local: dict[str, Any] = {} if address else {"_node_ip_address": "127.0.0.1"}
                ray.init(address=address, log_to_driver=False, include_dashboard=False, **local)
            if deploy:
                serve.start(proxy_location="Disabled")
                self.handle = serve.run(inference_app(model, stt=stt, max_batch=max_batch, batch_wait=batch_wait,
                                                      replicas=replicas), name=app_name, route_prefix=None)
            else:
                self.handle = serve.get_app_handle(app_name)
            # windows go straight to the batched deployment: one hop, not two through the entry point
            self.turn_handle = serve.get_deployment_handle("SmartTurn", app_name)
        except ConfigurationError:
            raise
        except Exception as exc:  # Ray raises many kinds
            raise ConfigurationError(f"Ray Serve could not run the inference application: {exc}") from exc
        self.address = address
        self.app_name = app_name
        self.stt = stt
        self._waits = concurrent.futures.ThreadPoolExecutor(32, thread_name_prefix="rxvoice-ray")
        self._closed = False
        self._lock = threading.Lock()

    def _wait(self, responses: list[Any]) -> list[Any]:
        return [r.result() for r in responses]

    def turn_probabilities(self, windows: Sequence[Float32Array]) -> concurrent.futures.Future[list[float]]:
        try:
            responses = [self.turn_handle.judge.remote(w) for w in windows]
            return self._waits.submit(lambda: [float(p) for p in self._wait(responses)])
        except Exception as exc:
            failed: concurrent.futures.Future[list[float]] = concurrent.futures.Future()
            failed.set_exception(InferenceError(f"Ray Serve refused the windows: {exc}"))
            return failed

    def transcribe(self, pcm: bytes, sample_rate: int) -> concurrent.futures.Future[str]:
        try:
            response = self.handle.transcribe.remote(pcm, sample_rate)
            return self._waits.submit(lambda: str(response.result()))
        except Exception as exc:
            failed: concurrent.futures.Future[str] = concurrent.futures.Future()
            failed.set_exception(InferenceError(f"Ray Serve refused the segment: {exc}"))
            return failed

    def close(self) -> None:
        """Stop waiting (the deployment keeps running for the other workers)."""
        self._waits.shutdown(wait=False, cancel_futures=True)

    def __repr__(self) -> str:
        return f"RayServeBackend({self.address!r}, app={self.app_name!r})"
