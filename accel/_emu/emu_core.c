/*
 * accel emulated CUDA runtime (selected with ACCEL_CUDART=emu): its core.
 *
 * This file: configuration and initialisation, fault injection, the handle
 * registry (hash table), error names, last error and versions, the driver
 * entry points of the runtime library (cuInit, cuDriverGetVersion,
 * cuGetErrorName/String) and the emulator-only API (accelEmu*).  The rest:
 * emu_device.c (devices, primary contexts, device description), emu_stream.c
 * (streams, the worker pool, host functions, fork/unload), emu_event.c
 * (events, IPC event handles), emu_memory.c (allocations, copies, pools,
 * pinned host memory), emu_profiles.c (what board each device is),
 * emu_nvml.c, emu_nvml_device.c, emu_nvml_topology.c and emu_nvml_events.c (NVML over the physical
 * devices);
 * shared state and hot helpers in emu_runtime.h.  The
 * stand-ins add emu_driver.c, emu_drvmem.c, emu_drvmanaged.c and emu_drvpoolipc.c (the libcuda.so.1
 * driver layer) and
 * emu_standin.c (the other libcudart.so.13 exports); the libcudart.so.12
 * stand-in (emu_standin12.c, emu_props12.c) is a stateless layer over the
 * libcudart.so.13 one.
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
 *  - Configuration (read once): ACCEL_EMU_DEVICES (0..127, default 4: emu_tables.h's EMU_DEVICE_LIMIT),
 *    ACCEL_EMU_PROFILE (the board every device is, default h100, or a mixed
 *    machine "h100:2,a100:2" of that many devices; the table is
 *    emu_profiles.c), ACCEL_EMU_MEMORY (bytes per device,
 *    K/M/G/T suffixes, default the profile's memory: 80 GiB for h100),
 *    ACCEL_EMU_FAIL (symbol:n[,symbol:n...], 64 points at most).  A malformed
 *    value makes every call fail with cudaErrorInitializationError (driver:
 *    NOT_INITIALIZED), so a typo cannot silently run a different
 *    configuration; accelEmuConfigError says which variable it was.
 *  - ACCEL_EMU_DEVICES is the machine's (physical) devices; CUDA_VISIBLE_DEVICES
 *    selects and renumbers those the runtime shows, as the real driver does
 *    (emu_visible.c); NVML (emu_nvml.c) reports the physical ones.
 *    Device ordinals below are visible ones; UUIDs, PCI bus ids and board ids
 *    are the physical device's.
 *  - cudaStreamPerThread is a blocking stream per (thread, device), as in
 *    CUDA: it synchronises with the legacy stream; destroyed at thread exit.
 *  - Priorities are recorded and clamped but do not affect scheduling.
 *  - Fault injection: the n-th call (counted from when the spec was
 *    installed) fails with cudaErrorMemoryAllocation for calls that create
 *    something (stream/event create, cudaMalloc, cudaMallocAsync, cudaHostAlloc,
 *    cudaHostRegister, cudaIpcOpenEventHandle)
 *    and cudaErrorUnknown / CUDA_ERROR_UNKNOWN otherwise.  The stand-ins'
 *    driver layer (emu_driver.c) and the libcudart.so.13 stand-in's real
 *    entry points (emu_standin.c) are armed by their own names the same way.
 *  - Blocking calls (stream/event/device synchronise) made from inside a
 *    host function return cudaErrorNotPermitted instead of deadlocking.
 *  - Stream-ordered pools (cudaMallocAsync & co) and pinned host memory
 *    (cudaHostAlloc, cudaHostRegister): emu_memory.c, with its own notes.
 *  - Asynchronous copies with pageable host memory behave as CUDA documents
 *    ("API synchronization behavior"): to pageable memory or between host
 *    buffers they are done when the call returns; from pageable memory to a
 *    device the source is staged at the call (emu_memory.c's copy_mode).
 *    cudaFree does not synchronise; queued copies keep their allocation
 *    alive instead.
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
static const char *const sym_names[SYM_COUNT] = {
    EMU_SYMBOLS(X_NAME) EMU_DRIVER_SYMBOLS(X_NAME) EMU_STANDIN_SYMBOLS(X_NAME) EMU_GRAPH_DRIVER_SYMBOLS(X_NAME)
    EMU_MODULE_SYMBOLS(X_NAME)
    EMU_NVML_SYMBOLS(X_NAME)
};

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

static void set_fail_points(const failpt_t *f, int n)
{
    pthread_mutex_lock(&g_fail_lock);
    memcpy(g_fail, f, sizeof(failpt_t) * (size_t)n);
    g_nfail = n;
    memset(g_calls, 0, sizeof g_calls);
    atomic_store(&g_fail_active, n > 0);
    pthread_mutex_unlock(&g_fail_lock);
}

int install_fail_spec(const char *spec)
{
    failpt_t tmp[MAX_FAIL];
    int n = 0;
    if (spec && *spec && parse_fail_spec(spec, tmp, &n)) return 1;
    set_fail_points(tmp, n);
    return 0;
}

/* ------------------------------------------------------------ global state */

