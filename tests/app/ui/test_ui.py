"""The web app's handlers, called as Gradio calls them: results, and bounds with clear messages."""

import os

import gradio as gr
import paths
import pytest

from scriba.app import ui
from scriba.app.ui import uploads
from scriba.app.ui.text import language_line, seconds_of
from scriba.transcription.writers import FORMATS

JFK = paths.JFK


seconds = seconds_of


def test_clock_and_paragraphs():
    from scriba.transcription.results import Segment

    assert [ui.clock(t) for t in (0, 8.26, 75.04, 3599.96, 3725.5)] == [
        "0:00.0",
        "0:08.3",
        "1:15.0",
        "1:00:00.0",
        "1:02:05.5",
    ]
    segs = [
        Segment(0, 2, " One.", [], 0, 0),
        Segment(2.5, 4, " Two.", [], 0, 0),
        Segment(7, 9, " Three.", [], 0, 0),
    ]
    assert ui.paragraphs(segs) == "One. Two.\n\nThree."
    # Without pauses, a long paragraph ends at the first sentence end past 600 characters.
    talk = [
        Segment(i, i + 1, f" Part {i} of a talk that runs on{'.' if i % 3 == 2 else ','}", [], 0, 0)
        for i in range(60)
    ]
    text = ui.paragraphs(talk)
    blocks = text.split("\n\n")
    assert len(blocks) > 2 and " ".join(blocks) == " ".join(s.text.strip() for s in talk)
    assert all(b.endswith(".") and 600 <= len(b) < 700 for b in blocks[:-1])


def test_transcription_gives_language_text_rows_and_subtitles():
    detected, text, rows, files, words, speakers, _ = ui.run_transcription(
        JFK, "", "auto", "transcribe", True
    )
    files, words = files["value"], words["value"]
    assert detected == "English (English-only model)" and "fellow americans" in text.lower()
    assert rows and all(0 <= seconds(start) < seconds(end) <= 11.1 for start, end, _, _, _ in rows)
    assert {language for _, _, _, language, _ in rows} == {"en"}  # each segment's language, shown
    assert {who for _, _, who, _, _ in rows} == {""} and not speakers["visible"]  # none unless asked
    assert sorted(os.path.basename(f) for f in files) == sorted(f"jfk.{fmt}" for fmt in FORMATS)
    assert open(files[1]).read().startswith("1\n00:00:00,000 --> ")
    assert open(files[0]).read().split() == text.split()  # TXT: one line per segment
    assert words == []  # no word timestamps unless asked


def test_the_transcript_grows_as_windows_finish(tmp_path):
    """The page's handler yields the text and rows so far as segments arrive (windows of
    different lengths finish at different steps), then the whole result with its files."""
    import numpy as np
    import soundfile as sf

    from scriba.media.load import load_audio

    jfk = load_audio(JFK)
    path = tmp_path / "talk.wav"
    # Pauses of 3 s end windows, so no window holds jfk twice: repeated text fails the
    # compression-ratio guard and falls back to sampling, whose draw would decide the result.
    gap = np.zeros(3 * 16000, dtype=np.float32)
    sf.write(path, np.concatenate([jfk, gap, jfk[: 5 * 16000], gap, jfk]), 16000)
    shown = list(ui.transcribe_tab.stream_transcription(str(path), "", "auto", "transcribe", True))
    *partial, (_, text, rows, files, *_) = shown
    assert partial and all(p[3] == gr.update() for p in partial)  # files only at the end
    lengths = [len(p[2]) for p in partial]
    assert lengths == sorted(lengths) and lengths[0] < len(rows) == lengths[-1]
    assert partial[-1][2] == rows and text.lower().count("your country") == 4
    assert files["visible"] and len(files["value"]) == len(FORMATS)


