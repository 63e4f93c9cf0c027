/* The driver API's graph queries, node removal and graph memory attributes in the libcuda.so.1 stand-in (issue 33),
 * and its IPC events: thin layers over the emulated runtime's (emu_graph_query.c, emu_event.c), whose error codes
 * have the same values as CUresult's (1, 2, 101, 400, 801).
 * As every driver entry point they keep the runtime's last error as it was and have a fault hook by name
 * (EMU_DRVSURFACE_SYMBOLS, emu_internal.h).  cuGetProcAddress finds them through emu_graph_driver2_procs
 * (chained in emu_driver.c's lookup); none takes a stream, so the per-thread variant is the function itself. */
#include "emu_driver.h"

typedef void *CUgraph;
typedef void *CUgraphNode;

int cudaGraphNodeGetDependentNodes(void *, void **, void *, size_t *);
int cudaGraphGetEdges(void *, void **, void **, void *, size_t *);
int cudaGraphDestroyNode(void *);
int cudaGraphMemAllocNodeGetParams(void *, void *);
int cudaGraphMemFreeNodeGetParams(void *, void *);
int cudaDeviceGetGraphMemAttribute(int, int, void *);
int cudaDeviceSetGraphMemAttribute(int, int, void *);
int cudaDeviceGraphMemTrim(int);
int cudaGraphGetRootNodes(void *, void **, size_t *);
int cudaGraphNodeGetContainingGraph(void *, void **);
int cudaGraphGetId(void *, unsigned int *);
int cudaGraphEventRecordNodeGetEvent(void *, void **);
int cudaGraphEventRecordNodeSetEvent(void *, void *);
int cudaGraphEventWaitNodeGetEvent(void *, void **);
int cudaGraphEventWaitNodeSetEvent(void *, void *);
int cudaGraphHostNodeGetParams(void *, void *);
int cudaGraphHostNodeSetParams(void *, const void *);
int cudaGraphMemsetNodeGetParams(void *, void *);
int cudaGraphRemoveDependencies(void *, void *const *, void *const *, const void *, size_t);
int emu_graph_node_params(void *, void *, int);
typedef int (*emu_add_copy_fn)(void **, void *, void *const *, size_t, const void *);
int emu_graph_add_node(void **, void *, void *const *, const void *, size_t, void *, emu_add_copy_fn);
CUresult emu_drv_add_memcpy_node(CUgraphNode *, CUgraph, const CUgraphNode *, size_t, const void *);

/* CUDA 12's signature (no edge data); _v2 (12.3, CUDA 13's cuGraphNodeGetDependentNodes) returns it. */
EXPORT CUresult cuGraphNodeGetDependentNodes(CUgraphNode node, CUgraphNode *out, size_t *n)
{
    DRV_ENTER(cuGraphNodeGetDependentNodes);
    return RT(cudaGraphNodeGetDependentNodes(node, out, NULL, n));
}

EXPORT CUresult cuGraphNodeGetDependentNodes_v2(CUgraphNode node, CUgraphNode *out, void *edges, size_t *n)
{
    DRV_ENTER(cuGraphNodeGetDependentNodes_v2);
    return RT(cudaGraphNodeGetDependentNodes(node, out, edges, n));
}

EXPORT CUresult cuGraphGetEdges(CUgraph g, CUgraphNode *from, CUgraphNode *to, size_t *n)
{
    DRV_ENTER(cuGraphGetEdges);
    return RT(cudaGraphGetEdges(g, from, to, NULL, n));
}

EXPORT CUresult cuGraphGetEdges_v2(CUgraph g, CUgraphNode *from, CUgraphNode *to, void *edges, size_t *n)
{
    DRV_ENTER(cuGraphGetEdges_v2);
    return RT(cudaGraphGetEdges(g, from, to, edges, n));
}

EXPORT CUresult cuGraphDestroyNode(CUgraphNode node)
{
    DRV_ENTER(cuGraphDestroyNode);
    return RT(cudaGraphDestroyNode(node));
}

/* CUDA_MEM_ALLOC_NODE_PARAMS has cudaMemAllocNodeParams' layout (dptr a CUdeviceptr, 64 bits either way). */
EXPORT CUresult cuGraphMemAllocNodeGetParams(CUgraphNode node, void *params)
{
    DRV_ENTER(cuGraphMemAllocNodeGetParams);
    return RT(cudaGraphMemAllocNodeGetParams(node, params));
}

EXPORT CUresult cuGraphMemFreeNodeGetParams(CUgraphNode node, CUdeviceptr *dptr)
{
    DRV_ENTER(cuGraphMemFreeNodeGetParams);
    return RT(cudaGraphMemFreeNodeGetParams(node, dptr));
}

