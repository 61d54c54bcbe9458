"""The voice library (voice_library.py) on voices given as vectors: kept, listed in order,
extended by seconds, renamed, removed, read back by a second library on the same folder; and
each operation that cannot be done a one-line VoiceLibraryError naming the problem."""

import json
import os

import numpy as np
import pytest

from scriba.speakers.voice_library import VoiceLibrary, VoiceLibraryError, data_folder


def unit(*xs):
    v = np.array(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


def test_voices_are_kept_in_order_and_read_back_from_the_folder(tmp_path):
    library = VoiceLibrary(str(tmp_path))
    assert not library.exists() and library.voices() == {}
    library.add("Ana", unit(1, 0, 0), seconds=4.0)
    library.add(" Ben ", unit(0, 1, 0), seconds=2.0, clips=2)
    again = VoiceLibrary(str(tmp_path)).voices()
    assert list(again) == ["Ana", "Ben"]
    assert (again["Ben"].seconds, again["Ben"].clips) == (2.0, 2)
    np.testing.assert_allclose(again["Ana"].voice, [1, 0, 0], atol=1e-6)
    assert json.load(open(os.path.join(tmp_path, "voices.json")))["encoder"] == "resemblyzer"
    assert [f for f in os.listdir(tmp_path) if f != "voices.json"] == []  # no temporary file left


def test_extend_weights_the_voices_by_their_speech_and_replace_starts_again(tmp_path):
    library = VoiceLibrary(str(tmp_path))
    library.add("Ana", unit(1, 0), seconds=3.0)
    kept = library.add("Ana", unit(0, 1), seconds=1.0, extend=True)
    np.testing.assert_allclose(kept.voice, unit(3, 1), atol=1e-6)
    assert (kept.seconds, kept.clips) == (4.0, 2)
    kept = library.add("Ana", unit(0, 1), seconds=1.0, replace=True)
    np.testing.assert_allclose(kept.voice, [0, 1], atol=1e-6)
    assert (kept.seconds, kept.clips) == (1.0, 1)


def test_rename_and_remove(tmp_path):
    library = VoiceLibrary(str(tmp_path))
    library.add("Ana", unit(1, 0), seconds=3.0)
    library.add("Ben", unit(0, 1), seconds=3.0)
    library.rename("Ana", "Ana Lima")
    assert list(library.voices()) == ["Ana Lima", "Ben"] and library.voices()["Ana Lima"].name == "Ana Lima"
    library.remove("Ben")
    assert list(library.known()) == ["Ana Lima"]


@pytest.mark.parametrize("act, message", [
    (lambda lib: lib.add("Ana", unit(1, 0), 2.0), "a voice named 'Ana' is already kept: replace it"),
    (lambda lib: lib.add("SPEAKER_00", unit(1, 0), 2.0), "'SPEAKER_00' is the label of an unnamed voice"),
    (lambda lib: lib.add("  ", unit(1, 0), 2.0), "a voice needs a name, got '  '"),
    (lambda lib: lib.remove("Zoe"), "no voice named 'Zoe' is kept (kept: Ana)"),
    (lambda lib: lib.rename("Zoe", "Zia"), "no voice named 'Zoe' is kept (kept: Ana)"),
])
def test_what_cannot_be_done_is_a_one_line_error(tmp_path, act, message):
    library = VoiceLibrary(str(tmp_path))
    library.add("Ana", unit(1, 0), seconds=2.0)
    with pytest.raises(VoiceLibraryError) as caught:
        act(library)
    assert str(caught.value).startswith(message) and "\n" not in str(caught.value)


def test_a_missing_unreadable_or_unwritable_library_is_a_one_line_error(tmp_path):
    missing = VoiceLibrary(str(tmp_path / "none"))
    with pytest.raises(VoiceLibraryError, match=r"^no voice library at .*: keep a voice first"):
        missing.remove("Ana")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "voices.json").write_text("{not json")
    with pytest.raises(VoiceLibraryError, match=r"^the voice library .*voices.json cannot be read"):
        VoiceLibrary(str(tmp_path / "bad")).voices()
    (tmp_path / "file").write_text("a file where the folder should be")
    with pytest.raises(VoiceLibraryError, match=r"^the voice library .* cannot be written"):
        VoiceLibrary(str(tmp_path / "file")).add("Ana", unit(1, 0), 2.0)


def test_the_data_folder_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("SCRIBA_DATA", str(tmp_path / "mine"))
    assert data_folder() == str(tmp_path / "mine")
    monkeypatch.delenv("SCRIBA_DATA")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert data_folder() == str(tmp_path / "xdg" / "scriba")
    monkeypatch.delenv("XDG_DATA_HOME")
    assert data_folder() == os.path.join(os.path.expanduser("~"), ".local", "share", "scriba")
