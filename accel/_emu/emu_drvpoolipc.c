/* Sharing a stream-ordered pool (libcuda.so.1 stand-in): cuMemPoolExportToShareableHandle /
 * cuMemPoolImportFromShareableHandle and cuMemPoolExportPointer / cuMemPoolImportPointer, what cuda.core's
 * DeviceMemoryResource(ipc_enabled=True) exports.
 *
 * Each process has its own emulated machine, so a pool is shared within the process only, as the
 * emulator's IPC memory handles are: a pool made by cuMemPoolCreate with
 * CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR exports a file descriptor (a new memfd, the caller's to close) that imports back to the same pool
 * here; its allocations export data naming this process and the address.  A descriptor or pointer data of
 * another process is CUDA_ERROR_NOT_SUPPORTED (logged with ACCEL_EMU_TRACE=1); other handle types (fabric,
 * Win32) are CUDA_ERROR_NOT_SUPPORTED too.  Argument errors: CUDA_ERROR_INVALID_VALUE for a NULL pointer,
 * nonzero flags, a pool made without that handle type, a descriptor that is not open, an address outside
 * the pool's allocations. */
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "emu_driver.h"

int cudaMemPoolGetAttribute(void *, int, void *);

enum { HANDLE_POSIX_FD = 1 };
#define EXPORT_MAGIC 0x61636365656d7531ull        /* "accelemu1" */

/* The descriptors exported (by the file they open); an entry goes when its pool is destroyed (dropped
 * at the next export), so that making and destroying shared pools leaves nothing behind. */
typedef struct { CUmemoryPool pool; dev_t dev; ino_t ino; } exported_t;
static pthread_mutex_t S = PTHREAD_MUTEX_INITIALIZER;
static exported_t *g_exported;
static size_t g_nexported, g_capexported;

enum { ATTR_RELEASE_THRESHOLD = 4, ATTR_EXPORT_HANDLE_TYPES = 10 };

/* A live pool (its attributes can be read). */
static int live(CUmemoryPool pool)
{
    unsigned long long v;
    return RT(cudaMemPoolGetAttribute(pool, ATTR_RELEASE_THRESHOLD, &v)) == 0;
}

/* The handle types a live pool was made with (CUmemPoolProps.handleTypes), 0 for none or a dead pool. */
static int handle_types(CUmemoryPool pool)
{
    int types = 0;
    return RT(cudaMemPoolGetAttribute(pool, ATTR_EXPORT_HANDLE_TYPES, &types)) ? 0 : types;
}

static CUresult elsewhere(void)
{
    static atomic_int seen;
    emu_trace_unsupported("cuMemPoolImport* (a pool or pointer of another process)", &seen);
    return CUDA_ERROR_NOT_SUPPORTED;
}

EXPORT CUresult cuMemPoolExportToShareableHandle(void *out, CUmemoryPool pool, int type, unsigned long long flags)
{
    struct stat st;
    DRV_ENTER_CREATE(cuMemPoolExportToShareableHandle);
    if (!out || flags || !live(pool)) return CUDA_ERROR_INVALID_VALUE;
    if (!(handle_types(pool) & type)) return CUDA_ERROR_INVALID_VALUE;
    if (type != HANDLE_POSIX_FD) return CUDA_ERROR_NOT_SUPPORTED;
    int fd = memfd_create("accel-emu-pool", MFD_CLOEXEC);
    if (fd < 0) return CUDA_ERROR_OUT_OF_MEMORY;
    if (fstat(fd, &st)) {
        close(fd);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    pthread_mutex_lock(&S);
    for (size_t i = 0; i < g_nexported;)          /* entries of destroyed pools go */
        if (!live(g_exported[i].pool)) g_exported[i] = g_exported[--g_nexported];
        else i++;
    if (g_nexported == g_capexported) {
        size_t nc = g_capexported ? g_capexported * 2 : 8;
        exported_t *ne = realloc(g_exported, nc * sizeof *ne);
        if (ne) { g_exported = ne; g_capexported = nc; }
    }
    int ok = g_nexported < g_capexported;
    if (ok) g_exported[g_nexported++] = (exported_t){ pool, st.st_dev, st.st_ino };
    pthread_mutex_unlock(&S);
    if (!ok) {
        close(fd);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    memcpy(out, &fd, sizeof fd);
    return CUDA_SUCCESS;
}

/* The descriptor, passed by value as the handle (a pointer-sized integer). */
EXPORT CUresult cuMemPoolImportFromShareableHandle(CUmemoryPool *out, void *handle, int type,
                                                   unsigned long long flags)
{
    struct stat st;
    DRV_ENTER_CREATE(cuMemPoolImportFromShareableHandle);
    if (!out || flags) return CUDA_ERROR_INVALID_VALUE;
    if (type != HANDLE_POSIX_FD) return type > 0 ? CUDA_ERROR_NOT_SUPPORTED : CUDA_ERROR_INVALID_VALUE;
    if (fstat((int)(intptr_t)handle, &st)) return CUDA_ERROR_INVALID_VALUE;
    CUmemoryPool found = NULL;
    pthread_mutex_lock(&S);
    for (size_t i = 0; i < g_nexported && !found; i++)
        if (g_exported[i].dev == st.st_dev && g_exported[i].ino == st.st_ino) found = g_exported[i].pool;
    pthread_mutex_unlock(&S);
    if (!found || !live(found)) return elsewhere();
    *out = found;
    return CUDA_SUCCESS;
}

/* CUmemPoolPtrExportData: 64 bytes; here a tag, the exporting process and the address. */
typedef struct { unsigned long long magic, pid, ptr; char reserved[40]; } export_data_t;
_Static_assert(sizeof(export_data_t) == 64, "CUmemPoolPtrExportData");

EXPORT CUresult cuMemPoolExportPointer(void *out_, CUdeviceptr ptr)
{
    export_data_t *out = out_;
    emu_ptrinfo_t in;
    DRV_ENTER(cuMemPoolExportPointer);
    if (!out || !emu_pointer_info((void *)(uintptr_t)ptr, &in) || !in.pool || (uintptr_t)in.base != ptr)
        return CUDA_ERROR_INVALID_VALUE;
    if (!(handle_types(in.pool) & HANDLE_POSIX_FD)) return CUDA_ERROR_INVALID_VALUE;
    memset(out, 0, sizeof *out);
    out->magic = EXPORT_MAGIC;
    out->pid = (unsigned long long)getpid();
    out->ptr = ptr;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemPoolImportPointer(CUdeviceptr *out, CUmemoryPool pool, const void *data_)
{
    const export_data_t *data = data_;
    emu_ptrinfo_t in;
    DRV_ENTER(cuMemPoolImportPointer);
    if (!out || !data || data->magic != EXPORT_MAGIC || !live(pool)) return CUDA_ERROR_INVALID_VALUE;
    if (data->pid != (unsigned long long)getpid()) return elsewhere();
    if (!emu_pointer_info((void *)(uintptr_t)data->ptr, &in) || in.pool != pool || (uintptr_t)in.base != data->ptr)
        return CUDA_ERROR_INVALID_VALUE;
    *out = data->ptr;
    return CUDA_SUCCESS;
}
