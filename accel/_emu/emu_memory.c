/*
 * Memory of the emulated runtime: the allocation table (device allocations are
 * host memory, sorted by address), cudaMalloc/cudaFree/cudaMemGetInfo, queued
 * copies and memsets (cudaMemcpyAsync, cudaMemsetAsync), stream-ordered memory
 * pools, pinned host memory and cudaPointerGetAttributes.  Shared state and the
 * stream machinery it queues work on are in emu_runtime.h.
 *
 * Model (documented choices where the emulator has to pick):
 *  - One pool per device: its default pool, which is also its current pool.
 *    The pool owns blocks of host memory.  A live allocation is an alloc_t in
 *    the allocation table (with ->pool set), so copies, memsets and pointer
 *    attributes check it exactly like a cudaMalloc allocation.
 *  - Sizes are rounded up to 512 bytes for the pool (reserved / used bytes);
 *    copies are checked against the requested size.
 *  - cudaMallocAsync allocates on the stream's device: it takes the smallest
 *    free block of the pool that fits (and is at most twice the rounded size),
 *    else reserves new memory against the device's capacity (shared with
 *    cudaMalloc).  It never releases pool memory by itself: on
 *    cudaErrorMemoryAllocation the caller trims the pool and retries.
 *  - cudaFreeAsync removes the allocation from the table at once (a second
 *    free, or a copy queued after it, is cudaErrorInvalidValue) and returns
 *    the block to the pool when the stream reaches the free and every copy
 *    queued before it, on any stream, is done.  Only then can an allocation,
 *    on any stream, reuse it (stricter than the real pool, which may reuse
 *    memory in stream order before the free has executed).
 *  - The release threshold (default 0, as in CUDA) is applied when a block
 *    returns to the pool; the real runtime applies it at the next
 *    synchronisation.
 *  - Pinned host memory (cudaHostAlloc, cudaHostRegister) is kept in a range
 *    table, for cudaPointerGetAttributes (type 1, host) and to validate frees.
 *    cudaFreeHost and cudaHostUnregister first wait for all queued work of
 *    every device (cudaFreeHost synchronises in CUDA too), so no queued copy
 *    can touch memory that is gone.
 */

#include "emu_runtime.h"

/* ------------------------------------------------------------- allocations */

static void pool_block_back(alloc_t *a);

static alloc_t **g_allocs;          /* sorted by base */
size_t g_nallocs;
static size_t g_cap_allocs;
static size_t g_mem_used[MAX_DEVICES];

/* Index of the last allocation whose base <= p, or -1. */
static long alloc_floor(const void *p)
{
    long lo = 0, hi = (long)g_nallocs - 1, res = -1;
    while (lo <= hi) {
        long mid = (lo + hi) / 2;
        if ((uintptr_t)g_allocs[mid]->base <= (uintptr_t)p) { res = mid; lo = mid + 1; }
        else hi = mid - 1;
    }
    return res;
}

static alloc_t *alloc_containing(const void *p)
{
    long i = alloc_floor(p);
    if (i < 0) return NULL;
    alloc_t *a = g_allocs[i];
    return (uintptr_t)p < (uintptr_t)a->base + a->size ? a : NULL;
}

void alloc_unref(alloc_t *a)
{
    if (a && --a->pending == 0 && a->freed) {
        if (a->pool) pool_block_back(a);
        else free(a->base);
        free(a);
    }
}

/* cudaFree and cudaFreeAsync: takes the allocation at table index i out of the table (G held) and
 * returns it with a reference, for alloc_unref.  A cudaMalloc allocation's bytes are free for the
 * device at once; a pool allocation's block goes back to its pool, which keeps the bytes reserved. */
static alloc_t *alloc_detach(long i)
{
    alloc_t *a = g_allocs[i];
    memmove(&g_allocs[i], &g_allocs[i + 1], (g_nallocs - (size_t)i - 1) * sizeof *g_allocs);
    g_nallocs--;
    if (!a->pool) g_mem_used[a->device] -= a->size;
    a->freed = 1;
    a->pending++;
    return a;
}

