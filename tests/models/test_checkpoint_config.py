"""The offline models load without transformers: their configs (checkpoint_config.py), the
language table and the mel filters are Scriba's own, checked here against transformers'."""

import os
import subprocess
import sys

import pytest
from paths import JFK
from transformers import GenerationConfig, WhisperConfig
from transformers.models.whisper.tokenization_whisper import LANGUAGES, TO_LANGUAGE_CODE

from scriba.models.offline import offline_model_path
from scriba.models.whisper import language_names
from scriba.models.whisper.checkpoint_config import transformers_configs
from scriba.models.whisper.ctranslate2 import load_ctranslate2_whisper
from scriba.models.whisper.tokens import WhisperTokens


@pytest.mark.parametrize("name", ["tiny.en", "base"])
def test_configs_carry_transformers_values(name):
    _, config, generation = load_ctranslate2_whisper(offline_model_path(name))
    theirs, their_generation = transformers_configs(config, generation)
    assert isinstance(theirs, WhisperConfig) and isinstance(their_generation, GenerationConfig)
    for field, value in config.to_dict().items():
        assert getattr(theirs, field) == value, field
    assert theirs.model_type == config.model_type == "whisper"
    assert theirs.activation_function == config.activation_function
    for field, value in generation.to_dict().items():
        assert getattr(their_generation, field) == value, field
    # The control tokens read from either are the same
    assert WhisperTokens.from_configs(config, generation) == WhisperTokens.from_configs(
        theirs, their_generation
    )
    assert generation.is_multilingual == (name == "base")


def test_language_table_is_whispers():
    assert list(language_names.LANGUAGES.items()) == list(LANGUAGES.items())  # token order too
    assert language_names.TO_LANGUAGE_CODE == TO_LANGUAGE_CODE


def test_the_default_transcription_imports_no_transformers():
    """transformers' import costs a cold start 1.0-1.3 s; the bundled model never needs it."""
    code = (
        "import sys, scriba; text = scriba.transcribe(sys.argv[1]).text; "
        "print(text); print('transformers' in sys.modules, 'triton' in sys.modules)"
    )
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}  # as a user runs it
    done = subprocess.run(
        [sys.executable, "-c", code, JFK], capture_output=True, text=True, check=True, env=env
    )
    text, modules = done.stdout.strip().rsplit("\n", 1)
    assert "ask not what your country" in text
    assert modules == "False False", done.stdout
