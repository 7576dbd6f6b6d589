"""Running ``rxvoice serve``: the models a process shares, how many sessions it takes, its processes, TLS.

**One process** (the default) runs every session on one event loop. What is
heavy is shared and off the loop: the Silero calls of all sessions are
batched on a thread of their own (the chunks that arrive during one model call
form the next, :class:`~rxvoice.audio.vad_processor.VADBatcher`),
Smart Turn windows go to an inference backend (in process: the
:class:`~rxvoice.audio.turn.SmartTurnBatcher`, which judges the windows
waiting at the same moment in one call, on worker threads, as many calls at
once as there are cores but one, at least one), PocketSphinx
decoders are lent per utterance from a pool, so a connection costs nothing
until its caller speaks.

**Admission**: at most ``--max-sessions`` at once, by default what the
machine's cores carry at the cost per session ``benchmarks/serve.py``
measured (:data:`CORES_PER_SESSION`); past it a caller is told "server
full". **Workers**: ``--workers N`` starts N processes that accept on one
listening socket (each connection stays with the process that accepted it,
its session never moves); they count their sessions in shared memory, so
admission and ``/load`` are the machine's. **TLS**: ``--tls CERT KEY`` or
``--self-signed`` serve the page over https, which browsers require for the
microphone anywhere but on localhost.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import ipaddress
import logging
import math
import multiprocessing
import os
import signal
import socket
import ssl
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TextIO

from ..audio.vad_processor import VADBatcher
from ..errors import ConfigurationError
from ._common import CLIError

if TYPE_CHECKING:
    from ..inference import InferenceBackend, InferenceFallback
    from ..services.stt import STTService
    from ..turns import EndOfTurnAnalyzer
    from .setups import Setup

__all__ = [
    "CORES_PER_SESSION",
    "INFERENCE_CHOICES",
    "Models",
    "default_max_sessions",
    "listen",
    "loopback",
    "self_signed_certificate",
    "serve_forever",
    "tls_context",
]

log = logging.getLogger("rxvoice.cli.serve")

INFERENCE_CHOICES = ("in-process", "process-pool", "ray")

CORES_PER_SESSION = {"client": 0.06, "none": 0.06, "openai": 0.06, "pocketsphinx": 0.4}
"""The share of a core one live session costs, by ``--stt`` (Silero, Smart Turn at each pause, the words,
the scripted model, the page's events), as ``benchmarks/serve.py`` measures it on a real-time call (the
slope of the server's CPU against N at N = 1 to 4, where every session is held); it is what the default
``--max-sessions`` is derived from (see :func:`default_max_sessions`). An engine not listed counts as the
dearest."""

HEADROOM = 0.8
"""The share of the machine's cores the default admission fills (the rest absorbs bursts: every caller pausing
at once asks Smart Turn at once)."""


class ServerOptions(Protocol):
    """What this module reads of ``rxvoice serve``'s options (:class:`rxvoice.cli.serve.ServerOptions`)."""

    stt: str
    stop: str
    model: Path | None
    max_sessions: int | None
    inference: str
    inference_processes: int
    ray_address: str | None
    inference_timeout: float
    workers: int
    tls: tuple[Path, Path] | None

    @property
    def setup(self) -> Setup: ...

    def describe(self) -> dict[str, Any]: ...


AppFactory = Callable[..., Any]
"""``make_app(options, admission=..., deploy=...)``: a worker's aiohttp application."""


def cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def default_max_sessions(stt: str, n_cores: int | None = None) -> int:
    """``floor(cores × HEADROOM / CORES_PER_SESSION[stt])``, at least 1: the sessions the cores carry in real time."""
    cost = CORES_PER_SESSION.get(stt, max(CORES_PER_SESSION.values()))
    return max(1, math.floor((n_cores or cores()) * HEADROOM / cost))


