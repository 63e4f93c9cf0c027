/* Managed memory's advice and prefetches (libcuda.so.1 stand-in): cuMemAdvise, cuMemPrefetchAsync and the
 * batched prefetch / discard calls, and cuMemRangeGetAttribute(s), what cuda.core's ManagedBuffer
 * (read_mostly, preferred_location, accessed_by, prefetch, discard) sets and reads back.
 *
 * Managed memory is host memory that every emulated device uses directly (emu_memory.c), so advice
 * changes no placement: it is recorded, per allocation, and reported as the real driver reports it.
 * Advice is taken for a whole allocation only; a range that covers part of one is CUDA_ERROR_NOT_SUPPORTED
 * (logged with ACCEL_EMU_TRACE=1) rather than advice the emulator would report for pages it was not given
 * for.  Queries may name any part of one allocation.  A freed allocation's advice goes with it
 * (emu_advice_forget, from cudaFree).  The host has one NUMA node, node 0.
 *
 * Argument errors as the driver's: CUDA_ERROR_INVALID_VALUE for a range that is not managed memory, a
 * zero count, an unknown advice or attribute, a location of a kind the advice does not take, a NULL or
 * wrongly sized output; CUDA_ERROR_INVALID_DEVICE for a device location out of range.  Fault injection
 * by name as everywhere in the driver layer; a refused call changes nothing. */
#include "emu_driver.h"

typedef CUmemLocation loc_t;
enum { LOC_INVALID = 0, LOC_DEVICE = 1, LOC_HOST = 2, LOC_HOST_NUMA = 3, LOC_HOST_NUMA_CURRENT = 4 };
enum { CU_DEVICE_CPU = -1, CU_DEVICE_INVALID = -2 };
enum { SET_READ_MOSTLY = 1, UNSET_READ_MOSTLY, SET_PREFERRED, UNSET_PREFERRED, SET_ACCESSED_BY, UNSET_ACCESSED_BY };
enum { RA_READ_MOSTLY = 1, RA_PREFERRED, RA_ACCESSED_BY, RA_LAST_PREFETCH, RA_PREFERRED_TYPE, RA_PREFERRED_ID,
       RA_LAST_PREFETCH_TYPE, RA_LAST_PREFETCH_ID };

/* One managed allocation's advice and where it was last prefetched to; accessed[d] for device d,
 * accessed[EMU_MAX_DEVICES] for the host. */
typedef struct {
    void *base;
    int read_mostly;
    loc_t preferred, prefetched;
    unsigned char accessed[EMU_MAX_DEVICES + 1];
} advice_t;

static pthread_mutex_t A = PTHREAD_MUTEX_INITIALIZER;
static advice_t *g_advice;
static size_t g_nadvice, g_capadvice;

static advice_t *advice_find(const void *base)
{
    for (size_t i = 0; i < g_nadvice; i++)
        if (g_advice[i].base == base) return &g_advice[i];
    return NULL;
}

/* From cudaFree (emu_memory.c): the allocation at `base` is gone, and its advice with it. */
void emu_advice_forget(const void *base)
{
    pthread_mutex_lock(&A);
    advice_t *a = advice_find(base);
    if (a) *a = g_advice[--g_nadvice];
    pthread_mutex_unlock(&A);
}