/* ------------------------------------------------------------ memory (API) */

EXPORT cudaError_t cudaMalloc(void **p, size_t n)
{
    RT_ENTER(cudaMalloc, cudaErrorMemoryAllocation);
    RT_NEED_DEVICE();
    if (!p) return fail(cudaErrorInvalidValue);
    cudaError_t cerr = capture_unsafe();     /* emu_graph.c: prohibited during capture */
    if (cerr) return fail(cerr);
    int dev = t_dev;
    ensure_ctx(dev);
    if (n == 0) { *p = NULL; return cudaSuccess; }
    pthread_mutex_lock(&G);
    int ok = n <= g_mem_total - g_mem_used[dev];
    if (ok) g_mem_used[dev] += n;   /* reserve before the (unlocked) malloc */
    pthread_mutex_unlock(&G);
    if (!ok) return fail(cudaErrorMemoryAllocation);
    alloc_t *a = calloc(1, sizeof *a);
    void *mem = NULL;
    if (!a || posix_memalign(&mem, 256, n)) mem = NULL;
    pthread_mutex_lock(&G);
    if (mem && g_nallocs == g_cap_allocs) {
        size_t nc = g_cap_allocs ? g_cap_allocs * 2 : 64;
        alloc_t **na = realloc(g_allocs, nc * sizeof *na);
        if (na) { g_allocs = na; g_cap_allocs = nc; }
    }
    if (!mem || g_nallocs == g_cap_allocs) {
        g_mem_used[dev] -= n;
        pthread_mutex_unlock(&G);
        free(mem);
        free(a);
        return fail(cudaErrorMemoryAllocation);
    }
    a->base = mem;
    a->size = n;
    a->device = dev;
    long at = alloc_floor(mem) + 1;
    memmove(&g_allocs[at + 1], &g_allocs[at], (g_nallocs - (size_t)at) * sizeof *g_allocs);
    g_allocs[at] = a;
    g_nallocs++;
    pthread_mutex_unlock(&G);
    *p = mem;
    return cudaSuccess;
}

/* Unlike real cudaFree this does not synchronise the device: queued copies
 * hold a reference, so the host memory outlives them instead. */
EXPORT cudaError_t cudaFree(void *p)
{
    RT_ENTER(cudaFree, cudaErrorUnknown);
    RT_NEED_DEVICE();
    cudaError_t cerr = capture_unsafe();     /* emu_graph.c: prohibited during capture */
    if (cerr) return fail(cerr);
    ensure_ctx(t_dev);
    if (!p) return cudaSuccess;
    pthread_mutex_lock(&G);
    long i = alloc_floor(p);
    alloc_t *a = (i >= 0 && g_allocs[i]->base == p) ? g_allocs[i] : NULL;
    if (a) alloc_unref(alloc_detach(i));
    pthread_mutex_unlock(&G);
    return a ? cudaSuccess : fail(cudaErrorInvalidValue);
}

