/* Graph queries and node removal of the emulated runtime: cudaGraphNodeGetDependentNodes, cudaGraphGetEdges,
 * cudaGraphDestroyNode and the memory nodes' parameter getters (graphs: emu_graph.c; construction:
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

typedef struct { unsigned char from_port, to_port, type, reserved[5]; } edge_t;     /* cudaGraphEdgeData */

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
