"""An upload to a temporary file, checked before anything is decoded: size while it streams in
(413 past the limit), empty (400), not audio (415) and length from the container's header (413),
so a 200 MB file that would decode to 18 GB never does. The file is deleted when done."""

from __future__ import annotations

import contextlib
import os
import tempfile

from fastapi import UploadFile

from scriba.app.server.errors import APIError, media_error
from scriba.media.errors import too_long
from scriba.media.load import AudioError, probe_duration

CHUNK = 1 << 20


def upload_name(upload: UploadFile) -> str:
    """The file's name as the client sent it (its last path part): what errors call it."""
    return os.path.basename(upload.filename or "audio") or "audio"


async def save_upload(upload: UploadFile, max_bytes: int, max_seconds: float) -> tuple[str, float | None]:
    """(path of a temporary copy, duration seconds or None); the caller removes it (`remove`)."""
    name = upload_name(upload)
    handle, path = tempfile.mkstemp(prefix="scriba-upload-", suffix=os.path.splitext(name)[1][:16])
    try:
        size = 0
        with os.fdopen(handle, "wb") as out:
            while chunk := await upload.read(CHUNK):
                size += len(chunk)
                if size > max_bytes:
                    raise APIError(413, f"{name} is over the upload limit of {max_bytes // 2**20} MB", "file")
                out.write(chunk)
        return path, _checked_duration(path, name, max_seconds)
    except BaseException:
        remove(path)
        raise


def remove(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):  # already gone is as good as removed
        os.unlink(path)


def _checked_duration(path: str, name: str, max_seconds: float) -> float | None:
    try:
        seconds = probe_duration(path, name)
        if seconds is not None and seconds > max_seconds:
            raise too_long(name, seconds, max_seconds)
    except AudioError as e:
        raise media_error(e) from None
    return seconds