pthread_once_t g_once = PTHREAD_ONCE_INIT;
atomic_int g_ready;
atomic_int g_rt_ready;              /* a runtime entry point ran (emu_runtime.h's RT_INIT) */
atomic_int g_drv_ready;             /* emu_internal.h */
int g_forked;                       /* emu_internal.h */
cudaError_t g_init_err;             /* non-zero: bad configuration, every call fails */
int g_ndev;                         /* visible devices (emu_internal.h) */
int g_nphys;                        /* the machine's devices (ACCEL_EMU_DEVICES) */
int g_phys[MAX_DEVICES];            /* visible ordinal -> physical device (emu_internal.h) */
size_t g_mem_total[MAX_DEVICES];    /* visible device -> bytes (emu_internal.h) */
size_t g_phys_mem[MAX_DEVICES];     /* physical device -> bytes (emu_internal.h) */

pthread_mutex_t G = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t g_done_cv = PTHREAD_COND_INITIALIZER;  /* any item completed */
pthread_cond_t g_work_cv = PTHREAD_COND_INITIALIZER;  /* run queue non-empty */
pthread_cond_t g_exit_cv = PTHREAD_COND_INITIALIZER;  /* a worker retired */
int g_waiters;                      /* threads blocked on g_done_cv */

atomic_int g_ctx[MAX_DEVICES];      /* primary context active, and how (emu_internal.h) */

__thread int t_dev;                 /* the thread's current device */
__thread int t_capmode;
__thread cudaError_t t_last;        /* emu_internal.h */
__thread unsigned t_binds;          /* emu_internal.h */
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

pthread_key_t g_tls_key;            /* per-thread default streams (emu_stream.c) */
int g_tls_key_made;

void emu_init_once(void)
{
    pthread_once(&g_once, emu_init);
    atomic_store_explicit(&g_ready, 1, memory_order_release);
}

void emu_rt_init(void)
{
    emu_init_once();
    if (!g_init_err) atomic_store(&g_drv_ready, 1);
    atomic_store_explicit(&g_rt_ready, 1, memory_order_release);
}

/* The configuration parsed from the variables' values (NULL: unset). */
typedef struct {
    int nphys, ndev;
    int phys[MAX_DEVICES];
    const emu_profile_t *profile[MAX_DEVICES];   /* physical device -> its board */
    size_t mem[MAX_DEVICES];                     /* physical device -> bytes */
    failpt_t fail[MAX_FAIL];
    int nfail;
} emu_config_t;

/* 0 when the configuration is valid, else the first malformed variable (EMU_CONFIG_* of
 * accelEmuCheckConfig).  Touches no global state: emu_init and accelEmuCheckConfig share it. */
