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

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from scriba.app.engines import check_options, get_loop, speech_config
from scriba.app.language_vote import MAX_WINDOWS, THRESHOLD, LanguageVote
from scriba.app.longform import (
    Guards,
    SpeechMap,
    coverage,
    drop_hallucinations,
    is_silent,
    pack_windows,
    quiet_cut_windows,
    sequential_window,
    split_segments,
    tail_window,
)
from scriba.app.progress import Progress, Reporter, reporter
from scriba.app.segments import Segment, Transcription, WindowResult
from scriba.app.vad import VadOptions, speech_chunks
from scriba.app.window_decoder import Window, WindowDecoder
from scriba.engine.audio import (
    SAMPLE_RATE,
    WINDOW_SAMPLES,
    AudioError,
    AudioInput,
    is_audio_pair,
    load_audio,
)
from scriba.engine.whisper_decoding import language_code

MODES = ("batched", "sequential")


def transcribe(
    audio: AudioInput | Sequence[AudioInput],
    model: str | None = None,
    language: str | None = None,
    task: str = "transcribe",
    timestamps: bool = True,
    mode: str = "batched",
    beam_size: int = 1,
    temperature: float | Sequence[float] = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0),
    compression_ratio_threshold: float | None = 2.4,
    logprob_threshold: float | None = -1.0,
    no_speech_threshold: float | None = 0.6,
    condition_on_previous_text: bool = True,
    initial_prompt: str | None = None,
    vad_filter: bool | None = None,
    vad_parameters: VadOptions | dict | None = None,
    word_timestamps: bool = False,
    hallucination_silence_threshold: float | None = None,
    language_detection_threshold: float = THRESHOLD,
    language_detection_segments: int = MAX_WINDOWS,
    progress: bool | Reporter = False,
    on_segments=None,
    cancel=None,
    on_error: str = "report",
    **engine_config,
) -> Transcription | list[Transcription]:
    """Transcribe (or translate to English) audio of any length; a list returns a list.

    `audio`: a path, bytes, a file object, `(float array, sample_rate)` or a 16 kHz array.
    `model`: a Whisper checkpoint (Hugging Face id or folder, or a CTranslate2 folder);
    None is the bundled tiny.en. `word_timestamps`: each segment gets `words` (Word(start, end,
    word, probability)) and starts at its first word. `hallucination_silence_threshold`
    (seconds; word alignment runs for it): an improbable segment alone in that much silence is
    dropped and the audio after it decoded again (openai-whisper's rule). `vad_filter`: decode
    only the speech Silero VAD finds (None: for audio longer than one 30 s window);
    `vad_parameters`: VadOptions or a dict of them. Without `language`, a multilingual model
    detects it from the file's first speech window; when that window's probability is not above
    `language_detection_threshold`, up to `language_detection_segments` speech windows vote
    (language_vote.py). In a list, an input that cannot be read
    gives a Transcription with `error` set and the others are transcribed (`on_error="raise"`:
    raise instead). `progress`: True for a bar on stderr, or a callable given each
    `Progress(stage, done, total)` (progress.py). `on_segments(file_index, segments)` hears each
    window's new segments as it finishes (in order per file with mode="sequential"). `cancel`: a
    threading.Event; once set, the windows in flight are aborted and `Cancelled` is raised.
    Extra keyword arguments configure the shared engine.
    """
    options = {k: v for k, v in locals().items() if k not in ("audio", "engine_config")}
    single = not isinstance(audio, (list, tuple)) or is_audio_pair(audio)
    run = begin([audio] if single else list(audio), single or on_error == "raise", options, engine_config)
    for _ in run.rounds:  # decode to the end
        pass
    run.say(Progress("done", run.decoder.finished, run.decoder.finished))
    results = [run.errors.get(i) or f.finish(word_timestamps) for i, f in enumerate(run.files)]
    return results[0] if single else results


@dataclass
class Run:
    """A transcription under way: its files, the unreadable inputs' error entries, and `rounds`,
    the generator that decodes (each step of it, a round of finished windows)."""

    decoder: WindowDecoder
    files: list[_File]
    errors: dict[int, Transcription]
    rounds: Iterator[None]
    say: Callable


