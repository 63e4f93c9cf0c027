/* The PTX engine's tensor-core and asynchronous-copy instructions: mma.sync (f16 / bf16 / tf32 / f64 /
 * s8 / u8 shapes of sm_80), ldmatrix, stmatrix, movmatrix, cp.async and its groups, and mbarrier's basic
 * operations.  Fragment layouts follow the ISA's "Matrix Fragments for mma.m16n8k*" figures: lane l is in
 * group g = l >> 2 and has index t = l & 3 in it; each operand's element i of a lane maps to one (row, col)
 * of the operand matrix (frag_rc below).
 *
 * Arithmetic of mma (the ISA leaves the accumulation order, its intermediate precision and the handling of
 * subnormals to the implementation): products of f16 / bf16 / tf32 operands are exact in binary64 and are
 * summed with C in k order in binary64, then rounded once (round to nearest even) to D's type; f16 and bf16
 * subnormal inputs are honoured, NaN inputs give a NaN, inf * 0 and inf - inf give NaN.  A .tf32 operand
 * is read as its 19 high bits (the low 13 mantissa bits ignored, as tensor cores do).  f64 is a chain of
 * fused multiply-adds in k order, each rounded to nearest even.  s8 / u8 products are summed exactly into
 * the s32 accumulator, wrapping modulo 2^32, or clamped to [INT32_MIN, INT32_MAX] with .satfinite.
 * Hardware may round intermediate sums (it is documented only as "at least single precision"), so a GPU's
 * f32 results can differ from these in the last bits; docs/emulator.md lists it among the deviations.
 *
 * cp.async copies when it is issued (a legal schedule of an asynchronous copy: nothing may read the
 * destination before the thread's wait_group / wait_all, and a source byte changed before then is a race);
 * commit_group and wait_group therefore have nothing to do.  mbarrier objects are 8 bytes of shared memory
 * in the engine's own layout: bits 0-19 pending arrivals, 20-39 expected arrivals, 40-62 the phase; the
 * state an arrive returns holds the phase arrived on (bits 32-54) and the arrivals still pending (0-19). */
#include <math.h>
#include <stdio.h>

#include "ptx_internal.h"

#define ROW(i) (w->regs + (size_t)(i) * 32)

/* ------------------------------------------------------------------------------------------ mma */

typedef struct mshape { int m, n, k; } mshape;

static mshape shape_of(int s)
{
    switch (s) {
    case MMA_M16N8K16: return (mshape){16, 8, 16};
    case MMA_M16N8K8: return (mshape){16, 8, 8};
    case MMA_M16N8K4: return (mshape){16, 8, 4};
    case MMA_M8N8K4: return (mshape){8, 8, 4};
    default: return (mshape){16, 8, 32};
    }
}

static int elem_bits(int t)
{
    switch (t) {
    case T_F16: case T_BF16: return 16;
    case T_S8: case T_U8: return 8;
    case T_F64: return 64;
    default: return 32;
    }
}

/* Row and column of element i of lane l's fragment of operand `op` (0 = A, 1 = B, 2 = C / D). */
static void frag_rc(int shape, int at, int op, int l, int i, int *r, int *c)
{
    int g = l >> 2, t = l & 3;
    if (op == 2) {
        if (shape == MMA_M8N8K4) { *r = g; *c = t * 2 + i; return; }
        *r = g + 8 * (i >> 1); *c = t * 2 + (i & 1);
        return;
    }
    int x8 = at == T_S8 || at == T_U8, tf = at == T_TF32;
    if (shape == MMA_M8N8K4) { if (op == 0) { *r = g; *c = t; } else { *r = t; *c = g; } return; }
    if (op == 0) {
        switch (shape) {
        case MMA_M16N8K16:
            if (x8) { *r = g + 8 * (i >> 2); *c = t * 4 + (i & 3); }
            else { *r = g + 8 * ((i >> 1) & 1); *c = t * 2 + (i & 1) + 8 * (i >> 2); }
            return;
        case MMA_M16N8K8:
            if (tf) { *r = g + 8 * (i & 1); *c = t + 4 * (i >> 1); }
            else { *r = g + 8 * (i >> 1); *c = t * 2 + (i & 1); }
            return;
        case MMA_M16N8K4: *r = g + 8 * i; *c = t; return;
        default: *r = g + 8 * ((i >> 2) & 1); *c = t * 4 + (i & 3) + 16 * (i >> 3); return;   /* m16n8k32 */
        }
    }
    *c = g;
    switch (shape) {
    case MMA_M16N8K16: *r = x8 ? t * 4 + i : t * 2 + (i & 1) + 8 * (i >> 1); return;
    case MMA_M16N8K8: *r = tf ? t + 4 * i : t * 2 + i; return;
    case MMA_M16N8K4: *r = t; return;
    default: *r = t * 4 + (i & 3) + 16 * (i >> 2); return;   /* m16n8k32 */
    }
}

