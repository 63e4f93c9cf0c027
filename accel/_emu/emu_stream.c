/* Streams of the emulated runtime: FIFOs of items (host functions, records, waits, copies,
 * memsets) run in order by an elastic pool of worker threads; records (completion flags placed in a
 * FIFO) order streams against each other and the legacy default stream's implicit
 * synchronisation; per-thread default streams; what fork and unloading do to the workers; and the
 * stream API (create, destroy, query, synchronise, getters, capture mode, cudaLaunchHostFunc).
 * The model is described in emu_core.c. */
#include "emu_runtime.h"
#include "emu_launch.h"

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
    capture_stream_free(s);
    if (s->dprev) s->dprev->dnext = s->dnext;
    else g_devstreams[s->device] = s->dnext;
    if (s->dnext) s->dnext->dprev = s->dprev;
    free(s);
}

void item_free(item_t *it)
{
    if (it->launch) emu_launch_unref_locked(it->launch);
    rec_unref(it->rec);
    alloc_unref(it->a1);
    alloc_unref(it->a2);
    free(it->stage);
    free(it);
}

/* A 2D copy: rows of it->n bytes (cudaMemcpy2DAsync, cuMemcpy2D). */
static void copy_rows(const item_t *it)
{
    for (size_t r = 0; r < it->rows; r++)
        memmove((char *)it->dst + r * it->dpitch, (const char *)it->src + r * it->spitch, it->n);
}

/* A 16- or 32-bit pattern set (cuMemsetD16, cuMemsetD32): it->n elements of it->elem bytes. */
static void set_elems(const item_t *it)
{
    if (it->elem == 2) {
        uint16_t v = (uint16_t)it->value;
        for (size_t i = 0; i < it->n; i++) memcpy((char *)it->dst + 2 * i, &v, 2);
    } else {
        uint32_t v = (uint32_t)it->value;
        for (size_t i = 0; i < it->n; i++) memcpy((char *)it->dst + 4 * i, &v, 4);
    }
}

/* Runs item it's work (copies, memsets, kernels, host functions; records and waits are the caller's) for stream s,
 * G held and dropped around the work.  Also the bodies of conditional graph nodes, run on the worker. */
