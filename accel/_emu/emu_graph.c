/* Stream capture and CUDA graphs of the emulated runtime.
 *
 * Capture: cudaStreamBeginCapture puts a stream in a capture sequence (capture_t) that owns a graph.
 * While a stream takes part in a capture, what is queued on it is recorded as graph nodes instead of
 * being run: copies and memsets (all kinds; the ranges were checked when queued), host functions,
 * external event records / waits, cudaMallocAsync / cudaFreeAsync (memory nodes).  Each capturing stream
 * holds the set of nodes its next node depends on; an event recorded in a capturing stream stands for
 * that set, so a stream waiting on it joins the capture (fork) or merges the set into its own (join), as
 * in CUDA.  cudaStreamEndCapture on the origin stream ends the sequence for every stream in it; work of
 * a forked stream that the origin never waited for is cudaErrorStreamCaptureUnjoined.
 *
 * Prohibited calls (cudaThreadExchangeStreamCaptureMode's rules): synchronising or querying a capturing
 * stream, and, from a thread the capture modes prohibit, the potentially unsafe calls (device / stream /
 * event synchronisation and queries, cudaMalloc, cudaFree) return cudaErrorStreamCaptureUnsupported and
 * invalidate the captures concerned; work queued on an invalidated capture and its cudaStreamEndCapture
 * return cudaErrorStreamCaptureInvalidated.
 *
 * Graphs and executable graphs: nodes are kept in capture order, which is a topological order (a node
 * only depends on earlier ones), so cudaGraphLaunch queues the executable graph's nodes in that order on
 * the launch stream's FIFO (one valid schedule of the DAG), after the stream's earlier work.  At launch
 * every copy / memset range that was device memory at capture is checked again against the allocation
 * table (memory freed since gives cudaErrorInvalidValue and queues nothing).
 *
 * Documented choices:
 *  - Graph memory: cudaMallocAsync in capture allocates from the stream's pool at once (its address is
 *    fixed for every launch; CUDA maps it at launch, the emulator keeps it mapped).  An allocation the
 *    graph frees (a free node, which only orders) goes back to the pool once the graph and every
 *    executable graph of it are destroyed; one it does not free stays the user's, as in CUDA, until a
 *    cudaFreeAsync / cudaFree outside the graph (its block is reused only once the graph is gone too; a
 *    launch touching it after that free is cudaErrorInvalidValue).  cudaFreeAsync in capture of memory
 *    that is not a graph allocation of the same capture is cudaErrorInvalidValue.
 *  - Kernel nodes cannot arise (the emulator launches no kernels); cudaGraphLaunch of a graph into a
 *    capturing stream (a child graph) is refused with cudaErrorStreamCaptureUnsupported.
 *  - An event last recorded in a capture that has ended stands for no work (queries succeed, waits are
 *    no-ops); in a capture still under way, querying or synchronising it is cudaErrorCapturedEvent.
 */
#include "emu_runtime.h"

typedef void *cudaGraph_t;
typedef void *cudaGraphExec_t;
typedef void *cudaGraphNode_t;

enum { GN_KERNEL = 0, GN_MEMCPY = 1, GN_MEMSET = 2, GN_HOST = 3, GN_EMPTY = 5, GN_WAIT_EVENT = 6,
       GN_EVENT_RECORD = 7, GN_MEM_ALLOC = 10, GN_MEM_FREE = 11 };
enum { CAP_NONE = 0, CAP_ACTIVE = 1, CAP_INVALIDATED = 2 };
enum { MODE_GLOBAL = 0, MODE_THREAD_LOCAL = 1, MODE_RELAXED = 2 };
#define INSTANTIATE_FLAGS 0xbull     /* AutoFreeOnLaunch | Upload | UseNodePriority (DeviceLaunch: no) */

typedef struct graph graph_t;

/* Graph memory: the allocations a graph's alloc nodes made, shared by the graph and its executable graphs;
 * freed[i]: the graph has a free node for a[i]. */
typedef struct { int refs; alloc_t **a; unsigned char *freed; size_t n, cap; } gmem_t;

typedef struct gnode {
    uint64_t handle;
    graph_t *g;
    int type;
    uint32_t idx;
    uint32_t *deps;
    size_t ndeps;
    void *dst;
    const void *src;
    size_t n;
    int value;
    int dev_dst, dev_src;           /* the range was device memory when captured */
    cudaHostFn_t fn;
    void *arg;
    uint64_t event;                 /* event record / wait nodes: the event handle */
    alloc_t *mem;                   /* memory nodes */
} gnode_t;

struct graph {
    uint64_t handle;
    unsigned long long id;
    int device;
    gnode_t **nodes;
    size_t n, cap;
    gmem_t *mem;
    capture_t *capturing;           /* the capture recording into it, or NULL */
};

typedef struct {
    uint64_t handle;
    int device;
    size_t n;
    gnode_t *nodes;                 /* copies, in topological order (deps not kept) */
    gmem_t *mem;
} gexec_t;

