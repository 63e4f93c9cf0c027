/* Child-graph and conditional nodes of the emulated runtime's graphs (CUDA 12.3+'s IF / WHILE / SWITCH), and
 * conditional handles (issue 33).  Shared types: emu_graph.h; the driver's entry points: emu_graph_driver2.c.
 *
 * A child-graph node owns a copy of the graph it was made with (or the graph itself, moved in by
 * cudaGraphAddNode's CU_GRAPH_CHILD_GRAPH_OWNERSHIP_MOVE); a conditional node owns the body graphs it made (as many
 * as its size says), which the user fills through phGraph_out.  Those graphs are the node's: cudaGraphDestroy of
 * one, instantiating one alone, and memory nodes in one are cudaErrorInvalidValue.  Instantiation makes one
 * executable graph of each body (sub_t, shared with the launches in flight): a child graph's nodes run inline, in
 * its order, among the launch's items; a conditional node is one item that, when the stream reaches it, reads its
 * handle's value and runs the chosen body's items on the stream's worker, in order (IF: body 0 when nonzero, body 1
 * when zero and there is one; WHILE: body 0 again while nonzero; SWITCH: body n when the value is n < size).
 *
 * A conditional handle's value is set by a kernel (cudaGraphSetConditional in device code, PTX's
 * `call cudaGraphSetConditional`), by the host through accelEmuGraphSetConditional (the emulator's own, for a host
 * node before the conditional node: CUDA has no host-side setter), and at each launch's start to its default when
 * made with CU_GRAPH_COND_ASSIGN_DEFAULT (a handle made without keeps its value from launch to launch; it starts as
 * the default).
 *
 * Documented choices:
 *  - A handle has one value, shared by every executable graph of its graph (CUDA keeps one per executable graph).
 *  - Bodies may hold kernel, empty, memcpy, memset, child-graph and conditional nodes (recursively through child
 *    graphs), as CUDA documents; another kind in one is cudaErrorNotSupported at instantiation.  Nesting deeper than
 *    GRAPH_NEST_MAX (32) levels of child graphs and bodies is cudaErrorInvalidValue at instantiation.
 *  - cudaGraphClone of a graph with conditional nodes is cudaErrorNotSupported (their handles are the original's),
 *    and so is a child graph holding one (cudaGraphAddChildGraphNode: cudaErrorInvalidValue, as CUDA documents).
 *  - A body whose copy or memset touches memory freed since it was added stops running there (nothing more of that
 *    conditional node runs); CUDA would fault the launch.
 */
#include <sched.h>

#include "emu_graph.h"

/* --------------------------------------------------------------- handles */

static int g_live_conds;

/* Conditional handles not yet freed, for leak tests (accelEmuLiveGraphs' companion). */
EXPORT int accelEmuLiveConditionalHandles(void)
{
    pthread_mutex_lock(&G);
    int n = g_live_conds;
    pthread_mutex_unlock(&G);
    return n;
}

cond_t *get_cond(uint64_t h)
{
    return (h & TAG_MASK) == TAG_COND ? ht_get(&g_handles, h) : NULL;
}

static void cond_unref(cond_t *c)
{
    if (!c || --c->refs) return;
    ht_del(&g_handles, c->handle);
    free(c);
    g_live_conds--;
}

void graph_conds_free(graph_t *g)
{
    for (size_t i = 0; i < g->nconds; i++) cond_unref(g->conds[i]);
    free(g->conds);
    g->conds = NULL;
    g->nconds = g->capconds = 0;
}