/* Element i of a lane's fragment, as raw bits, from the operand's registers (elements packed from the low
 * bits up). */
static uint64_t frag_get(warp *w, const uint32_t *rows, int t, int l, int i)
{
    int b = elem_bits(t), per = b < 32 ? 32 / b : 1;
    uint64_t v = ROW(rows[i / per])[l];
    if (b >= 32) return b == 64 ? v : (uint32_t)v;
    return (v >> (b * (i % per))) & ((1ull << b) - 1);
}

static double as_double(int t, uint64_t x)
{
    switch (t) {
    case T_F16: return ptx_h2f((uint16_t)x);
    case T_BF16: return ptx_bf2f((uint16_t)x);
    case T_TF32: return ptx_f32(x & 0xffffe000u);
    case T_F32: return ptx_f32(x);
    default: return ptx_f64(x);
    }
}

int h_mma(warp *w, const insn_t *in, uint32_t m)
{
    const insn_t *pb = in + 1, *pc = in + 2;
    if (!m) { w->pc += 3; return R_JUMPED; }   /* predicated off: skip the payloads */
    int r = ptx_warp_sync(w, in, m, 0xffffffffu);
    if (r) return r;
    int shape = in->aop, td = in->t, ta = in->t2, tb = in->cmp, tc = in->bop;
    mshape S = shape_of(shape);
    int na = S.m * S.k / 32, nb = S.k * S.n / 32, nc = S.m * S.n / 32;
    /* gather A, B, C of the whole warp (lanes outside m contribute what their registers hold) */
    double A[16][32], B[32][8], C[16][8];
    int64_t IA[16][32], IB[32][8], IC[16][8];
    int isint = ta == T_S8 || ta == T_U8;
    for (int l = 0; l < 32; l++) {
        for (int i = 0; i < na; i++) {
            int rr, cc; frag_rc(shape, ta, 0, l, i, &rr, &cc);
            uint64_t x = frag_get(w, in->s, ta, l, i);
            if (isint) IA[rr][cc] = ta == T_S8 ? (int8_t)x : (int64_t)x; else A[rr][cc] = as_double(ta, x);
        }
        for (int i = 0; i < nb; i++) {
            int rr, cc; frag_rc(shape, tb, 1, l, i, &rr, &cc);
            uint64_t x = frag_get(w, pb->s, tb, l, i);
            if (isint) IB[rr][cc] = tb == T_S8 ? (int8_t)x : (int64_t)x; else B[rr][cc] = as_double(tb, x);
        }
        for (int i = 0; i < nc; i++) {
            int rr, cc; frag_rc(shape, ta, 2, l, i, &rr, &cc);
            uint64_t x = frag_get(w, pc->s, tc, l, i);
            if (isint) IC[rr][cc] = (int32_t)x; else C[rr][cc] = as_double(tc, x);
        }
    }
    /* D, scattered to the lanes of m */
    int bd = elem_bits(td), per = bd == 16 ? 2 : 1;
    uint64_t out[4][32];
    memset(out, 0, sizeof out);
    for (int l = 0; l < 32; l++) {
        for (int i = 0; i < nc; i++) {
            int rr, cc; frag_rc(shape, ta, 2, l, i, &rr, &cc);
            uint64_t bits;
            if (isint) {
                int64_t acc = IC[rr][cc];
                for (int k = 0; k < S.k; k++) acc += IA[rr][k] * IB[k][cc];
                if (in->flags & F_SAT) acc = acc > INT32_MAX ? INT32_MAX : acc < INT32_MIN ? INT32_MIN : acc;
                bits = (uint32_t)acc;
            } else if (td == T_F64) {
                double acc = C[rr][cc];
                for (int k = 0; k < S.k; k++) acc = fma(A[rr][k], B[k][cc], acc);
                bits = ptx_bf64(acc);
            } else {
                double acc = C[rr][cc];
                for (int k = 0; k < S.k; k++) acc += A[rr][k] * B[k][cc];
                bits = td == T_F16 ? ptx_f2h(acc, RND_RN) : isnan(acc) ? 0x7fffffffu : ptx_bf32((float)acc);
            }
            if (per == 2) out[i / 2][l] |= bits << (16 * (i % 2));
            else out[i][l] = bits;
        }
    }
    int nregs = nc / per;
    for (int j = 0; j < nregs; j++) {
        uint64_t *D = ROW(in->d[j]);
        for (uint32_t mm = m; mm; mm &= mm - 1) { int l = __builtin_ctz(mm); D[l] = out[j][l]; }
    }
    w->pc += 3;
    return R_JUMPED;
}

