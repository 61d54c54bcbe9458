"""Long-form transcription: audio of any length, as 30 s windows through the engine.

Long audio first goes through voice activity detection (vad.py): only its speech is decoded,
laid end to end, and times are mapped back to the file. The policy (windows, segments, retries,
skips) is longform.py's; the two drivers here apply it:
- "batched" (the default): every window of every file is queued at once, packed from speech
  chunks and cut only in pauses. A window whose text runs past its last complete timestamp
  pair is not truncated: its tail is queued as a new window from that timestamp, conditioned
  on the text before it, into the same running batch.
- "sequential": openai-whisper's algorithm: each window starts where the last complete segment
  ended and is conditioned on the text so far; several files advance together.
Both retry a window at higher temperatures when its output looks wrong (compression ratio >
2.4 or average log-prob < -1), skip windows that hold no speech, and detect the language once
per file, from its first speech window.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from scriba.app.engines import get_loop, speech_config
from scriba.app.file_transcription import FileTranscription
from scriba.app.longform import (
    FILL_SAMPLES,
    Guards,
    is_silent,
    pack_windows,
    quiet_cut_windows,
    sequential_window,
    tail_window,
)
from scriba.app.progress import Progress, Reporter, reporter
from scriba.app.segments import Transcription, WindowResult
from scriba.app.transcribe_options import TranscribeOptions
from scriba.app.window_decoder import Window, WindowDecoder
from scriba.media.load import SAMPLE_RATE, AudioError, AudioInput, is_audio_pair, load_audio
from scriba.whisper.languages import language_code


def transcribe(
    audio: AudioInput | Sequence[AudioInput],
    options: TranscribeOptions | None = None,
    *,
    progress: bool | Reporter = False,
    on_segments=None,
    cancel=None,
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
    """
    o = TranscribeOptions.build(options, **given)
    single = not isinstance(audio, (list, tuple)) or is_audio_pair(audio)
    sources = [audio] if single else list(audio)
    run = begin(sources, single or o.on_error == "raise", o, Callbacks(progress, on_segments, cancel))
    deque(run.rounds, maxlen=0)  # decode to the end
    run.say(Progress("done", run.decoder.finished, run.decoder.finished))
    results = [run.errors.get(i) or f.finish(o.word_timestamps) for i, f in enumerate(run.files)]
    return results[0] if single else results


@dataclass
class Callbacks:
    """What one call hears and how it is stopped (transcribe()'s keyword arguments)."""

    progress: bool | Reporter = False
    on_segments: Callable | None = None
    cancel: object = None  # a threading.Event


@dataclass
class Run:
    """A transcription under way: its files, the unreadable inputs' error entries, and `rounds`,
    the generator that decodes (each step of it, a round of finished windows)."""

    decoder: WindowDecoder
    files: list[FileTranscription]
    errors: dict[int, Transcription]
    rounds: Iterator[None]
    say: Callable


def begin(sources: list, raise_errors: bool, o: TranscribeOptions, calls: Callbacks) -> Run:
    """Loads the model and the audio, finds the speech, and returns the run, ready to decode."""
    report = reporter(calls.progress)
    say = report or (lambda p: None)
    say(Progress("loading model"))
    loop = get_loop(o.model, **speech_config(o.engine))
    language = _check_request_options(loop.engine, o.language, o.task)
    guards = Guards(
        o.compression_ratio_threshold,
        o.logprob_threshold,
        o.no_speech_threshold,
        o.hallucination_silence_threshold,
    )
    decoder = WindowDecoder(
        loop, o.task, o.timestamps, list(o.temperature), guards, o.beam_size, report, o.aligns, calls.cancel
    )
    detection = (o.language_detection_threshold, o.language_detection_segments)
    per_file = (o.vad_filter, o.vad_parameters, language, decoder.text_ids(o.initial_prompt), detection)
    files, errors = _prepare(sources, raise_errors, per_file, calls.on_segments, say)
    say(Progress("transcribing"))
    drive = _batched if o.mode == "batched" else _sequential
    return Run(decoder, files, errors, drive(decoder, files, o.condition_on_previous_text), say)


