"""Scriba's offline Whisper (tiny.en, base: CTranslate2 folders) as a Hugging Face folder, the same
weights in float32, for exporters that read only that format (OpenVINO GenAI's, benchmarks/README.md).

    python -m benchmarks export-hf MODEL OUT
"""

from __future__ import annotations

import os

from benchmarks.report import suite_parser


def export(name: str, out: str) -> None:
    from transformers import (
        WhisperFeatureExtractor,
        WhisperForConditionalGeneration,
        WhisperProcessor,
        WhisperTokenizerFast,
    )

    from scriba.models.offline import offline_model_path
    from scriba.models.whisper.checkpoint_config import transformers_configs
    from scriba.models.whisper.ctranslate2 import load_ctranslate2_whisper

    folder = offline_model_path(name)
    state_dict, *configs = load_ctranslate2_whisper(folder)
    config, generation_config = transformers_configs(*configs)
    model = WhisperForConditionalGeneration(config)
    model.load_state_dict({k: v.float() for k, v in state_dict.items()}, strict=False)
    model.generation_config = generation_config
    model.save_pretrained(out)
    eot = "<|endoftext|>"
    tokenizer = WhisperTokenizerFast(
        tokenizer_file=os.path.join(folder, "tokenizer.json"),
        unk_token=eot,
        bos_token=eot,
        eos_token=eot,
        pad_token=eot,
    )
    features = WhisperFeatureExtractor(feature_size=config.num_mel_bins)
    WhisperProcessor(feature_extractor=features, tokenizer=tokenizer).save_pretrained(out)


def main(argv: list[str]) -> int:
    parser = suite_parser("export-hf", __doc__)
    parser.add_argument("model", help="an offline model: tiny.en or base")
    parser.add_argument("out", help="the folder to write")
    args = parser.parse_args(argv)
    export(args.model, args.out)
    print(f"wrote {args.out}")
    return 0
