"""`scriba transcribe FOLDER`: the audio and video in it found by their content, the tree mirrored
under --output-dir in several formats, collisions refused before any work, files done already
skipped, a bad file said in one line while the others are done, the exit status counting it."""

import json
import os
import shutil
import subprocess
import sys
import time

import docx
import paths
import pytest

from scriba.app.cli.inputs import Input, done_already, inputs_of, refuse_collisions


def scriba(*args):
    exe = shutil.which("scriba")
    cmd = [exe] if exe else [sys.executable, "-m", "scriba.app.cli.main"]
    return subprocess.run([*cmd, *map(str, args)], capture_output=True, text=True, timeout=300)


@pytest.fixture
def interviews(tmp_path):
    """interviews/{jfk.flac, 2024/jfk (no suffix), 2024/notes.txt, 2024/broken.mp3, .hidden.flac}"""
    folder = tmp_path / "interviews"
    (folder / "2024").mkdir(parents=True)
    shutil.copy(paths.JFK, folder / "jfk.flac")
    shutil.copy(paths.JFK, folder / "2024" / "jfk")
    shutil.copy(paths.JFK, folder / ".hidden.flac")
    (folder / "2024" / "notes.txt").write_text("not audio\n")
    (folder / "2024" / "broken.mp3").write_bytes(b"ID3" + bytes(200))
    return folder


def test_a_folder_is_its_media_by_content(interviews):
    found = inputs_of([str(interviews)])
    assert [one.stem for one in found] == ["jfk", "2024/broken", "2024/jfk"]  # a folder before its folders
    assert [one.stem for one in inputs_of([str(interviews)], "*.flac")] == ["jfk"]
    with pytest.raises(ValueError, match=r"no audio or video files matching '\*.ogg' in"):
        inputs_of([str(interviews)], "*.ogg")
    with pytest.raises(FileNotFoundError, match="no such audio file or folder: .*gone"):
        inputs_of([str(interviews / "gone")])
    twice = inputs_of([str(interviews / "jfk.flac"), str(interviews / "2024" / ".." / "jfk.flac")])
    assert len(twice) == 1


def test_collisions_are_refused_and_done_files_known(tmp_path):
    a, b = Input("x/jfk.flac", "jfk"), Input("y/jfk.mp4", "jfk")
    with pytest.raises(ValueError, match="x/jfk.flac and y/jfk.mp4 would both write .*jfk.srt"):
        refuse_collisions([a, b], ["srt", "txt"], str(tmp_path))
    source = tmp_path / "a.wav"
    source.write_bytes(b"RIFF")
    one = Input(str(source), "a")
    assert not done_already(one, ["srt", "txt"], str(tmp_path / "out"))
    (tmp_path / "out").mkdir()
    for fmt in ("srt", "txt"):
        (tmp_path / "out" / f"a.{fmt}").write_text("x")
    assert done_already(one, ["srt", "txt"], str(tmp_path / "out"))
    later = time.time() + 10
    os.utime(source, (later, later))  # the recording changed since
    assert not done_already(one, ["srt", "txt"], str(tmp_path / "out"))


def test_transcribe_a_folder_into_documents(interviews, tmp_path):
    out = tmp_path / "out"
    run = scriba("transcribe", interviews, "--output-dir", out, "--format", "srt,docx", "--format", "json")
    assert run.returncode == 1, run.stderr  # one file failed: broken.mp3
    errors = [line for line in run.stderr.splitlines() if line.startswith("scriba: error:")]
    assert len(errors) == 1 and "broken.mp3" in errors[0]
    written = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert written == [f"{stem}.{fmt}" for stem in ("2024/jfk", "jfk") for fmt in ("docx", "json", "srt")]
    text = " ".join(p.text for p in docx.Document(out / "jfk.docx").paragraphs)
    assert "fellow Americans" in text and json.loads((out / "2024" / "jfk.json").read_text())["segments"]
    again = scriba("transcribe", interviews, "--output-dir", out, "--format=srt,docx,json", "--skip-existing")
    assert "2 of 3 files done already, skipped" in again.stderr and again.returncode == 1
    clash = tmp_path / "clash"
    clash.mkdir()
    shutil.copy(paths.JFK, clash / "jfk.wav")
    refused = scriba("transcribe", interviews / "jfk.flac", clash / "jfk.wav", "--output-dir", out)
    assert refused.returncode == 1 and "would both write" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1 and not (out / "jfk.txt").exists()