def begin(sources: list, raise_errors: bool, o: dict, engine_config: dict) -> Run:
    """Checks transcribe()'s options `o`, loads the model and the audio, finds the speech, and
    returns the run, ready to decode."""
    check_options(engine_config, transcribe)
    temperatures = _check_options(o["mode"], o["beam_size"], o["temperature"], o["on_error"])
    align = _needs_alignment(o["word_timestamps"], o["hallucination_silence_threshold"], o["beam_size"])
    vad = VadOptions.from_user(o["vad_parameters"])
    detection = (o["language_detection_threshold"], o["language_detection_segments"])
    LanguageVote(*detection)  # checks both
    report = reporter(o["progress"])
    say = report or (lambda p: None)
    say(Progress("loading model"))
    loop = get_loop(o["model"], **speech_config(engine_config))
    language = _check_request_options(loop.engine, o["language"], o["task"])
    guards = Guards(
        o["compression_ratio_threshold"],
        o["logprob_threshold"],
        o["no_speech_threshold"],
        o["hallucination_silence_threshold"],
    )
    decoder = WindowDecoder(
        loop, o["task"], o["timestamps"], temperatures, guards, o["beam_size"], report, align, o["cancel"]
    )
    plan = (o["vad_filter"], vad, language, decoder.text_ids(o["initial_prompt"]), detection)
    files, errors = _prepare(sources, raise_errors, plan, o["on_segments"], say)
    say(Progress("transcribing"))
    drive = _batched if o["mode"] == "batched" else _sequential
    return Run(decoder, files, errors, drive(decoder, files, o["condition_on_previous_text"]), say)


def _needs_alignment(word_timestamps: bool, hallucination_silence_threshold, beam_size: int) -> bool:
    """Whether windows need their cross-attention alignment (greedy decoding only)."""
    align = word_timestamps or hallucination_silence_threshold is not None
    if align and beam_size > 1:
        raise ValueError("word_timestamps and hallucination_silence_threshold need beam_size=1")
    return align


def _prepare(sources: list, raise_errors: bool, plan: tuple, on_segments, say):
    """The files to decode (read, their speech found) and the error entries of unreadable ones.
    `plan`: (vad_filter, vad options, language, prompt ids, (detection threshold, windows))."""
    say(Progress("reading audio"))
    waves, errors = _load_all(sources, raise_errors)
    say(Progress("finding speech"))
    files = [_File(w, *plan) for w in waves]
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


def _check_options(mode, beam_size, temperature, on_error) -> list[float]:
    if on_error not in ("report", "raise"):
        raise ValueError(f"on_error must be 'report' or 'raise', got {on_error!r}")
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    if not isinstance(beam_size, int) or beam_size < 1:
        raise ValueError(f"beam_size must be a positive integer, got {beam_size!r}")
    many = not isinstance(temperature, (int, float))
    temperatures = [float(t) for t in temperature] if many else [float(temperature)]
    if not temperatures or any(t < 0 for t in temperatures):
        raise ValueError(
            f"temperature must be a non-negative number or a non-empty sequence of them, got {temperature!r}"
        )
    return temperatures


def _check_request_options(engine, language, task) -> str | None:
    """The request options, checked once up front by the engine's own validation; returns the
    language as its code ('German' -> 'de'), as results report it."""
    if not getattr(engine.model, "encodes_audio", False):
        raise ValueError(f"model {engine.config.model!r} is not a speech model (Whisper)")
    silence = np.zeros((engine.model.num_mel_bins, engine.model.num_frames))
    engine.process({"input_features": silence, "language": language, "task": task})
    return None if language is None else language_code(language, engine.model.tokens)


