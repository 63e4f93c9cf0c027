/* The driver API's stream capture and graphs in the libcuda.so.1 stand-in: thin layers over the emulated
 * runtime's (emu_capture.c, emu_graph.c), whose error codes have the same values as CUresult's here
 * (1, 2, 400, 401, 900-908).  As every driver entry point, they keep the runtime's last error as it was
 * and have a fault hook by name (EMU_GRAPH_DRIVER_SYMBOLS, emu_internal.h).  cuGetProcAddress finds them
 * through emu_graph_driver_proc (asked by emu_driver.c's table when it has no entry of the name), in the
 * per-thread-default-stream flavour too (_ptsz: stream 0 is the calling thread's default stream). */
#include <stdint.h>
#include <string.h>

#include "emu_internal.h"

#define EXPORT __attribute__((visibility("default")))

typedef int CUresult;
typedef void *CUstream;
typedef void *CUgraph;
typedef void *CUgraphExec;
typedef void *CUgraphNode;
/* CUDA_GRAPH_INSTANTIATE_PARAMS */
typedef struct { unsigned long long flags; CUstream hUploadStream; CUgraphNode hErrNode_out; int result_out; }
    graph_instantiate_params_t;

enum { CUDA_ERROR_INVALID_VALUE = 1, CUDA_ERROR_OUT_OF_MEMORY = 2, CUDA_ERROR_NOT_INITIALIZED = 3,
       CUDA_ERROR_UNKNOWN = 999 };
enum { CUDA_GRAPH_INSTANTIATE_SUCCESS = 0, CUDA_GRAPH_INSTANTIATE_ERROR = 1 };
#define CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD 2ull

int accelEmuDeviceCount(void);
int cudaStreamBeginCapture(void *, int);
int cudaStreamEndCapture(void *, void **);
int cudaStreamGetCaptureInfo(void *, int *, unsigned long long *, void **, const void **, const void **, size_t *);
int cudaThreadExchangeStreamCaptureMode(int *);
int cudaStreamBeginCaptureToGraph(void *, void *, void *const *, const void *, size_t, int);
int cudaStreamUpdateCaptureDependencies(void *, void **, const void *, size_t, unsigned int);
int cudaGraphCreate(void **, unsigned int);
int cudaGraphDestroy(void *);
int cudaGraphGetNodes(void *, void **, size_t *);
int cudaGraphNodeGetType(void *, int *);
int cudaGraphAddEmptyNode(void **, void *, void *const *, size_t);
int cudaGraphDebugDotPrint(void *, const char *, unsigned int);
int cudaGraphInstantiateWithFlags(void **, void *, unsigned long long);
int cudaGraphUpload(void *, void *);
int cudaGraphLaunch(void *, void *);
int cudaGraphExecDestroy(void *);
int cudaGraphAddMemcpyNode(void **, void *, void *const *, size_t, const void *);
int cudaGraphAddMemsetNode(void **, void *, void *const *, size_t, const void *);
int cudaGraphAddHostNode(void **, void *, void *const *, size_t, const void *);
int cudaGraphAddEventRecordNode(void **, void *, void *const *, size_t, void *);
int cudaGraphAddEventWaitNode(void **, void *, void *const *, size_t, void *);
int cudaGraphAddMemAllocNode(void **, void *, void *const *, size_t, void *);
int cudaGraphAddMemFreeNode(void **, void *, void *const *, size_t, void *);
int cudaGraphAddDependencies(void *, void *const *, void *const *, const void *, size_t);
int cudaGraphNodeGetDependencies(void *, void **, void *, size_t *);
int cudaGraphClone(void **, void *);
int cudaGraphNodeFindInClone(void **, void *, void *);
int cudaGraphExecUpdate(void *, void *, void *);
int cudaUserObjectCreate(void **, void *, void (*)(void *), unsigned int, unsigned int);
int cudaUserObjectRetain(void *, unsigned int);
int cudaUserObjectRelease(void *, unsigned int);
int cudaGraphRetainUserObject(void *, void *, unsigned int, unsigned int);
int cudaGraphReleaseUserObject(void *, void *, unsigned int);