def test_word_timestamps_fill_the_word_view():
    _, _, _, _, words, _, _ = ui.run_transcription(JFK, "", "auto", "transcribe", True, "float32", True)
    assert words["visible"]
    words = words["value"]
    assert [w[3] for w in words[:5]] == ["And", "so", "my", "fellow", "Americans"]
    assert all(0 <= seconds(start) <= seconds(end) <= 11.1 and 0 < p <= 1 for start, end, _, _, p in words)
    assert [seconds(w[0]) for w in words] == sorted(seconds(w[0]) for w in words)


def test_int8_precision_transcribes_the_same_words():
    _, text, rows, *_ = ui.run_transcription(JFK, "", "auto", "transcribe", True, "int8")
    assert "ask not what your country can do for you" in text.lower().replace(",", "").replace(".", "")
    assert rows and all(0 <= seconds(start) < seconds(end) <= 11.1 for start, end, *_ in rows)


def test_audio_inputs_are_bounded(tmp_path, monkeypatch):
    with pytest.raises(gr.Error, match="Upload or record some audio first"):
        ui.run_transcription(None, "", "auto", "transcribe", True)
    fake = tmp_path / "song.mp3"
    fake.write_text("not audio")
    with pytest.raises(gr.Error, match=r"song.mp3 is not an audio file"):
        ui.run_transcription(str(fake), "", "auto", "transcribe", True)
    with pytest.raises(gr.Error, match="could not find model"):
        ui.run_transcription(JFK, str(tmp_path / "no-model"), "auto", "transcribe", True)


def test_uploads_are_checked_from_their_header_as_they_arrive(tmp_path, monkeypatch, caplog):
    """Empty, not audio, too long: one line naming the file; the length is read without
    decoding the file (decoding it would fail this test)."""
    empty, notes = tmp_path / "empty.wav", tmp_path / "notes.wav"
    empty.write_bytes(b"")
    notes.write_text("meeting notes")
    assert uploads.audio_problem(str(empty)) == "empty.wav is an empty file."
    assert uploads.audio_problem(str(notes)).startswith("notes.wav is not an audio file")
    assert uploads.audio_problem(JFK) is None
    monkeypatch.setattr(uploads, "MAX_AUDIO_SECONDS", 10)
    monkeypatch.setattr("scriba.app.ui.transcribe_tab.load_audio", lambda *a: pytest.fail("decoded"))
    assert uploads.audio_problem(JFK) == "jfk.flac is 11 seconds long; this app takes up to 10 seconds."
    with pytest.raises(gr.Error, match="jfk.flac is 11 seconds long"):
        ui.run_transcription(JFK, "", "auto", "transcribe", True)
    with caplog.at_level("INFO", logger="scriba.ui"):
        value, notice = uploads.check_upload(str(empty))
    assert value is None and notice == "⚠️ empty.wav is an empty file."
    assert [r.getMessage() for r in caplog.records] == ["refused upload: empty.wav is an empty file."]
    assert not any(r.exc_info for r in caplog.records)


def test_the_language_line_says_detected_only_when_detected():
    assert language_line("de", 0.973, True) == "detected: German (0.97)"
    assert language_line("en", None, False) == "English (English-only model)"
    assert language_line("fr", None, True) == "French (as chosen)"


def test_summary_inputs_are_bounded(tiny_bart, tmp_path, monkeypatch):
    model = tiny_bart[0]
    with pytest.raises(gr.Error, match="Paste or upload some text first"):
        ui.run_summary("   ", None, model, 0, 0)
    with pytest.raises(gr.Error, match="minimum length is more than the maximum"):
        ui.run_summary("Some text.", None, model, 10, 20)
    monkeypatch.setattr(uploads, "MAX_TEXT_CHARS", 50)
    with pytest.raises(gr.Error, match="The text has 60 characters; this app takes up to 50"):
        ui.run_summary("x" * 60, None, model, 0, 0)
    with pytest.raises(gr.Error, match="could not find model .*no such folder"):
        ui.run_summary("Some text.", None, str(tmp_path / "missing"), 0, 0)
    upload = tmp_path / "article.txt"
    upload.write_text("The cat sat on the mat. It was happy.")
    assert ui.run_summary("", str(upload), model, 12, 0) == ui.run_summary(
        upload.read_text(), None, model, 12, 0
    )


