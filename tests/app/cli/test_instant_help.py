"""The command line answers its help and its argument errors before the heavy stacks are imported:
torch, numpy, numba, the engine, transformers and the web stacks load only where a command runs."""

import subprocess
import sys

PROBE = """
import sys
from scriba.app.cli.main import main
try:
    code = main(sys.argv[1:])
except SystemExit as e:
    code = e.code
heavy = ("torch", "numpy", "numba", "scipy", "transformers", "gradio", "fastapi", "scriba.engine")
print(code, " ".join(sorted(m for m in heavy if m in sys.modules)) or "-")
"""


def _probe(*argv: str) -> tuple[str, str, str]:
    run = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, timeout=60)
    code, loaded = run.stdout.split("\n")[-2].split(" ", 1)
    return code, loaded, run.stdout + run.stderr


def test_help_and_argument_errors_import_nothing_heavy(tmp_path):
    cases = {
        ("--help",): ("0", "usage: scriba"),
        ("transcribe", "--help"): ("0", "--word-timestamps"),
        ("serve", "--help"): ("0", "--api-key"),
        ("transcribe", "a.wav", "--no-such-flag"): ("2", "unrecognized arguments: --no-such-flag"),
        ("transcribe", "a.wav", "--beam-size", "two"): ("2", "invalid int value: 'two'"),
        ("transcribe", "a.wav", "--format", "doc"): ("2", "invalid choice: 'doc'"),
        ("transcribe", str(tmp_path / "missing.wav")): ("1", "no such audio file"),
    }
    for argv, (want_code, said) in cases.items():
        code, loaded, output = _probe(*argv)
        assert (code, loaded) == (want_code, "-"), (argv, loaded, output[-400:])
        assert said in output, (argv, output[-400:])


def test_import_scriba_leaves_the_process_as_it_was():
    probe = "import sys, scriba; print(sorted(m for m in sys.modules if m.startswith('scriba')))"
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert run.stdout.strip() == "['scriba']"  # the heap's settings (engine/host_heap.py) are not made
