/* Node arena for accel._native._ir: the compact per-node records that traversal touches.
 *
 * Why: a walk that reads Node objects (~190 bytes each, spread over the heap) is memory-bound.  Here
 * every Node owns one slot of three parallel arrays indexed by a small int id:
 *   acc_marks[id]  visit stamp (4 bytes: the random-access hot spot; 1e5 nodes fit in L2),
 *   acc_recs[id]   operand ids and flags (16 bytes, read once per visit),
 *   acc_self[id]   borrowed back-pointer to the Node, only for building result lists.
 * Slot 0 is never used, so a zeroed Node (id 0) owns nothing.  Freed slots are recycled through a
 * free list.  Everything runs under the GIL; a walk calls no Python code, so nothing can free or
 * allocate a slot (and so move the arrays) while it runs.
 *
 * Stamps: traversal e uses base = 2e; mark == base means EMITTING, base + 1 EMITTED, anything lower
 * "not visited".  Epochs only grow, so no walk ever clears marks (see _ir_walk.pxi for wrap-around).
 */
#ifndef ACCEL_IR_ARENA_H
#define ACCEL_IR_ARENA_H
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__) || defined(__clang__)
#define ACC_INLINE static inline __attribute__((always_inline))
#define ACC_PREFETCH(p) __builtin_prefetch(p)
#define ACC_PREFETCH_W(p) __builtin_prefetch(p, 1)
#else
#define ACC_PREFETCH_W(p) ((void)0)
#define ACC_INLINE static __forceinline
#define ACC_PREFETCH(p) ((void)0)
#endif

#define ACC_DATA_BIT 1u          /* info bit 0: device-data node; info >> 1 = operand count */
#define ACC_NINL 2               /* operands stored inline; more go to a malloc'd array */

typedef struct {
    uint32_t info;
    int32_t hid;                 /* data nodes: interned handle id; free slots: next free slot */
    union { int32_t inl[ACC_NINL]; int32_t *ext; } u;
} acc_rec;

typedef struct { int32_t *d; Py_ssize_t n, cap; } acc_ivec;

static acc_rec *acc_recs = NULL;
static uint32_t *acc_marks = NULL;
static PyObject **acc_self = NULL;
static int32_t acc_cap = 0, acc_top = 1, acc_free = 0;

static inline int32_t *acc_ops(acc_rec *r) {
    return (r->info >> 1) <= ACC_NINL ? r->u.inl : r->u.ext;
}

static int acc_grow_to(void **p, size_t elem, int32_t cap) {
    void *q = realloc(*p, (size_t)cap * elem);
    if (q == NULL) return -1;
    *p = q;
    return 0;
}

/* A slot for a node with nops operands (ids filled in by the caller); 0 when out of memory. */
static int32_t acc_alloc(PyObject *self, Py_ssize_t nops) {
    int32_t id;
    acc_rec *r;
    if (nops >= (Py_ssize_t)(INT32_MAX >> 1)) return 0;
    if (acc_free) {
        id = acc_free;
        acc_free = acc_recs[id].hid;
    } else {
        if (acc_top >= acc_cap) {
            int32_t cap = acc_cap ? (acc_cap < (1 << 29) ? acc_cap * 2 : INT32_MAX) : 4096;
            if (acc_cap == INT32_MAX) return 0;
            if (acc_grow_to((void **)&acc_recs, sizeof(acc_rec), cap) ||
                acc_grow_to((void **)&acc_marks, sizeof(uint32_t), cap) ||
                acc_grow_to((void **)&acc_self, sizeof(PyObject *), cap))
                return 0;         /* the arrays that did grow just stay larger */
            acc_cap = cap;
        }
        id = acc_top++;
    }
    r = &acc_recs[id];
    r->info = (uint32_t)nops << 1;
    r->hid = 0;
    r->u.ext = NULL;
    if (nops > ACC_NINL) {
        r->u.ext = (int32_t *)malloc((size_t)nops * sizeof(int32_t));
        if (r->u.ext == NULL) {
            r->info = 0;
            r->hid = acc_free;
            acc_free = id;
            return 0;
        }
    }
    acc_marks[id] = 0;           /* below every live base: "not visited" */
    acc_self[id] = self;
    return id;
}

