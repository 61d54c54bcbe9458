"""The shared engine loop: input work happens in callers' threads, never in the step loop."""

import threading

import numpy as np
import pytest

import scriba.media.load as audio
import scriba.whisper.log_mel as features
from scriba import Engine, SamplingParams
from scriba.runtime.loops import EngineLoop


@pytest.fixture(scope="module")
def loop(tiny_whispers):
    return EngineLoop(Engine(tiny_whispers["english"][0], dtype="float32", num_kv_blocks=512))


def test_step_loop_never_decodes_audio(loop, monkeypatch, tmp_path):
    """Audio files are decoded, resampled and turned into log-mel features by the thread that
    calls generate(); the loop thread only schedules and steps."""
    import soundfile as sf

    seen: list[str] = []
    for module, name in ((audio, "load_audio"), (features, "log_mel")):
        real = getattr(module, name)

        def recording(*args, real=real, **kwargs):
            seen.append(threading.current_thread().name)
            return real(*args, **kwargs)

        monkeypatch.setattr(module, name, recording)
    rng = np.random.default_rng(0)
    paths = []
    for i in range(3):
        paths.append(str(tmp_path / f"clip{i}.wav"))
        sf.write(paths[-1], (rng.standard_normal(22_050 * 2) * 0.1).astype(np.float32), 22_050)
    outs = {}

    def caller(i):
        outs[i] = loop.generate([{"audio": paths[i]}], [SamplingParams(max_tokens=5)])

    threads = [threading.Thread(target=caller, args=(i,), name=f"caller-{i}") for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outs) == [0, 1, 2] and all(len(o[0].outputs[0].token_ids) >= 1 for o in outs.values())
    assert sorted(set(seen)) == ["caller-0", "caller-1", "caller-2"]
    assert len(seen) == 6 and loop._thread.name not in seen


def test_bad_prompt_fails_in_the_caller_and_the_loop_serves_on(loop):
    with pytest.raises(ValueError, match="prompt 1: .*no audio samples"):
        silent, empty = {"audio": np.zeros(1600, np.float32)}, {"audio": np.zeros(0, np.float32)}
        loop.generate([silent, empty], [None, None])
    out = loop.generate([{"audio": np.zeros(1600, np.float32)}], [SamplingParams(max_tokens=3)])
    assert out[0].finished and loop.engine.groups == {}
