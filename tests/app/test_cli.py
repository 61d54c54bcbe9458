"""The `scriba` console script, run as a user runs it."""

import json
import shutil
import subprocess
import sys

from scriba import Engine, SamplingParams


def scriba(*args, stdin=None):
    exe = shutil.which("scriba") or None
    cmd = [exe, *args] if exe else [sys.executable, "-m", "scriba.app.cli", *args]
    return subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=300)


def test_generate_prints_what_the_engine_gives(tiny_bart):
    path = tiny_bart[0]
    expected = Engine(path, num_kv_blocks=64).generate(["hello there", "second input"], SamplingParams(max_tokens=12))
    result = scriba("generate", path, "hello there", "second input", "--max-tokens", "12", "--json")
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["token_ids"] for r in records] == [o.outputs[0].token_ids for o in expected]
    assert [r["input"] for r in records] == ["hello there", "second input"]
    piped = scriba("generate", path, "--max-tokens", "12", stdin="hello there\n")
    assert piped.returncode == 0 and piped.stdout == expected[0].outputs[0].text + "\n"


def test_unknown_model_is_one_line_error(tmp_path):
    result = scriba("generate", str(tmp_path / "nowhere"), "text")
    assert result.returncode == 1
    assert result.stderr.startswith("scriba: error: could not find model") and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_bad_option_value(tiny_bart):
    result = scriba("generate", tiny_bart[0], "text", "--max-tokens", "0")
    assert result.returncode == 1 and "max_tokens must be a positive integer" in result.stderr