/* Graph memory of a device (CU_GRAPH_MEM_ATTR_*: a cuuint64_t each); what the emulator counts is in
 * emu_graph_query.c. */
#define FWD(name, params, call) EXPORT CUresult name params { DRV_ENTER(name); return RT(call); }
FWD(cuGraphGetRootNodes, (CUgraph g, CUgraphNode *out, size_t *n), cudaGraphGetRootNodes(g, out, n))
FWD(cuGraphNodeGetContainingGraph, (CUgraphNode node, CUgraph *g), cudaGraphNodeGetContainingGraph(node, g))
FWD(cuGraphGetId, (CUgraph g, unsigned int *id), cudaGraphGetId(g, id))
FWD(cuGraphEventRecordNodeGetEvent, (CUgraphNode node, CUevent *e), cudaGraphEventRecordNodeGetEvent(node, e))
FWD(cuGraphEventRecordNodeSetEvent, (CUgraphNode node, CUevent e), cudaGraphEventRecordNodeSetEvent(node, e))
FWD(cuGraphEventWaitNodeGetEvent, (CUgraphNode node, CUevent *e), cudaGraphEventWaitNodeGetEvent(node, e))
FWD(cuGraphEventWaitNodeSetEvent, (CUgraphNode node, CUevent e), cudaGraphEventWaitNodeSetEvent(node, e))
/* CUDA_HOST_NODE_PARAMS and CUDA_MEMSET_NODE_PARAMS have the runtime's layouts. */
FWD(cuGraphHostNodeGetParams, (CUgraphNode node, void *p), cudaGraphHostNodeGetParams(node, p))
FWD(cuGraphHostNodeSetParams, (CUgraphNode node, const void *p), cudaGraphHostNodeSetParams(node, p))
FWD(cuGraphMemsetNodeGetParams, (CUgraphNode node, void *p), cudaGraphMemsetNodeGetParams(node, p))
/* CUDA 12.0's (no edge data) and 12.3's, CUDA 13's cuGraphRemoveDependencies. */
FWD(cuGraphRemoveDependencies, (CUgraph g, const CUgraphNode *from, const CUgraphNode *to, size_t n),
    cudaGraphRemoveDependencies(g, (void *const *)from, (void *const *)to, NULL, n))
FWD(cuGraphRemoveDependencies_v2, (CUgraph g, const CUgraphNode *from, const CUgraphNode *to, const void *edges,
                                   size_t n),
    cudaGraphRemoveDependencies(g, (void *const *)from, (void *const *)to, edges, n))

/* CUgraphNodeParams of a node (emu_graph_query.c says what each kind gives). */
FWD(cuGraphNodeGetParams, (CUgraphNode node, void *params), emu_graph_node_params(node, params, 1))

/* A node from generic parameters (CUgraphNodeParams): emu_graph_addnode.c says which kinds; memcpy nodes take a
 * CUDA_MEMCPY3D (emu_graph_driver.c).  cuGraphAddNode is CUDA 12.2's (no edge data), _v2 12.3's. */
EXPORT CUresult cuGraphAddNode(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t n, void *params)
{
    DRV_ENTER_CREATE(cuGraphAddNode);
    return RT(emu_graph_add_node(node, g, (void *const *)deps, NULL, n, params, (emu_add_copy_fn)emu_drv_add_memcpy_node));
}

EXPORT CUresult cuGraphAddNode_v2(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, const void *edges, size_t n,
                                  void *params)
{
    DRV_ENTER_CREATE(cuGraphAddNode_v2);
    return RT(emu_graph_add_node(node, g, (void *const *)deps, edges, n, params,
                                 (emu_add_copy_fn)emu_drv_add_memcpy_node));
}

/* Child-graph and conditional nodes (emu_graph_cond.c).  The handle's context is the current one or a live
 * context (the emulator keeps no per-context graphs); NULL is the current context. */
int emu_graph_cond_create(unsigned long long *, void *, unsigned, unsigned);
int emu_graph_add_child(void **, void *, void *const *, size_t, void *, int);
int emu_graph_child_get(void *, void **);

EXPORT CUresult cuGraphConditionalHandleCreate(unsigned long long *out, CUgraph g, CUcontext ctx, unsigned int deflt,
                                               unsigned int flags)
{
    DRV_ENTER_CREATE(cuGraphConditionalHandleCreate);
    if (ctx ? ctx_device(ctx) < 0 : !current_ctx()) return CUDA_ERROR_INVALID_CONTEXT;
    return RT(emu_graph_cond_create(out, g, deflt, flags));
}

EXPORT CUresult cuGraphAddChildGraphNode(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t n, CUgraph child)
{
    DRV_ENTER_CREATE(cuGraphAddChildGraphNode);
    return RT(emu_graph_add_child(node, g, (void *const *)deps, n, child, 0));
}

