/* Explicit graph construction of the emulated runtime: cudaGraphAdd{Memcpy,Memcpy1D,Memset,Host,
 * EventRecord,EventWait,MemAlloc,MemFree}Node, cudaGraphAddDependencies / cudaGraphNodeGetDependencies, cudaGraphClone /
 * cudaGraphNodeFindInClone and cudaGraphExecUpdate (graphs themselves: emu_graph.c; shared types:
 * emu_graph.h).
 *
 * A node's parameters are checked when it is added as a queued copy / memset is (a device range inside one
 * allocation, the copy kind against the memory), and again at every launch (emu_graph.c).  Nodes are kept
 * in the order they were added; cudaGraphAddDependencies may add an edge to an earlier node, which marks
 * the graph for a topological sort at instantiation (a cycle is then cudaErrorInvalidValue).
 *
 * Documented choices:
 *  - Alloc nodes allocate when added, from the device's default pool (cudaGraphAddMemAllocNode); free nodes
 *    take an allocation of the same graph that no free node frees yet.
 *  - Memcpy nodes take no CUDA arrays (the emulator has none) and one slice (extent.depth 1): rows of
 *    extent.width bytes, each side at its position (x bytes, y rows) in its pitched pointer.
 *  - cudaGraphClone of a graph with memory (alloc / free) nodes is cudaErrorNotSupported.
 *  - cudaGraphExecUpdate needs the same nodes (count, types, dependencies) by index, and memory nodes
 *    unchanged; it then takes every other node's new parameters, which later launches use (launches
 *    already queued keep theirs).  Otherwise cudaErrorGraphExecUpdateFailure with the result and the
 *    node at fault in the result info, and the executable graph unchanged.
 */
#include "emu_graph.h"

struct cudaMemsetParams { void *dst; size_t pitch; unsigned int value, elementSize; size_t width, height; };
struct cudaHostNodeParams { cudaHostFn_t fn; void *userData; };
typedef struct { int result; cudaGraphNode_t errorNode, errorFromNode; } update_info_t;

enum { UPDATE_SUCCESS = 0, UPDATE_TOPOLOGY_CHANGED = 2, UPDATE_NODE_TYPE_CHANGED = 3,
       UPDATE_PARAMETERS_CHANGED = 5 };

/* ---------------------------------------------------------------- helpers */

int edges_default(const edge_t *e, size_t n)
{
    static const edge_t zero;
    for (size_t i = 0; e && i < n; i++)
        if (memcmp(&e[i], &zero, sizeof zero)) return 0;
    return 1;
}

/* deps[0..n) as indices of g's nodes into idx: cudaErrorInvalidValue for a node of another graph or one
 * named twice.  G held. */
cudaError_t resolve_deps(graph_t *g, const cudaGraphNode_t *deps, size_t n, uint32_t *idx)
{
    for (size_t i = 0; i < n; i++) {
        gnode_t *d = get_node(deps[i]);
        if (!d || d->g != g) return cudaErrorInvalidValue;
        idx[i] = d->idx;
    }
    if (n > 1 && n <= 16) {         /* duplicates: pairwise for a few, else a mark per node of g */
        for (size_t i = 1; i < n; i++)
            for (size_t j = 0; j < i; j++)
                if (idx[i] == idx[j]) return cudaErrorInvalidValue;
        return cudaSuccess;
    }
    if (n > 16) {
        unsigned char *seen = calloc(g->n, 1);
        if (!seen) return cudaErrorMemoryAllocation;
        cudaError_t err = cudaSuccess;
        for (size_t i = 0; i < n && !err; i++) {
            if (seen[idx[i]]) err = cudaErrorInvalidValue;
            seen[idx[i]] = 1;
        }
        free(seen);
        return err;
    }
    return cudaSuccess;
}

/* Checks a copy / memset range at node creation (G held): *dev 1 for device memory, 0 for host memory;
 * need: the kind says this side is device memory (pinned host memory counts, as it is mapped). */
static int check_side(const void *p, size_t span, int need, int *dev, unsigned long long *id)
{
    alloc_t *a = NULL;
    int d = emu_mem_range(p, span, &a);
    *id = d == 1 ? a->id : 0;
    if (a) alloc_unref(a);
    *dev = d == 1;
    if (d < 0) return -1;
    if (need && !d && !emu_mem_host_mapped(p, span)) return -1;
    return 0;
}

static int span_of(size_t width, size_t rows, size_t pitch, size_t *span)
{
    if (!width || !rows) { *span = 0; return 1; }
    if (rows > 1 && (pitch < width || rows - 1 > (SIZE_MAX - width) / pitch)) return 0;
    *span = (rows - 1) * pitch + width;
    return 1;
}

/* A copy node's parameters into t: `rows` rows of `width` bytes (G held). */
static cudaError_t fill_copy(gnode_t *t, void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                             size_t rows, int kind)
{
    if (kind < 0 || kind > 4) return cudaErrorInvalidMemcpyDirection;
    size_t dspan, sspan;
    if (!span_of(width, rows, dpitch, &dspan) || !span_of(width, rows, spitch, &sspan)) return cudaErrorInvalidValue;
    if (!dspan || !dst || !src) return cudaErrorInvalidValue;
    int need_dst = kind == 1 || kind == 3, need_src = kind == 2 || kind == 3;
    if (check_side(dst, dspan, need_dst, &t->dev_dst, &t->id_dst) ||
        check_side(src, sspan, need_src, &t->dev_src, &t->id_src))
        return cudaErrorInvalidValue;
    t->type = GN_MEMCPY;
    t->dst = dst;
    t->src = src;
    t->n = width;
    t->rows = rows;
    t->dpitch = dpitch;
    t->spitch = spitch;
    return cudaSuccess;
}

