"""What `scriba batch` runs on Ray Data: a pool of actors, one engine each, that read a batch
of files and transcribe them together. (Reading in a stage of its own cost more than it saved:
Ray started a worker process per read task, ~8 s of a 2-core machine before the first row; the
actor reads in the thread of one call while its other call keeps the engine busy.)

Rows cross Ray as {"path", "row"} with the row as a JSON string: transcripts differ in shape
(words or not, an error or not), and JSON keeps Arrow from having to unify their schemas.
"""

from __future__ import annotations

import json

import numpy as np


def read_files(paths: list[str]) -> tuple[list[bytes | None], list[str | None]]:
    """Each file's bytes, or None and why it could not be read."""
    datas, errors = [], []
    for path in paths:
        try:
            datas.append(_read(path))
            errors.append(None)
        except OSError as e:
            datas.append(None)
            errors.append(f"cannot read {path}: {e.strerror or e}")
    return datas, errors


def _read(path: str) -> bytes:
    if "://" in path:  # s3://, gs://, ...: opened by pyarrow's filesystems, as Ray's readers do
        import pyarrow.fs

        fs, inner = pyarrow.fs.FileSystem.from_uri(path)
        with fs.open_input_stream(inner) as f:
            return f.readall()
    with open(path, "rb") as f:
        return f.read()


class Transcriber:
    """One engine per actor (a GPU, or some CPU threads); each call transcribes a batch of files
    together, so their windows share engine steps. Calls may overlap (the actor's threads share
    one engine loop), which keeps the batch full while one call finishes its last windows."""

    def __init__(self, options):
        from scriba.runtime.loops import get_loop

        self.options = options  # TranscribeOptions
        get_loop(options.model, **options.engine)  # load now: the first batch should not wait

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, list]:
        """{"path": [n]} -> {"path": [n], "row": [n] JSON rows}, in the same order."""
        paths = [str(p) for p in batch["path"]]
        datas, errors = read_files(paths)
        rows = [error_row(p, e) if e else None for p, e in zip(paths, errors)]
        readable = [i for i, row in enumerate(rows) if row is None]
        for i, result in zip(readable, self._transcribe([datas[i] for i in readable])):
            rows[i] = {**error_row(paths[i], None), **result}
        return {"path": paths, "row": [json.dumps(row, ensure_ascii=False) for row in rows]}

    def _transcribe(self, audios: list[bytes]) -> list[dict]:
        """Transcripts as dicts; a file that cannot be read or decoded gets its error, and a
        batch that fails as a whole is tried file by file, so one bad file fails alone."""
        from scriba.transcription.transcribe import transcribe

        if not audios:
            return []
        try:
            return [r.to_dict() for r in transcribe(audios, self.options)]
        except Exception as e:  # recorded in its row; the job goes on
            if len(audios) == 1:
                return [{"error": f"{type(e).__name__}: {e}".splitlines()[0]}]
        return [self._transcribe([audio])[0] for audio in audios]


def error_row(path: str, error: str | None) -> dict:
    return {"path": path, "text": None, "language": None, "duration": None, "segments": [], "error": error}
