"""Audio files decoded: soundfile (libsndfile: wav, flac, ogg, mp3) first, PyAV (FFmpeg: m4a,
mp4, webm, opus, ...) when libsndfile cannot read a file, piece by piece so that a long file
never exists whole at its own rate and channel count. A file that cannot be used raises one of
scriba.media.errors' errors, naming the file as the caller names it: empty, not audio,
truncated or corrupt (with how much decoded), an impossible header, an unsupported codec."""

from __future__ import annotations

import io
import os
from typing import Any

import numpy as np

from scriba.media.errors import (
    AudioError,
    EmptyAudio,
    NotAudio,
    UnsupportedCodec,
    check_header,
    check_length,
    damaged,
    unreadable,
)
from scriba.media.headers import container_of, wav_format

# Containers whose header counts frames exactly: no frames there means an empty recording.
EXACT_LENGTH_FORMATS = {"WAV", "WAVEX", "AIFF", "W64", "RF64", "CAF", "AU"}


def probe_duration(path: str | os.PathLike, name: str | None = None) -> float | None:
    """The length in seconds of the audio file at `path`, read from its header (nothing is
    decoded), or None when the container does not say. An empty file, one that is not audio,
    an impossible header or a codec this build lacks raises AudioError naming it `name`
    (default: the path)."""
    name = name or repr(os.fspath(path))
    path = _open(path)
    if os.path.getsize(path) == 0:
        raise EmptyAudio(f"{name} is an empty file")
    import soundfile as sf

    try:
        info = sf.info(path)
    except Exception:  # not a libsndfile format: FFmpeg's demuxer (PyAV) is asked next
        return _probe_with_av(path, name)
    seconds = info.frames / info.samplerate if 0 < info.frames < 2**62 and info.samplerate > 0 else None
    check_header(name, info.samplerate, info.channels)
    check_length(name, seconds, os.path.getsize(path))
    return seconds


def _probe_with_av(path: str, name: str) -> float | None:
    head = _head(path)
    if (fmt := wav_format(head)) is not None:  # a WAV libsndfile refused: name the bad value
        check_header(name, fmt[0], fmt[1])
    try:
        import av

        with av.open(path, metadata_errors="ignore") as container:
            stream = _audio_stream(container, name)
            if stream.duration is not None and stream.time_base is not None:
                seconds = float(stream.duration * stream.time_base)
            else:
                seconds = container.duration / 1e6 if container.duration else None
    except AudioError:
        raise
    except Exception:
        raise _not_readable(name, head) from None
    check_length(name, seconds, os.path.getsize(path))
    return seconds


def _not_readable(name: str, head: bytes) -> AudioError:
    """Damaged when the file starts like an audio container, else not audio."""
    container = container_of(head)
    if container is None:
        return NotAudio(f"{name} is not an audio file (or its format is not supported)")
    return unreadable(name, container)


def _head(path_or_handle, size: int = 1 << 12) -> bytes:
    if isinstance(path_or_handle, str):
        with open(path_or_handle, "rb") as f:
            return f.read(size)
    return path_or_handle.getbuffer()[:size].tobytes()


def _audio_stream(container, name: str):
    """The first audio stream, its header checked and its codec known to this build."""
    if not container.streams.audio:
        raise NotAudio(f"{name} has no audio in it")
    stream = container.streams.audio[0]
    context = stream.codec_context
    if context is None or not getattr(context, "codec", None):
        if "mp4" in container.format.name and not len(stream.index_entries):
            # An MP4 describes its codec in the sample table; none at all means the file was cut
            # (or damaged) before it, not a codec this build lacks (that file still has its table).
            raise unreadable(name, "mp4")
        raise UnsupportedCodec(f"{name} uses a codec this build of FFmpeg cannot decode")
    check_header(name, context.sample_rate or 0, context.channels or 0)
    return stream


def _open(source: Any):
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        if not os.path.exists(path):
            raise FileNotFoundError(f"no such audio file: {path!r}")
        if os.path.isdir(path):
            raise AudioError(f"{path!r} is a folder, not an audio file")
        return path
    if isinstance(source, (bytes, bytearray)):
        return io.BytesIO(bytes(source))
    if hasattr(source, "read"):
        return io.BytesIO(source.read())
    raise AudioError(
        f"cannot read audio from a {type(source).__name__}: "
        "give a path, bytes, a file object or (array, sample_rate)"
    )


class _Partial(Exception):
    """A decoder failed partway: how much it decoded, and how long the header said it was."""

    def __init__(self, decoded: float, expected: float | None):
        super().__init__(decoded, expected)
        self.decoded, self.expected = decoded, expected


