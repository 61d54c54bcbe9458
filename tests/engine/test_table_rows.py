"""TableRows keeps decode block tables as padded rows between steps, rewriting only what
changed. Oracle: the padded array rebuilt from the lists every step."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from scriba.engine.table_rows import TableRows


def rebuilt(tables):
    out = np.zeros((len(tables), max(map(len, tables))), dtype=np.int32)
    for row, table in zip(out, tables):
        row[: len(table)] = table
    return out


# Per step and per sequence (of 12): 0 absent, 1 unchanged, 2 grows a block, 3 last block replaced,
# 4 whole table replaced (only legal after an absence: a swap-in).
events = st.lists(st.lists(st.integers(0, 4), min_size=12, max_size=12), min_size=1, max_size=30)


@settings(max_examples=60, deadline=None)
@given(events, st.integers(0, 2**31 - 1))
def test_gathered_rows_equal_the_rebuilt_tables(steps, seed):
    rng = np.random.default_rng(seed)
    tables = {k: [int(rng.integers(1000))] for k in range(12)}
    present = {k: False for k in tables}
    rows = TableRows(rows=2, width=1)  # small: rows and width must grow
    for step in steps:
        keys = []
        for key, event in enumerate(step):
            table = tables[key]
            if event == 0:
                present[key] = False
                continue
            if event == 2:
                table.append(int(rng.integers(1000)))
            elif event == 3:
                table[-1] = int(rng.integers(1000))
            elif event == 4 and not present[key]:
                tables[key] = [int(b) for b in rng.integers(1000, size=len(table))]
            present[key] = True
            keys.append(key)
        order = list(rng.permutation(keys)) + keys[:1]  # any order; a key may repeat (shared cross table)
        got = rows.gather(order, [tables[k] for k in order])  # every step, empty ones too
        if order:
            np.testing.assert_array_equal(got, rebuilt([tables[k] for k in order]))
        else:
            assert got.shape[0] == 0 and not rows.row_of
