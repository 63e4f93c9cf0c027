/* User objects of the emulated runtime (cudaUserObjectCreate / Retain / Release, cudaGraphRetainUserObject /
 * cudaGraphReleaseUserObject): a pointer and a destructor behind a reference count.  References are held by
 * the caller, by graphs (retained, moved in, or copied by cudaGraphClone), by executable graphs (a copy of
 * their graph's, taken at instantiation) and by each launch still queued (so a destroyed executable graph's
 * objects outlive the work it queued).  The destructor runs once the last reference goes, on the thread
 * that dropped it (a stream's worker for a launch's) and never with the emulator's lock held; as in CUDA it
 * may not call the API.  Releasing more references than the caller (or the graph) holds is
 * cudaErrorInvalidValue and changes nothing.  Shared types: emu_graph.h. */
#include "emu_graph.h"

atomic_int g_uo_ndead;
static uobj_t *g_uo_dead;           /* objects whose destructor is due (G) */
static int g_live_uobjs;

void uobj_drop(uobj_t *o, unsigned n, int owned)
{
    o->refs -= n;
    if (owned) o->owned -= n;
    if (o->refs) return;
    ht_del(&g_handles, o->handle);
    g_live_uobjs--;
    o->dead = g_uo_dead;
    g_uo_dead = o;
    atomic_fetch_add(&g_uo_ndead, 1);
}

void uo_run_dead_slow(void)
{
    pthread_mutex_lock(&G);
    uobj_t *o = g_uo_dead;
    g_uo_dead = NULL;
    atomic_store(&g_uo_ndead, 0);
    pthread_mutex_unlock(&G);
    while (o) {
        uobj_t *next = o->dead;
        o->destroy(o->ptr);
        free(o);
        o = next;
    }
}

void graph_uo_release(graph_t *g)
{
    for (size_t i = 0; i < g->nuo; i++) uobj_drop(g->uo[i].o, g->uo[i].n, 1);
    free(g->uo);
    g->uo = NULL;
    g->nuo = g->capuo = 0;
}

uset_t *graph_uo_set(const graph_t *g, int *err)
{
    *err = 0;
    if (!g->nuo) return NULL;
    uset_t *u = malloc(sizeof *u + g->nuo * sizeof *u->v);
    if (!u) { *err = 1; return NULL; }
    u->refs = 1;
    u->n = g->nuo;
    for (size_t i = 0; i < g->nuo; i++) {
        u->v[i] = g->uo[i];
        u->v[i].o->refs += u->v[i].n;
        u->v[i].o->owned += u->v[i].n;
    }
    return u;
}

int graph_uo_copy(graph_t *dst, const graph_t *src)
{
    if (!src->nuo) return 0;
    if (!(dst->uo = malloc(src->nuo * sizeof *dst->uo))) return -1;
    dst->nuo = dst->capuo = src->nuo;
    for (size_t i = 0; i < src->nuo; i++) {
        dst->uo[i] = src->uo[i];
        dst->uo[i].o->refs += dst->uo[i].n;
        dst->uo[i].o->owned += dst->uo[i].n;
    }
    return 0;
}

void uset_unref(uset_t *u)
{
    if (!u || --u->refs) return;
    for (size_t i = 0; i < u->n; i++) uobj_drop(u->v[i].o, u->v[i].n, 1);
    free(u);
}

/* The host function a launch of an executable graph with user objects queues last: its reference goes. */
void uset_launch_done(void *u)
{
    pthread_mutex_lock(&G);
    uset_unref(u);
    pthread_mutex_unlock(&G);
    uo_run_dead();
}

/* ------------------------------------------------------------------- API */

#define USER_OBJECT_NO_DESTRUCTOR_SYNC 1u
#define GRAPH_USER_OBJECT_MOVE 1u

EXPORT cudaError_t cudaUserObjectCreate(void **out, void *ptr, cudaHostFn_t destroy, unsigned int refs,
                                        unsigned int flags)
{
    RT_ENTER(cudaUserObjectCreate, cudaErrorMemoryAllocation);
    RT_NEED_DEVICE();
    if (!out || !destroy || !refs || refs > INT32_MAX || flags != USER_OBJECT_NO_DESTRUCTOR_SYNC)
        return fail(cudaErrorInvalidValue);
    uobj_t *o = calloc(1, sizeof *o);
    if (!o) return fail(cudaErrorMemoryAllocation);
    o->refs = refs;
    o->ptr = ptr;
    o->destroy = destroy;
    uint64_t id;
    pthread_mutex_lock(&G);
    o->handle = new_handle(TAG_UOBJ, &id);
    int bad = ht_put(&g_handles, o->handle, o);
    if (!bad) g_live_uobjs++;
    pthread_mutex_unlock(&G);
    if (bad) { free(o); return fail(cudaErrorMemoryAllocation); }
    *out = (void *)(uintptr_t)o->handle;
    return cudaSuccess;
}

