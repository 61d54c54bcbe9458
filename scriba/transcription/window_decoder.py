"""Decodes 30 s windows through the shared engine loop: `submit` queues windows into the running
batch at any time, `results()` yields each finished window with its result. What to do with a
result (retry it, place it in its file, queue the next window) is the driver's (driver.py)."""

from __future__ import annotations

import math
import time
import zlib
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass, field, replace

import numpy as np

from scriba.engine.sampling_params import SamplingParams
from scriba.media.load import SAMPLE_RATE
from scriba.transcription.guards import Guards
from scriba.transcription.options import TranscribeOptions
from scriba.transcription.progress import Progress, window_fraction
from scriba.transcription.results import WindowResult, compression_ratio
from scriba.transcription.segmenting import segment_spans
from scriba.transcription.words import make_words, token_times
from scriba.whisper.constants import HOP_LENGTH, WINDOW_SAMPLES
from scriba.whisper.prompt_layout import prefix_tokens

MAX_WINDOW_TOKENS = 224  # openai-whisper's sample_len: half the decoder context
PROGRESS_SECONDS = 0.5  # how often a progress reporter hears from a running decode
CANCEL_SECONDS = 0.05  # how soon a set `cancel` is seen (a live turn's end interrupts its tail's decode)
# Windows of one transcription in flight at once on a CPU when its segments are read as they
# come (driver.WindowQueue): the earlier windows decode ahead, so the text grows as the file
# goes. It costs throughput: the dev long-form recordings at 58-64x with 8 in flight, 66-67x
# with 16, 70-71x with all at once (2 cores, AVX-512). Without a reader, and on a GPU, as many as
# the engine takes.
CPU_STREAMING_WINDOWS = 8


class Cancelled(Exception):
    """transcribe()'s `cancel` event was set: its windows were aborted."""


@dataclass(frozen=True)
class Window:
    """One window to decode: samples [start, end) of file `file`'s stream, in `language` (None:
    detect it), after the previous text `prev_ids`; `attempt` indexes the temperatures."""

    file: int
    start: int
    end: int
    samples: np.ndarray
    language: str | None
    prev_ids: tuple[int, ...] = ()
    attempt: int = 0
    failed: tuple[WindowResult, ...] = field(default=(), repr=False)  # earlier attempts' results
    detected: float | None = None  # `language`'s probability, when an earlier pass detected it

    @property
    def offset(self) -> float:  # seconds into the stream
        return self.start / SAMPLE_RATE

    @property
    def seconds(self) -> float:
        return len(self.samples) / SAMPLE_RATE


def window_seed(w: Window, temperature: float) -> int:
    """The seed of a window's sampled retry: from its audio and temperature, so the same file
    gives the same text whatever else shares the batch and whatever ran before it."""
    return zlib.crc32(np.float32(temperature).tobytes(), zlib.crc32(np.ascontiguousarray(w.samples)))


