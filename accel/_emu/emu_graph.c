/* CUDA graphs of the emulated runtime: graph objects and explicit construction, executable graphs, launch,
 * DOT output.  Stream capture, which records into a graph, is emu_capture.c; shared types: emu_graph.h.
 *
 * Nodes are kept in the order they were added, which is a topological order (a node only depends on
 * earlier ones), so cudaGraphLaunch queues the executable graph's nodes in that order on the launch
 * stream's FIFO (one valid schedule of the DAG), after the stream's earlier work and after the previous
 * launch of the same executable graph, on whatever stream (CUDA orders the launches of one
 * cudaGraphExec_t).  At launch every copy / memset range that was device memory at capture is checked
 * again against the allocation table (memory freed since gives cudaErrorInvalidValue and queues nothing, also
 * when a new allocation took its address: allocations are told apart by id, not by address).
 *
 * Documented choices:
 *  - Graph memory: cudaMallocAsync in capture allocates from the stream's pool at once (its address is
 *    fixed for every launch; CUDA maps it at launch, the emulator keeps it mapped).  An allocation the
 *    graph frees (a free node, which only orders) goes back to the pool once the graph and every
 *    executable graph of it are destroyed; one it does not free stays the user's, as in CUDA, until a
 *    cudaFreeAsync / cudaFree outside the graph (its block is reused only once the graph is gone too; a
 *    launch touching it after that free is cudaErrorInvalidValue).  cudaFreeAsync in capture of memory
 *    that is not a graph allocation of the same capture is cudaErrorInvalidValue.
 *  - cudaGraphLaunch into a capturing stream (a child graph) is refused with
 *    cudaErrorStreamCaptureUnsupported; cudaGraphUpload only validates.
 */
#include "emu_graph.h"

static unsigned long long g_next_graphid = 1;
static int g_live_graphs, g_live_execs;

/* --------------------------------------------------------------- node sets */

int deps_reserve(gdeps_t *d, size_t n)
{
    if (n <= d->cap) return 0;
    size_t nc = d->cap ? d->cap * 2 : 4;
    while (nc < n) nc *= 2;
    uint32_t *v = realloc(d->v, nc * sizeof *v);
    if (!v) return -1;
    d->v = v;
    d->cap = nc;
    return 0;
}