EXPORT cudaError_t cudaMemGetInfo(size_t *freeb, size_t *total)
{
    RT_ENTER(cudaMemGetInfo, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (!freeb || !total) return fail(cudaErrorInvalidValue);
    ensure_ctx(t_dev);
    pthread_mutex_lock(&G);
    *total = g_mem_total;
    *freeb = g_mem_total - g_mem_used[t_dev];
    pthread_mutex_unlock(&G);
    return cudaSuccess;
}

/* Resolves [p, p+n) against the allocations: 1 = inside one allocation
 * (referenced into *out), 0 = not device memory, -1 = straddles an end. */
static int dev_range(const void *p, size_t n, alloc_t **out)
{
    alloc_t *a = alloc_containing(p);
    if (!a) return 0;
    if (n > a->size - ((uintptr_t)p - (uintptr_t)a->base)) return -1;   /* no wrap-around for huge n */
    a->pending++;
    *out = a;
    return 1;
}

/* Queues the copy/set `it` on s (G held), unless resolving the stream or checking the range failed
 * (err) or it moves no bytes: then it is dropped, and the stream's device still gets its context, as
 * on every call on a stream.  Returns the error to report. */
static cudaError_t queue_transfer(stream_t *s, item_t *it, cudaError_t err)
{
    if (s && !err && it->n) return submit(s, it);
    item_free(it);
    if (s) ensure_ctx(s->device);
    return err;
}

/* Host memory is treated as pinned: the copy touches host buffers when the
 * worker reaches it, so they must stay alive until the stream is synced. */
EXPORT cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, int kind, cudaStream_t h)
{
    RT_ENTER(cudaMemcpyAsync, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (kind < 0 || kind > 4) return fail(cudaErrorInvalidMemcpyDirection);
    if (n && (!dst || !src)) return fail(cudaErrorInvalidValue);
    item_t *it = item_new(IT_COPY);
    if (!it) return fail(cudaErrorMemoryAllocation);
    it->dst = dst;
    it->src = src;
    it->n = n;
    cudaError_t err = cudaSuccess;
    pthread_mutex_lock(&G);
    stream_t *s = get_stream(h, &err);
    if (s && n) {
        int dd = dev_range(dst, n, &it->a1), sd = dev_range(src, n, &it->a2);
        int need_dst = kind == 1 || kind == 3, need_src = kind == 2 || kind == 3;
        if (dd < 0 || sd < 0 || (need_dst && !dd) || (need_src && !sd)) err = cudaErrorInvalidValue;
    }
    err = queue_transfer(s, it, err);
    pthread_mutex_unlock(&G);
    return err ? fail(err) : cudaSuccess;
}

EXPORT cudaError_t cudaMemsetAsync(void *p, int value, size_t n, cudaStream_t h)
{
    RT_ENTER(cudaMemsetAsync, cudaErrorUnknown);
    RT_NEED_DEVICE();
    item_t *it = item_new(IT_SET);
    if (!it) return fail(cudaErrorMemoryAllocation);
    it->dst = p;
    it->value = value;
    it->n = n;
    cudaError_t err = cudaSuccess;
    pthread_mutex_lock(&G);
    stream_t *s = get_stream(h, &err);
    if (s && n && dev_range(p, n, &it->a1) != 1) err = cudaErrorInvalidValue;
    err = queue_transfer(s, it, err);
    pthread_mutex_unlock(&G);
    return err ? fail(err) : cudaSuccess;
}


/* ------------------------------------------------- stream-ordered pools */

#define POOL_HANDLE_BASE 0x5f0000000000ull
#define TAG_POOL 0x7u
#define POOL_ROUND 512u
#define HOST_ALLOC_FLAGS 0x7u      /* Portable | Mapped | WriteCombined */
#define HOST_REGISTER_FLAGS 0xFu   /* Portable | Mapped | IoMemory | ReadOnly */
enum {
    cudaMemPoolReuseFollowEventDependencies = 1, cudaMemPoolReuseAllowOpportunistic = 2,
    cudaMemPoolReuseAllowInternalDependencies = 3, cudaMemPoolAttrReleaseThreshold = 4,
    cudaMemPoolAttrReservedMemCurrent = 5, cudaMemPoolAttrReservedMemHigh = 6,
    cudaMemPoolAttrUsedMemCurrent = 7, cudaMemPoolAttrUsedMemHigh = 8,
    cudaErrorHostMemoryAlreadyRegistered = 712, cudaErrorHostMemoryNotRegistered = 713,
};

typedef struct { char *base; size_t cap; } block_t;

struct mempool {
    int ready;
    int reuse[3];                   /* the int attributes 1-3 */
    uint64_t threshold;
    uint64_t reserved, reserved_high, used, used_high;
    block_t *blocks;                /* free blocks (reserved, unused) */
    size_t nblocks, capblocks;
};

static mempool_t g_pools[MAX_DEVICES];

static mempool_t *pool_of(int dev)
{
    mempool_t *mp = &g_pools[dev];
    if (!mp->ready) {
        mp->ready = 1;
        mp->reuse[0] = mp->reuse[1] = mp->reuse[2] = 1;
    }
    return mp;
}

static cudaMemPool_t pool_handle(int dev)
{
    return (cudaMemPool_t)(uintptr_t)(POOL_HANDLE_BASE + ((uint64_t)dev << 4) + TAG_POOL);
}

/* The device of a pool handle, -1 if it is not one. */
static int pool_device(cudaMemPool_t h)
{
    uint64_t v = (uint64_t)(uintptr_t)h;
    if (v < POOL_HANDLE_BASE || (v & 0xf) != TAG_POOL) return -1;
    uint64_t dev = (v - POOL_HANDLE_BASE) >> 4;
    return dev < (uint64_t)g_ndev ? (int)dev : -1;
}

/* Frees unused blocks (largest last-in first) until at most `keep` bytes are reserved.  G held. */
static void pool_trim(int dev, mempool_t *mp, uint64_t keep)
{
    while (mp->reserved > keep && mp->nblocks) {
        block_t b = mp->blocks[--mp->nblocks];
        free(b.base);
        mp->reserved -= b.cap;
        g_mem_used[dev] -= b.cap;
    }
}

/* A freed pool allocation's block, back in its pool (from alloc_unref, G held). */
static void pool_block_back(alloc_t *a)
{
    mempool_t *mp = a->pool;
    int dev = a->device;
    mp->used -= a->cap;
    if (mp->nblocks == mp->capblocks) {
        size_t nc = mp->capblocks ? mp->capblocks * 2 : 16;
        block_t *nb = realloc(mp->blocks, nc * sizeof *nb);
        if (!nb) {          /* cannot keep it: release it */
            free(a->base);
            mp->reserved -= a->cap;
            g_mem_used[dev] -= a->cap;
            return;
        }
        mp->blocks = nb;
        mp->capblocks = nc;
    }
    mp->blocks[mp->nblocks].base = a->base;
    mp->blocks[mp->nblocks].cap = a->cap;
    mp->nblocks++;
    if (mp->reserved > mp->threshold) pool_trim(dev, mp, mp->threshold);
}

/* Takes the best-fitting free block for `need` bytes; 0 when none fits.  G held. */
static int pool_take(mempool_t *mp, size_t need, block_t *out)
{
    size_t best = (size_t)-1;
    for (size_t i = 0; i < mp->nblocks; i++) {
        size_t cap = mp->blocks[i].cap;
        if (cap >= need && cap / 2 <= need && (best == (size_t)-1 || cap < mp->blocks[best].cap)) best = i;
    }
    if (best == (size_t)-1) return 0;
    *out = mp->blocks[best];
    mp->blocks[best] = mp->blocks[--mp->nblocks];
    return 1;
}

static void pool_use(mempool_t *mp, size_t cap)
{
    mp->used += cap;
    if (mp->used > mp->used_high) mp->used_high = mp->used;
}

/* Room for one more entry in the allocation table.  G held. */
static int alloc_table_room(void)
{
    if (g_nallocs < g_cap_allocs) return 0;
    size_t nc = g_cap_allocs ? g_cap_allocs * 2 : 64;
    alloc_t **na = realloc(g_allocs, nc * sizeof *na);
    if (!na) return -1;
    g_allocs = na;
    g_cap_allocs = nc;
    return 0;
}

static void alloc_table_insert(alloc_t *a)
{
    long at = alloc_floor(a->base) + 1;
    memmove(&g_allocs[at + 1], &g_allocs[at], (g_nallocs - (size_t)at) * sizeof *g_allocs);
    g_allocs[at] = a;
    g_nallocs++;
}

EXPORT cudaError_t cudaMallocAsync(void **p, size_t n, cudaStream_t h)
{
    RT_ENTER(cudaMallocAsync, cudaErrorMemoryAllocation);
    RT_NEED_DEVICE();
    if (!p) return fail(cudaErrorInvalidValue);
    cudaError_t err = cudaSuccess;
    pthread_mutex_lock(&G);
    stream_t *s = get_stream(h, &err);
    if (!s) {
        pthread_mutex_unlock(&G);
        return fail(err);
    }
    int dev = s->device;
    ensure_ctx(dev);
    if (s->cap && capture_invalidated(s)) {   /* emu_graph.c */
        pthread_mutex_unlock(&G);
        return fail(cudaErrorStreamCaptureInvalidated);
    }
    if (n == 0) {
        pthread_mutex_unlock(&G);
        *p = NULL;
        return cudaSuccess;
    }
    if (n > g_mem_total || n > SIZE_MAX - POOL_ROUND) {
        pthread_mutex_unlock(&G);
        return fail(cudaErrorMemoryAllocation);
    }
    size_t need = (n + POOL_ROUND - 1) / POOL_ROUND * POOL_ROUND;
    mempool_t *mp = pool_of(dev);
    block_t b;
    if (!pool_take(mp, need, &b)) {
        if (need > g_mem_total - g_mem_used[dev]) {
            pthread_mutex_unlock(&G);
            return fail(cudaErrorMemoryAllocation);
        }
        g_mem_used[dev] += need;    /* reserve before the (unlocked) allocation */
        mp->reserved += need;
        if (mp->reserved > mp->reserved_high) mp->reserved_high = mp->reserved;
        pthread_mutex_unlock(&G);
        void *mem = NULL;
        if (posix_memalign(&mem, 256, need)) mem = NULL;
        pthread_mutex_lock(&G);
        if (!mem) {
            g_mem_used[dev] -= need;
            mp->reserved -= need;
            pthread_mutex_unlock(&G);
            return fail(cudaErrorMemoryAllocation);
        }
        b.base = mem;
        b.cap = need;
    }
    alloc_t *a = calloc(1, sizeof *a);
    if (!a || alloc_table_room()) {
        free(a);
        alloc_t tmp = { .base = b.base, .size = n, .device = dev, .pool = mp, .cap = b.cap };
        pool_use(mp, b.cap);
        pool_block_back(&tmp);
        pthread_mutex_unlock(&G);
        return fail(cudaErrorMemoryAllocation);
    }
    pool_use(mp, b.cap);
    a->base = b.base;
    a->size = n;
    a->device = dev;
    a->pool = mp;
    a->cap = b.cap;
    alloc_table_insert(a);
    if (s->cap && (err = capture_mem_alloc(s, a))) {    /* emu_graph.c: a graph allocation */
        alloc_unref(alloc_detach(alloc_floor(a->base)));
        pthread_mutex_unlock(&G);
        return fail(err);
    }
    pthread_mutex_unlock(&G);
    *p = b.base;
    return cudaSuccess;
}

EXPORT cudaError_t cudaFreeAsync(void *ptr, cudaStream_t h)
{
    RT_ENTER(cudaFreeAsync, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (!ptr) return cudaSuccess;
    item_t *it = item_new(IT_SET);  /* a zero-byte set holding the allocation until the stream reaches it */
    if (!it) return fail(cudaErrorMemoryAllocation);
    cudaError_t err = cudaSuccess;
    pthread_mutex_lock(&G);
    stream_t *s = get_stream(h, &err);
    long i = alloc_floor(ptr);
    alloc_t *a = (i >= 0 && g_allocs[i]->base == ptr) ? g_allocs[i] : NULL;
    if (s && !a) err = cudaErrorInvalidValue;
    else if (s && s->cap) {                     /* emu_graph.c: a free node, the graph keeps the memory */
        err = capture_mem_free(s, a);
        pthread_mutex_unlock(&G);
        free(it);
        return err ? fail(err) : cudaSuccess;
    }
    if (s && a && implicit_sync(s)) err = cudaErrorMemoryAllocation;
    if (err) {
        pthread_mutex_unlock(&G);
        free(it);
        return fail(err);
    }
    ensure_ctx(s->device);
    alloc_detach(i);
    if (!s->head && s->state == ST_IDLE) {
        free(it);               /* nothing queued: the stream reaches the free now */
        alloc_unref(a);
    } else {
        it->dst = a->base;
        it->a1 = a;
        enqueue_raw(s, it);
    }
    pthread_mutex_unlock(&G);
    return cudaSuccess;
}

/* The pool of device `dev` into *out: its default pool, which is also its current one (the emulator
 * has no cudaDeviceSetMemPool). */
static cudaError_t device_pool(cudaMemPool_t *out, int dev)
{
    if (!out) return fail(cudaErrorInvalidValue);
    if (dev < 0 || dev >= g_ndev) return fail(cudaErrorInvalidDevice);
    *out = pool_handle(dev);
    return cudaSuccess;
}

EXPORT cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t *out, int dev)
{
    RT_ENTER(cudaDeviceGetDefaultMemPool, cudaErrorUnknown);
    RT_NEED_DEVICE();
    return device_pool(out, dev);
}

EXPORT cudaError_t cudaDeviceGetMemPool(cudaMemPool_t *out, int dev)
{
    RT_ENTER(cudaDeviceGetMemPool, cudaErrorUnknown);
    RT_NEED_DEVICE();
    return device_pool(out, dev);
}

EXPORT cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t h, int attr, void *value)
{
    RT_ENTER(cudaMemPoolGetAttribute, cudaErrorUnknown);
    RT_NEED_DEVICE();
    int dev = pool_device(h);
    if (!value || dev < 0) return fail(cudaErrorInvalidValue);
    cudaError_t err = cudaSuccess;
    pthread_mutex_lock(&G);
    mempool_t *mp = pool_of(dev);
    uint64_t v = 0;
    switch (attr) {
    case cudaMemPoolReuseFollowEventDependencies:
    case cudaMemPoolReuseAllowOpportunistic:
    case cudaMemPoolReuseAllowInternalDependencies:
        *(int *)value = mp->reuse[attr - 1];
        break;
    case cudaMemPoolAttrReleaseThreshold: v = mp->threshold; break;
    case cudaMemPoolAttrReservedMemCurrent: v = mp->reserved; break;
    case cudaMemPoolAttrReservedMemHigh: v = mp->reserved_high; break;
    case cudaMemPoolAttrUsedMemCurrent: v = mp->used; break;
    case cudaMemPoolAttrUsedMemHigh: v = mp->used_high; break;
    default: err = cudaErrorInvalidValue; break;
    }
    if (!err && attr >= cudaMemPoolAttrReleaseThreshold) memcpy(value, &v, sizeof v);
    pthread_mutex_unlock(&G);
    return err ? fail(err) : cudaSuccess;
}

