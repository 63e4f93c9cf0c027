/* Emulator state that the stand-in layers (emu_standin.c: the libcudart.so.13 exports the emulator
 * does not implement itself; emu_driver.c: the driver API behind the libcuda.so.1 stand-in) share
 * with emu.c.  Hidden like everything not marked EXPORT; include after emu.c's typedefs or with
 * EMU_INTERNAL_TYPES defined. */
#ifndef ACCEL_EMU_INTERNAL_H
#define ACCEL_EMU_INTERNAL_H

#include <stdatomic.h>
#include <stddef.h>
#include "emu_tables.h"

#define EMU_CUDA_VERSION 13000      /* the runtime and driver version the emulator reports */

/* emu.c (set once by its initialisation, which every exported runtime call runs first) */
extern int g_ndev;                              /* visible devices */
extern int g_phys[EMU_MAX_DEVICES];             /* visible ordinal -> physical device */
extern atomic_int g_ctx[EMU_MAX_DEVICES];       /* the device's primary context is active */
extern __thread int t_last;                     /* the calling thread's last runtime error */

/* emu_props.c: writes the whole cudaDeviceProp (CUDA 13 layout, EMU_PROPS_SIZE bytes) of a physical
 * device whose global memory is `total` bytes. */
#define EMU_PROPS_SIZE 1008
void emu_fill_props(void *out, int phys, size_t total);

/* emu_driver.c: the driver entry point `name` in the ABI of CUDA `version` as cuGetProcAddress
 * resolves it (NULL when the emulator has none); `per_thread`: the per-thread-default-stream
 * variant was asked for. */
void *emu_driver_proc(const char *name, int version, int per_thread);

/* emu_standin.c: the first call of an unsupported entry point is logged when ACCEL_EMU_TRACE=1. */
void emu_trace_unsupported(const char *name, atomic_int *seen);

#endif
