"""Every Triton kernel compiled for a GPU that is not here (sm_90: an H100 or H200), launched as the
engine launches it, with each compiled kernel's registers, stack (spilled registers) and shared memory.

Triton's interpreter (the CPU tests) runs a kernel's Python, not its compilation: what only the
compiler refuses (a constexpr that became a tensor, an inline-asm path the interpreter skips, a
launch that needs more shared memory than an SM has) shows first on a GPU. Here the kernels' own
wrappers run on CPU tensors with a driver that answers for an sm_90 device: each launch compiles
(Triton's LLVM and the `ptxas` its wheel ships) and is not run. `cuobjdump --dump-resource-usage`
reads the cubin. The shapes are Whisper large's (20 heads of 64, d_model 1280, 1500 positions).

    python benchmarks/compile_for_gpu.py [--grid] [--model] [--json out.json]    # any machine, no GPU

--grid adds the launches the GPU tuners try (tune_states_decode.py's, tune_paged_decode.py's).
--model adds each kernel's main loop (sass_loop.py): a warp's instructions and bytes an iteration,
and its shared-memory traffic and issue against its global reads in an SM's time (x1: as long).
Exit status 1 when a launch fails to compile or needs more shared memory than sm_90 has.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

import torch

if os.environ.get("TRITON_INTERPRET") == "1":
    sys.exit("compile_for_gpu: run it without TRITON_INTERPRET (it compiles, it does not interpret)")
# The kernel files define their kernels (as compiled ones) only where a GPU is: one is claimed
# before they are imported.
torch.cuda.is_available = lambda: True

import triton  # noqa: E402
from sass_loop import bounds, main_loop  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.runtime.driver import driver  # noqa: E402
from triton.runtime.jit import JITFunction  # noqa: E402

from scriba.kernels import triton_support  # noqa: E402

TARGET = GPUTarget("cuda", 90, 32)
SHARED_LIMIT = 227 * 1024  # an sm_90 block's most shared memory (opted in)


class _SM90Driver:
    """What JITFunction.run asks the driver before it compiles: device, stream and target."""

    def get_current_device(self) -> int:
        return 0

    def get_current_stream(self, device: int) -> int:
        return 0

    def get_current_target(self) -> GPUTarget:
        return TARGET


def _cuobjdump(cubin: bytes, flag: str) -> str:
    tool = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump")
    with tempfile.NamedTemporaryFile(suffix=".cubin") as file:
        file.write(cubin)
        file.flush()
        return subprocess.run([tool, flag, file.name], capture_output=True, text=True, check=True).stdout


def _resources(cubin: bytes) -> dict:
    """{"registers", "stack" (bytes a thread: spills), "local"} of a cubin's kernel, by cuobjdump."""
    found = dict(re.findall(r"\b(REG|STACK|LOCAL):(\d+)", _cuobjdump(cubin, "--dump-resource-usage")))
    return {"registers": int(found["REG"]), "stack": int(found["STACK"]), "local": int(found["LOCAL"])}


def _reason(error: Exception) -> str:
    """One line: the error, where Triton's compiler says (the call's source line), and its first cause."""
    root = error
    while root.__cause__ is not None:
        root = root.__cause__
    lines = [line.strip() for line in str(error).strip().splitlines() if line.strip()]
    where = next((line for line in reversed(lines) if not set(line) <= {"^", " "}), "")
    cause = (
        f"; cause {type(root).__name__}: {str(root).strip().splitlines()[-1]}" if root is not error else ""
    )
    return f"{type(error).__name__} at `{where}`{cause}"[:500]


class Compiler:
    """Compiles, in place of launching, every Triton launch made while `collecting` is set; each
    compiled kernel goes to `compiled` with the case that launched it."""

    def __init__(self):
        self.compiled: list[dict] = []
        self.case = ""
        original = JITFunction.run

        def compile_only(fn, *args, grid, warmup, **kwargs):
            row = {"case": self.case, "kernel": fn.__name__}
            try:
                kernel = original(fn, *args, grid=grid, warmup=True, **kwargs)
            except Exception as error:  # noqa: BLE001 - reported; the case's other launches still compile
                self.compiled.append({**row, "error": _reason(error)})
                return None
            self.compiled.append({**row, **self._describe(kernel)})
            return kernel

        JITFunction.run = compile_only
        driver.set_active(_SM90Driver())
        triton_support.IS_INTERPRETED = True  # the wrappers' check that Triton runs CPU tensors

    @staticmethod
    def _describe(kernel) -> dict:
        loop = main_loop(_cuobjdump(kernel.asm["cubin"], "-sass"))
        return {
            "shared": kernel.metadata.shared,
            "warps": kernel.metadata.num_warps,
            "stages": kernel.metadata.num_stages,
            **_resources(kernel.asm["cubin"]),
            "loop": loop and {**loop, **bounds(loop)},
        }

    def run(self, case: str, launch) -> None:
        """launch(): a wrapper's call; a compile error is recorded as the case's failure."""
        self.case = case
        try:
            launch()
        except Exception as error:  # noqa: BLE001 - every failure is reported, the rest still compile
            self.compiled.append({"case": case, "kernel": "(the wrapper)", "error": _reason(error)})


def problems(row: dict) -> list[str]:
    """Why a compiled launch would fail on an sm_90 GPU (none: it would load)."""
    if "error" in row:
        return [row["error"]]
    if row["shared"] > SHARED_LIMIT:
        return [f"needs {row['shared']} bytes of shared memory, sm_90 has {SHARED_LIMIT}"]
    return []


def _loop_line(loop: dict) -> str:
    return (
        f"{loop['instructions']} instructions ({loop['conditional']} conditional), {loop['global_read']} B "
        f"global ({loop['index_read']} narrow), {loop['shared_read']} B "
        f"shared read + {loop['shared_write']} written, {loop['mma']} mma a warp an iteration; "
        f"shared x{loop['shared_x']:.2f}, issue x{loop['issue_x']:.2f} of the global reads' time"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--grid", action="store_true", help="also the tuners' launches")
    parser.add_argument("--model", action="store_true", help="also each main loop's bounds")
    parser.add_argument("--json", help="write every compiled launch here")
    args = parser.parse_args()
    from gpu_compile_cases import engine_cases, grid_cases  # (after the driver is set up)

    compiler = Compiler()
    for case, launch in engine_cases() + (grid_cases() if args.grid else []):
        compiler.run(case, launch)
    failed = 0
    print(f"triton {triton.__version__}, target sm_{TARGET.arch}; registers, stack bytes, shared bytes")
    for row in compiler.compiled:
        why = problems(row)
        failed += bool(why)
        if why:
            print(f"FAIL {row['case']} {row['kernel']}: {'; '.join(why)}")
            continue
        spill = "  SPILLS" if row["stack"] or row["local"] else ""
        print(f"ok   {row['case']:<58} {row['kernel']:<36} regs {row['registers']:>3} "
              f"stack {row['stack']:>4} shared {row['shared']:>6}{spill}")  # fmt: skip
        if args.model and row["loop"]:
            print(f"       loop: {_loop_line(row['loop'])}")
    if args.json:
        with open(args.json, "w") as file:
            json.dump(compiler.compiled, file, indent=1)
    print(f"{len(compiler.compiled) - failed} compiled, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
