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

/* The parameters' upload stream is used when their flags ask for an upload; result_out says how it went. */
EXPORT CUresult cuGraphInstantiateWithParams(CUgraphExec *x, CUgraph g, graph_instantiate_params_t *p)
{
    DRV_ENTER_CREATE(cuGraphInstantiateWithParams);
    if (!p) return CUDA_ERROR_INVALID_VALUE;
    p->hErrNode_out = NULL;
    CUresult r = RT(cudaGraphInstantiateWithFlags(x, g, p->flags));
    if (!r && (p->flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD)) r = RT(cudaGraphUpload(*x, p->hUploadStream));
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
