"""The long-form policy (scriba/transcription/windows.py, guards.py, segmenting.py), table-driven,
against openai-whisper's rules."""

import pytest

from scriba.transcription.guards import Guards, drop_hallucinations, is_anomaly
from scriba.transcription.options import TranscribeOptions
from scriba.transcription.results import Segment, WindowResult, Word
from scriba.transcription.segmenting import coverage, segment_spans, split_segments
from scriba.transcription.windows import SpeechMap, pack_windows, sequential_window, tail_window

SR = 16000
TS = 1000  # timestamp_begin of a toy vocabulary: token TS + k is k * 0.02 s


def ts(seconds):
    return TS + round(seconds / 0.02)


def result(tokens, temperature=0.0, avg_logprob=-0.3, no_speech=0.1, ratio=1.5):
    return WindowResult(tokens, "", avg_logprob, no_speech, ratio, temperature, "en", None)


def decode(tokens):
    return "".join(f" w{t}" for t in tokens)


# openai-whisper's transcribe(): text between consecutive timestamps is a segment; seek to the
# last closed pair, or the whole window when the output ends on a single timestamp or has none.
SPLITS = [
    # tokens, window seconds -> [(start, end, text)], advance
    ([ts(0), 1, 2, ts(2), ts(2), 3, ts(4)], 30.0, [(0, 2, " w1 w2"), (2, 4, " w3")], 30.0),
    ([ts(0), 1, ts(2), ts(2), 3, 4], 30.0, [(0, 2, " w1")], 2.0),  # unfinished tail: seek to 2 s
    ([ts(0), 1, ts(2), ts(3), 3, ts(5), ts(5)], 30.0, [(0, 2, " w1"), (3, 5, " w3")], 5.0),
    ([1, 2, 3], 12.0, [(0, 12, " w1 w2 w3")], 12.0),  # no timestamps: the whole window
    ([ts(0), 1, 2, ts(7.5)], 12.0, [(0, 7.5, " w1 w2")], 12.0),  # single ending
    ([ts(1), 1, ts(40)], 30.0, [(0, 30, " w1")], 30.0),  # no pair: from the window start; clipped
]


@pytest.mark.parametrize("tokens,window,expected,advance", SPLITS)
def test_split_segments_follows_openai_whisper(tokens, window, expected, advance):
    segments, seek = split_segments(result(tokens), 100.0, window, TS, decode)
    assert [(s.start - 100, s.end - 100, s.text) for s in segments] == [
        (pytest.approx(a), pytest.approx(b), t) for a, b, t in expected
    ]
    assert seek == pytest.approx(advance)


EOT = 900  # text tokens lie below it, control tokens between it and TS


SPANNED = [(tokens, window) for tokens, window, _, _ in SPLITS] + [([EOT + 1, *SPLITS[0][0]], 30.0)]


@pytest.mark.parametrize("tokens,window", SPANNED)
def test_segment_spans_hold_every_segment(tokens, window):
    """The spans read from timestamps alone (what diarization's alignment check sees of a
    generated output, EOT and leading control tokens included) hold each segment split_segments
    makes, and only its texts."""
    spans = segment_spans([*tokens, EOT], TS, EOT, window)
    text = [t for t in tokens if t < EOT]
    segments, _ = split_segments(result([t for t in tokens if t < EOT or t >= TS]), 0.0, window, TS, decode)
    for seg in segments:
        assert any(a - 1e-6 <= seg.start and seg.end <= b + 1e-6 for a, b in spans), (seg, spans)
    assert len(spans) <= max(1, len(text))


def test_segment_spans_skip_pieces_without_text():
    tokens = [EOT + 1, ts(0), 1, ts(2), ts(2), 2, ts(4), ts(4), EOT]
    assert segment_spans(tokens, TS, EOT, 30.0) == [(0.0, 2.0), (2.0, 4.0)]
    assert segment_spans([ts(0), 1, ts(2), ts(2), 2, 3, EOT], TS, EOT, 30.0) == [(0.0, 2.0), (2.0, 30.0)]
    assert segment_spans([1, 2, EOT], TS, EOT, 12.0) == [(0.0, 12.0)]


@pytest.mark.parametrize(
    "start,end,advance,expected",
    [(0, 30 * SR, 12.5, (12.5 * SR, 30 * SR)), (0, 30 * SR, 30.0, None), (SR, 5 * SR, 3.95, None)],
)
def test_the_unfinished_tail_becomes_a_window(start, end, advance, expected):
    assert tail_window(start, end, advance) == expected


GUARDS = [
    # ratio, avg_logprob, no_speech -> retry at the next temperature?, skipped as silence?
    (1.5, -0.3, 0.1, False, False),
    (2.5, -0.3, 0.1, True, False),  # too repetitive
    (1.5, -1.2, 0.1, True, False),  # too unlikely
    (1.5, -1.2, 0.7, False, True),  # unlikely and probably silence: skipped, no retry
    (1.5, -0.5, 0.7, False, False),  # likely text despite the no-speech probability: kept
    (2.5, -1.2, 0.7, False, True),
]