/* ------------------------------------------------------------------------ ldmatrix / stmatrix / movmatrix */

/* An 8x8 b16 fragment as ldmatrix leaves it: lane l holds row l >> 2, columns 2 (l & 3) and 2 (l & 3) + 1
 * (the lower column in the low half). */
static inline uint16_t frag16(const uint64_t *R, int row, int col)
{
    return (uint16_t)(R[row * 4 + col / 2] >> (16 * (col & 1)));
}

static int nmat_of(const insn_t *in) { return in->aop; }   /* .x1 / .x2 / .x4; .trans in bop */

int h_ldmatrix(warp *w, const insn_t *in, uint32_t m)
{
    if (!m) return R_NEXT;
    int r = ptx_warp_sync(w, in, m, 0xffffffffu);
    if (r) return r;
    int nm = nmat_of(in), trans = in->bop;
    const uint64_t *A = ROW(in->s[4]);
    for (int j = 0; j < nm; j++) {
        uint16_t M[8][8];
        for (int row = 0; row < 8; row++) {
            int l = j * 8 + row;
            const unsigned char *p = ptx_mem(w, in, l, in->space, A[l] + (uint64_t)in->off, 16);
            if (!p) return R_FAULT;
            memcpy(M[row], p, 16);
        }
        if (in->d[j] == UINT32_MAX) continue;
        uint64_t *D = ROW(in->d[j]);
        for (uint32_t mm = m; mm; mm &= mm - 1) {
            int l = __builtin_ctz(mm), fr = l >> 2, fc = 2 * (l & 3);
            uint16_t lo = trans ? M[fc][fr] : M[fr][fc], hi = trans ? M[fc + 1][fr] : M[fr][fc + 1];
            D[l] = (uint32_t)lo | ((uint32_t)hi << 16);
        }
    }
    return R_NEXT;
}

int h_stmatrix(warp *w, const insn_t *in, uint32_t m)
{
    if (!m) return R_NEXT;
    int r = ptx_warp_sync(w, in, m, 0xffffffffu);
    if (r) return r;
    int nm = nmat_of(in), trans = in->bop;
    const uint64_t *A = ROW(in->s[4]);
    for (int j = 0; j < nm; j++) {
        const uint64_t *S = ROW(in->s[j]);
        for (int row = 0; row < 8; row++) {
            int l = j * 8 + row;
            unsigned char *p = ptx_mem(w, in, l, in->space, A[l] + (uint64_t)in->off, 16);
            if (!p) return R_FAULT;
            uint16_t v[8];
            for (int col = 0; col < 8; col++) v[col] = trans ? frag16(S, col, row) : frag16(S, row, col);
            memcpy(p, v, 16);
        }
    }
    return R_NEXT;
}

int h_movmatrix(warp *w, const insn_t *in, uint32_t m)
{
    if (!m) return R_NEXT;
    int r = ptx_warp_sync(w, in, m, 0xffffffffu);
    if (r) return r;
    uint64_t S[32];
    memcpy(S, ROW(in->s[0]), sizeof S);
    uint64_t *D = ROW(in->d[0]);
    for (uint32_t mm = m; mm; mm &= mm - 1) {
        int l = __builtin_ctz(mm), fr = l >> 2, fc = 2 * (l & 3);
        D[l] = (uint32_t)frag16(S, fc, fr) | ((uint32_t)frag16(S, fc + 1, fr) << 16);
    }
    return R_NEXT;
}

/* -------------------------------------------------------------------------------------- cp.async */

