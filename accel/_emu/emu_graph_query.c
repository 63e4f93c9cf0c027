/* Graph queries and node removal of the emulated runtime: cudaGraphNodeGetDependentNodes, cudaGraphGetEdges,
 * cudaGraphGetRootNodes, cudaGraphNodeGetContainingGraph, cudaGraphGetId, cudaGraphDestroyNode,
 * cudaGraphRemoveDependencies, the parameter getters of memory, memset, host and event nodes and the setters of
 * host and event nodes, and the graph memory attributes (graphs: emu_graph.c; construction:
 * emu_graph_nodes.c; shared types: emu_graph.h).  The driver's forms are in emu_graph_driver2.c.
 *
 * Every edge the emulator keeps is a default one (cudaGraphAddDependencies refuses other edge data), so the
 * edge data these queries return is all zeros and a query without edge data is never lossy.
 *
 * Documented choices:
 *  - Lists ask for room as cudaGraphGetNodes does: a NULL array gives the count; an array of *n entries
 *    is filled with the first min(*n, count) (edges: in node order, each node's dependencies in the order
 *    they were added), the rest set to NULL, and *n becomes the number written.
 *  - cudaGraphDestroyNode of a graph that has memory nodes is cudaErrorNotSupported: CUDA documents that
 *    nodes and edges of such a graph cannot be removed.  A graph being captured into:
 *    cudaErrorInvalidValue, as the other explicit-construction calls.
 */
#include "emu_graph.h"


static cudaGraphNode_t node_handle(const graph_t *g, uint32_t i)
{
    return (cudaGraphNode_t)(uintptr_t)g->nodes[i]->handle;
}

static int depends_on(const gnode_t *nd, uint32_t i)
{
    for (size_t k = 0; k < nd->ndeps; k++)
        if (nd->deps[k] == i) return 1;
    return 0;
}

