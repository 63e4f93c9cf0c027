/* The emulated runtime's shared state, types and hot-path helpers, for its own files:
 *   emu_core.c    configuration and initialisation, fault injection, the handle registry (hash
 *                 table), error and version queries, the runtime library's driver entry points,
 *                 the emulator-only API (accelEmu*; accelEmuResetContexts is in emu_device.c)
 *   emu_device.c  devices, current device, primary contexts, device description
 *   emu_stream.c  streams, records, the worker pool, host functions, fork and unload
 *   emu_event.c   events, cross-stream waits, IPC event handles
 *   emu_memory.c  allocations, copies and memsets, stream-ordered pools, pinned host memory
 *   emu_capture.c stream capture (modes, fork / join, prohibited calls); emu_graph.c graphs, executable
 *                 graphs, launch (their shared types: emu_graph.h)
 * The model and the documented choices are in emu_core.c's top comment.
 *
 * Everything declared here is hidden (not exported).  Helpers on the hot paths (the RT_ENTER
 * prologue, fail(), handle lookup, record and item allocation) are macros or static inline so that
 * cudaGetDevice/cudaSetDevice/cudaStreamQuery/cudaEventQuery/cudaEventRecord make no more calls
 * than when the runtime was one file. */
#ifndef ACCEL_EMU_RUNTIME_H
#define ACCEL_EMU_RUNTIME_H

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "emu_tree.h"

#define EXPORT __attribute__((visibility("default")))

typedef int cudaError_t;
typedef void *cudaStream_t;
typedef void *cudaEvent_t;
typedef int CUresult;
typedef int CUdevice;
typedef void (*cudaHostFn_t)(void *);
typedef void *cudaMemPool_t;
typedef struct { char reserved[64]; } cudaIpcEventHandle_t;
/* CUDA 13's layout: CUDA 12's fields, then 64 reserved bytes, all of which the runtime writes (zeroed here),
 * so a caller with CUDA 12's 24-byte struct overruns it, as on a real CUDA 13 runtime.  The libcudart.so.12
 * stand-in converts (emu_standin12.c). */
struct cudaPointerAttributes { int type; int device; void *devicePointer; void *hostPointer; long reserved[8]; };
_Static_assert(sizeof(struct cudaPointerAttributes) == 8 + 2 * sizeof(void *) + 8 * sizeof(long),
               "CUDA 13 cudaPointerAttributes");
struct cudaDeviceProp;

enum {
    cudaSuccess = 0, cudaErrorInvalidValue = 1, cudaErrorMemoryAllocation = 2,
    cudaErrorInitializationError = 3, cudaErrorInvalidMemcpyDirection = 21,
    cudaErrorNoDevice = 100, cudaErrorInvalidDevice = 101,
    cudaErrorInvalidResourceHandle = 400, cudaErrorNotReady = 600,
    cudaErrorNotPermitted = 800, cudaErrorUnknown = 999,
    cudaErrorIllegalState = 401, cudaErrorNotSupported = 801,
    cudaErrorStreamCaptureUnsupported = 900, cudaErrorStreamCaptureInvalidated = 901,
    cudaErrorStreamCaptureMerge = 902, cudaErrorStreamCaptureUnmatched = 903,
    cudaErrorStreamCaptureUnjoined = 904, cudaErrorStreamCaptureIsolation = 905,
    cudaErrorStreamCaptureImplicit = 906,
    cudaErrorCapturedEvent = 907, cudaErrorStreamCaptureWrongThread = 908,
    cudaErrorGraphExecUpdateFailure = 910,
};
enum { CUDA_SUCCESS = 0, CUDA_ERROR_INVALID_VALUE = 1, CUDA_ERROR_NOT_INITIALIZED = 3,
       CUDA_ERROR_INVALID_DEVICE = 101, CUDA_ERROR_UNKNOWN = 999 };

#define STREAM_NONBLOCKING 1u
#define EV_BLOCKING_SYNC 1u
#define EV_DISABLE_TIMING 2u
#define EV_INTERPROCESS 4u
#define PRIO_LEAST 0
#define PRIO_GREATEST (-5)

#include "emu_tables.h"
#include "emu_internal.h"
#define MAX_DEVICES EMU_MAX_DEVICES

