/* Stream capture of the emulated runtime (graphs themselves: emu_graph.c, their shared types: emu_graph.h).
 *
 * cudaStreamBeginCapture puts a stream in a capture sequence (capture_t) that owns a graph.  While a stream
 * takes part in a capture, what is queued on it is recorded as graph nodes instead of being run: copies and
 * memsets (all kinds; the ranges were checked when queued), host functions, kernel launches (the node
 * carries the launch: kernel, configuration, parameters copied at the call), external event records /
 * waits, cudaMallocAsync / cudaFreeAsync (memory nodes).  Each capturing stream holds the set of nodes its
 * next node depends on; an event recorded in a capturing stream stands for that set, so a stream waiting
 * on it joins the capture (fork) or merges the set into its own (join), as in CUDA.
 * cudaStreamEndCapture on the origin stream ends the sequence for every stream in it; work of a forked
 * stream that the origin never waited for is cudaErrorStreamCaptureUnjoined.
 *
 * Prohibited calls (cudaThreadExchangeStreamCaptureMode's rules): synchronising or querying a capturing
 * stream, and, from a thread the capture modes prohibit, the potentially unsafe calls (device / stream /
 * event synchronisation and queries, cudaMalloc, cudaFree) return cudaErrorStreamCaptureUnsupported and
 * invalidate the captures concerned; work queued on an invalidated capture and its cudaStreamEndCapture
 * return cudaErrorStreamCaptureInvalidated.  Work on the legacy stream while a blocking stream of its
 * device captures (an implicit dependency on the capture) is cudaErrorStreamCaptureImplicit and
 * invalidates that capture (emu_stream.c's implicit_sync).
 *
 * Documented choices:
 *  - An event last recorded in a capture that has ended stands for no work (queries succeed, waits are
 *    no-ops); in a capture still under way, querying or synchronising it is cudaErrorCapturedEvent.
 *  - A capture whose origin stream is destroyed is dropped (nothing could end it).
 */
#include "emu_graph.h"

atomic_int g_ncap;
static capture_t *g_caps;
static unsigned long long g_next_capid = 1;

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
    int type = it->kind == IT_COPY ? GN_MEMCPY : it->kind == IT_SET ? GN_MEMSET
               : it->kind == IT_KERNEL ? GN_KERNEL : GN_HOST;
    gnode_t *nd = it->kind == IT_COPY || it->kind == IT_SET || it->kind == IT_HOSTFN || it->kind == IT_KERNEL
                  ? capture_node(s, type, &err) : NULL;
    if (!nd && !err) err = cudaErrorStreamCaptureUnsupported;
    if (nd) {
        nd->dst = it->dst;
        nd->src = it->src;
        nd->n = it->n;
        nd->value = it->value;
        nd->rows = it->rows;
        nd->dpitch = it->dpitch;
        nd->spitch = it->spitch;
        nd->elem = it->elem;
        nd->dev_dst = it->a1 != NULL;
        nd->dev_src = it->a2 != NULL;
        nd->id_dst = it->a1 ? it->a1->id : 0;
        nd->id_src = it->a2 ? it->a2->id : 0;
        nd->fn = it->fn;
        nd->arg = it->arg;
        nd->launch = it->launch;    /* the node takes the item's reference */
        it->launch = NULL;
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
    if (s->kind == SK_LEGACY) {         /* the legacy stream never captures (it syncs with every stream) */
        capture_invalidate(ce);
        return cudaErrorStreamCaptureImplicit;
    }
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
    if (gmem_add(m, a)) return cudaErrorMemoryAllocation;
    gnode_t *nd = capture_node(s, GN_MEM_ALLOC, &err);
    if (!nd) {
        gmem_pop(m);
        return err;
    }
    nd->mem = a;
    nd->dst = a->base;
    nd->n = a->size;
    return cudaSuccess;
}

