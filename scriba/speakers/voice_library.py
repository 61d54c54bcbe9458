"""Voices kept across recordings: a person named once is named wherever their voice comes again.

The library is one JSON file, `voices.json`, in the user's data folder ($SCRIBA_DATA, else
$XDG_DATA_HOME/scriba, else ~/.local/share/scriba): each name with its voice, the unit mean
embedding of its clips under the bundled voice encoder (voice_encoder.py), and how much speech
made it. A voice is kept, not the audio (transcription/kept_voices.py makes voices of clips).
A name already kept takes a new voice only with `replace`, or `extend` (the new speech joins the
old voice, weighted by its seconds).
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass

import numpy as np

VOICES_FILE = "voices.json"
ENCODER = "resemblyzer"  # the embedding the kept voices are in


class VoiceLibraryError(ValueError):
    """A voice library operation that cannot be done (one line, naming the problem)."""


def data_folder() -> str:
    """Scriba's data folder: $SCRIBA_DATA, else $XDG_DATA_HOME/scriba, else ~/.local/share/scriba."""
    home = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.environ.get("SCRIBA_DATA") or os.path.join(home, "scriba")


@dataclass(frozen=True)
class KeptVoice:
    name: str
    voice: np.ndarray  # [256] unit vector
    seconds: float  # of the speech it was made from
    clips: int


class VoiceLibrary:
    """The voices kept in `folder` (default: data_folder())."""

    def __init__(self, folder: str | None = None):
        self.folder = folder or data_folder()
        self.path = os.path.join(self.folder, VOICES_FILE)

    def exists(self) -> bool:
        return os.path.exists(self.path)

    def voices(self) -> dict[str, KeptVoice]:
        """name -> KeptVoice, in the order they were added ({} where there is no library)."""
        if not self.exists():
            return {}
        try:
            with open(self.path, encoding="utf-8") as f:
                kept = json.load(f)
            return {name: _kept(name, entry) for name, entry in kept["voices"].items()}
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise VoiceLibraryError(f"the voice library {self.path} cannot be read ({e})") from None

    def known(self) -> dict[str, np.ndarray]:
        """name -> voice, as diarize's `known` takes them."""
        return {name: v.voice for name, v in self.voices().items()}

    def add(self, name: str, voice: np.ndarray, seconds: float, clips: int = 1, replace: bool = False,
            extend: bool = False) -> KeptVoice:
        """Keeps `voice` ([d] unit, made from `seconds` of speech in `clips` clips) as `name`;
        `extend`: joined to the voice kept under that name, weighted by their seconds."""
        name = self.check_name(name, replace or extend)
        voices = self.voices()
        old = voices.get(name)
        voice = np.asarray(voice, dtype=np.float64)
        if extend and old is not None:
            voice = voice * seconds + old.voice * old.seconds
            seconds, clips = seconds + old.seconds, clips + old.clips
        unit = (voice / max(float(np.linalg.norm(voice)), 1e-8)).astype(np.float32)
        voices[name] = KeptVoice(name, unit, float(seconds), int(clips))
        self._write(voices)
        return voices[name]

    def check_name(self, name, may_exist: bool = False) -> str:
        """The name, stripped; a one-line error for one that cannot be a person's, or one already
        kept (unless `may_exist`)."""
        name = _checked_name(name)
        if not may_exist and name in self.voices():
            raise VoiceLibraryError(
                f"a voice named {name!r} is already kept: replace it (--replace) or add to it (--extend)"
            )
        return name

    def remove(self, name: str) -> None:
        voices = self._existing()
        if name not in voices:
            raise VoiceLibraryError(f"no voice named {name!r} is kept (kept: {', '.join(voices) or 'none'})")
        del voices[name]
        self._write(voices)

    def rename(self, old: str, new: str) -> None:
        voices, new = self._existing(), _checked_name(new)
        if old not in voices:
            raise VoiceLibraryError(f"no voice named {old!r} is kept (kept: {', '.join(voices) or 'none'})")
        if new in voices and new != old:
            raise VoiceLibraryError(f"a voice named {new!r} is already kept")
        voices = {new if n == old else n: KeptVoice(new, v.voice, v.seconds, v.clips) if n == old else v
                  for n, v in voices.items()}
        self._write(voices)

    def _existing(self) -> dict[str, KeptVoice]:
        if not self.exists():
            raise VoiceLibraryError(f"no voice library at {self.path}: keep a voice first")
        return self.voices()

    def _write(self, voices: dict[str, KeptVoice]) -> None:
        """The whole file replaced at once: a reader never sees half of it."""
        entries = {n: {"voice": [round(float(x), 6) for x in v.voice], "seconds": round(v.seconds, 2),
                       "clips": v.clips} for n, v in voices.items()}
        try:
            os.makedirs(self.folder, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=".voices-", suffix=".json")
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump({"encoder": ENCODER, "voices": entries}, f, indent=1)
            os.replace(tmp, self.path)
        except OSError as e:
            raise VoiceLibraryError(f"the voice library {self.path} cannot be written ({e})") from None


def _kept(name: str, entry: dict) -> KeptVoice:
    voice = np.asarray(entry["voice"], dtype=np.float32)
    if voice.ndim != 1 or not voice.size:
        raise ValueError(f"the voice of {name!r} is not a vector")
    return KeptVoice(name, voice, float(entry.get("seconds", 0.0)), int(entry.get("clips", 1)))


def _checked_name(name) -> str:
    if not isinstance(name, str) or not name.strip():
        raise VoiceLibraryError(f"a voice needs a name, got {name!r}")
    name = name.strip()
    if name.startswith("SPEAKER_"):
        raise VoiceLibraryError(f"{name!r} is the label of an unnamed voice: give the person's name")
    return name
