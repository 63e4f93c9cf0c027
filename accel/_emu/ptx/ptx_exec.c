/* The PTX engine's interpreter: warps, the scheduler inside a block, barriers, memory spaces, calls, the
 * warp-synchronous instructions, the worker pool and ptx_launch.
 *
 * Execution model.  A warp runs one group of lanes at a time: the lanes whose pc is the lowest among its
 * runnable lanes (min-pc scheduling reconverges structured code where the paths meet).  A diverging branch
 * stores each lane's pc and reselects; the group runs until its pc reaches the lowest pc of the lanes
 * outside it (then they merge).  Independent thread scheduling (sm_70+): when a diverged warp keeps
 * branching without reconverging (an intra-warp spin lock whose holder sits at a higher pc), the scheduler
 * rotates to the next group for a while, so the holder progresses as on hardware.
 * Barriers are counted per warp: a warp arrives when all its non-exited lanes wait at the barrier; a
 * barrier completes when its count (or every non-exited warp) has arrived.  No runnable warp and no
 * completing barrier is a deadlock: PTX_E_LAUNCH_FAILED with a message, never a hang.  A watchdog
 * (ACCEL_EMU_KERNEL_TIMEOUT seconds, default 60, 0 = none) ends a livelock with PTX_E_LAUNCH_TIMEOUT.
 * Blocks are independent: worker threads (at most the online CPUs, ACCEL_EMU_PTX_THREADS to override) take
 * blocks from a counter; ptx_launch joins them before it returns. */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "ptx_internal.h"

#define ROW(i) (w->regs + (size_t)(i) * 32)
#define ROT_LIMIT 20000u   /* diverged branches without reconverging before a rotation */
#define ROT_BUDGET 2000u   /* branches the rotated group runs */
#define SLICE 50000        /* instructions a warp runs before the block's next warp */

typedef struct launch {
    const struct ptx_kernel *k;
    const ptx_launch_cfg *cfg;
    const ptx_env *env;
    atomic_ulong next;
    unsigned long nblocks;
    atomic_int failed;
    pthread_mutex_t mu;
    int err; char msg[512];
    uint64_t deadline_ns;
    int counting;
    uint64_t count;     /* thread-instructions executed (when counting) */
} launch;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void ptx_exec_set_calls(struct ptx_module *m, void *calls, int n)
{
    m->calls = calls;
    m->ncalls = n;
}

void ptx_module_keep_syms(struct ptx_module *m, psym **syms, int n)
{
    m->syms = syms;
    m->nsyms = n;
}

void ptx_module_free(ptx_module *m)
{
    if (!m) return;
    for (int i = 0; i < m->nallocs; i++)
        if (m->env && m->env->free) m->env->free(m->env->ctx, m->allocs[i]);
    free(m->allocs);
    for (int i = 0; i < m->nkernels; i++) { free(m->kernels[i].param_off); free(m->kernels[i].param_size); }
    free(m->kernels);
    for (int i = 0; i < m->nfuncs; i++) {
        pfunc *f = m->funcs[i];
        free(f->params); free(f->rets); free(f->callees); free(f);
    }
    free(m->funcs);
    for (int i = 0; i < m->nsyms; i++) { free(m->syms[i]->init); free(m->syms[i]); }
    free(m->syms);
    free(m->globals);
    for (int i = 0; i < m->nstrs; i++) free(m->strs[i]);
    free(m->strs);
    free(m->code);
    free(m->consts);
    free(m->constrows);
    free(m->calls);
    free(m);
}

/* ------------------------------------------------------------------------------------------- faults */

static int lane_tid(const warp *w, int lane, unsigned *x, unsigned *y, unsigned *z)
{
    const unsigned *b = w->wk->cfg->block;
    unsigned lin = (unsigned)w->id * 32u + (unsigned)lane;
    *x = lin % b[0]; *y = (lin / b[0]) % b[1]; *z = lin / (b[0] * b[1]);
    return 0;
}