class WindowDecoder:
    """Windows in, (window, result) pairs out, for one transcription's options."""

    def __init__(self, loop, options: TranscribeOptions, report=None, cancel=None, priority: int = 0):
        self.loop, self.engine, self.options = loop, loop.engine, options
        self.priority = priority  # its windows' place in the engine's queue (SamplingParams.priority)
        self.temperatures = options.temperature
        self.guards = Guards.from_options(options)
        self.heads = self.engine.model.alignment_heads if options.aligns else None
        # aligned(window, start, end): whether the speaker changes between those seconds of the
        # window's stream, so its words there need times. Diarization sets it: a window where
        # the speaker changes asks for the alignment pass, which runs only when one of its
        # segments spans a change (word_timestamps and the hallucination guard align every window).
        self.aligned: Callable[[Window, float, float], bool] | None = None
        self.tokens = self.engine.model.tokens
        model = self.engine.config.model_config
        exact = (model.dtype, model.quantization) == ("float32", None)  # fills as transformers does
        self.fills_by_language = self.tokens.is_multilingual and not exact
        self.hotword_ids, self.prefix_ids = self.text_ids(options.hotwords), self.text_ids(options.prefix)
        self.report = report
        self.cancel = cancel  # a threading.Event: once set, the windows in flight are aborted
        self.inflight: dict[Future, Window] = {}
        self.windows_in_flight = self.engine.config.scheduler_config.max_num_seqs  # streaming() may lower it
        self.submitted = self.finished = 0
        self.not_submitted = 0  # windows known but held back (driver.WindowQueue): progress counts them
        self.shown = 0.0
        self.reported = 0.0  # time.monotonic() of the last progress report

    def text_ids(self, text: str | None) -> list[int]:
        if not text:
            return []
        return self.engine.tokenizer(" " + text.strip(), add_special_tokens=False)["input_ids"]

    def decode(self, text_tokens: list[int]) -> str:
        return self.engine.tokenizer.decode(
            [t for t in text_tokens if t < self.tokens.eot], skip_special_tokens=True
        )

    def words_of(self, result: WindowResult, language: str | None):
        """The `words_of(lo, hi)` callback of split_segments for this window (None: no words)."""
        if result.token_times is None:
            return None
        tokens, eot = result.tokens, self.tokens.eot

        marks = (self.options.prepend_punctuations, self.options.append_punctuations)

        def words_of(lo: int, hi: int):
            decode = lambda ids: self.engine.tokenizer.decode(ids)
            times, probs = result.token_times, result.token_probs
            return make_words(tokens, times, probs, lo, hi, decode, language, eot, marks)

        return words_of

    def streaming(self) -> None:
        """Its segments are read as they come: on a CPU, fewer windows in flight at once."""
        if self.engine.config.execution_config.device == "cpu":
            self.windows_in_flight = min(CPU_STREAMING_WINDOWS, self.windows_in_flight)

    def submit(self, windows: list[Window]) -> None:
        """Queue `windows` into the running batch, each at its attempt's temperature."""
        if not windows:
            return
        prompts = [self._prompt(w) for w in windows]
        params = [self._params(w, self.temperatures[w.attempt]) for w in windows]
        self.inflight.update(zip(self.loop.submit(prompts, params), windows))
        self.submitted += len(windows)

    def can_retry(self, window: Window, result: WindowResult) -> bool:
        """Whether to decode the window again: openai-whisper's fallback (the output looks wrong
        and a higher temperature is left), or the language found fills it otherwise."""
        if not self.holds(window, window.language or result.language):
            return True
        return window.attempt + 1 < len(self.temperatures) and self.guards.needs_fallback(result)

    def retry(self, window: Window, result: WindowResult) -> Window:
        """The window again at the next temperature, in the language found, `result` kept; from
        the first temperature when the language found fills the window otherwise (padding)."""
        language = window.language or result.language
        detected = window.detected if window.language else result.language_probability
        if not self.holds(window, language):
            return replace(window, language=language, attempt=0, failed=(), detected=detected)
        failed = (*window.failed, result)
        attempt = window.attempt + 1
        return replace(window, attempt=attempt, language=language, failed=failed, detected=detected)

    def settled(self, window: Window, result: WindowResult) -> WindowResult:
        """The result a window keeps: `result`, or after every temperature failed, Guards.pick's."""
        if not window.failed or not self.guards.needs_fallback(result):
            return result
        return self.guards.pick([*window.failed, result])

    def results(self) -> Iterator[tuple[Window, WindowResult]]:
        """Each finished window and its result, as they finish, until nothing is in flight
        (windows submitted meanwhile included). Closed early, or cancelled, it aborts the
        windows still in flight."""
        try:
            while self.inflight:
                timeout = CANCEL_SECONDS if self.cancel is not None else None
                timeout = PROGRESS_SECONDS if self.report is not None and timeout is None else timeout
                done, _ = wait(list(self.inflight), timeout=timeout, return_when=FIRST_COMPLETED)
                if self.cancel is not None and self.cancel.is_set():
                    raise Cancelled("the transcription was cancelled")
                for future in done:
                    window = self.inflight.pop(future)
                    self.finished += 1
                    yield window, self._result(future.result(), self.temperatures[window.attempt], window)
                if time.monotonic() - self.reported >= PROGRESS_SECONDS or done:
                    self._report_progress()
        finally:  # cancelled, failed or abandoned: nothing of it goes on decoding
            if self.inflight:
                self.loop.cancel(list(self.inflight))

    def _report_progress(self) -> None:
        """Finished windows, plus running ones as far as their last timestamp reaches."""
        if self.report is None:
            return
        self.reported = time.monotonic()
        begin, partly = self.tokens.timestamp_begin, 0.0
        for future, window in self.inflight.items():
            out = future.partial
            if out is not None and out.outputs:
                partly += window_fraction(list(out.outputs[0].token_ids), begin, window.seconds)
        self.shown = max(self.shown, self.finished + partly)
        self.report(Progress("transcribing", self.shown, self.submitted + self.not_submitted))

    def _prompt(self, w: Window) -> dict:
        o = self.options
        prompt = {
            "audio": (w.samples, SAMPLE_RATE),
            "language": w.language,
            "task": o.task,
            "timestamps": o.timestamps,
            "prompt": list(w.prev_ids),
            # faster-whisper's None: nothing but the control tokens (the request's None: the model's set)
            "suppress_tokens": [] if o.suppress_tokens is None else list(o.suppress_tokens),
            "suppress_blank": o.suppress_blank,
            "max_initial_timestamp": o.max_initial_timestamp,
            "padding": self.padding(w.language),
        }
        if self._prefix(w):  # as faster-whisper: a window with the prefix gets no hotwords
            prompt["prefix"] = self.prefix_ids
        elif self.hotword_ids:
            prompt["hotwords"] = self.hotword_ids
        return prompt

    def padding(self, language: str | None) -> str:
        """How a window under 30 s in `language` is filled (log_mel.MEL_PADDINGS): log-mel zeros
        for speech in other languages than English, as openai-whisper and faster-whisper fill
        every window; silent audio for English, and while the language is being detected (a
        window detected in another language is decoded again: holds), as transformers fills
        every window. Measured: docs/transcription.md."""
        return "mel" if self.fills_by_language and language not in (None, "en") else "audio"

    def _filled_otherwise(self, w: Window) -> list[int]:
        """The language tokens a window being detected stops at: those filled otherwise than it
        is (it is decoded again in that language, holds), so no text is decoded in vain."""
        if not self.fills_by_language or w.language is not None or len(w.samples) >= WINDOW_SAMPLES:
            return []
        by_fill = self.padding(None)
        return [i for code, i in self.tokens.lang_to_id.items() if self.padding(code) != by_fill]

    def holds(self, window: Window, language: str | None) -> bool:
        """Whether a window decoded while detecting its language holds the text it would have
        in `language`: filled the same way, or a whole 30 s window (nothing to fill)."""
        whole = len(window.samples) >= WINDOW_SAMPLES
        return whole or self.padding(window.language) == self.padding(language)

    def _prefix(self, w: Window) -> list[int]:
        """The prefix tokens this window starts with, as its prompt holds them: the file's first
        window only (it starts at the stream's start)."""
        if not self.prefix_ids or w.start != 0:
            return []
        return prefix_tokens(self.tokens, self.prefix_ids, self.options.timestamps)

    def _params(self, w: Window, temperature: float) -> SamplingParams:
        o = self.options
        detect = w.language is None and self.tokens.is_multilingual
        # generated before the text: <|lang|> <|task|> [<|notimestamps|>] [prefix], when detecting
        control = (2 + (not o.timestamps) + len(self._prefix(w))) if detect else 0
        limits = dict(
            priority=self.priority,
            max_tokens=(o.max_new_tokens or MAX_WINDOW_TOKENS) + control,
            repetition_penalty=o.repetition_penalty,
            no_repeat_ngram_size=o.no_repeat_ngram_size,
        )
        if temperature == 0 and o.beam_size > 1:  # beams at temperature 0, as openai-whisper
            return SamplingParams(
                beam_width=o.beam_size, length_penalty=o.length_penalty, patience=o.patience, **limits
            )
        return SamplingParams(
            stop_token_ids=self._filled_otherwise(w),
            n=o.best_of if temperature > 0 else 1,  # candidates drawn, the likeliest kept (_result)
            temperature=temperature,
            logprobs=0,
            cross_attention_heads=self.heads if self._aligns(w) else None,
            cross_attention_wanted=self._wanted(w),
            seed=window_seed(w, temperature) if temperature > 0 else None,
            **limits,
        )

    def _every(self) -> bool:
        o = self.options
        return o.word_timestamps or o.hallucination_silence_threshold is not None or self.aligned is None

    def _aligns(self, w: Window) -> bool:
        return self._every() or self.aligned(w, w.offset, w.offset + w.seconds)

    def _wanted(self, w: Window):
        """cross_attention_wanted: whether a segment of the window's output spans a change."""
        if self._every():
            return None
        ts, eot = self.tokens.timestamp_begin, self.tokens.eot

        def wanted(token_ids: list[int]) -> bool:
            spans = segment_spans(token_ids, ts, eot, w.seconds)
            return any(self.aligned(w, w.offset + start, w.offset + end) for start, end in spans)

        return wanted

    def _result(self, out, temperature: float, window: Window) -> WindowResult:
        """The engine's output as a WindowResult: text tokens (after the prefix the window was
        given, as faster-whisper's), their log-probs and, when words are aligned, times; in the
        window's language, or the one the model detected."""
        spoken = out.annotations  # WhisperAnnotations
        skip, prefix = spoken.control_tokens, self._prefix(window)
        completion, sum_logprob = _likeliest(out.outputs, skip)
        tokens = completion.token_ids[skip:]
        times = probs = None
        if completion.cross_attentions is not None:
            positions = -(-len(window.samples) // HOP_LENGTH) // 2  # encoder positions holding the audio
            # the prefix is aligned as text: in the prompt, or generated (forced) after a detection
            in_prompt = 0 if skip else len(prefix)
            start, generated = len(out.prompt_token_ids) - in_prompt, len(completion.token_ids) + in_prompt
            times = token_times(completion.cross_attentions, start, generated, positions)
            times = times[skip - (len(prefix) - in_prompt) :].tolist()
            probs = [1.0] * len(prefix) + [
                math.exp(step[t].logprob) for step, t in zip(completion.logprobs[skip:], tokens)
            ]
        if tokens and tokens[-1] == self.tokens.eot:
            tokens = tokens[:-1]
        tokens = [*prefix, *tokens]
        text = self.decode(tokens)
        return WindowResult(
            tokens=tokens,
            text=text,
            avg_logprob=sum_logprob / (len(tokens) - len(prefix) + 1),
            no_speech_prob=spoken.no_speech_prob or 0.0,
            compression_ratio=compression_ratio(text.strip()),
            temperature=temperature,
            language=spoken.language,
            language_probability=spoken.language_probability if window.detected is None else window.detected,
            token_times=times,
            token_probs=probs,
        )


def _likeliest(completions, skip: int):
    """(the completion with the best average log-prob of its tokens after `skip`, its sum):
    openai-whisper's pick among best_of samples; beam search's hypothesis carries its own sum."""

    def scored(completion):
        tokens = completion.token_ids[skip:]
        if completion.logprobs is None:
            return completion.cumulative_logprob, len(tokens)
        return sum(step[t].logprob for step, t in zip(completion.logprobs[skip:], tokens)), len(tokens)

    sums = [scored(c) for c in completions]
    best = max(range(len(completions)), key=lambda i: sums[i][0] / (sums[i][1] + 1))
    return completions[best], sums[best][0]
