/* Shared between the emulator's C files only; nothing here is exported (the library is built with
 * hidden visibility by default). */
#ifndef ACCEL_EMU_TABLES_H
#define ACCEL_EMU_TABLES_H

#define EMU_MAX_DEVICES 256
#define EMU_UUID_TEXT 41          /* "GPU-" + 36 characters of UUID + NUL */

typedef struct { int code; const char *name; const char *text; } errdesc_t;

/* emu_tables.c */
const errdesc_t *emu_rt_error(int code);   /* NULL for an unknown code */
const errdesc_t *emu_drv_error(int code);
int emu_pci_bus(int phys);
int emu_device_attr(int attr, int phys, int *v);  /* -1: unknown attribute */

/* emu_visible.c */
void emu_uuid(int phys, unsigned char out[16]);
/* The physical devices CUDA_VISIBLE_DEVICES (var, NULL when unset) shows, in order, into phys;
 * returns their count, -1 when out of memory. */
int emu_visible_devices(const char *var, int nphys, int *phys);

/* emu_core.c: the number of physical devices, -1 when the configuration is invalid. */
int emu_physical_devices(void);

#endif
