"""The bundled real tiny.en (CTranslate2 format): our reader, transformers, and Scriba agree."""

import paths
import pytest
import torch
from oracle import transformers_tiny_en

from scriba import Engine, SamplingParams
from scriba.media.load import load_audio
from scriba.models.registry import default_model_path
from scriba.models.whisper.ctranslate2 import load_ctranslate2_whisper
from scriba.whisper.log_mel import log_mel

JFK = paths.JFK


@pytest.fixture(scope="module")
def hf_tiny_en():
    return transformers_tiny_en()


@pytest.fixture(scope="module")
def engine():
    return Engine(dtype="float32")  # no model: the bundled tiny.en, in the exact mode


@pytest.mark.parametrize("timestamps", [False, True])
def test_same_tokens_as_transformers_on_jfk(hf_tiny_en, engine, timestamps):
    features = log_mel([load_audio(JFK)], 80)
    ref = (
        hf_tiny_en.generate(
            input_features=torch.tensor(features),
            return_timestamps=timestamps,
            force_unique_generate_call=True,
            return_dict_in_generate=True,
            max_new_tokens=120,
        )
        .sequences[0]
        .tolist()
    )
    out = engine.generate({"audio": JFK, "timestamps": timestamps}, SamplingParams(max_tokens=120))[0]
    assert out.prompt_token_ids + out.outputs[0].token_ids == ref
    text = out.outputs[0].text.lower()
    assert "my fellow americans" in text and "your country" in text and "do for you" in text
    assert out.annotations.language == "en" and 0 <= out.annotations.no_speech_prob < 0.2


def test_reader_produces_every_weight_of_the_model(engine):
    state_dict, config, _ = load_ctranslate2_whisper(default_model_path())
    assert config.num_mel_bins == 80 and config.vocab_size == 51864 and config.encoder_layers == 4
    assert state_dict["model.encoder.layers.0.self_attn.q_proj.weight"].dtype == torch.float16
    assert not any(k.endswith("k_proj.bias") for k in state_dict)
    # Scriba's fused k bias stays zero; q and v biases are the checkpoint's.
    qkv = engine.model.model.encoder.layers[0].self_attn.qkv_proj.bias
    d = config.d_model
    assert torch.count_nonzero(qkv[d : 2 * d]) == 0
    torch.testing.assert_close(qkv[:d], state_dict["model.encoder.layers.0.self_attn.q_proj.bias"].float())
