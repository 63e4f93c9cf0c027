"""The pure-Python / ctypes twins of accel._native.  Import through accel._impl, not directly."""
