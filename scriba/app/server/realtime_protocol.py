"""OpenAI's Realtime transcription protocol over one connection: client events in (JSON text),
server events out (dicts), with OpenAI's names. The transcribing is a LiveSession's
(transcription/live_session.py); this maps its events to OpenAI's and the client's to it.

Client events: session.update (session.type "transcription") and the older
transcription_session.update; input_audio_buffer.append (base64 PCM16 at the session's rate),
.commit, .clear. Server events: session.created / .updated (or transcription_session.created /
.updated), input_audio_buffer.speech_started / .speech_stopped / .committed / .cleared,
conversation.item.added, conversation.item.input_audio_transcription.delta (words as they are
confirmed) / .completed (the turn's transcribe()), and error (the session stays open).
"""

from __future__ import annotations

import base64
import binascii
import json
import secrets
from collections.abc import Callable

import numpy as np

from scriba.app.server.errors import APIError, log
from scriba.app.server.realtime_session import ConfigError, RealtimeConfig
from scriba.media.load import SAMPLE_RATE
from scriba.transcription import live_session as live
from scriba.transcription.options import TranscribeOptions


def event_id() -> str:
    return "event_" + secrets.token_hex(8)


def error_event(message: str, code: str, param: str | None = None, client_event: str | None = None) -> dict:
    error = {"type": "invalid_request_error", "code": code, "message": message, "param": param}
    return {"type": "error", "event_id": event_id(), "error": {**error, "event_id": client_event}}


class RealtimeConnection:
    """One client's session. `send(event)` may be called from any thread (the session's too)."""

    def __init__(self, served, settings, send: Callable[[dict], None]):
        self.served, self.settings, self.send = served, settings, send
        self.config, self.legacy = RealtimeConfig(), False
        self.received_seconds = 0.0
        self.resampler = _resampler(self.config.rate)
        self.session = live.LiveSession(self._heard, self._options(self.config), self.config.detection)

    def created(self) -> dict:
        return {"type": "session.created", "event_id": event_id(), "session": self.config.session(False)}

    def handle(self, text: str) -> None:
        """One client event; a bad one is answered by an error event."""
        try:
            event = json.loads(text)
        except (TypeError, ValueError):
            self.send(error_event("the event is not JSON", "invalid_json"))
            return
        if not isinstance(event, dict) or not isinstance(event.get("type"), str):
            self.send(error_event("an event is a JSON object with a 'type'", "invalid_event"))
            return
        kind, client_event = event["type"], event.get("event_id")
        handler = {
            "session.update": lambda: self._update(event, legacy=False),
            "transcription_session.update": lambda: self._update(event, legacy=True),
            "input_audio_buffer.append": lambda: self._append(event),
            "input_audio_buffer.commit": self.session.commit,
            "input_audio_buffer.clear": self.session.clear,
        }.get(kind)
        if handler is None:
            self.send(
                error_event(
                    f"unknown or unsupported event type {kind!r}", "invalid_event", "type", client_event
                )
            )
            return
        try:
            handler()
        except ConfigError as e:
            self.send(error_event(str(e), "invalid_value", e.param, client_event))
        except APIError as e:
            self.send(
                error_event(
                    e.message,
                    e.code or "invalid_value",
                    "session.audio.input.transcription.model",
                    client_event,
                )
            )
        except ValueError as e:
            self.send(error_event(str(e).splitlines()[0], "invalid_value", None, client_event))
        except Exception as e:  # noqa: BLE001 - a fault of ours: said, and the session goes on
            log.exception("realtime event %s failed", kind)
            self.send(
                {**error_event(f"the server failed on this event: {e}", "server_error"), "type": "error"}
            )

    def close(self) -> None:
        self.session.close()

    def _update(self, event: dict, legacy: bool) -> None:
        config = self.config.updated(event.get("session"), legacy)
        options = self._options(config)  # a model not served, or a bad language: an error, no change
        if config.rate != self.config.rate:
            self.resampler = _resampler(config.rate)
        self.config, self.legacy = config, legacy
        self.session.configure(options, config.detection)
        name = "transcription_session.updated" if legacy else "session.updated"
        self.send({"type": name, "event_id": event_id(), "session": config.session(legacy)})

    def _options(self, config: RealtimeConfig) -> TranscribeOptions:
        model = self.served.resolve(config.model, "whisper", "transcribe")
        self.served.loop(model)  # loaded now, and counted as a use (the least recently used goes)
        return TranscribeOptions(
            model=model,
            language=config.language,
            initial_prompt=config.prompt or None,
            engine=self.served.engine_config,
        )

    def _append(self, event: dict) -> None:
        audio = event.get("audio")
        if not isinstance(audio, str):
            raise ValueError("input_audio_buffer.append needs 'audio': base64 PCM16")
        try:
            raw = base64.b64decode(audio, validate=True)
        except (binascii.Error, ValueError):
            raise ValueError("audio is not base64") from None
        if len(raw) % 2 or len(raw) > self.settings.max_upload_bytes:
            raise ValueError("audio must be 16-bit PCM (an even number of bytes) within the upload limit")
        samples = np.frombuffer(raw, dtype="<i2").astype(np.float32) / 32768.0
        seconds = len(samples) / self.config.rate
        if self.received_seconds + seconds > self.settings.max_audio_seconds:
            raise ValueError(f"the session is over the audio limit ({self.settings.max_audio_seconds:.0f} s)")
        self.received_seconds += seconds
        self.session.append(samples if self.resampler is None else self.resampler.resample_chunk(samples))

    def _heard(self, event: live.Event) -> None:
        """A LiveSession event (on the session's thread) as OpenAI's server events."""
        for out in _server_events(event, self.config.rate):
            self.send({**out, "event_id": event_id()})


