/*
 * accel emulated CUDA runtime (selected with ACCEL_CUDART=emu).
 *
 * A drop-in stand-in for the subset of libcudart (plus a few libcuda driver
 * entry points) that accel binds, so that accel's real dlopen/dlsym/calling
 * paths run on machines without a GPU.  No CUDA header is used: every type
 * and constant below is declared here with CUDA's real ABI and values.
 *
 * Model (see also the README-style notes at each section):
 *  - Every piece of mutable shared state is protected by one global mutex G.
 *    The API is dominated by tiny critical sections, so a single lock is both
 *    the simplest deadlock-free design and fast enough (uncontended ~20 ns).
 *    G is never held while user code (host functions) or memcpy/memset runs.
 *  - Streams are FIFOs of items executed by an elastic pool of worker
 *    threads.  A stream is serviced by at most one worker at a time (FIFO
 *    order); a stream whose head item waits for an unreached record is
 *    parked on that record instead of blocking a worker, and any runnable
 *    stream always gets a worker (a new one is spawned when none is idle),
 *    so host functions that block on each other cannot starve the pool.
 *    Idle workers retire after one second.
 *  - Ordering between streams (cudaStreamWaitEvent and the legacy default
 *    stream's implicit synchronisation) is expressed with "records": a
 *    refcounted completion flag + timestamp placed in a stream's FIFO.
 *  - Handles are 64-bit values with a never-reused id, validated through a
 *    hash table under G before any dereference.
 *
 * Documented choices where the emulator has to pick:
 *  - Configuration (read once): ACCEL_EMU_DEVICES (0..256, default 4),
 *    ACCEL_EMU_MEMORY (bytes per device, K/M/G/T suffixes, default 80 GiB),
 *    ACCEL_EMU_FAIL (symbol:n[,symbol:n...]).  A malformed value makes every
 *    call fail with cudaErrorInitializationError (driver: NOT_INITIALIZED),
 *    so a typo cannot silently run a different configuration.
 *  - ACCEL_EMU_DEVICES is the machine's (physical) devices; CUDA_VISIBLE_DEVICES
 *    selects and renumbers those the runtime shows, as the real driver does
 *    (emu_visible.c, which also holds a minimal NVML over the physical ones).
 *    Device ordinals below are visible ones; UUIDs, PCI bus ids and board ids
 *    are the physical device's.
 *  - cudaStreamPerThread is a blocking stream per (thread, device), as in
 *    CUDA: it synchronises with the legacy stream; destroyed at thread exit.
 *  - Priorities are recorded and clamped but do not affect scheduling.
 *  - Fault injection: the n-th call (counted from when the spec was
 *    installed) fails with cudaErrorMemoryAllocation for calls that create
 *    something (stream/event create, cudaMalloc, cudaMallocAsync, cudaHostAlloc,
 *    cudaHostRegister, cudaIpcOpenEventHandle)
 *    and cudaErrorUnknown / CUDA_ERROR_UNKNOWN otherwise.
 *  - Blocking calls (stream/event/device synchronise) made from inside a
 *    host function return cudaErrorNotPermitted instead of deadlocking.
 *  - Memory (allocations, copies, stream-ordered pools, pinned host memory):
 *    emu_memory.c, with its own notes.  Shared state and hot helpers: emu_runtime.h.
 *  - Host memory is treated as pinned and cudaFree does not synchronise;
 *    queued copies keep their allocation alive instead.
 *  - IPC event handles open only in the creating process (there is no
 *    shared device memory to map); anything else is cudaErrorInvalidValue.
 *  - Arguments are checked where the real runtime checks them: NULL out-
 *    pointers and host functions (cudaErrorInvalidValue), handles (400),
 *    ordinals (101), device ranges (1, whatever the size), sizes (2).  As in
 *    the real runtime, a non-NULL garbage host pointer or host-function
 *    pointer is not detectable: it faults when the stream reaches it.
 */
#include "emu_runtime.h"

/* ------------------------------------------------------- fault injection */

/* The injectable symbols and fail_hit() are in emu_internal.h. */
#define X_NAME(s) #s,
static const char *const sym_names[SYM_COUNT] = { EMU_SYMBOLS(X_NAME) };

pthread_mutex_t g_fail_lock = PTHREAD_MUTEX_INITIALIZER;
failpt_t g_fail[MAX_FAIL];
int g_nfail;
unsigned long long g_calls[SYM_COUNT];
atomic_int g_fail_active;           /* emu_internal.h */

static int parse_fail_spec(const char *spec, failpt_t *out, int *nout)
{
    int n = 0;
    const char *p = spec;
    while (*p) {
        const char *colon = strchr(p, ':');
        if (!colon) return 1;
        size_t len = (size_t)(colon - p);
        int sym = -1;
        for (int i = 0; i < SYM_COUNT; i++)
            if (strlen(sym_names[i]) == len && memcmp(sym_names[i], p, len) == 0) sym = i;
        if (sym < 0 || colon[1] < '0' || colon[1] > '9') return 1;
        char *end;
        errno = 0;
        unsigned long long nth = strtoull(colon + 1, &end, 10);
        if (errno || nth == 0 || (*end && *end != ',') || n == MAX_FAIL) return 1;
        out[n].sym = sym;
        out[n].nth = nth;
        n++;
        p = *end ? end + 1 : end;
        if (*end == ',' && !*p) return 1;
    }
    *nout = n;
    return 0;
}

int install_fail_spec(const char *spec)
{
    failpt_t tmp[MAX_FAIL];
    int n = 0;
    if (spec && *spec && parse_fail_spec(spec, tmp, &n)) return 1;
    pthread_mutex_lock(&g_fail_lock);
    memcpy(g_fail, tmp, sizeof(failpt_t) * (size_t)n);
    g_nfail = n;
    memset(g_calls, 0, sizeof g_calls);
    atomic_store(&g_fail_active, n > 0);
    pthread_mutex_unlock(&g_fail_lock);
    return 0;
}

/* ------------------------------------------------------------ global state */

