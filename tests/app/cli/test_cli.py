"""The `scriba` console script, run as a user runs it."""

import json
import shutil
import subprocess
import sys

import paths
import soundfile as sf
from speakers import REFERENCES, clip, conversation

from scriba import Engine, SamplingParams


def scriba(*args, stdin=None):
    exe = shutil.which("scriba") or None
    args = [str(a) for a in args]
    cmd = [exe, *args] if exe else [sys.executable, "-m", "scriba.app.cli.main", *args]
    return subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=300)


def test_generate_prints_what_the_engine_gives(tiny_bart):
    path = tiny_bart[0]
    expected = Engine(path, num_kv_blocks=64).generate(
        ["hello there", "second input"], SamplingParams(max_tokens=12)
    )
    result = scriba("generate", path, "hello there", "second input", "--max-tokens", "12", "--json")
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["token_ids"] for r in records] == [o.outputs[0].token_ids for o in expected]
    assert [r["input"] for r in records] == ["hello there", "second input"]
    piped = scriba("generate", path, "--max-tokens", "12", stdin="hello there\n")
    assert piped.returncode == 0 and piped.stdout == expected[0].outputs[0].text + "\n"


def test_unknown_model_is_one_line_error(tmp_path):
    result = scriba("generate", str(tmp_path / "nowhere"), "text")
    assert result.returncode == 1
    assert (
        result.stderr.startswith("scriba: error: could not find model") and "Traceback" not in result.stderr
    )
    assert len(result.stderr.strip().splitlines()) == 1


def test_bad_option_value(tiny_bart):
    result = scriba("generate", tiny_bart[0], "text", "--max-tokens", "0")
    assert result.returncode == 1 and "max_tokens must be a positive integer" in result.stderr


JFK = paths.JFK


def test_transcribe_formats_to_stdout_and_output_dir(tmp_path):
    import re

    srt = scriba("transcribe", JFK, "--format", "srt")
    assert srt.returncode == 0, srt.stderr
    assert re.match(r"1\n00:00:00,000 --> 00:00:\d\d,\d\d\d\n.*fellow Americans", srt.stdout)
    out = tmp_path / "subs"
    result = scriba("transcribe", JFK, "--output-dir", str(out), "--format", "vtt")
    assert result.returncode == 0, result.stderr
    vtt = (out / "jfk.vtt").read_text()
    assert vtt.startswith("WEBVTT\n\n") and re.search(
        r"\d\d:\d\d\.\d\d\d --> \d\d:\d\d\.\d\d\d\n", vtt
    )
    for fmt in ("txt", "json"):
        assert (
            scriba(
                "transcribe", JFK, "--output-dir", str(out), "--format", fmt, "--mode", "sequential"
            ).returncode
            == 0
        )
    assert "your country" in (out / "jfk.txt").read_text().lower()
    assert json.loads((out / "jfk.json").read_text())["language"] == "en"


def test_transcribe_bad_files_and_model(tmp_path):
    missing = scriba("transcribe", str(tmp_path / "gone.wav"))
    assert (
        missing.returncode == 1
        and missing.stderr == f"scriba: error: no such audio file or folder: {tmp_path / 'gone.wav'}\n"
    )
    bad = tmp_path / "notes.wav"
    bad.write_text("not audio\n")
    mixed = scriba("transcribe", str(bad), JFK)  # the good file is still transcribed
    assert mixed.returncode == 1 and "is not an audio file" in mixed.stderr and "notes.wav" in mixed.stderr
    assert "fellow Americans" in mixed.stdout and "Traceback" not in mixed.stderr
    unknown = scriba("transcribe", JFK, "--model", str(tmp_path / "no-model"))
    assert unknown.returncode == 1 and unknown.stderr.startswith("scriba: error: could not find model")
    usage = scriba("transcribe", JFK, "--format", "doc")
    assert usage.returncode == 2 and "invalid choice: 'doc'" in usage.stderr


