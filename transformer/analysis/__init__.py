"""Measures of attention maps, the cost of attention, position views and the Keras reference."""