struct capture {
    unsigned long long id;
    int mode, status;
    pthread_t thread;
    graph_t *g;
    stream_t *origin;
    stream_t **ss;                  /* every stream in the sequence (origin first) */
    size_t nss, capss;
    capture_t *next;
};

atomic_int g_ncap;
static capture_t *g_caps;
static unsigned long long g_next_capid = 1, g_next_graphid = 1;
static int g_live_graphs, g_live_execs;

/* --------------------------------------------------------------- node sets */

static int deps_reserve(gdeps_t *d, size_t n)
{
    if (n <= d->cap) return 0;
    size_t nc = d->cap ? d->cap * 2 : 4;
    while (nc < n) nc *= 2;
    uint32_t *v = realloc(d->v, nc * sizeof *v);
    if (!v) return -1;
    d->v = v;
    d->cap = nc;
    return 0;
}

static int deps_copy(gdeps_t *d, const gdeps_t *src)
{
    if (deps_reserve(d, src->n)) return -1;
    if (src->n) memcpy(d->v, src->v, src->n * sizeof *d->v);
    d->n = src->n;
    return 0;
}

static int deps_union(gdeps_t *d, const gdeps_t *src)
{
    for (size_t i = 0; i < src->n; i++) {
        size_t j = 0;
        while (j < d->n && d->v[j] != src->v[i]) j++;
        if (j < d->n) continue;
        if (deps_reserve(d, d->n + 1)) return -1;
        d->v[d->n++] = src->v[i];
    }
    return 0;
}

static void deps_free(gdeps_t *d)
{
    free(d->v);
    d->v = NULL;
    d->n = d->cap = 0;
}

/* ------------------------------------------------------------------ graphs */

static void gmem_unref(gmem_t *m)
{
    if (!m || --m->refs) return;
    /* What the graph frees goes back to the pool; an allocation it never frees stays the user's (as in CUDA:
     * freed with cudaFreeAsync / cudaFree), its block held only until then. */
    for (size_t i = 0; i < m->n; i++) {
        if (m->freed[i]) emu_mem_release(m->a[i]);
        else alloc_unref(m->a[i]);
    }
    free(m->a);
    free(m->freed);
    free(m);
}

static graph_t *graph_new(int device)
{
    graph_t *g = calloc(1, sizeof *g);
    gmem_t *m = calloc(1, sizeof *m);
    uint64_t id;
    if (!g || !m) { free(g); free(m); return NULL; }
    m->refs = 1;
    g->mem = m;
    g->device = device;
    g->id = g_next_graphid++;
    g->handle = new_handle(TAG_GRAPH, &id);
    if (ht_put(&g_handles, g->handle, g)) { free(g); free(m); return NULL; }
    g_live_graphs++;
    return g;
}

static void node_free(gnode_t *nd)
{
    if (nd->handle) ht_del(&g_handles, nd->handle);
    free(nd->deps);
    free(nd);
}

static void graph_free(graph_t *g)
{
    for (size_t i = 0; i < g->n; i++) node_free(g->nodes[i]);
    free(g->nodes);
    gmem_unref(g->mem);
    ht_del(&g_handles, g->handle);
    g_live_graphs--;
    free(g);
}

/* A new node of g depending on deps[0..ndeps) (indices of g's nodes).  G held. */
static gnode_t *graph_add(graph_t *g, int type, const uint32_t *deps, size_t ndeps)
{
    if (g->n == g->cap) {
        size_t nc = g->cap ? g->cap * 2 : 16;
        gnode_t **nn = realloc(g->nodes, nc * sizeof *nn);
        if (!nn) return NULL;
        g->nodes = nn;
        g->cap = nc;
    }
    gnode_t *nd = calloc(1, sizeof *nd);
    if (!nd) return NULL;
    if (ndeps && !(nd->deps = malloc(ndeps * sizeof *deps))) { free(nd); return NULL; }
    if (ndeps) memcpy(nd->deps, deps, ndeps * sizeof *deps);
    nd->ndeps = ndeps;
    nd->type = type;
    nd->g = g;
    nd->idx = (uint32_t)g->n;
    uint64_t id;
    nd->handle = new_handle(TAG_GNODE, &id);
    if (ht_put(&g_handles, nd->handle, nd)) { nd->handle = 0; node_free(nd); return NULL; }
    g->nodes[g->n++] = nd;
    return nd;
}

static graph_t *get_graph(cudaGraph_t h)
{
    uintptr_t v = (uintptr_t)h;
    return (v & TAG_MASK) == TAG_GRAPH ? ht_get(&g_handles, v) : NULL;
}

static gexec_t *get_exec(cudaGraphExec_t h)
{
    uintptr_t v = (uintptr_t)h;
    return (v & TAG_MASK) == TAG_GEXEC ? ht_get(&g_handles, v) : NULL;
}

static gnode_t *get_node(cudaGraphNode_t h)
{
    uintptr_t v = (uintptr_t)h;
    return (v & TAG_MASK) == TAG_GNODE ? ht_get(&g_handles, v) : NULL;
}

