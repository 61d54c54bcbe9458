"""The oracles: transformers generate() on the same weights, and how outputs are compared;
real speech with known words (jfk.flac)."""

import random

import paths
import torch
from tiny_models import EOS, PAD

MAX_NEW = 64
JFK = paths.JFK
JFK_WORDS = (
    "and so my fellow americans ask not what your country can do for you ask what you can do for your country"
)


def words(text: str) -> str:
    """Lower case, letters and single spaces only: the words to compare."""
    return " ".join("".join(c for c in text.lower() if c.isalpha() or c.isspace()).split())


def random_prompts(num: int, seed: int, max_len: int = 200) -> list[list[int]]:
    rng = random.Random(seed)
    lengths = [1, max_len] + [rng.randint(1, max_len) for _ in range(num)]
    return [[rng.randrange(4, 260) for _ in range(n)] for n in lengths[:num]]


def pad_batch(prompts: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-padded input ids and their attention mask, as transformers takes a batch."""
    ids = torch.full((len(prompts), max(map(len, prompts))), PAD)
    mask = torch.zeros_like(ids)
    for i, p in enumerate(prompts):
        ids[i, : len(p)] = torch.tensor(p)
        mask[i, : len(p)] = 1
    return ids, mask


def hf_generate(model, encoder_prompts, decoder_prompt, max_new_tokens=MAX_NEW, **kwargs):
    """Per prompt: (generated ids up to and incl. EOS, per-step log-softmax of processed scores)."""
    ids, mask = pad_batch(encoder_prompts)
    options = dict(do_sample=False, num_beams=1, min_length=0, no_repeat_ngram_size=0)
    out = model.generate(
        input_ids=ids,
        attention_mask=mask,
        decoder_input_ids=torch.tensor([decoder_prompt] * len(encoder_prompts)),
        max_new_tokens=max_new_tokens,
        output_scores=True,
        return_dict_in_generate=True,
        **{**options, **kwargs},
    )
    results = []
    for i in range(len(encoder_prompts)):
        gen = out.sequences[i, len(decoder_prompt) :].tolist()
        if EOS in gen:
            gen = gen[: gen.index(EOS) + 1]
        logprobs = [torch.log_softmax(out.scores[t][i].float(), -1) for t in range(len(gen))]
        results.append((gen, logprobs))
    return results


def assert_parity(outputs, expected, top=5):
    for out, (gen, logprobs) in zip(outputs, expected):
        completion = out.outputs[0]
        assert completion.token_ids == gen, f"request {out.request_id}"
        assert completion.finish_reason == ("stop" if gen[-1] == EOS else "length")
        for step, (mine, ref) in enumerate(zip(completion.logprobs, logprobs)):
            values, ids = torch.topk(ref, top)
            for rank, (tid, val) in enumerate(zip(ids.tolist(), values.tolist()), start=1):
                if val == float("-inf"):  # a forced token: the rest tie at -inf, in no order
                    assert len([t for t, lp in mine.items() if lp.logprob > float("-inf")]) == rank - 1
                    break
                assert mine[tid].rank == rank, f"step {step}"
                assert abs(mine[tid].logprob - val) < 1e-4, f"step {step} token {tid}"


def transformers_tiny_en():
    """The bundled tiny.en (CTranslate2) as a transformers WhisperForConditionalGeneration."""
    return transformers_whisper("tiny.en")


def transformers_whisper(name: str):
    """An offline Whisper (`tiny.en`, `base`: CTranslate2 folders read by Scriba's reader) as a
    transformers WhisperForConditionalGeneration on the same weights, in float32."""
    from transformers import WhisperForConditionalGeneration

    from scriba.models.offline import offline_model_path
    from scriba.whisper.checkpoint_config import transformers_configs
    from scriba.whisper.ctranslate2 import load_ctranslate2_whisper

    state_dict, *configs = load_ctranslate2_whisper(offline_model_path(name))
    config, generation_config = transformers_configs(*configs)
    model = WhisperForConditionalGeneration(config)
    missing, unexpected = model.load_state_dict({k: v.float() for k, v in state_dict.items()}, strict=False)
    assert not missing and not unexpected, (missing, unexpected)
    model.generation_config = generation_config
    return model.eval()


def hf_token_times(hf, audio, heads, max_new=60, **kwargs):
    """(sequence, token_timestamps) of transformers' generate() on one clip."""
    from scriba.whisper.log_mel import log_mel

    frames = -(-len(audio) // 160)
    hf.generation_config.alignment_heads = heads
    out = hf.generate(
        input_features=torch.tensor(log_mel([audio], hf.config.num_mel_bins)),
        attention_mask=(torch.arange(3000) < frames)[None].long(),  # crops the weights to the audio
        return_token_timestamps=True,
        return_dict_in_generate=True,
        force_unique_generate_call=True,
        max_new_tokens=max_new,
        **kwargs,
    )
    return out["sequences"][0].tolist(), out["token_timestamps"][0].numpy()


def scriba_token_times(engine, audio, heads, max_new=60, **prompt):
    """(prompt + generated ids, prompt length, the token times) of the engine on one clip."""
    from scriba import SamplingParams
    from scriba.transcription.words import token_times

    params = SamplingParams(max_tokens=max_new, cross_attention_heads=heads)
    out = engine.generate({"audio": (audio, 16000), **prompt}, params)[0]
    gen = out.outputs[0]
    positions = -(-len(audio) // 160) // 2
    times = token_times(gen.cross_attentions, len(out.prompt_token_ids), len(gen.token_ids), positions)
    return out.prompt_token_ids + gen.token_ids, len(out.prompt_token_ids), times