def loopback(host: str) -> bool:
    """Whether ``host`` keeps the server to the host it runs on (loopback)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


# -- the models one process shares --------------------------------------------------------------------------------


class Models:
    """What every session of one server process shares: the VAD batcher, the inference backend, the decoders.

    Made once per process (the worker's, in ``--workers`` mode), before the first session. What every
    session's pipeline is built from and does not change (the setup, its VAD settings, the hello, the words'
    end-of-turn model) is worked out here once: a connection then costs only its own objects.
    """

    def __init__(self, options: ServerOptions, *, deploy: bool = True) -> None:
        self.options = options
        self.setup = options.setup
        self.vad_params = self.setup.vad_params
        self.hello: dict[str, Any] = {"type": "hello", "setup": options.describe()}
        self.words_end: Any = None
        if self.setup.stop == "smart-turn":
            from ..turns.ending import default_words_end

            self.words_end = default_words_end()  # read-only, shared (its language model is loaded once anyway)
        self.vad_batcher = VADBatcher(thread=True)  # Silero off the event loop, batched with the load
        self.backend: InferenceBackend | None = None
        self.decoders: Any = None
        remote_stt = options.stt == "pocketsphinx" and options.inference != "in-process"
        if options.setup.named.needs_model:
            self.backend = make_backend(options, stt="pocketsphinx" if remote_stt else None, deploy=deploy)
        elif remote_stt:
            self.backend = make_backend(options, stt="pocketsphinx", deploy=deploy)
        if options.stt == "pocketsphinx" and not remote_stt:
            from ..inference import DecoderPool

            self.decoders = DecoderPool()
            self.decoders.prewarm(1)  # the first caller does not pay for the first decoder

    def turn_analyzer(self, on_fallback: Callable[[InferenceFallback], None],
                      on_dropped: Callable[[], None] | None = None) -> EndOfTurnAnalyzer | None:
        """A session's Smart Turn analyzer (its fallbacks and dropped verdicts reported to that session), or None."""
        if self.backend is None or not self.options.setup.named.needs_model:
            return None
        from ..inference import BackendTurnAnalyzer

        return BackendTurnAnalyzer(self.backend, timeout=self.options.inference_timeout, on_fallback=on_fallback,
                                   on_dropped=on_dropped)

    def stt(self, on_fallback: Callable[[InferenceFallback], None]) -> STTService | None:
        """A session's STT stage when this process shares its engine (PocketSphinx), else None."""
        if self.options.stt != "pocketsphinx":
            return None
        from ..inference import BackendSTT, PooledPocketSphinxSTT

        if self.decoders is not None:
            return PooledPocketSphinxSTT(self.decoders)
        assert self.backend is not None
        return BackendSTT(self.backend, timeout=max(2.0, 2 * self.options.inference_timeout),
                          on_fallback=on_fallback)

    def close(self) -> None:
        self.vad_batcher.close()
        if self.backend is not None:
            self.backend.close()


def make_backend(options: ServerOptions, *, stt: str | None, deploy: bool = True) -> InferenceBackend:
    """The inference backend ``--inference`` names."""
    from .. import inference

    try:
        if options.inference == "process-pool":
            return inference.ProcessPoolBackend(options.model, processes=options.inference_processes, stt=stt,
                                                stt_processes=options.inference_processes)
        if options.inference == "ray":
            return inference.RayServeBackend(options.ray_address, model=str(options.model) if options.model else None,
                                             stt=stt, deploy=deploy)
        # Smart Turn windows judged on every core but one at once: a batch costs about as much a window as one
        # window alone, so a burst of pauses (many callers stopping within a second) is cleared sooner on more
        # threads; one core is left to the event loop and the VAD, whose lateness every session feels (on a
        # slow 2-core computer, 24 replayed sessions: p99 1.02-1.05 s with one model call at a time against
        # 1.10-1.25 s with two; verdicts no longer needed are dropped either way, so no fallbacks with one).
        return inference.InProcessBackend(options.model, stt=stt, concurrency=max(1, cores() - 1))
    except ConfigurationError as exc:
        raise CLIError(str(exc)) from None


# -- sockets and TLS --------------------------------------------------------------------------------------------


