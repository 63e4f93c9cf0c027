"""Cython hot paths.  Import through accel._impl, not directly."""
