"""Ray is optional: Scriba imports and runs without it, and the Ray commands say how to get it;
their usage mistakes are one-line errors before any Ray starts."""

from __future__ import annotations

import subprocess
import sys

from scriba.app.cli.main import main

# One process (each start costs ~8 s here): what a plain install imports pulls no Ray in, so it
# imports where Ray is missing; then, Ray made unimportable, its commands say how to get it.
WITHOUT_RAY = """
import sys
import scriba, scriba.transcription.transcribe, scriba.app.server.app, scriba.app.ui, scriba.app.cli.main
print("ray" in sys.modules)
sys.modules["ray"] = None  # as if it were not installed: `import ray` raises ImportError
from scriba.app.cli.main import main
print(main(["batch", "x.wav", "--output", "out.jsonl"]), main(["serve", "--ray"]))
"""


def test_scriba_imports_without_ray_and_says_how_to_get_it(tmp_path):
    done = subprocess.run([sys.executable, "-c", WITHOUT_RAY], capture_output=True, text=True, cwd=tmp_path)
    assert done.stdout.split() == ["False", "1", "1"], done.stderr[-2000:]
    hint = "scriba: error: this needs Ray: pip install 'scriba[ray]'"
    assert done.stderr.splitlines() == [hint, hint]


def test_usage_mistakes_are_one_line_errors(capsys, tmp_path):
    cases = [
        (["serve", "--ray", "--ui"], "--ui is not served on Ray"),
        (["serve", "--ray", "--replicas", "2", "--max-replicas", "3"], "either --replicas or --min-replicas"),
        (["batch", "a.wav", "-o", str(tmp_path / "o.jsonl"), "--language", "xx"], "unknown language 'xx'"),
        (["batch", "a.wav", "-o", str(tmp_path / "out.csv")], "must end in .jsonl or .parquet"),
        (["batch", str(tmp_path / "none*.wav"), "-o", str(tmp_path / "o.jsonl")], "no files match"),
    ]
    for argv, message in cases:
        assert main(argv) == 1
        err = capsys.readouterr().err
        assert err.startswith("scriba: error: ") and message in err and err.count("\n") == 1, err
    import ray

    assert not ray.is_initialized()  # every mistake was found before Ray was started