REUSE_PORT = hasattr(socket, "SO_REUSEPORT")
"""Whether the workers get a listening socket each on the one port (Linux, the BSDs, macOS; elsewhere they share
the parent's)."""


def listen(host: str, port: int, backlog: int = 256, *, reuse_port: bool = False) -> socket.socket:
    """A listening TCP socket; ``reuse_port``: others may listen on the same address (``SO_REUSEPORT``)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    family, kind, proto, _, address = infos[0]
    return _listening(family, kind, proto, address, backlog, reuse_port)


def listen_again(sock: socket.socket, backlog: int = 256) -> socket.socket:
    """Another listening socket on ``sock``'s address (both made with ``reuse_port``): the kernel spreads new
    connections over them."""
    return _listening(sock.family, sock.type, sock.proto, sock.getsockname(), backlog, True)


def reuses_port(sock: socket.socket) -> bool:
    """Whether ``sock`` was made with ``reuse_port``."""
    return REUSE_PORT and bool(sock.getsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT))


def _listening(family: Any, kind: Any, proto: int, address: Any, backlog: int, reuse_port: bool) -> socket.socket:
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        if reuse_port:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind(address)
        sock.listen(backlog)
    except OSError:
        sock.close()
        raise
    sock.setblocking(False)
    return sock


def tls_context(cert: Path, key: Path) -> ssl.SSLContext:
    """A server TLS context from a certificate chain and its key (PEM files)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(str(cert), str(key))
    except (OSError, ssl.SSLError) as exc:
        raise CLIError(f"--tls {cert} {key}: cannot load the certificate and key: {exc}") from None
    return context


def self_signed_certificate(host: str, folder: Path | None = None) -> tuple[Path, Path]:
    """A self-signed certificate for ``host`` (and localhost), made once and kept (``cryptography``).

    Browsers warn about it once; after that the page is a secure context, so the microphone works on a LAN
    address too.
    """
    import datetime

    try:
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import NameOID
    except ImportError:  # pragma: no cover - depends on the install
        raise CLIError("--self-signed needs the cryptography package: pip install 'rxvoice[serve]'") from None
    from ..audio.turn import cache_dir

    names = sorted({host, "localhost", "127.0.0.1", socket.gethostname()} - {"0.0.0.0", "::", ""})
    folder = folder or cache_dir() / "tls"
    folder.mkdir(parents=True, exist_ok=True)
    stem = "self-signed-" + "-".join(n.replace(":", "_") for n in names)[:80]
    cert_path, key_path = folder / f"{stem}.crt", folder / f"{stem}.key"
    if cert_path.is_file() and key_path.is_file():
        return cert_path, key_path
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "rxvoice serve")])
    alt: list[x509.GeneralName] = []
    for name in names:
        try:
            alt.append(x509.IPAddress(ipaddress.ip_address(name)))
        except ValueError:
            alt.append(x509.DNSName(name))
    now = datetime.datetime.now(datetime.UTC)  # a certificate's validity is wall-clock time
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=365))
            .add_extension(x509.SubjectAlternativeName(alt), critical=False)
            .sign(key, hashes.SHA256()))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    key_path.chmod(0o600)
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return cert_path, key_path


# -- one process serving ------------------------------------------------------------------------------------------


async def serve_forever(
    app: Any, sock: socket.socket, tls: ssl.SSLContext | None, on_ready: Callable[[int], None],
    stop: asyncio.Event | None = None,
) -> None:
    """Serve ``app`` on ``sock`` until ``stop`` is set (or forever); ``on_ready(port)`` once it accepts.

    What the process loaded before it accepts (modules, the models, the words' language model) is frozen out
    of the garbage collector (``gc.freeze``): a full collection, which the objects of sessions that come and
    go set off, then walks only the live sessions' objects, not the whole process. Measured: a full
    collection over the unfrozen process took 130 ms of the event loop (every session late by that much),
    set off by a client reconnecting in a loop.
    """
    from aiohttp import web

    runner = web.AppRunner(app, handle_signals=False, access_log=None)
    await runner.setup()
    gc.freeze()  # the modules and models loaded so far are never walked again by a full collection
    loop = asyncio.get_running_loop()
    assert runner.server is not None
    server = await loop.create_server(runner.server, sock=sock, ssl=tls,
                                      ssl_handshake_timeout=10.0 if tls is not None else None)
    try:
        on_ready(int(sock.getsockname()[1]))
        await (stop or asyncio.Event()).wait()
    finally:
        server.close()
        with contextlib.suppress(Exception):
            await runner.cleanup()


