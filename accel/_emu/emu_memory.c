/*
 * Memory of the emulated runtime: the allocation table (device allocations are
 * host memory, ordered by address), cudaMalloc/cudaFree/cudaMemGetInfo, queued
 * copies and memsets (cudaMemcpyAsync, cudaMemsetAsync), stream-ordered memory
 * pools, pinned host memory and cudaPointerGetAttributes.  Shared state and the
 * stream machinery it queues work on are in emu_runtime.h.
 *
 * Model (documented choices where the emulator has to pick):
 *  - One default pool per device, its current pool until cudaDeviceSetMemPool
 *    names a pool made by cudaMemPoolCreate (device memory, managed memory,
 *    whose allocations are marked managed, or pinned host memory, whose
 *    allocations are host memory counted against no device).  The host and
 *    managed memory's locations have default pools made on first use
 *    (cudaMemGetDefaultMemPool).  A pool owns blocks of host memory.  A live allocation is an alloc_t in
 *    the allocation table (with ->pool set), so copies, memsets and pointer
 *    attributes check it exactly like a cudaMalloc allocation.
 *  - Sizes are rounded up to 512 bytes for the pool (reserved / used bytes);
 *    copies are checked against the requested size.
 *  - cudaMallocAsync allocates on the stream's device: it takes the smallest
 *    free block of the pool that fits (and is at most twice the rounded size;
 *    of equal ones, the one returned last), else reserves new memory against
 *    the device's capacity (shared with cudaMalloc).  It never releases pool
 *    memory by itself: on cudaErrorMemoryAllocation the caller trims the pool
 *    and retries.
 *  - cudaFreeAsync removes the allocation from the table at once (a second
 *    free, or a copy queued after it, is cudaErrorInvalidValue) and returns
 *    the block to the pool when the stream reaches the free and every copy
 *    queued before it, on any stream, is done.  Only then can an allocation,
 *    on any stream, reuse it (stricter than the real pool, which may reuse
 *    memory in stream order before the free has executed).
 *  - The release threshold (default 0, as in CUDA) is applied when a block
 *    returns to the pool; the real runtime applies it at the next
 *    synchronisation.
 *  - Costs do not grow with the number of live allocations (issue 22): the
 *    table is a dense slot array plus address lookups (a hash of bases, O(1),
 *    and an AVL tree by base for interior pointers, O(log n)); a pool block
 *    keeps its table range while the pool holds it, so cudaMallocAsync +
 *    cudaFreeAsync from a warm pool are O(1).  Each pool keeps its free blocks
 *    in a tree of capacities (best fit in O(log k), k distinct sizes) and a
 *    list in return order (trim releases the block returned last first).
 *  - Pinned host memory (cudaHostAlloc, cudaHostRegister) is kept in a range
 *    table, for cudaPointerGetAttributes (type 1, host) and to validate frees.
 *    cudaFreeHost and cudaHostUnregister first wait for all queued work of
 *    every device (cudaFreeHost synchronises in CUDA too), so no queued copy
 *    can touch memory that is gone.  Pinned memory is mapped: copies and sets
 *    accept it where device memory is expected (unified addressing).
 *  - Managed memory (cudaMallocManaged) is an allocation like cudaMalloc's,
 *    marked managed; synchronous copies and sets (cudaMemcpy, cudaMemset, the
 *    driver's) are queued on the legacy stream and waited for.
 */

#include "emu_runtime.h"
#include "emu_launch.h"

/* ------------------------------------------------------------- allocations */

static void pool_block_back(alloc_t *a);

/* The allocation table.  Live allocations are in a dense slot array (a->slot is a's index, not in
 * address order).  Address lookups go through ranges: one per live allocation and one per free block
 * that a pool still holds (dead: ->a is NULL), in an AVL tree by base (interior pointers, O(log n)) and
 * in a hash of bases (exact lookups, O(1)).  A pool block keeps its range while it is reserved, so
 * taking a block from the pool and freeing it again (the steady state of cudaMallocAsync +
 * cudaFreeAsync) touches only the hash, never the tree.  Ranges never overlap: a dead one covers memory
 * its pool still owns, and a cudaMalloc allocation's range goes when the allocation is freed. */
typedef struct arange {
    tnode_t node;                   /* key: base */
    alloc_t *a;                     /* the live allocation starting here, or NULL (a free pool block) */
} arange_t;

static alloc_t **g_allocs;
size_t g_nallocs;
static size_t g_cap_allocs;
static tnode_t *g_range_tree;
static arange_t **g_ahash;          /* open addressing, linear probing, at most half full; NULL = empty */
static size_t g_ahash_cap, g_nranges;
static arange_t *g_spare_range;     /* made by alloc_table_room, so that alloc_table_insert cannot fail */
static size_t g_mem_used[MAX_DEVICES];

size_t emu_mem_used(int dev)
{
    pthread_mutex_lock(&G);
    size_t n = g_mem_used[dev];
    pthread_mutex_unlock(&G);
    return n;
}

static inline size_t ahash_home(uintptr_t base)
{
    return (size_t)(((base >> 8) * 0x9E3779B97F4A7C15ull) >> 20) & (g_ahash_cap - 1);
}

static void ahash_put(arange_t *r)
{
    size_t m = g_ahash_cap - 1, i = ahash_home(r->node.key);
    while (g_ahash[i]) i = (i + 1) & m;
    g_ahash[i] = r;
}

/* Removes r, shifting back the entries of its probe run (no tombstones). */
static void ahash_del(arange_t *r)
{
    size_t m = g_ahash_cap - 1, i = ahash_home(r->node.key), j, k;
    while (g_ahash[i] != r) i = (i + 1) & m;
    for (;;) {
        g_ahash[i] = NULL;
        for (j = i;;) {
            j = (j + 1) & m;
            if (!g_ahash[j]) return;
            k = ahash_home(g_ahash[j]->node.key);
            if (((j - k) & m) >= ((j - i) & m)) break;      /* its home is not inside (hole, j] */
        }
        g_ahash[i] = g_ahash[j];
        i = j;
    }
}

/* The range starting exactly at p, or NULL.  O(1). */
static arange_t *range_at(const void *p)
{
    if (!g_ahash_cap) return NULL;
    size_t m = g_ahash_cap - 1, i = ahash_home((uintptr_t)p);
    for (arange_t *r; (r = g_ahash[i]); i = (i + 1) & m)
        if (r->node.key == (uintptr_t)p) return r;
    return NULL;
}

static void range_remove(arange_t *r)
{
    g_range_tree = tree_remove(g_range_tree, r->node.key);
    ahash_del(r);
    g_nranges--;
    free(r);
}

/* A pool block at `base` leaves its pool (released to the host): its dead range goes too.  G held. */
static void range_release(const void *base)
{
    arange_t *r = range_at(base);
    if (r && !r->a) range_remove(r);
}

/* Table slot of the allocation whose base is exactly p, or -1.  O(1). */
static long alloc_exact(const void *p)
{
    arange_t *r = range_at(p);
    return r && r->a ? r->a->slot : -1;
}

/* Table slot of the live allocation with the greatest base <= p if p may be inside it, else -1 (p is
 * below every allocation, or inside or past a free pool block, which no allocation overlaps).
 * O(log n). */
static long alloc_floor(const void *p)
{
    tnode_t *n = tree_floor(g_range_tree, (uintptr_t)p);
    alloc_t *a = n ? TREE_ENTRY(n, arange_t, node)->a : NULL;
    return a ? a->slot : -1;
}

static alloc_t *alloc_containing(const void *p)
{
    long i = alloc_floor(p);
    if (i < 0) return NULL;
    alloc_t *a = g_allocs[i];
    return (uintptr_t)p < (uintptr_t)a->base + a->size ? a : NULL;
}

/* Kernels running now (emu_stream.c counts them, G held), and the cudaMalloc allocations freed meanwhile whose
 * bytes wait for none to run: a kernel caches an allocation's bounds for its launch, so it may still store
 * into bytes freed under it (a GPU's undefined behaviour; here they must not be the host heap's by then). */
long g_kernels_running;
static alloc_t **g_grave;
static size_t g_ngrave, g_grave_cap;

void emu_mem_kernels_idle(void)
{
    for (size_t i = 0; i < g_ngrave; i++) {
        free(g_grave[i]->base);
        free(g_grave[i]);
    }
    g_ngrave = 0;
}

void alloc_unref(alloc_t *a)
{
    if (a && --a->pending == 0 && a->freed) {
        if (!a->pool && g_kernels_running) {
            if (g_ngrave == g_grave_cap) {
                size_t nc = g_grave_cap ? 2 * g_grave_cap : 16;
                alloc_t **ng = realloc(g_grave, nc * sizeof *ng);
                if (ng) { g_grave = ng; g_grave_cap = nc; }
            }
            if (g_ngrave < g_grave_cap) { g_grave[g_ngrave++] = a; return; }
        }
        if (a->pool) pool_block_back(a);
        else free(a->base);
        free(a);
    }
}

