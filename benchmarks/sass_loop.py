"""A compiled kernel's main loop read from its SASS (`cuobjdump -sass`): what one warp does in one
iteration: instructions, bytes from shared memory, bytes to it, bytes from global memory (straight
or into shared memory), tensor-core products. From them, a bound on the loop with no GPU at hand:
which of an SM's global reads, shared-memory reads and instruction issue takes longest, in the
SM's own units (compile_for_gpu.py --model).

An SM of an H200 (132 SMs, 1.98 GHz, 4.8 TB/s) takes ~18 bytes a cycle from global memory, 128 from
shared memory and issues 4 instructions a cycle. Calibrated on the three decode kernels timed on an
H200 (session 31): the float16 paged decode (global bound here) ran at 3.7 TB/s; fp8's (global
bound, issue at 0.9 of it) took 1.5x its global reads' time; int4's (issue 2.1x) 3.2x.
"""

from __future__ import annotations

import re

SM_BYTES_A_CYCLE = {"global": 4.8e12 / 132 / 1.98e9, "shared": 128.0}
ISSUE_A_CYCLE = 4.0
LANES = 32
LANE_BYTES = {"128": 16, "64": 8, "U8": 1, "S8": 1, "U16": 2, "S16": 2}
MATRIX_BYTES = {"4": 512, "2": 256}  # ldmatrix / stmatrix of 4 or 2 8x8 16-bit matrices (x1: 128)


def _bytes(opcode: str) -> int:
    """Bytes a warp moves with one memory instruction (every lane active)."""
    parts = opcode.split(".")
    if parts[0] in ("LDSM", "STSM"):
        return MATRIX_BYTES.get(parts[-1], 128)
    width = next((LANE_BYTES[p] for p in parts[1:] if p in LANE_BYTES), 4)
    return width * LANES


def _instructions(sass: str) -> list[tuple[int, str, str]]:
    """(address, opcode with its modifiers, whole text) of each instruction, in order."""
    found = []
    for address, text in re.findall(r"/\*([0-9a-f]{4,})\*/\s+(.*?);", sass):
        opcode = re.match(r"(?:@!?U?P\w+\s+)?([A-Z0-9_.]+)", text)
        if opcode:
            found.append((int(address, 16), opcode.group(1), text))
    return found


def _branch_target(opcode: str, text: str) -> int | None:
    """The address a branch instruction goes to, or None for any other instruction."""
    target = re.search(r"\bBRA\b.*?(0x[0-9a-f]+)", text) if opcode.startswith("BRA") else None
    return int(target.group(1), 16) if target else None


def _conditional(inside: list[tuple[int, str, str]]) -> int:
    """Instructions a predicated forward branch may skip (a kernel's dynamic `if` in the loop)."""
    skipped = set()
    for address, opcode, text in inside:
        target = _branch_target(opcode, text)
        if target and text.lstrip().startswith("@") and target > address:
            skipped.update(a for a, _, _ in inside if address < a < target)
    return len(skipped)


def main_loop(sass: str) -> dict | None:
    """The longest loop's counts a warp an iteration (a backward branch's span), or None if none:
    instructions (`conditional` of them behind a branch that may skip them; counted in the bounds)."""
    program = _instructions(sass)
    loops = []
    for address, opcode, text in program:
        target = _branch_target(opcode, text)
        if target is not None and target < address:
            loops.append((target, address))
    if not loops:
        return None
    start, end = max(loops, key=lambda span: span[1] - span[0])
    inside = [(address, opcode, text) for address, opcode, text in program if start <= address <= end]
    body = [opcode for _, opcode, _ in inside]
    count = {"instructions": len(body), "conditional": _conditional(inside)}
    count.update(shared_read=0, shared_write=0, global_read=0, index_read=0, mma=0)
    for opcode in body:
        kind, moved = opcode.split(".")[0], _bytes(opcode)
        if kind in ("LDS", "LDSM"):
            count["shared_read"] += moved
        elif kind in ("STS", "STSM"):
            count["shared_write"] += moved
        elif kind in ("LDG", "LDGSTS"):
            count["global_read"] += moved
            count["index_read"] += moved if moved <= 4 * LANES else 0
        count["mma"] += kind in ("HMMA", "IMMA", "HGMMA", "QGMMA")
    return count


def _data_bytes(loop: dict) -> int:
    """The loop's global reads less its narrow ones (4 bytes a lane or fewer: a block table's
    indices, where the data come in vectors of 8-16 bytes a lane); all of them if all are narrow."""
    data = loop["global_read"] - loop["index_read"]
    return data if data > 0 else loop["global_read"]


def bounds(loop: dict) -> dict[str, float]:
    """Cycles of an SM a warp-iteration for global reads (the data's: `_data_bytes`), shared-memory
    traffic and issue, and each over the global reads' (1.0: as long): where shared or issue pass 1,
    the loop is theirs."""
    cycles = {
        "global": _data_bytes(loop) / SM_BYTES_A_CYCLE["global"],
        "shared": (loop["shared_read"] + loop["shared_write"]) / SM_BYTES_A_CYCLE["shared"],
        "issue": loop["instructions"] / ISSUE_A_CYCLE,
    }
    base = cycles["global"] or 1.0
    return {**cycles, "shared_x": cycles["shared"] / base, "issue_x": cycles["issue"] / base}
