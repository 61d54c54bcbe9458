"""TranscribeOptions: one frozen, checked object that every surface builds the same way."""

import dataclasses

import pytest

from scriba.app.cli.main import build_parser
from scriba.app.cli.transcribe_files import transcribe_options
from scriba.transcription.options import TEMPERATURES, TranscribeOptions
from scriba.transcription.vad import VadOptions


def test_given_forms_become_checked_ones_and_stay_frozen():
    o = TranscribeOptions(temperature=0, vad_parameters={"threshold": 0.4}, engine={"num_threads": 1})
    assert o.temperature == (0.0,) and TranscribeOptions().temperature == TEMPERATURES
    assert o.vad_parameters == VadOptions(threshold=0.4)
    with pytest.raises(dataclasses.FrozenInstanceError):
        o.language = "de"


def test_build_sorts_engine_settings_from_options_and_keeps_the_base():
    base = TranscribeOptions(model="base", language="de")
    o = TranscribeOptions.build(base, beam_size=2, num_threads=1, dtype="float32")
    assert (o.model, o.language, o.beam_size) == ("base", "de", 2)
    assert o.engine == {"num_threads": 1, "dtype": "float32"}
    assert base.beam_size == 1 and base.engine == {}  # the base is untouched


@pytest.mark.parametrize(
    "given, message",
    [
        ({"beam_sise": 2}, "unknown option 'beam_sise' (did you mean 'beam_size'?)"),
        ({"num_kv_blokcs": 9}, "unknown option 'num_kv_blokcs' (did you mean 'num_kv_blocks'?)"),
    ],
)
def test_a_misspelled_name_is_one_line_naming_the_nearest(given, message):
    with pytest.raises(TypeError) as e:
        TranscribeOptions.build(**given)
    assert str(e.value) == message


@pytest.mark.parametrize(
    "given, words",
    [
        ({"mode": "fast"}, "mode must be one of"),
        ({"task": "summarize"}, "task must be 'transcribe' or 'translate'"),
        ({"beam_size": 0}, "beam_size must be a positive integer"),
        ({"temperature": -0.5}, "temperature must be a non-negative number"),
        ({"temperature": []}, "temperature must be a non-negative number"),
        ({"on_error": "ignore"}, "on_error must be 'report' or 'raise'"),
        ({"language": "Klingon"}, "unknown language 'Klingon'"),
        ({"vad_parameters": {"treshold": 0.5}}, "unknown vad_parameters ['treshold']"),
        ({"language_detection_threshold": 2.0}, "language_detection_threshold must be in [0, 1]"),
        ({"word_timestamps": True, "beam_size": 2}, "word_timestamps and hallucination_silence_threshold"),
    ],
)
def test_bad_values_fail_when_built_before_any_work(given, words):
    with pytest.raises(ValueError) as e:
        TranscribeOptions(**given)
    assert words in str(e.value) and "\n" not in str(e.value)


def test_the_cli_converts_its_flags_once_into_the_same_object():
    args = build_parser().parse_args(
        ["transcribe", "a.wav", "--language", "German", "--vad", "off", "--beam-size", "2"]
        + ["--no-timestamps", "--threads", "1", "--model", "base"]
    )
    assert transcribe_options(args) == TranscribeOptions(
        model="base",
        language="German",
        beam_size=2,
        timestamps=False,
        vad_filter=False,
        engine={"num_threads": 1},  # only what was given: the profile decides the rest
    )


@pytest.mark.parametrize("command", ["transcribe", "batch"])
def test_faster_whispers_options_as_flags(command):
    """`scriba transcribe` and `scriba batch` take the same transcription flags."""
    from scriba.app.cli.transcribe_flags import transcribe_options as flags_to_options

    flags = ["--hotwords", "Kennedy", "--prefix", "And so", "--multilingual", "--clip-timestamps", "1,2"]
    flags += ["--max-new-tokens", "9", "--suppress-tokens=-1,5", "--no-suppress-blank"]
    flags += ["--max-initial-timestamp", "0.5", "--append-punctuations", ".", "--patience", "2"]
    flags += ["--length-penalty", "0.5", "--repetition-penalty", "1.2", "--no-repeat-ngram-size", "3"]
    flags += ["--initial-prompt", "A speech.", "--model", "base"]
    extra = ["--output", "out.jsonl"] if command == "batch" else []
    args = build_parser().parse_args([command, "a.wav", *flags, *extra])
    assert flags_to_options(args, {}) == TranscribeOptions(
        model="base",
        hotwords="Kennedy",
        prefix="And so",
        multilingual=True,
        clip_timestamps="1,2",
        max_new_tokens=9,
        suppress_tokens=(-1, 5),
        suppress_blank=False,
        max_initial_timestamp=0.5,
        append_punctuations=".",
        patience=2.0,
        length_penalty=0.5,
        repetition_penalty=1.2,
        no_repeat_ngram_size=3,
        initial_prompt="A speech.",
    )
    empty = build_parser().parse_args([command, "a.wav", "--suppress-tokens", "", *extra])
    assert flags_to_options(empty, {}).suppress_tokens == ()  # faster-whisper's []: none but control tokens


def test_faster_whispers_other_names_say_scribas():
    with pytest.raises(
        TypeError, match="without_timestamps is faster-whisper's name; Scriba's: timestamps=False"
    ):
        TranscribeOptions.build(without_timestamps=True)
    with pytest.raises(TypeError, match="Scriba's: logprob_threshold"):
        TranscribeOptions.build(log_prob_threshold=-1.0)