EXPORT cudaError_t cudaGraphNodeGetDependentNodes(cudaGraphNode_t nh, cudaGraphNode_t *out, void *edges, size_t *n)
{
    RT_ENTER(cudaGraphNodeGetDependentNodes, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (!n || (edges && !out)) return fail(cudaErrorInvalidValue);
    pthread_mutex_lock(&G);
    gnode_t *nd = get_node(nh);
    if (nd) {
        const graph_t *g = nd->g;
        size_t k = 0;
        for (size_t j = 0; j < g->n; j++) {
            if (!depends_on(g->nodes[j], nd->idx)) continue;
            if (out && k < *n) out[k] = node_handle(g, (uint32_t)j);
            k++;
        }
        if (out) {
            size_t w = k < *n ? k : *n;
            for (size_t i = w; i < *n; i++) out[i] = NULL;
            if (edges) memset(edges, 0, *n * sizeof(edge_t));
            *n = w;
        } else {
            *n = k;
        }
    }
    pthread_mutex_unlock(&G);
    return nd ? cudaSuccess : fail(cudaErrorInvalidResourceHandle);
}

EXPORT cudaError_t cudaGraphGetEdges(cudaGraph_t gh, cudaGraphNode_t *from, cudaGraphNode_t *to, void *edges, size_t *n)
{
    RT_ENTER(cudaGraphGetEdges, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (!n || !from != !to || (edges && !from)) return fail(cudaErrorInvalidValue);
    pthread_mutex_lock(&G);
    graph_t *g = get_graph(gh);
    if (g) {
        size_t k = 0;
        for (size_t j = 0; j < g->n; j++)
            for (size_t d = 0; d < g->nodes[j]->ndeps; d++, k++)
                if (from && k < *n) {
                    from[k] = node_handle(g, g->nodes[j]->deps[d]);
                    to[k] = node_handle(g, (uint32_t)j);
                }
        if (from) {
            size_t w = k < *n ? k : *n;
            for (size_t i = w; i < *n; i++) from[i] = to[i] = NULL;
            if (edges) memset(edges, 0, *n * sizeof(edge_t));
            *n = w;
        } else {
            *n = k;
        }
    }
    pthread_mutex_unlock(&G);
    return g ? cudaSuccess : fail(cudaErrorInvalidResourceHandle);
}

/* The node goes with its edges both ways; later nodes move down one index (their dependencies follow). */
EXPORT cudaError_t cudaGraphDestroyNode(cudaGraphNode_t nh)
{
    RT_ENTER(cudaGraphDestroyNode, cudaErrorUnknown);
    RT_NEED_DEVICE();
    cudaError_t err = cudaSuccess;
    pthread_mutex_lock(&G);
    gnode_t *nd = get_node(nh);
    graph_t *g = nd ? nd->g : NULL;
    if (!nd) err = cudaErrorInvalidValue;
    else if (g->capturing) err = cudaErrorInvalidValue;
    else if (g->mem->n) err = cudaErrorNotSupported;
    if (!err) {
        uint32_t gone = nd->idx;
        for (size_t j = gone + 1; j < g->n; j++) {
            g->nodes[j - 1] = g->nodes[j];
            g->nodes[j - 1]->idx = (uint32_t)(j - 1);
        }
        g->n--;
        for (size_t j = 0; j < g->n; j++) {
            gnode_t *m = g->nodes[j];
            size_t w = 0;
            for (size_t d = 0; d < m->ndeps; d++)
                if (m->deps[d] != gone) m->deps[w++] = m->deps[d] > gone ? m->deps[d] - 1 : m->deps[d];
            m->ndeps = w;
        }
        ht_del(&g_handles, nd->handle);
        node_bodies_free(nd);
        emu_launch_unref_locked(nd->launch);
        free(nd->deps);
        free(nd);
    }
    pthread_mutex_unlock(&G);
    return err ? fail(err) : cudaSuccess;
}

/* cudaMemAllocNodeParams as emu_graph_nodes.c reads it (120 bytes). */
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

/* What the node was made with as the emulator keeps it: a pinned device allocation on its device, its size and
 * address; no access descriptors (the node's own device only). */
EXPORT cudaError_t cudaGraphMemAllocNodeGetParams(cudaGraphNode_t nh, struct mem_alloc_params *p)
{
    RT_ENTER(cudaGraphMemAllocNodeGetParams, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (!p) return fail(cudaErrorInvalidValue);
    cudaError_t err = cudaSuccess;
    pthread_mutex_lock(&G);
    gnode_t *nd = get_node(nh);
    if (!nd || nd->type != GN_MEM_ALLOC) err = cudaErrorInvalidValue;
    else {
        memset(p, 0, sizeof *p);
        p->allocType = 1;                   /* pinned */
        p->locType = 1;                     /* a device */
        p->locId = nd->mem->device;
        p->bytesize = nd->n;
        p->dptr = nd->dst;
    }
    pthread_mutex_unlock(&G);
    return err ? fail(err) : cudaSuccess;
}

EXPORT cudaError_t cudaGraphMemFreeNodeGetParams(cudaGraphNode_t nh, void *dptr_out)
{
    RT_ENTER(cudaGraphMemFreeNodeGetParams, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (!dptr_out) return fail(cudaErrorInvalidValue);
    cudaError_t err = cudaSuccess;
    pthread_mutex_lock(&G);
    gnode_t *nd = get_node(nh);
    if (!nd || nd->type != GN_MEM_FREE) err = cudaErrorInvalidValue;
    else memcpy(dptr_out, &nd->dst, sizeof nd->dst);
    pthread_mutex_unlock(&G);
    return err ? fail(err) : cudaSuccess;
}

/* ------------------------------------------------------------- graph memory (API) */

/* Graph memory in use on a device: the allocations of every live graph's and executable graph's alloc nodes
 * (each graph memory counted once) that are still mapped.  The emulator maps a graph allocation when its node
 * is made and keeps nothing past that (no pool of graph memory to trim), so what it reserves is what is in
 * use.  G held. */
static unsigned long long mem_used(int dev)
{
    const gmem_t *seen[64];
    size_t nseen = 0;
    unsigned long long used = 0;
    for (size_t i = 0; i < g_handles.cap; i++) {
        uint64_t k = g_handles.keys[i];
        const gmem_t *m = NULL;
        if ((k & TAG_MASK) == TAG_GRAPH) m = ((graph_t *)g_handles.vals[i])->mem;
        else if ((k & TAG_MASK) == TAG_GEXEC) m = ((gexec_t *)g_handles.vals[i])->mem;
        if (!m || !m->n) continue;
        int dup = 0;                /* an executable graph shares its graph's: mostly a recent one */
        for (size_t j = 0; j < nseen && !dup; j++) dup = seen[j] == m;
        if (dup) continue;
        if (nseen < sizeof seen / sizeof *seen) seen[nseen++] = m;
        else {                      /* many graphs with memory: look for an earlier holder of m the slow way */
            for (size_t j = 0; j < i && !dup; j++) {
                uint64_t kj = g_handles.keys[j];
                dup = ((kj & TAG_MASK) == TAG_GRAPH && ((graph_t *)g_handles.vals[j])->mem == m) ||
                      ((kj & TAG_MASK) == TAG_GEXEC && ((gexec_t *)g_handles.vals[j])->mem == m);
            }
            if (dup) continue;
        }
        for (size_t a = 0; a < m->n; a++)
            if (m->a[a]->device == dev && !m->a[a]->freed) used += m->a[a]->size;
    }
    return used;
}

/* The high watermarks are sampled: each query and reset notes what is in use then (the scan above costs a pass
 * over the live handles, too much for every allocation node).  Graph memory only shrinks when graphs go or their
 * allocations are freed, so a peak is missed only when that happened between two queries. */
static unsigned long long g_mem_high[EMU_MAX_DEVICES], g_reserved_high[EMU_MAX_DEVICES];

static void graph_mem_note(int dev)
{
    if (dev < 0 || dev >= EMU_MAX_DEVICES) return;
    unsigned long long used = mem_used(dev);
    if (used > g_mem_high[dev]) g_mem_high[dev] = used;
    if (used > g_reserved_high[dev]) g_reserved_high[dev] = used;
}

enum { MEM_USED = 0, MEM_USED_HIGH = 1, MEM_RESERVED = 2, MEM_RESERVED_HIGH = 3 };

EXPORT cudaError_t cudaDeviceGetGraphMemAttribute(int device, int attr, void *value)
{
    RT_ENTER(cudaDeviceGetGraphMemAttribute, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (device < 0 || device >= g_ndev) return fail(cudaErrorInvalidDevice);
    if (!value || attr < MEM_USED || attr > MEM_RESERVED_HIGH) return fail(cudaErrorInvalidValue);
    pthread_mutex_lock(&G);
    graph_mem_note(device);
    unsigned long long v = attr == MEM_USED_HIGH ? g_mem_high[device]
                         : attr == MEM_RESERVED_HIGH ? g_reserved_high[device] : mem_used(device);
    pthread_mutex_unlock(&G);
    memcpy(value, &v, sizeof v);
    return cudaSuccess;
}

/* Only the high watermarks can be set, and only to 0 (then they restart from what is in use now). */
EXPORT cudaError_t cudaDeviceSetGraphMemAttribute(int device, int attr, void *value)
{
    RT_ENTER(cudaDeviceSetGraphMemAttribute, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (device < 0 || device >= g_ndev) return fail(cudaErrorInvalidDevice);
    if (!value || (attr != MEM_USED_HIGH && attr != MEM_RESERVED_HIGH)) return fail(cudaErrorInvalidValue);
    unsigned long long v;
    memcpy(&v, value, sizeof v);
    if (v) return fail(cudaErrorInvalidValue);
    pthread_mutex_lock(&G);
    if (attr == MEM_USED_HIGH) g_mem_high[device] = 0;
    else g_reserved_high[device] = 0;
    graph_mem_note(device);
    pthread_mutex_unlock(&G);
    return cudaSuccess;
}

/* Nothing is cached for graphs past what they use: nothing to give back. */
EXPORT cudaError_t cudaDeviceGraphMemTrim(int device)
{
    RT_ENTER(cudaDeviceGraphMemTrim, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (device < 0 || device >= g_ndev) return fail(cudaErrorInvalidValue);
    return cudaSuccess;
}

/* ------------------------------------------------- more queries, node parameters (API) */

/* Nodes without dependencies, in node order (room asked as cudaGraphGetNodes: the first *n, the rest NULL). */
EXPORT cudaError_t cudaGraphGetRootNodes(cudaGraph_t gh, cudaGraphNode_t *out, size_t *n)
{
    RT_ENTER(cudaGraphGetRootNodes, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (!n) return fail(cudaErrorInvalidValue);
    pthread_mutex_lock(&G);
    graph_t *g = get_graph(gh);
    if (g) {
        size_t k = 0;
        for (size_t j = 0; j < g->n; j++)
            if (!g->nodes[j]->ndeps) {
                if (out && k < *n) out[k] = node_handle(g, (uint32_t)j);
                k++;
            }
        if (out) {
            size_t w = k < *n ? k : *n;
            for (size_t i = w; i < *n; i++) out[i] = NULL;
            *n = w;
        } else {
            *n = k;
        }
    }
    pthread_mutex_unlock(&G);
    return g ? cudaSuccess : fail(cudaErrorInvalidResourceHandle);
}

EXPORT cudaError_t cudaGraphNodeGetContainingGraph(cudaGraphNode_t nh, cudaGraph_t *out)
{
    RT_ENTER(cudaGraphNodeGetContainingGraph, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (!out) return fail(cudaErrorInvalidValue);
    pthread_mutex_lock(&G);
    gnode_t *nd = get_node(nh);
    if (nd) *out = (cudaGraph_t)(uintptr_t)nd->g->handle;
    pthread_mutex_unlock(&G);
    return nd ? cudaSuccess : fail(cudaErrorInvalidValue);
}

/* The graph's id: unique in the process (graphs are numbered as they are made). */
EXPORT cudaError_t cudaGraphGetId(cudaGraph_t gh, unsigned int *id)
{
    RT_ENTER(cudaGraphGetId, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (!id) return fail(cudaErrorInvalidValue);
    pthread_mutex_lock(&G);
    graph_t *g = get_graph(gh);
    if (g) *id = (unsigned int)g->id;
    pthread_mutex_unlock(&G);
    return g ? cudaSuccess : fail(cudaErrorInvalidValue);
}

/* A node of `type` by handle, in a graph not being captured into when `write` (G held): NULL with *err. */
static gnode_t *typed_node(cudaGraphNode_t nh, int type, int write, cudaError_t *err)
{
    gnode_t *nd = get_node(nh);
    *err = !nd || nd->type != type || (write && nd->g->capturing) ? cudaErrorInvalidValue : cudaSuccess;
    return *err ? NULL : nd;
}

static cudaError_t event_get(cudaGraphNode_t nh, int type, cudaEvent_t *out)
{
    if (!out) return cudaErrorInvalidValue;
    cudaError_t err;
    pthread_mutex_lock(&G);
    gnode_t *nd = typed_node(nh, type, 0, &err);
    if (nd) *out = (cudaEvent_t)(uintptr_t)nd->event;
    pthread_mutex_unlock(&G);
    return err;
}

static cudaError_t event_set(cudaGraphNode_t nh, int type, cudaEvent_t eh)
{
    cudaError_t err;
    pthread_mutex_lock(&G);
    gnode_t *nd = typed_node(nh, type, 1, &err);
    event_t *e = nd ? get_event(eh) : NULL;
    if (nd && !e) err = cudaErrorInvalidResourceHandle;
    if (e) nd->event = e->handle;
    pthread_mutex_unlock(&G);
    return err;
}

#define EVENT_NODE_FNS(Kind, type) \
    EXPORT cudaError_t cudaGraph##Kind##NodeGetEvent(cudaGraphNode_t nh, cudaEvent_t *out) \
    { \
        RT_ENTER(cudaGraph##Kind##NodeGetEvent, cudaErrorUnknown); \
        RT_NEED_DEVICE(); \
        cudaError_t err = event_get(nh, type, out); \
        return err ? fail(err) : cudaSuccess; \
    } \
    EXPORT cudaError_t cudaGraph##Kind##NodeSetEvent(cudaGraphNode_t nh, cudaEvent_t e) \
    { \
        RT_ENTER(cudaGraph##Kind##NodeSetEvent, cudaErrorUnknown); \
        RT_NEED_DEVICE(); \
        cudaError_t err = event_set(nh, type, e); \
        return err ? fail(err) : cudaSuccess; \
    }
EVENT_NODE_FNS(EventRecord, GN_EVENT_RECORD)
EVENT_NODE_FNS(EventWait, GN_WAIT_EVENT)

typedef struct { cudaHostFn_t fn; void *userData; } host_params_t;     /* cudaHostNodeParams */

EXPORT cudaError_t cudaGraphHostNodeGetParams(cudaGraphNode_t nh, host_params_t *p)
{
    RT_ENTER(cudaGraphHostNodeGetParams, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (!p) return fail(cudaErrorInvalidValue);
    cudaError_t err;
    pthread_mutex_lock(&G);
    gnode_t *nd = typed_node(nh, GN_HOST, 0, &err);
    if (nd) *p = (host_params_t){ nd->fn, nd->arg };
    pthread_mutex_unlock(&G);
    return err ? fail(err) : cudaSuccess;
}

/* Later launches of executable graphs made before keep the parameters they were made with (as CUDA's). */
EXPORT cudaError_t cudaGraphHostNodeSetParams(cudaGraphNode_t nh, const host_params_t *p)
{
    RT_ENTER(cudaGraphHostNodeSetParams, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (!p || !p->fn) return fail(cudaErrorInvalidValue);
    cudaError_t err;
    pthread_mutex_lock(&G);
    gnode_t *nd = typed_node(nh, GN_HOST, 1, &err);
    if (nd) { nd->fn = p->fn; nd->arg = p->userData; }
    pthread_mutex_unlock(&G);
    return err ? fail(err) : cudaSuccess;
}

/* cudaMemsetParams as the node keeps them (the pitch of a one-row memset: its width in bytes). */
typedef struct { void *dst; size_t pitch; unsigned int value, elementSize; size_t width, height; } memset_params_t;

EXPORT cudaError_t cudaGraphMemsetNodeGetParams(cudaGraphNode_t nh, memset_params_t *p)
{
    RT_ENTER(cudaGraphMemsetNodeGetParams, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (!p) return fail(cudaErrorInvalidValue);
    cudaError_t err;
    pthread_mutex_lock(&G);
    gnode_t *nd = typed_node(nh, GN_MEMSET, 0, &err);
    if (nd) *p = (memset_params_t){ nd->dst, nd->dpitch, (unsigned)nd->value, (unsigned)nd->elem, nd->n, nd->rows };
    pthread_mutex_unlock(&G);
    return err ? fail(err) : cudaSuccess;
}

/* CUDA 13's signature (edge data: NULL or default edges).  Every edge named must exist, each once; none is
 * removed otherwise.  A graph with memory nodes keeps its edges (CUDA's rule): cudaErrorNotSupported. */
EXPORT cudaError_t cudaGraphRemoveDependencies(cudaGraph_t gh, const cudaGraphNode_t *from, const cudaGraphNode_t *to,
                                               const void *edges, size_t n)
{
    RT_ENTER(cudaGraphRemoveDependencies, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (n && (!from || !to)) return fail(cudaErrorInvalidValue);
    if (!edges_default(edges, n)) return fail(cudaErrorInvalidValue);
    cudaError_t err = cudaSuccess;
    pthread_mutex_lock(&G);
    graph_t *g = get_graph(gh);
    if (!g) err = cudaErrorInvalidResourceHandle;
    else if (g->capturing) err = cudaErrorInvalidValue;
    else if (g->mem->n && n) err = cudaErrorNotSupported;
    for (size_t i = 0; i < n && !err; i++) {
        gnode_t *a = get_node(from[i]), *b = get_node(to[i]);
        if (!a || !b || a->g != g || b->g != g || !depends_on(b, a->idx)) err = cudaErrorInvalidValue;
    }
    if (!err && n > 1) err = duplicate_edges(from, to, n);
    for (size_t i = 0; i < n && !err; i++) {
        gnode_t *a = get_node(from[i]), *b = get_node(to[i]);
        size_t w = 0;
        for (size_t d = 0; d < b->ndeps; d++)
            if (b->deps[d] != a->idx) b->deps[w++] = b->deps[d];
        b->ndeps = w;
    }
    pthread_mutex_unlock(&G);
    return err ? fail(err) : cudaSuccess;
}

/* ------------------------------------------------------------- generic parameters (API) */

/* A node's parameters as cudaGraphNodeParams / CUgraphNodeParams (256 bytes, zeroed first): its type, then its
 * kind's parameters at byte 16, as the node keeps them (CUDA documents that they may differ from those it was
 * made with).  A copy's sides are given at their addresses, pitched, position 0: to the runtime as
 * cudaMemcpy3DParms (kind cudaMemcpyDefault), to the driver as CUDA_MEMCPY3D (device memory as
 * CU_MEMORYTYPE_DEVICE, the rest CU_MEMORYTYPE_HOST); contexts are NULL.  Captured kernel nodes: the emulator
 * keeps no parameters for them (cudaErrorNotSupported).  Hidden: cuGraphNodeGetParams (emu_graph_driver2.c). */
__attribute__((visibility("hidden")))
cudaError_t emu_graph_node_params(cudaGraphNode_t nh, void *params, int driver)
{
    if (!params) return cudaErrorInvalidValue;
    unsigned char out[256] = { 0 }, *u = out + 16;
    cudaError_t err = cudaSuccess;
    pthread_mutex_lock(&G);
    gnode_t *nd = get_node(nh);
    if (!nd) err = cudaErrorInvalidValue;
    else if (nd->type == GN_KERNEL) err = cudaErrorNotSupported;
    else {
        memcpy(out, &nd->type, sizeof nd->type);
        size_t w[25] = { 0 };
        void *p[2] = { 0 };
        int il[2] = { 0 };
        switch (nd->type) {
        case GN_MEMCPY:
            if (driver) {       /* CUDA_MEMCPY3D at u + 16 (after flags, reserved and copyCtx) */
                w[4] = nd->dev_src ? 2 : 1;
                w[nd->dev_src ? 6 : 5] = (uintptr_t)nd->src;
                w[9] = nd->spitch;                      /* heights (for depth > 1 only): 0 */
                w[15] = nd->dev_dst ? 2 : 1;
                w[nd->dev_dst ? 17 : 16] = (uintptr_t)nd->dst;
                w[20] = nd->dpitch;
                w[22] = nd->n;
                w[23] = nd->rows;
                w[24] = 1;
                memcpy(u + 16, w, sizeof w);
            } else {            /* cudaMemcpy3DParms at u + 16 */
                w[4] = (uintptr_t)nd->src; w[5] = nd->spitch; w[6] = nd->n; w[7] = nd->rows;
                w[12] = (uintptr_t)nd->dst; w[13] = nd->dpitch; w[14] = nd->n; w[15] = nd->rows;
                w[16] = nd->n; w[17] = nd->rows; w[18] = 1; w[19] = 4;
                memcpy(u + 16, w, 20 * sizeof *w);
            }
            break;
        case GN_MEMSET:
            w[0] = (uintptr_t)nd->dst; w[1] = nd->dpitch; w[3] = nd->n; w[4] = nd->rows;
            il[0] = nd->value; il[1] = nd->elem;
            memcpy(u, w, 5 * sizeof *w);
            memcpy(u + 16, il, sizeof il);
            break;
        case GN_HOST:
            p[0] = (void *)nd->fn; p[1] = nd->arg;
            memcpy(u, p, sizeof p);
            break;
        case GN_EVENT_RECORD:
        case GN_WAIT_EVENT:
            memcpy(u, &nd->event, sizeof nd->event);
            break;
        case GN_MEM_ALLOC: {
            int head[4] = { 1, 0, 1, nd->mem->device };     /* pinned, on the node's device */
            memcpy(u, head, sizeof head);
            w[0] = nd->n; w[1] = (uintptr_t)nd->dst;         /* bytesize, dptr after the props and access list */
            memcpy(u + 104, w, 2 * sizeof *w);
            break;
        }
        case GN_MEM_FREE:
            memcpy(u, &nd->dst, sizeof nd->dst);
            break;
        case GN_GRAPH:          /* the graph, ownership CLONE (0) */
            memcpy(u, &nd->bodyh[0], sizeof nd->bodyh[0]);
            break;
        case GN_COND: {         /* handle, type, size, phGraph_out (the node's array), context NULL */
            unsigned t[2] = { (unsigned)nd->ctype, (unsigned)nd->nbody };
            memcpy(u, &nd->cond->handle, 8);
            memcpy(u + 8, t, sizeof t);
            memcpy(u + 16, &nd->bodyh, sizeof nd->bodyh);
            break;
        }
        default:
            break;
        }
    }
    pthread_mutex_unlock(&G);
    if (!err) memcpy(params, out, sizeof out);
    return err;
}

EXPORT cudaError_t cudaGraphNodeGetParams(cudaGraphNode_t nh, void *params)
{
    RT_ENTER(cudaGraphNodeGetParams, cudaErrorUnknown);
    RT_NEED_DEVICE();
    cudaError_t err = emu_graph_node_params(nh, params, 0);
    return err ? fail(err) : cudaSuccess;
}