#define RT(call) __extension__({ int saved_ = t_last; int r_ = (call); t_last = saved_; r_; })
#define DRV_ENTER(sym) do { \
        if (accelEmuDeviceCount() < 0) return CUDA_ERROR_NOT_INITIALIZED; \
        if (EMU_FAULT(sym)) return CUDA_ERROR_UNKNOWN; \
    } while (0)
#define DRV_ENTER_CREATE(sym) do { \
        if (accelEmuDeviceCount() < 0) return CUDA_ERROR_NOT_INITIALIZED; \
        if (EMU_FAULT(sym)) return CUDA_ERROR_OUT_OF_MEMORY; \
    } while (0)

EXPORT CUresult cuStreamBeginCapture_v2(CUstream s, int mode)
{
    DRV_ENTER(cuStreamBeginCapture_v2);
    return RT(cudaStreamBeginCapture(s, mode));
}

/* phGraph may be NULL: the caller already holds the graph (from cuStreamGetCaptureInfo), as cuda.core does. */
EXPORT CUresult cuStreamEndCapture(CUstream s, CUgraph *phGraph)
{
    CUgraph ignored = NULL;
    DRV_ENTER(cuStreamEndCapture);
    return RT(cudaStreamEndCapture(s, phGraph ? phGraph : &ignored));
}

EXPORT CUresult cuStreamGetCaptureInfo_v2(CUstream s, int *status, unsigned long long *id, CUgraph *graph,
                                          const CUgraphNode **deps, size_t *ndeps)
{
    DRV_ENTER(cuStreamGetCaptureInfo_v2);
    return RT(cudaStreamGetCaptureInfo(s, status, id, graph, (const void **)deps, NULL, ndeps));
}

/* CUDA 12.3's _v3 (edge data: none, the emulator's edges have no data), CUDA 13's cuStreamGetCaptureInfo. */
EXPORT CUresult cuStreamGetCaptureInfo_v3(CUstream s, int *status, unsigned long long *id, CUgraph *graph,
                                          const CUgraphNode **deps, const void **edges, size_t *ndeps)
{
    DRV_ENTER(cuStreamGetCaptureInfo_v3);
    return RT(cudaStreamGetCaptureInfo(s, status, id, graph, (const void **)deps, edges, ndeps));
}

EXPORT CUresult cuThreadExchangeStreamCaptureMode(int *mode)
{
    DRV_ENTER(cuThreadExchangeStreamCaptureMode);
    return RT(cudaThreadExchangeStreamCaptureMode(mode));
}

EXPORT CUresult cuGraphCreate(CUgraph *g, unsigned int flags)
{
    DRV_ENTER_CREATE(cuGraphCreate);
    return RT(cudaGraphCreate(g, flags));
}

EXPORT CUresult cuGraphDestroy(CUgraph g)
{
    DRV_ENTER(cuGraphDestroy);
    return RT(cudaGraphDestroy(g));
}

EXPORT CUresult cuGraphGetNodes(CUgraph g, CUgraphNode *nodes, size_t *n)
{
    DRV_ENTER(cuGraphGetNodes);
    return RT(cudaGraphGetNodes(g, nodes, n));
}

EXPORT CUresult cuGraphNodeGetType(CUgraphNode node, int *type)
{
    DRV_ENTER(cuGraphNodeGetType);
    return RT(cudaGraphNodeGetType(node, type));
}

EXPORT CUresult cuGraphAddEmptyNode(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t n)
{
    DRV_ENTER_CREATE(cuGraphAddEmptyNode);
    return RT(cudaGraphAddEmptyNode(node, g, (void *const *)deps, n));
}

EXPORT CUresult cuGraphDebugDotPrint(CUgraph g, const char *path, unsigned int flags)
{
    DRV_ENTER(cuGraphDebugDotPrint);
    return RT(cudaGraphDebugDotPrint(g, path, flags));
}