/* ----------------------------------------------------------------- capture */

static capture_t *capture_find(unsigned long long id)
{
    for (capture_t *c = g_caps; c; c = c->next)
        if (c->id == id) return c;
    return NULL;
}

static void capture_invalidate(capture_t *c)
{
    if (c) c->status = CAP_INVALIDATED;
}

/* Ends capture c for all its streams and forgets it (its graph is the caller's).  G held. */
static void capture_finish(capture_t *c)
{
    for (size_t i = 0; i < c->nss; i++) {
        stream_t *s = c->ss[i];
        s->cap = NULL;
        deps_free(&s->capdeps);
    }
    for (capture_t **pp = &g_caps; *pp; pp = &(*pp)->next)
        if (*pp == c) { *pp = c->next; break; }
    atomic_fetch_sub(&g_ncap, 1);
    if (c->g) c->g->capturing = NULL;
    free(c->ss);
    free(c);
}

static int capture_add_stream(capture_t *c, stream_t *s)
{
    if (c->nss == c->capss) {
        size_t nc = c->capss ? c->capss * 2 : 4;
        stream_t **ns = realloc(c->ss, nc * sizeof *ns);
        if (!ns) return -1;
        c->ss = ns;
        c->capss = nc;
    }
    c->ss[c->nss++] = s;
    s->cap = c;
    return 0;
}

/* A node on capturing stream s after its current dependencies; s then depends on it alone. */
static gnode_t *capture_node(stream_t *s, int type, cudaError_t *err)
{
    capture_t *c = s->cap;
    if (c->status != CAP_ACTIVE) { *err = cudaErrorStreamCaptureInvalidated; return NULL; }
    gnode_t *nd = deps_reserve(&s->capdeps, 1) ? NULL : graph_add(c->g, type, s->capdeps.v, s->capdeps.n);
    if (!nd) { *err = cudaErrorMemoryAllocation; return NULL; }
    s->capdeps.v[0] = nd->idx;
    s->capdeps.n = 1;
    return nd;
}

cudaError_t capture_unsafe_slow(void)
{
    if (t_capmode == MODE_RELAXED) return cudaSuccess;
    pthread_t self = pthread_self();
    int hit = 0;
    pthread_mutex_lock(&G);
    for (capture_t *c = g_caps; c; c = c->next) {
        int mine = pthread_equal(c->thread, self);
        if ((mine && c->mode != MODE_RELAXED) || (!mine && t_capmode == MODE_GLOBAL && c->mode == MODE_GLOBAL)) {
            capture_invalidate(c);
            hit = 1;
        }
    }
    pthread_mutex_unlock(&G);
    return hit ? cudaErrorStreamCaptureUnsupported : cudaSuccess;
}

cudaError_t capture_refuse(stream_t *s)
{
    capture_invalidate(s->cap);
    return cudaErrorStreamCaptureUnsupported;
}

cudaError_t capture_item(stream_t *s, item_t *it)
{
    cudaError_t err = cudaSuccess;
    int type = it->kind == IT_COPY ? GN_MEMCPY : it->kind == IT_SET ? GN_MEMSET : GN_HOST;
    gnode_t *nd = it->kind == IT_COPY || it->kind == IT_SET || it->kind == IT_HOSTFN
                  ? capture_node(s, type, &err) : NULL;
    if (!nd && !err) err = cudaErrorStreamCaptureUnsupported;
    if (nd) {
        nd->dst = it->dst;
        nd->src = it->src;
        nd->n = it->n;
        nd->value = it->value;
        nd->dev_dst = it->a1 != NULL;
        nd->dev_src = it->a2 != NULL;
        nd->fn = it->fn;
        nd->arg = it->arg;
    }
    item_free(it);
    return err;
}

int capture_invalidated(const stream_t *s)
{
    return s->cap && s->cap->status != CAP_ACTIVE;
}

int capture_event_live(const evshared_t *sh)
{
    return sh->capid && capture_find(sh->capid) != NULL;
}

cudaError_t capture_record(stream_t *s, event_t *e, unsigned flags)
{
    capture_t *c = s->cap;
    cudaError_t err = cudaSuccess;
    if (c->status != CAP_ACTIVE) return cudaErrorStreamCaptureInvalidated;
    if (flags & 1u) {                   /* cudaEventRecordExternal: a node that records it at launch */
        gnode_t *nd = capture_node(s, GN_EVENT_RECORD, &err);
        if (!nd) return err;
        nd->event = e->handle;
    }
    if (deps_copy(&e->sh->capdeps, &s->capdeps)) return cudaErrorMemoryAllocation;
    rec_unref(e->sh->latest);
    e->sh->latest = NULL;
    e->sh->capid = c->id;
    return cudaSuccess;
}

