"""Block accounting under random operation sequences (hypothesis), plus copy-on-write cases."""

from collections import Counter

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from scriba.engine.block_manager import CPU, DEVICE, AllocStatus, BlockManager

BLOCK = 4


class BlockAccounting(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.bm = BlockManager(BLOCK, num_device_blocks=24, num_cpu_blocks=16, watermark=0.0)
        self.requests: dict[str, dict] = {}  # id -> {"device": str, "seqs": {seq_id: length}}
        self.next_id = 0

    def _new_id(self) -> int:
        self.next_id += 1
        return self.next_id

    def _on(self, device):
        return [r for r, s in self.requests.items() if s["device"] == device]

    @rule(enc=st.integers(1, 20), length=st.integers(1, 12))
    def allocate(self, enc, length):
        status = self.bm.can_allocate(enc, [length])
        needed = self.bm.num_blocks_needed(enc, [length])
        assert (status is AllocStatus.OK) == (needed <= self.bm.num_free(DEVICE))
        if status is AllocStatus.OK:
            rid, sid = f"r{self._new_id()}", self._new_id()
            self.bm.allocate(rid, enc, {sid: length})
            self.requests[rid] = {"device": DEVICE, "seqs": {sid: length}}
            assert len(self.bm.cross_block_table(rid)) == -(-enc // BLOCK)

    @precondition(lambda self: self._on(DEVICE))
    @rule(data=st.data())
    def append(self, data):
        rid = data.draw(st.sampled_from(self._on(DEVICE)))
        seqs = self.requests[rid]["seqs"]
        if not seqs:
            return
        sid = data.draw(st.sampled_from(sorted(seqs)))
        if self.bm.can_append_slots({sid: seqs[sid] + 1}):
            shared_before = self.bm.block_table(sid)[:-1]
            copied = self.bm.append_slot(sid, seqs[sid] + 1)
            seqs[sid] += 1
            table = self.bm.block_table(sid)
            assert len(table) == -(-seqs[sid] // BLOCK)
            assert table[: len(shared_before)] == shared_before  # only the last block may change
            if copied:
                assert copied[1] == table[-1] and copied[0] != copied[1]

    @precondition(lambda self: self._on(DEVICE))
    @rule(data=st.data())
    def fork(self, data):
        rid = data.draw(st.sampled_from(self._on(DEVICE)))
        seqs = self.requests[rid]["seqs"]
        if seqs:
            parent = data.draw(st.sampled_from(sorted(seqs)))
            child = self._new_id()
            self.bm.fork(parent, child)
            seqs[child] = seqs[parent]
            assert self.bm.block_table(child) == self.bm.block_table(parent)

    @precondition(lambda self: self.requests)
    @rule(data=st.data())
    def free_seq(self, data):
        rid = data.draw(st.sampled_from(sorted(self.requests)))
        seqs = self.requests[rid]["seqs"]
        if seqs:
            sid = data.draw(st.sampled_from(sorted(seqs)))
            self.bm.free(sid)
            del seqs[sid]

    @precondition(lambda self: self.requests)
    @rule(data=st.data())
    def finish_request(self, data):
        rid = data.draw(st.sampled_from(sorted(self.requests)))
        for sid in self.requests.pop(rid)["seqs"]:
            self.bm.free(sid)
        self.bm.free_cross(rid)

    @precondition(lambda self: self._on(DEVICE))
    @rule(data=st.data())
    def swap_out(self, data):
        rid = data.draw(st.sampled_from(self._on(DEVICE)))
        seq_ids = sorted(self.requests[rid]["seqs"])
        if self.bm.can_swap_out(rid, seq_ids):
            before = {s: list(self.bm.block_table(s)) for s in seq_ids}
            pairs = dict(self.bm.swap_out(rid, seq_ids))
            for s in seq_ids:  # every block moved, shared blocks to one place
                assert self.bm.block_table(s) == [pairs[b] for b in before[s]]
            self.requests[rid]["device"] = CPU

    @precondition(lambda self: self._on(CPU))
    @rule(data=st.data())
    def swap_in(self, data):
        rid = data.draw(st.sampled_from(self._on(CPU)))
        seq_ids = sorted(self.requests[rid]["seqs"])
        if self.bm.can_swap_in(rid, seq_ids):
            self.bm.swap_in(rid, seq_ids)
            self.requests[rid]["device"] = DEVICE

    @rule()
    def reset(self):
        self.bm.reset()
        self.requests.clear()
        self.all_free()

    @invariant()
    def counts_add_up(self):
        for device in (DEVICE, CPU):
            pool = self.bm.pools[device]
            used = sum(1 for c in pool.ref_counts if c > 0)
            assert pool.num_free + used == pool.num_blocks
            assert len(pool.free_blocks) == pool.num_free
            assert all(pool.ref_counts[b] == 0 for b in pool.free_blocks)

    @invariant()
    def refcounts_match_owners(self):
        refs = {DEVICE: Counter(), CPU: Counter()}
        for table in [*self.bm.self_tables.values(), *self.bm.cross_tables.values()]:
            refs[table.device].update(table.blocks)
        for device, counter in refs.items():
            ref_counts = self.bm.pools[device].ref_counts
            assert all(ref_counts[b] == n for b, n in counter.items())  # shared only with a count
            assert sum(ref_counts) == sum(counter.values())

    def teardown(self):
        for rid, state in list(self.requests.items()):
            for sid in state["seqs"]:
                self.bm.free(sid)
            self.bm.free_cross(rid)
        self.all_free()

    def all_free(self):
        for device in (DEVICE, CPU):
            assert self.bm.num_free(device) == self.bm.num_total(device)
        assert not self.bm.self_tables and not self.bm.cross_tables


TestBlockAccounting = BlockAccounting.TestCase
TestBlockAccounting.settings = settings(max_examples=300, stateful_step_count=40, deadline=None)


def test_fork_shares_then_copies_on_write():
    bm = BlockManager(4, num_device_blocks=10, num_cpu_blocks=0, watermark=0.0)
    bm.allocate("r", num_encoder_tokens=9, seqs={1: 6})  # cross: 3 blocks, self: 2 blocks
    cross = list(bm.cross_block_table("r"))
    bm.fork(1, 2)
    assert bm.block_table(1) == bm.block_table(2) and bm.num_free() == 5
    # Both write token 7, inside the shared second block: the first writer copies it.
    copied = bm.append_slot(1, 7)
    assert copied == (bm.block_table(2)[1], bm.block_table(1)[1])
    assert bm.append_slot(2, 7) is None  # now the sole owner: writes in place
    assert bm.block_table(1)[0] == bm.block_table(2)[0]  # the full first block stays shared
    assert bm.cross_block_table("r") == cross and bm.num_free() == 4


def test_fork_at_block_boundary_needs_no_copy():
    bm = BlockManager(4, num_device_blocks=10, num_cpu_blocks=0, watermark=0.0)
    bm.allocate("r", 4, {1: 8})
    bm.fork(1, 2)
    assert bm.append_slot(1, 9) is None and bm.append_slot(2, 9) is None
    assert bm.block_table(1)[:2] == bm.block_table(2)[:2] and bm.block_table(1)[2] != bm.block_table(2)[2]


def test_can_allocate_never_and_later():
    bm = BlockManager(4, num_device_blocks=10, num_cpu_blocks=0, watermark=0.0)
    assert bm.can_allocate(40, [4]) is AllocStatus.NEVER
    bm.allocate("a", 16, {1: 16})  # 8 blocks
    assert bm.can_allocate(8, [4]) is AllocStatus.LATER
    bm.free(1)
    bm.free_cross("a")
    assert bm.can_allocate(8, [4]) is AllocStatus.OK