EXPORT cudaError_t cudaUserObjectRetain(void *h, unsigned int count)
{
    RT_ENTER(cudaUserObjectRetain, cudaErrorUnknown);
    RT_NEED_DEVICE();
    cudaError_t err = cudaSuccess;
    pthread_mutex_lock(&G);
    uobj_t *o = get_uobj(h);
    if (!o) err = cudaErrorInvalidResourceHandle;
    else if (!count || count > INT32_MAX - o->refs) err = cudaErrorInvalidValue;
    else o->refs += count;
    pthread_mutex_unlock(&G);
    return err ? fail(err) : cudaSuccess;
}

EXPORT cudaError_t cudaUserObjectRelease(void *h, unsigned int count)
{
    RT_ENTER(cudaUserObjectRelease, cudaErrorUnknown);
    RT_NEED_DEVICE();
    cudaError_t err = cudaSuccess;
    pthread_mutex_lock(&G);
    uobj_t *o = get_uobj(h);
    if (!o) err = cudaErrorInvalidResourceHandle;
    else if (!count || count > o->refs - o->owned) err = cudaErrorInvalidValue;    /* more than the caller's */
    else uobj_drop(o, count, 0);
    pthread_mutex_unlock(&G);
    uo_run_dead();
    return err ? fail(err) : cudaSuccess;
}

EXPORT cudaError_t cudaGraphRetainUserObject(void *gh, void *h, unsigned int count, unsigned int flags)
{
    RT_ENTER(cudaGraphRetainUserObject, cudaErrorMemoryAllocation);
    RT_NEED_DEVICE();
    cudaError_t err = cudaSuccess;
    pthread_mutex_lock(&G);
    graph_t *g = get_graph(gh);
    uobj_t *o = get_uobj(h);
    size_t i = 0;
    if (!g || !o) err = cudaErrorInvalidResourceHandle;
    else if (!count || (flags & ~GRAPH_USER_OBJECT_MOVE)) err = cudaErrorInvalidValue;
    else if (flags ? count > o->refs - o->owned : count > INT32_MAX - o->refs) err = cudaErrorInvalidValue;
    else {
        while (i < g->nuo && g->uo[i].o != o) i++;
        if (i == g->nuo && g->nuo == g->capuo) {
            size_t nc = g->capuo ? g->capuo * 2 : 4;
            uref_t *nu = realloc(g->uo, nc * sizeof *nu);
            if (!nu) err = cudaErrorMemoryAllocation;
            else { g->uo = nu; g->capuo = nc; }
        }
    }
    if (!err) {
        if (i == g->nuo) g->uo[g->nuo++] = (uref_t){ o, 0 };
        g->uo[i].n += count;
        if (!flags) o->refs += count;   /* new references; a move hands the caller's to the graph */
        o->owned += count;
    }
    pthread_mutex_unlock(&G);
    return err ? fail(err) : cudaSuccess;
}

EXPORT cudaError_t cudaGraphReleaseUserObject(void *gh, void *h, unsigned int count)
{
    RT_ENTER(cudaGraphReleaseUserObject, cudaErrorUnknown);
    RT_NEED_DEVICE();
    cudaError_t err = cudaSuccess;
    pthread_mutex_lock(&G);
    graph_t *g = get_graph(gh);
    uobj_t *o = get_uobj(h);
    size_t i = 0;
    if (!g || !o) err = cudaErrorInvalidResourceHandle;
    else {
        while (i < g->nuo && g->uo[i].o != o) i++;
        if (!count || i == g->nuo || count > g->uo[i].n) err = cudaErrorInvalidValue;
    }
    if (!err) {
        g->uo[i].n -= count;
        if (!g->uo[i].n) g->uo[i] = g->uo[--g->nuo];
        uobj_drop(o, count, 1);
    }
    pthread_mutex_unlock(&G);
    uo_run_dead();
    return err ? fail(err) : cudaSuccess;
}

/* Live user objects, for leak tests (accelEmuLiveGraphs' companion). */
EXPORT int accelEmuLiveUserObjects(void)
{
    INIT();
    pthread_mutex_lock(&G);
    int n = g_live_uobjs;
    pthread_mutex_unlock(&G);
    return n;
}
