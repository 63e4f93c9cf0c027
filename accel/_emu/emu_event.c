/* Events of the emulated runtime: an event handle points at shared state (its flags and the record
 * its last cudaEventRecord placed in a stream), which IPC handles alias; record, query,
 * synchronise, elapsed time, and cudaStreamWaitEvent (a stream waits for the event's record).  The
 * model is described in emu_core.c. */
#include "emu_runtime.h"

/* ------------------------------------------------------------ events (API) */

static cudaError_t event_register(evshared_t *sh, cudaEvent_t *out)
{
    event_t *e = malloc(sizeof *e);
    uint64_t id;
    if (!e) return cudaErrorMemoryAllocation;
    e->sh = sh;
    e->handle = new_handle(TAG_EVENT, &id);
    if (ht_put(&g_handles, e->handle, e)) { free(e); return cudaErrorMemoryAllocation; }
    sh->refs++;
    g_live_events++;
    *out = (cudaEvent_t)(uintptr_t)e->handle;
    return cudaSuccess;
}

static void evshared_unref(evshared_t *sh)
{
    if (--sh->refs) return;
    if (sh->ipc_id) ht_del(&g_ipc, sh->ipc_id);
    rec_unref(sh->latest);
    free(sh->capdeps.v);
    free(sh);
}

static cudaError_t event_create(cudaEvent_t *out, unsigned int flags)
{
    if (!out || (flags & ~(EV_BLOCKING_SYNC | EV_DISABLE_TIMING | EV_INTERPROCESS)))
        return fail(cudaErrorInvalidValue);
    if ((flags & EV_INTERPROCESS) && !(flags & EV_DISABLE_TIMING)) return fail(cudaErrorInvalidValue);
    evshared_t *sh = calloc(1, sizeof *sh);
    if (!sh) return fail(cudaErrorMemoryAllocation);
    sh->device = t_dev;
    sh->flags = flags;
    pthread_mutex_lock(&G);
    cudaError_t err = event_register(sh, out);
    pthread_mutex_unlock(&G);
    if (err) { free(sh); return fail(err); }
    ensure_ctx(sh->device);
    return cudaSuccess;
}

EXPORT cudaError_t cudaEventCreateWithFlags(cudaEvent_t *out, unsigned int flags)
{
    RT_ENTER(cudaEventCreateWithFlags, cudaErrorMemoryAllocation);
    RT_NEED_DEVICE();
    return event_create(out, flags);
}

EXPORT cudaError_t cudaEventCreate(cudaEvent_t *out)
{
    RT_ENTER(cudaEventCreate, cudaErrorMemoryAllocation);
    RT_NEED_DEVICE();
    return event_create(out, 0);
}

EXPORT cudaError_t cudaEventDestroy(cudaEvent_t h)
{
    RT_ENTER(cudaEventDestroy, cudaErrorUnknown);
    RT_NEED_DEVICE();
    pthread_mutex_lock(&G);
    event_t *e = get_event(h);
    if (e) {
        ht_del(&g_handles, e->handle);
        g_live_events--;
        evshared_unref(e->sh);
        free(e);
    }
    pthread_mutex_unlock(&G);
    return e ? cudaSuccess : fail(cudaErrorInvalidResourceHandle);
}

static cudaError_t event_record(cudaEvent_t eh, cudaStream_t sh, unsigned flags)
{
    if (flags > 1) return fail(cudaErrorInvalidValue);
    item_t *it = item_new(IT_RECORD);
    rec_t *r = rec_new(2);
    if (!it || !r) { free(it); free(r); return fail(cudaErrorMemoryAllocation); }
    it->rec = r;
    cudaError_t err = cudaSuccess;
    pthread_mutex_lock(&G);
    event_t *e = get_event(eh);
    stream_t *s = e ? get_stream(sh, &err) : NULL;
    if (!e || (s && s->device != e->sh->device)) err = cudaErrorInvalidResourceHandle;
    if (!err && s->cap) {
        err = capture_record(s, e, flags);     /* the event stands for captured work */
        free(it);
        free(r);
    } else if (!err) {
        err = submit(s, it);            /* frees it (its reference to r) on failure */
        if (err) {
            rec_unref(r);               /* refused: the event keeps its previous record */
        } else {
            rec_unref(e->sh->latest);
            e->sh->latest = r;
            e->sh->capid = 0;
        }
    } else {
        free(it);
        free(r);
    }
    pthread_mutex_unlock(&G);
    return err ? fail(err) : cudaSuccess;
}

EXPORT cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s)
{
    RT_ENTER(cudaEventRecord, cudaErrorUnknown);
    RT_NEED_DEVICE();
    return event_record(e, s, 0);
}

EXPORT cudaError_t cudaEventRecordWithFlags(cudaEvent_t e, cudaStream_t s, unsigned int flags)
{
    RT_ENTER(cudaEventRecordWithFlags, cudaErrorUnknown);
    RT_NEED_DEVICE();
    return event_record(e, s, flags);
}

EXPORT cudaError_t cudaEventQuery(cudaEvent_t h)
{
    RT_ENTER(cudaEventQuery, cudaErrorUnknown);
    RT_NEED_DEVICE();
    cudaError_t err = capture_unsafe();
    if (err) return fail(err);
    pthread_mutex_lock(&G);
    event_t *e = get_event(h);
    err = !e ? cudaErrorInvalidResourceHandle
        : (e->sh->capid && capture_event_live(e->sh)) ? cudaErrorCapturedEvent
        : (e->sh->latest && !e->sh->latest->reached) ? cudaErrorNotReady : emu_sticky(e->sh->device);
    pthread_mutex_unlock(&G);
    return err ? fail(err) : cudaSuccess;
}