cudaError_t capture_wait(stream_t *s, event_t *e, unsigned flags)
{
    capture_t *ce = e->sh->capid ? capture_find(e->sh->capid) : NULL;
    cudaError_t err = cudaSuccess;
    if (s->cap) {
        capture_t *c = s->cap;
        if (c->status != CAP_ACTIVE) return cudaErrorStreamCaptureInvalidated;
        if (flags & 1u) {               /* cudaEventWaitExternal: a node that waits for it at launch */
            gnode_t *nd = capture_node(s, GN_WAIT_EVENT, &err);
            if (nd) nd->event = e->handle;
            return err;
        }
        if (ce == c) return deps_union(&s->capdeps, &e->sh->capdeps) ? cudaErrorMemoryAllocation : cudaSuccess;
        if (ce) return cudaErrorStreamCaptureMerge;
        /* Work recorded outside the capture: only completed work may be depended on. */
        if (e->sh->latest && !e->sh->latest->reached) {
            capture_invalidate(c);
            return cudaErrorStreamCaptureIsolation;
        }
        return cudaSuccess;
    }
    if (!ce) return cudaSuccess;        /* recorded in a capture that has ended: no work */
    if (ce->status != CAP_ACTIVE) return cudaErrorStreamCaptureInvalidated;
    /* Fork: s joins the capture, depending on what the event stands for. */
    if (deps_copy(&s->capdeps, &e->sh->capdeps) || capture_add_stream(ce, s)) {
        deps_free(&s->capdeps);
        return cudaErrorMemoryAllocation;
    }
    return cudaSuccess;
}

cudaError_t capture_mem_alloc(stream_t *s, alloc_t *a)
{
    cudaError_t err = cudaSuccess;
    gmem_t *m = s->cap->g->mem;
    if (m->n == m->cap) {
        size_t nc = m->cap ? m->cap * 2 : 8;
        alloc_t **na = realloc(m->a, nc * sizeof *na);
        if (na) m->a = na;
        unsigned char *nf = na ? realloc(m->freed, nc) : NULL;
        if (!nf) return cudaErrorMemoryAllocation;
        m->freed = nf;
        m->cap = nc;
    }
    gnode_t *nd = capture_node(s, GN_MEM_ALLOC, &err);
    if (!nd) return err;
    nd->mem = a;
    nd->dst = a->base;
    nd->n = a->size;
    a->pending++;                       /* the graph's reference (gmem_unref drops it) */
    m->freed[m->n] = 0;
    m->a[m->n++] = a;
    return cudaSuccess;
}

cudaError_t capture_mem_free(stream_t *s, alloc_t *a)
{
    cudaError_t err = cudaSuccess;
    gmem_t *m = s->cap->g->mem;
    if (s->cap->status != CAP_ACTIVE) return cudaErrorStreamCaptureInvalidated;
    size_t i = 0;
    while (i < m->n && m->a[i] != a) i++;
    if (i == m->n) return cudaErrorInvalidValue;
    gnode_t *nd = capture_node(s, GN_MEM_FREE, &err);
    if (!nd) return err;
    nd->mem = a;
    nd->dst = a->base;
    m->freed[i] = 1;
    return cudaSuccess;
}

void capture_stream_gone(stream_t *s)
{
    capture_t *c = s->cap;
    if (!c) return;
    if (c->origin == s) {               /* the sequence can no longer be ended: it is dropped */
        graph_t *g = c->g;
        capture_finish(c);
        graph_free(g);
        return;
    }
    capture_invalidate(c);
    for (size_t i = 0; i < c->nss; i++)
        if (c->ss[i] == s) { c->ss[i] = c->ss[--c->nss]; break; }
    s->cap = NULL;
    deps_free(&s->capdeps);
}

void capture_stream_free(stream_t *s)
{
    capture_stream_gone(s);
    deps_free(&s->capdeps);
    free(s->capinfo);
    s->capinfo = NULL;
}

/* ------------------------------------------------------------ capture (API) */

