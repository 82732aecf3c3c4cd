"""The engine's runtime, its lowest layer: the device, the one engine thread, TensorFlow's patches and the traced
model functions. It imports no other part of the engine."""
