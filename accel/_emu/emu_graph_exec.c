/* What can change in an executable graph without cudaGraphExecUpdate (issue 33): its flags, nodes enabled or
 * disabled (kernel, memcpy and memset nodes, as CUDA documents; a disabled node runs as an empty one), and the
 * parameters of its host, memset and event record / wait nodes (also through the generic cudaGraphExecNodeSetParams);
 * and a memset node's parameters in its graph (cudaGraphMemsetNodeSetParams, cudaGraphNodeSetParams).
 * Launches already queued keep what they were given.  The driver's forms are in emu_graph_driver2.c.
 *
 * The node is named by its handle in the graph the executable graph was instantiated from (nodes of child graphs
 * and bodies are not reachable this way); a node of another graph, or of another kind, is cudaErrorInvalidValue. */
#include "emu_graph.h"

typedef struct { cudaHostFn_t fn; void *userData; } host_params_t;     /* cudaHostNodeParams */

/* x's copy of graph node nh, if nh is a node of x's graph of one of `types` (a bit per node type).  G held. */
static gnode_t *exec_node(cudaGraphExec_t xh, cudaGraphNode_t nh, unsigned types, cudaError_t *err)
{
    gexec_t *x = get_exec(xh);
    gnode_t *nd = get_node(nh);
    *err = cudaErrorInvalidValue;
    if (!x || !nd || nd->g->id != x->graph_id || !(types & (1u << nd->type))) return NULL;
    for (size_t i = 0; i < x->n; i++)
        if (x->nodes[i].idx == nd->idx && x->nodes[i].type == nd->type) {
            *err = cudaSuccess;
            return &x->nodes[i];
        }
    return NULL;
}

