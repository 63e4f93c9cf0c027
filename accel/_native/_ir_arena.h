/* Node arena for accel._native._ir: the compact per-node records that traversal touches.
 *
 * Why: a walk that reads Node objects (~128 bytes each, spread over the heap) is memory-bound.  Here
 * every Node owns one slot of two parallel arrays indexed by a small int id:
 *   acc_recs[id]   visit stamp, operand count and flags, operand ids or the interned handle id: 16
 *                  bytes, so checking an operand's stamp also brings in the record its expansion reads,
 *   acc_self[id]   borrowed back-pointer to the Node, only for building result lists,
 *   acc_serial[id] the Node's serial number (kept here, not in the Node: a smaller object to allocate).
 * Slot 0 is never used, so a zeroed Node (id 0) owns nothing.  Freed slots are recycled lowest first
 * (a bitmap of free slots with summary levels): a graph built after others were freed gets ids in
 * creation order again, and a walk's accesses stay close to sequential instead of scattered by the
 * order the old graphs happened to be freed in.  Everything runs under the GIL; a walk calls no Python
 * code, so nothing can free or allocate a slot (and so move the arrays) while it runs.
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
#define ACC_CTZ64(x) __builtin_ctzll(x)
#else
#include <intrin.h>
#define ACC_PREFETCH_W(p) ((void)0)
#define ACC_INLINE static __forceinline
#define ACC_PREFETCH(p) ((void)0)
static __inline int ACC_CTZ64(uint64_t x) { unsigned long i; _BitScanForward64(&i, x); return (int)i; }
#endif

#define ACC_DATA_BIT 1u          /* info bit 0: device-data node; info >> 1 = operand count */
#define ACC_NINL 2               /* operands stored inline; more go to a malloc'd array */

typedef struct {
    uint32_t mark;               /* visit stamp */
    uint32_t info;
    /* hid: data nodes (no operands): the interned handle id */
    union { int32_t inl[ACC_NINL]; int32_t *ext; int32_t hid; } u;
} acc_rec;

typedef struct { int32_t *d; Py_ssize_t n, cap; } acc_ivec;

static acc_rec *acc_recs = NULL;
static PyObject **acc_self = NULL;
static uint64_t *acc_serial = NULL;   /* the node's serial number (loop checks, see _ir_node.pxi) */
static int32_t acc_cap = 0, acc_top = 1;

/* Free slots below acc_top: acc_fb[0] has one bit per slot (set: free), acc_fb[k] one bit per word of
 * level k - 1 (set: that word is not zero); the top level is a single word.  6 levels cover 2^31. */
#define ACC_FB_LEVELS 6
static uint64_t *acc_fb[ACC_FB_LEVELS];
static Py_ssize_t acc_fb_words[ACC_FB_LEVELS];
static int acc_fb_nlv = 0;
static int32_t acc_nfree = 0;
static int32_t acc_last = 0;     /* the slot freed last (0: none), kept out of the bitmap: reused first */

static inline int32_t *acc_ops(acc_rec *r) {
    return (r->info >> 1) <= ACC_NINL ? r->u.inl : r->u.ext;
}
static inline int32_t acc_get_hid(int32_t id) { return acc_recs[id].u.hid; }
/* Start fetching the cache line of o's reference count (a Node about to be released). */
static inline void acc_prefetch_obj(PyObject *o) { ACC_PREFETCH_W(o); }
static inline void acc_set_hid(int32_t id, int32_t h) { acc_recs[id].u.hid = h; }

static int acc_grow_to(void **p, size_t elem, int32_t cap) {
    void *q = realloc(*p, (size_t)cap * elem);
    if (q == NULL) return -1;
    *p = q;
    return 0;
}

/* Size the free-slot bitmap for cap slots (zero-extending level 0, then rebuilding the levels above
 * from it: growth is rare, so the O(cap / 64) rebuild is amortised away). */
