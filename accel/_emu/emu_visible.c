/* Physical and visible devices of the emulated CUDA runtime.
 *
 * The machine has ACCEL_EMU_DEVICES physical devices, each with a fixed UUID.  NVML (emu_nvml.c)
 * reports all of them, as the real NVML does.
 * The CUDA runtime shows only those CUDA_VISIBLE_DEVICES selects, renumbered in the order given, with
 * the rules of the real driver as PyTorch mirrors them (reference/torch_device_stream.md §5.6):
 *  - unset: every device; set but empty: none;
 *  - ordinals, read like strtoul ("1gpu2" is 1, leading blanks and a sign allowed); a negative or
 *    unreadable entry, or an ordinal the machine lacks, ends the list;
 *  - a list that starts with "GPU-" (or "MIG-") holds UUID prefixes; an entry without that prefix
 *    ends it, as does a prefix that matches no device or several (ambiguous);
 *  - a repeated entry (the same text, the same ordinal or two prefixes of one device) hides all
 *    devices.
 * The emulated devices are not MIG-partitioned: no "MIG-" entry resolves.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu_tables.h"

/* ------------------------------------------------------------------- UUIDs */

void emu_uuid(int phys, unsigned char out[16])
{
    uint64_t x = 0xacce1e0000000000ull + (uint64_t)phys;
    for (int i = 0; i < 16; i++) {
        x += 0x9e3779b97f4a7c15ull;
        uint64_t z = x;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        out[i] = (unsigned char)(z ^ (z >> 31));
    }
    out[0] = (unsigned char)phys;   /* distinct even if the mix collided */
}

/* nvidia-smi's form: GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx (40 characters). */
void emu_uuid_text(int phys, char out[EMU_UUID_TEXT])
{
    unsigned char u[16];
    emu_uuid(phys, u);
    snprintf(out, EMU_UUID_TEXT,
             "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
             u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
             u[14], u[15]);
}

/* ------------------------------------------------------ CUDA_VISIBLE_DEVICES */

typedef struct { const char *s; size_t n; } entry_t;

static int is_blank(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

/* An ordinal as strtoul reads it (leading blanks, a sign, digits), kept as its significant digits so
 * that any two can be compared exactly: n = -1 when the entry has no digits or is negative. */
typedef struct { const char *d; long n; } ordinal_t;

static ordinal_t read_ordinal(entry_t e)
{
    size_t i = 0;
    while (i < e.n && is_blank(e.s[i])) i++;
    int neg = i < e.n && e.s[i] == '-';
    if (i < e.n && (e.s[i] == '+' || e.s[i] == '-')) i++;
    ordinal_t o = { e.s + i, -1 };
    if (i == e.n || e.s[i] < '0' || e.s[i] > '9') return o;
    while (i < e.n && e.s[i] == '0') i++;
    o.d = e.s + i;
    o.n = 0;
    while (i < e.n && e.s[i] >= '0' && e.s[i] <= '9') { i++; o.n++; }
    if (neg && o.n) o.n = -1;   /* -0 reads as 0 */
    return o;
}

static int cmp_ordinal(const void *a, const void *b)
{
    const ordinal_t *x = a, *y = b;
    if (x->n != y->n) return x->n < y->n ? -1 : 1;
    return memcmp(x->d, y->d, (size_t)x->n);
}

/* The ordinal's value if it is below nphys, else -1. */
static int ordinal_below(ordinal_t o, int nphys)
{
    long v = 0;
    for (long i = 0; i < o.n; i++) {
        v = v * 10 + (o.d[i] - '0');
        if (v >= nphys) return -1;
    }
    return v < nphys ? (int)v : -1;
}

static int cmp_entry(const void *a, const void *b)
{
    const entry_t *x = a, *y = b;
    int c = memcmp(x->s, y->s, x->n < y->n ? x->n : y->n);
    return c ? c : (x->n > y->n) - (x->n < y->n);
}

/* Ordinals: the list ends at the first negative/unreadable entry; repeats hide everything; then
 * the devices are those before the first ordinal the machine lacks. */
static int visible_ordinals(const entry_t *es, int n, int nphys, int *phys)
{
    ordinal_t *v = malloc(sizeof *v * (size_t)n);
    if (!v) return -1;
    int len = 0;
    while (len < n && (v[len] = read_ordinal(es[len])).n >= 0) len++;
    /* More than nphys readable ordinals repeat one (then count is 0): phys never overflows. */
    int count = 0;
    while (count < len && count < nphys && (phys[count] = ordinal_below(v[count], nphys)) >= 0) count++;
    qsort(v, (size_t)len, sizeof *v, cmp_ordinal);
    for (int i = 1; i < len; i++)
        if (cmp_ordinal(&v[i], &v[i - 1]) == 0) count = 0;
    free(v);
    return count;
}

/* UUID prefixes: the list ends at the first entry without the prefix; repeated text hides
 * everything; then each entry must name exactly one device, and one device only once. */
static int visible_uuids(entry_t *es, int n, const char *prefix, int nphys, int *phys)
{
    size_t plen = strlen(prefix);
    int len = 0;
    while (len < n && es[len].n >= plen && memcmp(es[len].s, prefix, plen) == 0) len++;
    entry_t *sorted = malloc(sizeof *sorted * (size_t)len + 1);
    if (!sorted) return -1;
    memcpy(sorted, es, sizeof *sorted * (size_t)len);
    qsort(sorted, (size_t)len, sizeof *sorted, cmp_entry);
    int repeated = 0;
    for (int i = 1; i < len; i++) repeated |= cmp_entry(&sorted[i], &sorted[i - 1]) == 0;
    free(sorted);
    if (repeated) return 0;
    int count = 0;
    for (int i = 0; i < len; i++) {
        int match = -1, matches = 0;
        for (int d = 0; d < nphys; d++) {
            char text[EMU_UUID_TEXT];
            emu_uuid_text(d, text);
            if (es[i].n <= strlen(text) && memcmp(text, es[i].s, es[i].n) == 0) {
                match = d;
                matches++;
            }
        }
        if (matches != 1) break;
        for (int j = 0; j < count; j++)
            if (phys[j] == match) return 0;
        phys[count++] = match;
    }
    return count;
}

int emu_visible_devices(const char *var, int nphys, int *phys)
{
    if (!var) {
        for (int d = 0; d < nphys; d++) phys[d] = d;
        return nphys;
    }
    int n = 1;
    for (const char *p = var; *p; p++) n += *p == ',';
    entry_t *es = malloc(sizeof *es * (size_t)n);
    if (!es) return -1;
    const char *p = var;
    for (int i = 0; i < n; i++) {
        const char *comma = strchr(p, ',');
        es[i].s = p;
        es[i].n = comma ? (size_t)(comma - p) : strlen(p);
        p = comma ? comma + 1 : p + es[i].n;
    }
    int count;
    if (strncmp(var, "GPU-", 4) == 0) count = visible_uuids(es, n, "GPU-", nphys, phys);
    else if (strncmp(var, "MIG-", 4) == 0) count = visible_uuids(es, n, "MIG-", 0, phys);
    else count = visible_ordinals(es, n, nphys, phys);
    free(es);
    return count;
}