pthread_once_t g_once = PTHREAD_ONCE_INIT;
cudaError_t g_init_err;             /* non-zero: bad configuration, every call fails */
int g_ndev;                         /* visible devices (emu_internal.h) */
int g_nphys;                        /* the machine's devices (ACCEL_EMU_DEVICES) */
int g_phys[MAX_DEVICES];            /* visible ordinal -> physical device (emu_internal.h) */
size_t g_mem_total;                 /* bytes per device */

pthread_mutex_t G = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t g_done_cv = PTHREAD_COND_INITIALIZER;  /* any item completed */
pthread_cond_t g_work_cv = PTHREAD_COND_INITIALIZER;  /* run queue non-empty */
pthread_cond_t g_exit_cv = PTHREAD_COND_INITIALIZER;  /* a worker retired */
int g_waiters;                      /* threads blocked on g_done_cv */

atomic_int g_ctx[MAX_DEVICES];      /* primary context exists (emu_internal.h) */

__thread int t_dev;                 /* the thread's current device */
__thread int t_capmode;
__thread cudaError_t t_last;        /* emu_internal.h */
__thread void *t_in_hostfn;         /* emu_runtime.h */

static int parse_size(const char *s, unsigned long long *out)
{
    char *end;
    if (*s < '0' || *s > '9') return 1;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno) return 1;
    unsigned shift = 0;
    switch (*end) {
    case 'K': case 'k': shift = 10; end++; break;
    case 'M': case 'm': shift = 20; end++; break;
    case 'G': case 'g': shift = 30; end++; break;
    case 'T': case 't': shift = 40; end++; break;
    default: break;
    }
    if (*end == 'i' && shift) end++;
    if (*end == 'B' && shift) end++;
    if (*end || (shift && v > (~0ull >> shift))) return 1;
    *out = v << shift;
    return 0;
}

pthread_key_t g_tls_key;            /* per-thread default streams (below) */
int g_tls_key_made;