/* cudaFree and cudaFreeAsync: takes the allocation at table index i out of the table (G held) and
 * returns it with a reference, for alloc_unref.  A cudaMalloc allocation's bytes are free for the
 * device at once; a pool allocation's block goes back to its pool, which keeps the bytes reserved
 * (and the block its range).  O(1) for a pool allocation, O(log n) for a cudaMalloc one. */
static alloc_t *alloc_detach(long i)
{
    alloc_t *a = g_allocs[i];
    if (a->pool) a->range->a = NULL;
    else range_remove(a->range);
    a->range = NULL;
    g_allocs[i] = g_allocs[--g_nallocs];    /* the last slot fills the hole */
    g_allocs[i]->slot = i;
    if (!a->pool) g_mem_used[a->device] -= a->size;
    a->freed = 1;
    a->pending++;
    return a;
}

/* Room for one more entry in the allocation table (a slot, a hash entry, a range).  G held. */
static int alloc_table_room(void)
{
    if (!g_spare_range && !(g_spare_range = malloc(sizeof *g_spare_range))) return -1;
    if (2 * (g_nranges + 1) > g_ahash_cap) {
        size_t nc = g_ahash_cap ? 2 * g_ahash_cap : 128, oc = g_ahash_cap;
        arange_t **nh = calloc(nc, sizeof *nh), **oh = g_ahash;
        if (!nh) return -1;
        g_ahash = nh;
        g_ahash_cap = nc;
        for (size_t i = 0; i < oc; i++)
            if (oh[i]) ahash_put(oh[i]);
        free(oh);
    }
    if (g_nallocs == g_cap_allocs) {
        size_t nc = g_cap_allocs ? g_cap_allocs * 2 : 64;
        alloc_t **na = realloc(g_allocs, nc * sizeof *na);
        if (!na) return -1;
        g_allocs = na;
        g_cap_allocs = nc;
    }
    return 0;
}

static unsigned long long g_alloc_ids;     /* the last allocation id handed out (alloc_table_insert) */

/* Adds a (its base, size, device, pool set; room made by alloc_table_room) to the table: O(1) when its
 * block still has its range from an earlier allocation, else O(log n).  G held. */
static void alloc_table_insert(alloc_t *a)
{
    arange_t *r = range_at(a->base);
    if (!r) {
        r = g_spare_range;
        g_spare_range = NULL;
        r->node.key = (uintptr_t)a->base;
        g_range_tree = tree_insert(g_range_tree, &r->node);
        ahash_put(r);
        g_nranges++;
    }
    r->a = a;
    a->range = r;
    a->slot = (long)g_nallocs;
    if (!a->id) a->id = ++g_alloc_ids;     /* a graph allocation made again (emu_mem_revive) keeps its identity */
    g_allocs[g_nallocs++] = a;
}

/* ------------------------------------------------------------ memory (API) */

/* cudaMalloc and cudaMallocManaged (managed: 1): n > 0 bytes on device dev, counted against its memory,
 * aligned to 256 bytes (as cudaMalloc's) or to `align` when larger (a power of two: module variables). */
static cudaError_t table_alloc(void **p, size_t n, int dev, int managed, size_t align)
{
    pthread_mutex_lock(&G);
    int ok = n <= g_mem_total[dev] - g_mem_used[dev];
    if (ok) g_mem_used[dev] += n;   /* reserve before the (unlocked) malloc */
    pthread_mutex_unlock(&G);
    if (!ok) return fail(cudaErrorMemoryAllocation);
    alloc_t *a = calloc(1, sizeof *a);
    void *mem = NULL;
    /* 512-aligned (or `align` when larger): the device's texture alignment, so an allocation can back a linear
     * or pitched texture object as a real one can (the driver documents 256 at least); the bytes up to the
     * next 256 too: a kernel may touch them (emu_mem_bounds) */
    if (!a || n > SIZE_MAX - 255 || posix_memalign(&mem, align > 512 ? align : 512, (n + 255) & ~(size_t)255)) mem = NULL;
    pthread_mutex_lock(&G);
    if (!mem || alloc_table_room()) {
        g_mem_used[dev] -= n;
        pthread_mutex_unlock(&G);
        free(mem);
        free(a);
        return fail(cudaErrorMemoryAllocation);
    }
    a->base = mem;
    a->size = n;
    a->device = dev;
    a->managed = managed;
    alloc_table_insert(a);
    pthread_mutex_unlock(&G);
    *p = mem;
    return cudaSuccess;
}

EXPORT cudaError_t cudaMalloc(void **p, size_t n)
{
    RT_ENTER(cudaMalloc, cudaErrorMemoryAllocation);
    RT_NEED_DEVICE();
    if (!p) return fail(cudaErrorInvalidValue);
    cudaError_t cerr = capture_unsafe();     /* emu_capture.c: prohibited during capture */
    if (cerr) return fail(cerr);
    ensure_ctx(t_dev);
    if (n == 0) { *p = NULL; return cudaSuccess; }
    return table_alloc(p, n, t_dev, 0, 256);
}

/* Waits for the kernels queued before it, as a GPU's cudaFree synchronises (a kernel queued on a stream and
 * not yet started may still use the allocation: numba frees a temporary right after launching the kernel
 * that reads it).  Other queued work is not waited for: queued copies and sets hold a reference, so the
 * host memory outlives them instead. */
EXPORT cudaError_t cudaFree(void *p)
{
    RT_ENTER(cudaFree, cudaErrorUnknown);
    RT_NEED_DEVICE();
    cudaError_t cerr = capture_unsafe();     /* emu_capture.c: prohibited during capture */
    if (cerr) return fail(cerr);
    ensure_ctx(t_dev);
    if (!p) return cudaSuccess;
    pthread_mutex_lock(&G);
    wait_queued_kernels();
    long i = alloc_exact(p);
    alloc_t *a = i >= 0 ? g_allocs[i] : NULL;
    int managed = a && a->managed;
    if (a) alloc_unref(alloc_detach(i));
    pthread_mutex_unlock(&G);
    if (managed && emu_advice_forget) emu_advice_forget(p);
    return a ? cudaSuccess : fail(cudaErrorInvalidValue);
}

