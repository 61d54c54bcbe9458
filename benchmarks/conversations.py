"""Conversations built from single-speaker recordings, with their reference turns.

Each speaker's utterances are whole files, trimmed to their speech (Silero VAD); a recording
longer than LONG_SECONDS is cut at its pauses into utterances. A conversation takes 2-4
speakers and lays their utterances end to end in turn, a short random gap between turns; its
reference turns are the utterances' spans.
"""

from __future__ import annotations

import os
import re

import numpy as np

from scriba.media.load import SAMPLE_RATE, load_audio

LONG_SECONDS = 20.0
GAPS = (0.2, 0.7)  # seconds of silence between turns, drawn uniformly
SIZES = (2, 3, 4, 2, 3, 4)  # speakers in each conversation


def speaker_of(path: str) -> str:
    """LibriSpeech's speaker id (`1221-135766-0001`); LJ Speech's one reader; else the file's
    own name."""
    name = os.path.splitext(os.path.basename(path))[0]
    found = re.search(r"(?:^|_)(\d+)-\d+-\d+$", name)
    if found:
        return found.group(1)
    return "ljspeech" if name.startswith("ljspeech") else name


def group_of(speaker: str) -> str:
    """Speakers whose sameness is not known are never in one conversation: CMU ARCTIC's prompts
    (the repositories that hold them do not say whose voice), and the two MFA recordings (one
    speaker, the second with a cold in another room: a change of voice and microphone that is
    not a conversation's)."""
    for corpus in ("cmu_arctic", "mfa_spontaneous"):
        if speaker.startswith(corpus):
            return corpus
    return speaker


def utterances(paths: list[str]) -> dict[str, list[np.ndarray]]:
    """speaker -> their utterances (16 kHz, trimmed to speech), speakers in file order."""
    from scriba.transcription.vad import VadOptions, speech_chunks

    cut = VadOptions(min_silence_duration_ms=300, max_speech_duration_s=10.0, speech_pad_ms=100)
    out: dict[str, list[np.ndarray]] = {}
    for path in sorted(paths):
        wave = load_audio(path)
        chunks = speech_chunks(wave, cut)
        if not chunks:
            continue
        if len(wave) > LONG_SECONDS * SAMPLE_RATE:
            pieces = [wave[s:e] for s, e in chunks if e - s >= SAMPLE_RATE]
        else:
            pieces = [wave[chunks[0][0] : chunks[-1][1]]]
        out.setdefault(speaker_of(path), []).extend(pieces)
    return out


def build(pool, count: int = 6, per_speaker: int = 4, seed: int = 0, min_utterances: int = 2):
    """`count` conversations: [(name, wave, [(start, end, speaker)])] among the speakers with at
    least `min_utterances` (a voice heard once, for a second or two, is a harder case: 1 asks for
    it). Each leads with a speaker of several utterances (in rotation) and adds the next speakers
    in rotation; each speaker says
    up to `per_speaker` of their utterances, none twice, in a shuffled order where nobody follows
    themself."""
    rng = np.random.default_rng(seed)
    pool = {s: u for s, u in pool.items() if len(u) >= min_utterances}
    ranked = sorted(pool, key=lambda s: (-min(len(pool[s]), per_speaker), list(pool).index(s)))
    made = []
    for i in range(count):
        size = min(SIZES[i % len(SIZES)], len(ranked))
        chosen: list[str] = []
        for j in range(len(ranked)):
            candidate = ranked[(i + j * 3) % len(ranked)]
            if len(chosen) < size and group_of(candidate) not in {group_of(c) for c in chosen}:
                chosen.append(candidate)
        made.append(_conversation(f"conv{i}_{len(chosen)}spk", pool, chosen, per_speaker, rng))
    return made


def _conversation(name, pool, speakers, per_speaker, rng):
    left = {s: list(pool[s][:per_speaker]) for s in speakers}
    order, last = [], None
    while any(left.values()):
        options = [s for s in speakers if left[s] and s != last] or [s for s in speakers if left[s]]
        weights = np.array([len(left[s]) for s in options], float)
        last = options[rng.choice(len(options), p=weights / weights.sum())]
        order.append(last)
        left[last].pop(0)
    parts, ref, at, used = [], [], 0, {s: 0 for s in speakers}
    for speaker in order:
        utterance = pool[speaker][used[speaker]]
        used[speaker] += 1
        gap = np.zeros(int(rng.uniform(*GAPS) * SAMPLE_RATE), np.float32)
        parts += [utterance, gap]
        ref.append((at / SAMPLE_RATE, (at + len(utterance)) / SAMPLE_RATE, speaker))
        at += len(utterance) + len(gap)
    return name, np.concatenate(parts).astype(np.float32), ref
