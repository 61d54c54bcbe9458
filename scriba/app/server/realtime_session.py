"""A Realtime transcription session's configuration, as OpenAI's session objects carry it: the GA
form (`session.update` with `session.type = "transcription"`: audio.input.format, .transcription,
.turn_detection) and the older one (`transcription_session.update`: input_audio_format,
input_audio_transcription, turn_detection). Both read into one `RealtimeConfig`; each is written
back in the form it was asked in."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field, replace

from scriba.transcription.turns import TurnDetection

RATES = (24000, 16000)  # OpenAI sends 24 kHz PCM16; 16 kHz (Whisper's own) is taken too
SERVER_VAD = "server_vad"


class ConfigError(ValueError):
    """A session update that cannot be taken: its one-line message and the field it is about."""

    def __init__(self, message: str, param: str):
        super().__init__(message)
        self.param = param


@dataclass(frozen=True)
class RealtimeConfig:
    rate: int = 24000
    model: str = "whisper-1"
    language: str | None = None
    prompt: str = ""
    detection: TurnDetection | None = field(default_factory=TurnDetection)
    id: str = field(default_factory=lambda: "sess_" + secrets.token_hex(8))

    def updated(self, session: dict, legacy: bool) -> RealtimeConfig:
        """This config with a client's `session` object applied (fields it leaves out stay)."""
        if not isinstance(session, dict):
            raise ConfigError("session must be an object", "session")
        if legacy:
            return self._legacy(session)
        if session.get("type", "transcription") != "transcription":
            raise ConfigError(
                f"this server runs transcription sessions only (session.type 'transcription'), "
                f"got {session.get('type')!r}",
                "session.type",
            )
        audio_in = _object(_object(session.get("audio"), "session.audio").get("input"), "session.audio.input")
        new = self
        if "format" in audio_in:
            new = replace(new, rate=_rate(audio_in["format"]))
        if "transcription" in audio_in:
            new = new._transcription(audio_in["transcription"], "session.audio.input.transcription")
        if "turn_detection" in audio_in:
            detection = _detection(audio_in["turn_detection"], "session.audio.input.turn_detection")
            new = replace(new, detection=detection)
        return new

    def _legacy(self, session: dict) -> RealtimeConfig:
        new = self
        if "input_audio_format" in session:
            if session["input_audio_format"] != "pcm16":
                raise ConfigError("input_audio_format must be 'pcm16' (24 kHz)", "session.input_audio_format")
            new = replace(new, rate=24000)
        if "input_audio_transcription" in session:
            new = new._transcription(
                session["input_audio_transcription"], "session.input_audio_transcription"
            )
        if "turn_detection" in session:
            new = replace(new, detection=_detection(session["turn_detection"], "session.turn_detection"))
        return new

    def _transcription(self, given, param: str) -> RealtimeConfig:
        given = _object(given, param)
        for name in ("model", "language", "prompt"):
            if given.get(name) is not None and not isinstance(given[name], str):
                raise ConfigError(f"{param}.{name} must be text", f"{param}.{name}")
        return replace(
            self,
            model=given.get("model") or self.model,
            language=given.get("language", self.language) or None,
            prompt=given.get("prompt", self.prompt) or "",
        )

    def session(self, legacy: bool) -> dict:
        """The session object `session.created` / `.updated` (or the transcription_session
        events) carry."""
        transcription = {"model": self.model, "language": self.language, "prompt": self.prompt}
        detection = None
        if self.detection is not None:
            d = self.detection
            detection = {
                "type": SERVER_VAD,
                "threshold": d.threshold,
                "prefix_padding_ms": d.prefix_padding_ms,
                "silence_duration_ms": d.silence_duration_ms,
            }
        if legacy:
            return {
                "id": self.id,
                "object": "realtime.transcription_session",
                "input_audio_format": "pcm16",
                "input_audio_transcription": transcription,
                "turn_detection": detection,
                "input_audio_noise_reduction": None,
                "include": [],
            }
        audio_format = {"type": "audio/pcm", "rate": self.rate}
        audio_in = {"format": audio_format, "transcription": transcription, "turn_detection": detection}
        audio_in["noise_reduction"] = None
        return {
            "id": self.id,
            "object": "realtime.transcription_session",
            "type": "transcription",
            "audio": {"input": audio_in},
            "include": [],
        }


def _object(value, param: str) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(f"{param} must be an object", param)
    return value


def _rate(audio_format) -> int:
    audio_format = _object(audio_format, "session.audio.input.format")
    if audio_format.get("type", "audio/pcm") != "audio/pcm":
        raise ConfigError(
            "audio.input.format.type must be 'audio/pcm' (PCM16)", "session.audio.input.format.type"
        )
    rate = audio_format.get("rate", 24000)
    if rate not in RATES:
        raise ConfigError(
            f"audio.input.format.rate must be 24000 or 16000, got {rate!r}", "session.audio.input.format.rate"
        )
    return rate


def _detection(given, param: str) -> TurnDetection | None:
    """OpenAI's turn_detection: server VAD (its threshold, prefix padding and silence), or None:
    the client commits each turn."""
    if given is None:
        return None
    given = _object(given, param)
    if given.get("type", SERVER_VAD) != SERVER_VAD:
        raise ConfigError(
            f"{param}.type must be 'server_vad' or the field null, got {given.get('type')!r}", f"{param}.type"
        )
    defaults = TurnDetection()
    try:
        return TurnDetection(
            threshold=given.get("threshold", defaults.threshold),
            prefix_padding_ms=given.get("prefix_padding_ms", defaults.prefix_padding_ms),
            silence_duration_ms=given.get("silence_duration_ms", defaults.silence_duration_ms),
        )
    except (TypeError, ValueError) as e:
        raise ConfigError(str(e).replace("turn_detection", param), param) from None