EXPORT cudaError_t cudaMemGetInfo(size_t *freeb, size_t *total)
{
    RT_ENTER(cudaMemGetInfo, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (!freeb || !total) return fail(cudaErrorInvalidValue);
    ensure_ctx(t_dev);
    pthread_mutex_lock(&G);
    *total = g_mem_total[t_dev];
    *freeb = g_mem_total[t_dev] - g_mem_used[t_dev];
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

static int host_mapped(const void *p, size_t n);

/* A synchronous transfer waits until the stream has run the item just queued on it (G held); on a
 * capturing stream it is refused (emu_capture.c), and so is it from a thread the capture modes prohibit
 * (emu_copy / emu_set, before G is taken). */
static cudaError_t queue_and_wait(stream_t *s, item_t *it, cudaError_t err, int sync)
{
    if (!err && sync && s && s->cap) err = capture_refuse(s);
    int queued = s && !err && it->n;
    err = queue_transfer(s, it, err);
    if (!err && queued && sync) {
        wait_stream(s, s->enq);
        err = emu_sticky(s->device);    /* a kernel before it faulted */
    }
    return err;
}

/* The bytes [0, span) that `rows` rows of `width` bytes, `pitch` apart, cover; 0 on overflow. */
static int span_of(size_t width, size_t rows, size_t pitch, size_t *span)
{
    if (!width || !rows) { *span = 0; return 1; }
    if (rows > 1 && (pitch < width || rows - 1 > (SIZE_MAX - width) / pitch)) return 0;
    *span = (rows - 1) * pitch + width;
    return 1;
}

static int pool_on_host(const mempool_t *mp);

/* How an asynchronous copy meets host memory, as CUDA's "API synchronization behavior" documents it: one
 * to pageable host memory (from the device or from any host memory) and one between host buffers (pageable
 * or pinned) are done when the call returns (COPY_WAIT); one from pageable memory to the device has
 * consumed its source when the call returns (COPY_STAGE: the bytes are staged, the copy runs in stream
 * order); device-to-device and pinned copies stay asynchronous.  Pinned memory is a registered range or
 * an allocation from a pool of pinned host memory.  G held. */
enum { COPY_ASYNC, COPY_STAGE, COPY_WAIT };
static int copy_mode(const item_t *it, size_t dspan, size_t sspan)
{
    int dpage = !it->a1 && !host_mapped(it->dst, dspan), spage = !it->a2 && !host_mapped(it->src, sspan);
    int dhost = !it->a1 || (it->a1->pool && pool_on_host(it->a1->pool));
    int shost = !it->a2 || (it->a2->pool && pool_on_host(it->a2->pool));
    if (dpage || (dhost && shost)) return COPY_WAIT;
    return spage ? COPY_STAGE : COPY_ASYNC;
}

/* Copies the source of `it` (its `sspan` bytes) into memory the item owns, with G dropped (s kept alive);
 * 0 when out of memory (the caller then waits for the copy instead). */
static int copy_stage(stream_t *s, item_t *it, size_t sspan)
{
    char *stage = malloc(sspan);
    if (!stage) return 0;
    s->refs++;
    pthread_mutex_unlock(&G);
    memcpy(stage, it->src, sspan);
    pthread_mutex_lock(&G);
    s->refs--;
    it->stage = stage;
    it->src = stage;
    return 1;
}

/* Every copy: `rows` rows of `width` bytes from src (rows `spitch` apart) to dst (`dpitch` apart) on
 * stream h (kind: cudaMemcpyKind; a device side must lie inside one allocation); sync: the copy is done
 * when it returns (cudaMemcpy, cuMemcpy*).  An asynchronous copy with pageable host memory is synchronous
 * or staged as in CUDA (copy_mode); on a capturing stream every copy is a graph node, run by nothing. */
cudaError_t emu_copy(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t rows,
                     int kind, cudaStream_t h, int sync)
{
    if (kind < 0 || kind > 4) return fail(cudaErrorInvalidMemcpyDirection);
    size_t dspan, sspan;
    if (!span_of(width, rows, dpitch, &dspan) || !span_of(width, rows, spitch, &sspan))
        return fail(cudaErrorInvalidValue);
    if (dspan && (!dst || !src)) return fail(cudaErrorInvalidValue);
    if (sync && t_in_hostfn) return fail(cudaErrorNotPermitted);
    cudaError_t cerr = sync ? capture_unsafe() : cudaSuccess;
    if (cerr) return fail(cerr);
    item_t *it = item_new(IT_COPY);
    if (!it) return fail(cudaErrorMemoryAllocation);
    it->dst = dst;
    it->src = src;
    it->n = dspan ? width : 0;
    it->rows = rows;
    it->dpitch = dpitch;
    it->spitch = spitch;
    cudaError_t err = cudaSuccess;
    pthread_mutex_lock(&G);
    stream_t *s = get_stream(h, &err);
    if (s && dspan) {
        int dd = dev_range(dst, dspan, &it->a1), sd = dev_range(src, sspan, &it->a2);
        int need_dst = kind == 1 || kind == 3, need_src = kind == 2 || kind == 3;
        if (!dd && need_dst && host_mapped(dst, dspan)) dd = 1;     /* pinned memory is mapped (UVA) */
        if (!sd && need_src && host_mapped(src, sspan)) sd = 1;
        if (dd < 0 || sd < 0 || (need_dst && !dd) || (need_src && !sd)) err = cudaErrorInvalidValue;
    }
    int wait = sync;
    if (!sync && s && !s->cap && !err && dspan) {
        int mode = copy_mode(it, dspan, sspan);
        if (mode == COPY_STAGE && !copy_stage(s, it, sspan)) mode = COPY_WAIT;
        if (mode == COPY_WAIT && t_in_hostfn) err = cudaErrorNotPermitted;     /* it would wait on itself */
        wait = mode == COPY_WAIT;
    }
    err = queue_and_wait(s, it, err, wait);
    pthread_mutex_unlock(&G);
    return err ? fail(err) : cudaSuccess;
}

/* Every memset: `count` elements of `elem` bytes (1, 2 or 4) set to value's low bytes, on stream h. */
cudaError_t emu_set(void *p, unsigned int value, size_t count, int elem, cudaStream_t h, int sync)
{
    if (elem != 1 && elem != 2 && elem != 4) return fail(cudaErrorInvalidValue);
    if (count > SIZE_MAX / (size_t)elem) return fail(cudaErrorInvalidValue);
    if (elem > 1 && ((uintptr_t)p % (uintptr_t)elem)) return fail(cudaErrorInvalidValue);
    if (sync && t_in_hostfn) return fail(cudaErrorNotPermitted);
    cudaError_t cerr = sync ? capture_unsafe() : cudaSuccess;
    if (cerr) return fail(cerr);
    item_t *it = item_new(IT_SET);
    if (!it) return fail(cudaErrorMemoryAllocation);
    it->dst = p;
    it->value = (int)value;
    it->n = count;
    it->elem = elem;
    cudaError_t err = cudaSuccess;
    pthread_mutex_lock(&G);
    stream_t *s = get_stream(h, &err);
    if (s && count && dev_range(p, count * (size_t)elem, &it->a1) != 1 && !host_mapped(p, count * (size_t)elem))
        err = cudaErrorInvalidValue;
    err = queue_and_wait(s, it, err, sync);
    pthread_mutex_unlock(&G);
    return err ? fail(err) : cudaSuccess;
}

EXPORT cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, int kind, cudaStream_t h)
{
    RT_ENTER(cudaMemcpyAsync, cudaErrorUnknown);
    RT_NEED_DEVICE();
    return emu_copy(dst, n, src, n, n, 1, kind, h, 0);
}

EXPORT cudaError_t cudaMemsetAsync(void *p, int value, size_t n, cudaStream_t h)
{
    RT_ENTER(cudaMemsetAsync, cudaErrorUnknown);
    RT_NEED_DEVICE();
    return emu_set(p, (unsigned char)value, n, 1, h, 0);
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
    cudaMemPoolAttrUsedMemCurrent = 7, cudaMemPoolAttrUsedMemHigh = 8, cudaMemPoolAttrAllocationType = 9,
    cudaMemPoolAttrExportHandleTypes = 10, cudaMemPoolAttrLocationId = 11, cudaMemPoolAttrLocationType = 12,
    cudaMemPoolAttrMaxPoolSize = 13,
    cudaErrorHostMemoryAlreadyRegistered = 712, cudaErrorHostMemoryNotRegistered = 713,
};

typedef struct { char *base; size_t cap; } block_t;

/* A free block (reserved, unused) of a pool: in the bucket of its capacity (newest first) and in the
 * pool's list in return order. */
typedef struct fblock {
    block_t b;
    struct fblock *next_same;       /* the next older block of the same capacity */
    struct fblock *newer, *older;   /* return order */
} fblock_t;

/* The free blocks of one capacity, a node of the pool's tree of capacities. */
typedef struct {
    tnode_t node;                   /* key: cap */
    fblock_t *head;                 /* newest first */
} bucket_t;

struct mempool {
    int ready;
    int reuse[3];                   /* the int attributes 1-3 */
    uint64_t threshold;
    uint64_t reserved, reserved_high, used, used_high;
    tnode_t *sizes;                 /* bucket_t by capacity */
    fblock_t *newest;               /* the free blocks in return order, newest first */
    size_t nblocks;                 /* free blocks */
    int managed;                    /* a pool of managed memory (its allocations are managed) */
    int dev;                        /* the device its memory is counted against; -1: pinned host memory */
    int alloc_type, loc_type, loc_id, handle_types;     /* its properties (cudaMemPoolProps) */
    uint64_t max_size;
    cudaMemPool_t handle;           /* NULL once destroyed */
};

static mempool_t g_pools[MAX_DEVICES];

static int pool_on_host(const mempool_t *mp) { return mp->dev < 0; }

static cudaMemPool_t pool_handle(int dev)
{
    return (cudaMemPool_t)(uintptr_t)(POOL_HANDLE_BASE + ((uint64_t)dev << 4) + TAG_POOL);
}

static mempool_t *pool_of(int dev)
{
    mempool_t *mp = &g_pools[dev];
    if (!mp->ready) {
        mp->ready = 1;
        mp->reuse[0] = mp->reuse[1] = mp->reuse[2] = 1;
        mp->dev = mp->loc_id = dev;
        mp->alloc_type = mp->loc_type = 1;  /* pinned memory on a device */
        mp->handle = pool_handle(dev);
    }
    return mp;
}

/* What a pool handle names: the pool, its device (-1 for pinned host memory), which devices it grants
 * access (cudaMemPoolSetAccess), and whether it is a location's default pool (which cannot be destroyed).
 * The default pools' handles hold the device (ids 0 .. MAX_DEVICES-1); pools made by cudaMemPoolCreate
 * have the ids above: a slot (reused once its pool is destroyed, so that creating and destroying pools
 * leaves nothing behind) and the slot's generation, so that a destroyed pool's handle never names a
 * later one. */
typedef struct { mempool_t *mp; int dev, fixed; unsigned char access[MAX_DEVICES]; } poolrec_t;
static poolrec_t g_defpools[MAX_DEVICES];
#define SLOT_BITS 20                /* at most 2^20 created pools alive at once */
static poolrec_t **g_upools;        /* created pools by slot; NULL when free */
static uint64_t *g_upool_gen;       /* each slot's generation */
static size_t *g_freeslots;         /* free slots below g_nupools */
static size_t g_nupools, g_capupools, g_nfreeslots;
static size_t g_npoolrecs;          /* created pools' records: live pools, and destroyed ones still in use */
static cudaMemPool_t g_curpool[MAX_DEVICES];  /* cudaDeviceSetMemPool; NULL: the default pool */
#define LOC_SLOTS (MAX_DEVICES + 4)
static cudaMemPool_t g_locdefault[LOC_SLOTS], g_loccurrent[LOC_SLOTS];  /* pools by location (below) */

static cudaMemPool_t pool_handle_of(size_t slot, uint64_t gen)
{
    uint64_t id = MAX_DEVICES + slot + (gen << SLOT_BITS);
    return (cudaMemPool_t)(uintptr_t)(POOL_HANDLE_BASE + (id << 4) + TAG_POOL);
}

/* The pool a handle names, NULL if none (G held). */
static poolrec_t *pool_lookup(cudaMemPool_t h)
{
    uint64_t v = (uint64_t)(uintptr_t)h;
    if (v < POOL_HANDLE_BASE || (v & 0xf) != TAG_POOL) return NULL;
    uint64_t id = (v - POOL_HANDLE_BASE) >> 4;
    if (id < (uint64_t)g_ndev) {
        poolrec_t *r = &g_defpools[id];
        if (!r->mp) { r->mp = pool_of((int)id); r->dev = (int)id; r->fixed = 1; }
        return r;
    }
    if (id < MAX_DEVICES) return NULL;
    uint64_t slot = (id - MAX_DEVICES) & ((1u << SLOT_BITS) - 1);
    if (slot >= g_nupools || !g_upools[slot] || g_upools[slot]->mp->handle != h) return NULL;
    return g_upools[slot];
}

/* The device's current pool (G held). */
static cudaMemPool_t current_pool(int dev)
{
    return g_curpool[dev] ? g_curpool[dev] : pool_handle(dev);
}

/* Spare free-list records, so that the steady state (a block taken and returned over and over) does not
 * call malloc and free for them each time: at most SPARE_MAX of each kind are kept.  G held. */
#define SPARE_MAX 64
static fblock_t *g_spare_fb;        /* linked through next_same */
static bucket_t *g_spare_bk;        /* linked through head (cast) */
static int g_nspare_fb, g_nspare_bk;

static fblock_t *fblock_new(void)
{
    fblock_t *f = g_spare_fb;
    if (!f) return malloc(sizeof *f);
    g_spare_fb = f->next_same;
    g_nspare_fb--;
    return f;
}

static void fblock_drop(fblock_t *f)
{
    if (g_nspare_fb >= SPARE_MAX) {
        free(f);
        return;
    }
    f->next_same = g_spare_fb;
    g_spare_fb = f;
    g_nspare_fb++;
}

static bucket_t *bucket_new(void)
{
    bucket_t *bk = g_spare_bk;
    if (!bk) return malloc(sizeof *bk);
    g_spare_bk = (bucket_t *)(void *)bk->head;
    g_nspare_bk--;
    return bk;
}

static void bucket_drop(bucket_t *bk)
{
    if (g_nspare_bk >= SPARE_MAX) {
        free(bk);
        return;
    }
    bk->head = (fblock_t *)(void *)g_spare_bk;
    g_spare_bk = bk;
    g_nspare_bk++;
}

/* Takes free block f, the newest of its bucket bk, out of the pool's structures and frees f.  G held. */
static block_t pool_unlink(mempool_t *mp, bucket_t *bk, fblock_t *f)
{
    block_t b = f->b;
    bk->head = f->next_same;
    if (!bk->head) {
        mp->sizes = tree_remove(mp->sizes, bk->node.key);
        bucket_drop(bk);
    }
    if (f->newer) f->newer->older = f->older;
    else mp->newest = f->older;
    if (f->older) f->older->newer = f->newer;
    mp->nblocks--;
    fblock_drop(f);
    return b;
}

/* Bytes reserved by pool mp (negative: released), counted against its device's memory unless it is a
 * pool of pinned host memory.  G held. */
static void pool_charge(mempool_t *mp, size_t n, int sign)
{
    mp->reserved += sign > 0 ? n : -n;
    if (mp->dev >= 0) g_mem_used[mp->dev] += sign > 0 ? n : -n;
}

/* Frees unused blocks (last returned first) until at most `keep` bytes are reserved.  G held. */
static void pool_trim(mempool_t *mp, uint64_t keep)
{
    while (mp->reserved > keep && mp->newest) {
        fblock_t *f = mp->newest;   /* the newest block is the head of its bucket */
        bucket_t *bk = TREE_ENTRY(tree_find(mp->sizes, f->b.cap), bucket_t, node);
        block_t b = pool_unlink(mp, bk, f);
        range_release(b.base);
        free(b.base);
        pool_charge(mp, b.cap, -1);
    }
}

/* A destroyed pool goes once nothing of it is left: no allocation (live, or freed and not yet back) and
 * no free block.  G held. */
static void pool_gone_if_idle(mempool_t *mp)
{
    if (!mp->handle && !mp->used && !mp->nblocks && (mp < g_pools || mp >= g_pools + MAX_DEVICES)) {
        free(mp);
        g_npoolrecs--;
    }
}

/* A freed pool allocation's block, back in its pool (from alloc_unref, G held).  O(log k). */
static void pool_block_back(alloc_t *a)
{
    mempool_t *mp = a->pool;
    mp->used -= a->cap;
    tnode_t *n = tree_find(mp->sizes, a->cap);
    bucket_t *bk = n ? TREE_ENTRY(n, bucket_t, node) : bucket_new();
    fblock_t *f = bk ? fblock_new() : NULL;
    if (!f) {               /* cannot keep it: release it */
        if (bk && !n) bucket_drop(bk);
        range_release(a->base);
        free(a->base);
        pool_charge(mp, a->cap, -1);
        pool_gone_if_idle(mp);
        return;
    }
    if (!n) {
        bk->node.key = a->cap;
        bk->head = NULL;
        mp->sizes = tree_insert(mp->sizes, &bk->node);
    }
    f->b.base = a->base;
    f->b.cap = a->cap;
    f->next_same = bk->head;
    bk->head = f;
    f->newer = NULL;
    f->older = mp->newest;
    if (mp->newest) mp->newest->newer = f;
    mp->newest = f;
    mp->nblocks++;
    if (mp->reserved > mp->threshold) pool_trim(mp, mp->threshold);
    pool_gone_if_idle(mp);
}

/* Takes the best-fitting free block for `need` bytes: the smallest capacity that fits and is at most
 * twice `need` (the last returned of that capacity); 0 when none fits.  G held.  O(log k). */
static int pool_take(mempool_t *mp, size_t need, block_t *out)
{
    tnode_t *n = tree_ceil(mp->sizes, need);
    if (!n || n->key / 2 > need) return 0;
    bucket_t *bk = TREE_ENTRY(n, bucket_t, node);
    *out = pool_unlink(mp, bk, bk->head);
    return 1;
}

static void pool_use(mempool_t *mp, size_t cap)
{
    mp->used += cap;
    if (mp->used > mp->used_high) mp->used_high = mp->used;
}

/* n > 0 bytes from pool rec into a new allocation in the table, made on device adev (the stream's: a
 * device pool's own device, any device for pinned host memory), G held; dropped around the system
 * allocation: NULL with *err when out of memory.  A device's pool is limited by the device's free memory,
 * a pool of pinned host memory by the host's; either by its maximum size, when it was made with one. */
static alloc_t *pool_alloc(poolrec_t *rec, size_t n, int adev, cudaError_t *err)
{
    mempool_t *mp = rec->mp;
    int dev = mp->dev;
    if (dev >= 0) adev = dev;
    *err = cudaErrorMemoryAllocation;
    if ((dev >= 0 && n > g_mem_total[dev]) || n > SIZE_MAX - POOL_ROUND) return NULL;
    size_t need = (n + POOL_ROUND - 1) / POOL_ROUND * POOL_ROUND;
    block_t b;
    if (!pool_take(mp, need, &b)) {
        if (dev >= 0 && need > g_mem_total[dev] - g_mem_used[dev]) return NULL;
        if (mp->max_size && need > mp->max_size - (mp->reserved < mp->max_size ? mp->reserved : mp->max_size))
            return NULL;
        pool_charge(mp, need, 1);   /* reserve before the (unlocked) allocation */
        if (mp->reserved > mp->reserved_high) mp->reserved_high = mp->reserved;
        pthread_mutex_unlock(&G);
        void *mem = NULL;
        /* blocks are POOL_ROUND (512) multiples, so every allocation carved from one keeps the device's
         * texture alignment, as table_alloc's do */
        if (posix_memalign(&mem, dev < 0 ? 4096 : POOL_ROUND, need)) mem = NULL;
        pthread_mutex_lock(&G);
        if (!mem) {
            pool_charge(mp, need, -1);
            return NULL;
        }
        b.base = mem;
        b.cap = need;
    }
    alloc_t *a = calloc(1, sizeof *a);
    if (!a || alloc_table_room()) {
        free(a);
        alloc_t tmp = { .base = b.base, .size = n, .device = adev, .pool = mp, .cap = b.cap };
        pool_use(mp, b.cap);
        pool_block_back(&tmp);
        return NULL;
    }
    pool_use(mp, b.cap);
    a->base = b.base;
    a->size = n;
    a->device = adev;
    a->pool = mp;
    a->cap = b.cap;
    a->managed = mp->managed;   /* a managed pool's allocations are managed memory */
    alloc_table_insert(a);
    *err = cudaSuccess;
    return a;
}

static cudaError_t malloc_async(void **p, size_t n, cudaStream_t h, cudaMemPool_t pool)
{
    if (!p) return fail(cudaErrorInvalidValue);
    cudaError_t err = cudaSuccess;
    pthread_mutex_lock(&G);
    stream_t *s = get_stream(h, &err);
    poolrec_t *rec = s ? pool_lookup(pool ? pool : current_pool(s->device)) : NULL;
    if (!rec) {
        pthread_mutex_unlock(&G);
        return fail(s ? cudaErrorInvalidValue : err);
    }
    ensure_ctx(s->device);
    if (s->cap && capture_invalidated(s)) {   /* emu_capture.c */
        pthread_mutex_unlock(&G);
        return fail(cudaErrorStreamCaptureInvalidated);
    }
    if (n == 0) {
        pthread_mutex_unlock(&G);
        *p = NULL;
        return cudaSuccess;
    }
    alloc_t *a = pool_alloc(rec, n, s->device, &err);
    if (!a) {
        pthread_mutex_unlock(&G);
        return fail(err);
    }
    if (s->cap && (err = capture_mem_alloc(s, a))) {    /* emu_capture.c: a graph allocation */
        alloc_unref(alloc_detach(alloc_exact(a->base)));
        pthread_mutex_unlock(&G);
        return fail(err);
    }
    pthread_mutex_unlock(&G);
    *p = a->base;
    return cudaSuccess;
}

/* An explicit graph's alloc node (emu_graph_nodes.c): n > 0 bytes from device dev's default pool, G held
 * (dropped around the system allocation); NULL with *err. */
alloc_t *emu_graph_alloc(int dev, size_t n, cudaError_t *err)
{
    return pool_alloc(pool_lookup(pool_handle(dev)), n, dev, err);
}

EXPORT cudaError_t cudaMallocAsync(void **p, size_t n, cudaStream_t h)
{
    RT_ENTER(cudaMallocAsync, cudaErrorMemoryAllocation);
    RT_NEED_DEVICE();
    return malloc_async(p, n, h, NULL);
}

EXPORT cudaError_t cudaMallocFromPoolAsync(void **p, size_t n, cudaMemPool_t pool, cudaStream_t h)
{
    RT_ENTER(cudaMallocFromPoolAsync, cudaErrorMemoryAllocation);
    RT_NEED_DEVICE();
    if (!pool) return fail(cudaErrorInvalidValue);
    return malloc_async(p, n, h, pool);
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
    long i = alloc_exact(ptr);
    alloc_t *a = i >= 0 ? g_allocs[i] : NULL;
    if (s && !a) err = cudaErrorInvalidValue;
    else if (s && s->cap) {                     /* emu_capture.c: a free node, the graph keeps the memory */
        err = capture_mem_free(s, a);
        pthread_mutex_unlock(&G);
        free(it);
        return err ? fail(err) : cudaSuccess;
    }
    if (s && a) err = implicit_sync(s);
    if (err) {
        pthread_mutex_unlock(&G);
        free(it);
        return fail(err);
    }
    ensure_ctx(s->device);
    alloc_detach(i);
    int managed = a->managed;
    if (!s->head && s->state == ST_IDLE) {
        free(it);               /* nothing queued: the stream reaches the free now */
        alloc_unref(a);
    } else {
        it->dst = a->base;
        it->a1 = a;
        enqueue_raw(s, it);
    }
    pthread_mutex_unlock(&G);
    if (managed && emu_advice_forget) emu_advice_forget(ptr);
    return cudaSuccess;
}

/* The default pool (current: 0) or the current pool (current: 1) of device `dev` into *out. */
static cudaError_t device_pool(cudaMemPool_t *out, int dev, int current)
{
    if (!out) return fail(cudaErrorInvalidValue);
    if (dev < 0 || dev >= g_ndev) return fail(cudaErrorInvalidDevice);
    pthread_mutex_lock(&G);
    *out = current ? current_pool(dev) : pool_handle(dev);
    pthread_mutex_unlock(&G);
    return cudaSuccess;
}

EXPORT cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t *out, int dev)
{
    RT_ENTER(cudaDeviceGetDefaultMemPool, cudaErrorUnknown);
    RT_NEED_DEVICE();
    return device_pool(out, dev, 0);
}