/* The high watermarks can only be reset (to the current value) by setting 0. */
EXPORT cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t h, int attr, void *value)
{
    RT_ENTER(cudaMemPoolSetAttribute, cudaErrorUnknown);
    RT_NEED_DEVICE();
    int dev = pool_device(h);
    if (!value || dev < 0) return fail(cudaErrorInvalidValue);
    cudaError_t err = cudaSuccess;
    uint64_t v = 0;
    if (attr >= cudaMemPoolAttrReleaseThreshold) memcpy(&v, value, sizeof v);
    pthread_mutex_lock(&G);
    mempool_t *mp = pool_of(dev);
    switch (attr) {
    case cudaMemPoolReuseFollowEventDependencies:
    case cudaMemPoolReuseAllowOpportunistic:
    case cudaMemPoolReuseAllowInternalDependencies:
        mp->reuse[attr - 1] = *(int *)value != 0;
        break;
    case cudaMemPoolAttrReleaseThreshold: mp->threshold = v; break;
    case cudaMemPoolAttrReservedMemHigh:
        if (v) err = cudaErrorInvalidValue;
        else mp->reserved_high = mp->reserved;
        break;
    case cudaMemPoolAttrUsedMemHigh:
        if (v) err = cudaErrorInvalidValue;
        else mp->used_high = mp->used;
        break;
    default: err = cudaErrorInvalidValue; break;
    }
    pthread_mutex_unlock(&G);
    return err ? fail(err) : cudaSuccess;
}