#pragma GCC visibility push(hidden)

/* ------------------------------------------------------ global state (emu_core.c) */

extern pthread_once_t g_once;
extern atomic_int g_ready;          /* emu_init has run: the entry points' one-load fast check */
extern cudaError_t g_init_err;      /* non-zero: bad configuration, every call fails */
extern int g_nphys;                 /* the machine's devices (ACCEL_EMU_DEVICES) */

/* The one lock over all mutable shared state, and its condition variables. */
extern pthread_mutex_t G;
extern pthread_cond_t g_done_cv;    /* any item completed */
extern pthread_cond_t g_work_cv;    /* run queue non-empty */
extern pthread_cond_t g_exit_cv;    /* a worker retired */
extern int g_waiters;               /* threads blocked on g_done_cv */

extern __thread int t_dev;          /* the calling thread's current device */
extern __thread int t_capmode;      /* its stream capture mode */
/* Non-NULL while this thread is a worker executing a host function: blocking
 * calls from there would wait on themselves, so they are refused. */
extern __thread void *t_in_hostfn;

extern pthread_key_t g_tls_key;     /* per-thread default streams, freed at thread exit */
extern int g_tls_key_made;

void emu_init(void);
void emu_init_once(void);           /* pthread_once(emu_init), then g_ready */
int install_fail_spec(const char *spec);

static inline cudaError_t fail(cudaError_t e) { t_last = e; return e; }

/* Lazy init of the emulator's state: one acquire load once done (as a real runtime's initialised check),
 * pthread_once before.  RT_INIT: the same for a runtime entry point, whose first call also initialises the
 * driver (emu_rt_init). */
#define INIT() do { \
        if (!atomic_load_explicit(&g_ready, memory_order_acquire)) emu_init_once(); \
    } while (0)
extern atomic_int g_rt_ready;
#define RT_INIT() do { \
        if (!atomic_load_explicit(&g_rt_ready, memory_order_acquire)) emu_rt_init(); \
    } while (0)

/* Prologue of every runtime entry point: lazy init, configuration error (or a forked child's refusal),
 * fault injection, then the current device's sticky error (RT_ENTER_DEV: the device queries and
 * selection, which work on a device whose context is dead).  Failures are recorded as the thread's last
 * error. */
#define RT_ENTER_DEV(sym, ferr) do { \
        RT_INIT(); \
        if (g_init_err) return fail(g_init_err); \
        if (EMU_FAULT(sym)) return fail(ferr); \
    } while (0)
#define RT_ENTER(sym, ferr) do { \
        RT_ENTER_DEV(sym, ferr); \
        int sticky_ = emu_sticky(t_dev); \
        if (sticky_) return fail(sticky_); \
    } while (0)
#define RT_NEED_DEVICE() do { if (g_ndev == 0) return fail(cudaErrorNoDevice); } while (0)

/* Driver entry points never touch the runtime's last error.  DRV_ENTER: one that needs the driver initialised
 * (cuInit or the runtime); DRV_ENTER_ANY: the version and error-string queries, which work before cuInit and in
 * a forked child (a malformed configuration still fails them). */
#define DRV_ENTER(sym) do { \
        INIT(); \
        if (g_init_err || !atomic_load_explicit(&g_drv_ready, memory_order_acquire)) \
            return CUDA_ERROR_NOT_INITIALIZED; \
        if (EMU_FAULT(sym)) return CUDA_ERROR_UNKNOWN; \
    } while (0)
#define DRV_ENTER_ANY(sym) do { \
        INIT(); \
        if (g_init_err && !g_forked) return CUDA_ERROR_NOT_INITIALIZED; \
        if (EMU_FAULT(sym)) return CUDA_ERROR_UNKNOWN; \
    } while (0)

/* The runtime makes dev's primary context current (emu_internal.h's g_ctx: 1). */
static inline void ensure_ctx(int dev)
{
    if (atomic_load_explicit(&g_ctx[dev], memory_order_relaxed) != 1)
        atomic_store(&g_ctx[dev], 1);
}

/* ------------------------------------------------------- hash table (emu_core.c) */