def test_summarize_file_and_stdin(tiny_bart, tmp_path):
    path = tiny_bart[0]
    doc = tmp_path / "article.txt"
    doc.write_text("The cat sat on the mat. It was happy.")
    from_file = scriba("summarize", str(doc), "--model", path, "--max-length", "12")
    from_stdin = scriba(
        "summarize", "-", "--model", path, "--max-length", "12", stdin="The cat sat on the mat. It was happy."
    )
    assert from_file.returncode == 0 and from_stdin.returncode == 0, from_file.stderr
    assert from_file.stdout == from_stdin.stdout and from_file.stdout.strip()
    missing = scriba("summarize", str(tmp_path / "none.txt"), "--model", path)
    assert missing.returncode == 1 and "No such file" in missing.stderr


def test_summarize_a_transcript_json_with_sections(tiny_bart, tmp_path):
    import json
    import re

    segments = [
        {"start": i * 5.0, "end": i * 5.0 + 4, "text": f" Part {i} tells of item {i % 5}."} for i in range(40)
    ]
    path = tmp_path / "talk.json"
    path.write_text(json.dumps({"text": "", "language": "en", "segments": segments}))
    plain = scriba("summarize", str(path), "--model", tiny_bart[0], "--max-length", "20")
    assert plain.returncode == 0, plain.stderr
    # The summary, a blank line, then a line per section (the random model's text may hold newlines)
    rows = [line for line in plain.stdout.split("\n") if re.match(r"\d\d:\d\d:\d\d–\d\d:\d\d:\d\d  ", line)]
    assert len(rows) > 3 and rows[0].startswith("00:00:00–") and plain.stdout.endswith(rows[-1] + "\n")
    assert rows[-1].startswith(f"{rows[-2][9:17]}–00:03:19  ")  # in order, without gaps, to the end
    assert "scriba: summarized in" in plain.stderr and "pieces" in plain.stderr
    as_json = scriba(
        "summarize", str(path), "--model", tiny_bart[0], "--max-length", "20", "--format", "json"
    )
    data = json.loads(as_json.stdout)
    assert plain.stdout.startswith(data["summary"] + "\n\n")
    assert [s["time_range"] for s in data["sections"]] == [r[:17] for r in rows]
    assert data["pieces"][0] == len(rows) and data["levels"] == len(data["pieces"])


def test_transcribe_in_the_cpu_modes():
    """Every CPU mode's options reach the engine (parsed here; what each mode does is tested
    in-process: test_quantize, test_kv8_cache, test_decoder_step), two runs of them combined give
    jfk's words as a user runs them, and a KV cache dtype or a decoder runtime that does not fit
    is one line."""
    from oracle import JFK_WORDS, words

    from scriba.app.cli.engine_options import engine_options
    from scriba.app.cli.main import build_parser

    modes = {
        ("--quantization", "int8", "--threads", "1"): dict(quantization="int8", num_threads=1),
        ("--dtype", "bfloat16"): dict(dtype="bfloat16"),
        ("--kv-cache-dtype", "bfloat16"): dict(kv_cache_dtype="bfloat16"),
        ("--kv-cache-dtype", "fp8"): dict(kv_cache_dtype="fp8"),
        ("--kv-cache-dtype", "int8"): dict(kv_cache_dtype="int8"),
        ("--decoder-runtime", "torch"): dict(decoder_runtime="torch"),
    }
    parser = build_parser()
    for options, expected in modes.items():
        asked = engine_options(parser.parse_args(["transcribe", JFK, *options]))
        assert {k: asked.get(k) for k in expected} == expected, options
    runs = (
        ["--quantization", "int8", "--threads", "1", "--kv-cache-dtype", "fp8"],
        [
            "--dtype",
            "bfloat16",
            "--kv-cache-dtype",
            "bfloat16",
            "--decoder-runtime",
            "torch",
        ],
    )
    for options in runs:
        result = scriba("transcribe", JFK, "--device", "cpu", *options)
        assert result.returncode == 0, result.stderr
        assert words(result.stdout) == JFK_WORDS
    bad = scriba("transcribe", JFK, "--threads", "0")
    assert bad.returncode == 1 and "num_threads must be a positive integer" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1
    bad = scriba("transcribe", JFK, "--device", "cpu", "--dtype", "float16", "--kv-cache-dtype", "bfloat16")
    assert bad.returncode == 1 and "the cache is in the compute dtype" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1
    bad = scriba("transcribe", JFK, "--device", "cpu", "--dtype", "float32", "--decoder-runtime", "numba")
    assert bad.returncode == 1 and "decoder_runtime='numba' cannot run this model" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1


