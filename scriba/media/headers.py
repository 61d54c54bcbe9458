"""What the first bytes of a file say it is: the audio containers Scriba reads, by their
signatures, and a WAV's format chunk. Used to tell a damaged audio file from one that is not
audio at all, and to name the impossible value of a header the decoders refuse."""

from __future__ import annotations

import struct

_SIGNATURES = (
    (0, b"RIFF", "wav"),
    (0, b"RF64", "wav"),
    (0, b"fLaC", "flac"),
    (0, b"OggS", "ogg"),
    (0, b"ID3", "mp3"),
    (4, b"ftyp", "mp4"),
    (0, b"\x1a\x45\xdf\xa3", "webm"),  # Matroska / WebM (EBML)
    (0, b"FORM", "aiff"),
    (0, b"caff", "caf"),
)


def container_of(head: bytes) -> str | None:
    """The container `head` (a file's first bytes) starts like, or None."""
    for offset, magic, name in _SIGNATURES:
        if head[offset : offset + len(magic)] == magic:
            return name
    if len(head) >= 2 and head[0] == 0xFF and head[1] & 0xE0 == 0xE0:  # an MPEG audio frame sync
        return "mp3"
    return None


def wav_format(head: bytes) -> tuple[int, int] | None:
    """(sample rate, channels) from a RIFF/WAVE file's format chunk, or None."""
    if head[:4] not in (b"RIFF", b"RF64") or head[8:12] != b"WAVE":
        return None
    at = 12
    while at + 8 <= len(head):
        chunk, size = head[at : at + 4], struct.unpack_from("<I", head, at + 4)[0]
        if chunk == b"fmt " and at + 16 <= len(head):
            channels, rate = struct.unpack_from("<HI", head, at + 10)
            return rate, channels
        at += 8 + size + (size & 1)
    return None
