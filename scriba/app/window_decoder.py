"""Decodes 30 s windows through the shared engine loop, as a stream: every window is queued at
once, and a finished window may queue more (a retry at the next temperature, its unfinished
tail, the next window of a sequential file) into the same running batch."""

from __future__ import annotations

import math
import zlib
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass, field

import numpy as np

from scriba.app.longform import Guards
from scriba.app.progress import Progress, window_fraction
from scriba.app.segments import WindowResult, compression_ratio
from scriba.app.words import make_words, token_times
from scriba.engine.sampling_params import SamplingParams
from scriba.media.load import SAMPLE_RATE
from scriba.whisper.constants import HOP_LENGTH

MAX_WINDOW_TOKENS = 224  # openai-whisper's sample_len: half the decoder context
PROGRESS_SECONDS = 0.5  # how often a progress reporter hears from a running decode


class Cancelled(Exception):
    """transcribe()'s `cancel` event was set: its windows were aborted."""


@dataclass
class Window:
    """One window to decode: samples [start, end) of file `file`'s stream."""

    file: int
    start: int
    end: int
    samples: np.ndarray
    language: str | None
    prev_ids: list[int] = field(default_factory=list)

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
    def __init__(
        self,
        loop,
        task,
        timestamps,
        temperatures,
        guards: Guards,
        beam_size=1,
        report=None,
        words=False,
        cancel=None,
    ):
        self.loop, self.engine, self.task, self.timestamps = loop, loop.engine, task, timestamps
        self.temperatures, self.guards, self.report = temperatures, guards, report
        self.heads = self.engine.model.alignment_heads if words else None
        self.beam_size = beam_size  # used at temperature 0, as openai-whisper does
        self.tokens = self.engine.model.tokens
        self.cancel = cancel  # a threading.Event: once set, the windows in flight are aborted

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

        def words_of(lo: int, hi: int):
            decode = lambda ids: self.engine.tokenizer.decode(ids)  # noqa: E731
            return make_words(tokens, result.token_times, result.token_probs, lo, hi, decode, language, eot)

        return words_of

    def stream(self, windows: list[Window], on_result) -> Iterator[None]:
        """Decode `windows`; `on_result(window, result)` returns the windows to decode next.
        A window whose output looks wrong is retried at the next temperature. A generator: it
        yields after each round of finished windows, so its caller can read what they added;
        closed early, it cancels the windows still in flight."""
        inflight: dict[Future, tuple[Window, int]] = {}
        self.total, self.finished, self.shown = len(windows), 0, 0.0

        def submit(batch: list[tuple[Window, int]]) -> None:
            if not batch:
                return
            prompts = [self._prompt(w) for w, _ in batch]
            params = [self._params(w, self.temperatures[k]) for w, k in batch]
            inflight.update(zip(self.loop.submit(prompts, params), batch))

        submit([(w, 0) for w in windows])
        try:
            while inflight:
                polled = self.report is not None or self.cancel is not None
                done, _ = wait(
                    list(inflight), timeout=PROGRESS_SECONDS if polled else None, return_when=FIRST_COMPLETED
                )
                if self.cancel is not None and self.cancel.is_set():
                    raise Cancelled("the transcription was cancelled")
                submit(self._settle(done, inflight, on_result))
                self._report_progress(inflight)
                yield
        finally:  # cancelled, failed or abandoned: nothing of it goes on decoding
            if inflight:
                self.loop.cancel(list(inflight))

    def _settle(self, done, inflight: dict, on_result) -> list[tuple[Window, int]]:
        """The finished windows' results: retried at the next temperature, or given to
        `on_result`; returns what to decode next."""
        queued: list[tuple[Window, int]] = []
        for future in done:
            window, k = inflight.pop(future)
            result = self._result(future.result(), self.temperatures[k], len(window.samples))
            if window.language is None:  # retries keep the language the first pass found
                window.language = result.language
            if k + 1 < len(self.temperatures) and self.guards.needs_fallback(result):
                queued.append((window, k + 1))
                self.total, self.finished = self.total + 1, self.finished + 1
                continue
            follow = on_result(window, result)
            self.total += len(follow)
            self.finished += 1
            queued += [(w, 0) for w in follow]
        return queued

    def _report_progress(self, inflight: dict[Future, tuple[Window, int]]) -> None:
        """Finished windows, plus running ones as far as their last timestamp reaches."""
        if self.report is None:
            return
        begin, partly = self.tokens.timestamp_begin, 0.0
        for future, (window, _) in inflight.items():
            out = future.partial
            if out is not None and out.outputs:
                partly += window_fraction(list(out.outputs[0].token_ids), begin, window.seconds)
        self.shown = max(self.shown, self.finished + partly)
        self.report(Progress("transcribing", self.shown, self.total))

    def _prompt(self, w: Window) -> dict:
        return {
            "audio": (w.samples, SAMPLE_RATE),
            "language": w.language,
            "task": self.task,
            "timestamps": self.timestamps,
            "prompt": w.prev_ids,
        }

    def _params(self, w: Window, temperature: float) -> SamplingParams:
        detect = w.language is None and self.tokens.is_multilingual
        control = (2 + (not self.timestamps)) if detect else 0  # <|lang|> <|task|> [<|notimestamps|>]
        if temperature == 0 and self.beam_size > 1:
            return SamplingParams(max_tokens=MAX_WINDOW_TOKENS + control, beam_width=self.beam_size)
        return SamplingParams(
            temperature=temperature,
            max_tokens=MAX_WINDOW_TOKENS + control,
            logprobs=0,
            cross_attention_heads=self.heads,
            seed=window_seed(w, temperature) if temperature > 0 else None,
        )

    def _result(self, out, temperature: float, num_samples: int) -> WindowResult:
        completion, spoken = out.outputs[0], out.annotations  # WhisperAnnotations
        skip = spoken.control_tokens
        tokens = completion.token_ids[skip:]
        if completion.logprobs is not None:
            sum_logprob = sum(step[t].logprob for step, t in zip(completion.logprobs[skip:], tokens))
        else:  # beam search: the hypothesis' own sum
            sum_logprob = completion.cumulative_logprob
        times = probs = None
        if completion.cross_attentions is not None:
            positions = -(-num_samples // HOP_LENGTH) // 2  # encoder positions holding the audio
            generated = len(completion.token_ids)
            prompt = len(out.prompt_token_ids)
            times = token_times(completion.cross_attentions, prompt, generated, positions)[skip:].tolist()
            probs = [math.exp(step[t].logprob) for step, t in zip(completion.logprobs[skip:], tokens)]
        if tokens and tokens[-1] == self.tokens.eot:
            tokens = tokens[:-1]
        text = self.decode(tokens)
        return WindowResult(
            tokens=tokens,
            text=text,
            avg_logprob=sum_logprob / (len(tokens) + 1),
            no_speech_prob=spoken.no_speech_prob or 0.0,
            compression_ratio=compression_ratio(text),
            temperature=temperature,
            language=spoken.language,
            language_probability=spoken.language_probability,
            token_times=times,
            token_probs=probs,
        )
