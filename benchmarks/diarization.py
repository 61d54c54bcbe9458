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
over each set's speech. With `--data`, its recordings of one speaker each (short/, longform/) and
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


def scored(say, title: str, items) -> None:
    """Each item's DER and speaker count, then the pooled DER and the counts right."""
    from scriba.transcription.options import TranscribeOptions
    from scriba.transcription.speaker_labels import find_speakers

    options = TranscribeOptions(diarize=True)
    say(f"{title}: {len(items)} recordings")
    columns = [("seconds", 8), ("speakers", 9), ("found", 6), ("DER", 7)]
    columns += [("missed", 7), ("false", 7), ("confused", 9)]
    say(f"{'recording':<22} " + " ".join(f"{name:>{width}}" for name, width in columns))
    totals, right = [0.0, 0.0, 0.0, 0.0], 0
    for name, wave, reference in items:
        found = find_speakers(wave, options)
        s = score(reference, [(t.start, t.end, t.speaker) for t in found.turns])
        speakers = len({who for _, _, who in reference})
        right += speakers == len(found.speakers)
        for k, part in enumerate((s.missed, s.false_alarm, s.confusion, 1.0)):
            totals[k] += part * s.speech
        say(
            f"{name:<22} {len(wave) / 16000:8.1f} {speakers:9d} {len(found.speakers):6d} {s.der:7.3f} "
            f"{s.missed:7.3f} {s.false_alarm:7.3f} {s.confusion:9.3f}"
        )
    speech = max(totals[3], 1e-9)
    missed, false, confused = (t / speech for t in totals[:3])
    say(
        f"{title}: DER {missed + false + confused:.3f} (missed {missed:.3f}, false alarm {false:.3f}, "
        f"confusion {confused:.3f}) over {speech:.0f} s of speech; speaker counts right {right}/{len(items)}"
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
    parser.add_argument("--smoke", action="store_true", help="two short conversations, one round")
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
    timed(say, [wave for _, wave, _ in built], 1 if args.smoke else args.rounds)
    say.save(args.out)
    return 0
