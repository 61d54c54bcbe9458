"""What people use: the command line (and, later, transcribe/summarize and the web UI)."""
