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

from scriba.app.engines import check_options, get_loop, speech_config
from scriba.app.file_transcription import FileTranscription
from scriba.app.language_vote import MAX_WINDOWS, THRESHOLD, LanguageVote
from scriba.app.longform import (
    Guards,
    is_silent,
    pack_windows,
    quiet_cut_windows,
    sequential_window,
    tail_window,
)
from scriba.app.progress import Progress, Reporter, reporter
from scriba.app.segments import Transcription, WindowResult
from scriba.app.vad import VadOptions
from scriba.app.window_decoder import Window, WindowDecoder
from scriba.engine.audio import (
    SAMPLE_RATE,
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
    deque(run.rounds, maxlen=0)  # decode to the end
    run.say(Progress("done", run.decoder.finished, run.decoder.finished))
    results = [run.errors.get(i) or f.finish(word_timestamps) for i, f in enumerate(run.files)]
    return results[0] if single else results


@dataclass
class Run:
    """A transcription under way: its files, the unreadable inputs' error entries, and `rounds`,
    the generator that decodes (each step of it, a round of finished windows)."""

    decoder: WindowDecoder
    files: list[FileTranscription]
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
    files = [FileTranscription(w, *plan) for w in waves]
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


def _batched(decoder: WindowDecoder, files: list[FileTranscription], condition: bool) -> Iterator[None]:
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