cudaError_t capture_mem_free(stream_t *s, alloc_t *a)
{
    cudaError_t err = cudaSuccess;
    gmem_t *m = s->cap->g->mem;
    if (s->cap->status != CAP_ACTIVE) return cudaErrorStreamCaptureInvalidated;
    uintptr_t at = (uintptr_t)ht_get(&m->at, (uintptr_t)a);
    if (!at || m->freed[at - 1]) return cudaErrorInvalidValue;    /* not this graph's, or freed already */
    size_t i = at - 1;
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

/* Starts a capture on h into g (NULL: a new graph) after g's nodes idx[0..n).  G held. */
static cudaError_t capture_begin(cudaStream_t h, graph_t *g, const uint32_t *idx, size_t n, int mode)
{
    cudaError_t err = cudaSuccess;
    stream_t *s = get_stream(h, &err);
    if (!s) return err;
    if (s->kind == SK_LEGACY) return cudaErrorStreamCaptureUnsupported;
    if (s->cap) return cudaErrorIllegalState;
    capture_t *c = calloc(1, sizeof *c);
    graph_t *own = c && !g ? graph_new(s->device) : NULL;
    if (!c || (!g && !own) || capture_add_stream(c, s) || deps_reserve(&s->capdeps, n)) {
        if (c && c->nss) s->cap = NULL;
        if (own) graph_free(own);
        if (c) free(c->ss);
        free(c);
        return cudaErrorMemoryAllocation;
    }
    c->id = g_next_capid++;
    c->mode = mode;
    c->status = CAP_ACTIVE;
    c->thread = pthread_self();
    c->to_graph = g != NULL;
    c->g = g ? g : own;
    c->base = c->g->n;
    c->origin = s;
    c->g->capturing = c;
    if (n) memcpy(s->capdeps.v, idx, n * sizeof *idx);
    s->capdeps.n = n;
    c->next = g_caps;
    g_caps = c;
    atomic_fetch_add(&g_ncap, 1);
    ensure_ctx(s->device);
    return cudaSuccess;
}

EXPORT cudaError_t cudaStreamBeginCapture(cudaStream_t h, int mode)
{
    RT_ENTER(cudaStreamBeginCapture, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (mode < MODE_GLOBAL || mode > MODE_RELAXED) return fail(cudaErrorInvalidValue);
    pthread_mutex_lock(&G);
    cudaError_t err = capture_begin(h, NULL, NULL, 0, mode);
    pthread_mutex_unlock(&G);
    return err ? fail(err) : cudaSuccess;
}

/* CUDA 12.3's capture into an existing graph (a conditional node's body, as cuda.core's GraphBuilder fills one):
 * the captured nodes follow deps; cudaStreamEndCapture hands back that graph.  Edge data: default edges only. */
EXPORT cudaError_t cudaStreamBeginCaptureToGraph(cudaStream_t h, cudaGraph_t gh, const cudaGraphNode_t *deps,
                                                 const void *edges, size_t n, int mode)
{
    RT_ENTER(cudaStreamBeginCaptureToGraph, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (mode < MODE_GLOBAL || mode > MODE_RELAXED || (n && !deps) || !edges_default(edges, n))
        return fail(cudaErrorInvalidValue);
    uint32_t *idx = n ? malloc(n * sizeof *idx) : NULL;
    if (n && !idx) return fail(cudaErrorMemoryAllocation);
    pthread_mutex_lock(&G);
    graph_t *g = get_graph(gh);
    cudaError_t err = !g || g->capturing ? cudaErrorInvalidValue : resolve_deps(g, deps, n, idx);
    if (!err) err = capture_begin(h, g, idx, n, mode);
    pthread_mutex_unlock(&G);
    free(idx);
    return err ? fail(err) : cudaSuccess;
}

/* The capturing stream's dependencies set to (flags 1) or joined with (0) nodes deps[0..n) of its graph. */
EXPORT cudaError_t cudaStreamUpdateCaptureDependencies(cudaStream_t h, cudaGraphNode_t *deps, const void *edges,
                                                       size_t n, unsigned int flags)
{
    RT_ENTER(cudaStreamUpdateCaptureDependencies, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (flags > 1 || (n && !deps) || !edges_default(edges, n)) return fail(cudaErrorInvalidValue);
    uint32_t *idx = n ? malloc(n * sizeof *idx) : NULL;
    if (n && !idx) return fail(cudaErrorMemoryAllocation);
    cudaError_t err = cudaSuccess;
    pthread_mutex_lock(&G);
    stream_t *s = get_stream(h, &err);
    capture_t *c = s ? s->cap : NULL;
    if (s && !c) err = cudaErrorIllegalState;
    else if (c && c->status != CAP_ACTIVE) err = cudaErrorStreamCaptureInvalidated;
    if (c && !err) err = resolve_deps(c->g, deps, n, idx);
    if (c && !err) {
        gdeps_t add = { idx, n, n };
        if (flags == 1) s->capdeps.n = 0;
        if (deps_union(&s->capdeps, &add)) err = cudaErrorMemoryAllocation;
    }
    pthread_mutex_unlock(&G);
    free(idx);
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
    for (size_t i = c->base; i < g->n && !unjoined; i++) unjoined = !seen[i];
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
        int theirs = c->to_graph;
        capture_finish(c);
        if (err) {
            if (!theirs) graph_free(g);
            *out = NULL;
        } else {
            *out = (cudaGraph_t)(uintptr_t)g->handle;
        }
    }
    pthread_mutex_unlock(&G);
    uo_run_dead();
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

/* CUDA 13's signature (CUDA 12's _v3): the dependency and edge arrays stay valid until the stream's next call. */
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
    /* the nodes, then as many default edges (8 bytes each, as a pointer): callers read edgeData_out's entries
     * whenever there are dependencies (cuda.bindings does) */
    if (c && (deps || edges) && s->capdeps.n) {
        _Static_assert(sizeof(edge_t) == sizeof(void *), "an edge per pointer slot");
        void **info = realloc(s->capinfo, 2 * s->capdeps.n * sizeof *info);
        if (!info) err = cudaErrorMemoryAllocation;
        else {
            s->capinfo = info;
            for (size_t i = 0; i < s->capdeps.n; i++)
                info[i] = (void *)(uintptr_t)c->g->nodes[s->capdeps.v[i]]->handle;
            memset(info + s->capdeps.n, 0, s->capdeps.n * sizeof *info);
        }
    }
    if (s && !err) {
        *status = c ? c->status : CAP_NONE;
        if (id) *id = c ? c->id : 0;
        if (graph) *graph = c ? (cudaGraph_t)(uintptr_t)c->g->handle : NULL;
        if (deps) *deps = c && s->capdeps.n ? (const cudaGraphNode_t *)s->capinfo : NULL;
        if (edges) *edges = c && s->capdeps.n ? (const void *)(s->capinfo + s->capdeps.n) : NULL;
        if (ndeps) *ndeps = c ? s->capdeps.n : 0;
    }
    pthread_mutex_unlock(&G);
    return err ? fail(err) : cudaSuccess;
}

/* Captures under way, for leak tests (accelEmuLiveStreams' companions). */
EXPORT int accelEmuLiveCaptures(void)
{
    return atomic_load(&g_ncap);
}
