"""What people use: transcribe(), the writers, the command line."""