static int parse_config(const char *devices, const char *visible, const char *memory, const char *fail,
                        const char *profile, emu_config_t *c)
{
    unsigned long long v;
    int bad = 0;
    c->nphys = 4;
    if (devices && *devices) {
        size_t n = strlen(devices);
        if (parse_size(devices, &v) || v > EMU_DEVICE_LIMIT || devices[n - 1] < '0' || devices[n - 1] > '9')
            bad = 1;
        else
            c->nphys = (int)v;
    }
    /* ACCEL_EMU_PROFILE: one board name for every device, or a machine ("h100:2,a100:2"), whose size
     * ACCEL_EMU_DEVICES may repeat but not contradict. */
    int bad_profile = 0;
    for (int d = 0; d < MAX_DEVICES; d++) c->profile[d] = emu_profile_at(0);
    if (profile && *profile) {
        const emu_profile_t *board = emu_profile_find(profile, strlen(profile));
        if (board) {
            for (int d = 0; d < MAX_DEVICES; d++) c->profile[d] = board;
        } else {
            const emu_profile_t *rows[MAX_DEVICES];
            int np = emu_profiles_parse(profile, rows);
            if (np < 0 || (devices && *devices && !bad && np != c->nphys)) {
                bad_profile = 1;
            } else {
                memcpy(c->profile, rows, sizeof *rows * (size_t)np);
                if (!bad) c->nphys = np;
            }
        }
    }
    c->ndev = emu_visible_devices(visible, c->nphys, c->phys);
    if (c->ndev < 0) {
        c->ndev = 0;
        if (!bad) bad = 2;
    }
    int mem_set = 0;
    if (memory && *memory) {
        if (parse_size(memory, &v)) { if (!bad) bad = 3; }
        else mem_set = 1;
    }
    for (int d = 0; d < MAX_DEVICES; d++) c->mem[d] = mem_set ? (size_t)v : (size_t)c->profile[d]->memory;
    c->nfail = 0;
    if (fail && *fail && parse_fail_spec(fail, c->fail, &c->nfail) && !bad) bad = 4;
    if (bad_profile && !bad) bad = 5;
    return bad;
}

/* Whether the emulator would accept this configuration (the values of ACCEL_EMU_DEVICES,
 * CUDA_VISIBLE_DEVICES, ACCEL_EMU_MEMORY, ACCEL_EMU_FAIL, ACCEL_EMU_PROFILE; NULL: unset), without
 * reading or changing any state: 0 when valid, else 1 to 5 for the first malformed one in that order.  accel.emu
 * checks with it before it loads the stand-ins, so a malformed value changes nothing. */
EXPORT int accelEmuCheckConfig(const char *devices, const char *visible, const char *memory, const char *fail,
                               const char *profile)
{
    emu_config_t c;
    return parse_config(devices, visible, memory, fail, profile, &c);
}

static int g_config_bad;            /* the malformed variable emu_init found (accelEmuCheckConfig's number) */
static char *g_config_value;        /* and its value */

void emu_init(void)
{
    static emu_config_t c;              /* emu_init runs once */
    const char *vars[5] = { getenv("ACCEL_EMU_DEVICES"), getenv("CUDA_VISIBLE_DEVICES"), getenv("ACCEL_EMU_MEMORY"),
                            getenv("ACCEL_EMU_FAIL"), getenv("ACCEL_EMU_PROFILE") };
    if ((g_config_bad = parse_config(vars[0], vars[1], vars[2], vars[3], vars[4], &c))) {
        g_init_err = cudaErrorInitializationError;
        g_config_value = strdup(vars[g_config_bad - 1] ? vars[g_config_bad - 1] : "");
    }
    g_nphys = c.nphys;
    g_ndev = c.ndev;
    memcpy(g_phys, c.phys, sizeof g_phys);
    memcpy(g_phys_mem, c.mem, sizeof g_phys_mem);
    for (int d = 0; d < c.ndev; d++) g_mem_total[d] = c.mem[c.phys[d]];
    emu_profiles_set(c.profile, c.nphys);
    if (!g_init_err) set_fail_points(c.fail, c.nfail);
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
    if (EMU_FAULT(cudaGetLastError)) return cudaErrorUnknown;
    cudaError_t e = t_last;
    t_last = cudaSuccess;
    return e;
}