/* cp.async [dst], [src], cp-size{, src-size | ignore-src}: copies src-size bytes and zero-fills the rest
 * of cp-size (nothing is read when src-size is 0, so a masked-off source address never faults). */
int h_cp_async(warp *w, const insn_t *in, uint32_t m)
{
    const insn_t *ps = in + 1;
    const uint64_t *Dst = ROW(in->s[4]), *Src = ROW(ps->s[4]), *Cp = ROW(in->s[0]), *Ss = ROW(in->s[1]);
    for (uint32_t mm = m; mm; mm &= mm - 1) {
        int l = __builtin_ctz(mm);
        uint32_t cp = (uint32_t)Cp[l], ss = cp;
        if (in->flags & F_HASCOUNT) ss = (uint32_t)Ss[l];
        else if (in->flags & F_NEGSRC) ss = (Ss[l] & 1) ? 0 : cp;   /* ignore-src predicate */
        if (cp != 4 && cp != 8 && cp != 16)
            return ptx_fault(w, in, l, PTX_E_ILLEGAL_INSTRUCTION, "cp.async copy size %u (4, 8 or 16)", cp);
        if (ss > cp)
            return ptx_fault(w, in, l, PTX_E_ILLEGAL_INSTRUCTION, "cp.async source size %u above the copy size %u", ss, cp);
        unsigned char *d = ptx_mem(w, in, l, in->space, Dst[l] + (uint64_t)in->off, cp);
        if (!d) return R_FAULT;
        if (ss) {
            const unsigned char *s = ptx_mem(w, ps, l, ps->space, Src[l] + (uint64_t)ps->off, ss);
            if (!s) return R_FAULT;
            memmove(d, s, ss);
        }
        memset(d + ss, 0, cp - ss);
    }
    w->pc += 2;
    return R_JUMPED;
}

int h_cp_async_wait(warp *w, const insn_t *in, uint32_t m) { (void)w; (void)in; (void)m; return R_NEXT; }

/* ---------------------------------------------------------------------------------------- mbarrier */

#define MB_CNT(x) ((uint32_t)((x) & 0xfffffu))
#define MB_EXP(x) ((uint32_t)(((x) >> 20) & 0xfffffu))
#define MB_PHASE(x) ((x) >> 40)
#define MB_MAKE(ph, exp, cnt) (((uint64_t)(ph) << 40) | ((uint64_t)(exp) << 20) | (uint64_t)(cnt))

enum { MB_INIT = 1, MB_ARRIVE, MB_ARRIVE_DROP, MB_TEST, MB_TEST_PAR, MB_TRY, MB_TRY_PAR, MB_INVAL, MB_PENDING,
       MB_CP_ARRIVE, MB_CP_ARRIVE_NOINC };

/* One arrival of `n` on the object at p: returns the state (its phase before the arrival) or faults. */
static int mb_arrive(warp *w, const insn_t *in, int l, uint64_t *p, uint32_t n, int drop, uint64_t *state)
{
    uint64_t x = *p;
    uint32_t cnt = MB_CNT(x), exp = MB_EXP(x);
    if (n > cnt)
        return ptx_fault(w, in, l, PTX_E_ILLEGAL_INSTRUCTION, "mbarrier arrival count %u above the %u pending arrivals", n, cnt);
    if (drop) exp -= n > exp ? exp : n;
    cnt -= n;
    *state = (MB_PHASE(x) << 32) | cnt;   /* the phase arrived on, and the arrivals it still waits for */
    *p = cnt ? MB_MAKE(MB_PHASE(x), exp, cnt) : MB_MAKE((MB_PHASE(x) + 1) & 0x7fffffull, exp, exp);
    return 0;
}