def decode_file(source: Any, sample_rate: int, name: str) -> tuple[np.ndarray, int]:
    import soundfile as sf

    handle = _open(source)
    if _size(handle) == 0:
        raise EmptyAudio(f"{name} is an empty file")
    damage = None
    try:
        sound = sf.SoundFile(handle)
    except Exception:  # libsndfile cannot read this container: FFmpeg (PyAV) is asked next
        sound = None
    if sound is None and (fmt := wav_format(_head(handle))) is not None:
        check_header(name, *fmt)  # a WAV libsndfile refused: name the bad value
    if sound is not None:
        check_header(name, sound.samplerate, sound.channels)
        try:
            return _decode_in_pieces(sound, sample_rate), sample_rate
        except _Partial as e:  # FFmpeg may read more of it
            damage = (e.decoded, e.expected)  # not `e`: its traceback holds this frame, a cycle
    if hasattr(handle, "seek"):
        handle.seek(0)
    try:
        return _decode_with_av(handle, sample_rate, name), sample_rate
    except ImportError:
        raise NotAudio(
            f"{name} could not be decoded by soundfile, and PyAV (pip install av) is not installed"
        ) from None
    except _Partial as e:
        most = (e.decoded, e.expected) if damage is None or e.decoded > damage[0] else damage
        raise damaged(name, *most) from None
    except Exception as e:
        if damage is not None:
            raise damaged(name, *damage) from None
        if isinstance(e, AudioError):
            raise
        raise _not_readable(name, _head(handle)) from None


def _size(handle) -> int:
    return os.path.getsize(handle) if isinstance(handle, str) else len(handle.getbuffer())


PIECE_FRAMES = 1 << 20  # about 20 s at 48 kHz: what is decoded at once


def _decode_in_pieces(sound, sample_rate: int) -> np.ndarray:
    """Decode, mix to mono and resample piece by piece, so a long file never exists whole at
    its own rate and channel count (2 hours of 48 kHz stereo would be 2.8 GB of float32)."""
    import soxr

    with sound:
        rate = sound.samplerate
        stream = soxr.ResampleStream(rate, sample_rate, 1, dtype="float32") if rate != sample_rate else None
        pieces, frames = [], 0
        # read(), not blocks(): a container whose header overstates its length (mp3's frame
        # count is an estimate) makes blocks() pad its last block with uninitialized memory;
        # read() returns only the frames that were decoded.
        try:
            while (block := sound.read(PIECE_FRAMES, dtype="float32", always_2d=True)).shape[0]:
                frames += block.shape[0]
                mono = _mono(block)
                pieces.append(stream.resample_chunk(mono) if stream else mono)
        except Exception:
            raise _Partial(frames / rate, _claimed(sound.frames, rate)) from None
        if frames == 0 and sound.format not in EXACT_LENGTH_FORMATS:  # data, but no audio in it
            raise _Partial(0.0, _claimed(sound.frames, rate))
        if stream is not None:
            pieces.append(stream.resample_chunk(np.zeros(0, np.float32), last=True))
    return np.concatenate(pieces).astype(np.float32, copy=False) if pieces else np.zeros(0, np.float32)


def _mono(block: np.ndarray) -> np.ndarray:
    """[frames, channels] -> [frames], the channels' mean: summed column by column (numpy's
    mean over a short last axis took 7.6 ms for 11 s of 44.1 kHz stereo; this, under 1 ms)."""
    mono = block[:, 0].copy()
    for channel in range(1, block.shape[1]):
        mono += block[:, channel]
    if block.shape[1] > 1:
        mono /= np.float32(block.shape[1])
    return mono


def _claimed(frames: int, rate: int) -> float | None:
    """Seconds a header claims; None when it does not say (libsndfile's largest count)."""
    return frames / rate if 0 < frames < 2**62 else None


def _decode_with_av(handle, sample_rate: int, name: str) -> np.ndarray:
    import av

    chunks = []
    with av.open(handle, metadata_errors="ignore") as container:
        stream = _audio_stream(container, name)
        known = stream.duration is not None and stream.time_base is not None
        resampler = av.AudioResampler(format="flt", layout="mono", rate=sample_rate)
        try:
            for frame in container.decode(stream):
                chunks += [out.to_ndarray().reshape(-1) for out in resampler.resample(frame)]
            chunks += [out.to_ndarray().reshape(-1) for out in resampler.resample(None)]  # flush
        except Exception:
            decoded = sum(len(c) for c in chunks) / sample_rate
            raise _Partial(decoded, float(stream.duration * stream.time_base) if known else None) from None
    if not chunks and known and stream.duration > 0:  # a header promising audio, none decoded
        raise _Partial(0.0, float(stream.duration * stream.time_base))
    return np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.float32)
