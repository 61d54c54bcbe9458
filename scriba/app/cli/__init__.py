"""The `scriba` command (main.py) and its engine options (engine_options.py)."""