/* cudaGraphConditionalHandleCreate / cuGraphConditionalHandleCreate (no error recorded).  Hidden. */
cudaError_t emu_graph_cond_create(unsigned long long *out, cudaGraph_t gh, unsigned deflt, unsigned flags)
{
    if (!out || (flags & ~COND_ASSIGN_DEFAULT)) return cudaErrorInvalidValue;
    cudaError_t err = cudaSuccess;
    pthread_mutex_lock(&G);
    graph_t *g = get_graph(gh);
    cond_t *c = NULL;
    if (!g) err = cudaErrorInvalidValue;
    else if (g->nconds == g->capconds) {
        size_t nc = g->capconds ? g->capconds * 2 : 4;
        cond_t **v = realloc(g->conds, nc * sizeof *v);
        if (!v) err = cudaErrorMemoryAllocation;
        else { g->conds = v; g->capconds = nc; }
    }
    if (!err && !(c = calloc(1, sizeof *c))) err = cudaErrorMemoryAllocation;
    if (!err) {
        uint64_t id;
        c->handle = new_handle(TAG_COND, &id);
        if (ht_put(&g_handles, c->handle, c)) err = cudaErrorMemoryAllocation;
    }
    if (!err) {
        c->graph_id = g->id;
        c->value = c->deflt = deflt;
        c->flags = flags;
        c->refs = 1;                /* the graph's */
        g->conds[g->nconds++] = c;
        g_live_conds++;
        *out = c->handle;
    } else {
        free(c);
    }
    pthread_mutex_unlock(&G);
    return err;
}

/* The emulator's host-side setter (a host node's function may call it): 0, or 1 for a handle that is not live. */
EXPORT int accelEmuGraphSetConditional(unsigned long long handle, unsigned int value)
{
    pthread_mutex_lock(&G);
    cond_t *c = get_cond(handle);
    if (c) c->value = value;
    pthread_mutex_unlock(&G);
    return c ? 0 : 1;
}

/* The device-side setter: the PTX engine's `call cudaGraphSetConditional` (G not held; an unknown handle is
 * ignored, as CUDA leaves it undefined). */
void emu_graph_set_conditional(unsigned long long handle, unsigned int value)
{
    (void)accelEmuGraphSetConditional(handle, value);
}

/* ------------------------------------------------------------ node bodies */

void sub_unref(sub_t *sb)
{
    if (!sb || --sb->refs) return;
    for (size_t i = 0; i < sb->n; i++)
        if (sb->x[i]) {
            exec_nodes_free(sb->x[i]);
            free(sb->x[i]->nodes);
            free(sb->x[i]);
        }
    cond_unref(sb->c);
    free(sb);
}

void node_bodies_free(gnode_t *nd)
{
    for (size_t i = 0; i < nd->nbody; i++)
        if (nd->body[i]) {
            nd->body[i]->owner = NULL;
            graph_free(nd->body[i]);
        }
    free(nd->body);
    free(nd->bodyh);
    nd->body = NULL;
    nd->bodyh = NULL;
    nd->nbody = 0;
    cond_unref(nd->cond);
    nd->cond = NULL;
    sub_unref(nd->sub);
    nd->sub = NULL;
}

void exec_nodes_free(gexec_t *x)
{
    for (size_t i = 0; i < x->n; i++) {
        emu_launch_unref_locked(x->nodes[i].launch);
        x->nodes[i].launch = NULL;
        sub_unref(x->nodes[i].sub);
        x->nodes[i].sub = NULL;
    }
}

/* Room for n bodies of nd (none owned yet): -1 when out of memory. */
static int bodies_alloc(gnode_t *nd, size_t n)
{
    nd->body = calloc(n, sizeof *nd->body);
    nd->bodyh = calloc(n, sizeof *nd->bodyh);
    if (!nd->body || !nd->bodyh) {
        free(nd->body);
        free(nd->bodyh);
        nd->body = NULL;
        nd->bodyh = NULL;
        return -1;
    }
    return 0;
}

static void body_set(gnode_t *nd, size_t i, graph_t *b)
{
    nd->body[i] = b;
    nd->bodyh[i] = (void *)(uintptr_t)b->handle;
    b->owner = nd;
    if (i >= nd->nbody) nd->nbody = i + 1;
}

cudaError_t graph_clone_bodies(gnode_t *dst, const gnode_t *src)
{
    if (bodies_alloc(dst, src->nbody)) return cudaErrorMemoryAllocation;
    cudaError_t err = cudaSuccess;
    for (size_t i = 0; i < src->nbody && !err; i++) {
        graph_t *b = graph_copy(src->body[i], &err);
        if (b) body_set(dst, i, b);
    }
    return err;
}