EXPORT CUresult cuGraphInstantiateWithFlags(CUgraphExec *x, CUgraph g, unsigned long long flags)
{
    DRV_ENTER_CREATE(cuGraphInstantiateWithFlags);
    return RT(cudaGraphInstantiateWithFlags(x, g, flags));
}

/* The parameters' upload stream is used when their flags ask for an upload; result_out says how it went.  A
 * failed upload fails the call: the executable graph is destroyed again (*x untouched). */
EXPORT CUresult cuGraphInstantiateWithParams(CUgraphExec *x, CUgraph g, graph_instantiate_params_t *p)
{
    DRV_ENTER_CREATE(cuGraphInstantiateWithParams);
    if (!p || !x) return CUDA_ERROR_INVALID_VALUE;
    p->hErrNode_out = NULL;
    CUgraphExec made = NULL;
    CUresult r = RT(cudaGraphInstantiateWithFlags(&made, g, p->flags));
    if (!r && (p->flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD)) {
        r = RT(cudaGraphUpload(made, p->hUploadStream));
        if (r) RT(cudaGraphExecDestroy(made));
    }
    if (!r) *x = made;
    p->result_out = r ? CUDA_GRAPH_INSTANTIATE_ERROR : CUDA_GRAPH_INSTANTIATE_SUCCESS;
    return r;
}

EXPORT CUresult cuGraphUpload(CUgraphExec x, CUstream s)
{
    DRV_ENTER(cuGraphUpload);
    return RT(cudaGraphUpload(x, s));
}

EXPORT CUresult cuGraphLaunch(CUgraphExec x, CUstream s)
{
    DRV_ENTER(cuGraphLaunch);
    return RT(cudaGraphLaunch(x, s));
}

EXPORT CUresult cuGraphExecDestroy(CUgraphExec x)
{
    DRV_ENTER(cuGraphExecDestroy);
    return RT(cudaGraphExecDestroy(x));
}

EXPORT CUresult cuUserObjectCreate(void **o, void *ptr, void (*destroy)(void *), unsigned int refs, unsigned int flags)
{
    DRV_ENTER_CREATE(cuUserObjectCreate);
    return RT(cudaUserObjectCreate(o, ptr, destroy, refs, flags));
}

EXPORT CUresult cuUserObjectRetain(void *o, unsigned int count)
{
    DRV_ENTER(cuUserObjectRetain);
    return RT(cudaUserObjectRetain(o, count));
}

EXPORT CUresult cuUserObjectRelease(void *o, unsigned int count)
{
    DRV_ENTER(cuUserObjectRelease);
    return RT(cudaUserObjectRelease(o, count));
}

EXPORT CUresult cuGraphRetainUserObject(CUgraph g, void *o, unsigned int count, unsigned int flags)
{
    DRV_ENTER_CREATE(cuGraphRetainUserObject);
    return RT(cudaGraphRetainUserObject(g, o, count, flags));
}

EXPORT CUresult cuGraphReleaseUserObject(CUgraph g, void *o, unsigned int count)
{
    DRV_ENTER(cuGraphReleaseUserObject);
    return RT(cudaGraphReleaseUserObject(g, o, count));
}

/* CUDA_MEMCPY3D, and the runtime's cudaMemcpy3DParms it becomes (copy kind: cudaMemcpyDefault). */
typedef struct {
    size_t srcXInBytes, srcY, srcZ, srcLOD;
    int srcMemoryType;
    const void *srcHost;
    unsigned long long srcDevice;
    void *srcArray, *reserved0;
    size_t srcPitch, srcHeight;
    size_t dstXInBytes, dstY, dstZ, dstLOD;
    int dstMemoryType;
    void *dstHost;
    unsigned long long dstDevice;
    void *dstArray, *reserved1;
    size_t dstPitch, dstHeight;
    size_t WidthInBytes, Height, Depth;
} drv_memcpy3d_t;
typedef struct {
    void *srcArray;
    size_t srcPos[3];
    void *srcPtr;
    size_t srcPitch, srcXsize, srcYsize;
    void *dstArray;
    size_t dstPos[3];
    void *dstPtr;
    size_t dstPitch, dstXsize, dstYsize;
    size_t extent[3];
    int kind;
} rt_memcpy3d_t;
enum { CU_MEMORYTYPE_HOST = 1, CU_MEMORYTYPE_DEVICE = 2, CU_MEMORYTYPE_ARRAY = 3, CU_MEMORYTYPE_UNIFIED = 4 };

