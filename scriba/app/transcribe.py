"""Long-form transcription: audio of any length, as 30 s windows through the engine.

Two modes:
- "sequential": openai-whisper's algorithm. Each window starts where the last complete
  timestamped segment ended, is conditioned on the text so far, falls back to higher
  temperatures when the output looks wrong (compression ratio > 2.4 or average log-prob < -1),
  and is skipped when it holds no speech. Several files advance together, one window each
  per batch.
- "batched": every window of every file is decoded at once (one engine batch), without
  conditioning on previous text; the temperature fallback re-runs failing windows together.
  Windows are cut at the quietest moment of their last 10 s, so words are rarely split.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from scriba.app.engines import get_loop
from scriba.app.segments import Segment, Transcription, WindowResult, compression_ratio, split_segments
from scriba.engine.audio import (
    SAMPLE_RATE,
    WINDOW_SAMPLES,
    WINDOW_SECONDS,
    AudioInput,
    is_audio_pair,
    load_audio,
)
from scriba.engine.sampling_params import SamplingParams

MODES = ("batched", "sequential")
MAX_WINDOW_TOKENS = 224  # openai-whisper's sample_len: half the decoder context
SILENCE_PEAK = 1e-4  # windows quieter than this (-80 dBFS) are not decoded at all
MIN_WINDOW_SAMPLES = SAMPLE_RATE // 10  # nor windows shorter than 0.1 s


@dataclass
class _Job:
    """One window to decode."""

    file: int
    offset: float  # seconds from the start of its audio
    samples: np.ndarray
    language: str | None
    prev_ids: list[int] = field(default_factory=list)


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
    progress: bool = False,
    **engine_config,
) -> Transcription | list[Transcription]:
    """Transcribe (or translate to English) audio of any length; a list returns a list.

    `audio`: a path, bytes, a file object, `(float array, sample_rate)` or a 16 kHz array.
    `model`: a Whisper checkpoint (Hugging Face id or folder, or a CTranslate2 folder);
    None is the bundled tiny.en. Extra keyword arguments configure the shared engine.
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    if not isinstance(beam_size, int) or beam_size < 1:
        raise ValueError(f"beam_size must be a positive integer, got {beam_size!r}")
    temperatures = (
        [float(temperature)] if isinstance(temperature, (int, float)) else [float(t) for t in temperature]
    )
    if not temperatures or any(t < 0 for t in temperatures):
        raise ValueError(
            f"temperature must be a non-negative number or a non-empty sequence of them, got {temperature!r}"
        )
    single = not isinstance(audio, (list, tuple)) or is_audio_pair(audio)
    sources = [audio] if single else list(audio)
    loop = get_loop(model, **engine_config)
    engine = loop.engine
    if not getattr(engine.model, "encodes_audio", False):
        raise ValueError(f"model {engine.config.model!r} is not a speech model (Whisper)")
    decoder = _WindowDecoder(
        loop,
        task,
        timestamps,
        temperatures,
        compression_ratio_threshold,
        logprob_threshold,
        no_speech_threshold,
        progress,
        beam_size,
    )
    # Check the request options once, up front, with the engine's own validation.
    engine.process(
        {
            "input_features": np.zeros((engine.model.num_mel_bins, engine.model.num_frames)),
            "language": language,
            "task": task,
        }
    )
    waves = [load_audio(s) for s in sources]
    prompt_ids = decoder.text_ids(initial_prompt)
    if mode == "batched":
        results = _batched(decoder, waves, language, prompt_ids, no_speech_threshold, logprob_threshold)
    else:
        results = _sequential(
            decoder,
            waves,
            language,
            prompt_ids,
            condition_on_previous_text,
            no_speech_threshold,
            logprob_threshold,
        )
    return results[0] if single else results


