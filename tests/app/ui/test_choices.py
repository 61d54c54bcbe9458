"""The page's choices follow the models: languages and tasks from the Whisper model itself, and
the summarizer's availability found without loading it."""

import pytest

from scriba.app.ui.choices import BUNDLED, Summarizer, describe_model, model_arg, whisper_facts
from scriba.app.ui.transcribe_tab import follow_model
from scriba.models.loader import model_availability


def test_english_only_model_offers_english_and_no_translation():
    facts = whisper_facts(BUNDLED)
    assert not facts.multilingual and facts.languages == [("English", "en")] and facts.tasks == ["transcribe"]
    status, language, task = follow_model(BUNDLED)
    assert status == "**Whisper tiny.en (bundled)** (English-only) · ready"
    assert language["choices"] == [("English", "en")] and language["interactive"] is False
    assert task["choices"] == ["transcribe"] and task["visible"] is False  # nothing to choose: hidden
    assert model_arg(BUNDLED) is None and model_arg("openai/whisper-small") == "openai/whisper-small"


def test_multilingual_model_offers_its_languages_and_translation(tiny_whispers):
    from tiny_whisper import LANGS

    path = tiny_whispers["multilingual"][0]
    facts = whisper_facts(path)
    assert facts.multilingual and facts.languages[0] == ("Auto-detect", "auto")
    assert sorted(code for _, code in facts.languages[1:]) == sorted(LANGS)
    assert facts.tasks == ["transcribe", "translate"]
    assert describe_model("x", facts) == f"**Whisper x** ({len(LANGS)} languages) · ready"
    _, language, task = follow_model(path)
    assert language["interactive"] is True and task["visible"] is True
    assert task["choices"] == ["transcribe", "translate"]


def test_summarizer_availability(tiny_bart):
    here = Summarizer(tiny_bart[0])
    assert here.available and here.notice() == f"Summarizer **{tiny_bart[0]}**: on this machine."
    missing = Summarizer("scriba-tests/no-such-model-9f3b")
    assert not missing.available and "is not available" in missing.notice()
    assert "--summarizer FOLDER" in missing.notice()
    assert model_availability(tiny_bart[0]) == ("local", tiny_bart[0])
    state, why = model_availability("scriba-tests/no-such-model-9f3b")
    assert state == "missing" and ("cannot be reached" in why or "has no model" in why)
    assert model_availability("/no/such/bart") == ("missing", "there is no folder '/no/such/bart'")


def test_the_model_box_offers_only_the_models_the_app_was_started_with():
    import gradio as gr

    from scriba.app.ui.page import _options, whisper_choices

    # The tests install the multilingual extra: the offline base is offered beside tiny.en.
    assert whisper_choices(None) == [BUNDLED, "base"] and whisper_choices(["openai/whisper-small", None]) == [
        "openai/whisper-small",
        BUNDLED,
    ]
    with gr.Blocks():
        box = _options([BUNDLED, "openai/whisper-small"])[0]
    assert [c[1] for c in box.choices] == [BUNDLED, "openai/whisper-small"]
    with pytest.raises(gr.Error):  # a value from outside the list (e.g. through the API) is refused
        box.preprocess("some-org/any-checkpoint")
