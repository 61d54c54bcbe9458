"""The sample rate speech models take: every file is decoded and resampled to it."""

SAMPLE_RATE = 16000
