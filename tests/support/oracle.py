"""The oracles: transformers generate() on the same weights, and how outputs are compared;
real speech with known words (jfk.flac)."""

import random

import numpy as np
import paths
import pytest
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
    from scriba.models.whisper.checkpoint_config import transformers_configs
    from scriba.models.whisper.ctranslate2 import load_ctranslate2_whisper

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


def completions(outputs) -> list:
    return [
        [(c.token_ids, c.finish_reason, c.stop_reason, c.logprobs) for c in out.outputs] for out in outputs
    ]


def assert_same_outputs(expected, outputs) -> None:
    """Two engines' outputs of the same requests agree: tokens, finish and stop reasons exactly,
    log-probs (each step's top ones, and the cumulative) to float32's rounding."""
    for a, b in zip(completions(expected), completions(outputs), strict=True):
        assert [x[:3] for x in a] == [x[:3] for x in b]
        for (*_, logprobs_a), (*_, logprobs_b) in zip(a, b):
            for step_a, step_b in zip(logprobs_a or [], logprobs_b or [], strict=True):
                assert step_a.keys() == step_b.keys()
                np.testing.assert_allclose(
                    [v.logprob for v in step_a.values()], [v.logprob for v in step_b.values()], atol=1e-5
                )
    for a, b in zip(expected, outputs):
        for c, d in zip(a.outputs, b.outputs):
            assert c.cumulative_logprob == pytest.approx(d.cumulative_logprob, abs=1e-4)


def mixed_sampling_params() -> list:
    """8 requests' settings for comparing two engine settings: greedy, sampled, stops, caps."""
    from scriba import SamplingParams

    return [
        SamplingParams(max_tokens=24, logprobs=2),
        SamplingParams(max_tokens=1),  # capped at its first token
        SamplingParams(max_tokens=2, ignore_eos=True),
        SamplingParams(temperature=0.9, top_p=0.9, seed=7, max_tokens=30, logprobs=1),
        SamplingParams(temperature=1.2, top_k=20, seed=8, max_tokens=30),
        SamplingParams(max_tokens=40, stop_token_ids=[17, 99, 140]),
        SamplingParams(max_tokens=10_000, ignore_eos=True),  # runs into the decoder's 256 positions
        SamplingParams(max_tokens=17, ignore_eos=True, logprobs=0),
    ]


def beams_and_forks_params() -> list:
    """6 requests' settings with beams and n > 1 forks among plain ones."""
    from scriba import SamplingParams

    return [
        SamplingParams(max_tokens=20),
        SamplingParams(beam_width=3, max_tokens=12, length_penalty=1.0),
        SamplingParams(n=3, temperature=1.0, seed=5, max_tokens=15, logprobs=1),
        SamplingParams(max_tokens=25, logprobs=3),
        SamplingParams(n=2, temperature=0.7, seed=6, max_tokens=8),
        SamplingParams(max_tokens=30),
    ]


def assert_follows(exact, approx, tolerance: float, share: float = 0.9) -> None:
    """Greedy outputs (token ids, log-probs) of a rounding cache against the exact ones: each
    sequence the same up to where a near-tie turned (the rest is another sequence), the chosen
    tokens' log-probs within `tolerance` there, and at least `share` of all tokens so agreed."""
    agreed = total = 0
    for (a, a_lp), (b, b_lp) in zip(exact, approx):
        for i, (x, y) in enumerate(zip(a, b)):
            total += 1
            if x != y:
                break
            agreed += 1
            assert abs(a_lp[i][x].logprob - b_lp[i][y].logprob) < tolerance
    assert agreed >= share * total, (agreed, total)
