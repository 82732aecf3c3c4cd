"""Training on the tasks, the saved-model format and the trained models."""