/* Open addressing, linear probing, backward-shift deletion; key 0 = empty. */
typedef struct { uint64_t *keys; void **vals; size_t cap, len; } htab_t;

static inline size_t ht_home(uint64_t k, size_t mask)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return (size_t)k & mask;
}

static inline void *ht_get(const htab_t *t, uint64_t k)
{
    if (!t->cap || !k) return NULL;
    size_t mask = t->cap - 1;
    for (size_t i = ht_home(k, mask);; i = (i + 1) & mask) {
        if (t->keys[i] == k) return t->vals[i];
        if (!t->keys[i]) return NULL;
    }
}

int ht_put(htab_t *t, uint64_t k, void *v);
void ht_del(htab_t *t, uint64_t k);

/* ---------------------------------------------------------- objects (emu_core.c) */

/* Handle = BASE + id*256 + tag.  Ids only grow, so a stale handle can never
 * alias a newer object, and the tag rejects an event passed as a stream.  The
 * low 4 bits are clear, as in the real runtime's (struct pointer) handles:
 * torch tells a foreign cudaStream_t from its own stream ids by bit 0. */
#define HANDLE_BASE 0x5e0000000000ull
#define TAG_MASK 0xffu
#define TAG_STREAM 0x30u
#define TAG_EVENT 0x50u
#define TAG_GRAPH 0x70u
#define TAG_GEXEC 0x90u
#define TAG_GNODE 0xb0u
extern uint64_t g_next_id;
extern htab_t g_handles;            /* handle -> stream_t* / event_t* */
extern htab_t g_ipc;                /* ipc id -> evshared_t* */
extern uint64_t g_next_ipc;
extern int g_live_streams, g_live_events;

static inline uint64_t new_handle(unsigned tag, uint64_t *id)
{
    *id = g_next_id++;
    return HANDLE_BASE + (*id << 8) + tag;
}

typedef struct stream stream_t;
typedef struct capture capture_t;

/* A set of graph nodes (indices into the capture's graph): what a capturing stream's next node
 * depends on, or what an event recorded during capture stands for (emu_graph.c). */
typedef struct { uint32_t *v; size_t n, cap; } gdeps_t;

/* A position in a stream's FIFO: reached (with its host timestamp) when the
 * worker gets there.  Shared by the event that recorded it, by WAIT items of
 * other streams, and by streams parked until it is reached. */
typedef struct rec {
    int refs;
    int reached;
    int64_t ts;
    stream_t *waiters;
} rec_t;

static inline rec_t *rec_new(int refs)
{
    rec_t *r = calloc(1, sizeof *r);
    if (r) r->refs = refs;
    return r;
}

static inline void rec_unref(rec_t *r)
{
    if (r && --r->refs == 0) free(r);
}

/* ----------------------------------------------------- allocations (emu_memory.c) */

typedef struct mempool mempool_t;
typedef struct alloc {
    char *base;
    size_t size;
    int device;
    int pending;    /* queued copies/memsets that still touch it */
    int freed;
    mempool_t *pool;    /* cudaMallocAsync: the pool its block (of cap bytes) returns to */
    size_t cap;
    int managed;        /* cudaMallocManaged / cuMemAllocManaged (host memory like every allocation) */
    struct arange *range;   /* its entry in the address lookups, while live */
    long slot;          /* its index in the allocation table, while live */
    unsigned long long id;  /* unique per allocation (never reused): graphs tell a freed one from its successor */
} alloc_t;

extern size_t g_nallocs;            /* live allocations */

/* Drops a reference a queued copy or memset held; frees the allocation once freed and unused. */
void alloc_unref(alloc_t *a);
/* Kernels running (G held); their count back to 0 releases the bytes of allocations freed meanwhile. */
extern long g_kernels_running;
void emu_mem_kernels_idle(void);

/* --------------------------------------------------------- streams (emu_stream.c) */