def test_transcribe_word_timestamps_to_json_and_word_cues():
    import re

    result = scriba("transcribe", JFK, "--word-timestamps", "--format", "json", "--vad", "on")
    assert result.returncode == 0, result.stderr
    record = json.loads(result.stdout)
    words = [w for s in record["segments"] for w in s["words"]]
    assert [w["word"].strip() for w in words][:4] == ["And", "so", "my", "fellow"]
    assert record["speech_duration"] > 8 and record["coverage"] > 0.9  # VAD was on
    cues = scriba("transcribe", JFK, "--word-cues", "--format", "srt", "--vad", "on")  # words turned on
    assert cues.returncode == 0, cues.stderr
    assert re.match(r"1\n00:00:00,\d\d\d --> 00:00:00,\d\d\d\nAnd\n\n2\n", cues.stdout)
    assert cues.stdout.count(" --> ") == len(words)


def test_subtitle_lines_tsv_and_lrc():
    lines = scriba("transcribe", JFK, "--format", "vtt", "--max-line-width", "24", "--max-line-count", "2")
    assert lines.returncode == 0, lines.stderr
    cues = lines.stdout.split("\n\n")[1:-1]
    assert len(cues) == 3 and all(len(c.splitlines()[1:]) == 2 for c in cues[:2])
    assert all(len(line) <= 24 for c in cues for line in c.splitlines()[1:])
    tsv = scriba("transcribe", JFK, "--format", "tsv")
    assert tsv.stdout.startswith("start\tend\ttext\n0\t") and "fellow Americans" in tsv.stdout
    lrc = scriba("transcribe", JFK, "--format", "lrc")
    assert lrc.stdout.startswith("[by:scriba]\n[00:00.00]And so")
    bad = scriba("transcribe", JFK, "--format", "srt", "--max-line-width", "0")
    assert bad.returncode == 1
    assert bad.stderr == "scriba: error: max_line_width must be a whole number >= 1, got 0\n"


def test_a_reader_that_stops_early_is_no_error():
    exe = shutil.which("scriba") or f"{sys.executable} -m scriba.app.cli.main"
    piped = subprocess.run(f"{exe} transcribe {JFK} --format srt | true; echo $" + "{PIPESTATUS[0]}",
                           shell=True, executable="/bin/bash", capture_output=True, text=True, timeout=300)
    assert piped.stderr == "" and piped.stdout == "141\n"  # as cat does: SIGPIPE's status, no message


def test_language_and_download_errors_are_one_line():
    unknown = scriba("transcribe", JFK, "--language", "xx")
    assert unknown.returncode == 1 and unknown.stderr.startswith("scriba: error: unknown language 'xx'")
    german = scriba("transcribe", JFK, "--language", "de")
    assert german.stderr == "scriba: error: this model is English-only: it cannot transcribe German ('de')\n"
    # Offline the hub cannot be reached; online it has no such repo: one line either way.
    download = scriba("download", "scriba-tests/no-such-model-9f3b")
    assert download.returncode == 1 and len(download.stderr.splitlines()) == 1
    assert download.stderr.startswith("scriba: error: could not download 'scriba-tests/no-such-model-9f3b': ")


def test_one_file_printed_as_decoded_equals_the_file_written_whole(tmp_path):
    """On stdout a file's segments print as their windows finish; joined, they are the very
    transcript --output-dir writes (three JFKs: several windows, several segments)."""
    import numpy as np
    import soundfile as sf

    from scriba.media.load import load_audio

    path = tmp_path / "three.wav"
    sf.write(path, np.concatenate([load_audio(JFK)] * 3), 16000)
    printed = scriba("transcribe", str(path), "--format", "srt")  # (the formats: test_writers.py)
    written = scriba("transcribe", str(path), "--format", "srt", "--output-dir", str(tmp_path))
    assert printed.returncode == written.returncode == 0, printed.stderr + written.stderr
    assert printed.stdout == (tmp_path / "three.srt").read_text()
    assert printed.stdout.count(" --> ") >= 3


def test_serve_without_the_server_extra_says_how_to_get_it():
    """A plain install (no `server` extra): `scriba serve` is one line naming the extra."""
    code = (
        "import sys; sys.modules['prometheus_client'] = None\n"  # as if not installed
        "from scriba.app.cli.main import main\n"
        "sys.exit(main(['serve', '--port', '1']))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.strip() == (
        "scriba: error: scriba serve needs the server extra (prometheus_client is missing): "
        "pip install 'scriba[server]'"
    )


