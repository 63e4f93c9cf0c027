/* Shared by the emulator's NVML files: emu_nvml.c (init, system, handles, identity, memory, processes),
 * emu_nvml_device.c (utilisation, sensors, power, clocks, PCI, modes), emu_nvml_topology.c
 * (performance states, clock offsets, topology, affinity, the persistence setter) and emu_nvml_events.c
 * (event sets, field values).  The model is described at
 * the top of emu_nvml.c.  Hidden like everything not marked EXPORT. */
#ifndef ACCEL_EMU_NVML_H
#define ACCEL_EMU_NVML_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "emu_internal.h"

#define EXPORT __attribute__((visibility("default")))

#pragma GCC visibility push(hidden)

typedef int nvmlReturn_t;
enum {
    NVML_SUCCESS = 0, NVML_ERROR_UNINITIALIZED = 1, NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3, NVML_ERROR_NOT_FOUND = 6, NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25, NVML_ERROR_UNKNOWN = 999
};

#define DRIVER_VERSION "580.65.06"      /* the Linux driver of CUDA 13.0 (EMU_CUDA_VERSION) */
#define NVML_VERSION "13." DRIVER_VERSION
#define DRIVER_BRANCH "r580_00"
#define NVML_VERSIONED(type, v) ((unsigned)(sizeof(type) | ((v) << 24)))

typedef char nvml_device_t;             /* a handle points into g_devices, at the physical index */
extern nvml_device_t g_nvml_devices[EMU_MAX_DEVICES];
extern int g_nvml_refs;                 /* nvmlInit count minus nvmlShutdown count */

/* ------------------------------------------------------------- structs */

typedef struct { unsigned long long total, free, used; } nvmlMemory_t;
typedef struct { unsigned version; unsigned long long total, reserved, free, used; } nvmlMemory_v2_t;
typedef struct { unsigned gpu, memory; } nvmlUtilization_t;
typedef struct { unsigned version; int sensorType; int temperature; } nvmlTemperature_t;
typedef struct {
    char busIdLegacy[16];
    unsigned domain, bus, device, pciDeviceId, pciSubSystemId;
    char busId[32];
} nvmlPciInfo_t;
typedef struct {
    unsigned version, domain, bus, device, pciDeviceId, pciSubSystemId, baseClass, subClass;
    char busId[32];
} nvmlPciInfoExt_t;
typedef struct { unsigned version; char branch[80]; } nvmlSystemDriverBranchInfo_t;
typedef struct { unsigned pid; unsigned long long usedGpuMemory; } nvmlProcessInfo_v1_t;
typedef struct {
    unsigned pid;
    unsigned long long usedGpuMemory;
    unsigned gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_t;

_Static_assert(sizeof(nvmlMemory_v2_t) == 40, "nvmlMemory_v2_t");
_Static_assert(sizeof(nvmlPciInfo_t) == 68, "nvmlPciInfo_t");
_Static_assert(sizeof(nvmlPciInfoExt_t) == 64, "nvmlPciInfoExt_t");
_Static_assert(sizeof(nvmlTemperature_t) == 12, "nvmlTemperature_t");
_Static_assert(sizeof(nvmlSystemDriverBranchInfo_t) == 84, "nvmlSystemDriverBranchInfo_t");
_Static_assert(sizeof(nvmlProcessInfo_t) == 24, "nvmlProcessInfo_t");

/* ------------------------------------------------------------- helpers */

static inline int ready(void) { return __atomic_load_n(&g_nvml_refs, __ATOMIC_ACQUIRE) > 0; }

/* The physical index of handle h, -1 when h is not a device handle. */
static inline int device_of(const nvml_device_t *h)
{
    uintptr_t i = (uintptr_t)h - (uintptr_t)g_nvml_devices;
    int n = emu_physical_devices();
    return n > 0 && i < (uintptr_t)n ? (int)i : -1;
}

#define ENTER() do { if (!ready()) return NVML_ERROR_UNINITIALIZED; } while (0)
#define DEVICE(h, d) \
    ENTER(); \
    int d = device_of(h); \
    if (d < 0) return NVML_ERROR_INVALID_ARGUMENT

/* The visible ordinal of physical device d in this process, -1 when CUDA_VISIBLE_DEVICES hides it. */
static inline int visible_of(int d)
{
    for (int v = 0; v < g_ndev; v++)
        if (g_phys[v] == d) return v;
    return -1;
}

static inline unsigned long long used_of(int d)
{
    int v = visible_of(d);
    return v < 0 ? 0 : emu_mem_used(v);
}

static inline nvmlReturn_t put_string(char *out, unsigned length, const char *s)
{
    if (!out) return NVML_ERROR_INVALID_ARGUMENT;
    if (strlen(s) + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
    memcpy(out, s, strlen(s) + 1);
    return NVML_SUCCESS;
}

static inline void bus_id(int d, char *out, size_t len, int domain_digits)
{
    snprintf(out, len, "%0*X:%02X:00.0", domain_digits, 0, emu_pci_bus(d));
}

#define TEMPERATURE_C 34                /* every device's temperature */

#pragma GCC visibility pop

#endif