void emu_init(void)
{
    unsigned long long v;
    const char *s = getenv("ACCEL_EMU_DEVICES");
    g_ndev = 4;
    if (s && *s) {
        if (parse_size(s, &v) || v > MAX_DEVICES || (s[strlen(s) - 1] < '0' || s[strlen(s) - 1] > '9'))
            g_init_err = cudaErrorInitializationError;
        else
            g_ndev = (int)v;
    }
    g_nphys = g_ndev;
    g_ndev = emu_visible_devices(getenv("CUDA_VISIBLE_DEVICES"), g_nphys, g_phys);
    if (g_ndev < 0) {
        g_ndev = 0;
        g_init_err = cudaErrorInitializationError;
    }
    g_mem_total = (size_t)80 << 30;
    s = getenv("ACCEL_EMU_MEMORY");
    if (s && *s) {
        if (parse_size(s, &v)) g_init_err = cudaErrorInitializationError;
        else g_mem_total = (size_t)v;
    }
    s = getenv("ACCEL_EMU_FAIL");
    if (s && *s && install_fail_spec(s)) g_init_err = cudaErrorInitializationError;
    g_tls_key_made = pthread_key_create(&g_tls_key, stream_tls_destroy) == 0;
    pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

/* ------------------------------------------------------------- hash table */

/* ht_get is in emu_runtime.h (it is on the hot paths). */
static void ht_place(uint64_t *keys, void **vals, size_t cap, uint64_t k, void *v)
{
    size_t mask = cap - 1, i = ht_home(k, mask);
    while (keys[i]) i = (i + 1) & mask;
    keys[i] = k;
    vals[i] = v;
}

int ht_put(htab_t *t, uint64_t k, void *v)
{
    if ((t->len + 1) * 2 > t->cap) {
        size_t ncap = t->cap ? t->cap * 2 : 64;
        uint64_t *nk = calloc(ncap, sizeof *nk);
        void **nv = calloc(ncap, sizeof *nv);
        if (!nk || !nv) { free(nk); free(nv); return -1; }
        for (size_t i = 0; i < t->cap; i++)
            if (t->keys[i]) ht_place(nk, nv, ncap, t->keys[i], t->vals[i]);
        free(t->keys);
        free(t->vals);
        t->keys = nk;
        t->vals = nv;
        t->cap = ncap;
    }
    ht_place(t->keys, t->vals, t->cap, k, v);
    t->len++;
    return 0;
}

void ht_del(htab_t *t, uint64_t k)
{
    if (!t->cap || !k) return;
    size_t mask = t->cap - 1, i = ht_home(k, mask);
    while (t->keys[i] != k) {
        if (!t->keys[i]) return;
        i = (i + 1) & mask;
    }
    t->keys[i] = 0;
    t->len--;
    for (size_t j = (i + 1) & mask; t->keys[j]; j = (j + 1) & mask) {
        size_t h = ht_home(t->keys[j], mask);
        int stays = (i <= j) ? (i < h && h <= j) : (i < h || h <= j);
        if (stays) continue;
        t->keys[i] = t->keys[j];
        t->vals[i] = t->vals[j];
        t->keys[j] = 0;
        i = j;
    }
}

/* ---------------------------------------------------------------- objects */

uint64_t g_next_id = 1;
htab_t g_handles;                   /* handle -> stream_t* / event_t* */
htab_t g_ipc;                       /* ipc id -> evshared_t* */
uint64_t g_next_ipc = 1;
int g_live_streams, g_live_events;

/* ============================================================ runtime API */

EXPORT const char *cudaGetErrorName(cudaError_t e)
{
    const errdesc_t *d = emu_rt_error(e);
    return d ? d->name : "unrecognized error code";
}

EXPORT const char *cudaGetErrorString(cudaError_t e)
{
    const errdesc_t *d = emu_rt_error(e);
    return d ? d->text : "unrecognized error code";
}

EXPORT cudaError_t cudaGetLastError(void)
{
    INIT();
    if (g_init_err) return g_init_err;
    if (atomic_load_explicit(&g_fail_active, memory_order_relaxed) && fail_hit(SYM_cudaGetLastError))
        return cudaErrorUnknown;
    cudaError_t e = t_last;
    t_last = cudaSuccess;
    return e;
}

EXPORT cudaError_t cudaPeekAtLastError(void)
{
    INIT();
    if (g_init_err) return g_init_err;
    if (atomic_load_explicit(&g_fail_active, memory_order_relaxed) && fail_hit(SYM_cudaPeekAtLastError))
        return cudaErrorUnknown;
    return t_last;
}

EXPORT cudaError_t cudaDriverGetVersion(int *v)
{
    RT_ENTER(cudaDriverGetVersion, cudaErrorUnknown);
    if (!v) return fail(cudaErrorInvalidValue);
    *v = EMU_VERSION;
    return cudaSuccess;
}

EXPORT cudaError_t cudaRuntimeGetVersion(int *v)
{
    RT_ENTER(cudaRuntimeGetVersion, cudaErrorUnknown);
    if (!v) return fail(cudaErrorInvalidValue);
    *v = EMU_VERSION;
    return cudaSuccess;
}

/* Profiler control: there is no profiler to start or stop; the calls succeed like the real runtime's
 * when no profiling tool is attached. */
EXPORT cudaError_t cudaProfilerStart(void)
{
    RT_ENTER(cudaProfilerStart, cudaErrorUnknown);
    RT_NEED_DEVICE();
    return cudaSuccess;
}

EXPORT cudaError_t cudaProfilerStop(void)
{
    RT_ENTER(cudaProfilerStop, cudaErrorUnknown);
    RT_NEED_DEVICE();
    return cudaSuccess;
}

/* ======================================== driver entry points of the runtime library */

/* cuInit is not required first: cudart initialises the driver itself and
 * callers probe primary contexts after runtime calls. */
EXPORT CUresult cuInit(unsigned int flags)
{
    DRV_ENTER(cuInit);
    return flags ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

EXPORT CUresult cuDriverGetVersion(int *v)
{
    DRV_ENTER(cuDriverGetVersion);
    if (!v) return CUDA_ERROR_INVALID_VALUE;
    *v = EMU_VERSION;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuGetErrorName(CUresult e, const char **out)
{
    DRV_ENTER(cuGetErrorName);
    if (!out) return CUDA_ERROR_INVALID_VALUE;
    const errdesc_t *d = emu_drv_error(e);
    *out = d ? d->name : NULL;
    return d ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuGetErrorString(CUresult e, const char **out)
{
    DRV_ENTER(cuGetErrorString);
    if (!out) return CUDA_ERROR_INVALID_VALUE;
    const errdesc_t *d = emu_drv_error(e);
    *out = d ? d->text : NULL;
    return d ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* ====================================================== emulator-only API */

EXPORT int accelEmuLiveStreams(void)
{
    pthread_mutex_lock(&G);
    int n = g_live_streams;
    pthread_mutex_unlock(&G);
    return n;
}

EXPORT int accelEmuLiveEvents(void)
{
    pthread_mutex_lock(&G);
    int n = g_live_events;
    pthread_mutex_unlock(&G);
    return n;
}

EXPORT size_t accelEmuLiveAllocations(void)
{
    pthread_mutex_lock(&G);
    size_t n = g_nallocs;
    pthread_mutex_unlock(&G);
    return n;
}

EXPORT int accelEmuSetFail(const char *spec)
{
    INIT();
    return install_fail_spec(spec);
}

/* Visible devices; -1 when the configuration is invalid (every CUDA call then
 * fails with cudaErrorInitializationError). */
EXPORT int accelEmuDeviceCount(void)
{
    INIT();
    return g_init_err ? -1 : g_ndev;
}

int emu_physical_devices(void)
{
    INIT();
    return g_init_err ? -1 : g_nphys;
}

/* ------------------------------------------------------------------ devices */

EXPORT cudaError_t cudaGetDeviceCount(int *count)
{
    RT_ENTER(cudaGetDeviceCount, cudaErrorUnknown);
    if (!count) return fail(cudaErrorInvalidValue);
    *count = g_ndev;
    return g_ndev ? cudaSuccess : fail(cudaErrorNoDevice);
}

EXPORT cudaError_t cudaGetDevice(int *dev)
{
    RT_ENTER(cudaGetDevice, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (!dev) return fail(cudaErrorInvalidValue);
    *dev = t_dev;
    return cudaSuccess;
}

EXPORT cudaError_t cudaSetDevice(int dev)
{
    RT_ENTER(cudaSetDevice, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (dev < 0 || dev >= g_ndev) return fail(cudaErrorInvalidDevice);
    t_dev = dev;
    ensure_ctx(dev);
    return cudaSuccess;
}

EXPORT cudaError_t cudaDeviceSynchronize(void)
{
    RT_ENTER(cudaDeviceSynchronize, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (t_in_hostfn) return fail(cudaErrorNotPermitted);
    int dev = t_dev;
    ensure_ctx(dev);
    pthread_mutex_lock(&G);
    size_t n = 0;
    for (stream_t *s = g_devstreams[dev]; s; s = s->dnext) n += pending(s);
    if (n) {
        stream_t **ss = malloc(n * sizeof *ss);
        uint64_t *tg = malloc(n * sizeof *tg);
        if (!ss || !tg) {
            free(ss);
            free(tg);
            pthread_mutex_unlock(&G);
            return fail(cudaErrorMemoryAllocation);
        }
        size_t i = 0;
        for (stream_t *s = g_devstreams[dev]; s; s = s->dnext) {
            if (!pending(s)) continue;
            ss[i] = s;
            tg[i] = s->enq;
            s->refs++;
            i++;
        }
        for (i = 0; i < n; i++) wait_stream_release(ss[i], tg[i]);
        free(ss);
        free(tg);
    }
    pthread_mutex_unlock(&G);
    return cudaSuccess;
}

EXPORT cudaError_t cudaDeviceGetStreamPriorityRange(int *least, int *greatest)
{
    RT_ENTER(cudaDeviceGetStreamPriorityRange, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (least) *least = PRIO_LEAST;
    if (greatest) *greatest = PRIO_GREATEST;
    return cudaSuccess;
}

/* --------------------------------------------------------- primary contexts */

EXPORT CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
    DRV_ENTER(cuDevicePrimaryCtxGetState);
    if (!flags || !active) return CUDA_ERROR_INVALID_VALUE;
    if (dev < 0 || dev >= g_ndev) return CUDA_ERROR_INVALID_DEVICE;
    *flags = 0;
    *active = atomic_load(&g_ctx[dev]);
    return CUDA_SUCCESS;
}

EXPORT int accelEmuResetContexts(void)
{
    INIT();
    for (int d = 0; d < MAX_DEVICES; d++) atomic_store(&g_ctx[d], 0);
    return 0;
}

/* ----------------------------------------------------- device description */

EXPORT cudaError_t cudaDeviceGetAttribute(int *value, int attr, int dev)
{
    RT_ENTER(cudaDeviceGetAttribute, cudaErrorUnknown);
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
    emu_fill_props(p, g_phys[dev], g_mem_total);
    return cudaSuccess;
}

EXPORT cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *p, int dev)
{
    RT_ENTER(cudaGetDeviceProperties, cudaErrorUnknown);
    RT_NEED_DEVICE();
    return get_props(p, dev);
}

EXPORT cudaError_t cudaGetDeviceProperties_v2(struct cudaDeviceProp *p, int dev)
{
    RT_ENTER(cudaGetDeviceProperties_v2, cudaErrorUnknown);
    RT_NEED_DEVICE();
    return get_props(p, dev);
}

EXPORT cudaError_t cudaDeviceCanAccessPeer(int *can, int dev, int peer)
{
    RT_ENTER(cudaDeviceCanAccessPeer, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (!can) return fail(cudaErrorInvalidValue);
    if (dev < 0 || dev >= g_ndev || peer < 0 || peer >= g_ndev) return fail(cudaErrorInvalidDevice);
    *can = dev != peer;
    return cudaSuccess;
}

EXPORT cudaError_t cudaDeviceGetPCIBusId(char *buf, int len, int dev)
{
    RT_ENTER(cudaDeviceGetPCIBusId, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (!buf || len <= 0) return fail(cudaErrorInvalidValue);
    if (dev < 0 || dev >= g_ndev) return fail(cudaErrorInvalidDevice);
    snprintf(buf, (size_t)len, "00000000:%02X:00.0", emu_pci_bus(g_phys[dev]));
    return cudaSuccess;
}

/* ----------------------------------------------------------------- streams */

stream_t *g_devstreams[MAX_DEVICES];
static stream_t *g_legacy[MAX_DEVICES];
static stream_t *g_runq_head, *g_runq_tail;
static int g_runq_len, g_nworkers, g_idle, g_shutdown;

static void *worker_main(void *arg);

static void runq_push(stream_t *s)
{
    s->state = ST_QUEUED;
    s->link = NULL;
    if (g_runq_tail) g_runq_tail->link = s;
    else g_runq_head = s;
    g_runq_tail = s;
    g_runq_len++;
    /* Every queued stream must have a thread that will take it, otherwise a
     * host function blocking on another stream's progress could deadlock. */
    if (g_runq_len > g_idle) {
        pthread_t th;
        pthread_attr_t at;
        pthread_attr_init(&at);
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&th, &at, worker_main, NULL) == 0) g_nworkers++;
        pthread_attr_destroy(&at);
    }
    pthread_cond_signal(&g_work_cv);
}

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void rec_reach(rec_t *r)
{
    r->ts = now_ns();
    r->reached = 1;
    stream_t *w = r->waiters;
    r->waiters = NULL;
    while (w) {
        stream_t *next = w->link;
        runq_push(w);
        w = next;
    }
}

static void dev_link(stream_t *s)
{
    s->dprev = NULL;
    s->dnext = g_devstreams[s->device];
    if (s->dnext) s->dnext->dprev = s;
    g_devstreams[s->device] = s;
}

void stream_maybe_free(stream_t *s)
{
    if (!s->destroyed || s->head || s->state != ST_IDLE || s->refs) return;
    if (s->dprev) s->dprev->dnext = s->dnext;
    else g_devstreams[s->device] = s->dnext;
    if (s->dnext) s->dnext->dprev = s->dprev;
    free(s);
}

void item_free(item_t *it)
{
    rec_unref(it->rec);
    alloc_unref(it->a1);
    alloc_unref(it->a2);
    free(it);
}

/* Runs the stream's items in order with G held; G is dropped around user
 * code and memory operations. */
static void stream_run(stream_t *s)
{
    item_t *it;
    while ((it = s->head) && !g_shutdown) {
        if (it->kind == IT_WAIT && !it->rec->reached) {
            s->state = ST_PARKED;
            s->link = it->rec->waiters;
            it->rec->waiters = s;
            return;
        }
        s->head = it->next;
        if (!s->head) s->tail = NULL;
        switch (it->kind) {
        case IT_RECORD:
            rec_reach(it->rec);
            break;
        case IT_HOSTFN:
            pthread_mutex_unlock(&G);
            t_in_hostfn = s;
            it->fn(it->arg);
            t_in_hostfn = NULL;
            pthread_mutex_lock(&G);
            break;
        case IT_COPY:
            pthread_mutex_unlock(&G);
            memmove(it->dst, it->src, it->n);
            pthread_mutex_lock(&G);
            break;
        case IT_SET:
            pthread_mutex_unlock(&G);
            memset(it->dst, it->value, it->n);
            pthread_mutex_lock(&G);
            break;
        default:
            break;
        }
        s->done++;
        item_free(it);
        if (g_waiters) pthread_cond_broadcast(&g_done_cv);
    }
    s->state = ST_IDLE;
    stream_maybe_free(s);
}

static void *worker_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&G);
    for (;;) {
        while (!g_runq_head && !g_shutdown) {
            struct timespec dl;
            clock_gettime(CLOCK_REALTIME, &dl);
            dl.tv_sec += 1;
            g_idle++;
            int rc = pthread_cond_timedwait(&g_work_cv, &G, &dl);
            g_idle--;
            if (rc == ETIMEDOUT && !g_runq_head) goto out;
        }
        if (g_shutdown) break;
        stream_t *s = g_runq_head;
        g_runq_head = s->link;
        if (!g_runq_head) g_runq_tail = NULL;
        g_runq_len--;
        s->link = NULL;
        s->state = ST_RUNNING;
        stream_run(s);
    }
out:
    g_nworkers--;
    pthread_cond_broadcast(&g_exit_cv);
    pthread_mutex_unlock(&G);
    return NULL;
}

void enqueue_raw(stream_t *s, item_t *it)
{
    it->next = NULL;
    if (s->tail) s->tail->next = it;
    else s->head = it;
    s->tail = it;
    s->enq++;
    s->last_rec = NULL;
    if (s->state == ST_IDLE) runq_push(s);
}

/* A record at the current tail of s (reusing a trailing one); the caller
 * owns one reference.  NULL on allocation failure. */
static rec_t *tail_rec(stream_t *s)
{
    if (s->last_rec) {
        s->last_rec->refs++;
        return s->last_rec;
    }
    item_t *it = item_new(IT_RECORD);
    rec_t *r = rec_new(2);
    if (!it || !r) { free(it); free(r); return NULL; }
    it->rec = r;
    enqueue_raw(s, it);
    s->last_rec = r;
    return r;
}

/* Makes s's next item wait for r (consumes the caller's reference). */
static int add_wait(stream_t *s, rec_t *r)
{
    if (r->reached) { rec_unref(r); return 0; }
    item_t *it = item_new(IT_WAIT);
    if (!it) { rec_unref(r); return -1; }
    it->rec = r;
    enqueue_raw(s, it);
    return 0;
}

static stream_t *stream_alloc(int kind, int dev, unsigned flags, int prio)
{
    stream_t *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->kind = kind;
    s->device = dev;
    s->flags = flags;
    s->priority = prio;
    s->id = g_next_id++;
    dev_link(s);
    return s;
}

static stream_t *legacy_stream(int dev)
{
    if (!g_legacy[dev]) g_legacy[dev] = stream_alloc(SK_LEGACY, dev, 0, 0);
    return g_legacy[dev];
}

/* The legacy default stream waits for all prior work of the device's
 * blocking streams, and blocking streams wait for prior legacy work. */
int implicit_sync(stream_t *s)
{
    if (s->kind == SK_LEGACY) {
        for (stream_t *t = g_devstreams[s->device]; t; t = t->dnext) {
            if (t == s || (t->flags & STREAM_NONBLOCKING) || !pending(t)) continue;
            rec_t *r = tail_rec(t);
            if (!r || add_wait(s, r)) return -1;
        }
    } else if (!(s->flags & STREAM_NONBLOCKING)) {
        stream_t *l = g_legacy[s->device];
        if (l && pending(l)) {
            rec_t *r = tail_rec(l);
            if (!r || add_wait(s, r)) return -1;
        }
    }
    return 0;
}

cudaError_t submit(stream_t *s, item_t *it)
{
    if (implicit_sync(s)) { item_free(it); return cudaErrorMemoryAllocation; }
    ensure_ctx(s->device);
    if (it->kind == IT_RECORD && s->state == ST_IDLE && !s->head) {
        /* A worker would reach it at once; doing it here saves a thread
         * hand-off on the hot Event.record() path. */
        rec_reach(it->rec);
        s->enq++;
        s->done++;
        s->last_rec = NULL;
        item_free(it);
        return cudaSuccess;
    }
    enqueue_raw(s, it);
    if (it->kind == IT_RECORD) s->last_rec = it->rec;
    return cudaSuccess;
}

/* Per-thread default streams, one per device, destroyed at thread exit. */
typedef struct { stream_t *s[MAX_DEVICES]; } tls_streams_t;
static __thread tls_streams_t *t_pts;

void stream_tls_destroy(void *p)
{
    tls_streams_t *ts = p;
    pthread_mutex_lock(&G);
    for (int d = 0; d < g_ndev; d++) {
        if (ts->s[d]) {
            ts->s[d]->destroyed = 1;
            stream_maybe_free(ts->s[d]);
        }
    }
    pthread_mutex_unlock(&G);
    free(ts);
}

static stream_t *perthread_stream(int dev)
{
    if (!t_pts) {
        t_pts = calloc(1, sizeof *t_pts);
        if (!t_pts) return NULL;
        pthread_setspecific(g_tls_key, t_pts);
    }
    if (!t_pts->s[dev]) t_pts->s[dev] = stream_alloc(SK_PERTHREAD, dev, 0, 0);
    return t_pts->s[dev];
}

/* Resolves a stream handle under G. */
stream_t *get_stream(cudaStream_t h, cudaError_t *err)
{
    uintptr_t v = (uintptr_t)h;
    stream_t *s = NULL;
    if (v == 0 || v == 1) {
        s = legacy_stream(t_dev);
        if (!s) *err = cudaErrorMemoryAllocation;
        return s;
    }
    if (v == 2) {
        s = perthread_stream(t_dev);
        if (!s) *err = cudaErrorMemoryAllocation;
        return s;
    }
    if ((v & TAG_MASK) == TAG_STREAM) s = ht_get(&g_handles, v);
    if (!s) *err = cudaErrorInvalidResourceHandle;
    return s;
}

/* Blocks (G held) until s has completed `target` items, then drops the
 * reference the caller took so that s survived the unlocked wait. */
void wait_stream_release(stream_t *s, uint64_t target)
{
    g_waiters++;
    while (s->done < target) pthread_cond_wait(&g_done_cv, &G);
    g_waiters--;
    s->refs--;
    stream_maybe_free(s);
}

void wait_stream(stream_t *s, uint64_t target)
{
    s->refs++;
    wait_stream_release(s, target);
}

void wait_rec(rec_t *r)
{
    r->refs++;
    g_waiters++;
    while (!r->reached) pthread_cond_wait(&g_done_cv, &G);
    g_waiters--;
    rec_unref(r);
}
/* ----------------------------------------------------------- fork / unload */

void atfork_prepare(void)
{
    pthread_mutex_lock(&g_fail_lock);
    pthread_mutex_lock(&G);
}

void atfork_parent(void)
{
    pthread_mutex_unlock(&G);
    pthread_mutex_unlock(&g_fail_lock);
}

/* Workers do not survive fork; work in flight at fork time is lost in the
 * child (accel refuses CUDA use in fork children anyway). */
void atfork_child(void)
{
    g_nworkers = 0;
    g_idle = 0;
    pthread_mutex_unlock(&G);
    pthread_mutex_unlock(&g_fail_lock);
}

/* Lets idle workers exit before the process (or a dlclose) tears down the
 * code they run; bounded so a stuck host function cannot hang exit. */
__attribute__((destructor)) static void emu_fini(void)
{
    if (g_tls_key_made) pthread_key_delete(g_tls_key);   /* no callbacks into unmapped code */
    pthread_mutex_lock(&G);
    g_shutdown = 1;
    pthread_cond_broadcast(&g_work_cv);
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_nsec += 200000000;    /* idle workers leave at once; busy ones are abandoned */
    if (dl.tv_nsec >= 1000000000) { dl.tv_sec++; dl.tv_nsec -= 1000000000; }
    while (g_nworkers > 0)
        if (pthread_cond_timedwait(&g_exit_cv, &G, &dl) == ETIMEDOUT) break;
    pthread_mutex_unlock(&G);
}
/* ----------------------------------------------------------- streams (API) */

static cudaError_t stream_create(cudaStream_t *out, unsigned flags, int prio)
{
    if (!out) return fail(cudaErrorInvalidValue);
    if (flags & ~STREAM_NONBLOCKING) return fail(cudaErrorInvalidValue);
    if (prio > PRIO_LEAST) prio = PRIO_LEAST;
    if (prio < PRIO_GREATEST) prio = PRIO_GREATEST;
    int dev = t_dev;
    pthread_mutex_lock(&G);
    stream_t *s = stream_alloc(SK_USER, dev, flags, prio);
    if (s) {
        uint64_t id;
        s->handle = new_handle(TAG_STREAM, &id);
        s->id = id;
        if (ht_put(&g_handles, s->handle, s)) {
            s->destroyed = 1;
            stream_maybe_free(s);
            s = NULL;
        }
    }
    if (!s) {
        pthread_mutex_unlock(&G);
        return fail(cudaErrorMemoryAllocation);
    }
    g_live_streams++;
    *out = (cudaStream_t)(uintptr_t)s->handle;
    pthread_mutex_unlock(&G);
    ensure_ctx(dev);
    return cudaSuccess;
}

EXPORT cudaError_t cudaStreamCreate(cudaStream_t *out)
{
    RT_ENTER(cudaStreamCreate, cudaErrorMemoryAllocation);
    RT_NEED_DEVICE();
    return stream_create(out, 0, 0);
}

EXPORT cudaError_t cudaStreamCreateWithFlags(cudaStream_t *out, unsigned int flags)
{
    RT_ENTER(cudaStreamCreateWithFlags, cudaErrorMemoryAllocation);
    RT_NEED_DEVICE();
    return stream_create(out, flags, 0);
}

EXPORT cudaError_t cudaStreamCreateWithPriority(cudaStream_t *out, unsigned int flags, int prio)
{
    RT_ENTER(cudaStreamCreateWithPriority, cudaErrorMemoryAllocation);
    RT_NEED_DEVICE();
    return stream_create(out, flags, prio);
}

EXPORT cudaError_t cudaStreamDestroy(cudaStream_t h)
{
    RT_ENTER(cudaStreamDestroy, cudaErrorUnknown);
    RT_NEED_DEVICE();
    uintptr_t v = (uintptr_t)h;
    pthread_mutex_lock(&G);
    stream_t *s = (v & TAG_MASK) == TAG_STREAM ? ht_get(&g_handles, v) : NULL;
    if (!s) {
        pthread_mutex_unlock(&G);
        return fail(cudaErrorInvalidResourceHandle);
    }
    ht_del(&g_handles, v);
    g_live_streams--;
    s->destroyed = 1;
    stream_maybe_free(s);
    pthread_mutex_unlock(&G);
    return cudaSuccess;
}

/* Shared shape of the stream getters: resolve under G, then read a field. */
#define WITH_STREAM(h, s, body) do { \
        cudaError_t err_ = cudaSuccess; \
        pthread_mutex_lock(&G); \
        stream_t *s = get_stream((h), &err_); \
        if (s) { body; } \
        pthread_mutex_unlock(&G); \
        if (err_) return fail(err_); \
    } while (0)

EXPORT cudaError_t cudaStreamQuery(cudaStream_t h)
{
    RT_ENTER(cudaStreamQuery, cudaErrorUnknown);
    RT_NEED_DEVICE();
    int busy = 0;
    WITH_STREAM(h, s, busy = pending(s); ensure_ctx(s->device));
    return busy ? fail(cudaErrorNotReady) : cudaSuccess;
}

EXPORT cudaError_t cudaStreamSynchronize(cudaStream_t h)
{
    RT_ENTER(cudaStreamSynchronize, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (t_in_hostfn) return fail(cudaErrorNotPermitted);
    WITH_STREAM(h, s, ensure_ctx(s->device); if (pending(s)) wait_stream(s, s->enq));
    return cudaSuccess;
}

EXPORT cudaError_t cudaStreamGetPriority(cudaStream_t h, int *prio)
{
    RT_ENTER(cudaStreamGetPriority, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (!prio) return fail(cudaErrorInvalidValue);
    WITH_STREAM(h, s, *prio = s->priority);
    return cudaSuccess;
}

EXPORT cudaError_t cudaStreamGetFlags(cudaStream_t h, unsigned int *flags)
{
    RT_ENTER(cudaStreamGetFlags, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (!flags) return fail(cudaErrorInvalidValue);
    WITH_STREAM(h, s, *flags = s->flags);
    return cudaSuccess;
}

EXPORT cudaError_t cudaStreamGetId(cudaStream_t h, unsigned long long *id)
{
    RT_ENTER(cudaStreamGetId, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (!id) return fail(cudaErrorInvalidValue);
    WITH_STREAM(h, s, *id = s->id);
    return cudaSuccess;
}

EXPORT cudaError_t cudaStreamGetDevice(cudaStream_t h, int *dev)
{
    RT_ENTER(cudaStreamGetDevice, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (!dev) return fail(cudaErrorInvalidValue);
    WITH_STREAM(h, s, *dev = s->device);
    return cudaSuccess;
}

EXPORT cudaError_t cudaStreamIsCapturing(cudaStream_t h, int *status)
{
    RT_ENTER(cudaStreamIsCapturing, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (!status) return fail(cudaErrorInvalidValue);
    WITH_STREAM(h, s, (void)s; *status = 0);
    return cudaSuccess;
}

EXPORT cudaError_t cudaThreadExchangeStreamCaptureMode(int *mode)
{
    RT_ENTER(cudaThreadExchangeStreamCaptureMode, cudaErrorUnknown);
    if (!mode || *mode < 0 || *mode > 2) return fail(cudaErrorInvalidValue);
    int old = t_capmode;
    t_capmode = *mode;
    *mode = old;
    return cudaSuccess;
}

EXPORT cudaError_t cudaLaunchHostFunc(cudaStream_t h, cudaHostFn_t fn, void *arg)
{
    RT_ENTER(cudaLaunchHostFunc, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (!fn) return fail(cudaErrorInvalidValue);
    item_t *it = item_new(IT_HOSTFN);
    if (!it) return fail(cudaErrorMemoryAllocation);
    it->fn = fn;
    it->arg = arg;
    cudaError_t err = cudaSuccess;
    pthread_mutex_lock(&G);
    stream_t *s = get_stream(h, &err);
    if (s) err = submit(s, it);
    else free(it);
    pthread_mutex_unlock(&G);
    return err ? fail(err) : cudaSuccess;
}

/* ------------------------------------------------------------ events (API) */

static cudaError_t event_register(evshared_t *sh, cudaEvent_t *out)
{
    event_t *e = malloc(sizeof *e);
    uint64_t id;
    if (!e) return cudaErrorMemoryAllocation;
    e->sh = sh;
    e->handle = new_handle(TAG_EVENT, &id);
    if (ht_put(&g_handles, e->handle, e)) { free(e); return cudaErrorMemoryAllocation; }
    sh->refs++;
    g_live_events++;
    *out = (cudaEvent_t)(uintptr_t)e->handle;
    return cudaSuccess;
}

static void evshared_unref(evshared_t *sh)
{
    if (--sh->refs) return;
    if (sh->ipc_id) ht_del(&g_ipc, sh->ipc_id);
    rec_unref(sh->latest);
    free(sh);
}

static cudaError_t event_create(cudaEvent_t *out, unsigned int flags)
{
    if (!out || (flags & ~(EV_BLOCKING_SYNC | EV_DISABLE_TIMING | EV_INTERPROCESS)))
        return fail(cudaErrorInvalidValue);
    if ((flags & EV_INTERPROCESS) && !(flags & EV_DISABLE_TIMING)) return fail(cudaErrorInvalidValue);
    evshared_t *sh = calloc(1, sizeof *sh);
    if (!sh) return fail(cudaErrorMemoryAllocation);
    sh->device = t_dev;
    sh->flags = flags;
    pthread_mutex_lock(&G);
    cudaError_t err = event_register(sh, out);
    pthread_mutex_unlock(&G);
    if (err) { free(sh); return fail(err); }
    ensure_ctx(sh->device);
    return cudaSuccess;
}

EXPORT cudaError_t cudaEventCreateWithFlags(cudaEvent_t *out, unsigned int flags)
{
    RT_ENTER(cudaEventCreateWithFlags, cudaErrorMemoryAllocation);
    RT_NEED_DEVICE();
    return event_create(out, flags);
}

EXPORT cudaError_t cudaEventCreate(cudaEvent_t *out)
{
    RT_ENTER(cudaEventCreate, cudaErrorMemoryAllocation);
    RT_NEED_DEVICE();
    return event_create(out, 0);
}

EXPORT cudaError_t cudaEventDestroy(cudaEvent_t h)
{
    RT_ENTER(cudaEventDestroy, cudaErrorUnknown);
    RT_NEED_DEVICE();
    pthread_mutex_lock(&G);
    event_t *e = get_event(h);
    if (e) {
        ht_del(&g_handles, e->handle);
        g_live_events--;
        evshared_unref(e->sh);
        free(e);
    }
    pthread_mutex_unlock(&G);
    return e ? cudaSuccess : fail(cudaErrorInvalidResourceHandle);
}

static cudaError_t event_record(cudaEvent_t eh, cudaStream_t sh, unsigned flags)
{
    if (flags > 1) return fail(cudaErrorInvalidValue);
    item_t *it = item_new(IT_RECORD);
    rec_t *r = rec_new(2);
    if (!it || !r) { free(it); free(r); return fail(cudaErrorMemoryAllocation); }
    it->rec = r;
    cudaError_t err = cudaSuccess;
    pthread_mutex_lock(&G);
    event_t *e = get_event(eh);
    stream_t *s = e ? get_stream(sh, &err) : NULL;
    if (!e || (s && s->device != e->sh->device)) err = cudaErrorInvalidResourceHandle;
    if (!err) {
        rec_unref(e->sh->latest);
        e->sh->latest = r;
        err = submit(s, it);
        if (err) {
            e->sh->latest = NULL;
            rec_unref(r);
        }
    } else {
        free(it);
        free(r);
    }
    pthread_mutex_unlock(&G);
    return err ? fail(err) : cudaSuccess;
}

EXPORT cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s)
{
    RT_ENTER(cudaEventRecord, cudaErrorUnknown);
    RT_NEED_DEVICE();
    return event_record(e, s, 0);
}

EXPORT cudaError_t cudaEventRecordWithFlags(cudaEvent_t e, cudaStream_t s, unsigned int flags)
{
    RT_ENTER(cudaEventRecordWithFlags, cudaErrorUnknown);
    RT_NEED_DEVICE();
    return event_record(e, s, flags);
}

EXPORT cudaError_t cudaEventQuery(cudaEvent_t h)
{
    RT_ENTER(cudaEventQuery, cudaErrorUnknown);
    RT_NEED_DEVICE();
    pthread_mutex_lock(&G);
    event_t *e = get_event(h);
    cudaError_t err = !e ? cudaErrorInvalidResourceHandle
                    : (e->sh->latest && !e->sh->latest->reached) ? cudaErrorNotReady : cudaSuccess;
    pthread_mutex_unlock(&G);
    return err ? fail(err) : cudaSuccess;
}

EXPORT cudaError_t cudaEventSynchronize(cudaEvent_t h)
{
    RT_ENTER(cudaEventSynchronize, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (t_in_hostfn) return fail(cudaErrorNotPermitted);
    pthread_mutex_lock(&G);
    event_t *e = get_event(h);
    if (e && e->sh->latest) wait_rec(e->sh->latest);
    pthread_mutex_unlock(&G);
    return e ? cudaSuccess : fail(cudaErrorInvalidResourceHandle);
}

EXPORT cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
{
    RT_ENTER(cudaEventElapsedTime, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (!ms) return fail(cudaErrorInvalidValue);
    cudaError_t err = cudaSuccess;
    pthread_mutex_lock(&G);
    event_t *a = get_event(start), *b = get_event(end);
    if (!a || !b || ((a->sh->flags | b->sh->flags) & EV_DISABLE_TIMING) ||
        !a->sh->latest || !b->sh->latest)
        err = cudaErrorInvalidResourceHandle;
    else if (!a->sh->latest->reached || !b->sh->latest->reached)
        err = cudaErrorNotReady;
    else
        *ms = (float)((double)(b->sh->latest->ts - a->sh->latest->ts) / 1e6);
    pthread_mutex_unlock(&G);
    return err ? fail(err) : cudaSuccess;
}

EXPORT cudaError_t cudaStreamWaitEvent(cudaStream_t sh, cudaEvent_t eh, unsigned int flags)
{
    RT_ENTER(cudaStreamWaitEvent, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (flags > 1) return fail(cudaErrorInvalidValue);
    cudaError_t err = cudaSuccess;
    pthread_mutex_lock(&G);
    stream_t *s = get_stream(sh, &err);
    event_t *e = s ? get_event(eh) : NULL;
    if (s && !e) err = cudaErrorInvalidResourceHandle;
    if (!err && e->sh->latest && !e->sh->latest->reached) {
        item_t *it = item_new(IT_WAIT);
        if (!it) err = cudaErrorMemoryAllocation;
        else {
            it->rec = e->sh->latest;
            it->rec->refs++;
            err = submit(s, it);
        }
    } else if (!err) {
        ensure_ctx(s->device);
    }
    pthread_mutex_unlock(&G);
    return err ? fail(err) : cudaSuccess;
}

/* IPC handle bytes: magic, pid, id.  Only the creating process can open it
 * (an emulator has no shared device memory); it yields a new handle that
 * aliases the same underlying event. */
#define IPC_MAGIC "ACCELEMU"

EXPORT cudaError_t cudaIpcGetEventHandle(cudaIpcEventHandle_t *out, cudaEvent_t h)
{
    RT_ENTER(cudaIpcGetEventHandle, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (!out) return fail(cudaErrorInvalidValue);
    cudaError_t err = cudaSuccess;
    pthread_mutex_lock(&G);
    event_t *e = get_event(h);
    if (!e) err = cudaErrorInvalidResourceHandle;
    else if (!(e->sh->flags & EV_INTERPROCESS)) err = cudaErrorInvalidValue;
    else if (!e->sh->ipc_id) {
        e->sh->ipc_id = g_next_ipc++;
        if (ht_put(&g_ipc, e->sh->ipc_id, e->sh)) { e->sh->ipc_id = 0; err = cudaErrorMemoryAllocation; }
    }
    if (!err) {
        int32_t pid = (int32_t)getpid();
        memset(out, 0, sizeof *out);
        memcpy(out->reserved, IPC_MAGIC, 8);
        memcpy(out->reserved + 8, &pid, sizeof pid);
        memcpy(out->reserved + 16, &e->sh->ipc_id, sizeof e->sh->ipc_id);
    }
    pthread_mutex_unlock(&G);
    return err ? fail(err) : cudaSuccess;
}

EXPORT cudaError_t cudaIpcOpenEventHandle(cudaEvent_t *out, cudaIpcEventHandle_t handle)
{
    RT_ENTER(cudaIpcOpenEventHandle, cudaErrorMemoryAllocation);
    RT_NEED_DEVICE();
    if (!out) return fail(cudaErrorInvalidValue);
    int32_t pid;
    uint64_t id;
    memcpy(&pid, handle.reserved + 8, sizeof pid);
    memcpy(&id, handle.reserved + 16, sizeof id);
    if (memcmp(handle.reserved, IPC_MAGIC, 8) || pid != (int32_t)getpid())
        return fail(cudaErrorInvalidValue);
    pthread_mutex_lock(&G);
    evshared_t *sh = ht_get(&g_ipc, id);
    cudaError_t err = sh ? event_register(sh, out) : cudaErrorInvalidValue;
    pthread_mutex_unlock(&G);
    if (err) return fail(err);
    ensure_ctx(t_dev);
    return cudaSuccess;
}