enum { IT_HOSTFN, IT_RECORD, IT_WAIT, IT_COPY, IT_SET, IT_KERNEL };
struct emu_launch;
typedef struct item {
    struct item *next;
    int kind;
    rec_t *rec;
    cudaHostFn_t fn;
    void *arg;
    void *dst;
    const void *src;
    size_t n;
    int value;
    alloc_t *a1, *a2;
    /* IT_COPY of rows > 1: `rows` rows of n bytes, dst and src advancing by dpitch and spitch.
     * IT_SET: elem is the pattern's width (0 or 1: bytes; 2, 4: n elements of that size). */
    size_t rows, dpitch, spitch;
    int elem;
    struct emu_launch *launch;      /* IT_KERNEL: the launch (a reference; emu_launch.h) */
    void *stage;        /* IT_COPY from pageable memory: the staged source bytes it owns */
} item_t;

enum { SK_USER, SK_LEGACY, SK_PERTHREAD };
enum { ST_IDLE, ST_QUEUED, ST_RUNNING, ST_PARKED };

struct stream {
    uint64_t handle;    /* 0 for the legacy and per-thread streams */
    unsigned long long id;
    int kind, device, priority, state, destroyed, refs;
    unsigned flags;
    item_t *head, *tail;
    uint64_t enq, done;
    uint64_t last_kernel;           /* enq's value when the last kernel item was queued (cudaFree waits for it) */
    /* The record of the tail item if the tail is a record, else NULL: lets
     * implicit synchronisation reuse it instead of adding a marker. */
    rec_t *last_rec;
    stream_t *link;                 /* run queue or record waiter list */
    stream_t *dprev, *dnext;        /* per-device list */
    capture_t *cap;                 /* the capture sequence this stream takes part in, or NULL */
    gdeps_t capdeps;                /* while capturing: the dependencies of its next node */
    void **capinfo;                 /* cudaStreamGetCaptureInfo's node array (valid until the next call) */
};

extern stream_t *g_devstreams[MAX_DEVICES];

static inline item_t *item_new(int kind)
{
    item_t *it = calloc(1, sizeof *it);
    if (it) it->kind = kind;
    return it;
}

static inline int pending(const stream_t *s) { return s->enq != s->done; }

void item_free(item_t *it);
void emu_item_run(stream_t *s, item_t *it);   /* emu_stream.c: an item's work, G held (dropped around it) */
void stream_maybe_free(stream_t *s);
/* Appends `it` to s's FIFO as is (G held). */
void enqueue_raw(stream_t *s, item_t *it);
/* Adds the waits s's next item needs: the legacy stream waits for the device's blocking streams,
 * a blocking stream for the legacy stream (G held); cudaErrorMemoryAllocation when out of memory,
 * cudaErrorStreamCaptureImplicit (capture invalidated) when s is the legacy stream and a blocking
 * stream of the device captures. */
cudaError_t implicit_sync(stream_t *s);
/* Queues `it` on s after the implicit synchronisation s needs (G held); frees it on failure. */
cudaError_t submit(stream_t *s, item_t *it);
/* Resolves a stream handle under G (0/1: legacy, 2: per-thread stream of the current device). */
stream_t *get_stream(cudaStream_t h, cudaError_t *err);
/* Blocking waits, G held: until s has completed `target` items (the _release form drops a
 * reference the caller took), until r is reached. */
void wait_stream_release(stream_t *s, uint64_t target);
void wait_stream(stream_t *s, uint64_t target);
void wait_rec(rec_t *r);
/* Waits (G held) for all work queued so far on every stream of devices first .. last-1;
 * cudaErrorMemoryAllocation, having waited for nothing, when out of memory. */
cudaError_t wait_device_streams(int first, int last);
/* Waits (G held) until every kernel queued on any stream of any device before the call has run: what
 * cudaFree / cuMemFree do before freeing, as a GPU's synchronise (a queued kernel may use the memory).
 * Nothing from a host function (CUDA forbids CUDA calls there). */
cudaError_t wait_queued_kernels(void);
void stream_tls_destroy(void *p);
void atfork_prepare(void);
void atfork_parent(void);
void atfork_child(void);

/* ---------------------------------------------------------- events (emu_event.c) */

typedef struct evshared {
    int refs, device;
    unsigned flags;
    uint64_t ipc_id;
    rec_t *latest;
    unsigned long long capid;       /* last recorded in capture sequence capid (0: not in a capture) */
    gdeps_t capdeps;                /* the captured work that record stands for */
} evshared_t;

typedef struct event {
    uint64_t handle;
    evshared_t *sh;
} event_t;