int h_mbarrier(warp *w, const insn_t *in, uint32_t m)
{
    int op = in->aop, waits = op == MB_TEST || op == MB_TEST_PAR || op == MB_TRY || op == MB_TRY_PAR;
    if (op == MB_PENDING) {   /* mbarrier.pending_count.b64 count, state */
        uint64_t *D = ROW(in->d[0]);
        const uint64_t *S = ROW(in->s[0]);
        for (uint32_t mm = m; mm; mm &= mm - 1) { int l = __builtin_ctz(mm); D[l] = (uint32_t)(S[l] & 0xfffffu); }
        return R_NEXT;
    }
    const uint64_t *A = ROW(in->s[4]), *B = ROW(in->s[0]);
    uint64_t *D = in->d[0] != UINT32_MAX ? ROW(in->d[0]) : NULL;
    uint32_t pending = 0;
    for (uint32_t mm = m; mm; mm &= mm - 1) {
        int l = __builtin_ctz(mm);
        uint64_t *p = ptx_mem(w, in, l, in->space, A[l] + (uint64_t)in->off, 8);
        if (!p) return R_FAULT;
        uint64_t st = 0;
        switch (op) {
        case MB_INIT: {
            uint32_t n = (uint32_t)B[l];
            if (n < 1 || n > 0xfffffu) return ptx_fault(w, in, l, PTX_E_ILLEGAL_INSTRUCTION, "mbarrier.init count %u (1 to 2^20 - 1)", n);
            *p = MB_MAKE(0, n, n);
            break;
        }
        case MB_ARRIVE: case MB_ARRIVE_DROP: case MB_CP_ARRIVE_NOINC:
            if (mb_arrive(w, in, l, p, (in->flags & F_HASCOUNT) ? (uint32_t)B[l] : 1u, op == MB_ARRIVE_DROP, &st)) return R_FAULT;
            if (D) D[l] = st;
            break;
        case MB_CP_ARRIVE: break;   /* pending count + 1, then the copies' arrival - 1: the copies are done */
        case MB_INVAL: *p = 0; break;
        default: {   /* waits: complete when the phase named has completed */
            uint64_t ph = MB_PHASE(*p);
            int done = op == MB_TEST_PAR || op == MB_TRY_PAR ? (ph & 1) != (B[l] & 1) : ph != ((B[l] >> 32) & 0x7fffffull);
            if (D) D[l] = (uint64_t)done;
            if (!done) pending |= 1u << l;
            break;
        }
        }
    }
    if (waits && pending && (op == MB_TRY || op == MB_TRY_PAR)) {
        /* a try_wait that fails lets the block's other warps run before the loop asks again */
        w->pc++;
        return w->pc >= w->minother ? R_JUMPED : R_YIELD;
    }
    return R_NEXT;
}

int h_cp_async_mbar(warp *w, const insn_t *in, uint32_t m) { return h_mbarrier(w, in, m); }

/* ------------------------------------------------------------------------------------------ wmma */

/* The engine's wmma fragment layout (the ISA leaves it to the implementation: programs only load, store,
 * multiply and apply element-wise operations to fragments): a 16x16 matrix's element e = 16 row + col
 * (row and column of the operand as a matrix, A m x k, B k x n, C / D m x n) is element e % 8 of lane
 * e / 8.  An f16 A / B fragment is 8 f16x2 registers: its 8 elements in registers 0-3, again in 4-7 (the
 * API's num_elements is 16); C / D are 8 f32 or 4 f16x2 registers.  Instructions: the first insn_t holds
 * registers 0-3 and the address; a payload the registers 4-7 (and wmma.store's stride in s[4]);
 * wmma.mma is six insn_t (D, A; D, A; B; B; C; C).  aop: 1 a, 2 b, 3 c / d; bop: 1 for .col. */

static inline uint64_t *wrow(warp *w, const insn_t *in, int reg, int dst)
{
    const insn_t *q = reg < 4 ? in : in + 1;
    return ROW(dst ? q->d[reg & 3] : q->s[reg & 3]);
}

/* Byte offset of element (r, c) of the operand in memory with the given layout and stride. */
static inline uint64_t woff(int col_major, int r, int c, uint64_t stride, int esz)
{
    return ((col_major ? (uint64_t)c * stride + (uint64_t)r : (uint64_t)r * stride + (uint64_t)c)) * (uint64_t)esz;
}