static cudaError_t fill_copy3d(gnode_t *t, const struct cudaMemcpy3DParms *p)
{
    if (!p || p->srcArray || p->dstArray) return cudaErrorInvalidValue;
    const struct cudaExtent *e = &p->extent;
    if (e->depth != 1 || p->srcPos.z || p->dstPos.z || !e->width || !e->height) return cudaErrorInvalidValue;
    size_t sp = p->srcPtr.pitch, dp = p->dstPtr.pitch;
    if ((e->height > 1 || p->srcPos.y) && !sp) return cudaErrorInvalidValue;
    if ((e->height > 1 || p->dstPos.y) && !dp) return cudaErrorInvalidValue;
    if ((sp && p->srcPos.y > (SIZE_MAX - p->srcPos.x) / sp) || (dp && p->dstPos.y > (SIZE_MAX - p->dstPos.x) / dp))
        return cudaErrorInvalidValue;
    const char *src = (const char *)p->srcPtr.ptr + p->srcPos.y * sp + p->srcPos.x;
    char *dst = (char *)p->dstPtr.ptr + p->dstPos.y * dp + p->dstPos.x;
    if (!p->srcPtr.ptr || !p->dstPtr.ptr) return cudaErrorInvalidValue;
    return fill_copy(t, dst, dp ? dp : e->width, src, sp ? sp : e->width, e->width, e->height, p->kind);
}

static cudaError_t fill_memset(gnode_t *t, const struct cudaMemsetParams *p)
{
    if (!p || !p->dst || !p->width || !p->height) return cudaErrorInvalidValue;
    unsigned el = p->elementSize;
    if (el != 1 && el != 2 && el != 4) return cudaErrorInvalidValue;
    if (p->width > SIZE_MAX / el || ((uintptr_t)p->dst % el)) return cudaErrorInvalidValue;
    size_t width = p->width * el, span;
    if (!span_of(width, p->height, p->pitch, &span)) return cudaErrorInvalidValue;
    if (p->height > 1 && p->pitch % el) return cudaErrorInvalidValue;
    if (check_side(p->dst, span, 1, &t->dev_dst, &t->id_dst)) return cudaErrorInvalidValue;
    t->type = GN_MEMSET;
    t->dst = p->dst;
    t->value = (int)(el == 1 ? (p->value & 0xffu) : el == 2 ? (p->value & 0xffffu) : p->value);
    t->n = p->width;
    t->elem = (int)el;
    t->rows = p->height;
    t->dpitch = p->height > 1 ? p->pitch : width;
    return cudaSuccess;
}

/* The copy node template of cudaMemcpy3DParms p (cudaGraphAddMemcpyNode's checks), likewise.  G held. */
cudaError_t emu_graph_fill_copy3d(gnode_t *t, const void *p)
{
    return fill_copy3d(t, p);
}

/* The memset node template of cudaMemsetParams p (the checks of cudaGraphAddMemsetNode), for the parameter
 * setters of emu_graph_exec.c.  G held. */
cudaError_t emu_graph_fill_memset(gnode_t *t, const void *p)
{
    return fill_memset(t, p);
}

static cudaError_t fill_event(gnode_t *t, int type, cudaEvent_t eh)
{
    event_t *e = get_event(eh);
    if (!e) return cudaErrorInvalidResourceHandle;
    t->type = type;
    t->event = e->handle;
    return cudaSuccess;
}

/* Copies the parameters of template t into node nd (not its identity or dependencies). */
static void set_params(gnode_t *nd, const gnode_t *t)
{
    nd->dst = t->dst;
    nd->src = t->src;
    nd->n = t->n;
    nd->value = t->value;
    nd->rows = t->rows;
    nd->dpitch = t->dpitch;
    nd->spitch = t->spitch;
    nd->elem = t->elem;
    nd->dev_dst = t->dev_dst;
    nd->dev_src = t->dev_src;
    nd->id_dst = t->id_dst;
    nd->id_src = t->id_src;
    nd->fn = t->fn;
    nd->arg = t->arg;
    nd->event = t->event;
    if (nd->launch != t->launch) {
        if (t->launch) emu_launch_ref(t->launch);
        emu_launch_unref_locked(nd->launch);
        nd->launch = t->launch;
    }
}

enum { P_COPY3D, P_COPY1D, P_MEMSET, P_HOST, P_RECORD, P_WAIT };
typedef struct { int what; const void *p; void *dst; const void *src; size_t count; int kind; cudaEvent_t ev; } add_args_t;