class _WindowDecoder:
    """Decodes batches of windows through the engine, with the temperature fallback."""

    def __init__(
        self,
        loop,
        task,
        timestamps,
        temperatures,
        max_ratio,
        min_logprob,
        no_speech_threshold,
        progress,
        beam_size=1,
    ):
        self.loop, self.engine, self.task, self.timestamps = loop, loop.engine, task, timestamps
        self.beam_size = beam_size  # used at temperature 0, as openai-whisper does
        self.temperatures = temperatures
        self.max_ratio, self.min_logprob, self.no_speech_threshold = (
            max_ratio,
            min_logprob,
            no_speech_threshold,
        )
        self.progress = progress
        self.tokens = self.engine.model.tokens

    def text_ids(self, text: str | None) -> list[int]:
        if not text:
            return []
        return self.engine.tokenizer(" " + text.strip(), add_special_tokens=False)["input_ids"]

    def decode(self, text_tokens: list[int]) -> str:
        return self.engine.tokenizer.decode(
            [t for t in text_tokens if t < self.tokens.eot], skip_special_tokens=True
        )

    def run(self, jobs: list[_Job]) -> list[WindowResult]:
        results: list[WindowResult | None] = [None] * len(jobs)
        pending = list(range(len(jobs)))
        for k, temp in enumerate(self.temperatures):
            outputs = self._generate([jobs[i] for i in pending], temp)
            retry = []
            for i, result in zip(pending, outputs):
                if jobs[i].language is None:  # retries keep the language the first pass found
                    jobs[i].language = result.language
                if k + 1 < len(self.temperatures) and self._needs_fallback(result):
                    retry.append(i)
                else:
                    results[i] = result
            pending = retry
            if not pending:
                break
        return results

    def _needs_fallback(self, r: WindowResult) -> bool:
        too_repetitive = self.max_ratio is not None and r.compression_ratio > self.max_ratio
        too_unlikely = self.min_logprob is not None and r.avg_logprob < self.min_logprob
        is_silence = (
            self.no_speech_threshold is not None
            and r.no_speech_prob > self.no_speech_threshold
            and too_unlikely
        )
        return (too_repetitive or too_unlikely) and not is_silence

    def _generate(self, jobs: list[_Job], temperature: float) -> list[WindowResult]:
        prompts, params = [], []
        for job in jobs:
            detect = job.language is None and self.tokens.is_multilingual
            prompts.append(
                {
                    "audio": (job.samples, SAMPLE_RATE),
                    "language": job.language,
                    "task": self.task,
                    "timestamps": self.timestamps,
                    "prompt": job.prev_ids,
                }
            )
            control = (2 + (not self.timestamps)) if detect else 0  # <|lang|> <|task|> [<|notimestamps|>]
            if temperature == 0 and self.beam_size > 1:
                params.append(
                    SamplingParams(max_tokens=MAX_WINDOW_TOKENS + control, beam_width=self.beam_size)
                )
            else:
                params.append(
                    SamplingParams(
                        temperature=temperature, max_tokens=MAX_WINDOW_TOKENS + control, logprobs=0
                    )
                )
        bar = None
        if self.progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=len(prompts), desc="windows", unit="window")
        try:
            outputs = self.loop.generate(prompts, params, progress=bar)
        finally:
            if bar is not None:
                bar.close()
        return [self._result(out, temperature) for out in outputs]

    def _result(self, out, temperature: float) -> WindowResult:
        completion = out.outputs[0]
        detected = out.language_probability is not None
        skip = (2 + (not self.timestamps)) if detected else 0
        tokens = completion.token_ids[skip:]
        if completion.logprobs is not None:
            sum_logprob = sum(step[t].logprob for step, t in zip(completion.logprobs[skip:], tokens))
        else:  # beam search: the hypothesis' own sum
            sum_logprob = completion.cumulative_logprob
        if tokens and tokens[-1] == self.tokens.eot:
            tokens = tokens[:-1]
        text = self.decode(tokens)
        return WindowResult(
            tokens=tokens,
            text=text,
            avg_logprob=sum_logprob / (len(tokens) + 1),
            no_speech_prob=out.no_speech_prob or 0.0,
            compression_ratio=compression_ratio(text),
            temperature=temperature,
            language=out.language,
            language_probability=out.language_probability,
        )

    def is_no_speech(self, r: WindowResult, logprob_threshold: float | None) -> bool:
        if self.no_speech_threshold is None or r.no_speech_prob <= self.no_speech_threshold:
            return False
        return logprob_threshold is None or r.avg_logprob <= logprob_threshold