/* A side's pointer by its memory type (host, device, unified); NULL for arrays or an unknown type. */
static void *side(int type, const void *host, unsigned long long dev)
{
    switch (type) {
    case CU_MEMORYTYPE_HOST: return (void *)host;
    case CU_MEMORYTYPE_DEVICE:
    case CU_MEMORYTYPE_UNIFIED: return (void *)(uintptr_t)dev;
    default: return NULL;
    }
}

/* A CUDA_MEMCPY3D as the runtime's cudaMemcpy3DParms (kind cudaMemcpyDefault): -1 for NULL, an array side or a
 * level of detail.  Hidden: also the memcpy node setters (emu_graph_driver2.c, emu_graph_exec.c). */
__attribute__((visibility("hidden")))
int emu_drv_memcpy3d_to_rt(const void *params, void *out)
{
    const drv_memcpy3d_t *p = params;
    if (!p) return -1;
    rt_memcpy3d_t r = { 0 };
    r.srcPtr = side(p->srcMemoryType, p->srcHost, p->srcDevice);
    r.dstPtr = side(p->dstMemoryType, p->dstHost, p->dstDevice);
    if (!r.srcPtr || !r.dstPtr || p->srcLOD || p->dstLOD) return -1;
    r.srcPos[0] = p->srcXInBytes; r.srcPos[1] = p->srcY; r.srcPos[2] = p->srcZ;
    r.dstPos[0] = p->dstXInBytes; r.dstPos[1] = p->dstY; r.dstPos[2] = p->dstZ;
    r.srcPitch = p->srcPitch; r.dstPitch = p->dstPitch;
    r.extent[0] = p->WidthInBytes; r.extent[1] = p->Height; r.extent[2] = p->Depth;
    r.kind = 4;
    memcpy(out, &r, sizeof r);
    return 0;
}

/* Also cuGraphAddNode's memcpy nodes (emu_graph_addnode.c).  Hidden. */
__attribute__((visibility("hidden")))
CUresult emu_drv_add_memcpy_node(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t n, const void *params)
{
    rt_memcpy3d_t r;
    if (emu_drv_memcpy3d_to_rt(params, &r)) return CUDA_ERROR_INVALID_VALUE;
    return RT(cudaGraphAddMemcpyNode(node, g, (void *const *)deps, n, &r));
}

EXPORT CUresult cuGraphAddMemcpyNode(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t n,
                                     const drv_memcpy3d_t *p, void *ctx)
{
    DRV_ENTER_CREATE(cuGraphAddMemcpyNode);
    (void)ctx;
    return emu_drv_add_memcpy_node(node, g, deps, n, p);
}

/* CUDA_MEMSET_NODE_PARAMS and CUDA_HOST_NODE_PARAMS have the runtime's layouts; the context is the node's
 * device's (the emulator's ranges say which). */
EXPORT CUresult cuGraphAddMemsetNode(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t n,
                                     const void *p, void *ctx)
{
    DRV_ENTER_CREATE(cuGraphAddMemsetNode);
    (void)ctx;
    return RT(cudaGraphAddMemsetNode(node, g, (void *const *)deps, n, p));
}

EXPORT CUresult cuGraphAddHostNode(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t n, const void *p)
{
    DRV_ENTER_CREATE(cuGraphAddHostNode);
    return RT(cudaGraphAddHostNode(node, g, (void *const *)deps, n, p));
}