EXPORT cudaError_t cudaMemPoolTrimTo(cudaMemPool_t h, size_t keep)
{
    RT_ENTER(cudaMemPoolTrimTo, cudaErrorUnknown);
    RT_NEED_DEVICE();
    int dev = pool_device(h);
    if (dev < 0) return fail(cudaErrorInvalidValue);
    pthread_mutex_lock(&G);
    pool_trim(dev, pool_of(dev), keep);
    pthread_mutex_unlock(&G);
    return cudaSuccess;
}

/* ------------------------------------------------------ pinned host memory */

typedef struct { char *base; size_t size; int device, registered; } hostrange_t;
static hostrange_t *g_host;     /* sorted by base, non-overlapping */
static size_t g_nhost, g_caphost;

static long host_floor(const void *p)
{
    long lo = 0, hi = (long)g_nhost - 1, res = -1;
    while (lo <= hi) {
        long mid = (lo + hi) / 2;
        if ((uintptr_t)g_host[mid].base <= (uintptr_t)p) { res = mid; lo = mid + 1; }
        else hi = mid - 1;
    }
    return res;
}

/* Inserts [base, base+size) unless it overlaps a range: 0, 1 (overlap), -1 (no memory).  G held. */
static int host_insert(char *base, size_t size, int registered)
{
    long i = host_floor(base + size - 1);
    if (i >= 0 && (uintptr_t)g_host[i].base + g_host[i].size > (uintptr_t)base) return 1;
    if (g_nhost == g_caphost) {
        size_t nc = g_caphost ? g_caphost * 2 : 16;
        hostrange_t *nh = realloc(g_host, nc * sizeof *nh);
        if (!nh) return -1;
        g_host = nh;
        g_caphost = nc;
    }
    long at = i + 1;
    memmove(&g_host[at + 1], &g_host[at], (g_nhost - (size_t)at) * sizeof *g_host);
    g_host[at] = (hostrange_t){ base, size, t_dev, registered };
    g_nhost++;
    return 0;
}