/* g holds memory or conditional nodes, itself or in a child graph. */
static int has_mem_or_cond(const graph_t *g)
{
    for (size_t i = 0; i < g->n; i++) {
        const gnode_t *nd = g->nodes[i];
        if (nd->type == GN_MEM_ALLOC || nd->type == GN_MEM_FREE || nd->type == GN_COND) return 1;
        if (nd->type == GN_GRAPH && has_mem_or_cond(nd->body[0])) return 1;
    }
    return 0;
}

/* g is an ancestor of (or is) graph h: h is one of its nodes' bodies, at any depth. */
static int encloses(const graph_t *g, const graph_t *h)
{
    for (; h; h = h->owner ? h->owner->g : NULL)
        if (h == g) return 1;
    return 0;
}

/* Child-graph nodes: cudaGraphAddChildGraphNode (ownership 0: a copy) and cudaGraphAddNode's (1: moved in).
 * No error recorded.  Hidden. */
cudaError_t emu_graph_add_child(cudaGraphNode_t *out, cudaGraph_t gh, const cudaGraphNode_t *deps, size_t n,
                                cudaGraph_t ch, int ownership)
{
    if (!out || (n && !deps) || (ownership != 0 && ownership != 1)) return cudaErrorInvalidValue;
    uint32_t *idx = n ? malloc(n * sizeof *idx) : NULL;
    if (n && !idx) return cudaErrorMemoryAllocation;
    cudaError_t err = cudaSuccess;
    pthread_mutex_lock(&G);
    graph_t *g = get_graph(gh), *c = get_graph(ch), *b = NULL;
    if (!g || !c || c->capturing || has_mem_or_cond(c)) err = cudaErrorInvalidValue;
    else if (ownership == 1 && (c->owner || encloses(c, g) || c->mem->execs)) err = cudaErrorInvalidValue;
    if (!err) err = resolve_deps(g, deps, n, idx);
    if (!err) b = ownership ? c : graph_copy(c, &err);
    gnode_t *nd = NULL;
    if (!err && (!(nd = graph_add(g, GN_GRAPH, idx, n)) || bodies_alloc(nd, 1))) {
        err = cudaErrorMemoryAllocation;
        if (nd) {               /* the last node added: taken back */
            g->n--;
            ht_del(&g_handles, nd->handle);
            free(nd->deps);
            free(nd);
        }
    }
    if (!err) {
        body_set(nd, 0, b);
        *out = (cudaGraphNode_t)(uintptr_t)nd->handle;
    } else if (b && !ownership) {
        graph_free(b);
    }
    pthread_mutex_unlock(&G);
    free(idx);
    return err;
}

/* CUDA_CONDITIONAL_NODE_PARAMS / cudaConditionalNodeParams (the same layout). */
typedef struct { unsigned long long handle; int type; unsigned size; void **phGraph_out; void *ctx; } cond_params_t;

/* Conditional nodes (cudaGraphAddNode / cuGraphAddNode): their bodies made, phGraph_out set.  Hidden. */
cudaError_t emu_graph_add_cond(cudaGraphNode_t *out, cudaGraph_t gh, const cudaGraphNode_t *deps, size_t n, void *params)
{
    cond_params_t *p = params;
    if (!out || (n && !deps)) return cudaErrorInvalidValue;
    if (p->type < COND_IF || p->type > COND_SWITCH || !p->size ||
        (p->type == COND_WHILE && p->size != 1) || (p->type == COND_IF && p->size > 2))
        return cudaErrorInvalidValue;
    uint32_t *idx = n ? malloc(n * sizeof *idx) : NULL;
    if (n && !idx) return cudaErrorMemoryAllocation;
    cudaError_t err = cudaSuccess;
    pthread_mutex_lock(&G);
    graph_t *g = get_graph(gh);
    cond_t *c = get_cond(p->handle);
    if (!g || !c || c->graph_id != g->id) err = cudaErrorInvalidValue;
    if (!err) err = resolve_deps(g, deps, n, idx);
    gnode_t *nd = NULL;
    if (!err && (!(nd = graph_add(g, GN_COND, idx, n)) || bodies_alloc(nd, p->size))) err = cudaErrorMemoryAllocation;
    for (size_t i = 0; !err && i < p->size; i++) {
        graph_t *b = graph_new(g->device);
        if (b) body_set(nd, i, b);
        else err = cudaErrorMemoryAllocation;
    }
    if (!err) {
        nd->cond = c;
        c->refs++;
        nd->ctype = p->type;
        p->phGraph_out = nd->bodyh;
        *out = (cudaGraphNode_t)(uintptr_t)nd->handle;
    } else if (nd) {            /* the last node added: taken back with the bodies made */
        g->n--;
        ht_del(&g_handles, nd->handle);
        node_bodies_free(nd);
        free(nd->deps);
        free(nd);
    }
    pthread_mutex_unlock(&G);
    free(idx);
    return err;
}

