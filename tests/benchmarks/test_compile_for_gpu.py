"""benchmarks/compile_for_gpu.py: every Triton launch the engine makes compiles for sm_90 (an H100 or
H200) on this CPU machine, fits an SM's shared memory and spills no registers; and what the
interpreter runs but the compiler refuses is caught."""

import json
import os
import subprocess
import sys
import textwrap

import torch

BENCHMARKS = os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks")
sys.path.insert(0, BENCHMARKS)

from gpu_compile_cases import ACCEPTED_SPILLS  # noqa: E402

KERNELS = {
    "_write_kv_kernel", "_write_kv_8bit_kernel", "_write_kv_4bit_kernel", "_paged_decode_kernel",
    "_paged_decode_two_pass_kernel", "_paged_decode_4bit_kernel", "_paged_decode_4bit_two_pass_kernel",
    "_reduce_splits_kernel", "_states_decode_kernel", "_quantize_rows_kernel",
}  # fmt: skip
# Two constexprs through a tuple: the interpreter runs it; the compiler makes them tensors, and a
# str is none (the states kernel's bug before the GPU ever saw it).
BROKEN = """
import triton
import triton.language as tl


@triton.jit
def constexprs_through_a_tuple(x_ptr, MODE: tl.constexpr, ON: tl.constexpr):
    mode, on = MODE, ON
    if mode == "add" and on:
        tl.store(x_ptr, tl.load(x_ptr) + 1.0)
"""


def compiled_without_interpreter(args: list[str], cwd=BENCHMARKS, **run) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, **run)


def test_every_engine_launch_compiles_for_sm90_without_spills(tmp_path):
    report = tmp_path / "compiled.json"
    done = compiled_without_interpreter(["compile_for_gpu.py", "--json", str(report)], timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    rows = json.loads(report.read_text())
    assert {row["kernel"] for row in rows} == KERNELS
    cases = {row["case"] for row in rows}
    assert {"states fp8 splits 1", "decode int4 int_scores two_pass=True", "write int4"} <= cases
    spilled = [row for row in rows if row["stack"] or row["local"]]
    assert not [row for row in spilled if not row["case"].startswith(tuple(ACCEPTED_SPILLS))], spilled
    assert all(0 < row["registers"] <= 255 and row["shared"] <= 227 * 1024 for row in rows)
    assert "0 failed" in done.stdout


def test_a_kernel_the_interpreter_runs_but_the_compiler_refuses_fails(tmp_path):
    (tmp_path / "broken_kernel.py").write_text(BROKEN)
    sys.path.insert(0, str(tmp_path))
    try:
        import broken_kernel  # this process interprets (conftest.py)
    finally:
        sys.path.remove(str(tmp_path))
    x = torch.zeros(1)
    broken_kernel.constexprs_through_a_tuple[(1,)](x, MODE="add", ON=True)
    assert x.item() == 1.0  # the interpreter ran it
    script = textwrap.dedent(f"""
        import json, sys, torch
        sys.path[:0] = [{BENCHMARKS!r}, {str(tmp_path)!r}]
        from compile_for_gpu import Compiler, problems
        import broken_kernel
        compiler = Compiler()
        kernel = broken_kernel.constexprs_through_a_tuple
        compiler.run("broken", lambda: kernel[(1,)](torch.zeros(1), "add", True))
        print(json.dumps([problems(row) for row in compiler.compiled]))
    """)  # fmt: skip
    done = compiled_without_interpreter(["-c", script], cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    (why,) = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(why) == 1 and "CompilationError" in why[0], why
