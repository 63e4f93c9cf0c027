/* emu_props12.c: cudaDeviceProp in the CUDA 12 layout, for the libcudart.so.12 stand-in. */
#ifndef ACCEL_EMU_PROPS12_H
#define ACCEL_EMU_PROPS12_H

struct emu_device_prop;

#define EMU_PROPS12_SIZE 1032       /* sizeof(cudaDeviceProp) in CUDA 12 */

/* Writes the whole CUDA 12 cudaDeviceProp of device `dev` (EMU_PROPS12_SIZE bytes) from its CUDA 13
 * properties `p`; the fields CUDA 13 removed come from attr(&value, cudaDeviceAttr code, dev), a
 * cudaDeviceGetAttribute.  Returns 0, or attr's first error with nothing written. */
int emu_props12(void *out, const struct emu_device_prop *p, int (*attr)(int *value, int code, int dev), int dev);

#endif
