"""The transcription flags `scriba transcribe` and `scriba batch` share, and TranscribeOptions
from them: openai-whisper's and faster-whisper's options under their own names, in kebab case."""

from __future__ import annotations

import argparse

from scriba.transcription.language_vote import MAX_WINDOWS as LANGUAGE_WINDOWS
from scriba.transcription.language_vote import THRESHOLD as LANGUAGE_THRESHOLD


def add_transcribe_flags(parser: argparse.ArgumentParser) -> None:
    add = parser.add_argument
    add("--model", default=None, help="Whisper checkpoint: hub id, folder, or CTranslate2 folder")
    add("--language", default=None, help="language code or name (default: detect)")
    add("--task", default="transcribe", choices=["transcribe", "translate"])
    add("--mode", default="batched", choices=["batched", "sequential"])
    add("--beam-size", type=int, default=1)
    add("--no-timestamps", action="store_true", help="one segment per window, no timestamp tokens")
    add("--word-timestamps", action="store_true", help="time each word (JSON gets words; see --word-cues)")
    add(
        "--vad",
        default="auto",
        choices=["auto", "on", "off"],
        help="decode only the speech Silero VAD finds (auto: for audio over 30 s)",
    )
    add(
        "--language-detection-threshold",
        type=float,
        default=LANGUAGE_THRESHOLD,
        help="a speech window this sure of its language decides it (else more windows vote)",
    )
    add(
        "--language-detection-segments",
        type=int,
        default=LANGUAGE_WINDOWS,
        help="speech windows that vote at most",
    )
    _add_decoding_flags(parser)


def _add_decoding_flags(parser: argparse.ArgumentParser) -> None:
    """faster-whisper's transcribe() options (docs/transcription.md has the table)."""
    add = parser.add_argument_group("decoding (faster-whisper's options)").add_argument
    add("--initial-prompt", default=None, help="text the first window is conditioned on")
    add("--hotwords", default=None, help="hint phrases put before every window's previous text")
    add("--prefix", default=None, help="the text the file's first window starts with")
    add("--multilingual", action="store_true", help="detect each window's language (segments carry it)")
    add("--clip-timestamps", default=None, help="decode only these clips: 'start,end,start,end' seconds")
    add("--max-new-tokens", type=int, default=None, help="tokens per window at most (default 224)")
    add(
        "--suppress-tokens",
        default="-1",
        help="token ids never written, comma-separated (write --suppress-tokens=-1,50362); "
        "-1: the model's non-speech set; '': none",
    )
    add("--no-suppress-blank", action="store_true", help="let a window start with a blank")
    add("--max-initial-timestamp", type=float, default=1.0, help="seconds: the first timestamp's latest")
    add(
        "--prepend-punctuations",
        default=None,
        help="marks joined to the next word (default: openai-whisper's)",
    )
    add(
        "--append-punctuations",
        default=None,
        help="marks joined to the previous word (default: openai-whisper's)",
    )
    add("--best-of", type=int, default=1, help="samples drawn at a fallback temperature, the likeliest kept")
    add(
        "--prompt-reset-on-temperature",
        type=float,
        default=0.5,
        help="a window decoded above this temperature gives the next no previous text",
    )
    add("--patience", type=float, default=1.0, help="beam search: finished hypotheses = beam size x this")
    add("--length-penalty", type=float, default=1.0, help="beam search: score / length ** this")
    add("--repetition-penalty", type=float, default=1.0, help="> 1 makes repeating a token less likely")
    add("--no-repeat-ngram-size", type=int, default=0, help="never repeat an n-gram this long (0: off)")


def transcribe_options(args: argparse.Namespace, engine: dict):
    """The flags as TranscribeOptions (checked there: a bad value is a one-line error)."""
    from scriba.transcription.options import VAD_CHOICES, TranscribeOptions

    marks = {
        k: v for k in ("prepend_punctuations", "append_punctuations") if (v := getattr(args, k)) is not None
    }
    return TranscribeOptions(
        model=args.model,
        language=args.language,
        task=args.task,
        mode=args.mode,
        beam_size=args.beam_size,
        timestamps=not args.no_timestamps,
        word_timestamps=args.word_timestamps,
        vad_filter=VAD_CHOICES[args.vad],
        language_detection_threshold=args.language_detection_threshold,
        language_detection_segments=args.language_detection_segments,
        initial_prompt=args.initial_prompt,
        hotwords=args.hotwords,
        prefix=args.prefix,
        multilingual=args.multilingual,
        clip_timestamps=args.clip_timestamps,
        max_new_tokens=args.max_new_tokens,
        suppress_tokens=_ids(args.suppress_tokens),
        suppress_blank=not args.no_suppress_blank,
        max_initial_timestamp=args.max_initial_timestamp,
        **marks,
        best_of=args.best_of,
        prompt_reset_on_temperature=args.prompt_reset_on_temperature,
        patience=args.patience,
        length_penalty=args.length_penalty,
        repetition_penalty=args.repetition_penalty,
        no_repeat_ngram_size=args.no_repeat_ngram_size,
        engine=engine,
    )


def _ids(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise ValueError(f"--suppress-tokens must be comma-separated token ids, got {text!r}") from None