EXPORT cudaError_t cudaPeekAtLastError(void)
{
    INIT();
    if (g_init_err) return g_init_err;
    if (EMU_FAULT(cudaPeekAtLastError)) return cudaErrorUnknown;
    return t_last;
}

/* The version queries do not initialise the emulator, as a real runtime's load no device list: a
 * CUDA_VISIBLE_DEVICES set after them still applies (numba-cuda and cuda.bindings ask for versions at
 * import), nor the driver.  Once the emulator is initialised they check its configuration and faults like
 * every call; they still answer in a forked child. */
#define VERSION_ENTER(sym) do { \
        if (atomic_load(&g_ready) && !g_forked) { \
            if (g_init_err) return fail(g_init_err); \
            if (EMU_FAULT(sym)) return fail(cudaErrorUnknown); \
        } \
    } while (0)

/* Read once; a malformed value is ignored here (accel.emu refuses it before it reaches a process). */
int emu_driver_version(void)
{
    static atomic_int version;
    int v = atomic_load(&version);
    if (v) return v;
    v = EMU_CUDA_VERSION;
    const char *s = getenv("ACCEL_EMU_DRIVER_VERSION");
    if (s && *s && strlen(s) <= 5 && strspn(s, "0123456789") == strlen(s) && atoi(s) >= EMU_CUDA_VERSION) v = atoi(s);
    atomic_store(&version, v);
    return v;
}

EXPORT cudaError_t cudaDriverGetVersion(int *v)
{
    VERSION_ENTER(cudaDriverGetVersion);
    if (!v) return fail(cudaErrorInvalidValue);
    *v = emu_driver_version();
    return cudaSuccess;
}

EXPORT cudaError_t cudaRuntimeGetVersion(int *v)
{
    VERSION_ENTER(cudaRuntimeGetVersion);
    if (!v) return fail(cudaErrorInvalidValue);
    *v = EMU_CUDA_VERSION;
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

/* cuInit initialises the driver API (so does the runtime's first call, as cudart calls it itself); in a
 * process forked from one where it was, it fails as the real one does (emu_internal.h's g_forked). */
EXPORT CUresult cuInit(unsigned int flags)
{
    INIT();
    if (g_init_err) return CUDA_ERROR_NOT_INITIALIZED;
    if (EMU_FAULT(cuInit)) return CUDA_ERROR_UNKNOWN;
    if (flags) return CUDA_ERROR_INVALID_VALUE;
    atomic_store(&g_drv_ready, 1);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDriverGetVersion(int *v)
{
    if (atomic_load(&g_ready)) DRV_ENTER_ANY(cuDriverGetVersion);  /* as VERSION_ENTER */
    if (!v) return CUDA_ERROR_INVALID_VALUE;
    *v = emu_driver_version();
    return CUDA_SUCCESS;
}

EXPORT CUresult cuGetErrorName(CUresult e, const char **out)
{
    DRV_ENTER_ANY(cuGetErrorName);
    if (!out) return CUDA_ERROR_INVALID_VALUE;
    const errdesc_t *d = emu_drv_error(e);
    *out = d ? d->name : NULL;
    return d ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuGetErrorString(CUresult e, const char **out)
{
    DRV_ENTER_ANY(cuGetErrorString);
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

/* Why the emulator refused its configuration when it read it: the malformed variable's number (1 to 5, in
 * accelEmuCheckConfig's order) and its value into *value (when value is not NULL), or 0 when it was valid. */
EXPORT int accelEmuConfigError(const char **value)
{
    INIT();
    if (value) *value = g_config_bad ? g_config_value : NULL;
    return g_config_bad;
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
    /* a forked child's refusal is the CUDA driver's (atfork_child): NVML still sees the devices */
    return g_init_err && !g_forked ? -1 : g_nphys;
}