static int acc_fb_resize(int32_t cap) {
    Py_ssize_t words = ((Py_ssize_t)cap + 63) >> 6, i;
    int k = 0;
    for (;;) {
        uint64_t *q = (uint64_t *)realloc(acc_fb[k], (size_t)words * sizeof(uint64_t));
        if (q == NULL) return -1;
        acc_fb[k] = q;
        if (k == 0) {
            if (words > acc_fb_words[0])
                memset(q + acc_fb_words[0], 0, (size_t)(words - acc_fb_words[0]) * sizeof(uint64_t));
        } else {
            memset(q, 0, (size_t)words * sizeof(uint64_t));
            for (i = 0; i < acc_fb_words[k - 1]; i++)
                if (acc_fb[k - 1][i]) q[i >> 6] |= (uint64_t)1 << (i & 63);
        }
        acc_fb_words[k] = words;
        k++;
        if (words == 1) break;
        words = (words + 63) >> 6;
    }
    acc_fb_nlv = k;
    return 0;
}

static inline void acc_fb_set(Py_ssize_t i) {
    int k;
    for (k = 0; k < acc_fb_nlv; k++) {
        uint64_t *p = &acc_fb[k][i >> 6], was = *p;
        *p = was | (uint64_t)1 << (i & 63);
        if (was) break;
        i >>= 6;
    }
}

/* Take the lowest free slot (acc_nfree > 0). */
static inline int32_t acc_fb_take(void) {
    Py_ssize_t w = 0, i;
    int k;
    for (k = acc_fb_nlv - 1; k >= 0; k--)
        w = (w << 6) + ACC_CTZ64(acc_fb[k][w]);
    i = w;
    for (k = 0; k < acc_fb_nlv; k++) {
        uint64_t *p = &acc_fb[k][i >> 6];
        *p &= ~((uint64_t)1 << (i & 63));
        if (*p) break;
        i >>= 6;
    }
    acc_nfree--;
    return (int32_t)w;
}

/* A slot for a node with nops operands (ids filled in by the caller); 0 when out of memory. */
static int32_t acc_alloc(PyObject *self, Py_ssize_t nops) {
    int32_t id;
    acc_rec *r;
    int32_t *ext = NULL;
    if (nops >= (Py_ssize_t)(INT32_MAX >> 1)) return 0;
    if (nops > ACC_NINL) {
        ext = (int32_t *)malloc((size_t)nops * sizeof(int32_t));
        if (ext == NULL) return 0;
    }
    if (acc_last) {
        id = acc_last;
        acc_last = 0;
    } else if (acc_nfree) {
        id = acc_fb_take();
    } else {
        if (acc_top >= acc_cap) {
            int32_t cap = acc_cap ? (acc_cap < (1 << 29) ? acc_cap * 2 : INT32_MAX) : 4096;
            if (acc_cap == INT32_MAX ||
                acc_grow_to((void **)&acc_recs, sizeof(acc_rec), cap) ||
                acc_grow_to((void **)&acc_self, sizeof(PyObject *), cap) ||
                acc_grow_to((void **)&acc_serial, sizeof(uint64_t), cap) ||
                acc_fb_resize(cap)) {
                free(ext);        /* the arrays that did grow just stay larger */
                return 0;
            }
            acc_cap = cap;
        }
        id = acc_top++;
    }
    r = &acc_recs[id];
    r->mark = 0;                 /* below every live base: "not visited" */
    r->info = (uint32_t)nops << 1;
    r->u.ext = ext;
    acc_self[id] = self;
    return id;
}

static void acc_release(int32_t id) {
    acc_rec *r = &acc_recs[id];
    if ((r->info >> 1) > ACC_NINL) free(r->u.ext);
    r->info = 0;
    r->u.ext = NULL;
    acc_self[id] = NULL;
    if (acc_last) {
        acc_fb_set(acc_last);
        acc_nfree++;
    }
    acc_last = id;
}

/* Output objects that the GC does not track (their node was untracked when they were made), so that they can
 * be tracked when their node becomes tracked: slot -> the Output (borrowed; it releases its slot when it
 * goes) and its node's id.  Free slots are a stack: made and dropped at once, an Output reuses one slot. */
typedef struct { PyObject *obj; int32_t node; } acc_out;
static acc_out *acc_outs = NULL;
static int32_t *acc_ofree = NULL;
static int32_t acc_ocap = 0, acc_otop = 1, acc_onfree = 0;

