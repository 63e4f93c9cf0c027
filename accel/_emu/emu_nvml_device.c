/* NVML of the emulated machine, second half: utilisation, sensors, power, clocks, PCI and modes (the
 * model is described at the top of emu_nvml.c). */
#include "emu_nvml.h"

/* ------------------------------------------------ utilisation, sensors */

EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvml_device_t *h, nvmlUtilization_t *u)
{
    if (EMU_FAULT(nvmlDeviceGetUtilizationRates)) return NVML_ERROR_UNKNOWN;
    DEVICE(h, d);
    (void)d;
    if (!u) return NVML_ERROR_INVALID_ARGUMENT;
    u->gpu = 0;
    u->memory = 0;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvml_device_t *h, int sensor, unsigned *temp)
{
    if (EMU_FAULT(nvmlDeviceGetTemperature)) return NVML_ERROR_UNKNOWN;
    DEVICE(h, d);
    (void)d;
    if (sensor != 0 || !temp) return NVML_ERROR_INVALID_ARGUMENT;    /* NVML_TEMPERATURE_GPU only */
    *temp = TEMPERATURE_C;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetTemperatureV(nvml_device_t *h, nvmlTemperature_t *t)
{
    if (EMU_FAULT(nvmlDeviceGetTemperatureV)) return NVML_ERROR_UNKNOWN;
    DEVICE(h, d);
    (void)d;
    if (!t) return NVML_ERROR_INVALID_ARGUMENT;
    if (t->version != NVML_VERSIONED(nvmlTemperature_t, 1)) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    if (t->sensorType != 0) return NVML_ERROR_INVALID_ARGUMENT;
    t->temperature = TEMPERATURE_C;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvml_device_t *h, unsigned *mw)
{
    if (EMU_FAULT(nvmlDeviceGetPowerUsage)) return NVML_ERROR_UNKNOWN;
    DEVICE(h, d);
    if (!mw) return NVML_ERROR_INVALID_ARGUMENT;
    *mw = (unsigned)emu_profile(d)->power_limit_w * 120;    /* 12 % of the limit, in mW */
    return NVML_SUCCESS;
}

static nvmlReturn_t power_limit(nvml_device_t *h, unsigned *mw)
{
    DEVICE(h, d);
    if (!mw) return NVML_ERROR_INVALID_ARGUMENT;
    *mw = (unsigned)emu_profile(d)->power_limit_w * 1000;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetPowerManagementLimit(nvml_device_t *h, unsigned *mw)
{
    if (EMU_FAULT(nvmlDeviceGetPowerManagementLimit)) return NVML_ERROR_UNKNOWN;
    return power_limit(h, mw);
}
EXPORT nvmlReturn_t nvmlDeviceGetPowerManagementDefaultLimit(nvml_device_t *h, unsigned *mw)
{
    if (EMU_FAULT(nvmlDeviceGetPowerManagementDefaultLimit)) return NVML_ERROR_UNKNOWN;
    return power_limit(h, mw);
}
EXPORT nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvml_device_t *h, unsigned *mw)
{
    if (EMU_FAULT(nvmlDeviceGetEnforcedPowerLimit)) return NVML_ERROR_UNKNOWN;
    return power_limit(h, mw);
}

EXPORT nvmlReturn_t nvmlDeviceGetFanSpeed(nvml_device_t *h, unsigned *speed)
{
    if (EMU_FAULT(nvmlDeviceGetFanSpeed)) return NVML_ERROR_UNKNOWN;
    DEVICE(h, d);
    (void)d;
    if (!speed) return NVML_ERROR_INVALID_ARGUMENT;
    return NVML_ERROR_NOT_SUPPORTED;    /* passively cooled boards */
}

EXPORT nvmlReturn_t nvmlDeviceGetNumFans(nvml_device_t *h, unsigned *n)
{
    if (EMU_FAULT(nvmlDeviceGetNumFans)) return NVML_ERROR_UNKNOWN;
    DEVICE(h, d);
    (void)d;
    if (!n) return NVML_ERROR_INVALID_ARGUMENT;
    *n = 0;
    return NVML_SUCCESS;
}

/* --------------------------------------------------------------- clocks */

/* NVML_CLOCK_GRAPHICS, _SM, _MEM, _VIDEO in MHz; -1 for another type.  Video runs at 8/9 of graphics. */
static int clock_mhz(int d, int type)
{
    const emu_profile_t *p = emu_profile(d);
    switch (type) {
    case 0: case 1: return p->clock_khz / 1000;
    case 2: return p->mem_clock_khz / 1000;
    case 3: return p->clock_khz / 1000 * 8 / 9;
    default: return -1;
    }
}

static nvmlReturn_t clock_of(nvml_device_t *h, int type, unsigned *mhz)
{
    DEVICE(h, d);
    int c = clock_mhz(d, type);
    if (c < 0 || !mhz) return NVML_ERROR_INVALID_ARGUMENT;
    *mhz = (unsigned)c;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetClockInfo(nvml_device_t *h, int type, unsigned *mhz)
{
    if (EMU_FAULT(nvmlDeviceGetClockInfo)) return NVML_ERROR_UNKNOWN;
    return clock_of(h, type, mhz);
}
EXPORT nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvml_device_t *h, int type, unsigned *mhz)
{
    if (EMU_FAULT(nvmlDeviceGetMaxClockInfo)) return NVML_ERROR_UNKNOWN;
    return clock_of(h, type, mhz);
}

EXPORT nvmlReturn_t nvmlDeviceGetClock(nvml_device_t *h, int type, int id, unsigned *mhz)
{
    if (EMU_FAULT(nvmlDeviceGetClock)) return NVML_ERROR_UNKNOWN;
    ENTER();
    if (device_of(h) >= 0 && (id < 0 || id > 3)) return NVML_ERROR_INVALID_ARGUMENT;
    return clock_of(h, type, mhz);      /* every clock id (current, application, boost) reads the same */
}

EXPORT nvmlReturn_t nvmlDeviceGetPerformanceState(nvml_device_t *h, int *pstate)
{
    if (EMU_FAULT(nvmlDeviceGetPerformanceState)) return NVML_ERROR_UNKNOWN;
    DEVICE(h, d);
    (void)d;
    if (!pstate) return NVML_ERROR_INVALID_ARGUMENT;
    *pstate = 0;                        /* P0 */
    return NVML_SUCCESS;
}

static nvmlReturn_t event_reasons(nvml_device_t *h, unsigned long long *reasons, unsigned long long value)
{
    DEVICE(h, d);
    (void)d;
    if (!reasons) return NVML_ERROR_INVALID_ARGUMENT;
    *reasons = value;
    return NVML_SUCCESS;
}

/* Current: GPU idle (nvmlClocksEventReasonGpuIdle); supported: the ones a data-center board reports. */
EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvml_device_t *h, unsigned long long *r)
{
    if (EMU_FAULT(nvmlDeviceGetCurrentClocksEventReasons)) return NVML_ERROR_UNKNOWN;
    return event_reasons(h, r, 0x1ull);
}