/* cudaGraphChildGraphNodeGetGraph (no error recorded).  Hidden. */
cudaError_t emu_graph_child_get(cudaGraphNode_t nh, cudaGraph_t *out)
{
    if (!out) return cudaErrorInvalidValue;
    pthread_mutex_lock(&G);
    gnode_t *nd = get_node(nh);
    int ok = nd && nd->type == GN_GRAPH;
    if (ok) *out = nd->bodyh[0];
    pthread_mutex_unlock(&G);
    return ok ? cudaSuccess : cudaErrorInvalidValue;
}

/* ------------------------------------------------------- executable bodies */

/* g's nodes may be a conditional body's (child graphs' recursively). */
static int body_allowed(const graph_t *g)
{
    for (size_t i = 0; i < g->n; i++) {
        const gnode_t *nd = g->nodes[i];
        switch (nd->type) {
        case GN_KERNEL: case GN_EMPTY: case GN_MEMCPY: case GN_MEMSET: case GN_COND: break;
        case GN_GRAPH: if (!body_allowed(nd->body[0])) return 0; break;
        default: return 0;
        }
    }
    return 1;
}

cudaError_t cset_add_graph(cset_t **defs, const graph_t *g)
{
    size_t add = 0;
    for (size_t i = 0; i < g->nconds; i++) add += (g->conds[i]->flags & COND_ASSIGN_DEFAULT) != 0;
    if (!add) return cudaSuccess;
    size_t n0 = *defs ? (*defs)->n : 0;
    cset_t *c = realloc(*defs, sizeof *c + (n0 + add) * sizeof *c->c);
    if (!c) return cudaErrorMemoryAllocation;
    if (!*defs) { c->refs = 1; c->n = 0; }
    *defs = c;
    for (size_t i = 0; i < g->nconds; i++)
        if (g->conds[i]->flags & COND_ASSIGN_DEFAULT) {
            c->c[c->n++] = g->conds[i];
            g->conds[i]->refs++;
        }
    return cudaSuccess;
}

void cset_unref(cset_t *c)
{
    if (!c || --c->refs) return;
    for (size_t i = 0; i < c->n; i++) cond_unref(c->c[i]);
    free(c);
}

cudaError_t exec_node_sub(gnode_t *nd, const gnode_t *src, int depth, cset_t **defs)
{
    if (depth > GRAPH_NEST_MAX) return cudaErrorInvalidValue;
    sub_t *sb = calloc(1, sizeof *sb + src->nbody * sizeof *sb->x);
    if (!sb) return cudaErrorMemoryAllocation;
    sb->refs = 1;
    sb->ctype = src->ctype;
    sb->n = src->nbody;
    if (src->type == GN_COND) {
        sb->c = src->cond;
        sb->c->refs++;
    }
    nd->sub = sb;               /* released with the executable graph's copies, also on error */
    for (size_t i = 0; i < src->nbody; i++) {
        const graph_t *b = src->body[i];
        if (src->type == GN_COND && !body_allowed(b)) return cudaErrorNotSupported;
        gexec_t *bx = calloc(1, sizeof *bx);
        if (!bx || (b->n && !(bx->nodes = calloc(b->n, sizeof *bx->nodes)))) {
            free(bx);
            return cudaErrorMemoryAllocation;
        }
        sb->x[i] = bx;
        bx->device = b->device;
        bx->graph_id = b->id;
        uint32_t *order = NULL;
        if (b->unordered) {
            if (!(order = malloc(b->n * sizeof *order))) return cudaErrorMemoryAllocation;
            int r = graph_order(b, order);
            if (r) {
                free(order);
                return r == -1 ? cudaErrorInvalidValue : cudaErrorMemoryAllocation;
            }
        }
        cudaError_t err = exec_fill(bx, b, order, depth, defs);
        free(order);
        if (err) return err;
    }
    return cudaSuccess;
}