/* A slot for Output o of node id node; 0 when out of memory. */
static inline int32_t acc_oalloc(PyObject *o, int32_t node) {
    int32_t s;
    if (acc_onfree) {
        s = acc_ofree[--acc_onfree];
    } else {
        if (acc_otop >= acc_ocap) {
            int32_t cap = acc_ocap ? (acc_ocap < (1 << 29) ? acc_ocap * 2 : INT32_MAX) : 4096;
            if (acc_ocap == INT32_MAX ||
                acc_grow_to((void **)&acc_outs, sizeof(acc_out), cap) ||
                acc_grow_to((void **)&acc_ofree, sizeof(int32_t), cap))
                return 0;
            acc_ocap = cap;
        }
        s = acc_otop++;
    }
    acc_outs[s].obj = o;
    acc_outs[s].node = node;
    return s;
}

static inline void acc_orelease(int32_t s) {
    acc_outs[s].obj = NULL;
    acc_ofree[acc_onfree++] = s;
}

/* Mark every live node from which a seed can be reached through operands, the seeds included:
 * mark[id] = 1 in the returned array (acc_top bytes, malloc'd: the caller frees it), NULL when out of
 * memory.  A breadth-first search over each node's users, built for the occasion from the records:
 * O(live nodes + operand edges), no recursion.  Runs no Python code. */
static uint8_t *acc_mark_users(const int32_t *seeds, Py_ssize_t nseeds) {
    const int32_t top = acc_top;
    int32_t id, x, nops, j;
    const int32_t *ops;
    Py_ssize_t k, e, qh = 0, qt = 0;
    uint8_t *mark = (uint8_t *)calloc((size_t)top, 1);
    Py_ssize_t *start = (Py_ssize_t *)calloc((size_t)top + 1, sizeof(Py_ssize_t));
    Py_ssize_t *fill = NULL;
    int32_t *users = NULL, *queue = NULL;
    if (mark == NULL || start == NULL) goto oom;
    for (id = 1; id < top; id++) {             /* users per operand, then their offsets */
        if (acc_self[id] == NULL) continue;
        nops = (int32_t)(acc_recs[id].info >> 1);
        ops = acc_ops(&acc_recs[id]);
        for (j = 0; j < nops; j++) start[ops[j] + 1]++;
    }
    for (id = 0; id < top; id++) start[id + 1] += start[id];
    e = start[top];
    fill = (Py_ssize_t *)malloc(((size_t)top + 1) * sizeof(Py_ssize_t));
    users = (int32_t *)malloc((size_t)(e ? e : 1) * sizeof(int32_t));
    queue = (int32_t *)malloc((size_t)top * sizeof(int32_t));
    if (fill == NULL || users == NULL || queue == NULL) goto oom;
    memcpy(fill, start, ((size_t)top + 1) * sizeof(Py_ssize_t));
    for (id = 1; id < top; id++) {
        if (acc_self[id] == NULL) continue;
        nops = (int32_t)(acc_recs[id].info >> 1);
        ops = acc_ops(&acc_recs[id]);
        for (j = 0; j < nops; j++) users[fill[ops[j]]++] = id;
    }
    for (k = 0; k < nseeds; k++) {
        x = seeds[k];
        if (x > 0 && x < top && !mark[x]) { mark[x] = 1; queue[qt++] = x; }
    }
    while (qh < qt) {
        x = queue[qh++];
        for (k = start[x]; k < start[x + 1]; k++) {
            id = users[k];
            if (!mark[id]) { mark[id] = 1; queue[qt++] = id; }
        }
    }
    free(start); free(fill); free(users); free(queue);
    return mark;
oom:
    free(mark); free(start); free(fill); free(users); free(queue);
    return NULL;
}

/* Fill a new list's items with new references to the Nodes of ids.  This is the only step that
 * touches the Node objects (one cache line each, mostly from L3 or memory for a big graph), so each
 * reference count write is likely a miss: prefetching 32 nodes ahead overlaps them (16 was measurably
 * slower on a 1e5-node graph built after others were freed; 32 to 96 were about the same). */
