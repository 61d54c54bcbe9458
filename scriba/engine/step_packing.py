"""One step's inputs packed without padding: every prefill token, then one token per decoding
sequence (and every prompt token of the groups whose cross K/V the encoder stream cached), as
numpy arrays named as the model's inputs and AttentionMetadata's fields, moved to the device in
one copy (staging.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import torch

from scriba.engine.sequence import Sequence, SequenceGroup, SequenceStatus
from scriba.engine.table_rows import TableRows

if TYPE_CHECKING:
    from scriba.engine.block_manager import BlockManager


@dataclass
class Prefills:
    input_ids: list[int] = field(default_factory=list)
    positions: list[int] = field(default_factory=list)
    slot_mapping: list[int] = field(default_factory=list)
    sample_indices: list[int] = field(default_factory=list)
    rows: list = field(default_factory=list)
    encoder_input_ids: list[int] = field(default_factory=list)
    encoder_positions: list[int] = field(default_factory=list)
    encoder_cu_seqlens: list[int] = field(default_factory=lambda: [0])
    cross_slot_mapping: list[int] = field(default_factory=list)
    features: list[torch.Tensor] = field(default_factory=list)
    prompt_logprob_queries: list = field(default_factory=list)
    prefill_cu_seqlens: list[int] = field(default_factory=lambda: [0])
    cross_cu_seqlens_k: list[int] = field(default_factory=lambda: [0])
    cross_kv_index: list[int] = field(default_factory=list)


@dataclass
class Decodes:
    input_ids: np.ndarray  # [n] int64
    positions: np.ndarray  # [n] int64
    slot_mapping: np.ndarray  # [n] int64
    sample_indices: np.ndarray  # [rows] int64: n for decodes alone, fewer with prompt rows
    decode_block_tables: np.ndarray  # [n, max_blocks] int32
    decode_seq_lens: np.ndarray  # [n] int32
    cross_block_tables: np.ndarray  # [n, max_cross_blocks] int32
    cross_seq_lens: np.ndarray  # [n] int32
    table_lists: list[list[int]]
    cross_table_lists: list[list[int]]
    rows: list  # per sampled row
    # (request id, token index in the step, token id) per prompt_logprob_query of a prompt's rows
    prompt_logprob_queries: list = field(default_factory=list)


# The step's staged integer arrays, named as the fields of AttentionMetadata they become.
STAGED_METADATA = (
    "encoder_cu_seqlens",
    "prefill_cu_seqlens",
    "slot_mapping",
    "decode_block_tables",
    "decode_seq_lens",
    "cross_slot_mapping",
    "cross_cu_seqlens_k",
    "cross_kv_index",
    "cross_block_tables",
    "cross_seq_lens",
)


def step_arrays(pre: Prefills, dec: Decodes) -> dict[str, np.ndarray | None]:
    """The step's integer inputs by name: the model's (input_ids, positions, sample_indices,
    encoder_input_ids, encoder_positions) and AttentionMetadata's own fields (STAGED_METADATA);
    None where the step has none (no prefills, no decodes, K/V rows already in order)."""
    i64 = lambda xs: np.asarray(xs, dtype=np.int64)  # noqa: E731
    i32 = lambda xs: np.asarray(xs, dtype=np.int32)  # noqa: E731
    encodes, token_ids = pre.encoder_cu_seqlens[-1] > 0, bool(pre.encoder_input_ids)
    in_order = len(pre.cross_kv_index) == pre.encoder_cu_seqlens[-1]
    return {
        "input_ids": np.concatenate([i64(pre.input_ids), dec.input_ids]),
        "positions": np.concatenate([i64(pre.positions), dec.positions]),
        "sample_indices": np.concatenate([i64(pre.sample_indices), dec.sample_indices]),
        "encoder_input_ids": i64(pre.encoder_input_ids) if encodes and token_ids else None,
        "encoder_positions": i64(pre.encoder_positions) if encodes and token_ids else None,
        "encoder_cu_seqlens": i32(pre.encoder_cu_seqlens) if encodes else None,
        "prefill_cu_seqlens": i32(pre.prefill_cu_seqlens) if pre.rows else None,
        "slot_mapping": np.concatenate([i64(pre.slot_mapping), dec.slot_mapping]),
        "decode_block_tables": dec.decode_block_tables if dec.rows else None,
        "decode_seq_lens": dec.decode_seq_lens if dec.rows else None,
        "cross_slot_mapping": i64(pre.cross_slot_mapping) if encodes else None,
        "cross_cu_seqlens_k": i32(pre.cross_cu_seqlens_k) if pre.rows else None,
        "cross_kv_index": None if in_order else i64(pre.cross_kv_index),
        "cross_block_tables": dec.cross_block_tables if dec.rows else None,
        "cross_seq_lens": dec.cross_seq_lens if dec.rows else None,
    }


def upload(staging, arrays: dict[str, np.ndarray | None]) -> dict[str, torch.Tensor | None]:
    """The arrays on the device (one copy), by the same names; None stays None."""
    moved = staging.upload({name: a for name, a in arrays.items() if a is not None})
    return {name: moved.get(name) for name in arrays}


def slots_of(table: list[int], start: int, end: int, block_size: int) -> list[int]:
    return [table[p // block_size] * block_size + p % block_size for p in range(start, end)]


class Running(NamedTuple):
    """A scheduled group, its running sequences and their block tables (the block manager's)."""

    group: SequenceGroup
    seqs: list[Sequence]
    tables: list[list[int]]  # per sequence
    cross_table: list[int]


def running_groups(groups: list[SequenceGroup], blocks: BlockManager) -> list[Running]:
    running = []
    for group in groups:
        seqs = group.seqs_with(SequenceStatus.RUNNING)
        tables = [blocks.block_table(s.seq_id) for s in seqs]
        running.append(Running(group, seqs, tables, blocks.cross_block_table(group.request_id)))
    return running


def pack_prefills(prefills: list[Running], block_size: int) -> Prefills:
    """Every token of each prefilling sequence, and its request's encoder inputs."""
    p = Prefills()
    for group, seqs, tables, cross_table in prefills:
        enc_start, enc_len, inputs = p.encoder_cu_seqlens[-1], group.encoder_len, group.inputs
        if inputs.encoder_features is not None:
            p.features.append(torch.as_tensor(inputs.encoder_features))
        else:
            p.encoder_input_ids += inputs.encoder_token_ids
            p.encoder_positions += range(enc_len)
        p.encoder_cu_seqlens.append(enc_start + enc_len)
        p.cross_slot_mapping += slots_of(cross_table, 0, enc_len, block_size)
        query = group.prompt_logprob_query
        if query is not None:
            p.prompt_logprob_queries.append(
                (group.request_id, len(p.input_ids) + query.position, query.token_id)
            )
        for seq, table in zip(seqs, tables):
            tokens = seq.token_ids
            p.input_ids += tokens
            p.positions += range(len(tokens))
            p.slot_mapping += slots_of(table, 0, len(tokens), block_size)
            p.prefill_cu_seqlens.append(len(p.input_ids))
            p.cross_kv_index += range(enc_start, enc_start + enc_len)
            p.cross_cu_seqlens_k.append(len(p.cross_kv_index))
            p.sample_indices.append(len(p.input_ids) - 1)
            p.rows.append((group, seq))
    return p


def prefill_rows(
    prefills: list[Running], self_rows: TableRows, cross_rows: TableRows
) -> dict[str, np.ndarray]:
    """Each prefill token as a decode row reading its own sequence up to itself: block tables
    [tokens, blocks] and lengths (position + 1), cross tables and lengths (its request's), the
    arrays a decode step's metadata holds (a few tokens' prefill run as a decode step). The
    tables come from the rows pack_decodes keeps, so a sequence's next step finds its row."""
    keys, tables, lens, cross_keys, cross, cross_lens = [], [], [], [], [], []
    for group, seqs, seq_tables, cross_table in prefills:
        for seq, table in zip(seqs, seq_tables):
            n = len(seq.token_ids)
            keys += [seq.seq_id] * n
            tables += [table] * n
            lens += range(1, n + 1)
            cross_keys += [group.request_id] * n
            cross += [cross_table] * n
            cross_lens += [group.encoder_len] * n
    return {
        "decode_block_tables": self_rows.gather(keys, tables),
        "decode_seq_lens": np.asarray(lens, dtype=np.int32),
        "cross_block_tables": cross_rows.gather(cross_keys, cross),
        "cross_seq_lens": np.asarray(cross_lens, dtype=np.int32),
    }


def max_diff(cu: list[int]) -> int:
    return max((b - a for a, b in zip(cu, cu[1:])), default=0)


def pack_decodes(
    decodes: list[Running],
    offset: int,
    self_rows: TableRows,
    cross_rows: TableRows,
    block_size: int,
    prompts: list[Running] = (),
) -> Decodes:
    """One token per running sequence: its last token at position length - 1 (PENDING where it
    is still on the device: the runner fills it in there), its slot from its (persistent) block
    table row. Then each of `prompts` (groups whose cross K/V the encoder stream cached): every
    token of each sequence as a row reading its sequence up to itself, sampled at its last."""
    rows, last, lens, keys, tables, cross_keys, cross_block_tables, cross_seq_lens = ([] for _ in range(8))
    for group, seqs, seq_tables, cross_table in decodes:
        for seq, table in zip(seqs, seq_tables):
            last.append(seq.token_ids[-1])
            lens.append(len(seq.token_ids))
            keys.append(seq.seq_id)
            tables.append(table)
            cross_keys.append(group.request_id)
            cross_block_tables.append(cross_table)
            cross_seq_lens.append(group.encoder_len)
            rows.append((group, seq))
    sampled, queries = list(range(len(rows))), []
    for group, seqs, seq_tables, cross_table in prompts:
        query = group.prompt_logprob_query
        if query is not None:
            queries.append((group.request_id, offset + len(last) + query.position, query.token_id))
        for seq, table in zip(seqs, seq_tables):
            n = len(seq.token_ids)
            last += seq.token_ids
            lens += range(1, n + 1)
            keys += [seq.seq_id] * n
            tables += [table] * n
            cross_keys += [group.request_id] * n
            cross_block_tables += [cross_table] * n
            cross_seq_lens += [group.encoder_len] * n
            sampled.append(len(last) - 1)
            rows.append((group, seq))
    decode_block_tables = self_rows.gather(keys, tables)
    lens_arr = np.asarray(lens, dtype=np.int32)
    pos = lens_arr.astype(np.int64) - 1
    bs = block_size
    slots = decode_block_tables[np.arange(len(pos)), pos // bs].astype(np.int64) * bs + pos % bs
    return Decodes(
        input_ids=np.asarray(last, dtype=np.int64),
        positions=pos,
        slot_mapping=slots,
        sample_indices=np.asarray(sampled, dtype=np.int64) + offset,
        decode_block_tables=decode_block_tables,
        decode_seq_lens=lens_arr,
        cross_block_tables=cross_rows.gather(cross_keys, cross_block_tables),
        cross_seq_lens=np.asarray(cross_seq_lens, dtype=np.int32),
        table_lists=tables,
        cross_table_lists=cross_block_tables,
        rows=rows,
        prompt_logprob_queries=queries,
    )