EXPORT cudaError_t cudaEventSynchronize(cudaEvent_t h)
{
    RT_ENTER(cudaEventSynchronize, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (t_in_hostfn) return fail(cudaErrorNotPermitted);
    cudaError_t err = capture_unsafe();
    if (err) return fail(err);
    pthread_mutex_lock(&G);
    event_t *e = get_event(h);
    if (!e) err = cudaErrorInvalidResourceHandle;
    else if (e->sh->capid && capture_event_live(e->sh)) err = cudaErrorCapturedEvent;
    else if (e->sh->latest) wait_rec(e->sh->latest);
    if (e && !err) err = emu_sticky(e->sh->device);     /* a kernel it waited for faulted */
    pthread_mutex_unlock(&G);
    return err ? fail(err) : cudaSuccess;
}

EXPORT cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
{
    RT_ENTER(cudaEventElapsedTime, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (!ms) return fail(cudaErrorInvalidValue);
    cudaError_t err = cudaSuccess;
    pthread_mutex_lock(&G);
    event_t *a = get_event(start), *b = get_event(end);
    if (!a || !b || ((a->sh->flags | b->sh->flags) & EV_DISABLE_TIMING) ||
        !a->sh->latest || !b->sh->latest)
        err = cudaErrorInvalidResourceHandle;
    else if (!a->sh->latest->reached || !b->sh->latest->reached)
        err = cudaErrorNotReady;
    else
        *ms = (float)((double)(b->sh->latest->ts - a->sh->latest->ts) / 1e6);
    pthread_mutex_unlock(&G);
    return err ? fail(err) : cudaSuccess;
}

EXPORT cudaError_t cudaStreamWaitEvent(cudaStream_t sh, cudaEvent_t eh, unsigned int flags)
{
    RT_ENTER(cudaStreamWaitEvent, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (flags > 1) return fail(cudaErrorInvalidValue);
    cudaError_t err = cudaSuccess;
    pthread_mutex_lock(&G);
    stream_t *s = get_stream(sh, &err);
    event_t *e = s ? get_event(eh) : NULL;
    if (s && !e) err = cudaErrorInvalidResourceHandle;
    if (!err && (s->cap || e->sh->capid)) {
        err = capture_wait(s, e, flags);       /* fork, join, or an external wait node */
    } else if (!err && e->sh->latest && !e->sh->latest->reached) {
        item_t *it = item_new(IT_WAIT);
        if (!it) err = cudaErrorMemoryAllocation;
        else {
            it->rec = e->sh->latest;
            it->rec->refs++;
            err = submit(s, it);
        }
    } else if (!err) {
        ensure_ctx(s->device);
    }
    pthread_mutex_unlock(&G);
    return err ? fail(err) : cudaSuccess;
}

/* IPC handle bytes: magic, pid, id.  Only the creating process can open it
 * (an emulator has no shared device memory); it yields a new handle that
 * aliases the same underlying event. */
#define IPC_MAGIC "ACCELEMU"

EXPORT cudaError_t cudaIpcGetEventHandle(cudaIpcEventHandle_t *out, cudaEvent_t h)
{
    RT_ENTER(cudaIpcGetEventHandle, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (!out) return fail(cudaErrorInvalidValue);
    cudaError_t err = cudaSuccess;
    pthread_mutex_lock(&G);
    event_t *e = get_event(h);
    if (!e) err = cudaErrorInvalidResourceHandle;
    else if (!(e->sh->flags & EV_INTERPROCESS)) err = cudaErrorInvalidValue;
    else if (!e->sh->ipc_id) {
        e->sh->ipc_id = g_next_ipc++;
        if (ht_put(&g_ipc, e->sh->ipc_id, e->sh)) { e->sh->ipc_id = 0; err = cudaErrorMemoryAllocation; }
    }
    if (!err) {
        int32_t pid = (int32_t)getpid();
        memset(out, 0, sizeof *out);
        memcpy(out->reserved, IPC_MAGIC, 8);
        memcpy(out->reserved + 8, &pid, sizeof pid);
        memcpy(out->reserved + 16, &e->sh->ipc_id, sizeof e->sh->ipc_id);
    }
    pthread_mutex_unlock(&G);
    return err ? fail(err) : cudaSuccess;
}

EXPORT cudaError_t cudaIpcOpenEventHandle(cudaEvent_t *out, cudaIpcEventHandle_t handle)
{
    RT_ENTER(cudaIpcOpenEventHandle, cudaErrorMemoryAllocation);
    RT_NEED_DEVICE();
    if (!out) return fail(cudaErrorInvalidValue);
    int32_t pid;
    uint64_t id;
    memcpy(&pid, handle.reserved + 8, sizeof pid);
    memcpy(&id, handle.reserved + 16, sizeof id);
    if (memcmp(handle.reserved, IPC_MAGIC, 8))      /* not a handle at all (zeros, garbage): what a real CUDA 13 */
        return fail(cudaErrorInvalidResourceHandle);  /* runtime answered on an H200 (driver 580) */
    if (pid != (int32_t)getpid())
        return fail(cudaErrorInvalidValue);
    pthread_mutex_lock(&G);
    evshared_t *sh = ht_get(&g_ipc, id);
    cudaError_t err = sh ? event_register(sh, out) : cudaErrorInvalidValue;
    pthread_mutex_unlock(&G);
    if (err) return fail(err);
    ensure_ctx(t_dev);
    return cudaSuccess;
}