void emu_item_run(stream_t *s, item_t *it)
{
    switch (it->kind) {
    case IT_HOSTFN: {
        void *outer = t_in_hostfn;      /* a conditional node's body runs inside its item's function */
        pthread_mutex_unlock(&G);
        t_in_hostfn = s;
        it->fn(it->arg);
        t_in_hostfn = outer;
        pthread_mutex_lock(&G);
        break;
    }
    case IT_COPY:
        pthread_mutex_unlock(&G);
        if (it->rows > 1) copy_rows(it);
        else memmove(it->dst, it->src, it->n);
        pthread_mutex_lock(&G);
        break;
    case IT_KERNEL:
        g_kernels_running++;
        pthread_mutex_unlock(&G);
        emu_launch_run(it->launch);
        pthread_mutex_lock(&G);
        if (--g_kernels_running == 0) emu_mem_kernels_idle();
        break;
    case IT_SET:
        pthread_mutex_unlock(&G);
        for (size_t r = 0, rows = it->rows > 1 ? it->rows : 1; r < rows; r++) {  /* 2-D: graph nodes */
            item_t row = *it;
            row.dst = (char *)it->dst + r * it->dpitch;
            if (it->elem > 1) set_elems(&row);
            else memset(row.dst, it->value, it->n);
        }
        pthread_mutex_lock(&G);
        break;
    default:
        break;
    }
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
        if (it->kind == IT_RECORD) rec_reach(it->rec);
        else emu_item_run(s, it);
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
    if (it->kind == IT_KERNEL) s->last_kernel = s->enq;
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
 * blocking streams, and blocking streams wait for prior legacy work.  Work
 * on the legacy stream while a blocking stream of the device captures would
 * depend on the capture: cudaErrorStreamCaptureImplicit, the capture
 * invalidated (nothing queued). */
cudaError_t implicit_sync(stream_t *s)
{
    if (s->kind == SK_LEGACY) {
        int refused = 0;
        int capturing = atomic_load_explicit(&g_ncap, memory_order_relaxed) != 0;
        for (stream_t *t = capturing ? g_devstreams[s->device] : NULL; t; t = t->dnext)
            if (t != s && !(t->flags & STREAM_NONBLOCKING) && t->cap) {
                capture_refuse(t);
                refused = 1;
            }
        if (refused) return cudaErrorStreamCaptureImplicit;
        for (stream_t *t = g_devstreams[s->device]; t; t = t->dnext) {
            if (t == s || (t->flags & STREAM_NONBLOCKING) || !pending(t)) continue;
            rec_t *r = tail_rec(t);
            if (!r || add_wait(s, r)) return cudaErrorMemoryAllocation;
        }
    } else if (!(s->flags & STREAM_NONBLOCKING)) {
        stream_t *l = g_legacy[s->device];
        if (l && pending(l)) {
            rec_t *r = tail_rec(l);
            if (!r || add_wait(s, r)) return cudaErrorMemoryAllocation;
        }
    }
    return cudaSuccess;
}

cudaError_t submit(stream_t *s, item_t *it)
{
    if (s->cap) return capture_item(s, it);     /* recorded as a graph node instead */
    cudaError_t ierr = implicit_sync(s);
    if (ierr) { item_free(it); return ierr; }
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

/* Waits for the streams of devices [first, last) up to what they have queued now (kernels: 1, only those
 * with a kernel queued, up to that kernel).  G held. */
static cudaError_t wait_streams(int first, int last, int kernels)
{
    size_t n = 0;
    for (int d = first; d < last; d++)
        for (stream_t *s = g_devstreams[d]; s; s = s->dnext) n += kernels ? s->done < s->last_kernel : pending(s);
    if (!n) return cudaSuccess;
    stream_t **ss = malloc(n * sizeof *ss);
    uint64_t *tg = malloc(n * sizeof *tg);
    if (!ss || !tg) {
        free(ss);
        free(tg);
        return cudaErrorMemoryAllocation;
    }
    size_t k = 0;
    for (int d = first; d < last; d++)
        for (stream_t *s = g_devstreams[d]; s; s = s->dnext) {
            if (kernels ? s->done >= s->last_kernel : !pending(s)) continue;
            ss[k] = s;
            tg[k] = kernels ? s->last_kernel : s->enq;
            s->refs++;
            k++;
        }
    for (k = 0; k < n; k++) wait_stream_release(ss[k], tg[k]);
    free(ss);
    free(tg);
    return cudaSuccess;
}

cudaError_t wait_device_streams(int first, int last)
{
    return wait_streams(first, last, 0);
}

cudaError_t wait_queued_kernels(void)
{
    return t_in_hostfn ? cudaSuccess : wait_streams(0, g_ndev, 1);
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
 * child.  A child of a process whose driver was initialised is refused, as
 * the real driver refuses it (emu_internal.h's g_forked). */
void atfork_child(void)
{
    g_nworkers = 0;
    g_idle = 0;
    if (atomic_load(&g_drv_ready)) {
        g_forked = 1;
        g_init_err = cudaErrorInitializationError;
        atomic_store(&g_drv_ready, 0);
    }
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
    capture_stream_gone(s);
    s->destroyed = 1;
    stream_maybe_free(s);
    pthread_mutex_unlock(&G);
    uo_run_dead();                  /* a capture dropped with its graph: its user objects */
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
    int busy = 0, dev = -1;
    cudaError_t cerr = capture_unsafe();
    if (cerr) return fail(cerr);
    WITH_STREAM(h, s, if (s->cap) err_ = capture_refuse(s); busy = pending(s); ensure_ctx(s->device); dev = s->device);
    if (busy) return fail(cudaErrorNotReady);
    int sticky = emu_sticky(dev);
    return sticky ? fail(sticky) : cudaSuccess;
}

EXPORT cudaError_t cudaStreamSynchronize(cudaStream_t h)
{
    RT_ENTER(cudaStreamSynchronize, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (t_in_hostfn) return fail(cudaErrorNotPermitted);
    cudaError_t cerr = capture_unsafe();
    if (cerr) return fail(cerr);
    int dev = -1;
    WITH_STREAM(h, s, ensure_ctx(s->device); dev = s->device; if (s->cap) err_ = capture_refuse(s);
                else if (pending(s)) wait_stream(s, s->enq));
    int sticky = emu_sticky(dev);       /* a kernel it waited for faulted */
    return sticky ? fail(sticky) : cudaSuccess;
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

/* cudaStreamIsCapturing, cudaStreamBeginCapture / EndCapture / GetCaptureInfo: emu_graph.c. */

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