FWD(cuGraphChildGraphNodeGetGraph, (CUgraphNode node, CUgraph *out), emu_graph_child_get(node, out))
int emu_graph_exec_child_set(void *, void *, void *);
FWD(cuGraphExecChildGraphNodeSetParams, (void *x, CUgraphNode node, CUgraph child), emu_graph_exec_child_set(x, node, child))

/* What changes in an executable graph without an update (emu_graph_exec.c); CUDA_HOST_NODE_PARAMS and
 * CUDA_MEMSET_NODE_PARAMS have the runtime's layouts, the memset's context is the node's own (the emulator keeps
 * one per device: any live one or NULL). */
int cudaGraphExecGetFlags(void *, unsigned long long *);
int cudaGraphNodeSetEnabled(void *, void *, unsigned int);
int cudaGraphNodeGetEnabled(void *, void *, unsigned int *);
int cudaGraphExecHostNodeSetParams(void *, void *, const void *);
int cudaGraphExecEventRecordNodeSetEvent(void *, void *, void *);
int cudaGraphExecEventWaitNodeSetEvent(void *, void *, void *);
int emu_graph_memset_set(void *, void *, const void *);
FWD(cuGraphExecGetFlags, (void *x, unsigned long long *flags), cudaGraphExecGetFlags(x, flags))
FWD(cuGraphNodeSetEnabled, (void *x, CUgraphNode node, unsigned int on), cudaGraphNodeSetEnabled(x, node, on))
FWD(cuGraphNodeGetEnabled, (void *x, CUgraphNode node, unsigned int *on), cudaGraphNodeGetEnabled(x, node, on))
FWD(cuGraphExecHostNodeSetParams, (void *x, CUgraphNode node, const void *p), cudaGraphExecHostNodeSetParams(x, node, p))
FWD(cuGraphExecEventRecordNodeSetEvent, (void *x, CUgraphNode node, CUevent e),
    cudaGraphExecEventRecordNodeSetEvent(x, node, e))
FWD(cuGraphExecEventWaitNodeSetEvent, (void *x, CUgraphNode node, CUevent e), cudaGraphExecEventWaitNodeSetEvent(x, node, e))
FWD(cuGraphMemsetNodeSetParams, (CUgraphNode node, const void *p), emu_graph_memset_set(NULL, node, p))
int emu_graph_node_set_params_as(void *, void *, const void *, int (*)(const void *, void *));
int emu_drv_memcpy3d_to_rt(const void *, void *);
int emu_graph_memcpy_set(void *, void *, const void *);
int emu_graph_memcpy_get(void *, void *, int);
FWD(cuGraphNodeSetParams, (CUgraphNode node, void *p), emu_graph_node_set_params_as(NULL, node, p, emu_drv_memcpy3d_to_rt))

EXPORT CUresult cuGraphExecNodeSetParams(void *x, CUgraphNode node, void *p)
{
    DRV_ENTER(cuGraphExecNodeSetParams);
    return x ? RT(emu_graph_node_set_params_as(x, node, p, emu_drv_memcpy3d_to_rt)) : CUDA_ERROR_INVALID_VALUE;
}

/* Memcpy nodes' CUDA_MEMCPY3D (host, device or unified sides; arrays are CUDA_ERROR_INVALID_VALUE here). */
static CUresult memcpy_set(void *x, CUgraphNode node, const void *p)
{
    unsigned char r[20 * sizeof(size_t)];
    if (emu_drv_memcpy3d_to_rt(p, r)) return CUDA_ERROR_INVALID_VALUE;
    return RT(emu_graph_memcpy_set(x, node, r));
}

EXPORT CUresult cuGraphMemcpyNodeSetParams(CUgraphNode node, const void *p)
{
    DRV_ENTER(cuGraphMemcpyNodeSetParams);
    return memcpy_set(NULL, node, p);
}

EXPORT CUresult cuGraphExecMemcpyNodeSetParams(void *x, CUgraphNode node, const void *p, CUcontext ctx)
{
    DRV_ENTER(cuGraphExecMemcpyNodeSetParams);
    if (!x || (ctx && ctx_device(ctx) < 0)) return CUDA_ERROR_INVALID_VALUE;
    return memcpy_set(x, node, p);
}

FWD(cuGraphMemcpyNodeGetParams, (CUgraphNode node, void *p), emu_graph_memcpy_get(node, p, 1))

EXPORT CUresult cuGraphExecMemsetNodeSetParams(void *x, CUgraphNode node, const void *p, CUcontext ctx)
{
    DRV_ENTER(cuGraphExecMemsetNodeSetParams);
    if (!x || (ctx && ctx_device(ctx) < 0)) return CUDA_ERROR_INVALID_VALUE;
    return RT(emu_graph_memset_set(x, node, p));
}

