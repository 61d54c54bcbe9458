"""Voices from clips, kept in the user's voice library (scriba/speakers/voice_library.py) and read
back when a recording is diarized: the names a transcription gives its speakers.

A clip's voice is read from its speech only (Silero's, as the diarizer reads it): the pauses and
the noise between words say nothing about whose voice it is, and a clip with no speech is refused.
"""

from __future__ import annotations

import numpy as np

from scriba.media.load import SAMPLE_RATE, AudioError, load_audio
from scriba.speakers.diarize import voice_of
from scriba.speakers.voice_library import KeptVoice, VoiceLibrary, VoiceLibraryError
from scriba.transcription.speaker_labels import SPEECH
from scriba.transcription.vad import chunks_of, speech_probabilities

MIN_SPEECH_SECONDS = 1.0  # a clip with less speech says too little about a voice


def clip_voice(clip, encoder=None) -> tuple[np.ndarray, float]:
    """(the [d] unit voice of a clip of one speaker, the seconds of speech it was read from); a
    clip that cannot be read, or holds too little speech, is a ValueError saying which."""
    try:
        wave = load_audio(clip)
    except (AudioError, OSError, TypeError, ValueError) as e:
        raise ValueError(str(e)) from None
    spans = chunks_of(speech_probabilities(wave), len(wave), SPEECH)
    seconds = sum(e - s for s, e in spans) / SAMPLE_RATE
    if seconds < MIN_SPEECH_SECONDS:
        raise ValueError(f"it holds {seconds:.1f} s of speech; a voice needs at least "
                         f"{MIN_SPEECH_SECONDS:g} s of one person speaking")
    speech = np.concatenate([wave[s:e] for s, e in spans])
    return voice_of(speech, encoder), seconds


def remember_voice(name: str, clips, replace: bool = False, extend: bool = False,
                   library: VoiceLibrary | None = None) -> KeptVoice:
    """Keeps the voice of `clips` (one or more: paths, bytes, arrays of one person speaking) in
    the voice library as `name`: later transcriptions with diarize=True name that person
    wherever the voice comes. A name already kept needs `replace` or `extend`."""
    library = library or VoiceLibrary()
    clips = [clips] if isinstance(clips, (str, bytes, np.ndarray)) else list(clips)
    if not clips:
        raise VoiceLibraryError(f"no clip of {name!r}'s voice was given")
    library.check_name(name, replace or extend)  # before any clip is read
    read = []
    for clip in clips:
        try:
            read.append(clip_voice(clip))
        except ValueError as e:
            label = clip if isinstance(clip, str) else f"clip {len(read) + 1}"
            raise VoiceLibraryError(f"{label}: not usable as a voice clip: {e}") from None
    seconds = np.array([s for _, s in read])
    mean = (np.stack([v for v, _ in read]) * seconds[:, None]).sum(axis=0) / seconds.sum()
    return library.add(name, mean, float(seconds.sum()), len(clips), replace=replace, extend=extend)


def forget_voice(name: str, library: VoiceLibrary | None = None) -> None:
    """Removes `name`'s voice from the voice library."""
    (library or VoiceLibrary()).remove(name)


def kept_voices(library: VoiceLibrary | None = None) -> dict[str, KeptVoice]:
    """name -> KeptVoice of every voice in the library, in the order they were kept."""
    return (library or VoiceLibrary()).voices()


def speaker_voices(o, encoder=None) -> dict[str, np.ndarray] | None:
    """The voices a diarized transcription names: the library's (unless `o.use_voice_library`
    is off, or another speaker model reads voices its own way) and `o.known_speakers`' clips,
    which take the place of a kept voice of the same name."""
    voices: dict[str, np.ndarray] = {}
    if o.use_voice_library and o.speaker_model is None:
        voices.update(VoiceLibrary().known())
    for name, clip in (o.known_speakers or {}).items():
        try:
            voices[name] = clip_voice(clip, encoder)[0]
        except ValueError as e:
            raise ValueError(f"known speaker {name!r}: the reference clip is not usable ({e})") from None
    return voices or None
