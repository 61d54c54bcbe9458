"""The shared engine loops: one Engine per model and settings, driven by a background thread
that every caller's requests join (engine_loop.py), found by `get_loop` (loops.py)."""