@pytest.mark.parametrize("ratio,logprob,no_speech,retry,silence", GUARDS)
def test_fallback_and_skip_rules(ratio, logprob, no_speech, retry, silence):
    r = result([1], avg_logprob=logprob, no_speech=no_speech, ratio=ratio)
    assert Guards().needs_fallback(r) is retry
    assert Guards().is_no_speech(r) is silence
    assert Guards(None, None, None).needs_fallback(r) is False


def test_the_prompt_grows_and_resets_after_a_high_temperature():
    seg = Segment(0, 1, " a", [5, 6], -0.1, 0.1)
    g = Guards()
    assert g.next_context([1], [seg], result([5], temperature=0.4), True) == [1, 5, 6]
    assert g.next_context([1], [seg], result([5], temperature=0.6), True) == []
    assert g.next_context([1], [seg], result([5]), False) == []
    later = Guards.from_options(TranscribeOptions(prompt_reset_on_temperature=0.8))
    assert later.next_context([1], [seg], result([5], temperature=0.6), True) == [1, 5, 6]


# faster-whisper's generate_with_fallback when every temperature failed: the best average
# log-prob among the attempts under the compression-ratio threshold, else among all; the last
# temperature is carried on (the next window's previous text is reset after it).
PICKS = [
    # each attempt: (avg_logprob, compression ratio) at 0.0, 0.2, 1.0 -> the index kept
    ([(-1.09, 1.5), (-1.11, 1.5), (-4.16, 1.3)], 0),  # a translation under -1 at every temperature
    ([(-0.2, 2.6), (-1.3, 1.5), (-1.5, 1.4)], 1),  # the likeliest is a loop: the next likeliest
    ([(-0.9, 2.6), (-0.4, 2.5), (-1.5, 2.7)], 1),  # every one repetitive: the likeliest of all
]


@pytest.mark.parametrize("attempts, kept", PICKS)
def test_when_every_temperature_fails_the_likeliest_plausible_attempt_is_kept(attempts, kept):
    tried = [
        result([i], temperature=t, avg_logprob=lp, ratio=cr)
        for i, (t, (lp, cr)) in enumerate(zip((0.0, 0.2, 1.0), attempts))
    ]
    assert all(Guards().needs_fallback(r) for r in tried)
    chosen = Guards().pick(tried)
    assert chosen.tokens == [kept] and chosen.avg_logprob == attempts[kept][0]
    assert chosen.temperature == 1.0


def test_the_likeliest_of_best_of_samples_is_kept():
    """openai-whisper's pick: the best sum of log-probs / (tokens + 1) after the control tokens."""
    from types import SimpleNamespace as Out

    from scriba.transcription.window_decoder import _likeliest

    def sample(ids, logprobs):  # logprobs per generated token, control tokens first
        steps = [{t: Out(logprob=lp)} for t, lp in zip(ids, logprobs)]
        return Out(token_ids=ids, logprobs=steps, cumulative_logprob=None)

    short = sample([9, 1, 2], [0.0, -0.5, -0.5])  # after the control token: -1.0 over 2 (+1) = -0.33
    long = sample([9, 1, 2, 3, 4], [-5.0, -0.3, -0.3, -0.3, -0.3])  # -1.2 over 4 (+1) = -0.24
    assert _likeliest([short, long], skip=1) == (long, pytest.approx(-1.2))
    assert _likeliest([short, long], skip=0)[0] is short  # the control token's -5 counted: short wins


PACKS = [
    ([(0, 10), (10, 25), (25, 31), (31, 50)], 30, [(0, 25), (25, 50)]),
    ([(0, 5), (5, 70)], 30, [(0, 5), (5, 35), (35, 65), (65, 70)]),  # too long: cut every window
    ([(0, 30), (30, 60)], 30, [(0, 30), (30, 60)]),
    ([], 30, []),
]


@pytest.mark.parametrize("bounds,max_len,expected", PACKS)
def test_windows_are_packed_from_chunks_and_cut_between_them(bounds, max_len, expected):
    assert pack_windows(bounds, max_len) == expected
    if len(bounds) > 2:  # and always cut at a long pause
        assert pack_windows(bounds, max_len, breaks={10}) == [(0, 10), (10, 31), (31, 50)]


def test_a_window_is_filled_to_fill_and_a_longer_chunk_is_not_cut():
    bounds = [(0, 10), (10, 22), (22, 28), (28, 30), (30, 58)]
    assert pack_windows(bounds, 30, fill=25) == [(0, 22), (22, 30), (30, 58)]
    assert pack_windows(bounds, 30) == [(0, 30), (30, 58)]