int deps_copy(gdeps_t *d, const gdeps_t *src)
{
    if (deps_reserve(d, src->n)) return -1;
    if (src->n) memcpy(d->v, src->v, src->n * sizeof *d->v);
    d->n = src->n;
    return 0;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* d ∪= src, keeping d's order and appending src's new members in theirs.  Small sets compare pairwise;
 * large ones (a join of many streams) search a sorted copy of d, so a join stays O((n + m) log n). */
int deps_union(gdeps_t *d, const gdeps_t *src)
{
    if (deps_reserve(d, d->n + src->n)) return -1;
    size_t n0 = d->n;
    uint32_t *sorted = NULL;
    if (n0 * src->n > 256) {
        if (!(sorted = malloc(n0 * sizeof *sorted))) return -1;
        memcpy(sorted, d->v, n0 * sizeof *sorted);
        qsort(sorted, n0, sizeof *sorted, cmp_u32);
    }
    for (size_t i = 0; i < src->n; i++) {
        uint32_t v = src->v[i];
        int found = 0;
        if (sorted) found = bsearch(&v, sorted, n0, sizeof *sorted, cmp_u32) != NULL;
        else
            for (size_t j = 0; j < n0 && !found; j++) found = d->v[j] == v;
        for (size_t j = n0; j < d->n && !found; j++) found = d->v[j] == v;   /* src has no duplicates: never */
        if (!found) d->v[d->n++] = v;
    }
    free(sorted);
    return 0;
}

void deps_free(gdeps_t *d)
{
    free(d->v);
    d->v = NULL;
    d->n = d->cap = 0;
}

/* ------------------------------------------------------------------ graphs */

void gmem_unref(gmem_t *m)
{
    if (!m || --m->refs) return;
    /* What the graph frees goes back to the pool; an allocation it never frees stays the user's (as in CUDA:
     * freed with cudaFreeAsync / cudaFree), its block held only until then. */
    for (size_t i = 0; i < m->n; i++) {
        if (m->freed[i]) emu_mem_release(m->a[i]);
        else alloc_unref(m->a[i]);
    }
    free(m->a);
    free(m->freed);
    free(m->at.keys);
    free(m->at.vals);
    free(m);
}

int gmem_add(gmem_t *m, alloc_t *a)
{
    if (m->n == m->cap) {
        size_t nc = m->cap ? m->cap * 2 : 8;
        alloc_t **na = realloc(m->a, nc * sizeof *na);
        if (na) m->a = na;
        unsigned char *nf = na ? realloc(m->freed, nc) : NULL;
        if (!nf) return -1;
        m->freed = nf;
        m->cap = nc;
    }
    if (ht_put(&m->at, (uintptr_t)a, (void *)(uintptr_t)(m->n + 1))) return -1;
    a->pending++;                       /* the graph's reference (gmem_unref drops it) */
    m->freed[m->n] = 0;
    m->a[m->n++] = a;
    return 0;
}

void gmem_pop(gmem_t *m)
{
    alloc_t *a = m->a[--m->n];
    ht_del(&m->at, (uintptr_t)a);
    a->pending--;
}

graph_t *graph_new(int device)
{
    graph_t *g = calloc(1, sizeof *g);
    gmem_t *m = calloc(1, sizeof *m);
    uint64_t id;
    if (!g || !m) { free(g); free(m); return NULL; }
    m->refs = 1;
    g->mem = m;
    g->device = device;
    g->id = g_next_graphid++;
    g->handle = new_handle(TAG_GRAPH, &id);
    if (ht_put(&g_handles, g->handle, g)) { free(g); free(m); return NULL; }
    g_live_graphs++;
    return g;
}

static void node_free(gnode_t *nd)
{
    if (nd->handle) ht_del(&g_handles, nd->handle);
    emu_launch_unref_locked(nd->launch);
    node_bodies_free(nd);
    free(nd->deps);
    free(nd);
}

void graph_free(graph_t *g)
{
    for (size_t i = 0; i < g->n; i++) node_free(g->nodes[i]);
    free(g->nodes);
    gmem_unref(g->mem);
    graph_uo_release(g);
    graph_conds_free(g);
    ht_del(&g_handles, g->handle);
    g_live_graphs--;
    free(g);
}

/* A new node of g depending on deps[0..ndeps) (indices of g's nodes).  G held. */
gnode_t *graph_add(graph_t *g, int type, const uint32_t *deps, size_t ndeps)
{
    if (g->n == g->cap) {
        size_t nc = g->cap ? g->cap * 2 : 16;
        gnode_t **nn = realloc(g->nodes, nc * sizeof *nn);
        if (!nn) return NULL;
        g->nodes = nn;
        g->cap = nc;
    }
    gnode_t *nd = calloc(1, sizeof *nd);
    if (!nd) return NULL;
    if (ndeps && !(nd->deps = malloc(ndeps * sizeof *deps))) { free(nd); return NULL; }
    if (ndeps) memcpy(nd->deps, deps, ndeps * sizeof *deps);
    nd->ndeps = ndeps;
    nd->type = type;
    nd->g = g;
    nd->idx = (uint32_t)g->n;
    uint64_t id;
    nd->handle = new_handle(TAG_GNODE, &id);
    if (ht_put(&g_handles, nd->handle, nd)) { nd->handle = 0; node_free(nd); return NULL; }
    g->nodes[g->n++] = nd;
    return nd;
}

/* ------------------------------------------------------------- graphs (API) */

EXPORT cudaError_t cudaGraphCreate(cudaGraph_t *out, unsigned int flags)
{
    RT_ENTER(cudaGraphCreate, cudaErrorMemoryAllocation);
    RT_NEED_DEVICE();
    if (!out || flags) return fail(cudaErrorInvalidValue);
    pthread_mutex_lock(&G);
    graph_t *g = graph_new(t_dev);
    if (g) *out = (cudaGraph_t)(uintptr_t)g->handle;
    pthread_mutex_unlock(&G);
    return g ? cudaSuccess : fail(cudaErrorMemoryAllocation);
}

EXPORT cudaError_t cudaGraphAddEmptyNode(cudaGraphNode_t *out, cudaGraph_t gh, const cudaGraphNode_t *deps, size_t n)
{
    RT_ENTER(cudaGraphAddEmptyNode, cudaErrorMemoryAllocation);
    RT_NEED_DEVICE();
    if (!out || (n && !deps)) return fail(cudaErrorInvalidValue);
    cudaError_t err = cudaSuccess;
    uint32_t *idx = n ? malloc(n * sizeof *idx) : NULL;
    if (n && !idx) return fail(cudaErrorMemoryAllocation);
    pthread_mutex_lock(&G);
    graph_t *g = get_graph(gh);
    if (!g) err = cudaErrorInvalidResourceHandle;
    else if (g->capturing) err = cudaErrorInvalidValue;
    for (size_t i = 0; i < n && !err; i++) {
        gnode_t *d = get_node(deps[i]);
        if (!d || d->g != g) err = cudaErrorInvalidValue;
        else idx[i] = d->idx;
    }
    if (!err) {
        gnode_t *nd = graph_add(g, GN_EMPTY, idx, n);
        if (nd) *out = (cudaGraphNode_t)(uintptr_t)nd->handle;
        else err = cudaErrorMemoryAllocation;
    }
    pthread_mutex_unlock(&G);
    free(idx);
    return err ? fail(err) : cudaSuccess;
}

EXPORT cudaError_t cudaGraphDestroy(cudaGraph_t gh)
{
    RT_ENTER(cudaGraphDestroy, cudaErrorUnknown);
    RT_NEED_DEVICE();
    cudaError_t err = cudaSuccess;
    pthread_mutex_lock(&G);
    graph_t *g = get_graph(gh);
    if (!g) err = cudaErrorInvalidResourceHandle;
    else if (g->capturing) err = cudaErrorIllegalState;
    else if (g->owner) err = cudaErrorInvalidValue;     /* a node's body: the node owns it */
    else graph_free(g);
    pthread_mutex_unlock(&G);
    uo_run_dead();
    return err ? fail(err) : cudaSuccess;
}

EXPORT cudaError_t cudaGraphGetNodes(cudaGraph_t gh, cudaGraphNode_t *nodes, size_t *n)
{
    RT_ENTER(cudaGraphGetNodes, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (!n) return fail(cudaErrorInvalidValue);
    pthread_mutex_lock(&G);
    graph_t *g = get_graph(gh);
    if (g) {
        if (nodes) {
            size_t k = *n < g->n ? *n : g->n;
            for (size_t i = 0; i < k; i++) nodes[i] = (cudaGraphNode_t)(uintptr_t)g->nodes[i]->handle;
            for (size_t i = k; i < *n; i++) nodes[i] = NULL;
        }
        *n = g->n;
    }
    pthread_mutex_unlock(&G);
    return g ? cudaSuccess : fail(cudaErrorInvalidResourceHandle);
}

EXPORT cudaError_t cudaGraphNodeGetType(cudaGraphNode_t nh, int *type)
{
    RT_ENTER(cudaGraphNodeGetType, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (!type) return fail(cudaErrorInvalidValue);
    pthread_mutex_lock(&G);
    gnode_t *nd = get_node(nh);
    if (nd) *type = nd->type;
    pthread_mutex_unlock(&G);
    return nd ? cudaSuccess : fail(cudaErrorInvalidResourceHandle);
}

static const char *node_name(int type)
{
    switch (type) {
    case GN_MEMCPY: return "MEMCPY";
    case GN_MEMSET: return "MEMSET";
    case GN_HOST: return "HOST";
    case GN_EMPTY: return "EMPTY";
    case GN_WAIT_EVENT: return "WAIT_EVENT";
    case GN_EVENT_RECORD: return "EVENT_RECORD";
    case GN_MEM_ALLOC: return "MEM_ALLOC";
    case GN_MEM_FREE: return "MEM_FREE";
    case GN_GRAPH: return "CHILD_GRAPH";
    case GN_COND: return "CONDITIONAL";
    default: return "KERNEL";
    }
}

/* DOT in the shape of CUDA's: one cluster per graph, a record node per graph node, an edge per dependency.
 * The text is made in memory under G and written to `path` after G is dropped: opening or writing the
 * file may block (a FIFO, a full pipe, a slow disk), and no other thread's call may wait for that. */
EXPORT cudaError_t cudaGraphDebugDotPrint(cudaGraph_t gh, const char *path, unsigned int flags)
{
    RT_ENTER(cudaGraphDebugDotPrint, cudaErrorUnknown);
    RT_NEED_DEVICE();
    (void)flags;
    if (!path) return fail(cudaErrorInvalidValue);
    cudaError_t err = cudaSuccess;
    char *text = NULL;
    size_t len = 0;
    pthread_mutex_lock(&G);
    graph_t *g = get_graph(gh);
    FILE *f = g ? open_memstream(&text, &len) : NULL;
    if (!g) err = cudaErrorInvalidResourceHandle;
    else if (!f) err = cudaErrorMemoryAllocation;
    else {
        unsigned long long id = g->id;
        fprintf(f, "digraph dot {\n subgraph cluster_%llu {\nlabel=\"graph_%llu\" graph[style=\"dashed\"];\n", id, id);
        for (size_t i = 0; i < g->n; i++) {
            gnode_t *nd = g->nodes[i];
            fprintf(f, "\"graph_%llu_node_%zu\"\n\t[shape=\"record\",label=\"{%s\\n| {ID | node handle} | {%zu | 0x%llx}",
                    id, i, node_name(nd->type), i, (unsigned long long)nd->handle);
            if (nd->type == GN_MEMCPY)
                fprintf(f, " | {dst | src | count} | {%p | %p | %zu}", nd->dst, nd->src, nd->n);
            else if (nd->type == GN_MEMSET)
                fprintf(f, " | {dst | value | count} | {%p | %d | %zu}", nd->dst, nd->value, nd->n);
            else if (nd->type == GN_HOST)
                fprintf(f, " | {fn | userData} | {%p | %p}", (void *)(uintptr_t)nd->fn, nd->arg);
            else if (nd->type == GN_MEM_ALLOC || nd->type == GN_MEM_FREE)
                fprintf(f, " | {dptr | bytesize} | {%p | %zu}", nd->dst, nd->n);
            else if (nd->type == GN_EVENT_RECORD || nd->type == GN_WAIT_EVENT)
                fprintf(f, " | {event} | {0x%llx}", (unsigned long long)nd->event);
            fprintf(f, "}\"];\n");
        }
        for (size_t i = 0; i < g->n; i++)
            for (size_t k = 0; k < g->nodes[i]->ndeps; k++)
                fprintf(f, "\"graph_%llu_node_%u\" -> \"graph_%llu_node_%zu\";\n", id, g->nodes[i]->deps[k], id, i);
        fprintf(f, "}\n}\n");
        if (fclose(f)) err = cudaErrorMemoryAllocation;
    }
    pthread_mutex_unlock(&G);
    if (!err) {
        FILE *out = fopen(path, "w");
        if (!out) err = cudaErrorInvalidValue;
        else {
            if (fwrite(text, 1, len, out) != len) err = cudaErrorInvalidValue;
            if (fclose(out)) err = cudaErrorInvalidValue;
        }
    }
    free(text);
    return err ? fail(err) : cudaSuccess;
}

/* ---------------------------------------------------- executable graphs (API) */

/* x's nodes from g's in `order` (NULL: as added): copies without dependencies or handles; child-graph and
 * conditional nodes get their executable bodies (depth: their nesting), and the conditional handles with
 * ASSIGN_DEFAULT go to *defs.  x->n counts the copies made (exec_nodes_free releases them on error).  G held. */
cudaError_t exec_fill(gexec_t *x, const graph_t *g, const uint32_t *order, int depth, cset_t **defs)
{
    cudaError_t err = cset_add_graph(defs, g);
    for (size_t i = 0; i < g->n && !err; i++) {
        const gnode_t *src = g->nodes[order ? order[i] : i];
        gnode_t *nd = &x->nodes[i];
        *nd = *src;
        nd->deps = NULL;
        nd->ndeps = 0;
        nd->handle = 0;
        nd->body = NULL;
        nd->bodyh = NULL;
        nd->nbody = 0;
        nd->cond = NULL;
        nd->sub = NULL;
        if (nd->launch) emu_launch_ref(nd->launch);
        x->n = i + 1;
        if (src->type == GN_GRAPH || src->type == GN_COND) err = exec_node_sub(nd, src, depth + 1, defs);
    }
    return err;
}

static cudaError_t instantiate(cudaGraphExec_t *out, cudaGraph_t gh, unsigned long long flags)
{
    if (!out || (flags & ~INSTANTIATE_FLAGS)) return fail(cudaErrorInvalidValue);
    cudaError_t err = cudaSuccess;
    pthread_mutex_lock(&G);
    graph_t *g = get_graph(gh);
    gexec_t *x = NULL;
    if (!g) err = cudaErrorInvalidResourceHandle;
    else if (g->capturing) err = cudaErrorInvalidValue;
    else if (g->owner) err = cudaErrorInvalidValue;    /* a body runs with its node's graph only */
    else if (g->mem->n && g->mem->execs) err = cudaErrorInvalidValue;  /* graph memory: one executable graph */
    else if (!(x = calloc(1, sizeof *x)) || (g->n && !(x->nodes = malloc(g->n * sizeof *x->nodes))))
        err = cudaErrorMemoryAllocation;
    int uerr = 0;
    uint32_t *order = NULL;
    if (!err && g->unordered) {     /* dependencies added out of order: a topological sort (cycles refused) */
        if (!(order = malloc(g->n * sizeof *order))) err = cudaErrorMemoryAllocation;
        else if ((uerr = graph_order(g, order))) err = uerr == -1 ? cudaErrorInvalidValue : cudaErrorMemoryAllocation;
        uerr = 0;
    }
    if (!err && graph_csr(g, &x->dep_off, &x->dep_v)) err = cudaErrorMemoryAllocation;
    if (!err && (x->uo = graph_uo_set(g, &uerr), uerr)) err = cudaErrorMemoryAllocation;
    if (!err) {
        uint64_t id;
        x->handle = new_handle(TAG_GEXEC, &id);
        if (ht_put(&g_handles, x->handle, x)) err = cudaErrorMemoryAllocation;
    }
    if (!err) err = exec_fill(x, g, order, 0, &x->defaults);
    if (!err) {
        x->graph_id = g->id;
        x->device = g->device;
        x->mem = g->mem;
        x->mem->refs++;
        x->mem->execs++;
        x->flags = flags;
        g_live_execs++;
        *out = (cudaGraphExec_t)(uintptr_t)x->handle;
    } else if (x) {
        if (x->handle) ht_del(&g_handles, x->handle);
        exec_nodes_free(x);
        cset_unref(x->defaults);
        uset_unref(x->uo);
        free(x->dep_off);
        free(x->dep_v);
        free(x->nodes);
        free(x);
    }
    pthread_mutex_unlock(&G);
    free(order);
    return err ? fail(err) : cudaSuccess;
}

EXPORT cudaError_t cudaGraphInstantiate(cudaGraphExec_t *out, cudaGraph_t g, unsigned long long flags)
{
    RT_ENTER(cudaGraphInstantiate, cudaErrorMemoryAllocation);
    RT_NEED_DEVICE();
    return instantiate(out, g, flags);
}

EXPORT cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t *out, cudaGraph_t g, unsigned long long flags)
{
    RT_ENTER(cudaGraphInstantiateWithFlags, cudaErrorMemoryAllocation);
    RT_NEED_DEVICE();
    return instantiate(out, g, flags);
}

EXPORT cudaError_t cudaGraphExecDestroy(cudaGraphExec_t xh)
{
    RT_ENTER(cudaGraphExecDestroy, cudaErrorUnknown);
    RT_NEED_DEVICE();
    pthread_mutex_lock(&G);
    gexec_t *x = get_exec(xh);
    if (x) {
        ht_del(&g_handles, x->handle);
        x->mem->execs--;
        gmem_unref(x->mem);     /* queued copies hold their own references to the memory they touch */
        uset_unref(x->uo);      /* and queued launches to the user objects */
        rec_unref(x->last);
        exec_nodes_free(x);
        cset_unref(x->defaults);
        free(x->dep_off);
        free(x->dep_v);
        free(x->nodes);
        free(x);
        g_live_execs--;
    }
    pthread_mutex_unlock(&G);
    uo_run_dead();
    return x ? cudaSuccess : fail(cudaErrorInvalidResourceHandle);
}

/* An allocation of x's graph that no free node of it frees, left to the user by x's last launch, is live:
 * relaunching x first is cudaErrorInvalidValue unless it frees them itself (AutoFreeOnLaunch), as CUDA
 * documents.  G held. */
static int left_unfreed(const gexec_t *x)
{
    if (!x->launched || (x->flags & INSTANTIATE_AUTO_FREE)) return 0;
    for (size_t i = 0; i < x->mem->n; i++)
        if (!x->mem->freed[i] && !x->mem->a[i]->freed) return 1;
    return 0;
}

/* A relaunch makes the allocations of its graph again: those the user freed since the last launch come back at
 * their address (the emulator's graph memory keeps one address per allocation for the graph's life, as CUDA's
 * virtual addresses).  One freed before the first launch stays freed (a node touching it fails the launch).
 * cudaErrorMemoryAllocation when out of memory.  G held. */
static cudaError_t remake_freed(gexec_t *x)
{
    for (size_t i = 0; x->launched && i < x->mem->n; i++)
        if (!x->mem->freed[i] && emu_mem_revive(x->mem->a[i])) return cudaErrorMemoryAllocation;
    return cudaSuccess;
}

size_t exec_items_count(const gexec_t *x)
{
    size_t n = 0;
    for (size_t i = 0; i < x->n; i++) n += x->nodes[i].type == GN_GRAPH ? exec_items_count(x->nodes[i].sub->x[0]) : 1;
    return n;
}

void items_drop(item_t **items, size_t k)
{
    for (size_t i = 0; i < k; i++) {
        if (items[i]->kind == IT_RECORD) rec_unref(items[i]->rec);     /* the event's reference */
        if (is_cond_item(items[i])) cond_item_drop(items[i]);
        item_free(items[i]);
    }
}

/* The items that run exec x's nodes, in order, appended to items[*k] (a child graph's inline, in its order);
 * nothing appended on error.  G held. */
cudaError_t exec_items(gexec_t *x, item_t **items, size_t *k)
{
    cudaError_t err = cudaSuccess;
    size_t k0 = *k;
    for (size_t i = 0; i < x->n && !err; i++) {
        gnode_t *nd = &x->nodes[i];
        item_t *it = NULL;
        if (nd->disabled) continue;     /* an empty node while disabled */
        switch (nd->type) {
        case GN_MEMCPY:
        case GN_MEMSET:
            if (!(it = item_new(nd->type == GN_MEMCPY ? IT_COPY : IT_SET))) break;
            it->dst = nd->dst;
            it->src = nd->src;
            it->n = nd->n;
            it->value = nd->value;
            it->rows = nd->rows;
            it->dpitch = nd->dpitch;
            it->spitch = nd->spitch;
            it->elem = nd->elem;
            /* the bytes each side covers (checked at capture, so no overflow) */
            size_t rows = nd->rows > 1 ? nd->rows : 1, width = nd->n * (nd->elem > 1 ? (size_t)nd->elem : 1);
            size_t dspan = (rows - 1) * nd->dpitch + width, sspan = (rows - 1) * nd->spitch + width;
            /* device memory freed since capture (also when another allocation took its address: the ids
             * differ), or a range that changed */
            if (emu_mem_range(nd->dst, dspan, &it->a1) != nd->dev_dst || (it->a1 ? it->a1->id : 0) != nd->id_dst ||
                (nd->type == GN_MEMCPY && (emu_mem_range(nd->src, sspan, &it->a2) != nd->dev_src ||
                                           (it->a2 ? it->a2->id : 0) != nd->id_src)))
                err = cudaErrorInvalidValue;
            break;
        case GN_HOST:
            if ((it = item_new(IT_HOSTFN))) { it->fn = nd->fn; it->arg = nd->arg; }
            break;
        case GN_EVENT_RECORD: {
            event_t *e = get_event((cudaEvent_t)(uintptr_t)nd->event);
            if (!e) { err = cudaErrorInvalidResourceHandle; break; }
            if ((it = item_new(IT_RECORD)) && !(it->rec = rec_new(2))) { free(it); it = NULL; }
            if (it) it->arg = e;
            break;
        }
        case GN_WAIT_EVENT: {
            event_t *e = get_event((cudaEvent_t)(uintptr_t)nd->event);
            if (!e) { err = cudaErrorInvalidResourceHandle; break; }
            if (!e->sh->latest || e->sh->latest->reached) continue;
            if ((it = item_new(IT_WAIT))) { it->rec = e->sh->latest; it->rec->refs++; }
            break;
        }
        case GN_KERNEL:
            if ((it = item_new(IT_KERNEL))) it->launch = emu_launch_ref(nd->launch);
            break;
        case GN_GRAPH:
            err = exec_items(nd->sub->x[0], items, k);
            continue;
        case GN_COND:
            it = cond_item(nd->sub);
            break;
        default:
            continue;               /* empty and memory nodes: order only */
        }
        if (!it && !err) err = cudaErrorMemoryAllocation;
        if (it) items[(*k)++] = it;
    }
    if (err) {
        items_drop(items + k0, *k - k0);
        *k = k0;
    }
    return err;
}

EXPORT cudaError_t cudaGraphLaunch(cudaGraphExec_t xh, cudaStream_t sh)
{
    RT_ENTER(cudaGraphLaunch, cudaErrorUnknown);
    RT_NEED_DEVICE();
    cudaError_t err = cudaSuccess;
    item_t *small[16], **items = small;
    pthread_mutex_lock(&G);
    gexec_t *x = get_exec(xh);
    stream_t *s = x ? get_stream(sh, &err) : NULL;
    if (!x) err = cudaErrorInvalidResourceHandle;
    else if (s && s->cap) err = capture_refuse(s);
    else if (s && left_unfreed(x)) err = cudaErrorInvalidValue;
    if (!err && s) err = remake_freed(x);
    size_t need = err ? 0 : exec_items_count(x) + 2;  /* and the conditional defaults, the user objects' item */
    if (!err && need > 16 && !(items = malloc(need * sizeof *items))) err = cudaErrorMemoryAllocation;
    size_t k = 0;
    if (!err && x->defaults && !(items[k++] = defaults_item(x->defaults))) { k = 0; err = cudaErrorMemoryAllocation; }
    if (!err) err = exec_items(x, items, &k);
    if (err && k) { items_drop(items, k); k = 0; }
    if (!err && x->uo) {            /* the launch's reference to the user objects, dropped once it has run */
        item_t *it = item_new(IT_HOSTFN);
        if (it) {
            it->fn = uset_launch_done;
            it->arg = x->uo;
            items[k++] = it;
        } else {
            items_drop(items, k);
            k = 0;
            err = cudaErrorMemoryAllocation;
        }
    }
    /* CUDA orders a launch behind the previous launches of the same executable graph (on any stream): it
     * waits for the last one's end marker, and leaves its own. */
    item_t *wait = NULL, *done = NULL;
    if (!err && k) {
        if (x->last && !x->last->reached && (wait = item_new(IT_WAIT))) {
            wait->rec = x->last;
            x->last->refs++;
        }
        if ((done = item_new(IT_RECORD)) && !(done->rec = rec_new(2))) { free(done); done = NULL; }
        if (!done || (x->last && !x->last->reached && !wait)) err = cudaErrorMemoryAllocation;
    }
    if (!err && k) err = implicit_sync(s);
    if (err && k) {
        items_drop(items, k);
        k = 0;
        if (wait) item_free(wait);
        if (done) { rec_unref(done->rec); item_free(done); }
        wait = done = NULL;
    }
    if (wait) enqueue_raw(s, wait);
    if (!err) {
        ensure_ctx(s->device);
        x->launched = 1;
    }
    if (!err && x->uo) x->uo->refs++;
    for (size_t i = 0; i < k; i++) {
        item_t *it = items[i];
        event_t *e = NULL;
        if (it->kind == IT_RECORD) { e = it->arg; it->arg = NULL; }
        enqueue_raw(s, it);
        if (e) {
            rec_unref(e->sh->latest);
            e->sh->latest = it->rec;
            e->sh->capid = 0;
            s->last_rec = it->rec;
        }
    }
    if (done) {
        rec_t *r = done->rec;
        enqueue_raw(s, done);
        s->last_rec = r;
        rec_unref(x->last);
        x->last = r;            /* rec_new(2): the item's reference and this one */
    }
    pthread_mutex_unlock(&G);
    if (items != small) free(items);
    return err ? fail(err) : cudaSuccess;
}

EXPORT cudaError_t cudaGraphUpload(cudaGraphExec_t xh, cudaStream_t sh)
{
    RT_ENTER(cudaGraphUpload, cudaErrorUnknown);
    RT_NEED_DEVICE();
    cudaError_t err = cudaSuccess;
    pthread_mutex_lock(&G);
    gexec_t *x = get_exec(xh);
    stream_t *s = x ? get_stream(sh, &err) : NULL;
    if (!x) err = cudaErrorInvalidResourceHandle;
    else if (s) ensure_ctx(s->device);
    pthread_mutex_unlock(&G);
    return err ? fail(err) : cudaSuccess;
}

EXPORT int accelEmuLiveGraphs(void)
{
    INIT();
    pthread_mutex_lock(&G);
    int n = g_live_graphs;
    pthread_mutex_unlock(&G);
    return n;
}

EXPORT int accelEmuLiveGraphExecs(void)
{
    INIT();
    pthread_mutex_lock(&G);
    int n = g_live_execs;
    pthread_mutex_unlock(&G);
    return n;
}
