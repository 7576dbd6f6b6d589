"""Transports: how audio gets in and out of a pipeline.

:class:`WebSocketAudioTransport` carries a browser's microphone (16 kHz PCM)
into a pipeline and the bot's audio and JSON events back, over one WebSocket
(aiohttp); :func:`voice_app` serves a page and one pipeline per connection,
behind the Origin rule, an optional token and admission control
(:class:`Admission`, the ``/load`` figure). It is what ``rxvoice serve``
runs; put your own pipeline and page behind it. Needs the ``serve`` extra:
``pip install 'rxvoice[serve]'``.
"""

from .admission import Admission, AdmissionControl, SessionStarts, SharedAdmission
from .app import ADMISSION, LIVE_TRANSPORTS, STATIC, LoopLag, voice_app
from .guard import RefusalLog, new_token, origin_allowed, own_authorities, token_matches
from .websocket import CappedWebSocketResponse, Limits, WebSocketAudioTransport

__all__ = [
    "ADMISSION",
    "LIVE_TRANSPORTS",
    "STATIC",
    "Admission",
    "AdmissionControl",
    "CappedWebSocketResponse",
    "Limits",
    "LoopLag",
    "RefusalLog",
    "SessionStarts",
    "SharedAdmission",
    "WebSocketAudioTransport",
    "new_token",
    "origin_allowed",
    "own_authorities",
    "token_matches",
    "voice_app",
]
