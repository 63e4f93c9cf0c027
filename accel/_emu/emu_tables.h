/* Shared between emu.c and emu_tables.c only; nothing here is exported
 * (the library is built with hidden visibility by default). */
#ifndef ACCEL_EMU_TABLES_H
#define ACCEL_EMU_TABLES_H

typedef struct { int code; const char *name; const char *text; } errdesc_t;

const errdesc_t *emu_rt_error(int code);   /* NULL for an unknown code */
const errdesc_t *emu_drv_error(int code);
int emu_pci_bus(int dev);
int emu_device_attr(int attr, int dev, int *v);  /* -1: unknown attribute */

#endif
