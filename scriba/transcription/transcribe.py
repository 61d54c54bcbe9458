"""transcribe(): audio of any length to text, through the shared engine.

Long audio first goes through voice activity detection (vad.py): only its speech is decoded,
laid end to end, and times are mapped back to the file. The long-form loop is driver.py's;
here the request is checked, the model and the audio loaded, and the run's events gathered.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from scriba.media.load import AudioError, AudioInput, is_audio_pair, load_audio
from scriba.runtime.loops import acquire_loop, release_loop
from scriba.transcription.driver import Event, SegmentsReady, run
from scriba.transcription.file import FileTranscription
from scriba.transcription.kept_voices import speaker_voices
from scriba.transcription.options import TranscribeOptions
from scriba.transcription.progress import Progress, Reporter, reporter
from scriba.transcription.results import Transcription
from scriba.speakers.encoders import speaker_encoder
from scriba.transcription.speaker_labels import (
    changes_inside,
    find_speakers,
    label_speakers,
    token_splitter,
)
from scriba.transcription.window_decoder import WindowDecoder
from scriba.whisper.languages import language_code


def transcribe(
    audio: AudioInput | Sequence[AudioInput],
    options: TranscribeOptions | None = None,
    *,
    progress: bool | Reporter = False,
    on_segments=None,
    cancel=None,
    priority: int = 0,
    **given,
) -> Transcription | list[Transcription]:
    """Transcribe (or translate to English) audio of any length; a list returns a list.

    `audio`: a path, bytes, a file object, `(float array, sample_rate)` or a 16 kHz array.
    `options`: a TranscribeOptions, and/or its fields and EngineConfig settings as keyword
    arguments (`transcribe(path, model="base", language="de", word_timestamps=True)`).
    `progress`: True for a bar on stderr, or a callable given each `Progress(stage, done,
    total)` (progress.py). `on_segments(file_index, segments)` hears each file's segments in
    order, as soon as no earlier window of the file is still decoding. `cancel`: a
    threading.Event; once set, the windows in flight are aborted and `Cancelled` is raised.
    `priority`: its windows' place in the engine's queue (SamplingParams.priority: lower first).
    """
    o = TranscribeOptions.build(options, **given)
    single = not isinstance(audio, (list, tuple)) or is_audio_pair(audio)
    sources = [audio] if single else list(audio)
    streaming = on_segments is not None
    job = begin(sources, single or o.on_error == "raise", o, progress, cancel, streaming, priority)
    for event in job.events:
        if on_segments is not None and isinstance(event, SegmentsReady):
            on_segments(event.file, event.segments)
    job.say(Progress("done", job.decoder.finished, job.decoder.finished))
    results = [job.errors.get(i) or job.finish(f) for i, f in enumerate(job.files)]
    return results[0] if single else results


@dataclass
class Job:
    """A transcription under way: its files, the unreadable inputs' error entries, and
    `events`, the long-form loop (driver.run): read to the end, it has decoded every file."""

    decoder: WindowDecoder
    files: list[FileTranscription]
    errors: dict[int, Transcription]
    events: Iterator[Event]
    say: Callable
    options: TranscribeOptions
    speakers: list | None = None  # each file's Diarization (diarize=True)

    def finish(self, file: FileTranscription) -> Transcription:
        """The file's transcription, once its windows are decoded: with its speakers when asked."""
        o = self.options
        result = file.finish(o.word_timestamps or o.diarize)
        if self.speakers is not None:
            split = token_splitter(self.decoder.decode, self.decoder.tokens.timestamp_begin)
            label_speakers(result, self.speakers[self.files.index(file)], split)
            for s in result.segments if not o.word_timestamps else []:
                s.words = None
        return result


def begin(
    sources: list,
    raise_errors: bool,
    o: TranscribeOptions,
    progress=False,
    cancel=None,
    streaming=False,
    priority: int = 0,
) -> Job:
    """Loads the model and the audio, finds the speech, and returns the job, ready to decode
    (`streaming`: its segments are read as they come; driver.run)."""
    report = reporter(progress)
    say = report or (lambda p: None)
    say(Progress("loading model"))
    loop = acquire_loop(o.model, **o.engine)  # not unloaded before the job's events end
    try:
        decoder = WindowDecoder(loop, o, report, cancel, priority)
        return _begun(decoder, sources, raise_errors, report, streaming)
    except BaseException:
        release_loop(loop)
        raise


def _begun(decoder: WindowDecoder, sources: list, raise_errors: bool, report, streaming) -> Job:
    say, o, loop = report or (lambda p: None), decoder.options, decoder.loop
    language = _check_request_options(loop.engine, o.language, o.task)
    encoder = speaker_encoder(o.speaker_model) if o.diarize else None
    voices = speaker_voices(o, encoder) if o.diarize else None
    say(Progress("reading audio"))
    waves, errors = _load_all(sources, raise_errors)
    say(Progress("finding speech"))
    prompt_ids = decoder.text_ids(o.initial_prompt)
    multilingual = decoder.tokens.is_multilingual
    files = [FileTranscription(w, o, language, prompt_ids, multilingual) for w in waves]
    speakers = None
    if o.diarize:
        say(Progress("finding speakers"))
        speakers = [find_speakers(f.wave, o, f.speech_probs, voices, encoder) for f in files]
        decoder.aligned = lambda w, start, end: _speaker_changes(files[w.file], speakers[w.file], start, end)
    say(Progress("transcribing"))
    events = _released(run(decoder, files, o.mode, o.condition_on_previous_text, streaming), loop)
    return Job(decoder, files, errors, events, say, o, speakers)


def _released(events: Iterator[Event], loop) -> Iterator[Event]:
    """The events; the loop's lease ends with them (read to the end, closed, or dropped)."""
    try:
        yield from events
    finally:
        release_loop(loop)


# A turn overlapping a segment's timestamps by this little is their slack, not a change inside it.
TIMESTAMP_SLACK = 0.3


def _speaker_changes(file: FileTranscription, found, start: float, end: float) -> bool:
    """Whether the speaker changes between `start` and `end` (seconds of the file's decoded
    stream): the words there then need times."""
    start, end = file.map.span_to_original(start, end, margin=0.0)
    return changes_inside(found, start, end, TIMESTAMP_SLACK)


def _load_all(sources: list, raise_errors: bool) -> tuple[list[np.ndarray], dict[int, Transcription]]:
    """16 kHz waves of the inputs; an unreadable one is an empty wave and an error entry."""
    waves, errors = [], {}
    for i, source in enumerate(sources):
        try:
            waves.append(load_audio(source))
        except (AudioError, FileNotFoundError, ValueError) as e:
            if raise_errors:
                raise
            waves.append(np.zeros(0, np.float32))
            errors[i] = Transcription("", None, None, 0.0, error=str(e))
    return waves, errors


def _check_request_options(engine, language, task) -> str | None:
    """The request options, checked once up front by the engine's own validation; returns the
    language as its code ('German' -> 'de'), as results report it."""
    if not getattr(engine.model, "encodes_audio", False):
        raise ValueError(f"model {engine.config.model_config.model!r} is not a speech model (Whisper)")
    silence = np.zeros((engine.model.num_mel_bins, engine.model.num_frames))
    engine.prepare({"input_features": silence, "language": language, "task": task})
    return None if language is None else language_code(language, engine.model.tokens)