EXPORT nvmlReturn_t nvmlDeviceGetSupportedClocksEventReasons(nvml_device_t *h, unsigned long long *r)
{
    if (EMU_FAULT(nvmlDeviceGetSupportedClocksEventReasons)) return NVML_ERROR_UNKNOWN;
    return event_reasons(h, r, 0x1ffull);
}

/* ------------------------------------------------------------------ PCI */

EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvml_device_t *h, nvmlPciInfo_t *pci)
{
    if (EMU_FAULT(nvmlDeviceGetPciInfo_v3)) return NVML_ERROR_UNKNOWN;
    DEVICE(h, d);
    if (!pci) return NVML_ERROR_INVALID_ARGUMENT;
    const emu_profile_t *p = emu_profile(d);
    memset(pci, 0, sizeof *pci);
    bus_id(d, pci->busIdLegacy, sizeof pci->busIdLegacy, 4);
    bus_id(d, pci->busId, sizeof pci->busId, 8);
    pci->bus = (unsigned)emu_pci_bus(d);
    pci->pciDeviceId = p->pci_device << 16 | 0x10de;
    pci->pciSubSystemId = p->pci_subsystem << 16 | 0x10de;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetPciInfoExt(nvml_device_t *h, nvmlPciInfoExt_t *pci)
{
    if (EMU_FAULT(nvmlDeviceGetPciInfoExt)) return NVML_ERROR_UNKNOWN;
    DEVICE(h, d);
    if (!pci) return NVML_ERROR_INVALID_ARGUMENT;
    if (pci->version != NVML_VERSIONED(nvmlPciInfoExt_t, 1)) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    const emu_profile_t *p = emu_profile(d);
    unsigned version = pci->version;
    memset(pci, 0, sizeof *pci);
    pci->version = version;
    pci->bus = (unsigned)emu_pci_bus(d);
    pci->pciDeviceId = p->pci_device << 16 | 0x10de;
    pci->pciSubSystemId = p->pci_subsystem << 16 | 0x10de;
    pci->baseClass = 0x03;              /* display controller */
    pci->subClass = 0x02;               /* 3D controller */
    bus_id(d, pci->busId, sizeof pci->busId, 8);
    return NVML_SUCCESS;
}

static nvmlReturn_t pcie(nvml_device_t *h, unsigned *out, int width)
{
    DEVICE(h, d);
    if (!out) return NVML_ERROR_INVALID_ARGUMENT;
    *out = width ? 16u : (unsigned)emu_profile(d)->pcie_gen;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(nvml_device_t *h, unsigned *g)
{
    if (EMU_FAULT(nvmlDeviceGetCurrPcieLinkGeneration)) return NVML_ERROR_UNKNOWN;
    return pcie(h, g, 0);
}
EXPORT nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(nvml_device_t *h, unsigned *g)
{
    if (EMU_FAULT(nvmlDeviceGetMaxPcieLinkGeneration)) return NVML_ERROR_UNKNOWN;
    return pcie(h, g, 0);
}
EXPORT nvmlReturn_t nvmlDeviceGetGpuMaxPcieLinkGeneration(nvml_device_t *h, unsigned *g)
{
    if (EMU_FAULT(nvmlDeviceGetGpuMaxPcieLinkGeneration)) return NVML_ERROR_UNKNOWN;
    return pcie(h, g, 0);
}
EXPORT nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(nvml_device_t *h, unsigned *w)
{
    if (EMU_FAULT(nvmlDeviceGetCurrPcieLinkWidth)) return NVML_ERROR_UNKNOWN;
    return pcie(h, w, 1);
}
EXPORT nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(nvml_device_t *h, unsigned *w)
{
    if (EMU_FAULT(nvmlDeviceGetMaxPcieLinkWidth)) return NVML_ERROR_UNKNOWN;
    return pcie(h, w, 1);
}

/* ---------------------------------------------------------------- modes */

static nvmlReturn_t mode(nvml_device_t *h, int *out, int value)
{
    DEVICE(h, d);
    (void)d;
    if (!out) return NVML_ERROR_INVALID_ARGUMENT;
    *out = value;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetComputeMode(nvml_device_t *h, int *m)
{
    if (EMU_FAULT(nvmlDeviceGetComputeMode)) return NVML_ERROR_UNKNOWN;
    return mode(h, m, 0); /* DEFAULT */
}
EXPORT nvmlReturn_t nvmlDeviceGetPersistenceMode(nvml_device_t *h, int *m)
{
    if (EMU_FAULT(nvmlDeviceGetPersistenceMode)) return NVML_ERROR_UNKNOWN;
    return mode(h, m, 1);
}
EXPORT nvmlReturn_t nvmlDeviceGetDisplayMode(nvml_device_t *h, int *m)
{
    if (EMU_FAULT(nvmlDeviceGetDisplayMode)) return NVML_ERROR_UNKNOWN;
    return mode(h, m, 0);
}
EXPORT nvmlReturn_t nvmlDeviceGetDisplayActive(nvml_device_t *h, int *m)
{
    if (EMU_FAULT(nvmlDeviceGetDisplayActive)) return NVML_ERROR_UNKNOWN;
    return mode(h, m, 0);
}
EXPORT nvmlReturn_t nvmlDeviceIsMigDeviceHandle(nvml_device_t *h, unsigned *is_mig)
{
    if (EMU_FAULT(nvmlDeviceIsMigDeviceHandle)) return NVML_ERROR_UNKNOWN;
    return mode(h, (int *)is_mig, 0);
}

EXPORT nvmlReturn_t nvmlDeviceGetEccMode(nvml_device_t *h, int *current, int *pending)
{
    if (EMU_FAULT(nvmlDeviceGetEccMode)) return NVML_ERROR_UNKNOWN;
    DEVICE(h, d);
    (void)d;
    if (!current || !pending) return NVML_ERROR_INVALID_ARGUMENT;
    *current = *pending = 1;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvml_device_t *h, unsigned *current, unsigned *pending)
{
    if (EMU_FAULT(nvmlDeviceGetMigMode)) return NVML_ERROR_UNKNOWN;
    DEVICE(h, d);
    if (!current || !pending) return NVML_ERROR_INVALID_ARGUMENT;
    if (!emu_profile(d)->mig) return NVML_ERROR_NOT_SUPPORTED;
    *current = *pending = 0;            /* NVML_DEVICE_MIG_DISABLE */
    return NVML_SUCCESS;
}

/* --------------------------------------------- what cuda.core's system.Device reads besides */

EXPORT nvmlReturn_t nvmlDeviceGetModuleId(nvml_device_t *h, unsigned *id)
{
    if (EMU_FAULT(nvmlDeviceGetModuleId)) return NVML_ERROR_UNKNOWN;
    DEVICE(h, d);
    if (!id) return NVML_ERROR_INVALID_ARGUMENT;
    *id = (unsigned)d + 1;              /* the board's slot, counted from 1 */
    return NVML_SUCCESS;
}

/* Not a NUMA-attached GPU (cudaDevAttrNumaConfig is 0). */
EXPORT nvmlReturn_t nvmlDeviceGetNumaNodeId(nvml_device_t *h, unsigned *node)
{
    if (EMU_FAULT(nvmlDeviceGetNumaNodeId)) return NVML_ERROR_UNKNOWN;
    DEVICE(h, d);
    (void)d;
    if (!node) return NVML_ERROR_INVALID_ARGUMENT;
    return NVML_ERROR_NOT_SUPPORTED;
}

/* Data-center boards have no auto boost setting. */
EXPORT nvmlReturn_t nvmlDeviceGetAutoBoostedClocksEnabled(nvml_device_t *h, int *enabled, int *default_enabled)
{
    if (EMU_FAULT(nvmlDeviceGetAutoBoostedClocksEnabled)) return NVML_ERROR_UNKNOWN;
    DEVICE(h, d);
    (void)d;
    if (!enabled || !default_enabled) return NVML_ERROR_INVALID_ARGUMENT;
    return NVML_ERROR_NOT_SUPPORTED;
}

EXPORT nvmlReturn_t nvmlDeviceGetMaxCustomerBoostClock(nvml_device_t *h, int type, unsigned *mhz)
{
    if (EMU_FAULT(nvmlDeviceGetMaxCustomerBoostClock)) return NVML_ERROR_UNKNOWN;
    return clock_of(h, type, mhz);
}

/* P0 only: from a quarter of the maximum (memory: its one speed) to the maximum. */
EXPORT nvmlReturn_t nvmlDeviceGetMinMaxClockOfPState(nvml_device_t *h, int type, int pstate, unsigned *min,
                                                     unsigned *max)
{
    if (EMU_FAULT(nvmlDeviceGetMinMaxClockOfPState)) return NVML_ERROR_UNKNOWN;
    DEVICE(h, d);
    int c = clock_mhz(d, type);
    if (c < 0 || !min || !max) return NVML_ERROR_INVALID_ARGUMENT;
    if (pstate != 0) return NVML_ERROR_NOT_SUPPORTED;
    *min = (unsigned)(type == 2 ? c : c / 4);
    *max = (unsigned)c;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetPcieReplayCounter(nvml_device_t *h, unsigned *count)
{
    if (EMU_FAULT(nvmlDeviceGetPcieReplayCounter)) return NVML_ERROR_UNKNOWN;
    DEVICE(h, d);
    (void)d;
    if (!count) return NVML_ERROR_INVALID_ARGUMENT;
    *count = 0;
    return NVML_SUCCESS;
}

/* NVML_PCIE_UTIL_TX_BYTES / RX_BYTES in KB/s: nothing moves over a bus. */
EXPORT nvmlReturn_t nvmlDeviceGetPcieThroughput(nvml_device_t *h, int counter, unsigned *kbps)
{
    if (EMU_FAULT(nvmlDeviceGetPcieThroughput)) return NVML_ERROR_UNKNOWN;
    DEVICE(h, d);
    (void)d;
    if ((counter != 0 && counter != 1) || !kbps) return NVML_ERROR_INVALID_ARGUMENT;
    *kbps = 0;
    return NVML_SUCCESS;
}

typedef struct { unsigned version; int marginTemperature; } nvmlMarginTemperature_t;

/* Degrees below the slowdown threshold (87 C on these boards' data sheets' class). */
EXPORT nvmlReturn_t nvmlDeviceGetMarginTemperature(nvml_device_t *h, nvmlMarginTemperature_t *margin)
{
    if (EMU_FAULT(nvmlDeviceGetMarginTemperature)) return NVML_ERROR_UNKNOWN;
    DEVICE(h, d);
    (void)d;
    if (!margin) return NVML_ERROR_INVALID_ARGUMENT;
    if (margin->version != NVML_VERSIONED(nvmlMarginTemperature_t, 1)) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    margin->marginTemperature = 87 - TEMPERATURE_C;
    return NVML_SUCCESS;
}

/* MIG is disabled on every emulated board: no MIG devices. */
EXPORT nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvml_device_t *h, unsigned *count)
{
    if (EMU_FAULT(nvmlDeviceGetMaxMigDeviceCount)) return NVML_ERROR_UNKNOWN;
    DEVICE(h, d);
    (void)d;
    if (!count) return NVML_ERROR_INVALID_ARGUMENT;
    *count = 0;
    return NVML_SUCCESS;
}

/* Every pair of distinct devices is peer-capable (cudaDeviceCanAccessPeer says so): NVML_P2P_STATUS_OK;
 * a device with itself: NVML_P2P_STATUS_NOT_SUPPORTED.  Capability indices 0..5 (read .. unknown). */
EXPORT nvmlReturn_t nvmlDeviceGetP2PStatus(nvml_device_t *h1, nvml_device_t *h2, int index, int *status)
{
    if (EMU_FAULT(nvmlDeviceGetP2PStatus)) return NVML_ERROR_UNKNOWN;
    ENTER();
    int d1 = device_of(h1), d2 = device_of(h2);
    if (d1 < 0 || d2 < 0 || index < 0 || index > 5 || !status) return NVML_ERROR_INVALID_ARGUMENT;
    *status = d1 == d2 ? 5 : 0;
    return NVML_SUCCESS;
}