def test_transcript_summary_has_sections_and_goes_into_the_json(tiny_bart, tmp_path):
    import json

    from scriba.app.ui.summarize_tab import run_transcript_summary

    with pytest.raises(gr.Error, match="Transcribe something first"):
        run_transcript_summary(None, tiny_bart[0])
    segments = [{"start": i * 5.0, "end": i * 5.0 + 4, "text": f" Part {i} of the talk."} for i in range(30)]
    files = [tmp_path / "talk.txt", tmp_path / "talk.json"]
    files[0].write_text("text")
    files[1].write_text(json.dumps({"text": "...", "segments": segments}))
    summary, rows, downloads = run_transcript_summary([str(f) for f in files], tiny_bart[0])
    assert summary.strip() and len(rows["value"]) > 1 and rows["value"][0][:1] == ["00:00:00"]
    assert (
        downloads[0] == str(files[0]) and downloads[1].endswith("talk.json") and downloads[1] != str(files[1])
    )
    with open(downloads[1]) as f:
        written = json.load(f)
    assert written["segments"] == segments and written["summary"]["summary"] == summary
    assert [
        [s["time_range"][:8], s["time_range"][9:], s["summary"]] for s in written["summary"]["sections"]
    ] == (rows["value"])


def test_scratch_folders_are_deleted_after_an_hour(monkeypatch):
    import time as clock

    first = uploads.scratch_folder("scriba-test-")
    assert os.path.isdir(first)
    later = clock.time() + uploads.KEEP_SECONDS + 1
    monkeypatch.setattr(uploads.time, "time", lambda: later)
    second = uploads.scratch_folder("scriba-test-")
    assert not os.path.exists(first) and os.path.isdir(second)


def test_the_advanced_options_reach_the_transcription():
    """The Advanced options panel's values (advanced.NAMES' order) as TranscribeOptions: the page
    shows what scriba.transcribe() gives with them; an empty text field is the default."""
    import scriba
    from scriba.app.ui.advanced import NAMES, advanced_options

    values = [""] * 4 + ["-1", 1, 1, 224, 1.0, 1.0, 0, 1.0, 1.0, False, True, True, "auto"] + [0, 0, 0, False]
    defaults = dict(zip(NAMES, values))
    assert advanced_options(list(defaults.values()))["suppress_tokens"] == (-1,)
    chosen = {**defaults, "prefix": "And so, my dear", "hotwords": "country, ask", "clip_timestamps": "0,9"}
    chosen["suppress_tokens"], chosen["no_repeat_ngram_size"] = "-1, 1499", 3
    _, text, rows, *_ = ui.run_transcription(
        JFK, "", "auto", "transcribe", True, "int8", advanced=list(chosen.values())
    )
    options = advanced_options(list(chosen.values()))
    assert options["suppress_tokens"] == (-1, 1499) and options["vad_filter"] is None
    expected = scriba.transcribe(JFK, **options)
    assert text == expected.text and text.startswith("And so, my dear") and "country" not in text
    with pytest.raises(ValueError, match="Suppressed tokens must be comma-separated"):
        advanced_options(list({**defaults, "suppress_tokens": "x"}.values()))


def _texts(paths) -> dict[str, str]:
    """The downloads that are text (all but the .docx), by suffix."""
    texts = [f for f in paths if not f.endswith(".docx")]
    return {os.path.splitext(f)[1]: open(f, encoding="utf-8").read() for f in texts}