static void acc_fill_list(PyObject *list, const int32_t *ids, Py_ssize_t n) {
    PyObject **items = ((PyListObject *)list)->ob_item;
    const Py_ssize_t ahead = 32;
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
static int acc_check_done(acc_rec *recs, int32_t node, uint32_t emitted, int32_t *loop) {
    acc_rec *rec = &recs[node];
    int32_t i, nops = (int32_t)(rec->info >> 1);
    const int32_t *ops = nops <= ACC_NINL ? rec->u.inl : rec->u.ext;
    for (i = 0; i < nops; i++)
        if (recs[ops[i]].mark != emitted) { *loop = ops[i]; return 1; }
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
    acc_rec *recs = acc_recs;
    int32_t *stack;
    Py_ssize_t r, i, sp, depth;
    int32_t node, c, nops, e;
    uint32_t m;
    acc_rec *rec;
    const int32_t *ops;
    /* out's fields live in locals during the walk (the compiler cannot keep them in registers across
     * the stores to recs and stack); every return goes through ACC_RET, which writes the count back. */
    int32_t *od = out ? out->d : NULL;
    Py_ssize_t on = out ? out->n : 0, ocap = out ? out->cap : 0;

#define ACC_RET(x) do { if (out) out->n = on; return (x); } while (0)
#define ACC_OUT(v) do {                                                                         \
        if (on == ocap) {                                                                       \
            out->n = on;                                                                        \
            if (acc_ivec_reserve(out, on + 1)) return -1;                                       \
            od = out->d;                                                                        \
            ocap = out->cap;                                                                    \
        }                                                                                       \
        od[on++] = (v);                                                                         \
    } while (0)
#define ACC_EMIT(id) do {                                                                       \
        recs[id].mark = emitted;                                                                \
        if (mode == ACC_COUNT) { (*count)++; }                                                  \
        else if (mode == ACC_POST) {                                                            \
            ACC_OUT(id);                                                                        \
        } else if (recs[id].info & ACC_DATA_BIT) {                                              \
            int32_t h_ = recs[id].u.hid;                                                        \
            if (acc_hstamp[h_] != hbase) { acc_hstamp[h_] = hbase; acc_hidx[h_] = (*nparams)++; } \
            ACC_OUT(acc_hidx[h_]);                                                              \
        }                                                                                       \
    } while (0)
#define ACC_VISIT(id) do {                                                                      \
        if (visited) {                                                                          \
            if (visited->n == visited->cap && acc_ivec_reserve(visited, visited->n + 1)) ACC_RET(-1); \
            visited->d[visited->n++] = (id);                                                    \
        }                                                                                       \
    } while (0)

    for (r = 0; r < nroots; r++) {
        node = roots[r];
        if (recs[node].mark == emitted) continue;
        if (st->cap < 64 && acc_ivec_reserve(st, 64)) ACC_RET(-1);
        stack = st->d;
        stack[0] = node;
        sp = 1;
        while (sp) {
            e = stack[sp - 1];
            if (e < 0) {                                /* ~id: an expanded node, operands now done */
                node = ~e;
                if (strict && acc_check_done(recs, node, emitted, loop)) ACC_RET(1);
                ACC_EMIT(node);
                sp--;
                continue;
            }
            node = e;
            m = recs[node].mark;
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
                rec->mark = emitting;
                /* Tag the node's own entry, so that its second visit is told from the stack entry
                 * alone (in L1) instead of from its stamp (a likely cache miss behind a branch that
                 * mispredicts a lot on real DAGs). */
                stack[sp - 1] = ~node;
                if (sp + nops > st->cap) {
                    st->n = sp;
                    if (acc_ivec_reserve(st, sp + nops)) ACC_RET(-1);
                    stack = st->d;
                }
                ops = nops <= ACC_NINL ? rec->u.inl : rec->u.ext;
                depth = sp;
                for (i = 0; i < nops; i++) {
                    c = ops[i];
                    m = recs[c].mark;                /* brings in the record its expansion reads */
                    if (m < emitting) {
                        stack[sp++] = c;
                    } else if (m == emitting) {
                        *loop = c;
                        ACC_RET(1);
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
                if (strict && acc_check_done(recs, node, emitted, loop)) ACC_RET(1);
                ACC_EMIT(node);
                sp--;
            } else {
                sp--;                                   /* pushed twice and already emitted */
            }
        }
    }
    if (out) out->n = on;
#undef ACC_RET
#undef ACC_OUT
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