int ptx_fault(warp *w, const insn_t *in, int lane, int code, const char *fmt, ...)
{
    worker *wk = w->wk;
    if (wk->err) return R_FAULT;
    wk->err = code;
    unsigned x, y, z;
    lane_tid(w, lane < 0 ? 0 : lane, &x, &y, &z);
    int n = snprintf(wk->msg, sizeof wk->msg, "kernel '%s', block (%u,%u,%u), thread (%u,%u,%u), line %u: ",
                     wk->k->f->name, wk->ctaid[0], wk->ctaid[1], wk->ctaid[2], x, y, z, in ? in->line : 0);
    if (n > 0 && (size_t)n < sizeof wk->msg) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(wk->msg + n, sizeof wk->msg - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return R_FAULT;
}

static const char *space_name(int sp)
{
    static const char *const N[] = {"generic", "global", "shared", "local", "param", "const", "param"};
    return sp >= 0 && sp <= SP_KPARAM ? N[sp] : "?";
}

void *ptx_mem(warp *w, const insn_t *in, int lane, int sp, uint64_t addr, size_t n)
{
    worker *wk = w->wk;
    if (sp == SP_GENERIC) {
        uint64_t win = addr & PTX_WINMASK;
        sp = win == PTX_SHWIN ? SP_SHARED : win == PTX_LOCWIN ? SP_LOCAL : win == PTX_PARWIN ? SP_KPARAM : SP_GLOBAL;
        if (sp == SP_KPARAM) addr &= 0xffffffffull;
    }
    if (n > 1 && (addr & (n - 1)) && (n & (n - 1)) == 0) {
        ptx_fault(w, in, lane, PTX_E_MISALIGNED_ADDRESS, "misaligned %s address 0x%llx for a %zu-byte access",
                  space_name(sp), (unsigned long long)addr, n);
        return NULL;
    }
    switch (sp) {
    case SP_SHARED: {
        uint64_t a = addr & 0xffffffffull;
        if ((addr & PTX_WINMASK) != PTX_SHWIN && addr >> 32) goto bad_shared;
        if (a + n > wk->smem_size) goto bad_shared;
        return wk->smem + a;
    bad_shared:
        ptx_fault(w, in, lane, PTX_E_ILLEGAL_ADDRESS, "out-of-range shared memory access at 0x%llx (%zu bytes; the block has %zu)",
                  (unsigned long long)addr, n, wk->smem_size);
        return NULL;
    }
    case SP_LOCAL: {
        uint64_t a = addr & 0xffffffffull;
        size_t lpl = wk->m->local_per_lane;
        if (a + n > lpl || ((addr & PTX_WINMASK) != PTX_LOCWIN && addr >> 32)) {
            ptx_fault(w, in, lane, PTX_E_ILLEGAL_ADDRESS, "out-of-range local memory access at 0x%llx (%zu bytes; a thread has %zu)",
                      (unsigned long long)addr, n, lpl);
            return NULL;
        }
        return w->local + (size_t)lane * lpl + a;
    }
    case SP_KPARAM: {
        if (addr + n > wk->cfg->params_size || addr + n < addr) {
            ptx_fault(w, in, lane, PTX_E_ILLEGAL_ADDRESS, "kernel parameter access at offset %llu beyond the %zu-byte parameter buffer",
                      (unsigned long long)addr, wk->cfg->params_size);
            return NULL;
        }
        return (unsigned char *)wk->cfg->params + addr;
    }
    default: {
        if (addr >= wk->lo && addr + n <= wk->hi && addr + n > addr) return (void *)(uintptr_t)addr;
        uint64_t lo = addr, hi = addr + n;
        if (addr + n < addr || !wk->env || !wk->env->check || !wk->env->check(wk->env->ctx, addr, n, &lo, &hi)) {
            ptx_fault(w, in, lane, PTX_E_ILLEGAL_ADDRESS, "illegal %s memory access at address 0x%llx (%zu bytes): not inside any allocation",
                      space_name(sp), (unsigned long long)addr, n);
            return NULL;
        }
        if (lo <= addr && hi >= addr + n) { wk->lo = lo; wk->hi = hi; }
        return (void *)(uintptr_t)addr;
    }
    }
}

/* --------------------------------------------------------------------------------------- scheduling */

/* Picks the next group of w's lanes: the lowest pc among runnable lanes, with every lane at that pc. */
static void resched(warp *w)
{
    for (uint32_t mm = w->active; mm; mm &= mm - 1) w->lpc[__builtin_ctz(mm)] = w->pc;
    w->active = 0;
    w->force = 0;
    w->rot = 0;
    uint32_t cand = w->alive & ~w->bar & ~w->wsync;
    if (!cand) {
        cand = w->alive & w->wsync;
        if (!cand) { w->minother = ~0u; return; }
        w->force = 1;    /* lanes waiting at a warp-synchronous instruction for lanes that cannot come */
    }
    uint32_t best = ~0u;
    for (uint32_t mm = cand; mm; mm &= mm - 1) { uint32_t p = w->lpc[__builtin_ctz(mm)]; if (p < best) best = p; }
    uint32_t grp = 0, other = ~0u;
    for (uint32_t mm = w->alive & ~w->bar; mm; mm &= mm - 1) {
        int l = __builtin_ctz(mm);
        uint32_t p = w->lpc[l];
        if (p == best) grp |= 1u << l;
        else if (p > best && p < other) other = p;
    }
    w->wsync &= ~grp;
    w->active = grp;
    w->pc = best;
    w->minother = other;
    if (other == ~0u) w->divsteps = 0;
}

/* Rotation for independent thread scheduling: the group at the next higher pc runs for a while. */
static void rotate(warp *w)
{
    for (uint32_t mm = w->active; mm; mm &= mm - 1) w->lpc[__builtin_ctz(mm)] = w->pc;
    uint32_t cand = w->alive & ~w->bar & ~w->wsync;
    uint32_t cur = w->pc, next = ~0u, lowest = ~0u;
    for (uint32_t mm = cand; mm; mm &= mm - 1) {
        uint32_t p = w->lpc[__builtin_ctz(mm)];
        if (p > cur && p < next) next = p;
        if (p < lowest) lowest = p;
    }
    if (next == ~0u) next = lowest;
    uint32_t grp = 0;
    for (uint32_t mm = cand; mm; mm &= mm - 1) { int l = __builtin_ctz(mm); if (w->lpc[l] == next) grp |= 1u << l; }
    w->active = grp;
    w->pc = next;
    w->minother = ~0u;    /* no merge checks while rotated */
    w->rot = ROT_BUDGET;
    w->divsteps = 0;
}

static inline uint32_t guard_mask(const warp *w, const insn_t *in)
{
    const uint64_t *g = ROW(in->guard - 1);
    uint32_t gm = 0;
    for (int l = 0; l < 32; l++) gm |= (uint32_t)(g[l] & 1) << l;
    return in->flags & F_NEGPRED ? ~gm : gm;
}

/* Runs w until it waits at a barrier, exits, faults or has run `budget` instructions; `counting` (a
 * constant in each of the two instances) adds the thread-instructions executed to the worker's count. */
static inline __attribute__((always_inline)) int run_warp_impl(warp *w, long budget, int counting)
{
    const insn_t *code = w->wk->m->code;
    const handler_fn *H = ptx_handlers;
    for (;;) {
        if (!w->active) {
            resched(w);
            if (!w->active) return w->alive ? WS_BAR : WS_DONE;
        }
        const insn_t *in = &code[w->pc];
        uint32_t m = w->active;
        if (in->guard) m &= guard_mask(w, in);
        if (counting) w->wk->count += (uint64_t)__builtin_popcount(w->active);   /* issued, predicated-off lanes included */
        int r = H[in->h](w, in, m);
        if (__builtin_expect(r == R_NEXT, 1)) {
            if (++w->pc >= w->minother) resched(w);
        } else if (r == R_JUMPED) {
            if (w->pc >= w->minother) resched(w);
        } else if (r == R_RESCHED) {
            resched(w);
        } else if (r == R_FAULT) {
            return -1;
        } else if (r == R_YIELD) {
            return WS_RUN;
        }
        if (--budget <= 0) return WS_RUN;
    }
}

static int run_warp_plain(warp *w, long budget) { return run_warp_impl(w, budget, 0); }
static int run_warp_count(warp *w, long budget) { return run_warp_impl(w, budget, 1); }
static int run_warp(warp *w, long budget) { return w->wk->L->counting ? run_warp_count(w, budget) : run_warp_plain(w, budget); }

/* --------------------------------------------------------------------------------- control handlers */

int h_bra(warp *w, const insn_t *in, uint32_t m)
{
    uint32_t taken = m, nt = w->active & ~m;
    if (w->minother != ~0u || w->rot) {
        if (w->rot) {
            if (--w->rot == 0) {
                if (!nt) w->pc = in->target; else if (taken) { for (uint32_t mm = taken; mm; mm &= mm - 1) w->lpc[__builtin_ctz(mm)] = in->target; w->active = nt; w->pc++; }
                else w->pc++;
                return R_RESCHED;
            }
        } else if (++w->divsteps > ROT_LIMIT) {
            if (!nt) w->pc = in->target; else if (taken) { for (uint32_t mm = taken; mm; mm &= mm - 1) w->lpc[__builtin_ctz(mm)] = in->target; w->active = nt; w->pc++; }
            else w->pc++;
            rotate(w);
            return R_JUMPED;
        }
    }
    if (!nt) { w->pc = in->target; return R_JUMPED; }
    if (!taken) { w->pc++; return R_JUMPED; }
    for (uint32_t mm = taken; mm; mm &= mm - 1) w->lpc[__builtin_ctz(mm)] = in->target;
    w->active = nt;     /* the not-taken lanes keep the group's pc + 1 */
    w->pc++;
    return R_RESCHED;
}

int h_brx(warp *w, const insn_t *in, uint32_t m)
{
    return ptx_fault(w, in, __builtin_ctz(m | 0x80000000u), PTX_E_ILLEGAL_INSTRUCTION, "brx is not supported");
}

int h_exit(warp *w, const insn_t *in, uint32_t m)
{
    (void)in;
    w->alive &= ~m;
    w->active &= ~m;
    if (w->active) { w->pc++; return R_JUMPED; }
    return R_RESCHED;
}

/* A NUL-terminated string at a lane's generic address (at most cap - 1 bytes; "?" where unreadable). */
static void lane_string(warp *w, const insn_t *in, int lane, uint64_t addr, char *out, size_t cap)
{
    size_t i = 0;
    worker *wk = w->wk;
    int err = wk->err;
    for (; i + 1 < cap; i++) {
        const char *p = ptx_mem(w, in, lane, SP_GENERIC, addr + i, 1);
        if (!p) { wk->err = err; if (!i) out[i++] = '?'; break; }   /* not a fault of its own */
        if (!*p) break;
        out[i] = *p;
    }
    out[i] = 0;
}

#define PTX_E_ASSERT 710    /* CUDA_ERROR_ASSERT: sticky, as the other execution faults */

/* Device printf for one lane: `fmt` at a generic address, its arguments packed at `args`, each at its own
 * size's alignment (integers 4 bytes, 8 with l / ll / j / z / t; floating point as double; %s / %p a
 * pointer), as CUDA's vprintf reads them.  Writes the text to stdout at once (CUDA buffers it until a
 * synchronisation); returns the characters printed, or -1 when the format or an argument is unreadable. */
static int lane_printf(warp *w, const insn_t *in, int lane, uint64_t fmt_addr, uint64_t args)
{
    char fmt[1024], out[4096], spec[32], str[512];
    worker *wk = w->wk;
    int err = wk->err;
    lane_string(w, in, lane, fmt_addr, fmt, sizeof fmt);
    size_t n = 0, off = 0;
    for (const char *f = fmt; *f && n < sizeof out - 1; ) {
        if (*f != '%') { out[n++] = *f++; continue; }
        if (f[1] == '%') { out[n++] = '%'; f += 2; continue; }
        const char *st = f++;
        while (*f && strchr("-+ #0", *f)) f++;
        while (*f >= '0' && *f <= '9') f++;
        if (*f == '.') { f++; while (*f >= '0' && *f <= '9') f++; }
        int longs = 0;
        while (*f && strchr("hlLjzt", *f)) { if (*f != 'h') longs = 1; f++; }
        char conv = *f;
        if (!conv) break;
        f++;
        /* the spec without its length modifiers, then the C type's */
        size_t sl = 0;
        for (const char *q = st; q < f - 1 && sl < sizeof spec - 4; q++) if (!strchr("hlLjzt", *q)) spec[sl++] = *q;
        size_t size = strchr("diouxXc", conv) ? (longs ? 8 : 4) : 8;
        off = (off + size - 1) / size * size;
        const unsigned char *a = ptx_mem(w, in, lane, SP_GENERIC, args + off, size);
        if (!a) { wk->err = err; return -1; }
        off += size;
        uint64_t v = 0;
        memcpy(&v, a, size);
        int k;
        size_t room = sizeof out - n;
        if (strchr("di", conv)) { spec[sl++] = 'l'; spec[sl++] = 'l'; spec[sl++] = conv; spec[sl] = 0;
            k = snprintf(out + n, room, spec, size == 8 ? (long long)v : (long long)(int32_t)v); }
        else if (strchr("ouxX", conv)) { spec[sl++] = 'l'; spec[sl++] = 'l'; spec[sl++] = conv; spec[sl] = 0;
            k = snprintf(out + n, room, spec, size == 8 ? (unsigned long long)v : (unsigned long long)(uint32_t)v); }
        else if (conv == 'c') { spec[sl++] = 'c'; spec[sl] = 0; k = snprintf(out + n, room, spec, (int)(unsigned char)v); }
        else if (strchr("fFeEgGaA", conv)) { double d; memcpy(&d, &v, 8); spec[sl++] = conv; spec[sl] = 0;
            k = snprintf(out + n, room, spec, d); }
        else if (conv == 's') { lane_string(w, in, lane, v, str, sizeof str); spec[sl++] = 's'; spec[sl] = 0;
            k = snprintf(out + n, room, spec, v ? str : "(null)"); }
        else if (conv == 'p') { k = snprintf(out + n, room, "0x%llx", (unsigned long long)v); }
        else { k = snprintf(out + n, room, "%%%c", conv); }
        if (k > 0) n += (size_t)k < room ? (size_t)k : room - 1;
    }
    wk->err = err;
    fwrite(out, 1, n, stdout);
    return (int)n;
}

/* The device heap (malloc / free in kernels): blocks from env->alloc (device memory of the launch's device,
 * so copies and bounds checks see them), at most the 8 MiB of CUDA's default cudaLimitMallocHeapSize in all;
 * free takes only what malloc returned. */
static pthread_mutex_t g_heap_mu = PTHREAD_MUTEX_INITIALIZER;
static struct { uint64_t p; size_t n; } *g_heap;
static size_t g_nheap, g_capheap, g_heap_bytes;
#define PTX_HEAP_LIMIT ((size_t)8 << 20)

static uint64_t heap_malloc(const ptx_env *env, uint64_t n)
{
    if (!n || n > PTX_HEAP_LIMIT || !env || !env->alloc) return 0;
    pthread_mutex_lock(&g_heap_mu);
    uint64_t p = 0;
    if (g_nheap == g_capheap) {
        size_t nc = g_capheap ? 2 * g_capheap : 64;
        void *nh = realloc(g_heap, nc * sizeof *g_heap);
        if (nh) { g_heap = nh; g_capheap = nc; }
    }
    if (g_heap_bytes + n <= PTX_HEAP_LIMIT && g_nheap < g_capheap) {
        p = (uint64_t)(uintptr_t)env->alloc(env->ctx, (size_t)n, 16);
        if (p) { g_heap[g_nheap].p = p; g_heap[g_nheap++].n = (size_t)n; g_heap_bytes += (size_t)n; }
    }
    pthread_mutex_unlock(&g_heap_mu);
    return p;
}

static int heap_free(const ptx_env *env, uint64_t p)
{
    if (!p) return 0;
    pthread_mutex_lock(&g_heap_mu);
    size_t i = 0;
    while (i < g_nheap && g_heap[i].p != p) i++;
    int found = i < g_nheap;
    if (found) { g_heap_bytes -= g_heap[i].n; g_heap[i] = g_heap[--g_nheap]; }
    pthread_mutex_unlock(&g_heap_mu);
    if (found && env && env->free) env->free(env->ctx, (void *)(uintptr_t)p);
    return found ? 0 : -1;
}

int h_trap(warp *w, const insn_t *in, uint32_t m)
{
    if (!m) return R_NEXT;
    int lane = __builtin_ctz(m);
    if (in->aop == 3 || in->aop == 4) {     /* the built-in malloc / free */
        for (uint32_t mm = m; mm; mm &= mm - 1) {
            int l = __builtin_ctz(mm);
            uint64_t v = ROW(in->s[0])[l];
            if (in->aop == 3) ROW(in->d[0])[l] = heap_malloc(w->wk->env, v);
            else if (heap_free(w->wk->env, v))
                return ptx_fault(w, in, l, PTX_E_ILLEGAL_ADDRESS, "free of 0x%llx, which the device's malloc did not "
                                 "return (or was freed already)", (unsigned long long)v);
        }
        return R_NEXT;
    }
    if (in->aop == 2) {     /* the built-in vprintf: each lane's line, in lane order */
        uint64_t *D = ROW(in->d[0]);
        flockfile(stdout);
        for (uint32_t mm = m; mm; mm &= mm - 1) {
            int l = __builtin_ctz(mm);
            D[l] = (uint32_t)lane_printf(w, in, l, ROW(in->s[0])[l], ROW(in->s[1])[l]);
        }
        fflush(stdout);
        funlockfile(stdout);
        return R_NEXT;
    }
    if (in->aop == 1) {     /* the built-in __assertfail (ptx_parse.c): CUDA's assertion line, then 710 */
        char msg[256], file[256], fn[256];
        lane_string(w, in, lane, ROW(in->s[0])[lane], msg, sizeof msg);
        lane_string(w, in, lane, ROW(in->s[1])[lane], file, sizeof file);
        lane_string(w, in, lane, ROW(in->s[3])[lane], fn, sizeof fn);
        unsigned x, y, z;
        lane_tid(w, lane, &x, &y, &z);
        fprintf(stderr, "%s:%u: %s: block: [%u,%u,%u], thread: [%u,%u,%u] Assertion `%s` failed.\n", file,
                (unsigned)ROW(in->s[2])[lane], fn, w->wk->ctaid[0], w->wk->ctaid[1], w->wk->ctaid[2], x, y, z, msg);
        return ptx_fault(w, in, lane, PTX_E_ASSERT, "device-side assertion `%s` failed (%s:%u)", msg, file,
                         (unsigned)ROW(in->s[2])[lane]);
    }
    return ptx_fault(w, in, lane, PTX_E_ILLEGAL_INSTRUCTION, "trap");
}

int h_brkpt(warp *w, const insn_t *in, uint32_t m)
{
    if (!m) return R_NEXT;
    return ptx_fault(w, in, __builtin_ctz(m), PTX_E_ILLEGAL_INSTRUCTION, "brkpt");
}

/* The graph layer's setter of conditional handles (emu_graph_cond.c; weak: absent where the engine is linked alone). */
void emu_graph_set_conditional(unsigned long long handle, unsigned int value) __attribute__((weak));

int h_nop(warp *w, const insn_t *in, uint32_t m) { (void)w; (void)in; (void)m; return R_NEXT; }
int h_prefetch(warp *w, const insn_t *in, uint32_t m) { (void)w; (void)in; (void)m; return R_NEXT; }

/* call: each calling lane pushes a frame; arguments are copied from the caller's frame to the callee's. */
/* The callee of an indirect call for lane l: the function whose address (a pfunc, ptx_parse.c) the lane holds,
 * or NULL after a fault. */
static const pfunc *indirect_callee(warp *w, const insn_t *in, const callsite *cs, int l)
{
    const struct ptx_module *M = w->wk->m;
    uint64_t v = ROW(in->s[0])[l];
    for (int i = 0; i < M->nfuncs; i++) {
        const pfunc *g = M->funcs[i];
        if ((uint64_t)(uintptr_t)g != v) continue;
        if (!g->defined || g->is_entry)
            return ptx_fault(w, in, l, PTX_E_ILLEGAL_INSTRUCTION, "indirect call of %s '%s'",
                             g->is_entry ? "kernel" : "undefined function", g->name), NULL;
        if (cs->nargs != g->nparams || cs->nrets > g->nrets)
            return ptx_fault(w, in, l, PTX_E_ILLEGAL_INSTRUCTION, "indirect call of '%s' with %d arguments and %d "
                             "results (it takes %d and gives %d)", g->name, cs->nargs, cs->nrets, g->nparams, g->nrets), NULL;
        return g;
    }
    ptx_fault(w, in, l, PTX_E_ILLEGAL_ADDRESS, "indirect call of address 0x%llx, which is no function",
              (unsigned long long)v);
    return NULL;
}

int h_call(warp *w, const insn_t *in, uint32_t m)
{
    const struct ptx_module *M = w->wk->m;
    const callsite *cs = &M->calls[in->target];
    const pfunc *g = cs->fn;
    if (!m) return R_NEXT;
    size_t lpl = M->local_per_lane;
    if (cs->builtin == PTX_BUILTIN_SET_CONDITIONAL) {   /* each calling lane in turn (racing calls: undefined) */
        for (uint32_t mm = m; mm; mm &= mm - 1) {
            int l = __builtin_ctz(mm);
            const unsigned char *base = w->local + (size_t)l * lpl + w->fp[l];
            uint64_t handle;
            uint32_t value;
            memcpy(&handle, base + cs->args[0], 8);
            memcpy(&value, base + cs->args[1], 4);
            if (emu_graph_set_conditional) emu_graph_set_conditional(handle, value);
        }
        return R_NEXT;
    }
    int same = 1;   /* every lane calls the same function */
    for (uint32_t mm = m; mm; mm &= mm - 1) {
        int l = __builtin_ctz(mm);
        if (cs->indirect) {
            const pfunc *gl = indirect_callee(w, in, cs, l);
            if (!gl) return R_FAULT;
            if (g && gl != g) same = 0;
            g = gl;
        }
        if (w->depth[l] >= PTX_MAXDEPTH)
            return ptx_fault(w, in, l, PTX_E_LAUNCH_FAILED, "call stack overflow (depth %d) calling '%s'", PTX_MAXDEPTH, g->name);
        /* the caller's frame size: the function containing this call */
        const pfunc *caller = NULL;
        uint32_t pc = (uint32_t)(in - M->code);
        for (int i = 0; i < M->nfuncs; i++)
            if (M->funcs[i]->defined && pc >= M->funcs[i]->pc0 && pc < M->funcs[i]->pc1) { caller = M->funcs[i]; break; }
        uint64_t nfp = w->fp[l] + (caller ? caller->frame : 0);
        if (nfp + g->frame > lpl)
            return ptx_fault(w, in, l, PTX_E_LAUNCH_FAILED, "stack overflow: %zu bytes of local memory per thread exhausted calling '%s'", lpl, g->name);
        unsigned char *base = w->local + (size_t)l * lpl;
        for (int a = 0; a < cs->nargs; a++) {
            if (w->fp[l] + cs->args[a] + g->params[a].size > lpl)   /* an indirect callee's larger parameter */
                return ptx_fault(w, in, l, PTX_E_LAUNCH_FAILED, "argument %d of the call of '%s' is smaller than "
                                 "its parameter", a + 1, g->name);
            memcpy(base + nfp + g->params[a].off, base + w->fp[l] + cs->args[a], g->params[a].size);
        }
        cframe *cf = &w->cs[(size_t)l * PTX_MAXDEPTH + (size_t)w->depth[l]++];
        cf->retpc = pc + 1; cf->callpc = pc; cf->fp = w->fp[l];
        cf->savepos = 0;
        cf->fn = g;
        w->lpc[l] = g->pc0;
        if (g->recursive) {
            /* save the callee's rows of this lane (a recursive activation overwrites them) */
            size_t need = (size_t)w->savetop[l] + g->nregs;
            if (need > w->savecap)
                return ptx_fault(w, in, l, PTX_E_LAUNCH_FAILED, "recursion too deep calling '%s'", g->name);
            uint64_t *sv = w->save + (size_t)l * w->savecap + w->savetop[l];
            for (uint32_t r = 0; r < g->nregs; r++) sv[r] = ROW(g->reg_base + r)[l];
            cf->savepos = w->savetop[l] + 1;
            w->savetop[l] += g->nregs;
        }
        w->fp[l] = nfp;
    }
    if (m == w->active && same) { w->pc = g->pc0; return R_JUMPED; }
    w->active &= ~m;    /* each lane's lpc is its callee's first instruction */
    w->pc++;
    return R_RESCHED;
}

int h_ret(warp *w, const insn_t *in, uint32_t m)
{
    const struct ptx_module *M = w->wk->m;
    if (!m) return R_NEXT;
    uint32_t exited = 0, returned = 0;
    size_t lpl = M->local_per_lane;
    for (uint32_t mm = m; mm; mm &= mm - 1) {
        int l = __builtin_ctz(mm);
        if (w->depth[l] == 0) { exited |= 1u << l; continue; }
        cframe *cf = &w->cs[(size_t)l * PTX_MAXDEPTH + (size_t)--w->depth[l]];
        const callsite *cs = &M->calls[M->code[cf->callpc].target];
        const pfunc *g = cf->fn;
        unsigned char *base = w->local + (size_t)l * lpl;
        for (int a = 0; a < cs->nrets; a++)
            if (cf->fp + cs->rets[a] + g->rets[a].size <= lpl)   /* an indirect caller's smaller result: past its frame */
                memcpy(base + cf->fp + cs->rets[a], base + w->fp[l] + g->rets[a].off, g->rets[a].size);
        if (cf->savepos) {
            w->savetop[l] -= g->nregs;
            const uint64_t *sv = w->save + (size_t)l * w->savecap + w->savetop[l];
            for (uint32_t r = 0; r < g->nregs; r++) ROW(g->reg_base + r)[l] = sv[r];
        }
        w->fp[l] = cf->fp;
        w->lpc[l] = cf->retpc;
        returned |= 1u << l;
    }
    w->alive &= ~exited;
    uint32_t stay = w->active & ~m;
    /* lanes returning to the same pc continue as the group */
    if (returned && !stay) {
        uint32_t p = w->lpc[__builtin_ctz(returned)];
        int same = 1;
        for (uint32_t mm = returned; mm; mm &= mm - 1) if (w->lpc[__builtin_ctz(mm)] != p) { same = 0; break; }
        if (same) { w->active = returned; w->pc = p; return R_JUMPED; }
    }
    for (uint32_t mm = stay; mm; mm &= mm - 1) w->lpc[__builtin_ctz(mm)] = w->pc + 1;
    w->active = 0;
    return R_RESCHED;
}

/* ---------------------------------------------------------------------------------------- barriers */

static int bar_operands(warp *w, const insn_t *in, uint32_t m, unsigned *id, int *count)
{
    int l = __builtin_ctz(m);
    *id = (unsigned)(uint32_t)ROW(in->s[0])[l];
    uint32_t c = in->flags & F_HASCOUNT ? (uint32_t)ROW(in->s[1])[l] : 0;
    *count = in->flags & F_HASCOUNT ? (int)(c & 0x7fffffff) : -1;
    if (*id > 15) return ptx_fault(w, in, l, PTX_E_ILLEGAL_INSTRUCTION, "barrier id %u is out of range (0..15)", *id);
    if ((in->flags & F_HASCOUNT) && (c == 0 || c > 1024 || c % 32 != 0))
        return ptx_fault(w, in, l, PTX_E_ILLEGAL_INSTRUCTION, "barrier thread count %u is not a multiple of 32 in 32..1024", c);
    return 0;
}

static int bar_wait(warp *w, const insn_t *in, uint32_t m, int red)
{
    unsigned id; int count;
    if (!m) return R_NEXT;
    if (bar_operands(w, in, m, &id, &count)) return R_FAULT;
    barrier_t *b = &w->wk->bars[id];
    if (red) {
        const uint64_t *p = ROW(in->s[2]);
        int neg = (in->flags & F_NEGSRC) != 0;
        for (uint32_t mm = m; mm; mm &= mm - 1) {
            int l = __builtin_ctz(mm);
            uint32_t v = (uint32_t)((p[l] & 1) ^ (uint64_t)neg);
            if (!b->red_init) { b->red = in->aop == 19 ? 0 : v; b->red_init = 1; if (in->aop == 19) b->red += v; continue; }
            if (in->aop == 19) b->red += v;
            else if (in->aop == 4) b->red &= v;
            else b->red |= v;
        }
        w->bar_red_dst = in->d[0];
        w->bar_red_op = in->aop;
        w->bar_red_lanes |= m;
    }
    w->bar |= m;
    w->bar_id = (int)id;
    w->bar_count = count;
    for (uint32_t mm = m; mm; mm &= mm - 1) w->lpc[__builtin_ctz(mm)] = w->pc + 1;
    w->active &= ~m;
    if (w->active) { w->pc++; return R_JUMPED; }
    return R_RESCHED;
}

int h_bar_sync(warp *w, const insn_t *in, uint32_t m) { return bar_wait(w, in, m, 0); }
int h_bar_red(warp *w, const insn_t *in, uint32_t m) { return bar_wait(w, in, m, 1); }

int h_bar_arrive(warp *w, const insn_t *in, uint32_t m)
{
    unsigned id; int count;
    if (!m) return R_NEXT;
    if (bar_operands(w, in, m, &id, &count)) return R_FAULT;
    barrier_t *b = &w->wk->bars[id];
    b->arrived_n++;
    if (count > 0) b->expected = (count + 31) / 32;
    return R_NEXT;
}

/* --------------------------------------------------------------------------- warp-synchronous ops */

/* The lanes of membermask that must arrive; R_NEXT when the group may proceed (all have arrived, or the
 * missing ones can never come), else parks the group (R_RESCHED). */
static int warp_sync_wait(warp *w, const insn_t *in, uint32_t m, uint32_t mask)
{
    (void)in;
    uint32_t need = mask & w->alive & ~w->active;
    if (!need || w->force) return R_NEXT;
    /* park: these lanes wait here */
    w->wsync |= w->active;
    for (uint32_t mm = w->active; mm; mm &= mm - 1) w->lpc[__builtin_ctz(mm)] = w->pc;
    (void)m;
    w->active = 0;
    return R_RESCHED;
}

int ptx_warp_sync(warp *w, const insn_t *in, uint32_t m, uint32_t mask) { return warp_sync_wait(w, in, m, mask); }

static uint32_t member_mask(warp *w, const insn_t *in, int si, uint32_t m)
{
    return (uint32_t)ROW(in->s[si])[__builtin_ctz(m)];
}

int h_bar_warp(warp *w, const insn_t *in, uint32_t m)
{
    if (!m) return R_NEXT;
    return warp_sync_wait(w, in, m, member_mask(w, in, 0, m));
}

int h_shfl(warp *w, const insn_t *in, uint32_t m)
{
    if (!m) return R_NEXT;
    int r = warp_sync_wait(w, in, m, member_mask(w, in, 3, m));
    if (r) return r;
    const uint64_t *A = ROW(in->s[0]), *B = ROW(in->s[1]), *C = ROW(in->s[2]);
    uint64_t *D = ROW(in->d[0]);
    uint64_t *PD = in->d[1] != UINT32_MAX ? ROW(in->d[1]) : NULL;
    uint32_t vals[32];
    for (int l = 0; l < 32; l++) vals[l] = (uint32_t)A[l];
    for (uint32_t mm = m; mm; mm &= mm - 1) {
        int l = __builtin_ctz(mm);
        uint32_t b = (uint32_t)B[l] & 31u, c = (uint32_t)C[l];
        uint32_t segmask = (c >> 8) & 31u, cval = c & 31u;
        uint32_t maxl = ((uint32_t)l & segmask) | (cval & ~segmask);
        uint32_t minl = (uint32_t)l & segmask;
        int32_t j; int ok;
        switch (in->aop) {
        case 11: j = (int32_t)l - (int32_t)b; ok = j >= (int32_t)maxl; break;              /* up */
        case 12: j = (int32_t)l + (int32_t)b; ok = j <= (int32_t)maxl; break;              /* down */
        case 13: j = (int32_t)((uint32_t)l ^ b); ok = j <= (int32_t)maxl; break;          /* bfly */
        default: j = (int32_t)(minl | (b & ~segmask)); ok = j <= (int32_t)maxl; break;   /* idx */
        }
        if (!ok) j = l;
        D[l] = vals[j & 31];
        if (PD) PD[l] = (uint64_t)ok;
    }
    return R_NEXT;
}

int h_vote(warp *w, const insn_t *in, uint32_t m)
{
    if (!m) return R_NEXT;
    uint32_t mask = member_mask(w, in, 1, m);
    int r = warp_sync_wait(w, in, m, mask);
    if (r) return r;
    const uint64_t *A = ROW(in->s[0]);
    int neg = (in->flags & F_NEGSRC) != 0;
    uint32_t ballot = 0;
    for (uint32_t mm = m; mm; mm &= mm - 1) { int l = __builtin_ctz(mm); ballot |= (uint32_t)(((A[l] & 1) ^ (uint64_t)neg) << l); }
    uint32_t part = m & mask ? m & mask : m;
    uint64_t res;
    switch (in->aop) {
    case 15: res = (ballot & part) == part; break;      /* all */
    case 16: res = (ballot & part) != 0; break;         /* any */
    case 17: res = (ballot & part) == 0 || (ballot & part) == part; break;   /* uni */
    default: res = ballot & mask; break;                /* ballot */
    }
    uint64_t *D = ROW(in->d[0]);
    for (uint32_t mm = m; mm; mm &= mm - 1) D[__builtin_ctz(mm)] = res;
    return R_NEXT;
}

int h_redux(warp *w, const insn_t *in, uint32_t m)
{
    if (!m) return R_NEXT;
    uint32_t mask = member_mask(w, in, 1, m);
    int r = warp_sync_wait(w, in, m, mask);
    if (r) return r;
    const uint64_t *A = ROW(in->s[0]);
    int sgn = in->t == T_S32;
    uint32_t acc = 0; int first = 1;
    for (uint32_t mm = m; mm; mm &= mm - 1) {
        uint32_t v = (uint32_t)A[__builtin_ctz(mm)];
        if (first) { acc = v; first = 0; continue; }
        switch (in->aop) {
        case 1: acc += v; break;
        case 2: acc = sgn ? ((int32_t)v < (int32_t)acc ? v : acc) : (v < acc ? v : acc); break;
        case 3: acc = sgn ? ((int32_t)v > (int32_t)acc ? v : acc) : (v > acc ? v : acc); break;
        case 4: acc &= v; break;
        case 5: acc |= v; break;
        default: acc ^= v; break;
        }
    }
    uint64_t *D = ROW(in->d[0]);
    for (uint32_t mm = m; mm; mm &= mm - 1) D[__builtin_ctz(mm)] = acc;
    return R_NEXT;
}

int h_match(warp *w, const insn_t *in, uint32_t m)
{
    if (!m) return R_NEXT;
    uint32_t mask = member_mask(w, in, 1, m);
    int r = warp_sync_wait(w, in, m, mask);
    if (r) return r;
    const uint64_t *A = ROW(in->s[0]);
    uint64_t *D = ROW(in->d[0]);
    uint64_t *PD = in->d[1] != UINT32_MAX ? ROW(in->d[1]) : NULL;
    int wide = in->t == T_B64;
    uint32_t part = m & mask;
    for (uint32_t mm = m; mm; mm &= mm - 1) {
        int l = __builtin_ctz(mm);
        uint64_t v = wide ? A[l] : (uint32_t)A[l];
        uint32_t same = 0;
        for (uint32_t kk = part; kk; kk &= kk - 1) {
            int k = __builtin_ctz(kk);
            if ((wide ? A[k] : (uint32_t)A[k]) == v) same |= 1u << k;
        }
        if (in->aop == 15) {   /* all */
            int all = same == part;
            D[l] = all ? part : 0;
            if (PD) PD[l] = (uint64_t)all;
        } else D[l] = same;
    }
    return R_NEXT;
}

int h_activemask(warp *w, const insn_t *in, uint32_t m)
{
    uint64_t *D = ROW(in->d[0]);
    for (uint32_t mm = m; mm; mm &= mm - 1) D[__builtin_ctz(mm)] = w->active;
    return R_NEXT;
}

int h_elect(warp *w, const insn_t *in, uint32_t m)
{
    if (!m) return R_NEXT;
    uint32_t mask = member_mask(w, in, 0, m);
    int r = warp_sync_wait(w, in, m, mask);
    if (r) return r;
    uint32_t part = m & mask;
    int leader = part ? __builtin_ctz(part) : -1;
    uint64_t *D = ROW(in->d[0]);
    uint64_t *PD = in->d[1] ? ROW(in->d[1]) : NULL;
    for (uint32_t mm = m; mm; mm &= mm - 1) {
        int l = __builtin_ctz(mm);
        D[l] = leader < 0 ? 0 : (uint64_t)leader;
        if (PD) PD[l] = l == leader;
    }
    return R_NEXT;
}

/* ------------------------------------------------------------------------------- special registers */

uint32_t ptx_sreg_value(warp *w, int id, int lane)
{
    worker *wk = w->wk;
    const ptx_launch_cfg *c = wk->cfg;
    unsigned x, y, z;
    lane_tid(w, lane, &x, &y, &z);
    uint32_t lm = 1u << lane;
    switch (id) {
    case 0: return x;
    case 1: return y;
    case 2: return z;
    case 3: return c->block[0];
    case 4: return c->block[1];
    case 5: return c->block[2];
    case 6: return wk->ctaid[0];
    case 7: return wk->ctaid[1];
    case 8: return wk->ctaid[2];
    case 9: return c->grid[0];
    case 10: return c->grid[1];
    case 11: return c->grid[2];
    case 12: return (uint32_t)lane;
    case 13: return (uint32_t)w->id;
    case 14: return (uint32_t)((c->block[0] * c->block[1] * c->block[2] + 31) / 32);
    case 15: { unsigned n = c->nsm ? c->nsm : 1; return (uint32_t)((wk->ctaid[0] + wk->ctaid[1] * c->grid[0]) % n); }
    case 16: return c->nsm ? c->nsm : 1;
    case 17: return (uint32_t)c->gridid;
    case 18: return lm;
    case 19: return lm | (lm - 1);
    case 20: return lm - 1;
    case 21: return ~(lm - 1);
    case 22: return ~(lm | (lm - 1));
    case 23: return (uint32_t)now_ns();
    case 24: return (uint32_t)(now_ns() >> 32);
    case 29: return (uint32_t)c->dyn_smem;
    case 30: case 31: return (uint32_t)wk->smem_size;
    case 36: return 0;
    case 37: case 38: case 39: return 0;
    case 40: case 41: case 42: return 1;
    case 43: return wk->ctaid[0];
    case 44: return wk->ctaid[1];
    case 45: return wk->ctaid[2];
    case 46: return c->grid[0];
    case 47: return c->grid[1];
    case 48: return c->grid[2];
    case 49: return 0;
    case 50: return 1;
    default: return 0;
    }
}

int h_mov_sreg(warp *w, const insn_t *in, uint32_t m)
{
    uint64_t *D = ROW(in->d[0]);
    int id = (int)in->target;
    if (id == 25 || id == 26) {   /* %clock64, %globaltimer */
        uint64_t t = now_ns();
        for (uint32_t mm = m; mm; mm &= mm - 1) D[__builtin_ctz(mm)] = t;
        return R_NEXT;
    }
    if (id == 27 || id == 28) {
        uint64_t t = now_ns();
        for (uint32_t mm = m; mm; mm &= mm - 1) D[__builtin_ctz(mm)] = id == 27 ? (uint32_t)t : (uint32_t)(t >> 32);
        return R_NEXT;
    }
    if (id == 0 && w->wk->cfg->block[1] * w->wk->cfg->block[2] == 1) {
        uint32_t base = (uint32_t)w->id * 32u;
        for (uint32_t mm = m; mm; mm &= mm - 1) { int l = __builtin_ctz(mm); D[l] = base + (uint32_t)l; }
        return R_NEXT;
    }
    if ((id >= 3 && id <= 11) || (id >= 13 && id <= 17) || id == 29 || id == 30 || id == 31) {   /* the same in every lane */
        uint64_t v = m ? ptx_sreg_value(w, id, __builtin_ctz(m)) : 0;
        for (uint32_t mm = m; mm; mm &= mm - 1) D[__builtin_ctz(mm)] = v;
        return R_NEXT;
    }
    for (uint32_t mm = m; mm; mm &= mm - 1) { int l = __builtin_ctz(mm); D[l] = ptx_sreg_value(w, id, l); }
    return R_NEXT;
}

/* --------------------------------------------------------------------------------------- the block */

static int block_deadlock(worker *wk)
{
    int waiting = 0, done = 0;
    char ids[128] = "";
    size_t pos = 0;
    for (int i = 0; i < wk->nwarps; i++) {
        warp *w = &wk->warps[i];
        if (w->state == WS_DONE) done++;
        else if (w->state == WS_BAR) {
            waiting++;
            if (pos < sizeof ids - 24) pos += (size_t)snprintf(ids + pos, sizeof ids - pos, "%s%d@bar%d", waiting > 1 ? "," : "", i, w->bar_id);
        }
    }
    wk->err = PTX_E_LAUNCH_FAILED;
    snprintf(wk->msg, sizeof wk->msg,
             "kernel '%s', block (%u,%u,%u): barrier deadlock: %d of %d warps wait at a barrier that cannot complete (warp@barrier: %s), %d exited",
             wk->k->f->name, wk->ctaid[0], wk->ctaid[1], wk->ctaid[2], waiting, wk->nwarps, ids, done);
    return wk->err;
}

static void bar_release(worker *wk, int id)
{
    barrier_t *b = &wk->bars[id];
    for (uint32_t mm = b->waiting; mm; mm &= mm - 1) {
        warp *w = &wk->warps[__builtin_ctz(mm)];
        if (w->bar_red_lanes) {
            uint64_t *D = w->regs + (size_t)w->bar_red_dst * 32;
            for (uint32_t ll = w->bar_red_lanes; ll; ll &= ll - 1) D[__builtin_ctz(ll)] = b->red;
            w->bar_red_lanes = 0;
        }
        w->bar = 0;
        w->state = WS_RUN;
    }
    memset(b, 0, sizeof *b);
}

static void block_init(worker *wk)
{
    const struct ptx_kernel *k = wk->k;
    unsigned nthreads = wk->nthreads;
    int nw = (int)((nthreads + 31) / 32);
    wk->nwarps = nw;
    wk->ndone = 0;
    wk->checks = 0;
    memset(wk->bars, 0, sizeof wk->bars);
    for (int i = 0; i < nw; i++) {
        warp *w = &wk->warps[i];
        unsigned left = nthreads - (unsigned)i * 32u;
        uint32_t lanes = left >= 32 ? 0xffffffffu : (1u << left) - 1;
        w->pc = k->f->pc0; w->active = lanes; w->alive = lanes; w->bar = 0; w->wsync = 0;
        w->minother = ~0u; w->rot = 0; w->divsteps = 0; w->force = 0; w->state = WS_RUN;
        w->bar_red_lanes = 0;
        memset(w->fp, 0, sizeof w->fp);
        memset(w->depth, 0, sizeof w->depth);
        if (w->savetop) memset(w->savetop, 0, 32 * sizeof *w->savetop);
    }
}

/* One pass over the block's warps (each runs up to `slice` instructions), then the barriers.  Returns 1
 * when the block has finished, 0 when it should be stepped again, -1 after a fault or a deadlock. */
static int block_step(worker *wk, long slice)
{
    int nw = wk->nwarps, ran = 0;
    for (int i = 0; i < nw; i++) {
        warp *w = &wk->warps[i];
        if (w->state != WS_RUN) continue;
        ran = 1;
        int st = run_warp(w, slice);
        if (st < 0) return -1;
        if (st == WS_DONE) { w->state = WS_DONE; wk->ndone++; }
        else if (st == WS_BAR) {
            w->state = WS_BAR;
            barrier_t *b = &wk->bars[w->bar_id];
            b->waiting |= 1u << i;
            b->arrived_n++;
            if (w->bar_count > 0) b->expected = (w->bar_count + 31) / 32;
        }
        if ((++wk->checks & 63) == 0 && wk->L->deadline_ns && now_ns() > wk->L->deadline_ns) {
            const char *t = getenv("ACCEL_EMU_KERNEL_TIMEOUT");
            wk->err = PTX_E_LAUNCH_TIMEOUT;
            snprintf(wk->msg, sizeof wk->msg, "kernel '%s', block (%u,%u,%u): still running after the %s-second watchdog (ACCEL_EMU_KERNEL_TIMEOUT): a livelock?",
                     wk->k->f->name, wk->ctaid[0], wk->ctaid[1], wk->ctaid[2], t && *t ? t : "60");
            return -1;
        }
        if (atomic_load_explicit(&wk->L->failed, memory_order_relaxed)) return 1;
    }
    if (wk->ndone == nw) return 1;
    int released = 0;
    for (int b = 0; b < 16; b++) {
        barrier_t *bb = &wk->bars[b];
        if (!bb->waiting) continue;
        int expected = bb->expected > 0 ? bb->expected : nw - wk->ndone;
        if ((int)bb->arrived_n >= expected) { bar_release(wk, b); released = 1; }
    }
    if (!ran && !released) { block_deadlock(wk); return -1; }
    return 0;
}

static int run_block(worker *wk)
{
    block_init(wk);
    for (;;) {
        int r = block_step(wk, SLICE);
        if (r) return r < 0 ? wk->err : 0;
    }
}

/* ------------------------------------------------------------------------------------- the workers */

static void worker_free(worker *wk)
{
    for (int i = 0; i < wk->maxwarps && wk->warps; i++) {
        free(wk->warps[i].cs);
        free(wk->warps[i].save);
        free(wk->warps[i].savetop);
    }
    free(wk->warps);
    free(wk->regs);
    free(wk->smem);
    free(wk->local);
}

static int worker_init(worker *wk, launch *L)
{
    const struct ptx_module *M = L->k->m;
    memset(wk, 0, sizeof *wk);
    wk->k = L->k; wk->m = M; wk->cfg = L->cfg; wk->env = L->env; wk->L = L;
    wk->nthreads = L->cfg->block[0] * L->cfg->block[1] * L->cfg->block[2];
    int nw = (int)((wk->nthreads + 31) / 32);
    wk->maxwarps = nw;
    size_t rows = (size_t)M->nrows + M->nconst;
    wk->warps = calloc((size_t)nw, sizeof *wk->warps);
    wk->regs = malloc(rows * 32 * sizeof(uint64_t) * (size_t)nw);
    wk->smem_size = M->smem_static ? ((M->smem_static + 15) & ~(size_t)15) + L->cfg->dyn_smem : L->cfg->dyn_smem;
    if (!M->smem_static) wk->smem_size = L->cfg->dyn_smem;
    /* a GPU gives a block its shared memory in 128-byte allocation units (the occupancy calculator's
     * "shared memory allocation unit size"), and an access inside the last unit does not fault: NVVM relies
     * on it, widening loads of an `.extern .shared .align 16` array up to its alignment (numba's test_sm
     * reads 16 bytes at offset 16 of a 28-byte dynamic array) */
    wk->smem_size = (wk->smem_size + 127) & ~(size_t)127;
    wk->smem = calloc(wk->smem_size ? wk->smem_size : 1, 1);
    wk->local = calloc((size_t)nw * 32, M->local_per_lane);
    if (!wk->warps || !wk->regs || !wk->smem || !wk->local) return PTX_E_OUT_OF_MEMORY;
    for (int i = 0; i < nw; i++) {
        warp *w = &wk->warps[i];
        w->regs = wk->regs + (size_t)i * rows * 32;
        memset(w->regs, 0, (size_t)M->nrows * 32 * sizeof(uint64_t));
        memcpy(w->regs + (size_t)M->nrows * 32, M->constrows, (size_t)M->nconst * 32 * sizeof(uint64_t));
        w->id = i;
        w->wk = wk;
        w->local = wk->local + (size_t)i * 32 * M->local_per_lane;
        w->cs = calloc(32 * PTX_MAXDEPTH, sizeof *w->cs);
        if (!w->cs) return PTX_E_OUT_OF_MEMORY;
        if (M->has_recursion) {
            w->savecap = 4096;   /* registers of recursive activations a lane may save (32 KB per lane) */
            w->save = malloc((size_t)32 * w->savecap * sizeof(uint64_t));
            w->savetop = calloc(32, sizeof *w->savetop);
            if (!w->save || !w->savetop) return PTX_E_OUT_OF_MEMORY;
        }
    }
    return 0;
}

static void set_error(launch *L, int err, const char *msg)
{
    pthread_mutex_lock(&L->mu);
    if (!L->err) {
        L->err = err;
        snprintf(L->msg, sizeof L->msg, "%s", msg);
    }
    pthread_mutex_unlock(&L->mu);
    atomic_store(&L->failed, 1);
}

static void *worker_main(void *arg)
{
    launch *L = arg;
    worker wk;
    int err = worker_init(&wk, L);
    if (err) { set_error(L, err, "out of memory for the launch's worker state"); worker_free(&wk); return NULL; }
    const unsigned *g = L->cfg->grid;
    for (;;) {
        if (atomic_load(&L->failed)) break;
        unsigned long b = atomic_fetch_add(&L->next, 1);
        if (b >= L->nblocks) break;
        wk.ctaid[0] = (unsigned)(b % g[0]);
        wk.ctaid[1] = (unsigned)((b / g[0]) % g[1]);
        wk.ctaid[2] = (unsigned)(b / ((unsigned long)g[0] * g[1]));
        wk.err = 0;
        run_block(&wk);
        if (wk.err) { set_error(L, wk.err, wk.msg); break; }
    }
    pthread_mutex_lock(&L->mu);
    L->count += wk.count;
    pthread_mutex_unlock(&L->mu);
    worker_free(&wk);
    return NULL;
}

/* A cooperative launch: every block is resident at once (grid-wide synchronisation through global memory
 * works), stepped round-robin in the calling thread. */
static int run_cooperative(launch *L)
{
    unsigned long nb = L->nblocks;
    if (nb > 4096) { set_error(L, PTX_E_LAUNCH_OUT_OF_RESOURCES, "cooperative launch of more than 4096 blocks"); return L->err; }
    worker *ws = calloc(nb, sizeof *ws);
    if (!ws) { set_error(L, PTX_E_OUT_OF_MEMORY, "out of memory for a cooperative launch"); return L->err; }
    const unsigned *g = L->cfg->grid;
    unsigned long live = 0;
    int err = 0;
    for (unsigned long b = 0; b < nb && !err; b++) {
        if (worker_init(&ws[b], L)) { err = PTX_E_OUT_OF_MEMORY; set_error(L, err, "out of memory for a cooperative launch"); break; }
        ws[b].ctaid[0] = (unsigned)(b % g[0]);
        ws[b].ctaid[1] = (unsigned)((b / g[0]) % g[1]);
        ws[b].ctaid[2] = (unsigned)(b / ((unsigned long)g[0] * g[1]));
        block_init(&ws[b]);
        live++;
    }
    unsigned char *done = calloc(nb, 1);
    if (!done && !err) { err = PTX_E_OUT_OF_MEMORY; set_error(L, err, "out of memory for a cooperative launch"); }
    unsigned long left = live;
    while (!err && left) {
        for (unsigned long b = 0; b < nb && !err; b++) {
            if (done[b]) continue;
            int r = block_step(&ws[b], 2000);
            if (r < 0) { err = ws[b].err; set_error(L, err, ws[b].msg); }
            else if (r > 0) { done[b] = 1; left--; }
        }
    }
    for (unsigned long b = 0; b < live; b++) { L->count += ws[b].count; worker_free(&ws[b]); }
    free(done);
    free(ws);
    return L->err;
}

static int nworkers(unsigned long nblocks, long want)
{
    long n = want > 0 ? want : sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1) n = 1;
    if (n > 64) n = 64;
    if ((unsigned long)n > nblocks) n = (long)nblocks;
    return (int)n;
}

