"""What `scriba batch` transcribes: files, folders, globs and manifests expanded to paths."""

from __future__ import annotations

import glob
import os

AUDIO_SUFFIXES = (
    ".wav", ".flac", ".mp3", ".ogg", ".oga", ".opus", ".m4a", ".mp4", ".aac", ".webm",
    ".wma", ".mkv", ".mov", ".aif", ".aiff", ".amr", ".3gp",
)  # fmt: skip
MANIFEST_SUFFIXES = (".txt", ".lst", ".list", ".manifest")


def is_remote(path: str) -> bool:
    """A URI Ray's readers open themselves (s3://, gs://, ...): taken as given."""
    return "://" in path


def expand_inputs(inputs: list[str]) -> list[str]:
    """Every input as audio paths, in order, each once: a folder gives its audio files (all
    depths, sorted), a glob its matches, a manifest (.txt/.lst/.list/.manifest) one path per
    line (blank lines and # comments skipped; relative paths from the manifest's folder).
    Local paths come back absolute. A path that does not exist is kept: it gets an error row."""
    paths: list[str] = []
    for item in inputs:
        paths.extend(_expand(item))
    return list(dict.fromkeys(paths))


def _expand(item: str) -> list[str]:
    if is_remote(item):
        return [item] if item.lower().endswith(AUDIO_SUFFIXES) else _remote_audio_in(item)
    if os.path.isdir(item):
        return sorted(_audio_in(item))
    if item.lower().endswith(MANIFEST_SUFFIXES) and os.path.isfile(item):
        return [p for line in _manifest_lines(item) for p in _expand(line)]
    if glob.has_magic(item):
        matches = sorted(glob.glob(item, recursive=True))
        if not matches:
            raise ValueError(f"no files match {item}")
        return [os.path.abspath(m) for m in matches if os.path.isfile(m)]
    return [os.path.abspath(item)]


def _audio_in(folder: str) -> list[str]:
    found = []
    for root, _, names in os.walk(folder):
        found += [os.path.abspath(os.path.join(root, n)) for n in names if n.lower().endswith(AUDIO_SUFFIXES)]
    return found


def _remote_audio_in(uri: str) -> list[str]:
    """The audio files under a folder URI (s3://bucket/calls/, gs://..., file:///...), listed by
    pyarrow's filesystems as Ray's readers list them."""
    import pyarrow.fs

    fs, root = pyarrow.fs.FileSystem.from_uri(uri)
    scheme = uri.split("://", 1)[0]
    infos = fs.get_file_info(pyarrow.fs.FileSelector(root, recursive=True, allow_not_found=True))
    found = sorted(i.path for i in infos if i.is_file and i.path.lower().endswith(AUDIO_SUFFIXES))
    if not found:
        raise ValueError(f"no audio files under {uri}")
    return [f"{scheme}://{'/' if scheme == 'file' else ''}{path.lstrip('/')}" for path in found]


def _manifest_lines(manifest: str) -> list[str]:
    base = os.path.dirname(os.path.abspath(manifest))
    with open(manifest, encoding="utf-8") as f:
        lines = [line.strip() for line in f]
    return [
        line if is_remote(line) else os.path.join(base, os.path.expanduser(line))
        for line in lines
        if line and not line.startswith("#")
    ]