def window_bounds(
    wave: np.ndarray, min_seconds: float = 20.0, frame_seconds: float = 0.1
) -> list[tuple[int, int]]:
    """Cut audio into windows of at most 30 s, each ending at the quietest 0.1 s frame of its
    last 10 s, so that a window boundary falls in a pause rather than inside a word."""
    frame, bounds, start = int(frame_seconds * SAMPLE_RATE), [], 0
    while len(wave) - start > WINDOW_SAMPLES:
        lo = start + int(min_seconds * SAMPLE_RATE)
        tail = wave[lo : start + WINDOW_SAMPLES]
        energy = (tail[: len(tail) // frame * frame].reshape(-1, frame) ** 2).mean(axis=1)
        end = lo + (int(np.argmin(energy)) + 1) * frame
        bounds.append((start, end))
        start = end
    bounds.append((start, len(wave)))
    return bounds


def _is_silent(samples: np.ndarray) -> bool:
    """Too short to hold a word, or digital silence: a clear empty result, not a guess."""
    return samples.size < MIN_WINDOW_SAMPLES or float(np.abs(samples).max()) < SILENCE_PEAK


def _finish(
    wave: np.ndarray, segments: list[Segment], first: WindowResult | None, language: str | None
) -> Transcription:
    lang, prob = (first.language, first.language_probability) if first is not None else (language, None)
    text = "".join(s.text for s in segments).strip()
    return Transcription(
        text, lang if lang is not None else language, prob, len(wave) / SAMPLE_RATE, segments
    )


def _batched(
    decoder: _WindowDecoder, waves, language, prompt_ids, no_speech_threshold, logprob_threshold
) -> list[Transcription]:
    jobs = [
        _Job(f, start / SAMPLE_RATE, wave[start:end], language, list(prompt_ids))
        for f, wave in enumerate(waves)
        for start, end in window_bounds(wave)
    ]
    jobs = [j for j in jobs if not _is_silent(j.samples)]
    results = decoder.run(jobs) if jobs else []
    per_file: list[list[Segment]] = [[] for _ in waves]
    first: list[WindowResult | None] = [None] * len(waves)
    for job, result in zip(jobs, results):
        if decoder.is_no_speech(result, logprob_threshold):
            continue
        first[job.file] = first[job.file] or result
        window_seconds = len(job.samples) / SAMPLE_RATE
        segments, _ = split_segments(
            result, job.offset, window_seconds, decoder.tokens.timestamp_begin, decoder.decode
        )
        per_file[job.file] += segments
    return [_finish(w, segs, fr, language) for w, segs, fr in zip(waves, per_file, first)]


def _sequential(
    decoder: _WindowDecoder, waves, language, prompt_ids, condition, no_speech_threshold, logprob_threshold
) -> list[Transcription]:
    seek = [0] * len(waves)  # in samples
    segments: list[list[Segment]] = [[] for _ in waves]
    context: list[list[int]] = [list(prompt_ids) for _ in waves]  # the previous text fed as prompt
    languages = [language] * len(waves)
    first: list[WindowResult | None] = [None] * len(waves)
    while True:
        jobs = []
        for f, wave in enumerate(waves):
            while seek[f] < len(wave) and _is_silent(wave[seek[f] : seek[f] + WINDOW_SAMPLES]):
                seek[f] += WINDOW_SAMPLES
            if seek[f] < len(wave):
                jobs.append(
                    _Job(
                        f,
                        seek[f] / SAMPLE_RATE,
                        wave[seek[f] : seek[f] + WINDOW_SAMPLES],
                        languages[f],
                        context[f],
                    )
                )
        if not jobs:
            break
        for job, result in zip(jobs, decoder.run(jobs)):
            f, window_seconds = job.file, len(job.samples) / SAMPLE_RATE
            languages[f] = job.language
            if decoder.is_no_speech(result, logprob_threshold):
                seek[f] += len(job.samples)
                continue
            first[f] = first[f] or result
            new, advance = split_segments(
                result, job.offset, window_seconds, decoder.tokens.timestamp_begin, decoder.decode
            )
            segments[f] += new
            seek[f] += max(1, int(round(advance * SAMPLE_RATE)))
            if condition and result.temperature <= 0.5:
                context[f] = context[f] + [t for seg in new for t in seg.tokens]
            else:  # openai-whisper: a high-temperature window resets the context
                context[f] = []
    return [_finish(w, segs, fr, language) for w, segs, fr in zip(waves, segments, first)]
