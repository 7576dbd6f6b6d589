"""Transports: how audio gets in and out of a pipeline.

:class:`WebSocketAudioTransport` carries a browser's microphone (16 kHz PCM)
into a pipeline and the bot's audio and JSON events back, over one WebSocket
(aiohttp); :func:`voice_app` serves a page and one pipeline per connection.
It is what ``rxvoice serve`` runs; put your own pipeline and page behind it.
Needs the ``serve`` extra: ``pip install 'rxvoice[serve]'``.
"""

from .websocket import LIVE_TRANSPORTS, STATIC, Limits, WebSocketAudioTransport, origin_allowed, voice_app

__all__ = ["LIVE_TRANSPORTS", "STATIC", "Limits", "WebSocketAudioTransport", "origin_allowed", "voice_app"]
