"""Why a file is not usable audio, in one vocabulary for every surface: each error is one line
that names the file as the user named it, and carries its category for the server's status
code, the CLI's exit and `scriba batch`'s rows."""

from __future__ import annotations

# Limits past which a header is not describing real audio (libsndfile's own channel limit is
# 1,024; the fastest rate in use is 768 kHz).
MIN_SAMPLE_RATE, MAX_SAMPLE_RATE = 1_000, 1_000_000
MAX_CHANNELS = 1_024


class AudioError(ValueError):
    """The input is not usable audio; the message says why."""

    category = "not audio"


class EmptyAudio(AudioError):
    category = "empty"


class NotAudio(AudioError):
    category = "not audio"


class DamagedAudio(AudioError):
    """Truncated or corrupt: the decoder failed partway (or at once, on a valid header)."""

    category = "truncated or corrupt"


class ImpossibleHeader(AudioError):
    category = "impossible header"


class AudioTooLong(AudioError):
    category = "too long"


class UnsupportedCodec(AudioError):
    category = "unsupported codec"


def too_long(name: str, seconds: float, limit: float) -> AudioTooLong:
    """'talk.mp3 is 3.2 hours long; the limit is 2 hours' (minutes below two hours)."""

    def say(t: float) -> str:
        return f"{t / 3600:.1f} hours" if t >= 7200 else f"{t / 60:.0f} minutes"

    return AudioTooLong(f"{name} is {say(seconds)} long; the limit is {say(limit)}")


def damaged(name: str, decoded_seconds: float, expected_seconds: float | None) -> DamagedAudio:
    """'x.flac is truncated or corrupt: 0.3 s of 11.0 s decoded before the damage'."""
    if decoded_seconds <= 0:
        return DamagedAudio(f"{name} is truncated or corrupt: no audio could be decoded")
    of = f" of {expected_seconds:.1f} s" if expected_seconds else ""
    decoded = f"{decoded_seconds:.1f} s{of} decoded before the damage"
    return DamagedAudio(f"{name} is truncated or corrupt: {decoded}")


def unreadable(name: str, container: str) -> DamagedAudio:
    return DamagedAudio(f"{name} is truncated or corrupt: it starts as {container} but cannot be read")


def check_header(name: str, sample_rate: float, channels: int) -> None:
    """ImpossibleHeader when a sample rate or channel count is outside what exists."""
    if not MIN_SAMPLE_RATE <= sample_rate <= MAX_SAMPLE_RATE:
        raise ImpossibleHeader(f"{name} has an impossible header: a sample rate of {sample_rate:g} Hz")
    if not 1 <= channels <= MAX_CHANNELS:
        raise ImpossibleHeader(f"{name} has an impossible header: {channels} channels")


def check_length(name: str, seconds: float | None, size: int) -> None:
    """ImpossibleHeader when a header claims more audio than its file's `size` bytes can hold:
    every codec needs more than a byte per second, even for silence."""
    if seconds is not None and seconds > max(size, 60):
        raise ImpossibleHeader(
            f"{name} has an impossible header: {seconds / 3600:,.1f} hours of audio in {size:,} bytes"
        )