int ptx_launch(const ptx_kernel *k, const ptx_launch_cfg *cfg, const ptx_env *env, char *err, size_t errlen)
{
    return ptx_launch_counted(k, cfg, env, err, errlen, NULL);
}

int ptx_launch_counted(const ptx_kernel *k, const ptx_launch_cfg *cfg, const ptx_env *env, char *err, size_t errlen,
                       uint64_t *thread_insns)
{
    if (err && errlen) err[0] = 0;
    if (!k || !cfg) return PTX_E_INVALID_VALUE;
    for (int i = 0; i < 3; i++)
        if (!cfg->grid[i] || !cfg->block[i]) {
            if (err && errlen) snprintf(err, errlen, "empty grid or block dimension");
            return PTX_E_INVALID_VALUE;
        }
    unsigned long nthreads = (unsigned long)cfg->block[0] * cfg->block[1] * cfg->block[2];
    if (nthreads > 1024) {
        if (err && errlen) snprintf(err, errlen, "block of %lu threads (at most 1024)", nthreads);
        return PTX_E_INVALID_VALUE;
    }
    if (cfg->params_size < k->param_bytes || (k->param_bytes && !cfg->params)) {
        if (err && errlen) snprintf(err, errlen, "kernel '%s' takes %u bytes of parameters, %zu given", k->f->name, k->param_bytes, cfg->params_size);
        return PTX_E_INVALID_VALUE;
    }
    launch L;
    memset(&L, 0, sizeof L);
    L.k = k; L.cfg = cfg; L.env = env;
    L.nblocks = (unsigned long)cfg->grid[0] * cfg->grid[1] * cfg->grid[2];
    atomic_init(&L.next, 0);
    atomic_init(&L.failed, 0);
    /* settings: a malformed value fails the launch (a typo must not run another configuration) */
    double tmo = 60;
    long want = 0;
    const char *te = getenv("ACCEL_EMU_KERNEL_TIMEOUT"), *tt = getenv("ACCEL_EMU_PTX_THREADS");
    if (te && *te) {
        char *e; errno = 0;
        double v = strtod(te, &e);
        if (*e || errno || !(v >= 0) || v > 1e9) {
            if (err && errlen) snprintf(err, errlen, "ACCEL_EMU_KERNEL_TIMEOUT='%s' is not a number of seconds (0 = no watchdog)", te);
            return PTX_E_INVALID_VALUE;
        }
        tmo = v;
    }
    if (tt && *tt) {
        char *e; errno = 0;
        long v = strtol(tt, &e, 10);
        if (*e || errno || v < 1 || v > 1024) {
            if (err && errlen) snprintf(err, errlen, "ACCEL_EMU_PTX_THREADS='%s' is not a thread count (1..1024)", tt);
            return PTX_E_INVALID_VALUE;
        }
        want = v;
    }
    pthread_mutex_init(&L.mu, NULL);
    L.deadline_ns = tmo > 0 ? now_ns() + (uint64_t)(tmo * 1e9) : 0;
    L.counting = thread_insns != NULL;
    if (cfg->cooperative) {
        run_cooperative(&L);
        pthread_mutex_destroy(&L.mu);
        if (thread_insns) *thread_insns = L.count;
        if (L.err && err && errlen) snprintf(err, errlen, "%s", L.msg);
        return L.err;
    }
    int n = nworkers(L.nblocks, want);
    pthread_t th[64];
    int started = 0;
    for (int i = 1; i < n; i++) {
        if (pthread_create(&th[started], NULL, worker_main, &L)) break;
        started++;
    }
    worker_main(&L);
    for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
    pthread_mutex_destroy(&L.mu);
    if (thread_insns) *thread_insns = L.count;
    if (L.err && err && errlen) snprintf(err, errlen, "%s", L.msg);
    return L.err;
}
