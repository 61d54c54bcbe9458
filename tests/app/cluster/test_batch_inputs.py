"""What `scriba batch` is given, expanded: folders, globs, manifests, missing files."""

from __future__ import annotations

import os

import pytest

from scriba.app.cluster.inputs import expand_inputs


@pytest.fixture
def tree(tmp_path):
    for name in ["a.wav", "b.FLAC", "notes.md", "sub/c.mp3", "sub/deeper/d.ogg", "sub/e.txt"]:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x")
    return tmp_path


def test_a_folder_gives_its_audio_files_at_every_depth_sorted(tree):
    got = expand_inputs([str(tree)])
    want = ["a.wav", "b.FLAC", "sub/c.mp3", "sub/deeper/d.ogg"]
    assert got == sorted(os.path.join(tree, w) for w in want)


def test_globs_manifests_and_duplicates(tree, monkeypatch):
    manifest = tree / "sub" / "list.txt"
    manifest.write_text("# a comment\n\nc.mp3\n" + str(tree / "a.wav") + "\ns3://bucket/x.wav\nmissing.wav\n")
    monkeypatch.chdir(tree)
    got = expand_inputs(["*.wav", str(manifest), "a.wav", "sub/**/*.ogg"])
    assert got == [
        str(tree / "a.wav"),  # once, though three inputs name it
        str(tree / "sub" / "c.mp3"),  # relative to the manifest's folder
        "s3://bucket/x.wav",  # a URI is Ray's to open
        str(tree / "sub" / "missing.wav"),  # kept: it gets an error row
        str(tree / "sub" / "deeper" / "d.ogg"),
    ]


def test_a_glob_that_matches_nothing_is_an_error(tree):
    with pytest.raises(ValueError, match="no files match .*nothing"):
        expand_inputs([str(tree / "nothing*.wav")])