/* Index of the range starting exactly at p with the given kind, or -1.  G held. */
static long host_exact(const void *p, int registered)
{
    long i = host_floor(p);
    return i >= 0 && g_host[i].base == p && g_host[i].registered == registered ? i : -1;
}

static void host_remove(long i)
{
    memmove(&g_host[i], &g_host[i + 1], (g_nhost - (size_t)i - 1) * sizeof *g_host);
    g_nhost--;
}

/* Fills *at for pinned host memory: 1 if p is inside a range.  G held. */
static int host_attributes(const void *p, struct cudaPointerAttributes *at)
{
    long i = host_floor(p);
    if (i < 0 || (uintptr_t)p >= (uintptr_t)g_host[i].base + g_host[i].size) return 0;
    at->type = 1;
    at->device = g_host[i].device;
    at->devicePointer = (void *)p;
    at->hostPointer = (void *)p;
    return 1;
}

EXPORT cudaError_t cudaHostAlloc(void **p, size_t n, unsigned int flags)
{
    RT_ENTER(cudaHostAlloc, cudaErrorMemoryAllocation);
    RT_NEED_DEVICE();
    if (!p || (flags & ~HOST_ALLOC_FLAGS)) return fail(cudaErrorInvalidValue);
    ensure_ctx(t_dev);
    if (n == 0) { *p = NULL; return cudaSuccess; }
    void *mem = NULL;
    if (posix_memalign(&mem, 4096, n)) return fail(cudaErrorMemoryAllocation);
    pthread_mutex_lock(&G);
    int rc = host_insert(mem, n, 0);
    pthread_mutex_unlock(&G);
    if (rc) {
        free(mem);
        return fail(cudaErrorMemoryAllocation);
    }
    *p = mem;
    return cudaSuccess;
}