static cudaError_t fill(gnode_t *t, const add_args_t *a)
{
    switch (a->what) {
    case P_COPY3D: return fill_copy3d(t, a->p);
    case P_COPY1D: return fill_copy(t, a->dst, a->count, a->src, a->count, a->count, 1, a->kind);
    case P_MEMSET: return fill_memset(t, a->p);
    case P_HOST: {
        const struct cudaHostNodeParams *h = a->p;
        if (!h || !h->fn) return cudaErrorInvalidValue;
        t->type = GN_HOST;
        t->fn = h->fn;
        t->arg = h->userData;
        return cudaSuccess;
    }
    case P_RECORD: return fill_event(t, GN_EVENT_RECORD, a->ev);
    default: return fill_event(t, GN_WAIT_EVENT, a->ev);
    }
}

static cudaError_t add_node(cudaGraphNode_t *out, cudaGraph_t gh, const cudaGraphNode_t *deps, size_t n,
                            const add_args_t *a)
{
    if (!out || (n && !deps)) return fail(cudaErrorInvalidValue);
    uint32_t *idx = n ? malloc(n * sizeof *idx) : NULL;
    if (n && !idx) return fail(cudaErrorMemoryAllocation);
    cudaError_t err = cudaSuccess;
    gnode_t t = { 0 };
    pthread_mutex_lock(&G);
    graph_t *g = get_graph(gh);
    if (!g) err = cudaErrorInvalidResourceHandle;
    else if (g->capturing) err = cudaErrorInvalidValue;
    if (!err) err = resolve_deps(g, deps, n, idx);
    if (!err) err = fill(&t, a);
    if (!err) {
        gnode_t *nd = graph_add(g, t.type, idx, n);
        if (!nd) err = cudaErrorMemoryAllocation;
        else {
            set_params(nd, &t);
            *out = (cudaGraphNode_t)(uintptr_t)nd->handle;
        }
    }
    pthread_mutex_unlock(&G);
    free(idx);
    return err ? fail(err) : cudaSuccess;
}

/* ------------------------------------------------------------ node kinds (API) */

EXPORT cudaError_t cudaGraphAddMemcpyNode(cudaGraphNode_t *out, cudaGraph_t g, const cudaGraphNode_t *deps, size_t n,
                                          const struct cudaMemcpy3DParms *p)
{
    RT_ENTER(cudaGraphAddMemcpyNode, cudaErrorMemoryAllocation);
    RT_NEED_DEVICE();
    return add_node(out, g, deps, n, &(add_args_t){ .what = P_COPY3D, .p = p });
}

EXPORT cudaError_t cudaGraphAddMemcpyNode1D(cudaGraphNode_t *out, cudaGraph_t g, const cudaGraphNode_t *deps,
                                            size_t n, void *dst, const void *src, size_t count, int kind)
{
    RT_ENTER(cudaGraphAddMemcpyNode1D, cudaErrorMemoryAllocation);
    RT_NEED_DEVICE();
    return add_node(out, g, deps, n, &(add_args_t){ .what = P_COPY1D, .dst = dst, .src = src, .count = count,
                                                     .kind = kind });
}

EXPORT cudaError_t cudaGraphAddMemsetNode(cudaGraphNode_t *out, cudaGraph_t g, const cudaGraphNode_t *deps, size_t n,
                                          const struct cudaMemsetParams *p)
{
    RT_ENTER(cudaGraphAddMemsetNode, cudaErrorMemoryAllocation);
    RT_NEED_DEVICE();
    return add_node(out, g, deps, n, &(add_args_t){ .what = P_MEMSET, .p = p });
}

EXPORT cudaError_t cudaGraphAddHostNode(cudaGraphNode_t *out, cudaGraph_t g, const cudaGraphNode_t *deps, size_t n,
                                        const struct cudaHostNodeParams *p)
{
    RT_ENTER(cudaGraphAddHostNode, cudaErrorMemoryAllocation);
    RT_NEED_DEVICE();
    return add_node(out, g, deps, n, &(add_args_t){ .what = P_HOST, .p = p });
}

EXPORT cudaError_t cudaGraphAddEventRecordNode(cudaGraphNode_t *out, cudaGraph_t g, const cudaGraphNode_t *deps,
                                               size_t n, cudaEvent_t e)
{
    RT_ENTER(cudaGraphAddEventRecordNode, cudaErrorMemoryAllocation);
    RT_NEED_DEVICE();
    return add_node(out, g, deps, n, &(add_args_t){ .what = P_RECORD, .ev = e });
}

EXPORT cudaError_t cudaGraphAddEventWaitNode(cudaGraphNode_t *out, cudaGraph_t g, const cudaGraphNode_t *deps,
                                             size_t n, cudaEvent_t e)
{
    RT_ENTER(cudaGraphAddEventWaitNode, cudaErrorMemoryAllocation);
    RT_NEED_DEVICE();
    return add_node(out, g, deps, n, &(add_args_t){ .what = P_WAIT, .ev = e });
}

/* cudaMemAllocNodeParams (CUDA 12/13): cudaMemPoolProps (88 bytes, its head read here), the access
 * descriptors, the size, and the address it returns. */
struct mem_alloc_params {
    int allocType, handleTypes, locType, locId;
    void *win32;
    size_t maxSize;
    unsigned short usage;
    unsigned char reserved[54];
    const void *accessDescs;
    size_t accessDescCount, bytesize;
    void *dptr;
};
_Static_assert(sizeof(struct mem_alloc_params) == 120, "cudaMemAllocNodeParams");

