"""The CPU encoder backend (EngineConfig's encoder_runtime="openvino"): an audio model's encoder
rebuilt as one OpenVINO graph of the same weights (graph.py) and run by OpenVINO (runtime.py), in
the precision this CPU runs fastest, timed once per machine (precision.py); with
encoder_padding="cached" a window's padding past its audio taken from one silent window's values
(cached_padding.py), that window kept on disk (silent_window.py)."""