EXPORT cudaError_t cudaDeviceGetMemPool(cudaMemPool_t *out, int dev)
{
    RT_ENTER(cudaDeviceGetMemPool, cudaErrorUnknown);
    RT_NEED_DEVICE();
    return device_pool(out, dev, 1);
}

EXPORT cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t h, int attr, void *value)
{
    RT_ENTER(cudaMemPoolGetAttribute, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (!value) return fail(cudaErrorInvalidValue);
    cudaError_t err = cudaSuccess;
    pthread_mutex_lock(&G);
    poolrec_t *rec = pool_lookup(h);
    if (!rec) {
        pthread_mutex_unlock(&G);
        return fail(cudaErrorInvalidValue);
    }
    mempool_t *mp = rec->mp;
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
    case cudaMemPoolAttrAllocationType: *(int *)value = mp->alloc_type; break;
    case cudaMemPoolAttrExportHandleTypes: *(int *)value = mp->handle_types; break;
    case cudaMemPoolAttrLocationId: *(int *)value = mp->loc_id; break;
    case cudaMemPoolAttrLocationType: *(int *)value = mp->loc_type; break;
    case cudaMemPoolAttrMaxPoolSize: v = mp->max_size; break;
    default: err = cudaErrorInvalidValue; break;
    }
    if (!err && attr >= cudaMemPoolAttrReleaseThreshold && (attr <= cudaMemPoolAttrUsedMemHigh ||
                                                            attr == cudaMemPoolAttrMaxPoolSize))
        memcpy(value, &v, sizeof v);
    pthread_mutex_unlock(&G);
    return err ? fail(err) : cudaSuccess;
}

