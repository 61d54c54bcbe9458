"""Sizing the KV pool: from free memory on the CPU, from a profiled peak on a GPU.

On a GPU the pool gets what is left of `gpu_memory_utilization` of the device's memory after
the weights and the activations of the largest step the scheduler can form (measured by
running such a step once), as vLLM does.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

import torch

from scriba.engine.block_manager import blocks_for
from scriba.engine.host_heap import reuse_freed_memory
from scriba.kernels import AttentionMetadata

logger = logging.getLogger("scriba")


@dataclass
class PoolSizes:
    device_blocks: int
    cpu_blocks: int
    bytes_per_block: int  # a device block's, over every layer
    per_request: int  # device blocks a full-length request takes

    def describe(self, encoder_len: int, decoder_len: int) -> str:
        gib = self.device_blocks * self.bytes_per_block / 2**30
        return (
            f"{self.device_blocks} blocks ({gib:.2f} GiB): {self.device_blocks // self.per_request} requests "
            f"of full length ({encoder_len} encoder + {decoder_len} decoder positions) fit"
        )


def kv_pool_sizes(config, runner) -> PoolSizes:
    """The pools' blocks: as configured, else from memory (on a GPU what a profiled largest step
    leaves, on the CPU a fraction of what is free)."""
    model, cache, scheduler = runner.model, config.cache_config, config.scheduler_config
    size = cache.block_size
    unit = runner.cache_shape.bytes_per_block()
    per_request = blocks_for(model.max_encoder_len, size) + blocks_for(model.max_decoder_len, size)
    blocks = cache.num_kv_blocks
    if runner.device.type != "cuda":
        reuse_freed_memory()
    if blocks is None and runner.device.type == "cuda":
        limits = (cache.gpu_memory_utilization, scheduler.max_num_seqs, scheduler.max_num_batched_tokens)
        blocks = gpu_kv_blocks(runner, unit, per_request, *limits)
    elif blocks is None:
        blocks = cpu_kv_blocks(unit, per_request, cache.kv_cache_memory_fraction, scheduler.max_num_seqs)
    cpu = cache.num_cpu_blocks
    if cpu is None:
        cpu = min(blocks, int(cache.swap_space_gb * 2**30) // unit)
    return PoolSizes(blocks, cpu, unit, per_request)


def available_memory() -> int:
    """Bytes of host memory available to new allocations (Linux MemAvailable, else free pages)."""
    free_pages = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    if not os.path.exists("/proc/meminfo"):
        return free_pages
    with open("/proc/meminfo") as f:
        available = [int(line.split()[1]) * 1024 for line in f if line.startswith("MemAvailable:")]
    return available[0] if available else free_pages


def cpu_kv_blocks(bytes_per_block: int, per_request: int, fraction: float, max_num_seqs: int) -> int:
    """`fraction` of available host memory, no more than max_num_seqs full requests need."""
    by_memory = int(available_memory() * fraction) // bytes_per_block
    return max(per_request, min(by_memory, max_num_seqs * per_request))


def gpu_kv_blocks(
    runner,
    bytes_per_block: int,
    per_request: int,
    utilization: float,
    max_num_seqs: int,
    max_num_batched_tokens: int,
) -> int:
    device = runner.device
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats(device)
    run_largest_step(runner, max_num_seqs, max_num_batched_tokens)
    torch.cuda.synchronize(device)
    peak = torch.cuda.max_memory_allocated(device)  # weights + the largest step's activations
    free, total = torch.cuda.mem_get_info(device)
    others = total - free - torch.cuda.memory_reserved(device)  # other processes, CUDA context
    budget = int(total * utilization) - peak - others
    blocks = budget // bytes_per_block
    logger.info(
        "GPU memory: %.1f GiB total, %.0f%% usable; weights + peak activations %.2f GiB; "
        "%.2f GiB for the KV cache",
        total / 2**30,
        utilization * 100,
        peak / 2**30,
        max(budget, 0) / 2**30,
    )
    if blocks < per_request:
        raise RuntimeError(
            "not enough GPU memory for one full-length request's KV cache "
            f"({per_request} blocks, {blocks} fit): "
            "raise gpu_memory_utilization, or lower max_num_seqs / max_num_batched_tokens"
        )
    return blocks


@torch.inference_mode()
def run_largest_step(runner, max_num_seqs: int, max_num_batched_tokens: int) -> None:
    """Run the model once on the largest prefill a step can hold: as many full-length encoder
    inputs as the token budget takes, one decoder token each, and logits for max_num_seqs rows.
    K/V go to a one-block scratch cache."""
    model, device = runner.model, runner.device
    enc_len = model.max_encoder_len
    num = max(1, min(max_num_seqs, max_num_batched_tokens // enc_len))
    encoder_inputs, encoder_positions = model.dummy_encoder_inputs(num, runner.dtype, device)
    cu_enc = torch.arange(num + 1, dtype=torch.int32, device=device) * enc_len
    cu_dec = torch.arange(num + 1, dtype=torch.int32, device=device)
    zeros = lambda n: torch.zeros(n, dtype=torch.long, device=device)  # noqa: E731
    meta = AttentionMetadata(
        backend=runner.backend,
        num_encoder_tokens=num * enc_len,
        encoder_cu_seqlens=cu_enc,
        encoder_max_seqlen=enc_len,
        num_prefill_tokens=num,
        prefill_cu_seqlens=cu_dec,
        prefill_max_seqlen=1,
        slot_mapping=zeros(num),
        cross_slot_mapping=zeros(num * enc_len),
        cross_cu_seqlens_k=cu_enc,
        cross_max_seqlen_k=enc_len,
    )
    ops = [op for layer in model.decoder_attention_layers() for op in layer]
    saved = [(op.kv_cache, op.kv_scales) for op in ops]
    runner.bind_kv_caches(runner.new_kv_caches(1, device), runner.new_kv_scales(1, device))
    try:
        hidden = model(zeros(num), zeros(num), meta, encoder_inputs, encoder_positions)
        model.compute_logits(hidden[:1].expand(max_num_seqs, -1)).float()
    finally:
        for op, (cache, scales) in zip(ops, saved):
            op.kv_cache, op.kv_scales = cache, scales
