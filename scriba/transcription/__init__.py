"""Speech to text for whole files: transcribe() and transcribe_stream(), their options and
results, the long-form loop (windows, retries, the language vote, ordering), words, VAD,
progress, the writers and live transcription. Runs on the shared engine loops (runtime/)."""