def _server_events(event: live.Event, rate: int) -> list[dict]:
    if isinstance(event, live.TurnStarted):
        return [
            {
                "type": "input_audio_buffer.speech_started",
                "item_id": event.item_id,
                "audio_start_ms": event.audio_start_ms,
            }
        ]
    if isinstance(event, live.TurnStopped):
        return [
            {
                "type": "input_audio_buffer.speech_stopped",
                "item_id": event.item_id,
                "audio_end_ms": event.audio_end_ms,
            }
        ]
    if isinstance(event, live.Committed):
        item = {
            "id": event.item_id,
            "object": "realtime.item",
            "type": "message",
            "role": "user",
            "status": "completed",
            "content": [{"type": "input_audio", "transcript": None}],
        }
        return [
            {
                "type": "input_audio_buffer.committed",
                "item_id": event.item_id,
                "previous_item_id": event.previous_item_id,
            },
            {"type": "conversation.item.added", "previous_item_id": event.previous_item_id, "item": item},
        ]
    if isinstance(event, live.Delta):
        return [
            {
                "type": "conversation.item.input_audio_transcription.delta",
                "item_id": event.item_id,
                "content_index": 0,
                "delta": event.text,
            }
        ]
    if isinstance(event, live.Completed):
        return [
            {
                "type": "conversation.item.input_audio_transcription.completed",
                "item_id": event.item_id,
                "content_index": 0,
                "transcript": event.transcript,
                "usage": {"type": "duration", "seconds": round(event.seconds, 3)},
            }
        ]
    if isinstance(event, live.Cleared):
        return [{"type": "input_audio_buffer.cleared"}]
    if isinstance(event, live.Failed):
        return [error_event(event.message, event.code)]
    return []  # Tentative: the Live tab's grey words, not OpenAI's


def _resampler(rate: int):
    """A stream resampler to 16 kHz (its state carries over between chunks), None at 16 kHz."""
    import soxr

    return None if rate == SAMPLE_RATE else soxr.ResampleStream(rate, SAMPLE_RATE, 1, dtype="float32")