EXPORT CUresult cuGraphAddEventRecordNode(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t n, void *e)
{
    DRV_ENTER_CREATE(cuGraphAddEventRecordNode);
    return RT(cudaGraphAddEventRecordNode(node, g, (void *const *)deps, n, e));
}

EXPORT CUresult cuGraphAddEventWaitNode(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t n, void *e)
{
    DRV_ENTER_CREATE(cuGraphAddEventWaitNode);
    return RT(cudaGraphAddEventWaitNode(node, g, (void *const *)deps, n, e));
}

/* CUDA_MEM_ALLOC_NODE_PARAMS has the runtime's cudaMemAllocNodeParams layout (dptr: a CUdeviceptr). */
EXPORT CUresult cuGraphAddMemAllocNode(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t n, void *p)
{
    DRV_ENTER_CREATE(cuGraphAddMemAllocNode);
    return RT(cudaGraphAddMemAllocNode(node, g, (void *const *)deps, n, p));
}

EXPORT CUresult cuGraphAddMemFreeNode(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t n,
                                      unsigned long long dptr)
{
    DRV_ENTER_CREATE(cuGraphAddMemFreeNode);
    return RT(cudaGraphAddMemFreeNode(node, g, (void *const *)deps, n, (void *)(uintptr_t)dptr));
}

/* _v2 (CUDA 12.3; CUDA 13's plain names): with edge data. */
EXPORT CUresult cuGraphAddDependencies_v2(CUgraph g, const CUgraphNode *from, const CUgraphNode *to,
                                          const void *edges, size_t n)
{
    DRV_ENTER_CREATE(cuGraphAddDependencies);
    return RT(cudaGraphAddDependencies(g, (void *const *)from, (void *const *)to, edges, n));
}

EXPORT CUresult cuGraphAddDependencies(CUgraph g, const CUgraphNode *from, const CUgraphNode *to, size_t n)
{
    return cuGraphAddDependencies_v2(g, from, to, NULL, n);
}

EXPORT CUresult cuGraphNodeGetDependencies_v2(CUgraphNode node, CUgraphNode *deps, void *edges, size_t *n)
{
    DRV_ENTER(cuGraphNodeGetDependencies);
    return RT(cudaGraphNodeGetDependencies(node, deps, edges, n));
}

EXPORT CUresult cuGraphNodeGetDependencies(CUgraphNode node, CUgraphNode *deps, size_t *n)
{
    return cuGraphNodeGetDependencies_v2(node, deps, NULL, n);
}

EXPORT CUresult cuGraphClone(CUgraph *out, CUgraph g)
{
    DRV_ENTER_CREATE(cuGraphClone);
    return RT(cudaGraphClone(out, g));
}

EXPORT CUresult cuGraphNodeFindInClone(CUgraphNode *out, CUgraphNode node, CUgraph clone)
{
    DRV_ENTER(cuGraphNodeFindInClone);
    return RT(cudaGraphNodeFindInClone(out, node, clone));
}

/* CUDA 12's signature (CUgraphExecUpdateResultInfo has the runtime's layout). */
EXPORT CUresult cuGraphExecUpdate_v2(CUgraphExec x, CUgraph g, void *info)
{
    DRV_ENTER(cuGraphExecUpdate_v2);
    return RT(cudaGraphExecUpdate(x, g, info));
}

/* Capture into an existing graph, and the capture's dependencies changed (CUDA 12.0's form without edge data, 12.3's
 * with): emu_capture.c. */
EXPORT CUresult cuStreamBeginCaptureToGraph(CUstream s, CUgraph g, const CUgraphNode *deps, const void *edges, size_t n,
                                            int mode)
{
    DRV_ENTER(cuStreamBeginCaptureToGraph);
    return RT(cudaStreamBeginCaptureToGraph(s, g, (void *const *)deps, edges, n, mode));
}

EXPORT CUresult cuStreamUpdateCaptureDependencies(CUstream s, CUgraphNode *deps, size_t n, unsigned int flags)
{
    DRV_ENTER(cuStreamUpdateCaptureDependencies);
    return RT(cudaStreamUpdateCaptureDependencies(s, deps, NULL, n, flags));
}