/* IPC events: the runtime's handles (emu_event.c), opened in the process that made them. */
typedef struct { char reserved[64]; } CUipcEventHandle;
int cudaIpcGetEventHandle(CUipcEventHandle *, void *);
int cudaIpcOpenEventHandle(void **, CUipcEventHandle);

EXPORT CUresult cuIpcGetEventHandle(CUipcEventHandle *handle, CUevent e)
{
    DRV_ENTER(cuIpcGetEventHandle);
    return RT(cudaIpcGetEventHandle(handle, e));
}

EXPORT CUresult cuIpcOpenEventHandle(CUevent *e, CUipcEventHandle handle)
{
    DRV_ENTER_CREATE(cuIpcOpenEventHandle);
    NEED_CTX();
    return RT(cudaIpcOpenEventHandle(e, handle));
}

EXPORT CUresult cuDeviceGetGraphMemAttribute(CUdevice dev, int attr, void *value)
{
    DRV_ENTER(cuDeviceGetGraphMemAttribute);
    return RT(cudaDeviceGetGraphMemAttribute(dev, attr, value));
}

EXPORT CUresult cuDeviceSetGraphMemAttribute(CUdevice dev, int attr, void *value)
{
    DRV_ENTER(cuDeviceSetGraphMemAttribute);
    return RT(cudaDeviceSetGraphMemAttribute(dev, attr, value));
}

/* The driver documents CUDA_ERROR_INVALID_DEVICE for a bad device (the runtime: cudaErrorInvalidValue). */
EXPORT CUresult cuDeviceGraphMemTrim(CUdevice dev)
{
    DRV_ENTER(cuDeviceGraphMemTrim);
    if (dev < 0 || dev >= accelEmuDeviceCount()) return CUDA_ERROR_INVALID_DEVICE;
    return RT(cudaDeviceGraphMemTrim(dev));
}

#define PROC(fn) { #fn, 0, #fn, (void *)fn },
#define PROC_V(name, since, fn) { name, since, #fn, (void *)fn },
const proc_t emu_graph_driver2_procs[] = {
    PROC(cuGraphNodeGetDependentNodes) PROC_V("cuGraphNodeGetDependentNodes", 12030, cuGraphNodeGetDependentNodes_v2)
    PROC(cuGraphGetEdges) PROC_V("cuGraphGetEdges", 12030, cuGraphGetEdges_v2)
    PROC(cuGraphDestroyNode) PROC(cuGraphMemAllocNodeGetParams) PROC(cuGraphMemFreeNodeGetParams)
    PROC(cuDeviceGetGraphMemAttribute) PROC(cuDeviceSetGraphMemAttribute) PROC(cuDeviceGraphMemTrim)
    PROC(cuIpcGetEventHandle) PROC(cuIpcOpenEventHandle)
    PROC(cuGraphAddNode) PROC_V("cuGraphAddNode", 12030, cuGraphAddNode_v2)
    PROC(cuGraphGetRootNodes) PROC(cuGraphNodeGetContainingGraph) PROC(cuGraphGetId)
    PROC(cuGraphEventRecordNodeGetEvent) PROC(cuGraphEventRecordNodeSetEvent) PROC(cuGraphEventWaitNodeGetEvent)
    PROC(cuGraphEventWaitNodeSetEvent) PROC(cuGraphHostNodeGetParams) PROC(cuGraphHostNodeSetParams)
    PROC(cuGraphMemsetNodeGetParams) PROC(cuGraphRemoveDependencies)
    PROC_V("cuGraphRemoveDependencies", 12030, cuGraphRemoveDependencies_v2) PROC(cuGraphNodeGetParams)
    PROC(cuGraphConditionalHandleCreate) PROC(cuGraphAddChildGraphNode) PROC(cuGraphChildGraphNodeGetGraph)
    PROC(cuGraphExecChildGraphNodeSetParams) PROC(cuGraphExecGetFlags) PROC(cuGraphNodeSetEnabled)
    PROC(cuGraphNodeGetEnabled) PROC(cuGraphExecHostNodeSetParams) PROC(cuGraphExecEventRecordNodeSetEvent)
    PROC(cuGraphExecEventWaitNodeSetEvent) PROC(cuGraphMemsetNodeSetParams) PROC(cuGraphExecMemsetNodeSetParams)
    PROC(cuGraphNodeSetParams) PROC(cuGraphExecNodeSetParams) PROC(cuGraphMemcpyNodeSetParams)
    PROC(cuGraphExecMemcpyNodeSetParams) PROC(cuGraphMemcpyNodeGetParams)
};
const size_t emu_graph_driver2_nprocs = sizeof emu_graph_driver2_procs / sizeof *emu_graph_driver2_procs;