static void acc_release(int32_t id) {
    acc_rec *r = &acc_recs[id];
    if ((r->info >> 1) > ACC_NINL) free(r->u.ext);
    r->info = 0;
    r->u.ext = NULL;
    r->hid = acc_free;
    acc_self[id] = NULL;
    acc_free = id;
}

/* Fill a new list's items with new references to the Nodes of ids.  This is the only step that
 * touches the Node objects; after graphs were freed and rebuilt they can be spread over the heap, so
 * each reference count write is likely a cache miss: prefetching a few nodes ahead overlaps them. */
static void acc_fill_list(PyObject *list, const int32_t *ids, Py_ssize_t n) {
    PyObject **items = ((PyListObject *)list)->ob_item;
    const Py_ssize_t ahead = 16;
    Py_ssize_t i;
    for (i = 0; i < n; i++) {
        PyObject *o = acc_self[ids[i]];
        if (i + 2 * ahead < n) ACC_PREFETCH(&acc_self[ids[i + 2 * ahead]]);
        if (i + ahead < n) ACC_PREFETCH_W(acc_self[ids[i + ahead]]);
        Py_INCREF(o);
        items[i] = o;
    }
}

static int acc_ivec_reserve(acc_ivec *v, Py_ssize_t need) {
    Py_ssize_t cap = v->cap ? v->cap : 256;
    int32_t *p;
    while (cap < need) cap *= 2;
    p = (int32_t *)realloc(v->d, (size_t)cap * sizeof(int32_t));
    if (p == NULL) return -1;
    v->d = p;
    v->cap = cap;
    return 0;
}

/* Parameter de-duplication state: per interned handle id, the stamp of the walk that last saw it and
 * the parameter index it got there (RunPostOrder's data_handles map, without a map). */
static uint32_t *acc_hstamp = NULL;
static int32_t *acc_hidx = NULL;

enum { ACC_POST = 0, ACC_COUNT = 1, ACC_PARAMS = 2 };

/* LTC's second-visit check: every operand must be EMITTED; else *loop = the first that is not. */
static int acc_check_done(acc_rec *recs, const uint32_t *marks, int32_t node, uint32_t emitted,
                          int32_t *loop) {
    acc_rec *rec = &recs[node];
    int32_t i, nops = (int32_t)(rec->info >> 1);
    const int32_t *ops = nops <= ACC_NINL ? rec->u.inl : rec->u.ext;
    for (i = 0; i < nops; i++)
        if (marks[ops[i]] != emitted) { *loop = ops[i]; return 1; }
    return 0;
}

/* Util::ComputePostOrder over roots with stamp base `base` (see the .pxi for the algorithm notes).
 * mode POST appends emitted ids to out; COUNT counts them in *count; PARAMS appends, per emitted
 * device-data node, the first-seen index of its handle (hstamp base `hbase`) to out.  visited (may be
 * NULL) gets every node at its first visit.  strict re-checks operands at the second visit, which only
 * matters when stale EMITTING stamps can exist (a reused EmissionMap after a loop error).
 * Returns 0, 1 on a loop (*loop = the offending node), -1 when out of memory. */
ACC_INLINE int
acc_walk(const int32_t *roots, Py_ssize_t nroots, uint32_t base, int strict, int mode, acc_ivec *st,
         acc_ivec *out, acc_ivec *visited, Py_ssize_t *count, uint32_t hbase, int32_t *nparams,
         int32_t *loop)
{
    const uint32_t emitting = base, emitted = base + 1;
    uint32_t *marks = acc_marks;
    acc_rec *recs = acc_recs;
    int32_t *stack;
    Py_ssize_t r, i, sp, depth;
    int32_t node, c, nops, e;
    uint32_t m;
    acc_rec *rec;
    const int32_t *ops;

#define ACC_EMIT(id) do {                                                                       \
        marks[id] = emitted;                                                                    \
        if (mode == ACC_COUNT) { (*count)++; }                                                  \
        else if (mode == ACC_POST) {                                                            \
            if (out->n == out->cap && acc_ivec_reserve(out, out->n + 1)) return -1;             \
            out->d[out->n++] = (id);                                                            \
        } else if (recs[id].info & ACC_DATA_BIT) {                                              \
            int32_t h_ = recs[id].hid;                                                          \
            if (acc_hstamp[h_] != hbase) { acc_hstamp[h_] = hbase; acc_hidx[h_] = (*nparams)++; } \
            if (out->n == out->cap && acc_ivec_reserve(out, out->n + 1)) return -1;             \
            out->d[out->n++] = acc_hidx[h_];                                                    \
        }                                                                                       \
    } while (0)
