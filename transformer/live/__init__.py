"""Running the model live: the configuration, its inputs, the model cache and engine thread, run_live."""