/* A new node of type `type` on g after deps (resolved), its memory `a` (G held): NULL with *err. */
static gnode_t *add_mem_node(graph_t *g, int type, const cudaGraphNode_t *deps, size_t n, uint32_t *idx,
                             cudaError_t *err)
{
    if (g->capturing || g->owner) *err = cudaErrorInvalidValue;     /* none in a child graph or a body */
    else *err = resolve_deps(g, deps, n, idx);
    if (*err) return NULL;
    gnode_t *nd = graph_add(g, type, idx, n);
    if (!nd) *err = cudaErrorMemoryAllocation;
    return nd;
}

/* The allocation is made when the node is added, from the device's default pool, at an address fixed for
 * the graph's life (as CUDA's); the graph owns it (emu_graph.c's graph memory) until it and its executable
 * graphs are destroyed, or the user's cudaFree / cudaFreeAsync once no free node of the graph freed it. */
EXPORT cudaError_t cudaGraphAddMemAllocNode(cudaGraphNode_t *out, cudaGraph_t gh, const cudaGraphNode_t *deps,
                                            size_t n, struct mem_alloc_params *p)
{
    RT_ENTER(cudaGraphAddMemAllocNode, cudaErrorMemoryAllocation);
    RT_NEED_DEVICE();
    if (!out || !p || (n && !deps) || !p->bytesize || (p->accessDescCount && !p->accessDescs))
        return fail(cudaErrorInvalidValue);
    if (p->allocType != 1 || p->locType != 1 || p->handleTypes) return fail(cudaErrorInvalidValue);
    if (p->locId < 0 || p->locId >= g_ndev) return fail(cudaErrorInvalidDevice);
    uint32_t *idx = n ? malloc(n * sizeof *idx) : NULL;
    if (n && !idx) return fail(cudaErrorMemoryAllocation);
    cudaError_t err = cudaSuccess;
    pthread_mutex_lock(&G);
    if (!get_graph(gh)) err = cudaErrorInvalidResourceHandle;
    alloc_t *a = err ? NULL : emu_graph_alloc(p->locId, p->bytesize, &err);   /* may drop G: look up after */
    graph_t *g = a ? get_graph(gh) : NULL;
    if (a && !g) err = cudaErrorInvalidResourceHandle;
    gnode_t *nd = NULL;
    if (!err && gmem_add(g->mem, a)) err = cudaErrorMemoryAllocation;
    else if (!err && !(nd = add_mem_node(g, GN_MEM_ALLOC, deps, n, idx, &err))) gmem_pop(g->mem);
    if (nd) {
        nd->mem = a;
        nd->dst = a->base;
        nd->n = a->size;
        p->dptr = a->base;
        *out = (cudaGraphNode_t)(uintptr_t)nd->handle;
    } else if (a) {
        a->pending++;               /* back to the pool: a reference for emu_mem_release to drop */
        emu_mem_release(a);
    }
    pthread_mutex_unlock(&G);
    free(idx);
    return err ? fail(err) : cudaSuccess;
}

/* dptr: an allocation of this graph's alloc nodes (or of its capture) that no free node of it frees yet. */
EXPORT cudaError_t cudaGraphAddMemFreeNode(cudaGraphNode_t *out, cudaGraph_t gh, const cudaGraphNode_t *deps,
                                           size_t n, void *dptr)
{
    RT_ENTER(cudaGraphAddMemFreeNode, cudaErrorMemoryAllocation);
    RT_NEED_DEVICE();
    if (!out || !dptr || (n && !deps)) return fail(cudaErrorInvalidValue);
    uint32_t *idx = n ? malloc(n * sizeof *idx) : NULL;
    if (n && !idx) return fail(cudaErrorMemoryAllocation);
    cudaError_t err = cudaSuccess;
    pthread_mutex_lock(&G);
    graph_t *g = get_graph(gh);
    alloc_t *a = NULL;
    uintptr_t at = 0;
    if (!g) err = cudaErrorInvalidResourceHandle;
    else if (emu_mem_range(dptr, 1, &a) != 1 || a->base != (char *)dptr ||
             !(at = (uintptr_t)ht_get(&g->mem->at, (uintptr_t)a)) || g->mem->freed[at - 1])
        err = cudaErrorInvalidValue;
    if (a) alloc_unref(a);
    gnode_t *nd = err ? NULL : add_mem_node(g, GN_MEM_FREE, deps, n, idx, &err);
    if (nd) {
        nd->mem = a;
        nd->dst = a->base;
        g->mem->freed[at - 1] = 1;
        *out = (cudaGraphNode_t)(uintptr_t)nd->handle;
    }
    pthread_mutex_unlock(&G);
    free(idx);
    return err ? fail(err) : cudaSuccess;
}

/* ----------------------------------------------------------- dependencies (API) */

static int has_dep(const gnode_t *nd, uint32_t i)
{
    for (size_t k = 0; k < nd->ndeps; k++)
        if (nd->deps[k] == i) return 1;
    return 0;
}

typedef struct { uintptr_t from, to; } edge_pair_t;

static int cmp_edge(const void *a, const void *b)
{
    const edge_pair_t *x = a, *y = b;
    if (x->from != y->from) return x->from < y->from ? -1 : 1;
    return (x->to > y->to) - (x->to < y->to);
}

