/* NVML of the emulated machine, fourth part: event sets (device and system events) and field values (the
 * model is described at the top of emu_nvml.c).
 *
 * Nothing happens on an emulated board that NVML reports as an event (no Xid error, no ECC error, no
 * P-state or clock change, no driver bind or unbind), so an event set can be made, registered for the
 * types a data-center board supports and waited on, and every wait ends with NVML_ERROR_TIMEOUT after its
 * timeout.  Field values: the call succeeds and each field says NVML_ERROR_NOT_SUPPORTED in its own
 * nvmlReturn (the emulator keeps no counters), with the time it was read. */
#include <errno.h>
#include <time.h>

#include "emu_nvml.h"

enum { NVML_ERROR_TIMEOUT = 10, NVML_ERROR_MEMORY = 20 };
/* single- and double-bit ECC errors, P-state changes, Xid critical errors, clock changes */
#define DEVICE_EVENT_TYPES 0x1full
/* nvmlSystemEventTypeGpuDriverUnbind, nvmlSystemEventTypeGpuDriverBind */
#define SYSTEM_EVENT_TYPES 0x3ull

/* ------------------------------------------------------------- event sets */

/* Live sets, device and system ones (a freed set's handle is invalid at once). */
typedef struct { int system; unsigned long long types; } evset_t;
static pthread_mutex_t E = PTHREAD_MUTEX_INITIALIZER;
static evset_t **g_sets;
static size_t g_nsets, g_capsets;

static long set_index(const void *set)     /* E held */
{
    for (size_t i = 0; set && i < g_nsets; i++)
        if (g_sets[i] == set) return (long)i;
    return -1;
}

static nvmlReturn_t set_create(int system, void **out)
{
    evset_t *s = calloc(1, sizeof *s);
    pthread_mutex_lock(&E);
    if (s && g_nsets == g_capsets) {
        size_t nc = g_capsets ? g_capsets * 2 : 8;
        evset_t **ns = realloc(g_sets, nc * sizeof *ns);
        if (ns) { g_sets = ns; g_capsets = nc; }
    }
    int ok = s && g_nsets < g_capsets;
    if (ok) {
        s->system = system;
        g_sets[g_nsets++] = s;
    }
    pthread_mutex_unlock(&E);
    if (!ok) {
        free(s);
        return NVML_ERROR_MEMORY;
    }
    *out = s;
    return NVML_SUCCESS;
}

static nvmlReturn_t set_free(int system, void *set)
{
    pthread_mutex_lock(&E);
    long i = set_index(set);
    int ok = i >= 0 && g_sets[i]->system == system;
    if (ok) g_sets[i] = g_sets[--g_nsets];
    pthread_mutex_unlock(&E);
    if (!ok) return NVML_ERROR_INVALID_ARGUMENT;
    free(set);
    return NVML_SUCCESS;
}

static nvmlReturn_t set_register(int system, void *set, unsigned long long types)
{
    pthread_mutex_lock(&E);
    long i = set_index(set);
    int ok = i >= 0 && g_sets[i]->system == system;
    if (ok) g_sets[i]->types |= types;
    pthread_mutex_unlock(&E);
    return ok ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
}

/* No event ever comes: the wait lasts its timeout. */
static nvmlReturn_t set_wait(int system, void *set, unsigned timeout_ms)
{
    pthread_mutex_lock(&E);
    long i = set_index(set);
    int ok = i >= 0 && g_sets[i]->system == system;
    pthread_mutex_unlock(&E);
    if (!ok) return NVML_ERROR_INVALID_ARGUMENT;
    struct timespec t = { timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000L };
    while (nanosleep(&t, &t) != 0 && errno == EINTR) {
    }
    return NVML_ERROR_TIMEOUT;
}

