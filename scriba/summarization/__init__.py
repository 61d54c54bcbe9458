"""Long text to short text: summarize(), its levels (pieces summarized, then their summaries),
transcript sections and the result. Runs on the shared engine loops (runtime/)."""

# The summarizer used when none is named (written here, imported by every surface: the package
# imports nothing, so the CLI can show it in --help without loading torch).
DEFAULT_SUMMARIZER = "facebook/bart-large-cnn"