/* cudaErrorInvalidValue when one call names an edge twice (sorted: O(n log n)). */
cudaError_t duplicate_edges(const cudaGraphNode_t *from, const cudaGraphNode_t *to, size_t n)
{
    edge_pair_t *e = malloc(n * sizeof *e);
    if (!e) return cudaErrorMemoryAllocation;
    for (size_t i = 0; i < n; i++) e[i] = (edge_pair_t){ (uintptr_t)from[i], (uintptr_t)to[i] };
    qsort(e, n, sizeof *e, cmp_edge);
    cudaError_t err = cudaSuccess;
    for (size_t i = 1; i < n && !err; i++)
        if (!cmp_edge(&e[i - 1], &e[i])) err = cudaErrorInvalidValue;
    free(e);
    return err;
}

/* CUDA 13's signature (CUDA 12's _v2): edge data may be NULL or default edges only. */
EXPORT cudaError_t cudaGraphAddDependencies(cudaGraph_t gh, const cudaGraphNode_t *from, const cudaGraphNode_t *to,
                                            const void *edges, size_t n)
{
    RT_ENTER(cudaGraphAddDependencies, cudaErrorMemoryAllocation);
    RT_NEED_DEVICE();
    if (n && (!from || !to)) return fail(cudaErrorInvalidValue);
    if (!edges_default(edges, n)) return fail(cudaErrorInvalidValue);
    cudaError_t err = cudaSuccess;
    pthread_mutex_lock(&G);
    graph_t *g = get_graph(gh);
    if (!g) err = cudaErrorInvalidResourceHandle;
    else if (g->capturing) err = cudaErrorInvalidValue;
    /* all checked (and room made) first, so that a failure adds no edge */
    for (size_t i = 0; i < n && !err; i++) {
        gnode_t *a = get_node(from[i]), *b = get_node(to[i]);
        if (!a || !b || a->g != g || b->g != g || a == b || has_dep(b, a->idx)) { err = cudaErrorInvalidValue; break; }
        if (n <= 16)                                /* the same edge twice in one call (else below) */
            for (size_t j = 0; j < i && !err; j++)
                if (from[j] == from[i] && to[j] == to[i]) err = cudaErrorInvalidValue;
        if (err) break;
        uint32_t *nd = realloc(b->deps, (b->ndeps + n) * sizeof *nd);
        if (!nd) err = cudaErrorMemoryAllocation;
        else b->deps = nd;
    }
    if (!err && n > 16) err = duplicate_edges(from, to, n);
    for (size_t i = 0; i < n && !err; i++) {
        gnode_t *a = get_node(from[i]), *b = get_node(to[i]);
        b->deps[b->ndeps++] = a->idx;
        if (a->idx > b->idx) g->unordered = 1;
    }
    pthread_mutex_unlock(&G);
    return err ? fail(err) : cudaSuccess;
}