EXPORT CUresult cuStreamUpdateCaptureDependencies_v2(CUstream s, CUgraphNode *deps, const void *edges, size_t n,
                                                     unsigned int flags)
{
    DRV_ENTER(cuStreamUpdateCaptureDependencies_v2);
    return RT(cudaStreamUpdateCaptureDependencies(s, deps, edges, n, flags));
}

/* The per-thread default stream variants of the entry points that take a stream. */
static CUstream ptds(CUstream s) { return s ? s : (CUstream)(uintptr_t)2; }
EXPORT CUresult cuStreamBeginCapture_v2_ptsz(CUstream s, int mode) { return cuStreamBeginCapture_v2(ptds(s), mode); }
EXPORT CUresult cuStreamEndCapture_ptsz(CUstream s, CUgraph *g) { return cuStreamEndCapture(ptds(s), g); }
EXPORT CUresult cuStreamGetCaptureInfo_v2_ptsz(CUstream s, int *st, unsigned long long *id, CUgraph *g,
                                               const CUgraphNode **deps, size_t *n)
{
    return cuStreamGetCaptureInfo_v2(ptds(s), st, id, g, deps, n);
}
EXPORT CUresult cuStreamGetCaptureInfo_v3_ptsz(CUstream s, int *st, unsigned long long *id, CUgraph *g,
                                               const CUgraphNode **deps, const void **edges, size_t *n)
{
    return cuStreamGetCaptureInfo_v3(ptds(s), st, id, g, deps, edges, n);
}
EXPORT CUresult cuGraphInstantiateWithParams_ptsz(CUgraphExec *x, CUgraph g, graph_instantiate_params_t *p)
{
    if (p) p->hUploadStream = ptds(p->hUploadStream);
    return cuGraphInstantiateWithParams(x, g, p);
}
EXPORT CUresult cuGraphUpload_ptsz(CUgraphExec x, CUstream s) { return cuGraphUpload(x, ptds(s)); }
EXPORT CUresult cuStreamBeginCaptureToGraph_ptsz(CUstream s, CUgraph g, const CUgraphNode *deps, const void *edges,
                                                 size_t n, int mode)
{
    return cuStreamBeginCaptureToGraph(ptds(s), g, deps, edges, n, mode);
}
EXPORT CUresult cuStreamUpdateCaptureDependencies_ptsz(CUstream s, CUgraphNode *deps, size_t n, unsigned int flags)
{
    return cuStreamUpdateCaptureDependencies(ptds(s), deps, n, flags);
}
EXPORT CUresult cuStreamUpdateCaptureDependencies_v2_ptsz(CUstream s, CUgraphNode *deps, const void *edges, size_t n,
                                                          unsigned int flags)
{
    return cuStreamUpdateCaptureDependencies_v2(ptds(s), deps, edges, n, flags);
}
EXPORT CUresult cuGraphLaunch_ptsz(CUgraphExec x, CUstream s) { return cuGraphLaunch(x, ptds(s)); }

/* cuGetProcAddress's view: the base name, the CUDA version from which it has that ABI, the function and its
 * per-thread-default-stream variant (the function itself when it takes no stream). */
