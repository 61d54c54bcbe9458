"""Who spoke when: diarization error rate and speaker counts on built conversations and real
meetings, and the time diarization adds to a transcription.

    python -m benchmarks diarization [--data DIR] [--meetings DIR] [--conversations 6] [--smoke] [--out FILE]

Built conversations (conversations.py): 2-4 speakers taking turns of whole utterances with short
gaps, the reference turns the utterances' spans. The speakers are those of `--data`'s short/
utterances (LibriSpeech's speaker ids, LJ Speech, ...) with at least two utterances, and the
bundled readers (tests/data/speakers: LJ Speech and LibriSpeech 61; tests/data/multilingual: a
German and a Spanish LibriVox reader, their readings cut at pauses). Without `--data`, the
bundled ones alone. `--meetings DIR`: real recordings, each `NAME.wav` with its reference turns
`NAME.rttm` (`python -m benchmarks fetch-data --meetings DIR` downloads pyannote-audio's and
Picovoice Falcon's test recordings). The error (diarization_error.py): missed speech, false
alarm and confusion over the scored reference speech, a 0.25 s collar, overlaps not scored; pooled
over each set's speech. Each recording is scored three ways: the diarizer's own turns, and what
people read, the segments of `transcribe(diarize=True)` and its words with `word_timestamps=True`.
With `--data`, its recordings of one speaker each (short/, longform/) and
the bundled JFK clip are diarized too: how many come out as one voice. Then the time: each
conversation transcribed (tiny.en, the default) with and without `diarize=True`, and with word
timestamps on both.
"""

from __future__ import annotations

import glob
import os
import time

import numpy as np

from benchmarks.conversations import build, utterances
from benchmarks.data import JFK, speech_set
from benchmarks.diarization_error import read_rttm, score
from benchmarks.report import ROOT, Report, suite_parser

BUNDLED = [
    *glob.glob(os.path.join(ROOT, "tests", "data", "speakers", "*.ogg")),
    *glob.glob(os.path.join(ROOT, "tests", "data", "multilingual", "*librivox*")),
]


def meetings(folder: str) -> list[tuple[str, object, list]]:
    """(name, wave, reference turns) of each NAME.wav with a NAME.rttm in `folder`."""
    from scriba.media.load import load_audio

    found = []
    for rttm in sorted(glob.glob(os.path.join(folder, "*.rttm"))):
        audio = rttm[: -len(".rttm")] + ".wav"
        if os.path.exists(audio):
            found.append((os.path.basename(audio), load_audio(audio), read_rttm(rttm)))
    if not found:
        raise SystemExit(f"--meetings {folder!r} holds no NAME.wav with a NAME.rttm")
    return found


VIEWS = ("turns", "segments", "words")  # the diarizer's own turns; what people read: segments, words


def views(wave) -> dict[str, list[tuple[float, float, str]]]:
    """(start, end, speaker) in each view of one recording: the diarizer's turns (find_speakers),
    the segments of transcribe(diarize=True) and the words of the same with word_timestamps=True."""
    from scriba.transcription.options import TranscribeOptions
    from scriba.transcription.speaker_labels import find_speakers
    from scriba.transcription.transcribe import transcribe

    found = find_speakers(wave, TranscribeOptions(diarize=True))
    segments = transcribe(wave, diarize=True).segments
    worded = transcribe(wave, diarize=True, word_timestamps=True).segments
    return {
        "turns": [(t.start, t.end, t.speaker) for t in found.turns],
        "segments": [(x.start, x.end, x.speaker) for x in segments],
        "words": [(w.start, w.end, w.speaker) for x in worded for w in x.words],
    }


def scored(say, title: str, items) -> None:
    """Each item's DER in each view and its speaker count as the transcript labels it, then
    each view's pooled DER (missed, false alarm, confusion) and counts right."""
    say(f"{title}: {len(items)} recordings")
    columns = [("seconds", 8), ("speakers", 9), ("found", 6), *((f"DER {v}", 13) for v in VIEWS)]
    say(f"{'recording':<22} " + " ".join(f"{name:>{width}}" for name, width in columns))
    totals = {v: np.zeros(4) for v in VIEWS}
    right = dict.fromkeys(VIEWS, 0)
    for name, wave, reference in items:
        found, ders = views(wave), []
        speakers = len({who for _, _, who in reference})
        for view in VIEWS:
            s = score(reference, found[view])
            totals[view] += np.array([s.missed, s.false_alarm, s.confusion, 1.0]) * s.speech
            right[view] += speakers == len({who for _, _, who in found[view]})
            ders.append(s.der)
        counted = len({who for _, _, who in found["segments"]})
        say(f"{name:<22} {len(wave) / 16000:8.1f} {speakers:9d} {counted:6d} "
            + " ".join(f"{d:13.3f}" for d in ders))
    for view in VIEWS:
        speech = max(totals[view][3], 1e-9)
        missed, false, confused = totals[view][:3] / speech
        say(
            f"{title}, {view}: DER {missed + false + confused:.3f} (missed {missed:.3f}, false alarm "
            f"{false:.3f}, confusion {confused:.3f}) over {speech:.0f} s of speech; "
            f"speaker counts right {right[view]}/{len(items)}"
        )
    say()