/* The managed allocation holding [p, p+n): 0 and its base, else the error. */
static CUresult managed_range(CUdeviceptr p, size_t n, emu_ptrinfo_t *in)
{
    if (!n || !emu_pointer_info((const void *)(uintptr_t)p, in) || in->kind != EMU_PTR_MANAGED)
        return CUDA_ERROR_INVALID_VALUE;
    if (n > in->size - (size_t)(p - (uintptr_t)in->base)) return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

/* The allocation's record, made on first use (A held; NULL when out of memory). */
static advice_t *advice_get(void *base)
{
    advice_t *a = advice_find(base);
    if (!a && g_nadvice == g_capadvice) {
        size_t nc = g_capadvice ? g_capadvice * 2 : 16;
        advice_t *na = realloc(g_advice, nc * sizeof *na);
        if (na) { g_advice = na; g_capadvice = nc; }
    }
    if (!a && g_nadvice < g_capadvice) {
        a = &g_advice[g_nadvice++];
        memset(a, 0, sizeof *a);
        a->base = base;
    }
    return a;
}

/* A location the advice takes: preferred location: a device, the host, a host NUMA node (node 0) or the
 * current one (node 0); accessed-by: a device or the host. */
static CUresult check_location(int advice, loc_t l)
{
    if (advice != SET_PREFERRED && advice != SET_ACCESSED_BY && advice != UNSET_ACCESSED_BY) return CUDA_SUCCESS;
    switch (l.type) {
    case LOC_DEVICE: return l.id >= 0 && l.id < g_ndev ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
    case LOC_HOST: return CUDA_SUCCESS;
    case LOC_HOST_NUMA: return advice == SET_PREFERRED && l.id == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    case LOC_HOST_NUMA_CURRENT: return advice == SET_PREFERRED ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    default: return CUDA_ERROR_INVALID_VALUE;
    }
}

static CUresult advise(CUdeviceptr p, size_t n, int advice, loc_t l)
{
    static atomic_int seen;
    emu_ptrinfo_t in;
    if (advice < SET_READ_MOSTLY || advice > UNSET_ACCESSED_BY) return CUDA_ERROR_INVALID_VALUE;
    CUresult r = managed_range(p, n, &in);
    if (!r) r = check_location(advice, l);
    if (r) return r;
    if (p != (uintptr_t)in.base || n != in.size) {
        emu_trace_unsupported("cuMemAdvise on part of a managed allocation", &seen);
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    pthread_mutex_lock(&A);
    advice_t *a = advice_get(in.base);
    if (a) {
        int slot = l.type == LOC_DEVICE ? l.id : EMU_MAX_DEVICES;
        switch (advice) {
        case SET_READ_MOSTLY: case UNSET_READ_MOSTLY: a->read_mostly = advice == SET_READ_MOSTLY; break;
        case SET_PREFERRED:
            a->preferred = l.type == LOC_HOST_NUMA_CURRENT ? (loc_t){ LOC_HOST_NUMA, 0 } : l;
            if (l.type == LOC_HOST) a->preferred.id = 0;
            break;
        case UNSET_PREFERRED: a->preferred = (loc_t){ LOC_INVALID, 0 }; break;
        default: a->accessed[slot] = advice == SET_ACCESSED_BY; break;
        }
    }
    pthread_mutex_unlock(&A);
    return a ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

EXPORT CUresult cuMemAdvise_v2(CUdeviceptr p, size_t n, int advice, loc_t l)
{
    DRV_ENTER(cuMemAdvise_v2);
    return advise(p, n, advice, l);
}

/* CUDA 12's ABI: the location is a device ordinal, CU_DEVICE_CPU for the host. */
EXPORT CUresult cuMemAdvise(CUdeviceptr p, size_t n, int advice, int device)
{
    DRV_ENTER(cuMemAdvise);
    return advise(p, n, advice, device == CU_DEVICE_CPU ? (loc_t){ LOC_HOST, 0 } : (loc_t){ LOC_DEVICE, device });
}

/* The bytes attribute a's value takes (a multiple of 4 for the accessed-by list), 0: unknown. */
static int size_ok(int a, size_t size)
{
    if (a == RA_ACCESSED_BY) return size && size % 4 == 0;
    return a >= RA_READ_MOSTLY && a <= RA_LAST_PREFETCH_ID && size == 4;
}

/* Writes attribute a of the allocation's advice (A held; adv NULL: none given yet). */
static void range_attr(int32_t *out, size_t size, int a, const advice_t *adv)
{
    loc_t pref = adv ? adv->preferred : (loc_t){ LOC_INVALID, 0 };
    loc_t last = adv ? adv->prefetched : (loc_t){ LOC_INVALID, 0 };
    switch (a) {
    case RA_READ_MOSTLY: *out = adv && adv->read_mostly; break;
    case RA_PREFERRED:
        *out = pref.type == LOC_DEVICE ? pref.id : pref.type == LOC_INVALID ? CU_DEVICE_INVALID : CU_DEVICE_CPU;
        break;
    case RA_PREFERRED_TYPE: *out = pref.type; break;
    case RA_PREFERRED_ID: *out = pref.type == LOC_INVALID ? CU_DEVICE_INVALID : pref.id; break;
    case RA_LAST_PREFETCH:
        *out = last.type == LOC_DEVICE ? last.id : last.type == LOC_INVALID ? CU_DEVICE_INVALID : CU_DEVICE_CPU;
        break;
    case RA_LAST_PREFETCH_TYPE: *out = last.type; break;
    case RA_LAST_PREFETCH_ID: *out = last.type == LOC_INVALID ? CU_DEVICE_INVALID : last.id; break;
    case RA_ACCESSED_BY: {
        size_t k = 0, room = size / 4;
        for (int d = 0; adv && d < g_ndev && k < room; d++)
            if (adv->accessed[d]) out[k++] = d;
        if (adv && adv->accessed[EMU_MAX_DEVICES] && k < room) out[k++] = CU_DEVICE_CPU;
        while (k < room) out[k++] = CU_DEVICE_INVALID;
        break;
    }
    }
}

static CUresult range_attrs(void **data, const size_t *sizes, const int *attrs, size_t n, CUdeviceptr p, size_t count)
{
    emu_ptrinfo_t in;
    if (!n || !data || !sizes || !attrs) return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < n; i++)
        if (!data[i] || !size_ok(attrs[i], sizes[i])) return CUDA_ERROR_INVALID_VALUE;
    CUresult r = managed_range(p, count, &in);
    if (r) return r;
    pthread_mutex_lock(&A);
    const advice_t *adv = advice_find(in.base);
    for (size_t i = 0; i < n; i++) range_attr(data[i], sizes[i], attrs[i], adv);
    pthread_mutex_unlock(&A);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemRangeGetAttribute(void *data, size_t size, int attr, CUdeviceptr p, size_t count)
{
    DRV_ENTER(cuMemRangeGetAttribute);
    return range_attrs(&data, &size, &attr, 1, p, count);
}

EXPORT CUresult cuMemRangeGetAttributes(void **data, size_t *sizes, int *attrs, size_t n, CUdeviceptr p, size_t count)
{
    DRV_ENTER(cuMemRangeGetAttributes);
    return range_attrs(data, sizes, attrs, n, p, count);
}

/* ---------------------------------------------------------------- prefetch */

/* Prefetching moves nothing (every device uses the host memory directly): it records where the allocation
 * was last prefetched to, for CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, when the call is made (the
 * stream is checked, not waited for).  Discarding keeps the bytes (their value is undefined after it).
 * Whole allocations only, as for advice. */
int cudaStreamGetDevice(void *, int *);

static CUresult check_stream(CUstream s)
{
    int dev;
    return (uintptr_t)s <= 2 ? CUDA_SUCCESS : RT(cudaStreamGetDevice(s, &dev));
}

static CUresult prefetch_location(loc_t l)
{
    switch (l.type) {
    case LOC_DEVICE: return l.id >= 0 && l.id < g_ndev ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
    case LOC_HOST: case LOC_HOST_NUMA_CURRENT: return CUDA_SUCCESS;
    case LOC_HOST_NUMA: return l.id == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    default: return CUDA_ERROR_INVALID_VALUE;
    }
}

/* The whole managed allocation at [p, p+n) into *base; every check before anything is recorded. */
static CUresult whole_allocation(CUdeviceptr p, size_t n, void **base)
{
    static atomic_int seen;
    emu_ptrinfo_t in;
    CUresult r = managed_range(p, n, &in);
    if (r) return r;
    if (p != (uintptr_t)in.base || n != in.size) {
        emu_trace_unsupported("cuMemPrefetchAsync / cuMemDiscard on part of a managed allocation", &seen);
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    *base = in.base;
    return CUDA_SUCCESS;
}

/* Records location l (LOC_INVALID: discarded) for the n allocations at bases[]. */
static CUresult record_prefetch(void *const *bases, const loc_t *locs, size_t n)
{
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&A);
    for (size_t i = 0; i < n && !r; i++) {
        advice_t *a = advice_get(bases[i]);
        if (!a) r = CUDA_ERROR_OUT_OF_MEMORY;
        else if (locs[i].type == LOC_HOST_NUMA_CURRENT) a->prefetched = (loc_t){ LOC_HOST_NUMA, 0 };
        else if (locs[i].type == LOC_HOST) a->prefetched = (loc_t){ LOC_HOST, 0 };
        else a->prefetched = locs[i];
    }
    pthread_mutex_unlock(&A);
    return r;
}

static CUresult prefetch(CUdeviceptr p, size_t n, loc_t l, unsigned int flags, CUstream s)
{
    void *base;
    NEED_CTX();
    if (flags) return CUDA_ERROR_INVALID_VALUE;
    CUresult r = prefetch_location(l);
    if (!r) r = whole_allocation(p, n, &base);
    if (!r) r = check_stream(s);
    return r ? r : record_prefetch(&base, &l, 1);
}

EXPORT CUresult cuMemPrefetchAsync_v2(CUdeviceptr p, size_t n, loc_t l, unsigned int flags, CUstream s)
{
    DRV_ENTER(cuMemPrefetchAsync_v2);
    return prefetch(p, n, l, flags, s);
}

/* CUDA 12's ABI: a device ordinal, CU_DEVICE_CPU for the host. */
EXPORT CUresult cuMemPrefetchAsync(CUdeviceptr p, size_t n, int device, CUstream s)
{
    DRV_ENTER(cuMemPrefetchAsync);
    return prefetch(p, n, device == CU_DEVICE_CPU ? (loc_t){ LOC_HOST, 0 } : (loc_t){ LOC_DEVICE, device }, 0, s);
}

#define MAX_BATCH 4096

/* A batch: count ranges; with locations (nlocs of them, locs[i] applies from range idx[i] on, idx[0] == 0,
 * increasing) or without (discard: LOC_INVALID).  Every range and location is checked first. */
static CUresult batch(CUdeviceptr *ptrs, size_t *sizes, size_t count, loc_t *locs, size_t *idx, size_t nlocs,
                      unsigned long long flags, CUstream s, int with_locs)
{
    NEED_CTX();
    if (!ptrs || !sizes || !count || count > MAX_BATCH || flags) return CUDA_ERROR_INVALID_VALUE;
    if (with_locs) {
        if (!locs || !idx || !nlocs || nlocs > count || idx[0] != 0) return CUDA_ERROR_INVALID_VALUE;
        for (size_t i = 0; i < nlocs; i++) {
            if (i && idx[i] <= idx[i - 1]) return CUDA_ERROR_INVALID_VALUE;
            if (idx[i] >= count) return CUDA_ERROR_INVALID_VALUE;
            CUresult r = prefetch_location(locs[i]);
            if (r) return r;
        }
    }
    void **bases = malloc(count * sizeof *bases);
    loc_t *where = malloc(count * sizeof *where);
    CUresult r = bases && where ? check_stream(s) : CUDA_ERROR_OUT_OF_MEMORY;
    for (size_t k = 0, i = 0; k < count && !r; k++) {
        while (with_locs && i + 1 < nlocs && idx[i + 1] <= k) i++;
        where[k] = with_locs ? locs[i] : (loc_t){ LOC_INVALID, 0 };
        r = whole_allocation(ptrs[k], sizes[k], &bases[k]);
    }
    if (!r) r = record_prefetch(bases, where, count);
    free(bases);
    free(where);
    return r;
}

EXPORT CUresult cuMemPrefetchBatchAsync(CUdeviceptr *ptrs, size_t *sizes, size_t count, loc_t *locs, size_t *idx,
                                        size_t nlocs, unsigned long long flags, CUstream s)
{
    DRV_ENTER(cuMemPrefetchBatchAsync);
    return batch(ptrs, sizes, count, locs, idx, nlocs, flags, s, 1);
}

EXPORT CUresult cuMemDiscardBatchAsync(CUdeviceptr *ptrs, size_t *sizes, size_t count, unsigned long long flags,
                                       CUstream s)
{
    DRV_ENTER(cuMemDiscardBatchAsync);
    return batch(ptrs, sizes, count, NULL, NULL, 0, flags, s, 0);
}

EXPORT CUresult cuMemDiscardAndPrefetchBatchAsync(CUdeviceptr *ptrs, size_t *sizes, size_t count, loc_t *locs,
                                                  size_t *idx, size_t nlocs, unsigned long long flags, CUstream s)
{
    DRV_ENTER(cuMemDiscardAndPrefetchBatchAsync);
    return batch(ptrs, sizes, count, locs, idx, nlocs, flags, s, 1);
}
