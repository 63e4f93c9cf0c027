/* Graphs of the emulated runtime, shared by its two files: emu_graph.c (graphs, nodes, executable graphs,
 * launch, DOT) and emu_capture.c (stream capture, which records into a graph).  Hidden, as emu_runtime.h. */
#ifndef ACCEL_EMU_GRAPH_H
#define ACCEL_EMU_GRAPH_H

#include "emu_runtime.h"
#include "emu_launch.h"

#pragma GCC visibility push(hidden)

typedef void *cudaGraph_t;
typedef void *cudaGraphExec_t;
typedef void *cudaGraphNode_t;

enum { GN_KERNEL = 0, GN_MEMCPY = 1, GN_MEMSET = 2, GN_HOST = 3, GN_GRAPH = 4, GN_EMPTY = 5, GN_WAIT_EVENT = 6,
       GN_EVENT_RECORD = 7, GN_MEM_ALLOC = 10, GN_MEM_FREE = 11, GN_COND = 13 };
enum { COND_IF = 0, COND_WHILE = 1, COND_SWITCH = 2 };
#define COND_ASSIGN_DEFAULT 1u
#define GRAPH_NEST_MAX 32           /* child graphs and conditional bodies nested deeper: cudaErrorInvalidValue */
enum { CAP_NONE = 0, CAP_ACTIVE = 1, CAP_INVALIDATED = 2 };
enum { MODE_GLOBAL = 0, MODE_THREAD_LOCAL = 1, MODE_RELAXED = 2 };
#define INSTANTIATE_FLAGS 0xbull     /* AutoFreeOnLaunch | Upload | UseNodePriority (DeviceLaunch: no) */
#define INSTANTIATE_AUTO_FREE 1ull

typedef struct graph graph_t;
typedef struct gexec gexec_t;

/* Conditional handles (emu_graph_cond.c): the value conditional nodes read, made on a graph (graph_id) and
 * referenced by it, by the executable graphs whose conditional nodes use it and by their launches in flight. */
#define TAG_COND 0xe0u
typedef struct cond { uint64_t handle; unsigned long long graph_id; unsigned value, deflt, flags; int refs; } cond_t;
/* What an executable graph's child-graph (n 1, c NULL) or conditional node runs: one executable graph per body,
 * shared with the launches in flight (refs). */
typedef struct sub { int refs, ctype; cond_t *c; size_t n; gexec_t *x[]; } sub_t;
/* The handles with CU_GRAPH_COND_ASSIGN_DEFAULT an executable graph resets at the start of each launch. */
typedef struct { int refs; size_t n; cond_t *c[]; } cset_t;

/* User objects (emu_graph_uobj.c): a refcounted pointer with a destructor run once the last reference goes.
 * refs: every reference; owned: those graphs, executable graphs and launches in flight hold (the caller's
 * are refs - owned, which bounds what it may release or move). */
#define TAG_UOBJ 0xd0u
typedef struct uobj { uint64_t handle; unsigned refs, owned; void *ptr; cudaHostFn_t destroy; struct uobj *dead; } uobj_t;
typedef struct { uobj_t *o; unsigned n; } uref_t;
/* An executable graph's references (fixed at instantiation), shared with its launches still queued. */
typedef struct { int refs; size_t n; uref_t v[]; } uset_t;

/* Graph memory: the allocations a graph's alloc nodes made, shared by the graph and its executable graphs;
 * freed[i]: the graph has a free node for a[i]; at: allocation address -> i + 1 (a free node finds its
 * allocation in constant time); execs: its graph's live executable graphs (CUDA allows one while there is
 * graph memory). */
typedef struct { int refs; alloc_t **a; unsigned char *freed; size_t n, cap; htab_t at; int execs; } gmem_t;