EXPORT nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvml_device_t *h, unsigned long long *types)
{
    if (EMU_FAULT(nvmlDeviceGetSupportedEventTypes)) return NVML_ERROR_UNKNOWN;
    DEVICE(h, d);
    (void)d;
    if (!types) return NVML_ERROR_INVALID_ARGUMENT;
    *types = DEVICE_EVENT_TYPES;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlEventSetCreate(void **set)
{
    if (EMU_FAULT(nvmlEventSetCreate)) return NVML_ERROR_UNKNOWN;
    ENTER();
    return set ? set_create(0, set) : NVML_ERROR_INVALID_ARGUMENT;
}

EXPORT nvmlReturn_t nvmlEventSetFree(void *set)
{
    if (EMU_FAULT(nvmlEventSetFree)) return NVML_ERROR_UNKNOWN;
    ENTER();
    return set_free(0, set);
}

EXPORT nvmlReturn_t nvmlDeviceRegisterEvents(nvml_device_t *h, unsigned long long types, void *set)
{
    if (EMU_FAULT(nvmlDeviceRegisterEvents)) return NVML_ERROR_UNKNOWN;
    DEVICE(h, d);
    (void)d;
    if (types & ~DEVICE_EVENT_TYPES) return NVML_ERROR_NOT_SUPPORTED;
    return set_register(0, set, types);
}

typedef struct { void *device; unsigned long long type, data; unsigned gi, ci; } nvmlEventData_t;

EXPORT nvmlReturn_t nvmlEventSetWait_v2(void *set, nvmlEventData_t *data, unsigned timeout_ms)
{
    if (EMU_FAULT(nvmlEventSetWait_v2)) return NVML_ERROR_UNKNOWN;
    ENTER();
    if (!data) return NVML_ERROR_INVALID_ARGUMENT;
    return set_wait(0, set, timeout_ms);
}

/* System events: requests are versioned structs. */
typedef struct { unsigned version; void *set; } nvmlSystemEventSetRequest_t;     /* create and free */
typedef struct { unsigned version; unsigned long long types; void *set; } nvmlSystemRegisterEventRequest_t;
typedef struct {
    unsigned version, timeout_ms;
    void *set, *data;
    unsigned size, count;
} nvmlSystemEventSetWaitRequest_t;
_Static_assert(sizeof(nvmlSystemEventSetRequest_t) == 16, "nvmlSystemEventSetCreateRequest_t");
_Static_assert(sizeof(nvmlSystemRegisterEventRequest_t) == 24, "nvmlSystemRegisterEventRequest_t");
_Static_assert(sizeof(nvmlSystemEventSetWaitRequest_t) == 32, "nvmlSystemEventSetWaitRequest_t");

#define REQUEST(r, type) \
    ENTER(); \
    if (!(r)) return NVML_ERROR_INVALID_ARGUMENT; \
    if ((r)->version != NVML_VERSIONED(type, 1)) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH

EXPORT nvmlReturn_t nvmlSystemEventSetCreate(nvmlSystemEventSetRequest_t *r)
{
    if (EMU_FAULT(nvmlSystemEventSetCreate)) return NVML_ERROR_UNKNOWN;
    REQUEST(r, nvmlSystemEventSetRequest_t);
    return set_create(1, &r->set);
}

EXPORT nvmlReturn_t nvmlSystemEventSetFree(nvmlSystemEventSetRequest_t *r)
{
    if (EMU_FAULT(nvmlSystemEventSetFree)) return NVML_ERROR_UNKNOWN;
    REQUEST(r, nvmlSystemEventSetRequest_t);
    return set_free(1, r->set);
}

EXPORT nvmlReturn_t nvmlSystemRegisterEvents(nvmlSystemRegisterEventRequest_t *r)
{
    if (EMU_FAULT(nvmlSystemRegisterEvents)) return NVML_ERROR_UNKNOWN;
    REQUEST(r, nvmlSystemRegisterEventRequest_t);
    if (r->types & ~SYSTEM_EVENT_TYPES) return NVML_ERROR_NOT_SUPPORTED;
    return set_register(1, r->set, r->types);
}

EXPORT nvmlReturn_t nvmlSystemEventSetWait(nvmlSystemEventSetWaitRequest_t *r)
{
    if (EMU_FAULT(nvmlSystemEventSetWait)) return NVML_ERROR_UNKNOWN;
    REQUEST(r, nvmlSystemEventSetWaitRequest_t);
    if (!r->data || !r->size) return NVML_ERROR_INVALID_ARGUMENT;
    return set_wait(1, r->set, r->timeout_ms);
}

/* ------------------------------------------------------------ field values */

typedef struct {
    unsigned field_id, scope_id;
    long long timestamp, latency_us;
    int value_type;
    nvmlReturn_t result;
    unsigned long long value;
} nvmlFieldValue_t;
_Static_assert(sizeof(nvmlFieldValue_t) == 40, "nvmlFieldValue_t");

static nvmlReturn_t fields(nvml_device_t *h, int count, nvmlFieldValue_t *values)
{
    DEVICE(h, d);
    (void)d;
    if (count < 0 || (count && !values)) return NVML_ERROR_INVALID_ARGUMENT;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    for (int i = 0; i < count; i++) {
        values[i].timestamp = (long long)now.tv_sec * 1000000 + now.tv_nsec / 1000;
        values[i].latency_us = 0;
        values[i].value_type = 0;
        values[i].result = NVML_ERROR_NOT_SUPPORTED;
        values[i].value = 0;
    }
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetFieldValues(nvml_device_t *h, int count, nvmlFieldValue_t *values)
{
    if (EMU_FAULT(nvmlDeviceGetFieldValues)) return NVML_ERROR_UNKNOWN;
    return fields(h, count, values);
}

EXPORT nvmlReturn_t nvmlDeviceClearFieldValues(nvml_device_t *h, int count, nvmlFieldValue_t *values)
{
    if (EMU_FAULT(nvmlDeviceClearFieldValues)) return NVML_ERROR_UNKNOWN;
    return fields(h, count, values);
}
