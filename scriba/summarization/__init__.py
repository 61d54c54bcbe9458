"""Long text to short text: summarize(), its levels (pieces summarized, then their summaries),
transcript sections and the result. Runs on the shared engine loops (runtime/)."""
