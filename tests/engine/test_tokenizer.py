"""A folder with only tokenizer.json (CTranslate2's, the offline models') is read with the
`tokenizers` library directly; the oracle is transformers' AutoTokenizer on the same folder."""

import random
import shutil

import pytest
from transformers import AutoTokenizer

from scriba.engine.tokenizer import TokenizerFile, load_tokenizer
from scriba.models.offline import offline_model_path

TEXTS = [
    " And so my fellow Americans, ask not what your country can do for you.",
    "don't  stop\tme now 'tis",
    " Ça va? Grüße aus Köln, 日本語もです。",
    "<|endoftext|> literal control text",
    "",
]


@pytest.mark.parametrize("name", ["tiny.en", "base"])
def test_tokenizer_file_encodes_and_decodes_as_transformers(name):
    folder = offline_model_path(name)
    ours, theirs = load_tokenizer(folder, explicit=False), AutoTokenizer.from_pretrained(folder)
    assert isinstance(ours, TokenizerFile) and len(ours) == len(theirs)
    for text in TEXTS:
        for special in (False, True):
            expected = theirs(text, add_special_tokens=special)["input_ids"]
            assert ours(text, add_special_tokens=special)["input_ids"] == expected
    rng = random.Random(0)
    for _ in range(500):
        ids = [rng.randrange(len(ours)) for _ in range(rng.randint(1, 24))]
        for skip in (False, True):
            assert ours.decode(ids, skip_special_tokens=skip) == theirs.decode(ids, skip_special_tokens=skip)


def test_other_folders_get_transformers_and_a_bad_file_no_tokenizer(tmp_path, tiny_bart, caplog):
    folder, _ = tiny_bart  # tokenizer_config.json and vocab files beside tokenizer.json
    assert not isinstance(load_tokenizer(folder, explicit=False), TokenizerFile)
    assert load_tokenizer(str(tmp_path), explicit=False) is None  # no files: token ids only
    shutil.copy(f"{offline_model_path('tiny.en')}/tokenizer.json", tmp_path / "tokenizer.json")
    (tmp_path / "tokenizer.json").write_text('{"version": "1.0", "model": 3}')
    assert load_tokenizer(str(tmp_path), explicit=False) is None
    assert "tokenizer.json" in caplog.text and "text prompts are disabled" in caplog.text