EXPORT cudaError_t cudaGraphExecGetFlags(cudaGraphExec_t xh, unsigned long long *flags)
{
    RT_ENTER(cudaGraphExecGetFlags, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (!flags) return fail(cudaErrorInvalidValue);
    pthread_mutex_lock(&G);
    gexec_t *x = get_exec(xh);
    if (x) *flags = x->flags;
    pthread_mutex_unlock(&G);
    return x ? cudaSuccess : fail(cudaErrorInvalidValue);
}

#define ENABLE_TYPES ((1u << GN_KERNEL) | (1u << GN_MEMCPY) | (1u << GN_MEMSET))

EXPORT cudaError_t cudaGraphNodeSetEnabled(cudaGraphExec_t xh, cudaGraphNode_t nh, unsigned int enabled)
{
    RT_ENTER(cudaGraphNodeSetEnabled, cudaErrorUnknown);
    RT_NEED_DEVICE();
    cudaError_t err;
    pthread_mutex_lock(&G);
    gnode_t *nd = exec_node(xh, nh, ENABLE_TYPES, &err);
    if (nd) nd->disabled = !enabled;
    pthread_mutex_unlock(&G);
    return err ? fail(err) : cudaSuccess;
}

EXPORT cudaError_t cudaGraphNodeGetEnabled(cudaGraphExec_t xh, cudaGraphNode_t nh, unsigned int *enabled)
{
    RT_ENTER(cudaGraphNodeGetEnabled, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (!enabled) return fail(cudaErrorInvalidValue);
    cudaError_t err;
    pthread_mutex_lock(&G);
    gnode_t *nd = exec_node(xh, nh, ENABLE_TYPES, &err);
    if (nd) *enabled = !nd->disabled;
    pthread_mutex_unlock(&G);
    return err ? fail(err) : cudaSuccess;
}

EXPORT cudaError_t cudaGraphExecHostNodeSetParams(cudaGraphExec_t xh, cudaGraphNode_t nh, const host_params_t *p)
{
    RT_ENTER(cudaGraphExecHostNodeSetParams, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (!p || !p->fn) return fail(cudaErrorInvalidValue);
    cudaError_t err;
    pthread_mutex_lock(&G);
    gnode_t *nd = exec_node(xh, nh, 1u << GN_HOST, &err);
    if (nd) {
        nd->fn = p->fn;
        nd->arg = p->userData;
    }
    pthread_mutex_unlock(&G);
    return err ? fail(err) : cudaSuccess;
}

static cudaError_t exec_event_set(cudaGraphExec_t xh, cudaGraphNode_t nh, int type, cudaEvent_t eh)
{
    cudaError_t err;
    pthread_mutex_lock(&G);
    gnode_t *nd = exec_node(xh, nh, 1u << type, &err);
    event_t *e = nd ? get_event(eh) : NULL;
    if (nd && !e) err = cudaErrorInvalidResourceHandle;
    if (e) nd->event = e->handle;
    pthread_mutex_unlock(&G);
    return err;
}

EXPORT cudaError_t cudaGraphExecEventRecordNodeSetEvent(cudaGraphExec_t xh, cudaGraphNode_t nh, cudaEvent_t e)
{
    RT_ENTER(cudaGraphExecEventRecordNodeSetEvent, cudaErrorUnknown);
    RT_NEED_DEVICE();
    cudaError_t err = exec_event_set(xh, nh, GN_EVENT_RECORD, e);
    return err ? fail(err) : cudaSuccess;
}

EXPORT cudaError_t cudaGraphExecEventWaitNodeSetEvent(cudaGraphExec_t xh, cudaGraphNode_t nh, cudaEvent_t e)
{
    RT_ENTER(cudaGraphExecEventWaitNodeSetEvent, cudaErrorUnknown);
    RT_NEED_DEVICE();
    cudaError_t err = exec_event_set(xh, nh, GN_WAIT_EVENT, e);
    return err ? fail(err) : cudaSuccess;
}

/* The memset parameters of template t into node nd (its kind's fields only). */
static void memset_into(gnode_t *nd, const gnode_t *t)
{
    nd->dst = t->dst;
    nd->value = t->value;
    nd->n = t->n;
    nd->elem = t->elem;
    nd->rows = t->rows;
    nd->dpitch = t->dpitch;
    nd->dev_dst = t->dev_dst;
    nd->id_dst = t->id_dst;
}

/* A memset node of a graph (exec NULL) or of an executable graph takes new parameters, checked as
 * cudaGraphAddMemsetNode checks them.  No error recorded.  Hidden: cuGraphMemsetNodeSetParams,
 * cuGraphExecMemsetNodeSetParams. */
cudaError_t emu_graph_memset_set(cudaGraphExec_t xh, cudaGraphNode_t nh, const void *p)
{
    cudaError_t err;
    gnode_t t = { 0 };
    pthread_mutex_lock(&G);
    gnode_t *nd = xh ? exec_node(xh, nh, 1u << GN_MEMSET, &err) : get_node(nh);
    if (!xh) err = nd && nd->type == GN_MEMSET && !nd->g->capturing ? cudaSuccess : cudaErrorInvalidValue;
    if (!err) err = emu_graph_fill_memset(&t, p);
    if (!err) memset_into(nd, &t);
    pthread_mutex_unlock(&G);
    return err;
}

/* A memcpy node of a graph (exec NULL) or of an executable graph takes new parameters (a cudaMemcpy3DParms),
 * checked as cudaGraphAddMemcpyNode checks them.  No error recorded.  Hidden: the driver's forms convert their
 * CUDA_MEMCPY3D first (emu_graph_driver.c). */
cudaError_t emu_graph_memcpy_set(cudaGraphExec_t xh, cudaGraphNode_t nh, const void *p)
{
    cudaError_t err;
    gnode_t t = { 0 };
    pthread_mutex_lock(&G);
    gnode_t *nd = xh ? exec_node(xh, nh, 1u << GN_MEMCPY, &err) : get_node(nh);
    if (!xh) err = nd && nd->type == GN_MEMCPY && !nd->g->capturing ? cudaSuccess : cudaErrorInvalidValue;
    if (!err) err = emu_graph_fill_copy3d(&t, p);
    if (!err) {
        nd->dst = t.dst;
        nd->src = t.src;
        nd->n = t.n;
        nd->rows = t.rows;
        nd->dpitch = t.dpitch;
        nd->spitch = t.spitch;
        nd->dev_dst = t.dev_dst;
        nd->dev_src = t.dev_src;
        nd->id_dst = t.id_dst;
        nd->id_src = t.id_src;
    }
    pthread_mutex_unlock(&G);
    return err;
}

EXPORT cudaError_t cudaGraphMemcpyNodeSetParams(cudaGraphNode_t nh, const void *p)
{
    RT_ENTER(cudaGraphMemcpyNodeSetParams, cudaErrorUnknown);
    RT_NEED_DEVICE();
    cudaError_t err = emu_graph_memcpy_set(NULL, nh, p);
    return err ? fail(err) : cudaSuccess;
}

EXPORT cudaError_t cudaGraphExecMemcpyNodeSetParams(cudaGraphExec_t xh, cudaGraphNode_t nh, const void *p)
{
    RT_ENTER(cudaGraphExecMemcpyNodeSetParams, cudaErrorUnknown);
    RT_NEED_DEVICE();
    cudaError_t err = xh ? emu_graph_memcpy_set(xh, nh, p) : cudaErrorInvalidValue;
    return err ? fail(err) : cudaSuccess;
}

/* A memcpy node's parameters as cudaGraphNodeGetParams gives them (a cudaMemcpy3DParms; driver: CUDA_MEMCPY3D). */
cudaError_t emu_graph_node_params(cudaGraphNode_t nh, void *params, int driver);
cudaError_t emu_graph_memcpy_get(cudaGraphNode_t nh, void *p, int driver)
{
    if (!p) return cudaErrorInvalidValue;
    unsigned char b[256];
    pthread_mutex_lock(&G);
    gnode_t *nd = get_node(nh);
    int ok = nd && nd->type == GN_MEMCPY;
    pthread_mutex_unlock(&G);
    if (!ok) return cudaErrorInvalidValue;
    cudaError_t err = emu_graph_node_params(nh, b, driver);
    if (!err) memcpy(p, b + 32, driver ? 25 * sizeof(size_t) : 20 * sizeof(size_t));
    return err;
}

EXPORT cudaError_t cudaGraphMemcpyNodeGetParams(cudaGraphNode_t nh, void *p)
{
    RT_ENTER(cudaGraphMemcpyNodeGetParams, cudaErrorUnknown);
    RT_NEED_DEVICE();
    cudaError_t err = emu_graph_memcpy_get(nh, p, 0);
    return err ? fail(err) : cudaSuccess;
}

EXPORT cudaError_t cudaGraphMemsetNodeSetParams(cudaGraphNode_t nh, const void *p)
{
    RT_ENTER(cudaGraphMemsetNodeSetParams, cudaErrorUnknown);
    RT_NEED_DEVICE();
    cudaError_t err = emu_graph_memset_set(NULL, nh, p);
    return err ? fail(err) : cudaSuccess;
}

EXPORT cudaError_t cudaGraphExecMemsetNodeSetParams(cudaGraphExec_t xh, cudaGraphNode_t nh, const void *p)
{
    RT_ENTER(cudaGraphExecMemsetNodeSetParams, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (!xh) return fail(cudaErrorInvalidValue);
    cudaError_t err = emu_graph_memset_set(xh, nh, p);
    return err ? fail(err) : cudaSuccess;
}

cudaError_t emu_graph_node_set_params_as(cudaGraphExec_t xh, cudaGraphNode_t nh, const void *params,
                                         int (*to_rt)(const void *, void *));

/* cudaGraphNodeSetParams / cudaGraphExecNodeSetParams (cudaGraphNodeParams, CUgraphNodeParams: the type, then the
 * kind's parameters at byte 16): host, memset, memcpy and event nodes, of a graph (exec NULL) or an executable graph;
 * the type must be the node's (cudaErrorInvalidValue), other kinds are cudaErrorNotSupported.  No error
 * recorded.  Hidden: the driver's forms. */
cudaError_t emu_graph_node_set_params(cudaGraphExec_t xh, cudaGraphNode_t nh, const void *params)
{
    return emu_graph_node_set_params_as(xh, nh, params, NULL);
}

/* The same with the driver's memcpy parameters converted by to_rt (CUDA_MEMCPY3D -> cudaMemcpy3DParms). */
cudaError_t emu_graph_node_set_params_as(cudaGraphExec_t xh, cudaGraphNode_t nh, const void *params,
                                         int (*to_rt)(const void *, void *))
{
    if (!params) return cudaErrorInvalidValue;
    const unsigned char *b = params, *u = b + 16;
    int type;
    memcpy(&type, b, sizeof type);
    cudaError_t err = cudaSuccess;
    pthread_mutex_lock(&G);
    gnode_t *nd = get_node(nh);
    if (!nd || nd->type != type) err = cudaErrorInvalidValue;
    else if (type != GN_MEMSET && type != GN_MEMCPY && type != GN_HOST && type != GN_EVENT_RECORD &&
             type != GN_WAIT_EVENT)
        err = cudaErrorNotSupported;
    pthread_mutex_unlock(&G);
    if (err) return err;
    if (type == GN_MEMSET) return emu_graph_memset_set(xh, nh, u);
    if (type == GN_MEMCPY) {        /* flags and reserved words first (0), then the copy at u + 16 */
        int head[4];
        memcpy(head, u, sizeof head);
        if (head[0] || head[1] || (!to_rt && (head[2] || head[3]))) return cudaErrorInvalidValue;
        unsigned char rtp[20 * sizeof(size_t)];
        if (to_rt && to_rt(u + 16, rtp)) return cudaErrorInvalidValue;
        return emu_graph_memcpy_set(xh, nh, to_rt ? rtp : u + 16);
    }
    pthread_mutex_lock(&G);
    gnode_t *target = xh ? exec_node(xh, nh, 1u << type, &err) : (nd = get_node(nh)) && !nd->g->capturing ? nd : NULL;
    if (!target && !err) err = cudaErrorInvalidValue;
    if (!err && type == GN_HOST) {
        const host_params_t *h = (const host_params_t *)(const void *)u;
        if (!h->fn) err = cudaErrorInvalidValue;
        else {
            target->fn = h->fn;
            target->arg = h->userData;
        }
    } else if (!err) {
        cudaEvent_t eh;
        memcpy(&eh, u, sizeof eh);
        event_t *e = get_event(eh);
        if (!e) err = cudaErrorInvalidResourceHandle;
        else target->event = e->handle;
    }
    pthread_mutex_unlock(&G);
    return err;
}

EXPORT cudaError_t cudaGraphNodeSetParams(cudaGraphNode_t nh, void *params)
{
    RT_ENTER(cudaGraphNodeSetParams, cudaErrorUnknown);
    RT_NEED_DEVICE();
    cudaError_t err = emu_graph_node_set_params(NULL, nh, params);
    return err ? fail(err) : cudaSuccess;
}

EXPORT cudaError_t cudaGraphExecNodeSetParams(cudaGraphExec_t xh, cudaGraphNode_t nh, void *params)
{
    RT_ENTER(cudaGraphExecNodeSetParams, cudaErrorUnknown);
    RT_NEED_DEVICE();
    cudaError_t err = xh ? emu_graph_node_set_params(xh, nh, params) : cudaErrorInvalidValue;
    return err ? fail(err) : cudaSuccess;
}