typedef struct { const char *name; int since; void *fn, *ptsz; } graph_proc_t;
#define SAME(fn) (void *)fn, (void *)fn
#define PTSZ(fn) (void *)fn, (void *)fn##_ptsz
static const graph_proc_t graph_procs[] = {
    { "cuStreamBeginCapture", 10010, PTSZ(cuStreamBeginCapture_v2) },
    { "cuStreamEndCapture", 0, PTSZ(cuStreamEndCapture) },
    { "cuStreamGetCaptureInfo", 11030, PTSZ(cuStreamGetCaptureInfo_v2) },
    { "cuStreamGetCaptureInfo", 12030, PTSZ(cuStreamGetCaptureInfo_v3) },
    { "cuStreamBeginCaptureToGraph", 12030, PTSZ(cuStreamBeginCaptureToGraph) },
    { "cuStreamUpdateCaptureDependencies", 11030, PTSZ(cuStreamUpdateCaptureDependencies) },
    { "cuStreamUpdateCaptureDependencies", 12030, PTSZ(cuStreamUpdateCaptureDependencies_v2) },
    { "cuThreadExchangeStreamCaptureMode", 0, SAME(cuThreadExchangeStreamCaptureMode) },
    { "cuGraphCreate", 0, SAME(cuGraphCreate) },
    { "cuGraphDestroy", 0, SAME(cuGraphDestroy) },
    { "cuGraphGetNodes", 0, SAME(cuGraphGetNodes) },
    { "cuGraphNodeGetType", 0, SAME(cuGraphNodeGetType) },
    { "cuGraphAddEmptyNode", 0, SAME(cuGraphAddEmptyNode) },
    { "cuGraphDebugDotPrint", 0, SAME(cuGraphDebugDotPrint) },
    { "cuGraphInstantiate", 12000, SAME(cuGraphInstantiateWithFlags) },
    { "cuGraphInstantiateWithFlags", 0, SAME(cuGraphInstantiateWithFlags) },
    { "cuGraphInstantiateWithParams", 0, PTSZ(cuGraphInstantiateWithParams) },
    { "cuGraphUpload", 0, PTSZ(cuGraphUpload) },
    { "cuGraphLaunch", 0, PTSZ(cuGraphLaunch) },
    { "cuGraphExecDestroy", 0, SAME(cuGraphExecDestroy) },
    { "cuGraphAddMemcpyNode", 0, SAME(cuGraphAddMemcpyNode) },
    { "cuGraphAddMemsetNode", 0, SAME(cuGraphAddMemsetNode) },
    { "cuGraphAddHostNode", 0, SAME(cuGraphAddHostNode) },
    { "cuGraphAddEventRecordNode", 0, SAME(cuGraphAddEventRecordNode) },
    { "cuGraphAddEventWaitNode", 0, SAME(cuGraphAddEventWaitNode) },
    { "cuGraphAddMemAllocNode", 0, SAME(cuGraphAddMemAllocNode) },
    { "cuGraphAddMemFreeNode", 0, SAME(cuGraphAddMemFreeNode) },
    { "cuGraphAddDependencies", 0, SAME(cuGraphAddDependencies) },
    { "cuGraphAddDependencies", 12030, SAME(cuGraphAddDependencies_v2) },
    { "cuGraphNodeGetDependencies", 0, SAME(cuGraphNodeGetDependencies) },
    { "cuGraphNodeGetDependencies", 12030, SAME(cuGraphNodeGetDependencies_v2) },
    { "cuGraphClone", 0, SAME(cuGraphClone) },
    { "cuGraphNodeFindInClone", 0, SAME(cuGraphNodeFindInClone) },
    { "cuGraphExecUpdate", 12000, SAME(cuGraphExecUpdate_v2) },
    { "cuUserObjectCreate", 0, SAME(cuUserObjectCreate) },
    { "cuUserObjectRetain", 0, SAME(cuUserObjectRetain) },
    { "cuUserObjectRelease", 0, SAME(cuUserObjectRelease) },
    { "cuGraphRetainUserObject", 0, SAME(cuGraphRetainUserObject) },
    { "cuGraphReleaseUserObject", 0, SAME(cuGraphReleaseUserObject) },
};

void *emu_graph_driver_proc(const char *name, size_t len, int version, int per_thread)
{
    const graph_proc_t *best = NULL;
    for (size_t i = 0; i < sizeof graph_procs / sizeof *graph_procs; i++)
        if (strlen(graph_procs[i].name) == len && !memcmp(graph_procs[i].name, name, len) &&
            graph_procs[i].since <= version &&
            (!best || graph_procs[i].since > best->since))
            best = &graph_procs[i];
    return !best ? NULL : per_thread ? best->ptsz : best->fn;
}