/* ---------------------------------------------------------------- launch */

/* A conditional node reached on its stream: the chosen body's items run here, on the stream's worker, in order. */
static void cond_run(void *arg)
{
    sub_t *sb = arg;
    stream_t *s = t_in_hostfn;
    pthread_mutex_lock(&G);
    for (;;) {
        unsigned v = sb->c->value;
        gexec_t *b = sb->ctype == COND_SWITCH ? (v < sb->n ? sb->x[v] : NULL)
                     : v ? sb->x[0] : (sb->ctype == COND_IF && sb->n == 2 ? sb->x[1] : NULL);
        if (!b) break;
        size_t k = 0, need = exec_items_count(b);
        item_t *small[16], **items = need > 16 ? malloc(need * sizeof *items) : small;
        int ok = items && !exec_items(b, items, &k);
        for (size_t i = 0; ok && i < k; i++) {
            emu_item_run(s, items[i]);
            item_free(items[i]);
        }
        if (items != small) free(items);
        if (!ok || sb->ctype != COND_WHILE) break;
        if (!k) {                   /* an empty body: only another thread can end the loop; let it in */
            pthread_mutex_unlock(&G);
            sched_yield();
            pthread_mutex_lock(&G);
        }
    }
    sub_unref(sb);
    pthread_mutex_unlock(&G);
}

/* A launch's first item when its graph has handles with ASSIGN_DEFAULT: their values back to their defaults. */
static void defaults_run(void *arg)
{
    cset_t *c = arg;
    pthread_mutex_lock(&G);
    for (size_t i = 0; i < c->n; i++) c->c[i]->value = c->c[i]->deflt;
    cset_unref(c);
    pthread_mutex_unlock(&G);
}

item_t *cond_item(sub_t *sb)
{
    item_t *it = item_new(IT_HOSTFN);
    if (!it) return NULL;
    it->fn = cond_run;
    it->arg = sb;
    sb->refs++;
    return it;
}

item_t *defaults_item(cset_t *c)
{
    item_t *it = item_new(IT_HOSTFN);
    if (!it) return NULL;
    it->fn = defaults_run;
    it->arg = c;
    c->refs++;
    return it;
}

int is_cond_item(const item_t *it)
{
    return it->kind == IT_HOSTFN && (it->fn == cond_run || it->fn == defaults_run);
}

void cond_item_drop(item_t *it)
{
    if (it->fn == cond_run) sub_unref(it->arg);
    else cset_unref(it->arg);
}

/* --------------------------------------------------------------- runtime API */

typedef unsigned long long cudaGraphConditionalHandle;

EXPORT cudaError_t cudaGraphConditionalHandleCreate(cudaGraphConditionalHandle *out, cudaGraph_t g, unsigned int deflt,
                                                    unsigned int flags)
{
    RT_ENTER(cudaGraphConditionalHandleCreate, cudaErrorMemoryAllocation);
    RT_NEED_DEVICE();
    cudaError_t err = emu_graph_cond_create(out, g, deflt, flags);
    return err ? fail(err) : cudaSuccess;
}

EXPORT cudaError_t cudaGraphAddChildGraphNode(cudaGraphNode_t *out, cudaGraph_t g, const cudaGraphNode_t *deps,
                                              size_t n, cudaGraph_t child)
{
    RT_ENTER(cudaGraphAddChildGraphNode, cudaErrorMemoryAllocation);
    RT_NEED_DEVICE();
    cudaError_t err = emu_graph_add_child(out, g, deps, n, child, 0);
    return err ? fail(err) : cudaSuccess;
}

EXPORT cudaError_t cudaGraphChildGraphNodeGetGraph(cudaGraphNode_t node, cudaGraph_t *out)
{
    RT_ENTER(cudaGraphChildGraphNodeGetGraph, cudaErrorUnknown);
    RT_NEED_DEVICE();
    cudaError_t err = emu_graph_child_get(node, out);
    return err ? fail(err) : cudaSuccess;
}
