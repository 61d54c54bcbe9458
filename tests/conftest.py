import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

from tiny_models import make_tiny_model  # noqa: E402


@pytest.fixture(scope="session")
def tiny_bart(tmp_path_factory):
    """(folder, transformers model) of a tiny random BART."""
    path = str(tmp_path_factory.mktemp("tiny-bart"))
    return path, make_tiny_model(path, "bart")


@pytest.fixture(scope="session")
def tiny_mbart(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("tiny-mbart"))
    return path, make_tiny_model(path, "mbart", seed=1)


@pytest.fixture(scope="session")
def tiny_bart_tied(tmp_path_factory):
    """A tied-embeddings BART (as real checkpoints are): lm_head and embed_tokens = model.shared."""
    path = str(tmp_path_factory.mktemp("tiny-bart-tied"))
    return path, make_tiny_model(path, "bart", seed=2, tie_word_embeddings=True, init_std=0.2)
