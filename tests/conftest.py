import os
import sys
import tempfile

# Under pytest-xdist (CI runs two workers on two cores) each worker computes on one thread: two
# workers of two threads each on two cores would contend. Set before torch is first imported.
if "PYTEST_XDIST_WORKER" in os.environ:
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("NUMBA_NUM_THREADS", "1")

# The voice library (scriba voices) in a folder of the run's own: no test reads or writes a user's.
os.environ["SCRIBA_DATA"] = tempfile.mkdtemp(prefix="scriba-data-")

import pytest  # noqa: E402
import torch  # noqa: E402

# Without a GPU the Triton kernels run in Triton's interpreter on CPU tensors. It must be
# chosen before any kernel is defined, so before scriba is imported.
if not torch.cuda.is_available():
    os.environ["TRITON_INTERPRET"] = "1"

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "support"))

from tiny_models import make_tiny_model  # noqa: E402

# How CI runs the suite on two cores (the README's test command): two pytest-xdist workers take the
# modules not marked `alone`, then one process runs the `alone` ones with the machine to themselves.
# Alone: what keeps real time (a browser's fake microphone, live chunks, a hang-up's deadline, the
# docs' servers on fixed ports), where a second worker on the other core starves it. Test id prefixes.
ALONE = (
    "tests/app/ui/test_ui_browser.py",
    "tests/app/server/test_server.py",
    "tests/app/server/test_realtime.py",  # audio streamed at a pace, partial text expected meanwhile
    "tests/transcription/test_live.py",
    "tests/docs/test_examples.py::test_server_block",
)
# Tests that start a local Ray share one worker: two Ray clusters on two cores starve each other.
ONE_WORKER = {
    "ray": ("tests/app/cluster/", "tests/docs/test_examples.py::test_block_runs_as_pasted[docs/cluster")
}
# Each test its own group (independent subprocesses, ~5-27 s each): they spread over both workers.
SPREAD = (
    "tests/docs/test_examples.py::test_block_runs_as_pasted",
    "tests/benchmarks/test_suites.py::test_smoke",
)


def pytest_configure(config):
    config.addinivalue_line("markers", "alone: keeps real time; CI runs it without a second worker")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Marks ALONE's tests `alone`; for `--dist loadgroup`, every module is one group (its module
    fixtures built once per run) but for SPREAD's tests, each a group, and ONE_WORKER's tests share
    a worker."""
    for item in items:
        test = item.nodeid
        if test.startswith(ALONE):
            item.add_marker(pytest.mark.alone)
        group = test if test.startswith(SPREAD) else test.split("::")[0]
        group = next((g for g, prefixes in ONE_WORKER.items() if test.startswith(prefixes)), group)
        item.add_marker(pytest.mark.xdist_group(group))


if torch.cuda.is_available() and os.environ.get("SCRIBA_TEST_FLOAT32") == "1":
    # The parity tests on a GPU's path (flash prefill, Triton, CUDA graphs): engines that leave
    # dtype at "auto" get float32 instead of float16, and no TF32, so tokens must match exactly.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False

    # Patched for the whole session: module-scoped engines are made before any fixture runs.
    from scriba.config import EngineConfig  # noqa: E402

    _resolve = EngineConfig.__post_init__

    def _float32_post_init(self):
        self.dtype = "float32" if self.dtype == "auto" else self.dtype
        _resolve(self)

    EngineConfig.__post_init__ = _float32_post_init


@pytest.fixture(scope="session")
def tiny_bart(tmp_path_factory):
    """(folder, transformers model) of a tiny random BART."""
    path = str(tmp_path_factory.mktemp("tiny-bart"))
    return path, make_tiny_model(path, "bart")


@pytest.fixture(scope="session")
def tiny_bart_eos(tmp_path_factory):
    """A tiny BART whose EOS is likely enough that beams finish at many lengths, so that the
    finished-hypothesis ranking and the early-stopping rules are exercised."""
    from tiny_models import EOS

    path = str(tmp_path_factory.mktemp("tiny-bart-eos"))
    model = make_tiny_model(path, "bart", seed=5)
    with torch.no_grad():
        model.final_logits_bias[0, EOS] = 2.0
    model.save_pretrained(path)
    return path, model


@pytest.fixture(scope="session")
def tiny_mbart(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("tiny-mbart"))
    return path, make_tiny_model(path, "mbart", seed=1)


@pytest.fixture(scope="session")
def tiny_bart_tied(tmp_path_factory):
    """A tied-embeddings BART (as real checkpoints are): lm_head and embed_tokens = model.shared."""
    path = str(tmp_path_factory.mktemp("tiny-bart-tied"))
    return path, make_tiny_model(path, "bart", seed=2, tie_word_embeddings=True, init_std=0.2)


@pytest.fixture(scope="session")
def tiny_whispers(tmp_path_factory):
    """name -> (folder, transformers model): multilingual 80 mels, English-only, multilingual 128 mels."""
    from tiny_whisper import make_tiny_whisper

    specs = {
        "multilingual": dict(multilingual=True),
        "english": dict(multilingual=False, seed=1),
        "mel128": dict(num_mel_bins=128, seed=2),
    }
    return {
        name: (str(p := tmp_path_factory.mktemp(f"tiny-whisper-{name}")), make_tiny_whisper(str(p), **kw))
        for name, kw in specs.items()
    }
