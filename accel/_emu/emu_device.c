/* Devices of the emulated runtime: the device count, the calling thread's current device
 * (cudaGetDevice/cudaSetDevice: a thread-local read and write, no lock), device-wide
 * synchronisation, primary contexts (active once the runtime made the device current) and the
 * device description (attributes, cudaDeviceProp from emu_props.c, peers, PCI bus ids).  The model
 * is described in emu_core.c. */
#include "emu_runtime.h"

/* ------------------------------------------------------------------ devices */

EXPORT cudaError_t cudaGetDeviceCount(int *count)
{
    RT_ENTER_DEV(cudaGetDeviceCount, cudaErrorUnknown);
    if (!count) return fail(cudaErrorInvalidValue);
    *count = g_ndev;
    return g_ndev ? cudaSuccess : fail(cudaErrorNoDevice);
}

EXPORT cudaError_t cudaGetDevice(int *dev)
{
    RT_ENTER_DEV(cudaGetDevice, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (!dev) return fail(cudaErrorInvalidValue);
    *dev = t_dev;
    return cudaSuccess;
}

EXPORT cudaError_t cudaSetDevice(int dev)
{
    RT_ENTER_DEV(cudaSetDevice, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (dev < 0 || dev >= g_ndev) return fail(cudaErrorInvalidDevice);
    t_dev = dev;
    t_binds++;
    ensure_ctx(dev);
    return cudaSuccess;
}

EXPORT cudaError_t cudaDeviceSynchronize(void)
{
    RT_ENTER(cudaDeviceSynchronize, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (t_in_hostfn) return fail(cudaErrorNotPermitted);
    cudaError_t cerr = capture_unsafe();
    if (cerr) return fail(cerr);
    int dev = t_dev;
    ensure_ctx(dev);
    pthread_mutex_lock(&G);
    cudaError_t err = wait_device_streams(dev, dev + 1);
    pthread_mutex_unlock(&G);
    if (!err) err = emu_sticky(dev);    /* a kernel it waited for faulted */
    return err ? fail(err) : cudaSuccess;
}

EXPORT cudaError_t cudaDeviceGetStreamPriorityRange(int *least, int *greatest)
{
    RT_ENTER(cudaDeviceGetStreamPriorityRange, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (least) *least = PRIO_LEAST;
    if (greatest) *greatest = PRIO_GREATEST;
    return cudaSuccess;
}

/* ------------------------------------------------------------------- limits */

/* cudaLimit 0-6 per device, with the defaults of a real device; a kernel would read them, the emulator
 * only keeps them.  MaxL2FetchGranularity takes 0..128 (a power of two is what a device uses). */
enum { LIMIT_COUNT = 7, LIMIT_L2_FETCH = 5, cudaErrorUnsupportedLimit = 215 };
static const size_t g_limit_default[LIMIT_COUNT] = { 1024, 1048576, 8388608, 2, 2048, 64, 0 };
static size_t g_limits[MAX_DEVICES][LIMIT_COUNT];
static unsigned char g_limits_set[MAX_DEVICES][LIMIT_COUNT];

EXPORT cudaError_t cudaDeviceSetLimit(int limit, size_t value)
{
    RT_ENTER(cudaDeviceSetLimit, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (limit < 0 || limit >= LIMIT_COUNT) return fail(cudaErrorUnsupportedLimit);
    if (limit == LIMIT_L2_FETCH && value > 128) return fail(cudaErrorInvalidValue);
    ensure_ctx(t_dev);
    pthread_mutex_lock(&G);
    g_limits[t_dev][limit] = value;
    g_limits_set[t_dev][limit] = 1;
    pthread_mutex_unlock(&G);
    return cudaSuccess;
}

EXPORT cudaError_t cudaDeviceGetLimit(size_t *value, int limit)
{
    RT_ENTER(cudaDeviceGetLimit, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (!value) return fail(cudaErrorInvalidValue);
    if (limit < 0 || limit >= LIMIT_COUNT) return fail(cudaErrorUnsupportedLimit);
    pthread_mutex_lock(&G);
    *value = g_limits_set[t_dev][limit] ? g_limits[t_dev][limit] : g_limit_default[limit];
    pthread_mutex_unlock(&G);
    return cudaSuccess;
}

/* --------------------------------------------------------- primary contexts */

EXPORT CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
    DRV_ENTER(cuDevicePrimaryCtxGetState);
    if (!flags || !active) return CUDA_ERROR_INVALID_VALUE;
    if (dev < 0 || dev >= g_ndev) return CUDA_ERROR_INVALID_DEVICE;
    *flags = 0;
    *active = atomic_load(&g_ctx[dev]) != 0;
    return CUDA_SUCCESS;
}

EXPORT int accelEmuResetContexts(void)
{
    INIT();
    for (int d = 0; d < MAX_DEVICES; d++) {
        atomic_store(&g_ctx[d], 0);
        emu_sticky_clear(d);
    }
    return 0;
}

/* ----------------------------------------------------- device description */

EXPORT cudaError_t cudaDeviceGetAttribute(int *value, int attr, int dev)
{
    RT_ENTER_DEV(cudaDeviceGetAttribute, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (!value) return fail(cudaErrorInvalidValue);
    if (dev < 0 || dev >= g_ndev) return fail(cudaErrorInvalidDevice);
    int v;
    if (emu_device_attr(attr, g_phys[dev], &v)) return fail(cudaErrorInvalidValue);
    *value = v;
    return cudaSuccess;
}

/* The whole cudaDeviceProp in the CUDA 13 layout (emu_props.c); accel reads only its stable head. */
static cudaError_t get_props(void *p, int dev)
{
    if (!p) return fail(cudaErrorInvalidValue);
    if (dev < 0 || dev >= g_ndev) return fail(cudaErrorInvalidDevice);
    emu_fill_props(p, g_phys[dev], g_mem_total[dev]);
    return cudaSuccess;
}

EXPORT cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *p, int dev)
{
    RT_ENTER_DEV(cudaGetDeviceProperties, cudaErrorUnknown);
    RT_NEED_DEVICE();
    return get_props(p, dev);
}

EXPORT cudaError_t cudaGetDeviceProperties_v2(struct cudaDeviceProp *p, int dev)
{
    RT_ENTER_DEV(cudaGetDeviceProperties_v2, cudaErrorUnknown);
    RT_NEED_DEVICE();
    return get_props(p, dev);
}

EXPORT cudaError_t cudaDeviceCanAccessPeer(int *can, int dev, int peer)
{
    RT_ENTER_DEV(cudaDeviceCanAccessPeer, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (!can) return fail(cudaErrorInvalidValue);
    if (dev < 0 || dev >= g_ndev || peer < 0 || peer >= g_ndev) return fail(cudaErrorInvalidDevice);
    *can = dev != peer;
    return cudaSuccess;
}

EXPORT cudaError_t cudaDeviceGetPCIBusId(char *buf, int len, int dev)
{
    RT_ENTER_DEV(cudaDeviceGetPCIBusId, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (!buf || len <= 0) return fail(cudaErrorInvalidValue);
    if (dev < 0 || dev >= g_ndev) return fail(cudaErrorInvalidDevice);
    snprintf(buf, (size_t)len, "00000000:%02X:00.0", emu_pci_bus(g_phys[dev]));
    return cudaSuccess;
}