EXPORT cudaError_t cudaGraphNodeGetDependencies(cudaGraphNode_t nh, cudaGraphNode_t *deps, void *edges, size_t *n)
{
    RT_ENTER(cudaGraphNodeGetDependencies, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (!n || (edges && !deps)) return fail(cudaErrorInvalidValue);
    pthread_mutex_lock(&G);
    gnode_t *nd = get_node(nh);
    if (nd) {
        if (deps) {
            size_t k = *n < nd->ndeps ? *n : nd->ndeps;
            for (size_t i = 0; i < k; i++) deps[i] = (cudaGraphNode_t)(uintptr_t)nd->g->nodes[nd->deps[i]]->handle;
            for (size_t i = k; i < *n; i++) deps[i] = NULL;
            if (edges) memset(edges, 0, *n * sizeof(edge_t));
            if (k < *n) *n = k;
        } else {
            *n = nd->ndeps;
        }
    }
    pthread_mutex_unlock(&G);
    return nd ? cudaSuccess : fail(cudaErrorInvalidResourceHandle);
}

/* --------------------------------------------------------------- order, CSR */

int graph_order(const graph_t *g, uint32_t *order)
{
    size_t n = g->n, e = 0;
    for (size_t i = 0; i < n; i++) e += g->nodes[i]->ndeps;
    uint32_t *indeg = calloc(n ? n : 1, sizeof *indeg), *off = calloc(n + 1, sizeof *off);
    uint32_t *succ = malloc((e ? e : 1) * sizeof *succ);
    int r = 0;
    if (!indeg || !off || !succ) r = -2;
    if (!r) {
        for (size_t i = 0; i < n; i++) {
            indeg[i] = (uint32_t)g->nodes[i]->ndeps;
            for (size_t k = 0; k < g->nodes[i]->ndeps; k++) off[g->nodes[i]->deps[k] + 1]++;
        }
        for (size_t i = 0; i < n; i++) off[i + 1] += off[i];
        uint32_t *fillp = malloc((n ? n : 1) * sizeof *fillp);
        if (!fillp) r = -2;
        else {
            memcpy(fillp, off, n * sizeof *fillp);
            for (size_t i = 0; i < n; i++)
                for (size_t k = 0; k < g->nodes[i]->ndeps; k++) succ[fillp[g->nodes[i]->deps[k]]++] = (uint32_t)i;
            free(fillp);
            size_t head = 0, tail = 0;      /* order[] is the queue; ready nodes in index order */
            for (size_t i = 0; i < n; i++)
                if (!indeg[i]) order[tail++] = (uint32_t)i;
            while (head < tail) {
                uint32_t v = order[head++];
                for (uint32_t k = off[v]; k < off[v + 1]; k++)
                    if (!--indeg[succ[k]]) order[tail++] = succ[k];
            }
            if (tail != n) r = -1;
        }
    }
    free(indeg);
    free(off);
    free(succ);
    return r;
}

int graph_csr(const graph_t *g, uint32_t **off, uint32_t **v)
{
    size_t e = 0;
    for (size_t i = 0; i < g->n; i++) e += g->nodes[i]->ndeps;
    *off = malloc((g->n + 1) * sizeof **off);
    *v = malloc((e ? e : 1) * sizeof **v);
    if (!*off || !*v) {
        free(*off);
        free(*v);
        *off = *v = NULL;
        return -1;
    }
    size_t k = 0;
    for (size_t i = 0; i < g->n; i++) {
        (*off)[i] = (uint32_t)k;
        memcpy(*v + k, g->nodes[i]->deps, g->nodes[i]->ndeps * sizeof **v);
        k += g->nodes[i]->ndeps;
    }
    (*off)[g->n] = (uint32_t)k;
    return 0;
}

/* ------------------------------------------------------------- kernel nodes (emu_launch.h) */

int emu_graph_add_kernel_node(void **out, void *gh, void *const *deps, size_t n, emu_launch_t *l)
{
    INIT();
    if (!out || (n && !deps)) { emu_launch_release(l); return cudaErrorInvalidValue; }
    uint32_t *idx = n ? malloc(n * sizeof *idx) : NULL;
    if (n && !idx) { emu_launch_release(l); return cudaErrorMemoryAllocation; }
    cudaError_t err = cudaSuccess;
    pthread_mutex_lock(&G);
    graph_t *g = get_graph(gh);
    if (!g) err = cudaErrorInvalidResourceHandle;
    else if (g->capturing) err = cudaErrorInvalidValue;
    if (!err) err = resolve_deps(g, (const cudaGraphNode_t *)deps, n, idx);
    gnode_t *nd = err ? NULL : graph_add(g, GN_KERNEL, idx, n);
    if (!err && !nd) err = cudaErrorMemoryAllocation;
    if (nd) {
        nd->launch = l;
        l = NULL;
        *out = (void *)(uintptr_t)nd->handle;
    }
    if (l) emu_launch_unref_locked(l);
    pthread_mutex_unlock(&G);
    free(idx);
    return err;
}

int emu_graph_kernel_node_get(void *nh, emu_launch_t **out)
{
    INIT();
    cudaError_t err = cudaSuccess;
    pthread_mutex_lock(&G);
    gnode_t *nd = get_node(nh);
    if (!nd) err = cudaErrorInvalidResourceHandle;
    else if (nd->type != GN_KERNEL || !nd->launch) err = cudaErrorInvalidValue;
    else *out = emu_launch_ref(nd->launch);
    pthread_mutex_unlock(&G);
    return err;
}

int emu_graph_kernel_node_set(void *nh, emu_launch_t *l)
{
    INIT();
    cudaError_t err = cudaSuccess;
    pthread_mutex_lock(&G);
    gnode_t *nd = get_node(nh);
    if (!nd) err = cudaErrorInvalidResourceHandle;
    else if (nd->type != GN_KERNEL) err = cudaErrorInvalidValue;
    else {
        emu_launch_unref_locked(nd->launch);
        nd->launch = l;
        l = NULL;
    }
    if (l) emu_launch_unref_locked(l);
    pthread_mutex_unlock(&G);
    return err;
}

/* The executable graph's copy of node nh (launches already queued keep their parameters). */
int emu_graph_exec_kernel_node_set(void *xh, void *nh, emu_launch_t *l)
{
    INIT();
    cudaError_t err = cudaErrorInvalidValue;
    pthread_mutex_lock(&G);
    gexec_t *x = get_exec(xh);
    gnode_t *nd = get_node(nh);
    if (!x || !nd) err = cudaErrorInvalidResourceHandle;
    else if (nd->type == GN_KERNEL)
        for (size_t i = 0; i < x->n; i++)
            if (x->nodes[i].idx == nd->idx && x->nodes[i].type == GN_KERNEL && nd->g->id == x->graph_id) {
                emu_launch_unref_locked(x->nodes[i].launch);
                x->nodes[i].launch = l;
                l = NULL;
                err = cudaSuccess;
                break;
            }
    if (l) emu_launch_unref_locked(l);
    pthread_mutex_unlock(&G);
    return err;
}

/* ------------------------------------------------------------------- clone (API) */

/* A copy of g (NULL with *err): its nodes with their parameters, child graphs copied too, its user-object
 * references; conditional nodes (their handles belong to g) are cudaErrorNotSupported.  G held. */
graph_t *graph_copy(const graph_t *g, cudaError_t *err)
{
    graph_t *c = graph_new(g->device);
    if (!c) *err = cudaErrorMemoryAllocation;
    for (size_t i = 0; c && i < g->n && !*err; i++) {
        const gnode_t *o = g->nodes[i];
        gnode_t *nd = o->type == GN_COND ? NULL : graph_add(c, o->type, o->deps, o->ndeps);
        if (o->type == GN_COND) *err = cudaErrorNotSupported;
        else if (!nd) *err = cudaErrorMemoryAllocation;
        else {
            set_params(nd, o);
            nd->origin = o->handle;
            if (o->type == GN_GRAPH) *err = graph_clone_bodies(nd, o);
        }
    }
    if (c && !*err && graph_uo_copy(c, g)) *err = cudaErrorMemoryAllocation;
    if (c && *err) {
        graph_free(c);
        return NULL;
    }
    if (c) {
        c->unordered = g->unordered;
        c->cloned_from = g->id;
    }
    return c;
}

EXPORT cudaError_t cudaGraphClone(cudaGraph_t *out, cudaGraph_t gh)
{
    RT_ENTER(cudaGraphClone, cudaErrorMemoryAllocation);
    RT_NEED_DEVICE();
    if (!out) return fail(cudaErrorInvalidValue);
    cudaError_t err = cudaSuccess;
    pthread_mutex_lock(&G);
    graph_t *g = get_graph(gh), *c = NULL;
    if (!g) err = cudaErrorInvalidResourceHandle;
    else if (g->capturing) err = cudaErrorInvalidValue;
    else if (g->mem->n) err = cudaErrorNotSupported;
    else c = graph_copy(g, &err);
    if (c) *out = (cudaGraph_t)(uintptr_t)c->handle;
    pthread_mutex_unlock(&G);
    return err ? fail(err) : cudaSuccess;
}

EXPORT cudaError_t cudaGraphNodeFindInClone(cudaGraphNode_t *out, cudaGraphNode_t nh, cudaGraph_t ch)
{
    RT_ENTER(cudaGraphNodeFindInClone, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (!out) return fail(cudaErrorInvalidValue);
    cudaError_t err = cudaSuccess;
    pthread_mutex_lock(&G);
    gnode_t *nd = get_node(nh);
    graph_t *c = get_graph(ch);
    if (!nd || !c) err = cudaErrorInvalidResourceHandle;
    else if (c->cloned_from != nd->g->id) err = cudaErrorInvalidValue;
    else {      /* by the node it copies (nodes of either graph may have been destroyed since) */
        gnode_t *hit = nd->idx < c->n && c->nodes[nd->idx]->origin == nd->handle ? c->nodes[nd->idx] : NULL;
        for (size_t i = 0; !hit && i < c->n; i++)
            if (c->nodes[i]->origin == nd->handle) hit = c->nodes[i];
        if (hit) *out = (cudaGraphNode_t)(uintptr_t)hit->handle;
        else err = cudaErrorInvalidValue;
    }
    pthread_mutex_unlock(&G);
    return err ? fail(err) : cudaSuccess;
}

/* ------------------------------------------------------------- exec update (API) */

/* A child graph's / body's nodes are those (by index and type) of its executable copy. */
static int same_shape(const gnode_t *nd, const sub_t *sb)
{
    if (nd->nbody != sb->n) return 0;
    for (size_t b = 0; b < nd->nbody; b++) {
        const graph_t *g = nd->body[b];
        const gexec_t *x = sb->x[b];
        if (g->n != x->n) return 0;
        for (size_t i = 0; i < x->n; i++) {
            const gnode_t *o = &x->nodes[i];
            if (o->idx >= g->n || g->nodes[o->idx]->type != o->type) return 0;
            if ((o->type == GN_GRAPH || o->type == GN_COND) && !same_shape(g->nodes[o->idx], o->sub)) return 0;
        }
    }
    return 1;
}

/* The executable bodies of g's child-graph and conditional nodes made anew into subs[i] (the handles with
 * ASSIGN_DEFAULT into *defs); on error none is kept.  G held. */
static cudaError_t remake_subs(const graph_t *g, sub_t **subs, cset_t **defs)
{
    cudaError_t err = cset_add_graph(defs, g);
    for (size_t i = 0; i < g->n && !err; i++) {
        if (g->nodes[i]->type != GN_GRAPH && g->nodes[i]->type != GN_COND) continue;
        gnode_t t = { 0 };
        err = exec_node_sub(&t, g->nodes[i], 1, defs);
        subs[i] = t.sub;
    }
    if (err) {
        for (size_t i = 0; i < g->n; i++) sub_unref(subs[i]);
        cset_unref(*defs);
        *defs = NULL;
    }
    return err;
}

/* cudaGraphExecChildGraphNodeSetParams / cuGraphExecChildGraphNodeSetParams: x's copy of child-graph node nh runs
 * child's nodes from now on; child must have the node's graph's shape (nodes, by insertion order and type), and
 * no memory or conditional nodes.  No error recorded.  Hidden. */
cudaError_t emu_graph_exec_child_set(cudaGraphExec_t xh, cudaGraphNode_t nh, cudaGraph_t ch)
{
    cudaError_t err = cudaSuccess;
    pthread_mutex_lock(&G);
    gexec_t *x = get_exec(xh);
    gnode_t *nd = get_node(nh), *old = NULL;
    graph_t *c = get_graph(ch);
    if (!x || !nd || !c || nd->type != GN_GRAPH || nd->g->id != x->graph_id || c->capturing) err = cudaErrorInvalidValue;
    for (size_t i = 0; !err && i < x->n && !old; i++)
        if (x->nodes[i].idx == nd->idx && x->nodes[i].type == GN_GRAPH) old = &x->nodes[i];
    gnode_t t = { 0 };
    graph_t *one[1] = { c };
    t.type = GN_GRAPH;
    t.body = one;
    t.nbody = 1;
    if (!err && (!old || !same_shape(&t, old->sub))) err = cudaErrorInvalidValue;
    for (size_t i = 0; !err && i < c->n; i++)
        if (c->nodes[i]->type == GN_MEM_ALLOC || c->nodes[i]->type == GN_MEM_FREE || c->nodes[i]->type == GN_COND)
            err = cudaErrorInvalidValue;
    cset_t *defs = NULL;
    gnode_t made = { 0 };
    if (!err) err = exec_node_sub(&made, &t, 1, &defs);
    if (!err) {
        sub_unref(old->sub);
        old->sub = made.sub;
    } else {
        sub_unref(made.sub);
    }
    cset_unref(defs);
    pthread_mutex_unlock(&G);
    return err;
}

EXPORT cudaError_t cudaGraphExecChildGraphNodeSetParams(cudaGraphExec_t x, cudaGraphNode_t node, cudaGraph_t child)
{
    RT_ENTER(cudaGraphExecChildGraphNodeSetParams, cudaErrorUnknown);
    RT_NEED_DEVICE();
    cudaError_t err = emu_graph_exec_child_set(x, node, child);
    return err ? fail(err) : cudaSuccess;
}

static int same_deps(const gnode_t *nd, const uint32_t *v, size_t n)
{
    if (nd->ndeps != n) return 0;
    if (!memcmp(nd->deps, v, n * sizeof *v)) return 1;
    for (size_t i = 0; i < n; i++)              /* as sets (each has no duplicates) */
        if (!has_dep(nd, v[i])) return 0;
    return 1;
}

EXPORT cudaError_t cudaGraphExecUpdate(cudaGraphExec_t xh, cudaGraph_t gh, update_info_t *info)
{
    RT_ENTER(cudaGraphExecUpdate, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (!info) return fail(cudaErrorInvalidValue);
    cudaError_t err = cudaSuccess;
    int result = UPDATE_SUCCESS;
    const gnode_t *bad = NULL;
    uint32_t *pos = NULL;
    pthread_mutex_lock(&G);
    gexec_t *x = get_exec(xh);
    graph_t *g = get_graph(gh);
    if (!x || !g) err = cudaErrorInvalidResourceHandle;
    else if (g->capturing) err = cudaErrorInvalidValue;
    else if (g->n != x->n) result = UPDATE_TOPOLOGY_CHANGED;
    else if (x->n && !(pos = malloc(x->n * sizeof *pos))) err = cudaErrorMemoryAllocation;
    if (!err && !result) {
        for (size_t i = 0; i < x->n; i++) pos[x->nodes[i].idx] = (uint32_t)i;
        for (size_t i = 0; i < g->n && !result; i++) {
            const gnode_t *nd = g->nodes[i], *old = &x->nodes[pos[i]];
            bad = nd;
            if (!same_deps(nd, x->dep_v + x->dep_off[i], x->dep_off[i + 1] - x->dep_off[i]))
                result = UPDATE_TOPOLOGY_CHANGED;
            else if (nd->type != old->type) result = UPDATE_NODE_TYPE_CHANGED;
            else if ((nd->type == GN_MEM_ALLOC || nd->type == GN_MEM_FREE) && (nd->mem != old->mem || nd->n != old->n))
                result = UPDATE_PARAMETERS_CHANGED;
            else if (nd->type == GN_COND && (nd->ctype != old->sub->ctype || nd->cond != old->sub->c))
                result = UPDATE_PARAMETERS_CHANGED;
            else if ((nd->type == GN_GRAPH || nd->type == GN_COND) && !same_shape(nd, old->sub))
                result = UPDATE_TOPOLOGY_CHANGED;
        }
        sub_t **subs = NULL;
        cset_t *defs = NULL;
        if (!result && g->n && !(subs = calloc(g->n, sizeof *subs))) err = cudaErrorMemoryAllocation;
        if (!result && !err) err = remake_subs(g, subs, &defs);
        if (!result && !err) {
            bad = NULL;
            for (size_t i = 0; i < g->n; i++) {
                gnode_t *nd = &x->nodes[pos[i]];
                set_params(nd, g->nodes[i]);
                if (subs[i]) { sub_unref(nd->sub); nd->sub = subs[i]; }
            }
            cset_unref(x->defaults);
            x->defaults = defs;
        }
        free(subs);
    }
    if (!err) {
        info->result = result;
        info->errorNode = bad && result ? (cudaGraphNode_t)(uintptr_t)bad->handle : NULL;
        info->errorFromNode = NULL;
        if (result) err = cudaErrorGraphExecUpdateFailure;
    }
    pthread_mutex_unlock(&G);
    free(pos);
    return err ? fail(err) : cudaSuccess;
}