/* The high watermarks can only be reset (to the current value) by setting 0. */
EXPORT cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t h, int attr, void *value)
{
    RT_ENTER(cudaMemPoolSetAttribute, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (!value) return fail(cudaErrorInvalidValue);
    cudaError_t err = cudaSuccess;
    uint64_t v = 0;
    if (attr >= cudaMemPoolAttrReleaseThreshold) memcpy(&v, value, sizeof v);
    pthread_mutex_lock(&G);
    poolrec_t *rec = pool_lookup(h);
    if (!rec) {
        pthread_mutex_unlock(&G);
        return fail(cudaErrorInvalidValue);
    }
    mempool_t *mp = rec->mp;
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
    pthread_mutex_lock(&G);
    poolrec_t *rec = pool_lookup(h);
    if (rec) pool_trim(rec->mp, keep);
    pthread_mutex_unlock(&G);
    return rec ? cudaSuccess : fail(cudaErrorInvalidValue);
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

/* [p, p+n) lies inside one pinned range (mapped into the device address space, as with UVA).  G held. */
static int host_mapped(const void *p, size_t n)
{
    long i = host_floor(p);
    if (i < 0) return 0;
    size_t off = (uintptr_t)p - (uintptr_t)g_host[i].base;
    return off < g_host[i].size && n <= g_host[i].size - off;
}

/* The PTX engine's view of memory (emu_launch.c's ptx_env): module variables are allocations of their
 * device (so copies, cudaPointerGetAttributes and the bounds checks see them), made and freed without the
 * runtime's prologue (no capture prohibition, no last error).  NULL when out of memory. */
void *emu_mem_module_alloc(int dev, size_t n, size_t align)
{
    void *p = NULL;
    if (!n) n = 1;
    if (align & (align - 1)) return NULL;      /* PTX's .align is a power of two (the parser checks) */
    int saved = t_last;
    cudaError_t e = table_alloc(&p, n, dev, 0, align);
    t_last = saved;
    if (e) return NULL;
    memset(p, 0, n);
    return p;
}

void emu_mem_module_free_locked(void *p)
{
    long i = p ? alloc_exact(p) : -1;
    if (i >= 0) alloc_unref(alloc_detach(i));
}

void emu_mem_module_free(void *p)
{
    pthread_mutex_lock(&G);
    emu_mem_module_free_locked(p);
    pthread_mutex_unlock(&G);
}

/* 1 when [addr, addr + n) lies inside one live allocation (device, managed, pool, module variable) or
 * pinned host range, whose bounds go to *lo / *hi; else 0.  G not held.  What a kernel may touch: an
 * allocation's bytes up to its next 256-byte boundary (cudaMalloc's granule: on a GPU an access just past
 * a buffer's end is no fault, and numba's own tests make such accesses, e.g. test_dispatcher's axpy of 16
 * threads over 10-element arrays, test_localmem's writes of 10 elements into a 1-element array; the
 * emulator allocates those bytes), while copies and sets keep to the allocation's size. */
int emu_mem_bounds(uint64_t addr, size_t n, uint64_t *lo, uint64_t *hi)
{
    const void *p = (const void *)(uintptr_t)addr;
    int ok = 0;
    pthread_mutex_lock(&G);
    long i = alloc_floor(p);
    alloc_t *a = i >= 0 ? g_allocs[i] : NULL;
    size_t span = a ? (a->size + 255) & ~(size_t)255 : 0;
    if (a && a->pool && a->cap < span) span = a->cap;
    if (a && addr - (uintptr_t)a->base < span) {
        ok = n <= span - (addr - (uintptr_t)a->base);
        *lo = (uintptr_t)a->base;
        *hi = (uintptr_t)a->base + span;
    } else {
        long i = host_floor(p);
        if (i >= 0 && addr - (uintptr_t)g_host[i].base < g_host[i].size) {
            ok = n <= g_host[i].size - (addr - (uintptr_t)g_host[i].base);
            *lo = (uintptr_t)g_host[i].base;
            *hi = (uintptr_t)g_host[i].base + g_host[i].size;
        }
    }
    pthread_mutex_unlock(&G);
    return ok;
}

/* Fills *at for pinned host memory: 1 if p is inside a range.  G held. */
static int host_attributes(const void *p, struct cudaPointerAttributes *at)
{
    long i = host_floor(p);
    if (i < 0 || (uintptr_t)p >= (uintptr_t)g_host[i].base + g_host[i].size) return 0;
    memset(at, 0, sizeof *at);
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
    int host = a && a->pool && a->pool->dev < 0;  /* from a pool of pinned host memory */
    memset(at, 0, sizeof *at);                    /* CUDA 13's reserved bytes too */
    at->type = a ? (a->managed ? 3 : host ? 1 : 2) : 0;     /* cudaMemoryTypeManaged / Host / Device */
    at->device = a ? a->device : -2;
    at->devicePointer = a ? (void *)p : NULL;
    at->hostPointer = a && (a->managed || host) ? (void *)p : NULL;
    pthread_mutex_unlock(&G);
    return cudaSuccess;
}

/* ===================================================================================================
 * What the driver layer (emu_driver.c, the libcuda.so.1 stand-in) needs beyond the calls above, as
 * runtime entry points or hidden helpers on the same state: created pools and the current pool,
 * managed memory, synchronous, 2D and peer copies, host device pointers, IPC memory handles, and
 * what cuPointerGetAttribute / cuMemGetAddressRange report.
 * =================================================================================================== */

/* ------------------------------------------------------------- created pools */

struct cudaMemPoolProps_head { int allocType, handleTypes, locType, locId; void *win32; size_t maxSize; };
enum { cudaMemAllocationTypePinned = 1, cudaMemAllocationTypeManaged = 2, cudaMemLocationTypeDevice = 1,
       cudaMemLocationTypeHost = 2, cudaMemLocationTypeHostNuma = 3, cudaMemLocationTypeHostNumaCurrent = 4,
       cudaMemAccessFlagsProtNone = 0, cudaMemAccessFlagsProtReadWrite = 3, HOST_NUMA_NODES = 1,
       LOCATION_LOCALITY_DOMAIN = 6 };

/* The pool's device and its location, from the properties; an error for properties the driver refuses.
 * Pinned memory: on a device, or on the host (its one NUMA node, node 0, named or not: a HOST location's
 * id is ignored, and such a pool cannot be exported: handleTypes 0); managed memory: preferring a device,
 * the host or nothing (counted against that device, or the current one). */
static cudaError_t pool_location(const struct cudaMemPoolProps_head *pr, int *dev, int *loc_id)
{
    int managed = pr->allocType == cudaMemAllocationTypeManaged;
    *dev = *loc_id = pr->locId;
    if (pr->allocType != cudaMemAllocationTypePinned && !managed) return cudaErrorInvalidValue;
    if (pr->locType == cudaMemLocationTypeDevice)
        return pr->locId >= 0 && pr->locId < g_ndev ? cudaSuccess : cudaErrorInvalidDevice;
    if (managed) {
        if (pr->locType != 0 && (pr->locType < cudaMemLocationTypeHost || pr->locType > cudaMemLocationTypeHostNumaCurrent))
            return cudaErrorInvalidValue;
        *dev = t_dev;
        return cudaSuccess;
    }
    *dev = -1;
    if (pr->locType == cudaMemLocationTypeHost) {
        *loc_id = 0;
        return pr->handleTypes ? cudaErrorInvalidValue : cudaSuccess;
    }
    if (pr->locType == cudaMemLocationTypeHostNuma && pr->locId >= 0 && pr->locId < HOST_NUMA_NODES) return cudaSuccess;
    if (pr->locType == LOCATION_LOCALITY_DOMAIN) return cudaErrorNotSupported;     /* not modelled */
    return cudaErrorInvalidValue;       /* none, the current NUMA node, a node the host has not, others */
}

/* A slot for a new created pool (G held): its index, or -1 when out of memory or slots. */
static long pool_slot(void)
{
    if (g_nfreeslots) return (long)g_freeslots[--g_nfreeslots];
    if (g_nupools == (size_t)1 << SLOT_BITS) return -1;
    if (g_nupools == g_capupools) {
        size_t nc = g_capupools ? g_capupools * 2 : 16;
        poolrec_t **nu = realloc(g_upools, nc * sizeof *nu);
        if (nu) g_upools = nu;
        uint64_t *ng = nu ? realloc(g_upool_gen, nc * sizeof *ng) : NULL;
        if (ng) g_upool_gen = ng;
        size_t *nf = ng ? realloc(g_freeslots, nc * sizeof *nf) : NULL;
        if (!nf) return -1;
        g_freeslots = nf;
        g_capupools = nc;
    }
    g_upool_gen[g_nupools] = 0;
    return (long)g_nupools++;
}

/* Makes a pool (G held): maxSize is the most it reserves (0: no limit but the device's or the host's);
 * the export handle types are kept (cudaMemPoolAttrExportHandleTypes) for the driver layer's exports. */
static cudaError_t pool_create(cudaMemPool_t *out, const struct cudaMemPoolProps_head *pr)
{
    int dev, loc_id;
    cudaError_t err = pool_location(pr, &dev, &loc_id);
    if (err) return err;
    poolrec_t *rec = calloc(1, sizeof *rec);
    mempool_t *mp = calloc(1, sizeof *mp);
    long slot = rec && mp ? pool_slot() : -1;
    if (slot < 0) {
        free(rec);
        free(mp);
        return cudaErrorMemoryAllocation;
    }
    g_npoolrecs++;
    mp->ready = 1;
    mp->reuse[0] = mp->reuse[1] = mp->reuse[2] = 1;
    mp->managed = pr->allocType == cudaMemAllocationTypeManaged;
    mp->dev = dev;
    mp->alloc_type = pr->allocType;
    mp->loc_type = pr->locType;
    mp->loc_id = loc_id;
    mp->handle_types = pr->handleTypes;
    mp->max_size = pr->maxSize;
    mp->handle = pool_handle_of((size_t)slot, g_upool_gen[slot]);
    rec->mp = mp;
    rec->dev = dev;
    g_upools[slot] = rec;
    *out = mp->handle;
    return cudaSuccess;
}

/* A destroyed pool's handle is invalid at once; its free blocks are released, the blocks of allocations
 * still live as they are freed (its release threshold becomes 0), and its records once the last one is. */
EXPORT cudaError_t cudaMemPoolCreate(cudaMemPool_t *out, const void *props)
{
    RT_ENTER(cudaMemPoolCreate, cudaErrorMemoryAllocation);
    RT_NEED_DEVICE();
    if (!out || !props) return fail(cudaErrorInvalidValue);
    struct cudaMemPoolProps_head pr;
    memcpy(&pr, props, sizeof pr);
    pthread_mutex_lock(&G);
    cudaError_t err = pool_create(out, &pr);
    pthread_mutex_unlock(&G);
    return err ? fail(err) : cudaSuccess;
}

EXPORT cudaError_t cudaMemPoolDestroy(cudaMemPool_t h)
{
    RT_ENTER(cudaMemPoolDestroy, cudaErrorUnknown);
    RT_NEED_DEVICE();
    pthread_mutex_lock(&G);
    poolrec_t *rec = pool_lookup(h);
    int ok = rec && !rec->fixed;
    if (ok) {
        size_t slot = ((((uint64_t)(uintptr_t)h - POOL_HANDLE_BASE) >> 4) - MAX_DEVICES) & ((1u << SLOT_BITS) - 1);
        g_upools[slot] = NULL;
        g_upool_gen[slot]++;
        g_freeslots[g_nfreeslots++] = slot;
        if (rec->dev >= 0 && g_curpool[rec->dev] == h) g_curpool[rec->dev] = NULL;
        for (int i = 0; i < LOC_SLOTS; i++)
            if (g_loccurrent[i] == h) g_loccurrent[i] = NULL;
        mempool_t *mp = rec->mp;
        mp->handle = NULL;
        mp->threshold = 0;
        pool_trim(mp, 0);
        pool_gone_if_idle(mp);
        free(rec);
    }
    pthread_mutex_unlock(&G);
    return ok ? cudaSuccess : fail(cudaErrorInvalidValue);
}

/* For leak tests (accelEmuLiveStreams' companion): the records of pools made by cudaMemPoolCreate (a
 * destroyed pool's go with its last allocation), and in *slots (if not NULL) the pool table's size. */
EXPORT size_t accelEmuLivePools(size_t *slots)
{
    pthread_mutex_lock(&G);
    size_t n = g_npoolrecs;
    if (slots) *slots = g_nupools;
    pthread_mutex_unlock(&G);
    return n;
}

EXPORT cudaError_t cudaDeviceSetMemPool(int dev, cudaMemPool_t h)
{
    RT_ENTER(cudaDeviceSetMemPool, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (dev < 0 || dev >= g_ndev) return fail(cudaErrorInvalidDevice);
    pthread_mutex_lock(&G);
    poolrec_t *rec = pool_lookup(h);
    int ok = rec && rec->dev == dev;
    if (ok) g_curpool[dev] = h == pool_handle(dev) ? NULL : h;
    pthread_mutex_unlock(&G);
    return ok ? cudaSuccess : fail(cudaErrorInvalidValue);
}

/* CUDA 13's pools by location and allocation type (cudaMemGetMemPool, cudaMemSetMemPool,
 * cudaMemGetDefaultMemPool; the driver's cuMem*MemPool).  Pinned memory on a device: the device's pools
 * (cudaDeviceGetMemPool / cudaDeviceSetMemPool).  Pinned memory on the host (HOST, or its NUMA node 0) and
 * managed memory (for a device, the host or no location): a default pool made on first use, which cannot
 * be destroyed, and a current one, which must be a pool of that kind and location (a managed location's
 * current pool: any live pool).  A destroyed current pool leaves its location's default current. */
enum { LOC_MANAGED_HOST = MAX_DEVICES, LOC_MANAGED_NONE, LOC_PINNED_HOST, LOC_PINNED_NUMA };

/* The slot of location loc for allocation type `type` (-1: a device's pinned memory), or the error. */
static cudaError_t location_slot(const void *location, int type, int *slot, int *loc)
{
    if (!location) return cudaErrorInvalidValue;
    memcpy(loc, location, 2 * sizeof *loc);
    if (type != cudaMemAllocationTypePinned && type != cudaMemAllocationTypeManaged) return cudaErrorInvalidValue;
    if (loc[0] == cudaMemLocationTypeDevice) {
        if (loc[1] < 0 || loc[1] >= g_ndev) return cudaErrorInvalidDevice;
        *slot = type == cudaMemAllocationTypePinned ? -1 : loc[1];
        return cudaSuccess;
    }
    if (type == cudaMemAllocationTypeManaged) {             /* none, the host or a host NUMA node */
        if (loc[0] < 0 || loc[0] > cudaMemLocationTypeHostNumaCurrent) return cudaErrorInvalidValue;
        *slot = loc[0] ? LOC_MANAGED_HOST : LOC_MANAGED_NONE;
        return cudaSuccess;
    }
    if (loc[0] == cudaMemLocationTypeHost) *slot = LOC_PINNED_HOST;
    else if (loc[0] == cudaMemLocationTypeHostNuma && loc[1] >= 0 && loc[1] < HOST_NUMA_NODES) *slot = LOC_PINNED_NUMA;
    else if (loc[0] == LOCATION_LOCALITY_DOMAIN) {
        static atomic_int seen;
        if (emu_trace_unsupported) emu_trace_unsupported("cudaMemGetMemPool / cuMemGetMemPool (locality domains)", &seen);
        return cudaErrorNotSupported;
    } else return cudaErrorInvalidValue;
    return cudaSuccess;
}

/* The default (current: 0) or current pool of a location into *out (G held). */
static cudaError_t location_pool(cudaMemPool_t *out, const void *location, int type, int current)
{
    int slot, loc[2];
    cudaError_t err = location_slot(location, type, &slot, loc);
    if (err) return err;
    if (!out) return cudaErrorInvalidValue;
    if (slot < 0) {
        *out = current ? current_pool(loc[1]) : pool_handle(loc[1]);
        return cudaSuccess;
    }
    if (!g_locdefault[slot]) {
        struct cudaMemPoolProps_head pr = { type, 0, loc[0], loc[1], NULL, 0 };
        cudaMemPool_t made;
        if ((err = pool_create(&made, &pr))) return err;
        pool_lookup(made)->fixed = 1;
        g_locdefault[slot] = made;
    }
    *out = current && g_loccurrent[slot] ? g_loccurrent[slot] : g_locdefault[slot];
    return cudaSuccess;
}

static cudaError_t location_pool_entry(cudaMemPool_t *out, const void *location, int type, int current)
{
    pthread_mutex_lock(&G);
    cudaError_t err = location_pool(out, location, type, current);
    pthread_mutex_unlock(&G);
    return err ? fail(err) : cudaSuccess;
}

EXPORT cudaError_t cudaMemGetMemPool(cudaMemPool_t *out, const void *location, int type)
{
    RT_ENTER(cudaMemGetMemPool, cudaErrorMemoryAllocation);
    RT_NEED_DEVICE();
    return location_pool_entry(out, location, type, 1);
}

EXPORT cudaError_t cudaMemGetDefaultMemPool(cudaMemPool_t *out, const void *location, int type)
{
    RT_ENTER(cudaMemGetDefaultMemPool, cudaErrorMemoryAllocation);
    RT_NEED_DEVICE();
    return location_pool_entry(out, location, type, 0);
}

EXPORT cudaError_t cudaMemSetMemPool(const void *location, int type, cudaMemPool_t h)
{
    RT_ENTER(cudaMemSetMemPool, cudaErrorUnknown);
    RT_NEED_DEVICE();
    int slot, loc[2];
    cudaError_t err = location_slot(location, type, &slot, loc);
    if (err) return fail(err);
    pthread_mutex_lock(&G);
    poolrec_t *rec = pool_lookup(h);
    mempool_t *mp = rec ? rec->mp : NULL;
    int ok = rec != NULL;
    if (ok && slot < 0) ok = rec->dev == loc[1];
    else if (ok && slot >= LOC_PINNED_HOST)
        ok = mp->dev < 0 && mp->loc_type == (slot == LOC_PINNED_HOST ? cudaMemLocationTypeHost : cudaMemLocationTypeHostNuma);
    if (ok && slot < 0) g_curpool[loc[1]] = h == pool_handle(loc[1]) ? NULL : h;
    else if (ok) g_loccurrent[slot] = h;
    pthread_mutex_unlock(&G);
    return ok ? cudaSuccess : fail(cudaErrorInvalidValue);
}

typedef struct { int type, id, flags; } access_desc_t;    /* cudaMemAccessDesc */

/* The pool's own device always has read-write access; others have what was set (none at first).  A pool
 * of pinned host memory is the host's: the host (a HOST location, or the host's NUMA node) always has
 * read-write access, devices what was set (none at first: copies reach it from any device, as they reach
 * cuMemHostAlloc memory, but kernels would need access).  Every device can reach every other's memory in
 * the emulator, so access changes nothing else. */
static int host_location(int type, int id)
{
    return type == cudaMemLocationTypeHost || (type == cudaMemLocationTypeHostNuma && id >= 0 && id < HOST_NUMA_NODES);
}

EXPORT cudaError_t cudaMemPoolSetAccess(cudaMemPool_t h, const void *descs, size_t count)
{
    RT_ENTER(cudaMemPoolSetAccess, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (count && !descs) return fail(cudaErrorInvalidValue);
    cudaError_t err = cudaSuccess;
    pthread_mutex_lock(&G);
    poolrec_t *rec = pool_lookup(h);
    if (!rec) err = cudaErrorInvalidValue;
    for (size_t i = 0; !err && i < count; i++) {       /* all checked before any is applied */
        access_desc_t d;
        memcpy(&d, (const char *)descs + i * sizeof d, sizeof d);
        if (d.type != cudaMemLocationTypeDevice)
            err = rec->dev < 0 && host_location(d.type, d.id) && d.flags == cudaMemAccessFlagsProtReadWrite
                  ? cudaSuccess : cudaErrorInvalidValue;
        else if (d.id < 0 || d.id >= g_ndev) err = cudaErrorInvalidDevice;
        else if (d.flags != cudaMemAccessFlagsProtNone && d.flags != cudaMemAccessFlagsProtReadWrite)
            err = cudaErrorInvalidValue;
        else if (d.id == rec->dev && d.flags != cudaMemAccessFlagsProtReadWrite) err = cudaErrorInvalidValue;
    }
    for (size_t i = 0; !err && i < count; i++) {
        access_desc_t d;
        memcpy(&d, (const char *)descs + i * sizeof d, sizeof d);
        if (d.type == cudaMemLocationTypeDevice) rec->access[d.id] = (unsigned char)d.flags;
    }
    pthread_mutex_unlock(&G);
    return err ? fail(err) : cudaSuccess;
}

EXPORT cudaError_t cudaMemPoolGetAccess(int *flags, cudaMemPool_t h, const void *location)
{
    RT_ENTER(cudaMemPoolGetAccess, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (!flags || !location) return fail(cudaErrorInvalidValue);
    int loc[2];
    memcpy(loc, location, sizeof loc);
    int host = host_location(loc[0], loc[1]);
    if (loc[0] != cudaMemLocationTypeDevice && !host) return fail(cudaErrorInvalidValue);
    if (!host && (loc[1] < 0 || loc[1] >= g_ndev)) return fail(cudaErrorInvalidDevice);
    pthread_mutex_lock(&G);
    poolrec_t *rec = pool_lookup(h);
    int ok = rec && (!host || rec->dev < 0);        /* a device's pool answers for devices only */
    if (ok) *flags = host || loc[1] == rec->dev ? cudaMemAccessFlagsProtReadWrite : rec->access[loc[1]];
    pthread_mutex_unlock(&G);
    return ok ? cudaSuccess : fail(cudaErrorInvalidValue);
}

/* ------------------------------------------------------------ managed memory */

#define MEM_ATTACH_GLOBAL 1u
#define MEM_ATTACH_HOST 2u

/* Host memory like every allocation here, so the host and every "device" use it directly; it is
 * counted against the current device's memory as cudaMalloc is (a real GPU counts it once resident). */
EXPORT cudaError_t cudaMallocManaged(void **p, size_t n, unsigned int flags)
{
    RT_ENTER(cudaMallocManaged, cudaErrorMemoryAllocation);
    RT_NEED_DEVICE();
    if (!p || !n || (flags != MEM_ATTACH_GLOBAL && flags != MEM_ATTACH_HOST)) return fail(cudaErrorInvalidValue);
    ensure_ctx(t_dev);
    return table_alloc(p, n, t_dev, 1, 256);
}

/* ------------------------------------------------------------------- copies */

/* Synchronous copies and sets run on the legacy default stream and return once done. */
EXPORT cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, int kind)
{
    RT_ENTER(cudaMemcpy, cudaErrorUnknown);
    RT_NEED_DEVICE();
    return emu_copy(dst, n, src, n, n, 1, kind, NULL, 1);
}

EXPORT cudaError_t cudaMemset(void *p, int value, size_t n)
{
    RT_ENTER(cudaMemset, cudaErrorUnknown);
    RT_NEED_DEVICE();
    return emu_set(p, (unsigned char)value, n, 1, NULL, 1);
}

EXPORT cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                                     size_t height, int kind, cudaStream_t h)
{
    RT_ENTER(cudaMemcpy2DAsync, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (height > 1 && (dpitch < width || spitch < width)) return fail(cudaErrorInvalidValue);
    return emu_copy(dst, dpitch, src, spitch, width, height, kind, h, 0);
}

EXPORT cudaError_t cudaMemcpyPeerAsync(void *dst, int dstdev, const void *src, int srcdev, size_t n, cudaStream_t h)
{
    RT_ENTER(cudaMemcpyPeerAsync, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (dstdev < 0 || dstdev >= g_ndev || srcdev < 0 || srcdev >= g_ndev) return fail(cudaErrorInvalidDevice);
    return emu_copy(dst, n, src, n, n, 1, 3, h, 0);
}

/* ---------------------------------------------------------- host memory */

/* Pinned memory is its own device address (unified addressing); flags must be 0. */
EXPORT cudaError_t cudaHostGetDevicePointer(void **dptr, void *p, unsigned int flags)
{
    RT_ENTER(cudaHostGetDevicePointer, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (!dptr || flags) return fail(cudaErrorInvalidValue);
    pthread_mutex_lock(&G);
    long i = host_floor(p);
    int ok = i >= 0 && (uintptr_t)p < (uintptr_t)g_host[i].base + g_host[i].size;
    pthread_mutex_unlock(&G);
    if (!ok) return fail(cudaErrorInvalidValue);
    *dptr = p;
    return cudaSuccess;
}

/* ----------------------------------------------------------- IPC memory */

/* A handle names an allocation of this process (its base, size and device); opening one gives back
 * that allocation's address (the emulator has one process's memory only: a handle from another
 * process is cudaErrorNotSupported).  Pool allocations have none. */
typedef struct { char magic[8]; int32_t pid, device; uint64_t base, size; char pad[32]; } ipcmem_t;
_Static_assert(sizeof(ipcmem_t) == 64, "cudaIpcMemHandle_t");
static const char IPC_MAGIC[8] = "accelipc";
typedef struct { void *base; long opens; } ipcopen_t;
static ipcopen_t *g_ipcopen;
static size_t g_nipcopen, g_capipcopen;

typedef struct { char reserved[64]; } cudaIpcMemHandle_t;

EXPORT cudaError_t cudaIpcGetMemHandle(cudaIpcMemHandle_t *handle, void *p)
{
    RT_ENTER(cudaIpcGetMemHandle, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (!handle) return fail(cudaErrorInvalidValue);
    pthread_mutex_lock(&G);
    alloc_t *a = alloc_containing(p);
    int ok = a && a->base == p && !a->pool && !a->managed;
    ipcmem_t h = { .pid = (int32_t)getpid() };
    if (ok) {
        memcpy(h.magic, IPC_MAGIC, sizeof h.magic);
        h.device = a->device;
        h.base = (uint64_t)(uintptr_t)a->base;
        h.size = a->size;
    }
    pthread_mutex_unlock(&G);
    if (!ok) return fail(cudaErrorInvalidValue);
    memcpy(handle, &h, sizeof h);
    return cudaSuccess;
}

EXPORT cudaError_t cudaIpcOpenMemHandle(void **out, cudaIpcMemHandle_t handle, unsigned int flags)
{
    RT_ENTER(cudaIpcOpenMemHandle, cudaErrorMemoryAllocation);
    RT_NEED_DEVICE();
    if (!out || flags > 1) return fail(cudaErrorInvalidValue);
    ipcmem_t h;
    memcpy(&h, &handle, sizeof h);
    if (memcmp(h.magic, IPC_MAGIC, sizeof h.magic)) return fail(cudaErrorInvalidValue);
    if (h.pid != (int32_t)getpid()) return fail(cudaErrorNotSupported);
    cudaError_t err = cudaSuccess;
    pthread_mutex_lock(&G);
    alloc_t *a = alloc_containing((void *)(uintptr_t)h.base);
    if (!a || (uint64_t)(uintptr_t)a->base != h.base || a->size != h.size || a->device != h.device)
        err = cudaErrorInvalidValue;        /* freed since the handle was made */
    size_t i = 0;
    while (!err && i < g_nipcopen && g_ipcopen[i].base != a->base) i++;
    if (!err && i == g_nipcopen) {
        if (g_nipcopen == g_capipcopen) {
            size_t nc = g_capipcopen ? g_capipcopen * 2 : 8;
            ipcopen_t *no = realloc(g_ipcopen, nc * sizeof *no);
            if (no) { g_ipcopen = no; g_capipcopen = nc; }
        }
        if (g_nipcopen == g_capipcopen) err = cudaErrorMemoryAllocation;
        else g_ipcopen[g_nipcopen++] = (ipcopen_t){ a->base, 0 };
    }
    if (!err) {
        g_ipcopen[i].opens++;
        *out = a->base;
    }
    pthread_mutex_unlock(&G);
    return err ? fail(err) : cudaSuccess;
}

EXPORT cudaError_t cudaIpcCloseMemHandle(void *p)
{
    RT_ENTER(cudaIpcCloseMemHandle, cudaErrorUnknown);
    RT_NEED_DEVICE();
    pthread_mutex_lock(&G);
    size_t i = 0;
    while (i < g_nipcopen && g_ipcopen[i].base != p) i++;
    int ok = p && i < g_nipcopen;
    if (ok && --g_ipcopen[i].opens == 0) g_ipcopen[i] = g_ipcopen[--g_nipcopen];
    pthread_mutex_unlock(&G);
    return ok ? cudaSuccess : fail(cudaErrorInvalidValue);
}

/* ----------------------------------------------------- pointer information */

/* What the emulator knows of address p, for cuPointerGetAttribute(s) and cuMemGetAddressRange: 0 when
 * it is neither an allocation nor pinned host memory. */
int emu_pointer_info(const void *p, emu_ptrinfo_t *out)
{
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&G);
    alloc_t *a = alloc_containing(p);
    long i = a ? -1 : host_floor(p);
    if (a) {
        out->kind = a->managed ? EMU_PTR_MANAGED : a->pool && a->pool->dev < 0 ? EMU_PTR_HOST : EMU_PTR_DEVICE;
        out->device = a->device;
        out->base = a->base;
        out->size = a->size;
        if (a->pool) out->pool = a->pool->handle;      /* NULL once the pool is destroyed */
    } else if (i >= 0 && (uintptr_t)p < (uintptr_t)g_host[i].base + g_host[i].size) {
        out->kind = EMU_PTR_HOST;
        out->device = g_host[i].device;
        out->base = g_host[i].base;
        out->size = g_host[i].size;
    }
    pthread_mutex_unlock(&G);
    return out->kind != EMU_PTR_NONE;
}

/* ------------------------------------------------------- hooks for graphs */

int emu_mem_range(const void *p, size_t n, alloc_t **out)
{
    return n ? dev_range(p, n, out) : 0;
}

int emu_mem_host_mapped(const void *p, size_t n)
{
    return host_mapped(p, n);
}

int emu_mem_revive(alloc_t *a)
{
    if (!a->freed) return 0;
    if (alloc_table_room()) return -1;
    if (!a->pool) g_mem_used[a->device] += a->size;
    a->freed = 0;
    alloc_table_insert(a);
    return 0;
}

void emu_mem_release(alloc_t *a)
{
    if (!a->freed) {
        long i = alloc_exact(a->base);
        if (i >= 0 && g_allocs[i] == a) alloc_unref(alloc_detach(i));
    }
    alloc_unref(a);
}
