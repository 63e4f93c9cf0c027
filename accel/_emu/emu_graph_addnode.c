/* cudaGraphAddNode: a node from generic parameters (cudaGraphNodeParams, 256 bytes: the type, then a union of
 * every node kind's parameters), made by the explicit-construction call of its kind (emu_graph_nodes.c), which
 * checks the parameters as it always does.  The driver's cuGraphAddNode(_v2) is emu_graph_driver2.c.
 *
 * Documented choices:
 *  - Kinds the emulator has: memcpy, memset, host, empty, event record / wait, memory alloc / free, child graphs
 *    (copied, or moved in: CUDA 12.9's ownership field) and conditional nodes (emu_graph_cond.c).  Kernel nodes
 *    (made by cudaGraphAddKernelNode / cuGraphAddKernelNode instead), external semaphores and batch memory
 *    operations are cudaErrorNotSupported (logged once with ACCEL_EMU_TRACE=1); a type past the enum, or
 *    nonzero reserved fields, is cudaErrorInvalidValue.
 *  - Edge data as cudaGraphAddDependencies takes it: NULL or default edges only.
 *  - The call made inside counts its own name for fault injection (ACCEL_EMU_FAIL), after this one's.
 */
#include "emu_graph.h"

/* cudaGraphNodeParams: the union's members are read by offset (the runtime's structs of each kind). */
typedef struct {
    int type;
    int reserved0[3];
    union {
        long long reserved1[29];
        struct { int flags, reserved[3]; } memcpy;  /* then the copy's parameters (runtime's or driver's) */
        struct { void *event; } event;
        struct { void *fn, *data; } host;
        struct { unsigned char props[88]; const void *access; size_t naccess, bytesize; void *dptr; } alloc;
        struct { void *dptr; } free;
        struct { void *graph; int ownership; } child;
    } u;
    long long reserved2;
} node_params_t;
_Static_assert(sizeof(node_params_t) == 256, "cudaGraphNodeParams");

typedef int (*emu_add_copy_fn)(cudaGraphNode_t *, cudaGraph_t, const cudaGraphNode_t *, size_t, const void *);

cudaError_t cudaGraphAddMemcpyNode(cudaGraphNode_t *, cudaGraph_t, const cudaGraphNode_t *, size_t, const void *);
cudaError_t cudaGraphAddMemsetNode(cudaGraphNode_t *, cudaGraph_t, const cudaGraphNode_t *, size_t, const void *);
cudaError_t cudaGraphAddHostNode(cudaGraphNode_t *, cudaGraph_t, const cudaGraphNode_t *, size_t, const void *);
cudaError_t cudaGraphAddEmptyNode(cudaGraphNode_t *, cudaGraph_t, const cudaGraphNode_t *, size_t);
cudaError_t cudaGraphAddEventRecordNode(cudaGraphNode_t *, cudaGraph_t, const cudaGraphNode_t *, size_t, void *);
cudaError_t cudaGraphAddEventWaitNode(cudaGraphNode_t *, cudaGraph_t, const cudaGraphNode_t *, size_t, void *);
cudaError_t cudaGraphAddMemAllocNode(cudaGraphNode_t *, cudaGraph_t, const cudaGraphNode_t *, size_t, void *);
cudaError_t cudaGraphAddMemFreeNode(cudaGraphNode_t *, cudaGraph_t, const cudaGraphNode_t *, size_t, void *);
cudaError_t emu_graph_add_child(cudaGraphNode_t *, cudaGraph_t, const cudaGraphNode_t *, size_t, cudaGraph_t, int);
cudaError_t emu_graph_add_cond(cudaGraphNode_t *, cudaGraph_t, const cudaGraphNode_t *, size_t, void *);

/* Hidden: the driver's cuGraphAddNode shares the checks and the dispatch; memcpy nodes go to add_copy with the
 * copy's parameters (cudaMemcpy3DParms here, CUDA_MEMCPY3D in the driver). */
__attribute__((visibility("hidden")))
cudaError_t emu_graph_add_node(cudaGraphNode_t *out, cudaGraph_t g, const cudaGraphNode_t *deps, const void *edges,
                               size_t n, void *params, emu_add_copy_fn add_copy)
{
    node_params_t *p = params;
    static const edge_t zero;
    if (!p || !out || (n && !deps)) return cudaErrorInvalidValue;
    for (size_t i = 0; edges && i < n; i++)
        if (memcmp((const edge_t *)edges + i, &zero, sizeof zero)) return cudaErrorInvalidValue;
    if (p->reserved0[0] || p->reserved0[1] || p->reserved0[2] || p->reserved2) return cudaErrorInvalidValue;
    switch (p->type) {
    case GN_MEMCPY:
        if (p->u.memcpy.flags || p->u.memcpy.reserved[0] || p->u.memcpy.reserved[1] || p->u.memcpy.reserved[2])
            return cudaErrorInvalidValue;
        return add_copy(out, g, deps, n, (const char *)&p->u + 16);
    case GN_MEMSET: return cudaGraphAddMemsetNode(out, g, deps, n, &p->u);
    case GN_HOST: return cudaGraphAddHostNode(out, g, deps, n, &p->u);
    case GN_EMPTY: return cudaGraphAddEmptyNode(out, g, deps, n);
    case GN_WAIT_EVENT: return cudaGraphAddEventWaitNode(out, g, deps, n, p->u.event.event);
    case GN_EVENT_RECORD: return cudaGraphAddEventRecordNode(out, g, deps, n, p->u.event.event);
    case GN_MEM_ALLOC: return cudaGraphAddMemAllocNode(out, g, deps, n, &p->u);     /* writes u.alloc.dptr */
    case GN_MEM_FREE: return cudaGraphAddMemFreeNode(out, g, deps, n, p->u.free.dptr);
    case GN_GRAPH: return emu_graph_add_child(out, g, deps, n, p->u.child.graph, p->u.child.ownership);
    case GN_COND: return emu_graph_add_cond(out, g, deps, n, &p->u);
    case GN_KERNEL: case 8: case 9: case 12: {
        static atomic_int seen;
        if (emu_trace_unsupported) emu_trace_unsupported("cudaGraphAddNode / cuGraphAddNode of this node type", &seen);
        return cudaErrorNotSupported;
    }
    default: return cudaErrorInvalidValue;
    }
}

EXPORT cudaError_t cudaGraphAddNode(cudaGraphNode_t *out, cudaGraph_t g, const cudaGraphNode_t *deps, const void *edges,
                                    size_t n, void *params)
{
    RT_ENTER(cudaGraphAddNode, cudaErrorMemoryAllocation);
    RT_NEED_DEVICE();
    cudaError_t err = emu_graph_add_node(out, g, deps, edges, n, params, cudaGraphAddMemcpyNode);
    return err ? fail(err) : cudaSuccess;
}