def _worker_main(make_app: AppFactory, options: ServerOptions, sock: socket.socket, index: int, counts: Any,
                 lock: Any, ready: Any) -> None:
    """A worker process: its own models and loop, its sessions counted in the machine's shared counters."""
    from ..transports import SharedAdmission

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops the workers (SIGTERM)
    logging.basicConfig(level=logging.WARNING, format=f"worker {index}: %(levelname)s %(name)s: %(message)s")
    assert options.max_sessions is not None
    admission = SharedAdmission(counts, index, options.max_sessions, lock)
    try:
        app = make_app(options, admission=admission, deploy=False)
    except CLIError as exc:
        print(f"worker {index}: error: {exc}", file=sys.stderr, flush=True)
        ready.put((index, str(exc)))
        return
    tls = tls_context(*options.tls) if options.tls else None
    if index > 0 and reuses_port(sock):
        sock = listen_again(sock)  # a socket of its own, listening once its models are loaded

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGTERM, stop.set)
        await serve_forever(app, sock, tls, lambda _port: ready.put((index, None)), stop)

    asyncio.run(main())


def run_workers(make_app: AppFactory, options: ServerOptions, sock: socket.socket, out: TextIO,
                announce: Callable[[int], None]) -> int:
    """Start ``options.workers`` processes on ``sock``, keep them running (restarting one that dies) until a signal.

    Each runs ``make_app`` (a module-level function: the spawned process imports it by name).
    """
    context = multiprocessing.get_context("spawn")  # no fork of a process that may hold threads
    counts = context.Array("i", options.workers, lock=False)
    lock = context.Lock()
    ready: Any = context.Queue()
    worker_options = options
    if options.inference == "ray":
        worker_options = _ray_for_workers(options)

    def start(index: int) -> multiprocessing.process.BaseProcess:
        proc = context.Process(target=_worker_main, args=(make_app, worker_options, sock, index, counts, lock, ready),
                               name=f"rxvoice-serve-{index}", daemon=True)
        proc.start()
        return proc

    procs = [start(i) for i in range(options.workers)]
    failures: list[str] = []
    for _ in range(options.workers):
        _index, error = ready.get()
        if error is not None:
            failures.append(error)
    if failures:
        for p in procs:
            p.terminate()
        raise CLIError(failures[0])
    announce(int(sock.getsockname()[1]))
    stopping = False

    def stop(_signum: int, _frame: Any) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    try:
        while not stopping:
            for i, p in enumerate(procs):
                p.join(timeout=0.5)
                if p.exitcode is not None and not stopping:
                    print(f"rxvoice serve: worker {i} exited ({p.exitcode}); starting it again", file=out, flush=True)
                    counts[i] = 0  # its sessions ended with it
                    procs[i] = start(i)
    except KeyboardInterrupt:
        pass
    finally:
        for p in procs:
            if p.is_alive():
                p.terminate()
        for p in procs:
            p.join(10)
    return 0


def _ray_for_workers(options: ServerOptions) -> ServerOptions:
    """Deploy the inference application once, from the parent, and give the workers its cluster's address."""
    import ray

    from ..inference import RayServeBackend

    try:
        backend = RayServeBackend(options.ray_address, model=str(options.model) if options.model else None,
                                  stt="pocketsphinx" if options.stt == "pocketsphinx" else None, deploy=True)
    except ConfigurationError as exc:
        raise CLIError(str(exc)) from None
    backend.close()
    address = options.ray_address or ray.get_runtime_context().gcs_address
    return replace(options, ray_address=address)  # type: ignore[type-var]