typedef struct gnode {
    uint64_t handle;
    graph_t *g;
    int type;
    uint32_t idx;
    uint32_t *deps;
    size_t ndeps;
    void *dst;
    const void *src;
    size_t n;
    int value;
    size_t rows, dpitch, spitch;    /* 2-D copies (emu_memory.c's item fields) */
    int elem;                       /* memset element width */
    int dev_dst, dev_src;           /* the range was device memory when captured */
    unsigned long long id_dst, id_src;  /* and the id of the allocation it was in (alloc_t.id; 0: host) */
    cudaHostFn_t fn;
    void *arg;
    uint64_t event;                 /* event record / wait nodes: the event handle */
    alloc_t *mem;                   /* memory nodes */
    struct emu_launch *launch;      /* kernel nodes: the kernel, configuration and parameters (a reference) */
    uint64_t origin;                /* cudaGraphClone: the handle of the node it copies (FindInClone) */
    graph_t **body;                 /* child graph (1) / conditional node (its bodies): the graphs it owns */
    void **bodyh;                   /* their handles (CUDA_CONDITIONAL_NODE_PARAMS.phGraph_out points here) */
    size_t nbody;
    cond_t *cond;                   /* conditional nodes: the handle (a reference), and its type */
    int ctype;
    sub_t *sub;                     /* executable graphs' copies of child-graph / conditional nodes */
    int disabled;                   /* executable graphs' copies: cudaGraphNodeSetEnabled(..., 0) */
} gnode_t;

struct graph {
    uint64_t handle;
    unsigned long long id;
    int device;
    gnode_t **nodes;
    size_t n, cap;
    gmem_t *mem;
    capture_t *capturing;           /* the capture recording into it, or NULL */
    uref_t *uo;                     /* the user-object references it owns */
    size_t nuo, capuo;
    int unordered;                  /* an added dependency points forwards: nodes need sorting at instantiation */
    unsigned long long cloned_from; /* cudaGraphClone: the original's id (cudaGraphNodeFindInClone) */
    gnode_t *owner;                 /* the child-graph / conditional node it is a body of (NULL: the user's) */
    cond_t **conds;                 /* the conditional handles made on it (references) */
    size_t nconds, capconds;
};

struct gexec {
    uint64_t handle;                /* 0: the body of a child-graph / conditional node (not a handle) */
    int device;
    size_t n;
    gnode_t *nodes;                 /* copies, in topological order (deps not kept) */
    gmem_t *mem;
    uset_t *uo;                     /* user-object references (NULL: none) */
    uint32_t *dep_off, *dep_v;      /* its graph's dependencies by node index (CSR), for cudaGraphExecUpdate */
    rec_t *last;                    /* reached when its latest launch has run (NULL: none queued) */
    unsigned long long graph_id;    /* the graph it was instantiated from */
    unsigned long long flags;       /* its instantiation flags (INSTANTIATE_AUTO_FREE) */
    int launched;                   /* launched once: the allocations its graph leaves to the user are theirs */
    cset_t *defaults;               /* conditional handles reset at each launch (NULL: none) */
};

struct capture {
    unsigned long long id;
    int mode, status;
    int to_graph;                   /* cudaStreamBeginCaptureToGraph: the graph is the caller's (nodes from base on) */
    size_t base;
    pthread_t thread;
    graph_t *g;
    stream_t *origin;
    stream_t **ss;                  /* every stream in the sequence (origin first) */
    size_t nss, capss;
    capture_t *next;
};

/* Node sets (gdeps_t, emu_runtime.h): -1 when out of memory. */
int deps_reserve(gdeps_t *d, size_t n);
int deps_copy(gdeps_t *d, const gdeps_t *src);
int deps_union(gdeps_t *d, const gdeps_t *src);
void deps_free(gdeps_t *d);

/* Graphs (G held): a new registered graph of `device` (NULL when out of memory), its destruction (nodes,
 * handle, its reference to the graph memory), a node depending on deps[0..ndeps) (indices of g's nodes;
 * NULL when out of memory), and dropping a reference to graph memory. */
graph_t *graph_new(int device);
void graph_free(graph_t *g);
gnode_t *graph_add(graph_t *g, int type, const uint32_t *deps, size_t ndeps);
void gmem_unref(gmem_t *m);
/* Graph memory (G held): a becomes one of m's allocations, with the graph's reference (-1 when out of
 * memory, nothing changed); the last one added taken back. */
int gmem_add(gmem_t *m, alloc_t *a);
void gmem_pop(gmem_t *m);
/* emu_graph_nodes.c: a topological order of g's nodes into order[0..g->n) (-1: a cycle, -2: out of memory), and the
 * dependency CSR an executable graph keeps (-1 when out of memory). */
int graph_order(const graph_t *g, uint32_t *order);
int graph_csr(const graph_t *g, uint32_t **off, uint32_t **v);