static inline event_t *get_event(cudaEvent_t h)
{
    uintptr_t v = (uintptr_t)h;
    return (v & TAG_MASK) == TAG_EVENT ? ht_get(&g_handles, v) : NULL;
}

/* ------------------------------------------- capture and graphs (emu_capture.c, emu_graph.c) */

/* Captures under way (active or invalidated, not yet ended): 0 keeps every check below one load. */
extern atomic_int g_ncap;

/* The capture prohibition of potentially unsafe calls (synchronisation, queries, cudaMalloc/cudaFree)
 * as cudaThreadExchangeStreamCaptureMode documents it: cudaErrorStreamCaptureUnsupported, having
 * invalidated the captures that prohibit the call, or 0.  G not held. */
cudaError_t capture_unsafe_slow(void);
static inline cudaError_t capture_unsafe(void)
{
    return atomic_load_explicit(&g_ncap, memory_order_relaxed) ? capture_unsafe_slow() : cudaSuccess;
}
/* s is capturing: records the copy / memset / host function `it` as a node instead of queueing it
 * (frees it).  G held. */
cudaError_t capture_item(stream_t *s, item_t *it);
/* An operation that may not run on capturing stream s (synchronise, query): invalidates its capture and
 * returns cudaErrorStreamCaptureUnsupported.  G held. */
cudaError_t capture_refuse(stream_t *s);
/* cudaEventRecord(WithFlags) on capturing stream s, cudaStreamWaitEvent where the stream or the event is in
 * a capture, queries of an event recorded in a capture still under way (G held). */
cudaError_t capture_record(stream_t *s, event_t *e, unsigned flags);
cudaError_t capture_wait(stream_t *s, event_t *e, unsigned flags);
int capture_event_live(const evshared_t *sh);
int capture_invalidated(const stream_t *s);
/* cudaMallocAsync / cudaFreeAsync on capturing stream s: alloc a becomes graph memory (an alloc node; the
 * graph owns it until destroyed), a free node for a graph allocation of the same capture.  G held. */
cudaError_t capture_mem_alloc(stream_t *s, alloc_t *a);
cudaError_t capture_mem_free(stream_t *s, alloc_t *a);
/* User objects whose last reference went (emu_graph_uobj.c): their destructors run, G NOT held. */
extern atomic_int g_uo_ndead;
void uo_run_dead_slow(void);
static inline void uo_run_dead(void)
{
    if (atomic_load_explicit(&g_uo_ndead, memory_order_relaxed)) uo_run_dead_slow();
}
/* A stream leaving (destroyed / freed): out of its capture, its capture state freed.  G held. */
void capture_stream_gone(stream_t *s);
void capture_stream_free(stream_t *s);

/* emu_memory.c's hooks for graphs (G held): the device range check of a queued copy (1 inside one
 * allocation, referenced into *out; 0 not device memory; -1 straddles an end), and the release of a
 * graph-owned allocation (taken out of the table unless freed already, then one reference dropped). */
int emu_mem_range(const void *p, size_t n, alloc_t **out);
int emu_mem_host_mapped(const void *p, size_t n);
alloc_t *emu_graph_alloc(int dev, size_t n, cudaError_t *err);   /* from dev's default pool; G held */     /* [p, p+n) inside one pinned host range */
void emu_mem_release(alloc_t *a);
/* A graph allocation the user freed, made again at its address by a launch of its graph (the graph's reference
 * kept its block): back in the table (0), or -1 when out of memory.  G held. */
int emu_mem_revive(alloc_t *a);

#pragma GCC visibility pop

/* The runtime's 3D copy parameters (cudaMemcpy3D*, memcpy graph nodes), in CUDA 13's layout. */
struct cudaExtent { size_t width, height, depth; };
struct cudaPos { size_t x, y, z; };
struct cudaPitchedPtr { void *ptr; size_t pitch, xsize, ysize; };
struct cudaMemcpy3DParms {
    void *srcArray;
    struct cudaPos srcPos;
    struct cudaPitchedPtr srcPtr;
    void *dstArray;
    struct cudaPos dstPos;
    struct cudaPitchedPtr dstPtr;
    struct cudaExtent extent;
    int kind;
};

#endif
