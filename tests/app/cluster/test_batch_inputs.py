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


def test_workers_read_local_paths_and_uris_and_name_what_they_cannot_read(tmp_path):
    from scriba.app.cluster.transcriber import read_files

    (tmp_path / "a.wav").write_bytes(b"RIFF")
    paths = [str(tmp_path / "a.wav"), (tmp_path / "a.wav").as_uri(), str(tmp_path / "gone.wav")]
    datas, errors = read_files(paths)
    assert datas[:2] == [b"RIFF", b"RIFF"] and datas[2] is None
    assert errors[:2] == [None, None] and errors[2].startswith(f"cannot read {paths[2]}: ")


def test_a_folder_uri_is_listed_by_pyarrows_filesystems(tree):
    got = expand_inputs([tree.as_uri() + "/sub"])  # as s3://bucket/folder would be
    assert got == [(tree / "sub" / "c.mp3").as_uri(), (tree / "sub" / "deeper" / "d.ogg").as_uri()]
    with pytest.raises(ValueError, match="no audio files under"):
        expand_inputs([(tree / "nothing").as_uri()])