/* emu_graph.c: the items that run executable graph x's nodes (child graphs inlined), appended to items[*k]
 * (room: exec_items_count); nothing appended on error.  Dropping items not queued.  G held. */
cudaError_t exec_items(gexec_t *x, item_t **items, size_t *k);
cudaError_t exec_fill(gexec_t *x, const graph_t *g, const uint32_t *order, int depth, cset_t **defs);
size_t exec_items_count(const gexec_t *x);
void items_drop(item_t **items, size_t k);

/* emu_graph_cond.c (G held): a node's bodies and condition released (graph and node destruction); the
 * executable copy of child-graph / conditional node nd made from graph node src (its sub; conditional handles
 * with ASSIGN_DEFAULT added to *defs), depth its nesting; an executable graph's node copies released; the
 * conditional item of a launch (an IT_HOSTFN running the body on the stream's worker); a graph's nodes checked
 * as a conditional body may hold them (recursively). */
void node_bodies_free(gnode_t *nd);
void graph_conds_free(graph_t *g);
cudaError_t exec_node_sub(gnode_t *nd, const gnode_t *src, int depth, cset_t **defs);
void exec_nodes_free(gexec_t *x);
item_t *cond_item(sub_t *sb);
int is_cond_item(const item_t *it);
void cond_item_drop(item_t *it);
cudaError_t cset_add_graph(cset_t **defs, const graph_t *g);
void cset_unref(cset_t *c);
item_t *defaults_item(cset_t *c);
cudaError_t graph_clone_bodies(gnode_t *dst, const gnode_t *src);
cond_t *get_cond(uint64_t h);
void sub_unref(sub_t *sb);
/* emu_graph_nodes.c (G held): node handles deps[0..n) of g as indices (cudaErrorInvalidValue for a foreign or
 * repeated one); a copy of g, child graphs included (NULL with *err). */
cudaError_t resolve_deps(graph_t *g, const cudaGraphNode_t *deps, size_t n, uint32_t *idx);
graph_t *graph_copy(const graph_t *g, cudaError_t *err);
cudaError_t emu_graph_fill_memset(gnode_t *t, const void *p);
cudaError_t emu_graph_fill_copy3d(gnode_t *t, const void *p);

/* User objects (G held unless said): dropping n references (owned: graph-held ones); the references a graph
 * owns dropped, copied into a new set (NULL when none or out of memory: *err set), a set's reference
 * dropped (uo_run_dead: emu_runtime.h). */
void uobj_drop(uobj_t *o, unsigned n, int owned);
void graph_uo_release(graph_t *g);
uset_t *graph_uo_set(const graph_t *g, int *err);
int graph_uo_copy(graph_t *dst, const graph_t *src);
void uset_unref(uset_t *u);
void uset_launch_done(void *u);

/* Handle lookups (G held): NULL for a handle that is not a live one of that kind. */
static inline graph_t *get_graph(cudaGraph_t h)
{
    uintptr_t v = (uintptr_t)h;
    return (v & TAG_MASK) == TAG_GRAPH ? ht_get(&g_handles, v) : NULL;
}

static inline gexec_t *get_exec(cudaGraphExec_t h)
{
    uintptr_t v = (uintptr_t)h;
    return (v & TAG_MASK) == TAG_GEXEC ? ht_get(&g_handles, v) : NULL;
}

static inline gnode_t *get_node(cudaGraphNode_t h)
{
    uintptr_t v = (uintptr_t)h;
    return (v & TAG_MASK) == TAG_GNODE ? ht_get(&g_handles, v) : NULL;
}

static inline uobj_t *get_uobj(void *h)
{
    uintptr_t v = (uintptr_t)h;
    return (v & TAG_MASK) == TAG_UOBJ ? ht_get(&g_handles, v) : NULL;
}

/* cudaGraphEdgeData, and the edge checks the graph files share (emu_graph_nodes.c): edge data that is NULL or
 * all default edges; cudaErrorInvalidValue when one call names an edge twice. */
typedef struct { unsigned char from_port, to_port, type, reserved[5]; } edge_t;
int edges_default(const edge_t *e, size_t n);
cudaError_t duplicate_edges(const cudaGraphNode_t *from, const cudaGraphNode_t *to, size_t n);

#pragma GCC visibility pop

#endif