def single_speakers(say, paths: list[str]) -> None:
    """How many recordings of one voice are found as one: a count found too high on them splits
    a monologue into speakers."""
    from scriba.media.load import load_audio
    from scriba.transcription.options import TranscribeOptions
    from scriba.transcription.speaker_labels import find_speakers

    options, split = TranscribeOptions(diarize=True), []
    for path in paths:
        found = len(find_speakers(load_audio(path), options).speakers)
        if found != 1:
            split.append(f"{os.path.basename(path)} ({found})")
    right = len(paths) - len(split)
    say(f"single-speaker recordings found as one voice: {right}/{len(paths)}"
        + (f"; not: {', '.join(split)}" if split else ""))
    say()


def timed(say, waves, rounds: int) -> None:
    """Wall time of transcribing every wave, without and with diarization. Each wave runs every
    case back to back, so a host that slows down for a while slows them alike; each round's
    ratios are taken within the round, and the median round's reported."""
    from scriba.transcription.transcribe import transcribe

    transcribe(waves[0], diarize=True)  # every model and kernel loaded before the clock runs
    seconds = sum(len(w) for w in waves) / 16000
    cases = [({}, "plain"), ({"diarize": True}, "diarize"), ({"word_timestamps": True}, "words"),
             ({"word_timestamps": True, "diarize": True}, "words + diarize")]
    totals = [dict.fromkeys([label for _, label in cases], 0.0) for _ in range(rounds)]
    for total in totals:
        for wave in waves:
            for options, label in cases:
                start = time.perf_counter()
                transcribe(wave, **options)
                total[label] += time.perf_counter() - start
    median = lambda values: float(np.median(values))  # noqa: E731
    say(f"time: {len(waves)} conversations, {seconds:.0f} s, tiny.en, one at a time, "
        f"median of {rounds} rounds")
    for _, label in cases:
        took = median([t[label] for t in totals])
        say(f"  {label:<16} {took:6.2f} s ({seconds / took:5.1f}x real time)")
    plain = median([t["diarize"] / t["plain"] - 1 for t in totals])
    words = median([t["words + diarize"] / t["words"] - 1 for t in totals])
    each = ", ".join(f"{t['diarize'] / t['plain'] - 1:+.1%}" for t in totals)
    say(f"diarization adds {plain:+.1%} to a transcription ({words:+.1%} with word timestamps on both; "
        f"rounds: {each})")


def _cut(name, wave, reference, seconds: float):
    kept = [t for t in reference if t[1] <= seconds]
    return name, wave[: int(kept[-1][1] * 16000)], kept


def main(argv: list[str]) -> int:
    parser = suite_parser("diarization", __doc__, data=True)
    parser.add_argument("--meetings", default=None, help="a folder of NAME.wav with NAME.rttm")
    parser.add_argument("--conversations", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=3, help="timing rounds (the median is kept)")
    parser.add_argument("--smoke", action="store_true", help="two short conversations, one timed once")
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    say = Report("diarization", argv)
    paths = list(BUNDLED)
    if args.data:
        paths += speech_set(args.data, "short")[0]
    count = 2 if args.smoke else args.conversations
    built = build(utterances(paths), count=count)
    if args.smoke:  # their first 25 s, cut after the last turn that ends before then
        built = [_cut(name, wave, ref, 25.0) for name, wave, ref in built]
    scored(say, "built conversations", built)
    if args.meetings:
        scored(say, "meetings", meetings(args.meetings))
    if args.data and not args.smoke:
        single_speakers(say, [JFK, *speech_set(args.data, "short")[0], *speech_set(args.data, "longform")[0]])
    # the smoke times the English conversation only: the next one's German reading sends tiny.en
    # through every fallback temperature (seconds of CI for no more of the code run)
    timed(say, [wave for _, wave, _ in built[: 1 if args.smoke else None]], 1 if args.smoke else args.rounds)
    say.save(args.out)
    return 0