class _File:
    """One file being transcribed: its decoded stream (speech only, with VAD), segments so far
    in the file's timeline, language (and its vote while it is being detected), and the
    sequential driver's seek and context."""

    def __init__(self, wave: np.ndarray, vad_filter, vad: VadOptions, language, prompt_ids, detection):
        self.wave, self.language, self.language_probability = wave, language, None
        self.vote = LanguageVote(*detection)
        use_vad = len(wave) > WINDOW_SAMPLES if vad_filter is None else bool(vad_filter)
        self.vad = use_vad
        self.map = SpeechMap(speech_chunks(wave, vad)) if use_vad else SpeechMap.whole(len(wave))
        self.stream = self.map.stream(wave)
        self.segments: list[Segment] = []
        self.seek, self.context = 0, list(prompt_ids)
        self.announce = None  # transcribe's on_segments for this file
        # Segments are announced in order: those of a window wait while an earlier window of the
        # file (or its tail) is still out. `pending`: stream spans not settled yet.
        self.pending: list[tuple[int, int]] = []
        self.fresh: list[Segment] = []

    def detecting(self, decoder: WindowDecoder) -> bool:
        """The language is still to be found (a multilingual model, none given or decided)."""
        return self.language is None and decoder.tokens.is_multilingual

    def decide_language(self) -> None:
        self.language, self.language_probability = self.vote.outcome()

    def window(self, f: int, start: int, end: int, prev_ids: list[int]) -> Window:
        return Window(f, start, end, self.stream[start:end], self.language, list(prev_ids))

    def add(
        self, window: Window, result: WindowResult, decoder: WindowDecoder
    ) -> tuple[list[Segment], float]:
        """The window's complete segments, in the file's timeline; returns them (stream times
        stay in their tokens) and how far they reach (seconds)."""
        self.language = self.language or result.language  # an English-only model's "en"
        ts, words_of = decoder.tokens.timestamp_begin, decoder.words_of(result, self.language)
        new, advance = split_segments(result, window.offset, window.seconds, ts, decoder.decode, words_of)
        threshold = decoder.guards.hallucination_silence
        if threshold is not None and words_of is not None:
            span = (window.offset, window.offset + window.seconds)
            new, resume = drop_hallucinations(new, span, threshold)
            advance = advance if resume is None else min(advance, resume)
        for s in new:
            s.start, s.end = self.map.span_to_original(s.start, s.end)
            if s.words:  # the segment runs from its first word to its last
                for w in s.words:
                    w.start, w.end = self.map.to_original(w.start), self.map.to_original(w.end, is_end=True)
                    w.end = max(w.end, w.start)
                s.start, s.end = s.words[0].start, s.words[-1].end
        self.segments += new
        self.fresh += new
        return new, advance

    def settled(self, window: Window, tail: tuple[int, int] | None = None) -> None:
        """`window` is done (its unfinished `tail` still to come): announce the segments that
        no earlier window can precede any more."""
        if (window.start, window.end) in self.pending:
            self.pending.remove((window.start, window.end))
        if tail is not None:
            self.pending.append(tail)
        frontier = min((a for a, _ in self.pending), default=None)
        cut = None if frontier is None else self.map.to_original(frontier / SAMPLE_RATE)
        ready, self.fresh = _split(self.fresh, lambda s: cut is None or s.start < cut)
        if self.announce is not None and ready:
            self.announce(sorted(ready, key=lambda s: s.start))

    def flush(self) -> None:
        """The decoding is over: announce whatever is held."""
        self.pending = []
        if self.fresh and self.announce is not None:
            self.announce(sorted(self.fresh, key=lambda s: s.start))
        self.fresh = []

    def finish(self, keep_words: bool) -> Transcription:
        self.flush()
        segments = sorted(self.segments, key=lambda s: s.start)
        for s in segments if not keep_words else []:
            s.words = None
        result = Transcription(
            "".join(s.text for s in segments).strip(),
            self.language,
            self.language_probability,
            len(self.wave) / SAMPLE_RATE,
            segments,
        )
        if self.vad:
            chunks = [(s / SAMPLE_RATE, e / SAMPLE_RATE) for s, e in self.map.chunks]
            result.speech_duration, result.coverage, result.warnings = coverage(chunks, segments)
        return result


def _split(items: list, test) -> tuple[list, list]:
    """(the items that pass `test`, the others), each in order."""
    passed = [test(x) for x in items]
    return [x for x, p in zip(items, passed) if p], [x for x, p in zip(items, passed) if not p]


def _batched(decoder: WindowDecoder, files: list[_File], condition: bool) -> Iterator[None]:
    """Every window at once, except in a file whose language is to be detected: its first
    speech windows go first, one at a time until the vote is decided, and the rest follow
    with the language found."""
    held: dict[int, list[Window]] = {}
    first: list[Window] = []
    for f, file in enumerate(files):
        if file.vad:
            plan = pack_windows(file.map.bounds(), breaks=set(file.map.region_ends()))
        else:
            plan = quiet_cut_windows(file.stream)
        windows = [file.window(f, s, e, file.context) for s, e in plan]
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


def _sequential(decoder: WindowDecoder, files: list[_File], condition: bool) -> Iterator[None]:
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
