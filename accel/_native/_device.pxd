# C-level API of accel._native._device for the other native modules (streams, events).  torch's
# c10::cuda semantics (reference/torch_device_stream.md §2): a per-thread *target* device that a guard's
# exit records instead of calling cudaSetDevice when that device has no primary context yet.
# Every function runs the lazy-init hook first if CUDA is not initialized.

cdef int c_get_device() except -1                 # GetDevice: the pending target, else cudaGetDevice
cdef int c_set_device(int d, bint force) except -1  # SetDevice(d, force) §2.6 (clears the target once set;
                                                  # a failed call leaves the runtime device and target as they were)
cdef int c_maybe_set_device(int d) except -1      # MaybeSetDevice §2.8 as an internal guard's exit (c10's
                                                  # CUDAGuard destructor): a failure records d as the target
                                                  # and is a RuntimeWarning, not an exception
cdef int c_restore_device(int d, bint unless_current) except -1  # a stream context's exit: SetDevice(d), or
                                                  # nothing if unless_current and d is the pending target; a
                                                  # failure records d as the target, then raises
cdef int c_exchange_device(int to) except -2      # ExchangeDevice §2.9; returns the logical previous device
cdef int c_maybe_exchange_device(int to) except -2  # MaybeExchangeDevice §2.10; returns the runtime device
cdef int c_set_target_device() except -1          # SetTargetDevice §2.11: materialise a pending target
cdef bint c_has_primary_context(int d) except -1  # hasPrimaryContext §2.12 (validates 0 <= d < count)
cdef int c_device_count() except -1               # cudaGetDeviceCount, cached once it succeeds; 0 on error
cdef int c_checked_device_count() except -1       # the same, but the CudaError on error
cdef int c_ensure_init() except -1                # run the lazy-init hook if CUDA is not initialized
cdef bint c_uninitialized() noexcept              # a lazy-init hook is set and CUDA is not initialized
                                                  # (never used yet, or a forked child): c_ensure_init
                                                  # would run it
cdef int c_get_sync_debug_mode() noexcept       # 0 default, 1 warn, 2 error (global, not per thread)
cdef int c_warn_or_error_on_sync() except -1      # warn_or_error_on_sync §2.15: call before a synchronizing op

# A device guard's entry / exit for the other native modules' internal guards (a stream's or a buffer's
# device around one CUDA call), inline so that they make no C call of their own: c_enter_device skips the
# switch when the runtime device already is ``d`` and returns the device to restore, or -1 when nothing
# was switched; c_leave_device(orig) restores it (c_maybe_set_device: a failure records the target).
from accel._native._cudart cimport Table, error


cdef inline int c_enter_device(Table* t, int d) except -2:
    cdef int r = 0
    cdef int err = t.cudaGetDevice(&r)
    if err:
        raise error(err)
    if r == d:
        return -1
    return c_exchange_device(d)


cdef inline int c_leave_device(int orig) except -1:
    if orig >= 0:
        c_maybe_set_device(orig)
    return 0