def test_transcribe_with_speakers(tmp_path):
    """--diarize labels each line (WhisperX's `[SPEAKER_00]: `), JSON lists the speakers,
    --known-speaker names them; impossible counts and a bad pair are one-line errors."""
    wave, reference = conversation()
    talk = tmp_path / "talk.wav"
    sf.write(talk, wave, 16000)
    text = scriba("transcribe", talk, "--diarize")
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert lines[0].startswith("[SPEAKER_00]: The")
    assert any(line.startswith("[SPEAKER_01]: ") for line in lines)
    named = scriba("transcribe", talk, "--diarize", "--format", "json", "--num-speakers", "2",
                   "--known-speaker", f"Linda={clip(REFERENCES['ljspeech'])}")
    data = json.loads(named.stdout)
    assert [s["name"] for s in data["speakers"]] == ["Linda", "SPEAKER_00"]
    assert data["segments"][0]["speaker"] == "Linda"
    for args, message in [
        (["--diarize", "--num-speakers", "0"],
         "scriba: error: num_speakers must be a whole number of at least 1, got 0"),
        (["--diarize", "--min-speakers", "3", "--max-speakers", "2"],
         "scriba: error: min_speakers (3) is more than max_speakers (2)"),
        (["--diarize", "--known-speaker", "Linda"],
         "scriba: error: --known-speaker takes NAME=CLIP, got 'Linda'"),
        (["--max-speakers", "2"], "scriba: error: max_speakers needs diarize=True"),
    ]:
        bad = scriba("transcribe", talk, *args)
        assert bad.returncode != 0 and bad.stderr.strip() == message, bad.stderr


def test_voices_kept_name_the_speakers_of_the_next_transcription(tmp_path):
    """`scriba voices add/list/rename/remove`; `transcribe --diarize` names a kept voice, and with
    --no-voices does not; bad clips, names taken and a missing library are one-line errors."""
    import os

    env = {**os.environ, "SCRIBA_DATA": str(tmp_path / "data")}
    run = lambda *args: subprocess.run(  # noqa: E731
        [sys.executable, "-m", "scriba.app.cli.main", *map(str, args)], capture_output=True, text=True,
        timeout=300, env=env,
    )
    bad = run("voices", "remove", "Linda")
    assert bad.returncode != 0 and bad.stderr.startswith("scriba: error: no voice library at "), bad.stderr
    added = run("voices", "add", "Lin", clip(REFERENCES["ljspeech"]))
    assert added.returncode == 0 and added.stdout.startswith("kept 'Lin': "), added.stderr
    assert run("voices", "rename", "Lin", "Linda").returncode == 0
    assert run("voices", "list").stdout.split("\t")[0] == "Linda"
    wave, _ = conversation()
    talk = tmp_path / "talk.wav"
    sf.write(talk, wave, 16000)
    silence = tmp_path / "silence.wav"
    sf.write(silence, wave[:0].tolist() + [0.0] * 32000, 16000)
    named = json.loads(run("transcribe", talk, "--diarize", "--format", "json").stdout)
    assert [s["name"] for s in named["speakers"]] == ["Linda", "SPEAKER_00"]
    plain = json.loads(run("transcribe", talk, "--diarize", "--no-voices", "--format", "json").stdout)
    assert [s["name"] for s in plain["speakers"]] == ["SPEAKER_00", "SPEAKER_01"]
    for args, message in [
        (["add", "Linda", clip(REFERENCES["librispeech_61"])], "scriba: error: a voice named 'Linda' is"),
        (["add", "Sam", silence], f"scriba: error: {silence}: not usable as a voice clip: it holds 0.0 s of"),
        (["remove", "Sam"], "scriba: error: no voice named 'Sam' is kept (kept: Linda)"),
    ]:
        bad = run("voices", *args)
        assert bad.returncode != 0 and bad.stderr.strip().startswith(message), bad.stderr
        assert len(bad.stderr.strip().splitlines()) == 1
    assert run("voices", "remove", "Linda").returncode == 0
    assert run("voices", "list").stdout.startswith("no voices kept")
