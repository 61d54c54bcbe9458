"""Every released Whisper shape builds, and its Hugging Face parameter names load by name."""

import pytest
import torch
from transformers import WhisperConfig
from transformers import WhisperForConditionalGeneration as HFWhisper

from scriba.models.loader import load_weights
from scriba.models.whisper.network import WhisperForConditionalGeneration, WhisperTokens

SHAPES = {  # d_model, encoder layers, decoder layers, heads, mel bins, vocab
    "tiny.en": (384, 4, 4, 6, 80, 51864),
    "base": (512, 6, 6, 8, 80, 51865),
    "small": (768, 12, 12, 12, 80, 51865),
    "medium": (1024, 24, 24, 16, 80, 51865),
    "large-v3": (1280, 32, 32, 20, 128, 51866),
    "large-v3-turbo": (1280, 32, 4, 20, 128, 51866),
    "distil-large-v3": (1280, 32, 2, 20, 128, 51866),
}


def config_for(name: str) -> WhisperConfig:
    d, enc, dec, heads, mels, vocab = SHAPES[name]
    return WhisperConfig(
        vocab_size=vocab,
        num_mel_bins=mels,
        d_model=d,
        encoder_layers=enc,
        decoder_layers=dec,
        encoder_attention_heads=heads,
        decoder_attention_heads=heads,
        encoder_ffn_dim=4 * d,
        decoder_ffn_dim=4 * d,
        eos_token_id=50256 if vocab == 51864 else 50257,
        decoder_start_token_id=50257 if vocab == 51864 else 50258,
        pad_token_id=50256 if vocab == 51864 else 50257,
    )


@pytest.mark.parametrize("name", list(SHAPES))
def test_hf_checkpoint_names_and_shapes_load(name):
    config = config_for(name)
    with torch.device("meta"):
        theirs = HFWhisper(config)
        ours = WhisperForConditionalGeneration(config)
    load_weights(ours, iter(theirs.state_dict().items()))  # strict: raises on any difference
    assert (
        ours.max_encoder_len == 1500 and ours.num_frames == 3000 and ours.num_mel_bins == config.num_mel_bins
    )


@pytest.mark.parametrize("name", ["tiny.en", "base", "large-v3"])
def test_control_tokens_without_a_generation_config_follow_the_standard_layout(name):
    tokens = WhisperTokens.from_configs(config_for(name), None)
    if name == "tiny.en":
        assert (tokens.sot, tokens.no_timestamps, tokens.timestamp_begin, tokens.is_multilingual) == (
            50257,
            50362,
            50363,
            False,
        )
        assert tokens.lang_to_id == {}
    else:
        shift = name == "large-v3"  # large-v3 added Cantonese: everything after the languages moves by one
        assert tokens.is_multilingual and len(tokens.lang_to_id) == 99 + shift
        assert (tokens.translate, tokens.transcribe) == (50358 + shift, 50359 + shift)
        assert (tokens.start_of_prev, tokens.no_speech, tokens.no_timestamps) == (
            50361 + shift,
            50362 + shift,
            50363 + shift,
        )
        assert tokens.lang_to_id["en"] == 50259 and tokens.lang_to_id["de"] == 50261


def test_a_missing_or_misshaped_weight_is_named():
    config = config_for("tiny.en")
    with torch.device("meta"):
        theirs = HFWhisper(config).state_dict()
        ours = WhisperForConditionalGeneration(config)
    theirs.pop("model.decoder.layers.1.fc2.weight")
    theirs["model.encoder.conv1.weight"] = torch.empty(384, 128, 3, device="meta")
    with pytest.raises(
        ValueError, match=r"missing .*decoder.layers.1.fc2.weight.*shape mismatch.*conv1.weight"
    ):
        load_weights(ours, iter(theirs.items()))
