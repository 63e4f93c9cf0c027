/* Device profiles: what kind of GPU each emulated device is (ACCEL_EMU_PROFILE, or a mixed machine
 * from ACCEL_EMU_DEVICES="h100:2,a100:2").  One row per board, with the values that differ between
 * boards; emu_tables.c answers the device attributes from the row, emu_props.c builds cudaDeviceProp
 * from those attributes and emu_nvml.c reports NVML's view of the same row, so the three always agree.
 *
 * Sources of the values (public):
 *  - per compute capability (threads, blocks and shared memory per SM, opt-in shared memory per
 *    block, 1 KiB reserved per block from 8.0 on, clusters from 9.0 on): the CUDA C++ Programming
 *    Guide, "Technical Specifications per Compute Capability" and the 8.x / 9.0 / 10.0 sections;
 *  - per board (SM count, boost clock, memory clock, bus width, L2 size, memory size, TDP, PCI device
 *    id): NVIDIA's data sheets and the boards' deviceQuery / nvidia-smi reports.  Memory is the
 *    board's nominal size in GiB (a real driver reports a few hundred MiB less).  The B200's bus width is
 *    what its driver reports (7680 bits, not the 8192 of early data sheets; its L2, SM count, per-SM
 *    limits and 3996 MHz memory clock as queried on one: pytorch/ao#4002).
 *  - persisting-L2 limit: 3/4 of L2 where no board report was at hand (the A100's ratio, 30 of 40 MB);
 *    none before 8.0 (no L2 access-policy windows on 7.x).
 */
#include <string.h>

#include "emu_tables.h"

static const emu_profile_t profiles[] = {
    /* key    name                          cc     SMs  memory      clock    memclk   bus   L2          persist
     *        thr/SM blk/SM smem/SM  optin   resv copy fp64 pci dev  subsys        arch brand cores/SM TDP  gen mig */
    {"h100", "NVIDIA H100 80GB HBM3",        9, 0, 132, 80ull << 30, 1980000, 2619000, 5120, 52428800, 32505856,
             2048, 32, 233472, 232448, 1024, 3, 2, 0x2330, 0x16c1, 9, 14, 128, 700, 5, 1},
    {"a100", "NVIDIA A100-SXM4-80GB",        8, 0, 108, 80ull << 30, 1410000, 1593000, 5120, 41943040, 31457280,
             2048, 32, 167936, 166912, 1024, 3, 2, 0x20b2, 0x147f, 7, 14, 64, 400, 4, 1},
    {"a10",  "NVIDIA A10",                   8, 6, 72,  24ull << 30, 1695000, 6251000, 384,  6291456,  4718592,
             1536, 16, 102400, 101376, 1024, 2, 64, 0x2236, 0x1482, 7, 14, 128, 150, 4, 0},
    {"l4",   "NVIDIA L4",                    8, 9, 58,  24ull << 30, 2040000, 6251000, 192,  50331648, 37748736,
             1536, 24, 102400, 101376, 1024, 2, 64, 0x27b8, 0x16ca, 8, 14, 128, 72, 4, 0},
    {"t4",   "Tesla T4",                     7, 5, 40,  16ull << 30, 1590000, 5001000, 256,  4194304,  0,
             1024, 16, 65536,  65536,  0,    3, 32, 0x1eb8, 0x12a2, 6, 2, 64, 70, 3, 0},
    {"b200", "NVIDIA B200",                 10, 0, 148, 180ull << 30, 1965000, 3996000, 7680, 132644864, 99483648,
             2048, 32, 233472, 232448, 1024, 3, 2, 0x2901, 0x1999, 10, 14, 128, 1000, 5, 1},
};

#define NPROFILES (sizeof profiles / sizeof *profiles)

static const emu_profile_t *g_dev_profile[EMU_MAX_DEVICES];   /* physical device -> its row (NULL: default) */

const emu_profile_t *emu_profile(int phys)
{
    const emu_profile_t *p = phys >= 0 && phys < EMU_MAX_DEVICES ? g_dev_profile[phys] : NULL;
    return p ? p : &profiles[0];
}

const emu_profile_t *emu_profile_find(const char *key, size_t len)
{
    for (size_t i = 0; i < NPROFILES; i++)
        if (strlen(profiles[i].key) == len && strncmp(profiles[i].key, key, len) == 0) return &profiles[i];
    return NULL;
}

const emu_profile_t *emu_profile_at(int i)
{
    return i >= 0 && (size_t)i < NPROFILES ? &profiles[i] : NULL;
}

void emu_profiles_set(const emu_profile_t *const *rows, int n)
{
    for (int d = 0; d < EMU_MAX_DEVICES; d++) g_dev_profile[d] = d < n ? rows[d] : NULL;
}

/* "name:n,name:n,..." (":n" optional, 1 by default) into rows; returns the device count, -1 when
 * malformed (an unknown name, a count that is not 0..EMU_DEVICE_LIMIT, an empty entry, more than
 * EMU_DEVICE_LIMIT devices in all). */
int emu_profiles_parse(const char *spec, const emu_profile_t **rows)
{
    int n = 0;
    const char *p = spec;
    for (;;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *colon = memchr(p, ':', len);
        size_t klen = colon ? (size_t)(colon - p) : len;
        const emu_profile_t *row = emu_profile_find(p, klen);
        if (!row) return -1;
        long count = 1;
        if (colon) {
            const char *c = colon + 1;
            if (c == p + len) return -1;
            count = 0;
            for (; c < p + len; c++) {
                if (*c < '0' || *c > '9') return -1;
                count = count * 10 + (*c - '0');
                if (count > EMU_DEVICE_LIMIT) return -1;
            }
        }
        if (n + count > EMU_DEVICE_LIMIT) return -1;
        for (long i = 0; i < count; i++) rows[n++] = row;
        if (!end) return n;
        p = end + 1;
    }
}