#define ACC_VISIT(id) do {                                                                      \
        if (visited) {                                                                          \
            if (visited->n == visited->cap && acc_ivec_reserve(visited, visited->n + 1)) return -1; \
            visited->d[visited->n++] = (id);                                                    \
        }                                                                                       \
    } while (0)

    for (r = 0; r < nroots; r++) {
        node = roots[r];
        if (marks[node] == emitted) continue;
        if (st->cap < 64 && acc_ivec_reserve(st, 64)) return -1;
        stack = st->d;
        stack[0] = node;
        sp = 1;
        while (sp) {
            e = stack[sp - 1];
            if (e < 0) {                                /* ~id: an expanded node, operands now done */
                node = ~e;
                if (strict && acc_check_done(recs, marks, node, emitted, loop)) return 1;
                ACC_EMIT(node);
                sp--;
                continue;
            }
            node = e;
            m = marks[node];
            if (m < emitting) {                         /* first visit: push unvisited operands */
            expand:
                ACC_VISIT(node);
                rec = &recs[node];
                nops = (int32_t)(rec->info >> 1);
                if (nops == 0) {                        /* a leaf: emit at once */
                    ACC_EMIT(node);
                    sp--;
                    continue;
                }
                marks[node] = emitting;
                /* Tag the node's own entry, so that its second visit is told from the stack entry
                 * alone (in L1) instead of from its stamp (a likely cache miss behind a branch that
                 * mispredicts a lot on real DAGs). */
                stack[sp - 1] = ~node;
                if (sp + nops > st->cap) {
                    st->n = sp;
                    if (acc_ivec_reserve(st, sp + nops)) return -1;
                    stack = st->d;
                }
                ops = nops <= ACC_NINL ? rec->u.inl : rec->u.ext;
                depth = sp;
                for (i = 0; i < nops; i++) {
                    c = ops[i];
                    m = marks[c];
                    if (m < emitting) {
                        stack[sp++] = c;
                        ACC_PREFETCH(&recs[c]);         /* the last one pushed is expanded next */
                    } else if (m == emitting) {
                        *loop = c;
                        return 1;
                    }
                }
                if (sp == depth) {                      /* every operand already emitted: emit now */
                    ACC_EMIT(node);
                    sp--;
                    continue;
                }
                /* The top of the stack is an operand just found unvisited, so the next iteration
                 * would expand it: go there directly, past the state dispatch. */
                node = stack[sp - 1];
                goto expand;
            } else if (m == emitting) {
                /* An EMITTING stamp on an untagged entry is stale: left by an earlier walk with the
                 * same EmissionMap that stopped at a loop.  LTC treats it as a second visit. */
                if (strict && acc_check_done(recs, marks, node, emitted, loop)) return 1;
                ACC_EMIT(node);
                sp--;
            } else {
                sp--;                                   /* pushed twice and already emitted */
            }
        }
    }
#undef ACC_EMIT
#undef ACC_VISIT
    return 0;
}

/* The specialisations the module calls (one per mode, so the mode tests fold away). */
static int acc_walk_post(const int32_t *roots, Py_ssize_t nroots, uint32_t base, int strict, acc_ivec *st,
                         acc_ivec *out, acc_ivec *visited, int32_t *loop) {
    return acc_walk(roots, nroots, base, strict, ACC_POST, st, out, visited, NULL, 0, NULL, loop);
}
static int acc_walk_count(const int32_t *roots, Py_ssize_t nroots, uint32_t base, acc_ivec *st,
                          Py_ssize_t *count, int32_t *loop) {
    return acc_walk(roots, nroots, base, 0, ACC_COUNT, st, NULL, NULL, count, 0, NULL, loop);
}
static int acc_walk_params(const int32_t *roots, Py_ssize_t nroots, uint32_t base, acc_ivec *st,
                           acc_ivec *out, uint32_t hbase, int32_t *nparams, int32_t *loop) {
    return acc_walk(roots, nroots, base, 0, ACC_PARAMS, st, out, NULL, NULL, hbase, nparams, loop);
}
#endif
