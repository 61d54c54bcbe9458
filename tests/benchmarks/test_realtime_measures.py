"""The realtime suite's per-clip measure: which completed turns make each clip's live text."""

from benchmarks.realtime import clip_texts, delta_gaps, turns_with_deltas


def turn(item: str, start: float, end: float, text: str) -> list:
    """A turn's events as the server sends them, with the benchmark's wall times."""
    started = {"type": "input_audio_buffer.speech_started", "audio_start_ms": int(start * 1000)}
    stopped = {"type": "input_audio_buffer.speech_stopped", "audio_end_ms": int(end * 1000)}
    completed = {"type": "conversation.item.input_audio_transcription.completed", "transcript": text}
    return [(dict(event, item_id=item), 0.0) for event in (started, stopped, completed)]


def test_each_turn_goes_to_the_clip_it_lies_in_or_nearest():
    spans = [(1.5, 6.0), (7.5, 12.0), (13.5, 15.0)]
    events = (turn("a", 1.4, 3.9, "first half") + turn("b", 4.2, 6.5, "second half")
              + turn("c", 7.4, 12.6, "the second clip") + turn("d", 12.9, 13.4, "late"))
    texts = clip_texts({"events": events}, spans)
    # "d": its middle (13.15) is 0.35 s before the third clip and 1.15 s after the second
    assert texts == ["first half second half", "the second clip", "late"]


def test_a_turn_never_completed_adds_nothing():
    events = turn("a", 1.4, 3.9, "said")[:2]
    assert clip_texts({"events": events}, [(1.5, 4.0)]) == [""]


def delta(item: str, text: str) -> tuple:
    return {"type": "conversation.item.input_audio_transcription.delta", "item_id": item, "delta": text}, 0.0


def test_turns_with_deltas_counts_only_deltas_sent_while_the_turn_is_spoken():
    a, b, c = turn("a", 1.0, 3.0, "one two"), turn("b", 4.0, 6.0, "three"), turn("c", 7.0, 8.0, "four")
    # a: a delta while spoken; b: its only delta after its speech stopped; c: none
    events = [a[0], delta("a", "one"), *a[1:], *b[:2], delta("b", "three"), b[2], *c]
    assert turns_with_deltas({"events": events}) == (1, 3)


def test_delta_gaps_run_from_speech_started_through_the_deltas_sent_while_spoken():
    started = ({"type": "input_audio_buffer.speech_started", "item_id": "a", "audio_start_ms": 0}, 1.0)
    stopped = ({"type": "input_audio_buffer.speech_stopped", "item_id": "a", "audio_end_ms": 4000}, 5.0)
    first, second, late = delta("a", "one"), delta("a", " two"), delta("a", " three")
    events = [started, (first[0], 2.5), (second[0], 3.0), stopped, (late[0], 6.0)]
    assert delta_gaps({"events": events}) == [1.5, 0.5]