EXPORT cudaError_t cudaFreeHost(void *p)
{
    RT_ENTER(cudaFreeHost, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (!p) return cudaSuccess;
    if (t_in_hostfn) return fail(cudaErrorNotPermitted);
    pthread_mutex_lock(&G);
    cudaError_t err = host_exact(p, 0) < 0 ? cudaErrorInvalidValue : wait_device_streams(0, g_ndev);
    long i = err ? -1 : host_exact(p, 0);   /* looked up again: the wait dropped G */
    if (!err && i < 0) err = cudaErrorInvalidValue;
    if (!err) host_remove(i);
    pthread_mutex_unlock(&G);
    if (err) return fail(err);
    free(p);
    return cudaSuccess;
}

EXPORT cudaError_t cudaHostRegister(void *p, size_t n, unsigned int flags)
{
    RT_ENTER(cudaHostRegister, cudaErrorMemoryAllocation);
    RT_NEED_DEVICE();
    if (!p || !n || (flags & ~HOST_REGISTER_FLAGS) || n > UINTPTR_MAX - (uintptr_t)p)
        return fail(cudaErrorInvalidValue);
    ensure_ctx(t_dev);
    pthread_mutex_lock(&G);
    int rc = host_insert(p, n, 1);
    pthread_mutex_unlock(&G);
    if (rc) return fail(rc > 0 ? cudaErrorHostMemoryAlreadyRegistered : cudaErrorMemoryAllocation);
    return cudaSuccess;
}

EXPORT cudaError_t cudaHostUnregister(void *p)
{
    RT_ENTER(cudaHostUnregister, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (t_in_hostfn) return fail(cudaErrorNotPermitted);
    pthread_mutex_lock(&G);
    cudaError_t err = host_exact(p, 1) < 0 ? cudaErrorHostMemoryNotRegistered : wait_device_streams(0, g_ndev);
    long i = err ? -1 : host_exact(p, 1);
    if (!err && i < 0) err = cudaErrorHostMemoryNotRegistered;
    if (!err) host_remove(i);
    pthread_mutex_unlock(&G);
    return err ? fail(err) : cudaSuccess;
}

/* ---------------------------------------------------- pointer attributes */


/* Unregistered memory reports device -2 and no aliases (CUDA >= 11). */
EXPORT cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *at, const void *p)
{
    RT_ENTER(cudaPointerGetAttributes, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (!at) return fail(cudaErrorInvalidValue);
    pthread_mutex_lock(&G);
    alloc_t *a = alloc_containing(p);
    if (!a && host_attributes(p, at)) {
        pthread_mutex_unlock(&G);
        return cudaSuccess;
    }
    at->type = a ? 2 : 0;
    at->device = a ? a->device : -2;
    at->devicePointer = a ? (void *)p : NULL;
    at->hostPointer = NULL;
    pthread_mutex_unlock(&G);
    return cudaSuccess;
}

/* ------------------------------------------------------- hooks for graphs */

int emu_mem_range(const void *p, size_t n, alloc_t **out)
{
    return n ? dev_range(p, n, out) : 0;
}

void emu_mem_release(alloc_t *a)
{
    if (!a->freed) {
        long i = alloc_floor(a->base);
        if (i >= 0 && g_allocs[i] == a) alloc_unref(alloc_detach(i));
    }
    alloc_unref(a);
}