def test_pauses_inside_chunks_are_places_to_cut():
    # Chunks at 2-5 s and 40-50 s (stream 0-3, 3-13); pauses at 3 s, 44 s and 47 s of the file.
    m = SpeechMap([(2 * SR, 5 * SR), (40 * SR, 50 * SR)], pauses=[3 * SR, 44 * SR, 47 * SR])
    assert m.bounds() == [(0, SR), (SR, 3 * SR), (3 * SR, 7 * SR), (7 * SR, 10 * SR), (10 * SR, 13 * SR)]
    assert m.length == 13 * SR and m.to_original(8.0) == 45.0  # the timeline is the chunks'


def test_speech_map_goes_back_to_the_file_timeline():
    m = SpeechMap([(2 * SR, 5 * SR), (5 * SR, 6 * SR), (40 * SR, 50 * SR)])  # stream: 0-3, 3-4, 4-14
    assert m.length == 14 * SR and m.bounds() == [(0, 3 * SR), (3 * SR, 4 * SR), (4 * SR, 14 * SR)]
    assert m.to_original(1.0) == 3.0 and m.to_original(4.5) == 40.5
    assert m.to_original(4.0) == 40.0 and m.to_original(4.0, is_end=True) == 6.0
    # A segment that starts 0.5 s before a cut-out pause and runs on starts after it.
    assert m.span_to_original(3.5, 8.0) == (40.0, 44.0)
    assert m.span_to_original(2.0, 4.4) == (4.0, 6.0)  # and one that ends just after it ends before
    assert m.span_to_original(1.0, 3.5) == (3.0, 5.5)  # no cut-out pause inside: as is
    assert m.region_ends() == [4 * SR, 14 * SR]  # a cut-out pause of 2 s or more ends a region


def test_clips_are_regions_of_their_own():
    """faster-whisper's clip_timestamps: start/end pairs (an odd count's last runs to the end),
    every clip a region, adjacent ones too."""
    m = SpeechMap.clips((1.0, 3.0, 3.0, 4.5, 10.0), 12 * SR)
    assert m.chunks == [(SR, 3 * SR), (3 * SR, int(4.5 * SR)), (10 * SR, 12 * SR)]
    assert m.region_ends() == [2 * SR, int(3.5 * SR), int(5.5 * SR)]
    assert m.to_original(2.5) == 3.5 and m.to_original(4.0) == 10.5
    assert SpeechMap.clips((20.0, 30.0), 12 * SR).chunks == []  # past the end: nothing to decode


def test_sequential_windows_stop_at_region_ends():
    ends = [4 * SR, 50 * SR]
    assert sequential_window(0, ends) == (0, 4 * SR)
    assert sequential_window(4 * SR, ends) == (4 * SR, 34 * SR)
    assert sequential_window(40 * SR, ends) == (40 * SR, 50 * SR)


def test_coverage_and_warnings():
    segs = [Segment(1.0, 3.0, " a", [], -0.1, 0.1), Segment(10.0, 10.5, " b", [], -0.1, 0.1)]
    total, fraction, warnings = coverage([(0.5, 3.5), (10.0, 11.0), (20.0, 22.0)], segs)
    assert total == pytest.approx(6.0) and fraction == pytest.approx(2.5 / 6.0)
    assert warnings == ["speech at 20.0-22.0 s produced no text"]


def seg_with_words(start, end, probability, n=3):
    step = (end - start) / n
    words = [Word(start + k * step, start + (k + 1) * step, f" w{k}", probability) for k in range(n)]
    return Segment(start, end, "".join(w.word for w in words), [], -0.5, 0.1, words=words)


HALLUCINATIONS = [
    # segments (start, end, word probability) in a 0-30 s window -> kept, resume (s) or None
    ([(0.5, 4, 0.9), (5, 9, 0.9)], 2, None),
    ([(0.5, 4, 0.9), (12, 14, 0.05), (25, 27, 0.9)], 1, 12.0),  # alone in 8 s and 11 s of silence
    ([(0.5, 4, 0.9), (5, 7, 0.05), (8, 10, 0.9)], 3, None),  # improbable but inside speech: kept
    ([(9, 11, 0.05), (12, 15, 0.9)], 0, 9.0),  # leading silence, then an invention
    ([(0.5, 4, 0.9), (4.5, 6, 0.9)], 2, None),
]


@pytest.mark.parametrize("spans,kept,resume", HALLUCINATIONS)
def test_isolated_improbable_segments_in_silence_are_dropped(spans, kept, resume):
    segments = [seg_with_words(*s) for s in spans]
    out, at = drop_hallucinations(segments, (0.0, 30.0), threshold=2.0)
    assert out == segments[:kept] and at == resume
    assert is_anomaly(seg_with_words(0, 3, 0.05)) and not is_anomaly(seg_with_words(0, 3, 0.9))
    assert is_anomaly(seg_with_words(0, 0.1, 0.9))  # three words in 0.1 s
