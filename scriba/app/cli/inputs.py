"""What `scriba transcribe` is given: files, and folders walked for the audio and video in them;
where each one's transcripts go under --output-dir (the input tree mirrored), and which are
done already. Nothing here imports more than the standard library, so a bad path is said at once.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import PurePosixPath

from scriba.media.headers import container_of

# Read by their names where their first bytes do not say (container_of knows the common ones)
MEDIA_SUFFIXES = frozenset(
    ".wav .flac .ogg .oga .opus .spx .mp3 .m4a .m4b .aac .ac3 .amr .wma .aiff .aif .caf .mp4 .m4v "
    ".mov .mkv .webm .avi .wmv .3gp .mpg .mpeg .ts .mts .m2ts .flv".split()
)
HEAD_BYTES = 16


@dataclass(frozen=True)
class Input:
    """A file to transcribe; `stem`: its transcripts' path under the output folder, no suffix."""

    path: str
    stem: str


def is_media(path: str) -> bool:
    """Audio or video by its first bytes, or else by its suffix."""
    try:
        with open(path, "rb") as f:
            head = f.read(HEAD_BYTES)
    except OSError:
        return False
    return container_of(head) is not None or os.path.splitext(path)[1].lower() in MEDIA_SUFFIXES


def media_in(folder: str, pattern: str | None = None) -> list[Input]:
    """The audio and video files under `folder` (hidden ones skipped), in name order, each
    with its path relative to the folder as its stem; `pattern` (a glob such as "*.wav" or
    "2024/*") keeps those whose relative path matches it from the right."""
    found = []
    for root, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(n for n in names if not n.startswith(".")):
            path = os.path.join(root, name)
            relative = PurePosixPath(os.path.relpath(path, folder).replace(os.sep, "/"))
            if (pattern is None or relative.match(pattern)) and is_media(path):
                found.append(Input(path, str(relative.with_suffix(""))))
    return found


def inputs_of(paths: list[str], pattern: str | None = None) -> list[Input]:
    """Files as given (whatever they hold: one that is not audio is said when it is read) and
    the media of folders; a path given twice counts once. Raises FileNotFoundError for a path
    that does not exist, ValueError for a folder with no audio or video in it."""
    missing = [p for p in paths if not os.path.exists(p)]
    if missing:
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        raise FileNotFoundError(f"no such audio file or folder: {missing[0]}{more}")
    found, seen = [], set()
    for path in paths:
        if os.path.isdir(path):
            inside = media_in(path, pattern)
            if not inside:
                what = f" matching {pattern!r}" if pattern else ""
                raise ValueError(f"no audio or video files{what} in {path}")
        else:
            inside = [Input(path, os.path.splitext(os.path.basename(path))[0])]
        for one in inside:
            if os.path.realpath(one.path) not in seen:
                seen.add(os.path.realpath(one.path))
                found.append(one)
    return found


def refuse_collisions(inputs: list[Input], formats: list[str], output_dir: str) -> None:
    """Two inputs never write one file: raises ValueError naming both, before any work."""
    owner: dict[str, str] = {}
    for one in inputs:
        target = os.path.join(output_dir, f"{one.stem}.{formats[0]}")
        if target in owner:
            raise ValueError(
                f"{owner[target]} and {one.path} would both write {target}: "
                "give them apart (another --output-dir, or rename one)"
            )
        owner[target] = one.path


def outputs_of(one: Input, formats: list[str], output_dir: str) -> list[str]:
    return [os.path.join(output_dir, f"{one.stem}.{fmt}") for fmt in formats]


def done_already(one: Input, formats: list[str], output_dir: str) -> bool:
    """Every output of `one` is there and newer than the input (--skip-existing)."""
    since = os.path.getmtime(one.path)
    outputs = outputs_of(one, formats, output_dir)
    return all(os.path.isfile(p) and os.path.getmtime(p) >= since for p in outputs)