def test_the_subtitle_downloads_cut_their_lines_as_asked():
    """The Advanced options' subtitle lines reach the SRT and VTT downloads as the writers cut
    them (the subtitles' own tests hold them to openai-whisper's); the other files stay whole."""
    import scriba
    from scriba.app.ui.advanced import NAMES
    from scriba.transcription.subtitles import SubtitleOptions
    from scriba.transcription.writers import format_transcript

    values = [""] * 4 + ["-1", 1, 1, 224, 1.0, 1.0, 0, 1.0, 1.0, False, True, True, "auto", 24, 2, 0, True]
    assert len(values) == len(NAMES)
    *_, files, _, _, _ = ui.run_transcription(JFK, "", "auto", "transcribe", True, "int8", advanced=values)
    written = _texts(files["value"])
    words = scriba.transcribe(JFK, word_timestamps=True)
    lines = SubtitleOptions(max_line_width=24, max_line_count=2, highlight_words=True)
    assert written[".srt"] == format_transcript(words, "srt", lines) and "<u>" in written[".srt"]
    assert written[".vtt"] == format_transcript(words, "vtt", lines)
    assert written[".txt"] == format_transcript(words, "txt") and set(written) >= {".tsv", ".lrc", ".json"}


def test_speakers_label_the_transcript_and_are_renamed_on_the_page_and_in_the_downloads(tmp_path):
    import json

    import soundfile as sf
    from speakers import conversation

    wave, reference = conversation()
    path = tmp_path / "talk.wav"
    sf.write(path, wave, 16000)
    _, text, rows, files, _, speakers, kept = ui.run_transcription(
        str(path), "", "auto", "transcribe", True, "int8", False, True, 0
    )
    turns = text.split("\n\n")
    assert turns[0].startswith("[SPEAKER_00]: The") and turns[1].startswith("[SPEAKER_01]: ")
    assert len(turns) >= 5 and all(t.startswith(("[SPEAKER_00]: ", "[SPEAKER_01]: ")) for t in turns)
    assert {row[2] for row in rows} == {"SPEAKER_00", "SPEAKER_01"}
    assert speakers["visible"]
    assert [r[:2] for r in speakers["value"]] == [["SPEAKER_00"] * 2, ["SPEAKER_01"] * 2]
    table = [["SPEAKER_00", "Linda", "0:15.0"], ["SPEAKER_01", "", "0:12.0"]]  # empty: the label stays
    text, rows, files = ui.transcribe_tab.rename_speakers(kept, table)
    assert text.startswith("[Linda]: The") and "[SPEAKER_01]: " in text and "SPEAKER_00" not in text
    assert {row[2] for row in rows} == {"Linda", "SPEAKER_01"}
    written = _texts(files["value"])
    assert written[".txt"].startswith("[Linda]: The") and "[Linda]: " in written[".srt"]
    assert [s["name"] for s in json.loads(written[".json"])["speakers"]] == ["Linda", "SPEAKER_01"]
    assert kept[0].speakers[0].name == "SPEAKER_00"  # the kept result is unchanged: renames start from it
    with pytest.raises(gr.Error, match="Transcribe something with speakers first"):
        ui.transcribe_tab.rename_speakers(None, table)



def test_remembered_voices_name_the_speakers_of_the_next_recording(tmp_path, monkeypatch):
    import soundfile as sf
    from speakers import conversation

    monkeypatch.setenv("SCRIBA_DATA", str(tmp_path / "data"))
    wave, reference = conversation()
    path = tmp_path / "talk.wav"
    sf.write(path, wave, 16000)
    run = lambda: ui.run_transcription(str(path), "", "auto", "transcribe", True, "int8", False, True, 0)  # noqa: E731
    *_, kept = run()
    with pytest.raises(gr.Error, match="Type a speaker's name in the table first"):
        ui.transcribe_tab.remember_voices(kept, [["SPEAKER_00", "", "0"], ["SPEAKER_01", "SPEAKER_01", "0"]])
    table = [["SPEAKER_00", "Linda", "0:15"], ["SPEAKER_01", "", "0:12"]]
    said = ui.transcribe_tab.remember_voices(kept, table)
    assert said.startswith("Kept the voices of Linda (")
    _, text, rows, _, _, speakers, _ = run()
    assert text.startswith("[Linda]: The") and "[SPEAKER_00]: " in text
    assert [r[0] for r in speakers["value"]] == ["Linda", "SPEAKER_00"]