int h_wmma_load(warp *w, const insn_t *in, uint32_t m)
{
    if (!m) { w->pc += 2; return R_JUMPED; }
    int r = ptx_warp_sync(w, in, m, 0xffffffffu);
    if (r) return r;
    int esz = in->t == T_F32 ? 4 : 2, col = in->bop, ab = in->aop < 3;
    const uint64_t *A = ROW(in->s[4]), *S = ROW(in->s[0]);
    int l0 = __builtin_ctz(m);
    uint64_t base = A[l0] + (uint64_t)in->off, stride = (uint32_t)S[l0];
    /* B (k x n) is addressed as (k, n): its .row layout is k-major, .col n-major, as for A and C */
    for (uint32_t mm = m; mm; mm &= mm - 1) {
        int l = __builtin_ctz(mm);
        uint64_t v[8] = {0};
        for (int j = 0; j < 8; j++) {
            int e = l * 8 + j, rr = e / 16, cc = e % 16;
            const unsigned char *p = ptx_mem(w, in, l, in->space, base + woff(col, rr, cc, stride, esz), (size_t)esz);
            if (!p) return R_FAULT;
            uint64_t x = 0;
            memcpy(&x, p, (size_t)esz);
            if (esz == 4) v[j] = x; else v[j / 2] |= x << (16 * (j & 1));
        }
        int nregs = esz == 4 ? 8 : ab ? 8 : 4;
        for (int k = 0; k < nregs; k++) {
            uint64_t *D = wrow(w, in, k, 1);
            D[l] = esz == 4 ? v[k] : v[k & 3];
        }
    }
    w->pc += 2;
    return R_JUMPED;
}

int h_wmma_store(warp *w, const insn_t *in, uint32_t m)
{
    if (!m) { w->pc += 2; return R_JUMPED; }
    int r = ptx_warp_sync(w, in, m, 0xffffffffu);
    if (r) return r;
    int esz = in->t == T_F32 ? 4 : 2, col = in->bop;
    const uint64_t *A = ROW(in->s[4]), *S = ROW(in[1].s[4]);
    int l0 = __builtin_ctz(m);
    uint64_t base = A[l0] + (uint64_t)in->off, stride = (uint32_t)S[l0];
    for (uint32_t mm = m; mm; mm &= mm - 1) {
        int l = __builtin_ctz(mm);
        for (int j = 0; j < 8; j++) {
            int e = l * 8 + j, rr = e / 16, cc = e % 16;
            unsigned char *p = ptx_mem(w, in, l, in->space, base + woff(col, rr, cc, stride, esz), (size_t)esz);
            if (!p) return R_FAULT;
            uint64_t x = esz == 4 ? wrow(w, in, j, 0)[l] : wrow(w, in, j / 2, 0)[l] >> (16 * (j & 1));
            memcpy(p, &x, (size_t)esz);
        }
    }
    w->pc += 2;
    return R_JUMPED;
}

int h_wmma_mma(warp *w, const insn_t *in, uint32_t m)
{
    if (!m) { w->pc += 6; return R_JUMPED; }
    int r = ptx_warp_sync(w, in, m, 0xffffffffu);
    if (r) return r;
    int td = in->t, tc = in->t2;
    double A[16][16], B[16][16], C[16][16];
    for (int l = 0; l < 32; l++)
        for (int j = 0; j < 8; j++) {
            int e = l * 8 + j, rr = e / 16, cc = e % 16, sh = 16 * (j & 1);
            A[rr][cc] = ptx_h2f((uint16_t)(ROW(in[0].s[j / 2])[l] >> sh));
            B[rr][cc] = ptx_h2f((uint16_t)(ROW(in[2].s[j / 2])[l] >> sh));
            C[rr][cc] = tc == T_F32 ? ptx_f32(ROW(in[4 + j / 4].s[j & 3])[l]) : ptx_h2f((uint16_t)(ROW(in[4].s[j / 2])[l] >> sh));
        }
    uint64_t out[8][32];
    memset(out, 0, sizeof out);
    for (int l = 0; l < 32; l++)
        for (int j = 0; j < 8; j++) {
            int e = l * 8 + j, rr = e / 16, cc = e % 16;
            double acc = C[rr][cc];
            for (int k = 0; k < 16; k++) acc += A[rr][k] * B[k][cc];
            if (td == T_F32) out[j][l] = isnan(acc) ? 0x7fffffffu : ptx_bf32((float)acc);
            else out[j / 2][l] |= (uint64_t)ptx_f2h(acc, RND_RN) << (16 * (j & 1));
        }
    int nd = td == T_F32 ? 8 : 4;
    for (int k = 0; k < nd; k++) {
        uint64_t *D = ROW(in[k / 4].d[k & 3]);
        for (uint32_t mm = m; mm; mm &= mm - 1) { int l = __builtin_ctz(mm); D[l] = out[k][l]; }
    }
    w->pc += 6;
    return R_JUMPED;
}