EXPORT cudaError_t cudaStreamBeginCapture(cudaStream_t h, int mode)
{
    RT_ENTER(cudaStreamBeginCapture, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (mode < MODE_GLOBAL || mode > MODE_RELAXED) return fail(cudaErrorInvalidValue);
    cudaError_t err = cudaSuccess;
    pthread_mutex_lock(&G);
    stream_t *s = get_stream(h, &err);
    if (s && s->kind == SK_LEGACY) err = cudaErrorStreamCaptureUnsupported;
    else if (s && s->cap) err = cudaErrorIllegalState;
    if (s && !err) {
        capture_t *c = calloc(1, sizeof *c);
        graph_t *g = c ? graph_new(s->device) : NULL;
        if (!g || capture_add_stream(c, s)) {
            if (g) graph_free(g);
            free(c);
            err = cudaErrorMemoryAllocation;
        } else {
            c->id = g_next_capid++;
            c->mode = mode;
            c->status = CAP_ACTIVE;
            c->thread = pthread_self();
            c->g = g;
            c->origin = s;
            g->capturing = c;
            s->capdeps.n = 0;
            c->next = g_caps;
            g_caps = c;
            atomic_fetch_add(&g_ncap, 1);
            ensure_ctx(s->device);
        }
    }
    pthread_mutex_unlock(&G);
    return err ? fail(err) : cudaSuccess;
}

/* Every node of g that the origin's dependencies do not reach was forked off and never joined. */
static int capture_unjoined(capture_t *c)
{
    graph_t *g = c->g;
    if (!g->n) return 0;
    unsigned char *seen = calloc(g->n, 1);
    if (!seen) return 0;
    for (size_t i = 0; i < c->origin->capdeps.n; i++) seen[c->origin->capdeps.v[i]] = 1;
    for (size_t i = g->n; i-- > 0;)         /* dependencies point backwards: one reverse sweep */
        if (seen[i])
            for (size_t k = 0; k < g->nodes[i]->ndeps; k++) seen[g->nodes[i]->deps[k]] = 1;
    int unjoined = 0;
    for (size_t i = 0; i < g->n && !unjoined; i++) unjoined = !seen[i];
    free(seen);
    return unjoined;
}

EXPORT cudaError_t cudaStreamEndCapture(cudaStream_t h, cudaGraph_t *out)
{
    RT_ENTER(cudaStreamEndCapture, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (!out) return fail(cudaErrorInvalidValue);
    cudaError_t err = cudaSuccess;
    pthread_mutex_lock(&G);
    stream_t *s = get_stream(h, &err);
    capture_t *c = s ? s->cap : NULL;
    if (s && !c) err = cudaErrorIllegalState;
    else if (c && c->origin != s) {
        capture_invalidate(c);
        err = cudaErrorStreamCaptureUnmatched;
    } else if (c && c->mode != MODE_RELAXED && !pthread_equal(c->thread, pthread_self())) {
        err = cudaErrorStreamCaptureWrongThread;
    } else if (c) {
        graph_t *g = c->g;
        if (c->status != CAP_ACTIVE) err = cudaErrorStreamCaptureInvalidated;
        else if (capture_unjoined(c)) err = cudaErrorStreamCaptureUnjoined;
        capture_finish(c);
        if (err) {
            graph_free(g);
            *out = NULL;
        } else {
            *out = (cudaGraph_t)(uintptr_t)g->handle;
        }
    }
    pthread_mutex_unlock(&G);
    return err ? fail(err) : cudaSuccess;
}

EXPORT cudaError_t cudaStreamIsCapturing(cudaStream_t h, int *status)
{
    RT_ENTER(cudaStreamIsCapturing, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (!status) return fail(cudaErrorInvalidValue);
    cudaError_t err = cudaSuccess;
    pthread_mutex_lock(&G);
    stream_t *s = get_stream(h, &err);
    if (s) *status = s->cap ? s->cap->status : CAP_NONE;
    pthread_mutex_unlock(&G);
    return err ? fail(err) : cudaSuccess;
}

/* CUDA 13's signature (CUDA 12's _v3): the dependency array stays valid until the stream's next call. */
EXPORT cudaError_t cudaStreamGetCaptureInfo(cudaStream_t h, int *status, unsigned long long *id, cudaGraph_t *graph,
                                            const cudaGraphNode_t **deps, const void **edges, size_t *ndeps)
{
    RT_ENTER(cudaStreamGetCaptureInfo, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (!status) return fail(cudaErrorInvalidValue);
    cudaError_t err = cudaSuccess;
    pthread_mutex_lock(&G);
    stream_t *s = get_stream(h, &err);
    capture_t *c = s ? s->cap : NULL;
    if (c && deps && s->capdeps.n) {
        void **info = realloc(s->capinfo, s->capdeps.n * sizeof *info);
        if (!info) err = cudaErrorMemoryAllocation;
        else {
            s->capinfo = info;
            for (size_t i = 0; i < s->capdeps.n; i++)
                info[i] = (void *)(uintptr_t)c->g->nodes[s->capdeps.v[i]]->handle;
        }
    }
    if (s && !err) {
        *status = c ? c->status : CAP_NONE;
        if (id) *id = c ? c->id : 0;
        if (graph) *graph = c ? (cudaGraph_t)(uintptr_t)c->g->handle : NULL;
        if (deps) *deps = c && s->capdeps.n ? (const cudaGraphNode_t *)s->capinfo : NULL;
        if (edges) *edges = NULL;
        if (ndeps) *ndeps = c ? s->capdeps.n : 0;
    }
    pthread_mutex_unlock(&G);
    return err ? fail(err) : cudaSuccess;
}

/* ------------------------------------------------------------- graphs (API) */

EXPORT cudaError_t cudaGraphCreate(cudaGraph_t *out, unsigned int flags)
{
    RT_ENTER(cudaGraphCreate, cudaErrorMemoryAllocation);
    RT_NEED_DEVICE();
    if (!out || flags) return fail(cudaErrorInvalidValue);
    pthread_mutex_lock(&G);
    graph_t *g = graph_new(t_dev);
    if (g) *out = (cudaGraph_t)(uintptr_t)g->handle;
    pthread_mutex_unlock(&G);
    return g ? cudaSuccess : fail(cudaErrorMemoryAllocation);
}

EXPORT cudaError_t cudaGraphAddEmptyNode(cudaGraphNode_t *out, cudaGraph_t gh, const cudaGraphNode_t *deps, size_t n)
{
    RT_ENTER(cudaGraphAddEmptyNode, cudaErrorMemoryAllocation);
    RT_NEED_DEVICE();
    if (!out || (n && !deps)) return fail(cudaErrorInvalidValue);
    cudaError_t err = cudaSuccess;
    uint32_t *idx = n ? malloc(n * sizeof *idx) : NULL;
    if (n && !idx) return fail(cudaErrorMemoryAllocation);
    pthread_mutex_lock(&G);
    graph_t *g = get_graph(gh);
    if (!g) err = cudaErrorInvalidResourceHandle;
    else if (g->capturing) err = cudaErrorInvalidValue;
    for (size_t i = 0; i < n && !err; i++) {
        gnode_t *d = get_node(deps[i]);
        if (!d || d->g != g) err = cudaErrorInvalidValue;
        else idx[i] = d->idx;
    }
    if (!err) {
        gnode_t *nd = graph_add(g, GN_EMPTY, idx, n);
        if (nd) *out = (cudaGraphNode_t)(uintptr_t)nd->handle;
        else err = cudaErrorMemoryAllocation;
    }
    pthread_mutex_unlock(&G);
    free(idx);
    return err ? fail(err) : cudaSuccess;
}

EXPORT cudaError_t cudaGraphDestroy(cudaGraph_t gh)
{
    RT_ENTER(cudaGraphDestroy, cudaErrorUnknown);
    RT_NEED_DEVICE();
    cudaError_t err = cudaSuccess;
    pthread_mutex_lock(&G);
    graph_t *g = get_graph(gh);
    if (!g) err = cudaErrorInvalidResourceHandle;
    else if (g->capturing) err = cudaErrorIllegalState;
    else graph_free(g);
    pthread_mutex_unlock(&G);
    return err ? fail(err) : cudaSuccess;
}

EXPORT cudaError_t cudaGraphGetNodes(cudaGraph_t gh, cudaGraphNode_t *nodes, size_t *n)
{
    RT_ENTER(cudaGraphGetNodes, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (!n) return fail(cudaErrorInvalidValue);
    pthread_mutex_lock(&G);
    graph_t *g = get_graph(gh);
    if (g) {
        if (nodes) {
            size_t k = *n < g->n ? *n : g->n;
            for (size_t i = 0; i < k; i++) nodes[i] = (cudaGraphNode_t)(uintptr_t)g->nodes[i]->handle;
            for (size_t i = k; i < *n; i++) nodes[i] = NULL;
        }
        *n = g->n;
    }
    pthread_mutex_unlock(&G);
    return g ? cudaSuccess : fail(cudaErrorInvalidResourceHandle);
}

EXPORT cudaError_t cudaGraphNodeGetType(cudaGraphNode_t nh, int *type)
{
    RT_ENTER(cudaGraphNodeGetType, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (!type) return fail(cudaErrorInvalidValue);
    pthread_mutex_lock(&G);
    gnode_t *nd = get_node(nh);
    if (nd) *type = nd->type;
    pthread_mutex_unlock(&G);
    return nd ? cudaSuccess : fail(cudaErrorInvalidResourceHandle);
}

static const char *node_name(int type)
{
    switch (type) {
    case GN_MEMCPY: return "MEMCPY";
    case GN_MEMSET: return "MEMSET";
    case GN_HOST: return "HOST";
    case GN_EMPTY: return "EMPTY";
    case GN_WAIT_EVENT: return "WAIT_EVENT";
    case GN_EVENT_RECORD: return "EVENT_RECORD";
    case GN_MEM_ALLOC: return "MEM_ALLOC";
    case GN_MEM_FREE: return "MEM_FREE";
    default: return "KERNEL";
    }
}

/* DOT in the shape of CUDA's: one cluster per graph, a record node per graph node, an edge per dependency. */
EXPORT cudaError_t cudaGraphDebugDotPrint(cudaGraph_t gh, const char *path, unsigned int flags)
{
    RT_ENTER(cudaGraphDebugDotPrint, cudaErrorUnknown);
    RT_NEED_DEVICE();
    (void)flags;
    if (!path) return fail(cudaErrorInvalidValue);
    cudaError_t err = cudaSuccess;
    pthread_mutex_lock(&G);
    graph_t *g = get_graph(gh);
    FILE *f = g ? fopen(path, "w") : NULL;
    if (!g) err = cudaErrorInvalidResourceHandle;
    else if (!f) err = cudaErrorInvalidValue;
    else {
        unsigned long long id = g->id;
        fprintf(f, "digraph dot {\n subgraph cluster_%llu {\nlabel=\"graph_%llu\" graph[style=\"dashed\"];\n", id, id);
        for (size_t i = 0; i < g->n; i++) {
            gnode_t *nd = g->nodes[i];
            fprintf(f, "\"graph_%llu_node_%zu\"\n\t[shape=\"record\",label=\"{%s\\n| {ID | node handle} | {%zu | 0x%llx}",
                    id, i, node_name(nd->type), i, (unsigned long long)nd->handle);
            if (nd->type == GN_MEMCPY)
                fprintf(f, " | {dst | src | count} | {%p | %p | %zu}", nd->dst, nd->src, nd->n);
            else if (nd->type == GN_MEMSET)
                fprintf(f, " | {dst | value | count} | {%p | %d | %zu}", nd->dst, nd->value, nd->n);
            else if (nd->type == GN_HOST)
                fprintf(f, " | {fn | userData} | {%p | %p}", (void *)(uintptr_t)nd->fn, nd->arg);
            else if (nd->type == GN_MEM_ALLOC || nd->type == GN_MEM_FREE)
                fprintf(f, " | {dptr | bytesize} | {%p | %zu}", nd->dst, nd->n);
            else if (nd->type == GN_EVENT_RECORD || nd->type == GN_WAIT_EVENT)
                fprintf(f, " | {event} | {0x%llx}", (unsigned long long)nd->event);
            fprintf(f, "}\"];\n");
        }
        for (size_t i = 0; i < g->n; i++)
            for (size_t k = 0; k < g->nodes[i]->ndeps; k++)
                fprintf(f, "\"graph_%llu_node_%u\" -> \"graph_%llu_node_%zu\";\n", id, g->nodes[i]->deps[k], id, i);
        fprintf(f, "}\n}\n");
        if (fclose(f)) err = cudaErrorInvalidValue;
    }
    pthread_mutex_unlock(&G);
    return err ? fail(err) : cudaSuccess;
}

/* ---------------------------------------------------- executable graphs (API) */

static cudaError_t instantiate(cudaGraphExec_t *out, cudaGraph_t gh, unsigned long long flags)
{
    if (!out || (flags & ~INSTANTIATE_FLAGS)) return fail(cudaErrorInvalidValue);
    cudaError_t err = cudaSuccess;
    pthread_mutex_lock(&G);
    graph_t *g = get_graph(gh);
    gexec_t *x = NULL;
    if (!g) err = cudaErrorInvalidResourceHandle;
    else if (g->capturing) err = cudaErrorInvalidValue;
    else if (!(x = calloc(1, sizeof *x)) || (g->n && !(x->nodes = malloc(g->n * sizeof *x->nodes))))
        err = cudaErrorMemoryAllocation;
    if (!err) {
        uint64_t id;
        x->handle = new_handle(TAG_GEXEC, &id);
        if (ht_put(&g_handles, x->handle, x)) err = cudaErrorMemoryAllocation;
    }
    if (!err) {
        for (size_t i = 0; i < g->n; i++) {
            x->nodes[i] = *g->nodes[i];
            x->nodes[i].deps = NULL;
            x->nodes[i].ndeps = 0;
            x->nodes[i].handle = 0;
        }
        x->n = g->n;
        x->device = g->device;
        x->mem = g->mem;
        x->mem->refs++;
        g_live_execs++;
        *out = (cudaGraphExec_t)(uintptr_t)x->handle;
    } else if (x) {
        free(x->nodes);
        free(x);
    }
    pthread_mutex_unlock(&G);
    return err ? fail(err) : cudaSuccess;
}

EXPORT cudaError_t cudaGraphInstantiate(cudaGraphExec_t *out, cudaGraph_t g, unsigned long long flags)
{
    RT_ENTER(cudaGraphInstantiate, cudaErrorMemoryAllocation);
    RT_NEED_DEVICE();
    return instantiate(out, g, flags);
}

EXPORT cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t *out, cudaGraph_t g, unsigned long long flags)
{
    RT_ENTER(cudaGraphInstantiateWithFlags, cudaErrorMemoryAllocation);
    RT_NEED_DEVICE();
    return instantiate(out, g, flags);
}

EXPORT cudaError_t cudaGraphExecDestroy(cudaGraphExec_t xh)
{
    RT_ENTER(cudaGraphExecDestroy, cudaErrorUnknown);
    RT_NEED_DEVICE();
    pthread_mutex_lock(&G);
    gexec_t *x = get_exec(xh);
    if (x) {
        ht_del(&g_handles, x->handle);
        gmem_unref(x->mem);     /* queued copies hold their own references to the memory they touch */
        free(x->nodes);
        free(x);
        g_live_execs--;
    }
    pthread_mutex_unlock(&G);
    return x ? cudaSuccess : fail(cudaErrorInvalidResourceHandle);
}

/* The items that run exec x's nodes, in order, into items[] (count in *k); nothing on error.  G held. */
static cudaError_t launch_items(gexec_t *x, item_t **items, size_t *k)
{
    cudaError_t err = cudaSuccess;
    *k = 0;
    for (size_t i = 0; i < x->n && !err; i++) {
        gnode_t *nd = &x->nodes[i];
        item_t *it = NULL;
        switch (nd->type) {
        case GN_MEMCPY:
        case GN_MEMSET:
            if (!(it = item_new(nd->type == GN_MEMCPY ? IT_COPY : IT_SET))) break;
            it->dst = nd->dst;
            it->src = nd->src;
            it->n = nd->n;
            it->value = nd->value;
            if (emu_mem_range(nd->dst, nd->n, &it->a1) != nd->dev_dst ||
                (nd->type == GN_MEMCPY && emu_mem_range(nd->src, nd->n, &it->a2) != nd->dev_src))
                err = cudaErrorInvalidValue;    /* device memory freed (or a range changed) since capture */
            break;
        case GN_HOST:
            if ((it = item_new(IT_HOSTFN))) { it->fn = nd->fn; it->arg = nd->arg; }
            break;
        case GN_EVENT_RECORD: {
            event_t *e = get_event((cudaEvent_t)(uintptr_t)nd->event);
            if (!e) { err = cudaErrorInvalidResourceHandle; break; }
            if ((it = item_new(IT_RECORD)) && !(it->rec = rec_new(2))) { free(it); it = NULL; }
            if (it) it->arg = e;
            break;
        }
        case GN_WAIT_EVENT: {
            event_t *e = get_event((cudaEvent_t)(uintptr_t)nd->event);
            if (!e) { err = cudaErrorInvalidResourceHandle; break; }
            if (!e->sh->latest || e->sh->latest->reached) continue;
            if ((it = item_new(IT_WAIT))) { it->rec = e->sh->latest; it->rec->refs++; }
            break;
        }
        default:
            continue;               /* empty and memory nodes: order only */
        }
        if (!it && !err) err = cudaErrorMemoryAllocation;
        if (it) items[(*k)++] = it;
    }
    if (err) {
        for (size_t i = 0; i < *k; i++) {
            if (items[i]->kind == IT_RECORD) rec_unref(items[i]->rec);     /* the event's reference */
            item_free(items[i]);
        }
        *k = 0;
    }
    return err;
}

EXPORT cudaError_t cudaGraphLaunch(cudaGraphExec_t xh, cudaStream_t sh)
{
    RT_ENTER(cudaGraphLaunch, cudaErrorUnknown);
    RT_NEED_DEVICE();
    cudaError_t err = cudaSuccess;
    item_t *small[16], **items = small;
    pthread_mutex_lock(&G);
    gexec_t *x = get_exec(xh);
    stream_t *s = x ? get_stream(sh, &err) : NULL;
    if (!x) err = cudaErrorInvalidResourceHandle;
    else if (s && s->cap) err = capture_refuse(s);
    if (!err && x->n > 16 && !(items = malloc(x->n * sizeof *items))) err = cudaErrorMemoryAllocation;
    size_t k = 0;
    if (!err) err = launch_items(x, items, &k);
    if (!err && k && implicit_sync(s)) {
        err = cudaErrorMemoryAllocation;
        for (size_t i = 0; i < k; i++) {
            if (items[i]->kind == IT_RECORD) rec_unref(items[i]->rec);
            item_free(items[i]);
        }
        k = 0;
    }
    if (!err) ensure_ctx(s->device);
    for (size_t i = 0; i < k; i++) {
        item_t *it = items[i];
        event_t *e = NULL;
        if (it->kind == IT_RECORD) { e = it->arg; it->arg = NULL; }
        enqueue_raw(s, it);
        if (e) {
            rec_unref(e->sh->latest);
            e->sh->latest = it->rec;
            e->sh->capid = 0;
            s->last_rec = it->rec;
        }
    }
    pthread_mutex_unlock(&G);
    if (items != small) free(items);
    return err ? fail(err) : cudaSuccess;
}

EXPORT cudaError_t cudaGraphUpload(cudaGraphExec_t xh, cudaStream_t sh)
{
    RT_ENTER(cudaGraphUpload, cudaErrorUnknown);
    RT_NEED_DEVICE();
    cudaError_t err = cudaSuccess;
    pthread_mutex_lock(&G);
    gexec_t *x = get_exec(xh);
    stream_t *s = x ? get_stream(sh, &err) : NULL;
    if (!x) err = cudaErrorInvalidResourceHandle;
    else if (s) ensure_ctx(s->device);
    pthread_mutex_unlock(&G);
    return err ? fail(err) : cudaSuccess;
}

/* Live graph objects, for leak tests (accelEmuLiveStreams' companions). */
EXPORT int accelEmuLiveGraphs(void)
{
    INIT();
    pthread_mutex_lock(&G);
    int n = g_live_graphs;
    pthread_mutex_unlock(&G);
    return n;
}

EXPORT int accelEmuLiveGraphExecs(void)
{
    INIT();
    pthread_mutex_lock(&G);
    int n = g_live_execs;
    pthread_mutex_unlock(&G);
    return n;
}

EXPORT int accelEmuLiveCaptures(void)
{
    return atomic_load(&g_ncap);
}
