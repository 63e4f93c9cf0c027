/* One device's work waited for by device, whatever the calling thread's current device: what the driver's
 * cuCtxSynchronize_v2 needs for a context that is not current (emu_drvdevice.c).  Hidden. */
#include "emu_runtime.h"

cudaError_t emu_device_synchronize(int dev)
{
    INIT();
    if (g_init_err) return g_init_err;
    if (dev < 0 || dev >= g_ndev) return cudaErrorInvalidDevice;
    if (t_in_hostfn) return cudaErrorNotPermitted;
    cudaError_t err = capture_unsafe();
    if (err) return err;
    pthread_mutex_lock(&G);
    err = wait_device_streams(dev, dev + 1);
    pthread_mutex_unlock(&G);
    return err;
}