def _prepare(sources: list, raise_errors: bool, per_file: tuple, on_segments, say):
    """The files to decode (read, their speech found) and the error entries of unreadable ones.
    `per_file`: (vad_filter, vad options, language, prompt ids, (detection threshold, windows))."""
    say(Progress("reading audio"))
    waves, errors = _load_all(sources, raise_errors)
    say(Progress("finding speech"))
    files = [FileTranscription(w, *per_file) for w in waves]
    for i, f in enumerate(files):  # on_segments hears which file's segments they are
        f.announce = (lambda segs, i=i: on_segments(i, segs)) if on_segments else None
    return files, errors


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
        raise ValueError(f"model {engine.config.model!r} is not a speech model (Whisper)")
    silence = np.zeros((engine.model.num_mel_bins, engine.model.num_frames))
    engine.prepare({"input_features": silence, "language": language, "task": task})
    return None if language is None else language_code(language, engine.model.tokens)


def _batched(decoder: WindowDecoder, files: list[FileTranscription], condition: bool) -> Iterator[None]:
    """Every window at once, except in a file whose language is to be detected: its first
    speech windows go first, one at a time until the vote is decided, and the rest follow
    with the language found."""
    held: dict[int, list[Window]] = {}
    first: list[Window] = []
    for f, file in enumerate(files):
        if file.vad:
            bounds = pack_windows(file.map.bounds(), breaks=set(file.map.region_ends()), fill=FILL_SAMPLES)
        else:
            bounds = quiet_cut_windows(file.stream)
        windows = [file.window(f, s, e, file.context) for s, e in bounds]
        windows = [w for w in windows if not is_silent(w.samples)]
        file.pending = [(w.start, w.end) for w in windows]
        detect = file.detecting(decoder)
        first += windows[:1] if detect else windows
        held[f] = windows[1:] if detect else []

    def settle(window: Window, result: WindowResult) -> list[Window]:
        """Add a window in the file's language; its unfinished tail, if any, is next."""
        file = files[window.file]
        new, advance = file.add(window, result, decoder)
        tail = tail_window(window.start, window.end, advance)
        file.settled(window, tail)
        if tail is None:
            return []
        prev = decoder.guards.next_context(window.prev_ids, new, result, condition)
        return [file.window(window.file, *tail, prev)]

    def on_result(window: Window, result: WindowResult) -> list[Window]:
        file, waiting = files[window.file], held[window.file]
        if decoder.guards.is_no_speech(result):
            file.settled(window)
        if not file.detecting(decoder):
            return [] if decoder.guards.is_no_speech(result) else settle(window, result)
        if not decoder.guards.is_no_speech(result):
            file.vote.add(window, result)
        if waiting and not file.vote.decided:  # the next speech window, still detecting
            return [waiting.pop(0)]
        file.decide_language()
        follow = []
        for voter, voted in file.vote.entries:
            if voted.language == file.language:
                follow += settle(voter, voted)
            else:  # decoded in another language: again, in the file's
                voter.language = file.language
                follow.append(voter)
        for w in waiting:
            w.language = file.language
        held[window.file] = []
        return follow + waiting

    return decoder.stream(first, on_result)


def _sequential(decoder: WindowDecoder, files: list[FileTranscription], condition: bool) -> Iterator[None]:
    """openai-whisper's loop, for every file at once: each file has one window in flight."""

    def next_window(f: int) -> list[Window]:
        file = files[f]
        region_ends = file.map.region_ends()
        while file.seek < len(file.stream):
            start, end = sequential_window(file.seek, region_ends)
            if not is_silent(file.stream[start:end]):
                return [file.window(f, start, end, file.context)]
            file.seek = end
        return []

    def detect(window: Window, result: WindowResult) -> list[Window]:
        """A window that voted on the language: the next one votes too, until the vote is
        decided; then decoding starts again from the first voter (kept if in the language)."""
        file = files[window.file]
        if not decoder.guards.is_no_speech(result):
            file.vote.add(window, result)
        file.seek = window.end
        more = [] if file.vote.decided else next_window(window.file)
        if more:
            return more
        file.decide_language()
        if file.language is None:  # no window held speech
            return []
        voter, voted = file.vote.entries[0]
        file.seek = voter.start
        return on_result(voter, voted) if voted.language == file.language else next_window(window.file)

    def on_result(window: Window, result: WindowResult) -> list[Window]:
        file = files[window.file]
        if file.detecting(decoder):
            return detect(window, result)
        if decoder.guards.is_no_speech(result):
            file.seek = window.end
        else:
            new, advance = file.add(window, result, decoder)
            file.settled(window)  # in order already: one window of a file at a time
            file.seek = window.start + max(1, int(round(advance * SAMPLE_RATE)))
            file.context = decoder.guards.next_context(file.context, new, result, condition)
        return next_window(window.file)

    return decoder.stream([w for f in range(len(files)) for w in next_window(f)], on_result)
