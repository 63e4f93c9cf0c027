/* Shared between the emulator's C files only; nothing here is exported (the library is built with
 * hidden visibility by default). */
#ifndef ACCEL_EMU_TABLES_H
#define ACCEL_EMU_TABLES_H

#define EMU_MAX_DEVICES 256
/* The most devices a configuration may give (ACCEL_EMU_DEVICES, a machine of ACCEL_EMU_PROFILE): torch's device
 * index is 8 bits (c10::DeviceIndex), and its device count asserts "Too many CUDA devices, DeviceIndex
 * overflowed" past 127, so a 128th device could be counted but not used. */
#define EMU_DEVICE_LIMIT 127
#define EMU_UUID_TEXT 41          /* "GPU-" + 36 characters of UUID + NUL */

typedef struct { int code; const char *name; const char *text; } errdesc_t;

/* emu_tables.c */
const errdesc_t *emu_rt_error(int code);   /* NULL for an unknown code */
const errdesc_t *emu_drv_error(int code);
int emu_pci_bus(int phys);
int emu_device_attr(int attr, int phys, int *v);  /* -1: unknown attribute */

/* emu_profiles.c: the kind of board an emulated device is (one row of a small table). */
typedef struct {
    const char *key;                /* ACCEL_EMU_PROFILE's name for it: "h100" */
    const char *name;               /* the board's name as the driver reports it */
    int major, minor, sms;
    unsigned long long memory;      /* bytes (nominal) */
    int clock_khz, mem_clock_khz, bus_width, l2, persisting_l2;
    int threads_per_sm, blocks_per_sm, smem_per_sm, smem_optin, smem_reserved;
    int copy_engines, fp64_ratio;   /* asyncEngineCount, single- to double-precision throughput */
    unsigned pci_device, pci_subsystem;
    int nvml_arch, nvml_brand, cores_per_sm, power_limit_w, pcie_gen, mig;
} emu_profile_t;

const emu_profile_t *emu_profile(int phys);                     /* the physical device's row */
const emu_profile_t *emu_profile_find(const char *key, size_t len); /* NULL: no such profile */
const emu_profile_t *emu_profile_at(int i);                     /* the i-th row, NULL past the end */
void emu_profiles_set(const emu_profile_t *const *rows, int n); /* rows[phys] for phys < n */
int emu_profiles_parse(const char *spec, const emu_profile_t **rows);

/* emu_visible.c */
void emu_uuid(int phys, unsigned char out[16]);
void emu_uuid_text(int phys, char out[EMU_UUID_TEXT]);          /* GPU-xxxxxxxx-... */
/* The physical devices CUDA_VISIBLE_DEVICES (var, NULL when unset) shows, in order, into phys;
 * returns their count, -1 when out of memory. */
int emu_visible_devices(const char *var, int nphys, int *phys);

/* emu_core.c: the number of physical devices, -1 when the configuration is invalid. */
int emu_physical_devices(void);

#endif
