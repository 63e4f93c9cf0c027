/* The PTX engine's instruction handlers: the lane-wise families generated from ptx_ops.def (BIN, UN, TERN,
 * SHIFT, WIDE, WIDE3, CMP), the hand-written data handlers (mov, cvt, ld, st, atom, bit operations, half
 * precision), and the dispatch and key tables (ptx_handlers, ptx_opvars), generated from the same table.
 * Control-flow, barrier and warp-synchronous handlers live with the scheduler (ptx_exec.c).
 *
 * Floating point: the default rounding (.rn) runs as plain C arithmetic; a directed rounding mode (.rz, .rm,
 * .rp) sets the FPU's mode around the lane loop, with the operands and result passed through volatile
 * variables so the compiler cannot move the arithmetic out of it.  .ftz flushes f32 subnormal inputs and
 * results to zero (sign kept); .sat clamps to [0, 1] (NaN to 0).  The .approx functions are computed in
 * double precision and rounded once: at least as accurate as the documented bounds (e.g. 2 ulp for
 * ex2.approx.f32, 2^-22.9 absolute for sin/cos.approx in [-pi, pi]), never less. */
#include <fenv.h>
#include <math.h>
#include <stdio.h>

#include "ptx_internal.h"


#define ROW(i) (w->regs + (size_t)(i) * 32)
#define LANES(...) do { \
    if (m == 0xffffffffu) { for (int l = 0; l < 32; l++) { __VA_ARGS__ } } \
    else { for (uint32_t mm_ = m; mm_; mm_ &= mm_ - 1) { int l = __builtin_ctz(mm_); __VA_ARGS__ } } } while (0)

/* C types and row accessors per PTX type. */
#define CT_u16 uint16_t
#define CT_u32 uint32_t
#define CT_u64 uint64_t
#define CT_s16 int16_t
#define CT_s32 int32_t
#define CT_s64 int64_t
#define CT_f32 float
#define CT_f64 double
#define CT_pred uint32_t
#define GET_u16(x) ((uint16_t)(x))
#define GET_u32(x) ((uint32_t)(x))
#define GET_u64(x) ((uint64_t)(x))
#define GET_s16(x) ((int16_t)(uint16_t)(x))
#define GET_s32(x) ((int32_t)(uint32_t)(x))
#define GET_s64(x) ((int64_t)(x))
#define GET_f32(x) ptx_f32(x)
#define GET_f64(x) ptx_f64(x)
#define GET_pred(x) ((uint32_t)((x) & 1))
#define PUT_u16(v) ((uint64_t)(uint16_t)(v))
#define PUT_u32(v) ((uint64_t)(uint32_t)(v))
#define PUT_u64(v) ((uint64_t)(v))
#define PUT_s16(v) ((uint64_t)(uint16_t)(int16_t)(v))
#define PUT_s32(v) ((uint64_t)(uint32_t)(int32_t)(v))
#define PUT_s64(v) ((uint64_t)(int64_t)(v))
#define PUT_f32(v) ptx_bf32(v)
#define PUT_f64(v) ptx_bf64(v)
#define PUT_pred(v) ((uint64_t)((v) != 0))
/* Whether a type has the slow (rounding / ftz / sat) path. */
#define FP_u16 0
#define FP_u32 0
#define FP_u64 0
#define FP_s16 0
#define FP_s32 0
#define FP_s64 0
#define FP_pred 0
#define FP_f32 1
#define FP_f64 1

static inline float ftz32(float x) { return fpclassify(x) == FP_SUBNORMAL ? copysignf(0.0f, x) : x; }
/* .sat: [0, 1], NaN and -0 to +0 */
static inline float sat32(float x) { return isnan(x) || x <= 0.0f ? 0.0f : x > 1.0f ? 1.0f : x; }
static inline double sat64(double x) { return isnan(x) || x <= 0.0 ? 0.0 : x > 1.0 ? 1.0 : x; }
#define IN_f32(in, x) ((in)->flags & F_FTZ ? ftz32(ptx_f32(x)) : ptx_f32(x))
#define IN_f64(in, x) ptx_f64(x)
#define OUT_f32(in, v) ptx_bf32(((in)->flags & F_FTZ) ? ftz32(((in)->flags & F_SAT) ? sat32(v) : (v)) : (((in)->flags & F_SAT) ? sat32(v) : (v)))
#define OUT_f64(in, v) ptx_bf64(((in)->flags & F_SAT) ? sat64(v) : (v))
#define IN_u16(in, x) GET_u16(x)
#define IN_u32(in, x) GET_u32(x)
#define IN_u64(in, x) GET_u64(x)
#define IN_s16(in, x) GET_s16(x)
#define IN_s32(in, x) GET_s32(x)
#define IN_s64(in, x) GET_s64(x)
#define IN_pred(in, x) GET_pred(x)
#define OUT_u16(in, v) PUT_u16(v)
#define OUT_u32(in, v) PUT_u32(v)
#define OUT_u64(in, v) PUT_u64(v)
#define OUT_s16(in, v) PUT_s16(v)
#define OUT_s32(in, v) PUT_s32(v)
#define OUT_s64(in, v) PUT_s64(v)
#define OUT_pred(in, v) PUT_pred(v)

static const int FE_OF[] = {FE_TONEAREST, FE_TONEAREST, FE_TOWARDZERO, FE_DOWNWARD, FE_UPWARD,
                            FE_TONEAREST, FE_TOWARDZERO, FE_DOWNWARD, FE_UPWARD, FE_TONEAREST};
#define SLOW(in) (((in)->flags & (F_FTZ | F_SAT)) || (in)->rnd > RND_RN)
#define FP_ENTER(in) int old_rnd_ = fegetround(); if ((in)->rnd > RND_RN) fesetround(FE_OF[(in)->rnd])
#define FP_LEAVE(in) fesetround(old_rnd_)

/* helpers the table's expressions use */
static inline int32_t sat_s32(int64_t v) { return v > INT32_MAX ? INT32_MAX : v < INT32_MIN ? INT32_MIN : (int32_t)v; }
static inline int32_t sx24(int32_t v) { return (int32_t)((uint32_t)v << 8) >> 8; }
static inline uint32_t brev32(uint32_t x)
{
    x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
    x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
    x = ((x >> 4) & 0x0f0f0f0fu) | ((x & 0x0f0f0f0fu) << 4);
    return __builtin_bswap32(x);
}
static inline uint64_t brev64(uint64_t x) { return ((uint64_t)brev32((uint32_t)x) << 32) | brev32((uint32_t)(x >> 32)); }
static inline float fmin_nan(float a, float b) { return isnan(a) || isnan(b) ? NAN : fminf(a, b); }
static inline float fmax_nan(float a, float b) { return isnan(a) || isnan(b) ? NAN : fmaxf(a, b); }
/* div.full.f32: a / b with at most 2 ulp error: computed exactly rounded. */
static inline float div_full(float a, float b) { return a / b; }
/* div.approx.f32: a * (1/b); for |b| in (2^126, 2^128) the result is 0 as documented. */
static inline float div_approx(float a, float b)
{
    float ab = fabsf(b);
    if (ab > 0x1p126f && ab < INFINITY) return isnan(a) ? a : isinf(a) ? a * b : copysignf(0.0f, a) * copysignf(1.0f, b);
    return (float)((double)a / (double)b);
}

/* ----------------------------------------------------------------------------- the generated families */

/* PTX min/max of floats: a NaN operand (quiet or signalling) yields the other operand, NaN only when both
 * are NaN; -0 < +0. */
#undef fminf
#undef fmaxf
static inline float ptx_fminf(float a, float b)
{
    if (isnan(a)) return isnan(b) ? NAN : b;
    if (isnan(b)) return a;
    if (a == 0.0f && b == 0.0f) return signbit(a) ? a : b;
    return a < b ? a : b;
}
static inline float ptx_fmaxf(float a, float b)
{
    if (isnan(a)) return isnan(b) ? NAN : b;
    if (isnan(b)) return a;
    if (a == 0.0f && b == 0.0f) return signbit(a) ? b : a;
    return a > b ? a : b;
}
static inline double ptx_fmin(double a, double b)
{
    if (isnan(a)) return isnan(b) ? NAN : b;
    if (isnan(b)) return a;
    if (a == 0.0 && b == 0.0) return signbit(a) ? a : b;
    return a < b ? a : b;
}
static inline double ptx_fmax(double a, double b)
{
    if (isnan(a)) return isnan(b) ? NAN : b;
    if (isnan(b)) return a;
    if (a == 0.0 && b == 0.0) return signbit(a) ? b : a;
    return a > b ? a : b;
}
#define fminf ptx_fminf
#define fmaxf ptx_fmaxf
#define fmin ptx_fmin
#define fmax ptx_fmax

#define BIN(name, keys, T, expr) \
static int h_##name(warp *w, const insn_t *in, uint32_t m) { \
    uint64_t *D = ROW(in->d[0]); const uint64_t *A = ROW(in->s[0]), *B = ROW(in->s[1]); \
    if (FP_##T && SLOW(in)) { \
        FP_ENTER(in); \
        LANES({ volatile CT_##T va_ = IN_##T(in, A[l]), vb_ = IN_##T(in, B[l]); CT_##T a = va_, b = vb_; \
                volatile CT_##T r_ = (CT_##T)(expr); D[l] = OUT_##T(in, r_); }); \
        FP_LEAVE(in); \
    } else LANES({ CT_##T a = GET_##T(A[l]); CT_##T b = GET_##T(B[l]); D[l] = PUT_##T(expr); }); \
    return R_NEXT; }
#define SHIFT(name, keys, T, expr) \
static int h_##name(warp *w, const insn_t *in, uint32_t m) { \
    uint64_t *D = ROW(in->d[0]); const uint64_t *A = ROW(in->s[0]), *B = ROW(in->s[1]); \
    LANES({ CT_##T a = GET_##T(A[l]); uint32_t b = (uint32_t)B[l]; D[l] = PUT_##T(expr); }); \
    return R_NEXT; }
#define UN(name, keys, T, expr) \
static int h_##name(warp *w, const insn_t *in, uint32_t m) { \
    uint64_t *D = ROW(in->d[0]); const uint64_t *A = ROW(in->s[0]); \
    if (FP_##T && SLOW(in)) { \
        FP_ENTER(in); \
        LANES({ volatile CT_##T va_ = IN_##T(in, A[l]); CT_##T a = va_; volatile CT_##T r_ = (CT_##T)(expr); D[l] = OUT_##T(in, r_); }); \
        FP_LEAVE(in); \
    } else LANES({ CT_##T a = GET_##T(A[l]); D[l] = PUT_##T(expr); }); \
    return R_NEXT; }
#define TERN(name, keys, T, expr) \
static int h_##name(warp *w, const insn_t *in, uint32_t m) { \
    uint64_t *D = ROW(in->d[0]); const uint64_t *A = ROW(in->s[0]), *B = ROW(in->s[1]), *C = ROW(in->s[2]); \
    if (FP_##T && SLOW(in)) { \
        FP_ENTER(in); \
        LANES({ volatile CT_##T va_ = IN_##T(in, A[l]), vb_ = IN_##T(in, B[l]), vc_ = IN_##T(in, C[l]); \
                CT_##T a = va_, b = vb_, c = vc_; volatile CT_##T r_ = (CT_##T)(expr); D[l] = OUT_##T(in, r_); }); \
        FP_LEAVE(in); \
    } else LANES({ CT_##T a = GET_##T(A[l]); CT_##T b = GET_##T(B[l]); CT_##T c = GET_##T(C[l]); D[l] = PUT_##T(expr); }); \
    return R_NEXT; }
#define WIDE(name, keys, TS, TD, expr) \
static int h_##name(warp *w, const insn_t *in, uint32_t m) { \
    uint64_t *D = ROW(in->d[0]); const uint64_t *A = ROW(in->s[0]), *B = ROW(in->s[1]); \
    LANES({ CT_##TS a = GET_##TS(A[l]); CT_##TS b = GET_##TS(B[l]); D[l] = PUT_##TD(expr); }); \
    return R_NEXT; }
#define WIDE3(name, keys, TS, TD, expr) \
static int h_##name(warp *w, const insn_t *in, uint32_t m) { \
    uint64_t *D = ROW(in->d[0]); const uint64_t *A = ROW(in->s[0]), *B = ROW(in->s[1]), *C = ROW(in->s[2]); \
    LANES({ CT_##TS a = GET_##TS(A[l]); CT_##TS b = GET_##TS(B[l]); CT_##TD c = GET_##TD(C[l]); D[l] = PUT_##TD(expr); }); \
    return R_NEXT; }

/* setp: p = (a cmp b) BOP c, q = !(a cmp b) BOP c */
#define CMPF(cmp, a, b, un) ({ int r_; switch (cmp) { \
    case CMP_EQ: r_ = (a) == (b); break; case CMP_NE: r_ = (a) != (b) && !(un); break; \
    case CMP_LT: case CMP_LO: r_ = (a) < (b); break; case CMP_LE: case CMP_LS: r_ = (a) <= (b); break; \
    case CMP_GT: case CMP_HI: r_ = (a) > (b); break; case CMP_GE: case CMP_HS: r_ = (a) >= (b); break; \
    case CMP_EQU: r_ = (un) || (a) == (b); break; case CMP_NEU: r_ = (un) || (a) != (b); break; \
    case CMP_LTU: r_ = (un) || (a) < (b); break; case CMP_LEU: r_ = (un) || (a) <= (b); break; \
    case CMP_GTU: r_ = (un) || (a) > (b); break; case CMP_GEU: r_ = (un) || (a) >= (b); break; \
    case CMP_NUM: r_ = !(un); break; case CMP_NAN: r_ = (un); break; default: r_ = 0; } r_; })
#define ISNAN_u16(x) 0
#define ISNAN_u32(x) 0
#define ISNAN_u64(x) 0
#define ISNAN_s16(x) 0
#define ISNAN_s32(x) 0
#define ISNAN_s64(x) 0
#define ISNAN_f32(x) isnan(x)
#define ISNAN_f64(x) isnan(x)
static inline uint64_t combine(int bop, int r, uint64_t c)
{
    switch (bop) { case 1: return (uint64_t)r & c; case 2: return (uint64_t)r | c; case 3: return (uint64_t)r ^ c; default: return (uint64_t)r; }
}
#define CMP(name, keys, T) \
static int h_##name(warp *w, const insn_t *in, uint32_t m) { \
    uint64_t *D = ROW(in->d[0]); const uint64_t *A = ROW(in->s[0]), *B = ROW(in->s[1]); \
    uint64_t *Q = in->d[1] != UINT32_MAX ? ROW(in->d[1]) : NULL; \
    int cmp = in->cmp, bop = in->bop; \
    if (!bop && !Q && !FP_##T && cmp == CMP_LT) { LANES({ D[l] = GET_##T(A[l]) < GET_##T(B[l]); }); return R_NEXT; } \
    const uint64_t *C = bop ? ROW(in->s[2]) : NULL; uint64_t neg = (in->flags & F_NEGSRC) != 0; \
    LANES({ CT_##T a = IN_##T(in, A[l]); CT_##T b = IN_##T(in, B[l]); int un = ISNAN_##T(a) || ISNAN_##T(b); \
            int r = CMPF(cmp, a, b, un); uint64_t c = C ? (C[l] & 1) ^ neg : 0; \
            D[l] = combine(bop, r, c); if (Q) Q[l] = combine(bop, !r, c); }); \
    return R_NEXT; }

#define SPEC(name, keys, cls) int h_##name(warp *w, const insn_t *in, uint32_t m);
#include "ptx_ops.def"
#undef BIN
#undef SHIFT
#undef UN
#undef TERN
#undef WIDE
#undef WIDE3
#undef CMP
#undef SPEC
#undef fminf
#undef fmaxf
#undef fmin
#undef fmax

/* -------------------------------------------------------------------------------- carry chains */

int h_addc(warp *w, const insn_t *in, uint32_t m)
{
    uint64_t *D = ROW(in->d[0]); const uint64_t *A = ROW(in->s[0]), *B = ROW(in->s[1]);
    int wide = in->t == T_U64 || in->t == T_S64, cin = (in->flags & F_CIN) != 0, cc = (in->flags & F_CC) != 0;
    LANES({
        uint64_t ci = cin ? w->carry[l] : 0;
        if (wide) { unsigned __int128 s = (unsigned __int128)A[l] + B[l] + ci; D[l] = (uint64_t)s; if (cc) w->carry[l] = (uint8_t)(s >> 64); }
        else { uint64_t s = (uint64_t)(uint32_t)A[l] + (uint32_t)B[l] + ci; D[l] = (uint32_t)s; if (cc) w->carry[l] = (uint8_t)(s >> 32); }
    });
    return R_NEXT;
}

int h_subc(warp *w, const insn_t *in, uint32_t m)
{
    uint64_t *D = ROW(in->d[0]); const uint64_t *A = ROW(in->s[0]), *B = ROW(in->s[1]);
    int wide = in->t == T_U64 || in->t == T_S64, cin = (in->flags & F_CIN) != 0, cc = (in->flags & F_CC) != 0;
    LANES({
        uint64_t bi = cin ? w->carry[l] : 0;   /* the carry flag holds the borrow */
        if (wide) { unsigned __int128 s = (unsigned __int128)A[l] - B[l] - bi; D[l] = (uint64_t)s; if (cc) w->carry[l] = (uint8_t)((s >> 64) & 1); }
        else { uint64_t s = (uint64_t)(uint32_t)A[l] - (uint32_t)B[l] - bi; D[l] = (uint32_t)s; if (cc) w->carry[l] = (uint8_t)((s >> 32) & 1); }
    });
    return R_NEXT;
}

int h_madc(warp *w, const insn_t *in, uint32_t m)
{
    uint64_t *D = ROW(in->d[0]); const uint64_t *A = ROW(in->s[0]), *B = ROW(in->s[1]), *C = ROW(in->s[2]);
    int wide = in->t == T_U64 || in->t == T_S64, sgn = in->t == T_S32 || in->t == T_S64;
    int cin = (in->flags & F_CIN) != 0, cc = (in->flags & F_CC) != 0, hi = in->aop == 1;
    LANES({
        uint64_t ci = cin ? w->carry[l] : 0;
        if (wide) {
            unsigned __int128 p = sgn ? (unsigned __int128)((__int128)(int64_t)A[l] * (int64_t)B[l]) : (unsigned __int128)A[l] * B[l];
            uint64_t part = hi ? (uint64_t)(p >> 64) : (uint64_t)p;
            unsigned __int128 s = (unsigned __int128)part + C[l] + ci;
            D[l] = (uint64_t)s; if (cc) w->carry[l] = (uint8_t)(s >> 64);
        } else {
            uint64_t p = sgn ? (uint64_t)((int64_t)(int32_t)A[l] * (int32_t)B[l]) : (uint64_t)(uint32_t)A[l] * (uint32_t)B[l];
            uint64_t part = hi ? (uint32_t)(p >> 32) : (uint32_t)p;
            uint64_t s = part + (uint32_t)C[l] + ci;
            D[l] = (uint32_t)s; if (cc) w->carry[l] = (uint8_t)(s >> 32);
        }
    });
    return R_NEXT;
}

/* ------------------------------------------------------------------------------------- bit operations */

int h_bfind(warp *w, const insn_t *in, uint32_t m)
{
    uint64_t *D = ROW(in->d[0]); const uint64_t *A = ROW(in->s[0]);
    int wide = in->t == T_U64 || in->t == T_S64, sgn = in->t == T_S32 || in->t == T_S64, shamt = in->aop == 1;
    int msb = wide ? 63 : 31;
    LANES({
        uint64_t a = wide ? A[l] : (uint32_t)A[l];
        if (sgn && ((a >> msb) & 1)) a = ~a & (wide ? ~0ull : 0xffffffffull);
        uint32_t d;
        if (!a) d = 0xffffffffu;
        else { d = (uint32_t)(63 - __builtin_clzll(a)); if (shamt) d = (uint32_t)msb - d; }
        D[l] = d;
    });
    return R_NEXT;
}

int h_bfe(warp *w, const insn_t *in, uint32_t m)
{
    uint64_t *D = ROW(in->d[0]); const uint64_t *A = ROW(in->s[0]), *B = ROW(in->s[1]), *C = ROW(in->s[2]);
    int wide = in->t == T_U64 || in->t == T_S64, sgn = in->t == T_S32 || in->t == T_S64;
    unsigned msb = wide ? 63 : 31;
    LANES({
        uint64_t a = wide ? A[l] : (uint32_t)A[l];
        unsigned pos = (unsigned)B[l] & 0xff, len = (unsigned)C[l] & 0xff;
        unsigned sbit = 0;
        if (sgn && len) { unsigned i = pos + len - 1; if (i > msb) i = msb; sbit = (unsigned)((a >> i) & 1); }
        uint64_t d = 0;
        for (unsigned i = 0; i <= msb; i++) {
            unsigned bit = (i < len && pos + i <= msb) ? (unsigned)((a >> (pos + i)) & 1) : sbit;
            d |= (uint64_t)bit << i;
        }
        D[l] = wide ? d : (uint32_t)d;
    });
    return R_NEXT;
}

int h_bfi(warp *w, const insn_t *in, uint32_t m)
{
    uint64_t *D = ROW(in->d[0]);
    const uint64_t *A = ROW(in->s[0]), *B = ROW(in->s[1]), *C = ROW(in->s[2]), *E = ROW(in->s[3]);
    int wide = in->t == T_B64;
    unsigned msb = wide ? 63 : 31;
    LANES({
        uint64_t a = A[l], f = wide ? B[l] : (uint32_t)B[l];
        unsigned pos = (unsigned)C[l] & 0xff, len = (unsigned)E[l] & 0xff;
        for (unsigned i = 0; i < len && pos + i <= msb; i++)
            f = (f & ~(1ull << (pos + i))) | (((a >> i) & 1) << (pos + i));
        D[l] = f;
    });
    return R_NEXT;
}

int h_prmt(warp *w, const insn_t *in, uint32_t m)
{
    static const uint8_t MODES[7][4][4] = {
        {{0}},
        {{0, 1, 2, 3}, {1, 2, 3, 4}, {2, 3, 4, 5}, {3, 4, 5, 6}},   /* f4e: d.b0..b3 */
        {{0, 7, 6, 5}, {1, 0, 7, 6}, {2, 1, 0, 7}, {3, 2, 1, 0}},   /* b4e */
        {{0, 0, 0, 0}, {1, 1, 1, 1}, {2, 2, 2, 2}, {3, 3, 3, 3}},   /* rc8 */
        {{0, 1, 2, 3}, {1, 1, 2, 3}, {2, 2, 2, 3}, {3, 3, 3, 3}},   /* ecl */
        {{0, 0, 0, 0}, {0, 1, 1, 1}, {0, 1, 2, 2}, {0, 1, 2, 3}},   /* ecr */
        {{0, 1, 0, 1}, {2, 3, 2, 3}, {0, 1, 0, 1}, {2, 3, 2, 3}},   /* rc16 */
    };
    uint64_t *D = ROW(in->d[0]); const uint64_t *A = ROW(in->s[0]), *B = ROW(in->s[1]), *C = ROW(in->s[2]);
    int mode = in->aop;
    LANES({
        uint64_t bytes = (uint64_t)(uint32_t)A[l] | ((uint64_t)(uint32_t)B[l] << 32);
        uint32_t c = (uint32_t)C[l], d = 0;
        for (int i = 0; i < 4; i++) {
            uint32_t byte;
            if (mode) byte = (uint32_t)(bytes >> (8 * MODES[mode][c & 3][i])) & 0xff;
            else {
                uint32_t sel = (c >> (4 * i)) & 0xf;
                byte = (uint32_t)(bytes >> (8 * (sel & 7))) & 0xff;
                if (sel & 8) byte = byte & 0x80 ? 0xff : 0;
            }
            d |= byte << (8 * i);
        }
        D[l] = d;
    });
    return R_NEXT;
}

int h_shf(warp *w, const insn_t *in, uint32_t m)
{
    uint64_t *D = ROW(in->d[0]); const uint64_t *A = ROW(in->s[0]), *B = ROW(in->s[1]), *C = ROW(in->s[2]);
    int right = in->aop & 1, clamp = in->aop & 2;
    LANES({
        uint32_t n = (uint32_t)C[l];
        n = clamp ? (n > 32 ? 32 : n) : n & 31;
        uint64_t v = ((uint64_t)(uint32_t)B[l] << 32) | (uint32_t)A[l];
        D[l] = right ? (uint32_t)(n == 64 ? 0 : v >> n) : (uint32_t)((v << n) >> 32);
    });
    return R_NEXT;
}

int h_lop3(warp *w, const insn_t *in, uint32_t m)
{
    uint64_t *D = ROW(in->d[0]);
    const uint64_t *A = ROW(in->s[0]), *B = ROW(in->s[1]), *C = ROW(in->s[2]), *L = ROW(in->s[3]);
    LANES({
        uint32_t a = (uint32_t)A[l], b = (uint32_t)B[l], c = (uint32_t)C[l], lut = (uint32_t)L[l] & 0xff, d = 0;
        for (int i = 0; i < 8; i++)
            if (lut >> i & 1) d |= (i & 4 ? a : ~a) & (i & 2 ? b : ~b) & (i & 1 ? c : ~c);
        D[l] = d;
    });
    return R_NEXT;
}

int h_dp4a(warp *w, const insn_t *in, uint32_t m)
{
    uint64_t *D = ROW(in->d[0]); const uint64_t *A = ROW(in->s[0]), *B = ROW(in->s[1]), *C = ROW(in->s[2]);
    int sa = in->t == T_S32, sb = in->t2 == T_S32;
    LANES({
        int64_t acc = (int32_t)(uint32_t)C[l];
        for (int i = 0; i < 4; i++) {
            int32_t x = (int32_t)((uint32_t)A[l] >> (8 * i) & 0xff), y = (int32_t)((uint32_t)B[l] >> (8 * i) & 0xff);
            if (sa && x > 127) x -= 256;
            if (sb && y > 127) y -= 256;
            acc += (int64_t)x * y;
        }
        D[l] = (uint32_t)acc;
    });
    return R_NEXT;
}

int h_testp(warp *w, const insn_t *in, uint32_t m)
{
    uint64_t *D = ROW(in->d[0]); const uint64_t *A = ROW(in->s[0]);
    int wide = in->t == T_F64, what = in->aop;
    LANES({
        double x = wide ? ptx_f64(A[l]) : (double)ptx_f32(A[l]);
        int c = wide ? fpclassify(ptx_f64(A[l])) : fpclassify(ptx_f32(A[l]));
        int r;
        switch (what) {
        case 0: r = isfinite(x); break;
        case 1: r = isinf(x); break;
        case 2: r = !isnan(x); break;
        case 3: r = isnan(x); break;
        case 4: r = c == FP_NORMAL; break;
        default: r = c == FP_SUBNORMAL; break;
        }
        D[l] = (uint64_t)r;
    });
    return R_NEXT;
}

/* ------------------------------------------------------------------------ rounding to narrow formats */

/* x rounded to a binary format of p significand bits, normal exponents [emin, emax], in mode rnd; the
 * result is exact in long double.  Overflow follows the mode (to infinity or the largest finite). */
long double ptx_round_fmt(long double x, int p, int emin, int emax, int rnd)
{
    if (isnan(x) || isinf(x) || x == 0) return x;
    int e;
    frexpl(x, &e);      /* x = f * 2^e, f in [0.5, 1) */
    e -= 1;             /* x = g * 2^e, g in [1, 2) */
    if (e < emin) e = emin;
    long double scale = ldexpl(1.0L, e - (p - 1));
    long double q = x / scale, r;
    switch (rnd) {
    case RND_RZ: case RND_RZI: r = truncl(q); break;
    case RND_RM: case RND_RMI: r = floorl(q); break;
    case RND_RP: case RND_RPI: r = ceill(q); break;
    case RND_RNA: r = roundl(q); break;
    default: { r = floorl(q); long double f = q - r; if (f > 0.5L || (f == 0.5L && fmodl(r, 2.0L) != 0)) r += 1; } break;
    }
    long double v = r * scale;
    long double maxf = ldexpl(2.0L - ldexpl(1.0L, 1 - p), emax);
    if (fabsl(v) > maxf) {
        int neg = v < 0;
        switch (rnd) {
        case RND_RZ: case RND_RZI: return neg ? -maxf : maxf;
        case RND_RM: case RND_RMI: return neg ? -INFINITY : maxf;
        case RND_RP: case RND_RPI: return neg ? -maxf : INFINITY;
        default: return neg ? -INFINITY : INFINITY;
        }
    }
    if (v == 0) return copysignl(0.0L, x);
    return v;
}

uint16_t ptx_f2h(long double x, int rnd)
{
    if (isnan(x)) return 0x7fff;
    long double v = ptx_round_fmt(x, 11, -14, 15, rnd);
    uint16_t s = signbit(v) ? 0x8000 : 0;
    long double a = fabsl(v);
    if (isinf(a)) return s | 0x7c00;
    if (a == 0) return s;
    int e;
    frexpl(a, &e);
    e -= 1;
    if (e < -14) return s | (uint16_t)(a * 16777216.0L);   /* subnormal: a / 2^-24 */
    uint16_t mant = (uint16_t)(ldexpl(a, -e) * 1024.0L - 1024.0L);
    return s | (uint16_t)((e + 15) << 10) | mant;
}

float ptx_h2f(uint16_t h)
{
    uint32_t s = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 0x1f, f = h & 0x3ff;
    if (e == 0x1f) return ptx_f32(s | 0x7f800000u | (f << 13));
    if (e == 0) { float v = (float)f * 0x1p-24f; return s ? -v : v; }
    return ptx_f32(s | ((e + 112) << 23) | (f << 13));
}

uint16_t ptx_f2bf(long double x, int rnd)
{
    if (isnan(x)) return 0x7fff;
    long double v = ptx_round_fmt(x, 8, -126, 127, rnd);
    float f = (float)v;
    return (uint16_t)(ptx_bf32(f) >> 16);
}

float ptx_bf2f(uint16_t h) { return ptx_f32((uint32_t)h << 16); }

/* ----------------------------------------------------------------------------------- half precision */

static inline int is_bf(int t) { return t == T_BF16 || t == T_BF16X2; }
static inline float h_get(int bf, uint32_t bits) { return bf ? ptx_bf2f((uint16_t)bits) : ptx_h2f((uint16_t)bits); }
static inline uint32_t h_put(int bf, long double v, int rnd) { return bf ? ptx_f2bf(v, rnd) : ptx_f2h(v, rnd); }
static inline float h_ftz(int bf, float x) { return bf ? x : (fabsf(x) < 0x1p-14f ? copysignf(0.0f, x) : x); }

static uint32_t h_apply(const insn_t *in, int bf, int op, float a, float b, float c)
{
    int rnd = in->rnd ? in->rnd : RND_RN;
    if (in->flags & F_FTZ) { a = h_ftz(bf, a); b = h_ftz(bf, b); c = h_ftz(bf, c); }
    long double r;
    switch (op) {
    case 0: r = (long double)a + b; break;
    case 1: r = (long double)a - b; break;
    case 2: r = (long double)a * b; break;
    case 3: r = fminf(a, b); if (isnan(a) && isnan(b)) return bf ? 0x7fff : 0x7fff; break;
    case 4: r = fmaxf(a, b); if (isnan(a) && isnan(b)) return bf ? 0x7fff : 0x7fff; break;
    case 5: r = (long double)a * b + c; break;
    case 6: r = -(long double)a; break;
    case 7: r = fabsl((long double)a); break;
    case 8: r = exp2l(a); break;
    default: r = tanhl(a); break;
    }
    if (isnan(r)) return 0x7fff;
    if (in->flags & F_SAT) r = r < 0 ? 0 : r > 1 ? 1 : r;
    if ((in->flags & F_RELU) && (r < 0 || (r == 0 && signbit(r)))) r = 0;   /* .relu: negative results to +0 */
    if (op == 6 || op == 7) {   /* sign operations are exact bit operations */
        return 0;
    }
    uint32_t h = h_put(bf, r, rnd);
    if ((in->flags & F_FTZ) && !bf && (h & 0x7c00) == 0) h &= 0x8000;
    return h;
}

static int h_half(warp *w, const insn_t *in, uint32_t m, int op)
{
    uint64_t *D = ROW(in->d[0]);
    const uint64_t *A = ROW(in->s[0]);
    const uint64_t *B = in->ns > 1 ? ROW(in->s[1]) : A, *C = in->ns > 2 ? ROW(in->s[2]) : A;
    int bf = is_bf(in->t), n = (in->t == T_F16X2 || in->t == T_BF16X2) ? 2 : 1;
    LANES({
        uint32_t d = 0;
        for (int k = 0; k < n; k++) {
            uint32_t ab = (uint32_t)(A[l] >> (16 * k)) & 0xffff, bb = (uint32_t)(B[l] >> (16 * k)) & 0xffff, cb = (uint32_t)(C[l] >> (16 * k)) & 0xffff;
            uint32_t r;
            if (op == 6) r = ab ^ 0x8000;
            else if (op == 7) r = ab & 0x7fff;
            else r = h_apply(in, bf, op, h_get(bf, ab), h_get(bf, bb), h_get(bf, cb));
            d |= r << (16 * k);
        }
        D[l] = d;
    });
    return R_NEXT;
}

static int half_op_of(const insn_t *in, const char *mn)
{
    (void)in;
    if (!strncmp(mn, "add", 3)) return 0;
    if (!strncmp(mn, "sub", 3)) return 1;
    if (!strncmp(mn, "mul", 3)) return 2;
    if (!strncmp(mn, "min", 3)) return 3;
    if (!strncmp(mn, "max", 3)) return 4;
    if (!strncmp(mn, "fma", 3)) return 5;
    if (!strncmp(mn, "neg", 3)) return 6;
    if (!strncmp(mn, "abs", 3)) return 7;
    if (!strncmp(mn, "ex2", 3)) return 8;
    return 9;
}

int h_h_arith(warp *w, const insn_t *in, uint32_t m) { return h_half(w, in, m, in->aop); }
int h_h_fma(warp *w, const insn_t *in, uint32_t m) { return h_half(w, in, m, 5); }
int h_h_un(warp *w, const insn_t *in, uint32_t m) { return h_half(w, in, m, in->aop); }
int ptx_half_op(const char *mn) { return half_op_of(NULL, mn); }

int h_setp_h(warp *w, const insn_t *in, uint32_t m)
{
    uint64_t *D = ROW(in->d[0]); const uint64_t *A = ROW(in->s[0]), *B = ROW(in->s[1]);
    uint64_t *Q = in->d[1] != UINT32_MAX ? ROW(in->d[1]) : NULL;
    const uint64_t *C = in->bop ? ROW(in->s[2]) : NULL;
    uint64_t neg = (in->flags & F_NEGSRC) != 0;
    int bf = is_bf(in->t), pair = in->t == T_F16X2 || in->t == T_BF16X2;
    LANES({
        uint64_t c = C ? (C[l] & 1) ^ neg : 0;
        int res[2];
        for (int k = 0; k < (pair ? 2 : 1); k++) {
            float a = h_get(bf, (uint32_t)(A[l] >> (16 * k)) & 0xffff), b = h_get(bf, (uint32_t)(B[l] >> (16 * k)) & 0xffff);
            if (in->flags & F_FTZ) { a = h_ftz(bf, a); b = h_ftz(bf, b); }
            int un = isnan(a) || isnan(b);
            res[k] = CMPF(in->cmp, a, b, un);
        }
        if (pair) { D[l] = combine(in->bop, res[0], c); if (Q) Q[l] = combine(in->bop, res[1], c); }
        else { D[l] = combine(in->bop, res[0], c); if (Q) Q[l] = combine(in->bop, !res[0], c); }
    });
    return R_NEXT;
}

/* ------------------------------------------------------------------------------- selection and set */

static inline int read_cmp_operand(int t, uint64_t x, double *d, int64_t *i, uint64_t *u)
{
    switch (t) {
    case T_F32: *d = ptx_f32(x); return 2;
    case T_F64: *d = ptx_f64(x); return 2;
    case T_F16: *d = ptx_h2f((uint16_t)x); return 2;
    case T_BF16: *d = ptx_bf2f((uint16_t)x); return 2;
    case T_S16: *i = (int16_t)x; return 1;
    case T_S32: *i = (int32_t)x; return 1;
    case T_S64: *i = (int64_t)x; return 1;
    case T_U16: case T_B16: *u = (uint16_t)x; return 0;
    case T_U32: case T_B32: *u = (uint32_t)x; return 0;
    default: *u = x; return 0;
    }
}

int h_set(warp *w, const insn_t *in, uint32_t m)
{
    uint64_t *D = ROW(in->d[0]); const uint64_t *A = ROW(in->s[0]), *B = ROW(in->s[1]);
    const uint64_t *C = in->bop ? ROW(in->s[2]) : NULL;
    uint64_t neg = (in->flags & F_NEGSRC) != 0;
    LANES({
        double da = 0, db = 0; int64_t ia = 0, ib = 0; uint64_t ua = 0, ub = 0;
        int k = read_cmp_operand(in->t2, A[l], &da, &ia, &ua);
        read_cmp_operand(in->t2, B[l], &db, &ib, &ub);
        if ((in->flags & F_FTZ) && in->t2 == T_F32) { da = ftz32((float)da); db = ftz32((float)db); }
        int r = k == 2 ? CMPF(in->cmp, da, db, isnan(da) || isnan(db)) : k == 1 ? CMPF(in->cmp, ia, ib, 0) : CMPF(in->cmp, ua, ub, 0);
        uint64_t v = combine(in->bop, r, C ? (C[l] & 1) ^ neg : 0);
        D[l] = in->t == T_F32 ? (v ? ptx_bf32(1.0f) : 0) : in->t == T_F16 ? (v ? 0x3c00u : 0)
             : in->t == T_BF16 ? (v ? 0x3f80u : 0) : (v ? 0xffffffffu : 0);
    });
    return R_NEXT;
}

int h_selp(warp *w, const insn_t *in, uint32_t m)
{
    uint64_t *D = ROW(in->d[0]); const uint64_t *A = ROW(in->s[0]), *B = ROW(in->s[1]), *C = ROW(in->s[2]);
    LANES({ D[l] = (C[l] & 1) ? A[l] : B[l]; });
    return R_NEXT;
}

int h_slct(warp *w, const insn_t *in, uint32_t m)
{
    uint64_t *D = ROW(in->d[0]); const uint64_t *A = ROW(in->s[0]), *B = ROW(in->s[1]), *C = ROW(in->s[2]);
    int f = in->t2 == T_F32;
    LANES({
        int ge;
        if (f) { float c = ptx_f32(C[l]); if (in->flags & F_FTZ) c = ftz32(c); ge = c >= 0.0f; }
        else ge = (int32_t)C[l] >= 0;
        D[l] = ge ? A[l] : B[l];
    });
    return R_NEXT;
}

/* ------------------------------------------------------------------------------------------- moves */

int h_mov(warp *w, const insn_t *in, uint32_t m)
{
    uint64_t *D = ROW(in->d[0]); const uint64_t *A = ROW(in->s[0]);
    if (in->am == AM_FRAME) { int64_t off = in->off; LANES({ D[l] = w->fp[l] + (uint64_t)off; }); return R_NEXT; }
    LANES({ D[l] = A[l]; });
    return R_NEXT;
}

int h_mov_pack(warp *w, const insn_t *in, uint32_t m)
{
    uint64_t *D = ROW(in->d[0]);
    int n = in->ns, es = ptx_type_size(in->t) / (n ? n : 1);
    uint64_t mask = es >= 8 ? ~0ull : (1ull << (8 * es)) - 1;
    LANES({
        uint64_t v = 0;
        for (int i = 0; i < n; i++) v |= (ROW(in->s[i])[l] & mask) << (8 * es * i);
        D[l] = v;
    });
    return R_NEXT;
}

int h_mov_unpack(warp *w, const insn_t *in, uint32_t m)
{
    const uint64_t *A = ROW(in->s[0]);
    int n = in->nd, es = ptx_type_size(in->t) / (n ? n : 1);
    uint64_t mask = es >= 8 ? ~0ull : (1ull << (8 * es)) - 1;
    LANES({
        uint64_t a = A[l];
        for (int i = 0; i < n; i++) ROW(in->d[i])[l] = (a >> (8 * es * i)) & mask;
    });
    return R_NEXT;
}

/* ------------------------------------------------------------------------------------------- cvt */

static int type_is_float_(int t) { return t == T_F16 || t == T_BF16 || t == T_F32 || t == T_F64; }
static int is_signed(int t) { return t == T_S8 || t == T_S16 || t == T_S32 || t == T_S64; }
static int is_int(int t) { return (t >= T_B8 && t <= T_B64) || (t >= T_U8 && t <= T_S64); }

static long double read_float(int t, uint64_t x, int ftz)
{
    switch (t) {
    case T_F16: return ptx_h2f((uint16_t)x);
    case T_BF16: return ptx_bf2f((uint16_t)x);
    case T_F32: { float f = ptx_f32(x); return ftz ? ftz32(f) : f; }
    default: return ptx_f64(x);
    }
}

static uint64_t int_bits(int t, int64_t v)
{
    int sz = ptx_type_size(t);
    return sz >= 8 ? (uint64_t)v : (uint64_t)v & ((1ull << (8 * sz)) - 1);
}

/* float -> integer: round per mode, saturate to the type's range, NaN -> 0. */
static uint64_t f2i(long double x, int t, int rnd)
{
    if (isnan(x)) return 0;
    long double r;
    switch (rnd) {
    case RND_RZI: case RND_RZ: r = truncl(x); break;
    case RND_RMI: case RND_RM: r = floorl(x); break;
    case RND_RPI: case RND_RP: r = ceill(x); break;
    default: r = nearbyintl(x); { long double fl = floorl(x), f = x - fl; r = f > 0.5L ? fl + 1 : f < 0.5L ? fl : (fmodl(fl, 2.0L) == 0 ? fl : fl + 1); } break;
    }
    int sz = ptx_type_size(t);
    if (is_signed(t)) {
        long double lo = -ldexpl(1.0L, 8 * sz - 1), hi = ldexpl(1.0L, 8 * sz - 1) - 1;
        if (r < lo) r = lo;
        if (r > hi) r = hi;
        return int_bits(t, (int64_t)r);
    }
    long double hi = ldexpl(1.0L, 8 * sz) - 1;
    if (r < 0) r = 0;
    if (r > hi) r = hi;
    return (uint64_t)r;
}

static uint64_t put_float(int t, long double v, int rnd, int ftz, int sat)
{
    if (sat && !isnan(v)) v = v < 0 ? 0 : v > 1 ? 1 : v;
    if (sat && isnan(v)) v = 0;
    switch (t) {
    case T_F16: return ptx_f2h(v, rnd);
    case T_BF16: return ptx_f2bf(v, rnd);
    case T_F32: {
        if (isnan(v)) return 0x7fffffffu;
        float f = (float)ptx_round_fmt(v, 24, -126, 127, rnd);
        if (ftz) f = ftz32(f);
        return ptx_bf32(f);
    }
    default:
        if (isnan(v)) return 0x7fffffffffffffffull;
        return ptx_bf64((double)ptx_round_fmt(v, 53, -1022, 1023, rnd));
    }
}

int h_cvt(warp *w, const insn_t *in, uint32_t m)
{
    uint64_t *D = ROW(in->d[0]); const uint64_t *A = ROW(in->s[0]);
    int td = in->t, ts = in->t2, rnd = in->rnd, ftz = (in->flags & F_FTZ) != 0, sat = (in->flags & F_SAT) != 0;
    int fd = type_is_float_(td), fs = type_is_float_(ts);
    if (td == T_F16X2 || td == T_BF16X2) {
        const uint64_t *B = ROW(in->s[1]);
        int bf = td == T_BF16X2, r = rnd ? rnd : RND_RN;
        LANES({
            long double hi = ptx_f32(A[l]), lo = ptx_f32(B[l]);
            if (ftz) { hi = ftz32((float)hi); lo = ftz32((float)lo); }
            if (sat) { hi = isnan(hi) || hi <= 0 ? 0 : hi > 1 ? 1 : hi; lo = isnan(lo) || lo <= 0 ? 0 : lo > 1 ? 1 : lo; }
            uint32_t h = bf ? ptx_f2bf(hi, r) : ptx_f2h(hi, r), g = bf ? ptx_f2bf(lo, r) : ptx_f2h(lo, r);
            D[l] = (h << 16) | g;
        });
        return R_NEXT;
    }
    /* fast paths */
    if (!ftz && !sat) {
        if (td == T_F32 && ts == T_S32 && rnd <= RND_RN) { LANES({ D[l] = ptx_bf32((float)(int32_t)A[l]); }); return R_NEXT; }
        if (td == T_F32 && ts == T_U32 && rnd <= RND_RN) { LANES({ D[l] = ptx_bf32((float)(uint32_t)A[l]); }); return R_NEXT; }
        if (td == T_F64 && ts == T_F32) { LANES({ D[l] = ptx_bf64((double)ptx_f32(A[l])); }); return R_NEXT; }
        if (td == T_F32 && ts == T_F64 && rnd <= RND_RN) { LANES({ double x = ptx_f64(A[l]); D[l] = isnan(x) ? 0x7fffffffu : ptx_bf32((float)x); }); return R_NEXT; }
        if ((td == T_U64 || td == T_S64) && ts == T_U32) { LANES({ D[l] = (uint32_t)A[l]; }); return R_NEXT; }
        if ((td == T_U64 || td == T_S64) && ts == T_S32) { LANES({ D[l] = (uint64_t)(int64_t)(int32_t)A[l]; }); return R_NEXT; }
        if ((td == T_U32 || td == T_S32) && (ts == T_U64 || ts == T_S64)) { LANES({ D[l] = (uint32_t)A[l]; }); return R_NEXT; }
    }
    LANES({
        uint64_t x = A[l], r;
        if (fs && fd) {
            long double v = read_float(ts, x, ftz && ts == T_F32);
            if (rnd >= RND_RNI && rnd <= RND_RPI) {   /* round to an integral value in the float type */
                long double q;
                if (isnan(v) || isinf(v)) q = v;
                else switch (rnd) { case RND_RZI: q = truncl(v); break; case RND_RMI: q = floorl(v); break;
                                    case RND_RPI: q = ceill(v); break; default: { long double fl = floorl(v), f = v - fl; q = f > 0.5L ? fl + 1 : f < 0.5L ? fl : (fmodl(fl, 2.0L) == 0 ? fl : fl + 1); } }
                if (q == 0) q = copysignl(0.0L, v);
                r = put_float(td, q, RND_RN, ftz && td == T_F32, sat);
            } else if (isnan(v)) {
                r = td == T_F16 || td == T_BF16 ? 0x7fff : td == T_F32 ? 0x7fffffffu : 0x7fffffffffffffffull;
            } else r = put_float(td, v, rnd ? rnd : RND_RN, ftz && td == T_F32, sat);
        } else if (fs) {
            r = f2i(read_float(ts, x, ftz && ts == T_F32), td, rnd ? rnd : RND_RZI);
        } else if (fd) {
            long double v;
            if (is_signed(ts)) { int sz = ptx_type_size(ts); v = (long double)(sz >= 8 ? (int64_t)x : (int64_t)(x << (64 - 8 * sz)) >> (64 - 8 * sz)); }
            else { int sz = ptx_type_size(ts); v = (long double)(sz >= 8 ? x : x & ((1ull << (8 * sz)) - 1)); }
            r = put_float(td, v, rnd ? rnd : RND_RN, ftz && td == T_F32, sat);
        } else {
            int ss = ptx_type_size(ts), ds = ptx_type_size(td);
            int64_t v = is_signed(ts) ? (ss >= 8 ? (int64_t)x : (int64_t)(x << (64 - 8 * ss)) >> (64 - 8 * ss))
                                      : (int64_t)(ss >= 8 ? x : x & ((1ull << (8 * ss)) - 1));
            if (sat) {
                int uns = !is_signed(ts) && ss >= 8;   /* a u64 above INT64_MAX */
                if (is_signed(td)) {
                    int64_t hi = ds >= 8 ? INT64_MAX : (int64_t)((1ull << (8 * ds - 1)) - 1), lo = ds >= 8 ? INT64_MIN : -hi - 1;
                    if (uns && (uint64_t)v > (uint64_t)INT64_MAX) v = hi;
                    else { if (v > hi) v = hi; if (v < lo) v = lo; }
                } else {
                    uint64_t hi = ds >= 8 ? ~0ull : (1ull << (8 * ds)) - 1;
                    if (!uns && v < 0) v = 0;
                    else if ((uint64_t)v > hi) v = (int64_t)hi;
                }
            }
            if (ds < 8 && is_signed(td) && ds > ss) r = int_bits(td, v);
            else r = int_bits(td, v);
            /* a narrower destination register keeps the value sign-extended for .s types */
            if (is_signed(td) && ds < 8) r = (uint64_t)(int64_t)((int64_t)(r << (64 - 8 * ds)) >> (64 - 8 * ds)) & (ds == 4 ? 0xffffffffull : ~0ull);
        }
        (void)is_int;
        D[l] = r;
    });
    return R_NEXT;
}

/* ---------------------------------------------------------------------------- generic addressing */

int h_cvta(warp *w, const insn_t *in, uint32_t m)
{
    uint64_t *D = ROW(in->d[0]); const uint64_t *A = ROW(in->s[0]);
    int sp = in->space, frame = in->am == AM_FRAME;
    int64_t off = in->off;
    LANES({
        uint64_t a = frame ? w->fp[l] + (uint64_t)off : A[l];
        if (sp == SP_SHARED) a = PTX_SHWIN | (a & 0xffffffffull);
        else if (sp == SP_LOCAL) a = PTX_LOCWIN | (a & 0xffffffffull);
        else if (sp == SP_KPARAM) a = PTX_PARWIN | (a & 0xffffffffull);
        D[l] = a;
    });
    return R_NEXT;
}

int h_cvta_to(warp *w, const insn_t *in, uint32_t m)
{
    uint64_t *D = ROW(in->d[0]); const uint64_t *A = ROW(in->s[0]);
    int sp = in->space;
    LANES({
        uint64_t a = A[l];
        if (sp == SP_SHARED || sp == SP_LOCAL || sp == SP_KPARAM) a &= 0xffffffffull;
        D[l] = a;
    });
    return R_NEXT;
}

int h_isspacep(warp *w, const insn_t *in, uint32_t m)
{
    uint64_t *D = ROW(in->d[0]); const uint64_t *A = ROW(in->s[0]);
    int sp = in->space;
    LANES({
        uint64_t win = A[l] & PTX_WINMASK;
        int r = sp == SP_SHARED ? win == PTX_SHWIN : sp == SP_LOCAL ? win == PTX_LOCWIN : sp == SP_KPARAM ? win == PTX_PARWIN
              : (win != PTX_SHWIN && win != PTX_LOCWIN && win != PTX_PARWIN);
        D[l] = (uint64_t)r;
    });
    return R_NEXT;
}

/* ------------------------------------------------------------------------------------ loads, stores */

static inline uint64_t load_bits(const void *p, int sz, int sgn)
{
    switch (sz) {
    case 1: { uint8_t v; memcpy(&v, p, 1); return sgn ? (uint64_t)(int64_t)(int8_t)v : v; }
    case 2: { uint16_t v; memcpy(&v, p, 2); return sgn ? (uint64_t)(int64_t)(int16_t)v : v; }
    case 4: { uint32_t v; memcpy(&v, p, 4); return sgn ? (uint64_t)(int64_t)(int32_t)v : v; }
    default: { uint64_t v; memcpy(&v, p, 8); return v; }
    }
}

static inline void store_bits(void *p, uint64_t v, int sz)
{
    switch (sz) {
    case 1: { uint8_t x = (uint8_t)v; memcpy(p, &x, 1); break; }
    case 2: { uint16_t x = (uint16_t)v; memcpy(p, &x, 2); break; }
    case 4: { uint32_t x = (uint32_t)v; memcpy(p, &x, 4); break; }
    default: memcpy(p, &v, 8); break;
    }
}

int h_ld(warp *w, const insn_t *in, uint32_t m)
{
    int sz = ptx_type_size(in->t), n = in->nd ? in->nd : 1, sgn = is_signed(in->t), sp = in->space;
    const uint64_t *A = ROW(in->s[0]);
    int64_t off = in->off;
    worker *wk = w->wk;
    if (sp == SP_KPARAM && in->am == AM_REG && in->s[0] >= wk->m->nrows) {
        /* a kernel parameter at a constant offset: one read, every lane gets it */
        uint64_t a = A[0] + (uint64_t)off;
        const unsigned char *p = ptx_mem(w, in, __builtin_ctz(m | 0x80000000u), sp, a, (size_t)sz * (size_t)n);
        if (!p) return R_FAULT;
        for (int i = 0; i < n; i++) {
            uint64_t v = load_bits(p + (size_t)i * (size_t)sz, sz, sgn), *D = ROW(in->d[i]);
            LANES({ D[l] = v; });
        }
        return R_NEXT;
    }
    if (n == 1 && sp == SP_SHARED && in->am == AM_REG) {
        uint64_t *D = ROW(in->d[0]);
        unsigned char *base = wk->smem;
        uint64_t size = wk->smem_size;
        LANES({
            uint64_t a = A[l] + (uint64_t)off;
            const void *p;
            if (a < size && a + (uint64_t)sz <= size && !(a & (uint64_t)(sz - 1))) p = base + a;
            else { p = ptx_mem(w, in, l, sp, a, (size_t)sz); if (!p) return R_FAULT; }
            D[l] = load_bits(p, sz, sgn);
        });
        return R_NEXT;
    }
    if (n == 1 && sp == SP_GLOBAL && in->am == AM_REG) {
        uint64_t *D = ROW(in->d[0]);
        uint64_t lo = wk->lo, hi = wk->hi;
        LANES({
            uint64_t a = A[l] + (uint64_t)off;
            const void *p;
            if (a >= lo && a < hi && hi - a >= (uint64_t)sz && !(a & (uint64_t)(sz - 1))) p = (const void *)(uintptr_t)a;
            else { p = ptx_mem(w, in, l, sp, a, (size_t)sz); if (!p) return R_FAULT; lo = wk->lo; hi = wk->hi; }
            D[l] = load_bits(p, sz, sgn);
        });
        return R_NEXT;
    }
    LANES({
        uint64_t a = (in->am == AM_FRAME ? w->fp[l] : A[l]) + (uint64_t)off;
        const unsigned char *p = ptx_mem(w, in, l, sp, a, (size_t)sz * (size_t)n);
        if (!p) return R_FAULT;
        for (int i = 0; i < n; i++) ROW(in->d[i])[l] = load_bits(p + (size_t)i * (size_t)sz, sz, sgn);
    });
    return R_NEXT;
}

int h_st(warp *w, const insn_t *in, uint32_t m)
{
    int sz = ptx_type_size(in->t), n = in->ns ? in->ns : 1, sp = in->space;
    const uint64_t *A = ROW(in->s[4]);
    int64_t off = in->off;
    worker *wk = w->wk;
    if (n == 1 && sp == SP_SHARED && in->am == AM_REG) {
        const uint64_t *S = ROW(in->s[0]);
        unsigned char *base = wk->smem;
        uint64_t size = wk->smem_size;
        LANES({
            uint64_t a = A[l] + (uint64_t)off;
            void *p;
            if (a < size && a + (uint64_t)sz <= size && !(a & (uint64_t)(sz - 1))) p = base + a;
            else { p = ptx_mem(w, in, l, sp, a, (size_t)sz); if (!p) return R_FAULT; }
            store_bits(p, S[l], sz);
        });
        return R_NEXT;
    }
    if (n == 1 && sp == SP_GLOBAL && in->am == AM_REG) {
        const uint64_t *S = ROW(in->s[0]);
        uint64_t lo = wk->lo, hi = wk->hi;
        LANES({
            uint64_t a = A[l] + (uint64_t)off;
            void *p;
            if (a >= lo && a < hi && hi - a >= (uint64_t)sz && !(a & (uint64_t)(sz - 1))) p = (void *)(uintptr_t)a;
            else { p = ptx_mem(w, in, l, sp, a, (size_t)sz); if (!p) return R_FAULT; lo = wk->lo; hi = wk->hi; }
            store_bits(p, S[l], sz);
        });
        return R_NEXT;
    }
    LANES({
        uint64_t a = (in->am == AM_FRAME ? w->fp[l] : A[l]) + (uint64_t)off;
        unsigned char *p = ptx_mem(w, in, l, sp, a, (size_t)sz * (size_t)n);
        if (!p) return R_FAULT;
        for (int i = 0; i < n; i++) store_bits(p + (size_t)i * (size_t)sz, ROW(in->s[i])[l], sz);
    });
    return R_NEXT;
}

/* ---------------------------------------------------------------------------------------- atomics */

static uint32_t h2_add(uint32_t old, uint32_t v, int bf)
{
    uint32_t r = 0;
    for (int k = 0; k < 2; k++) {
        float a = h_get(bf, (old >> (16 * k)) & 0xffff), b = h_get(bf, (v >> (16 * k)) & 0xffff);
        r |= (uint32_t)h_put(bf, (long double)a + b, RND_RN) << (16 * k);
    }
    return r;
}

static uint64_t atom_apply(int op, int t, uint64_t old, uint64_t v, uint64_t c)
{
    int sz = ptx_type_size(t);
    switch (op) {
    case 1:   /* add */
        switch (t) {
        case T_F32: return ptx_bf32(ptx_f32(old) + ptx_f32(v));
        case T_F64: return ptx_bf64(ptx_f64(old) + ptx_f64(v));
        case T_F16: return ptx_f2h((long double)ptx_h2f((uint16_t)old) + ptx_h2f((uint16_t)v), RND_RN);
        case T_BF16: return ptx_f2bf((long double)ptx_bf2f((uint16_t)old) + ptx_bf2f((uint16_t)v), RND_RN);
        case T_F16X2: return h2_add((uint32_t)old, (uint32_t)v, 0);
        case T_BF16X2: return h2_add((uint32_t)old, (uint32_t)v, 1);
        default: return old + v;
        }
    case 2: case 3: {   /* min, max */
        int mx = op == 3;
        if (t == T_F32) { float a = ptx_f32(old), b = ptx_f32(v); return ptx_bf32(mx ? fmaxf(a, b) : fminf(a, b)); }
        if (t == T_F64) { double a = ptx_f64(old), b = ptx_f64(v); return ptx_bf64(mx ? fmax(a, b) : fmin(a, b)); }
        if (is_signed(t)) {
            int64_t a = sz >= 8 ? (int64_t)old : (int32_t)old, b = sz >= 8 ? (int64_t)v : (int32_t)v;
            return (uint64_t)(mx ? (a > b ? a : b) : (a < b ? a : b));
        }
        return mx ? (old > v ? old : v) : (old < v ? old : v);
    }
    case 4: return old & v;
    case 5: return old | v;
    case 6: return old ^ v;
    case 7: return v;
    case 8: return old == v ? c : old;    /* cas: v = compare, c = new */
    case 9: return old >= v ? 0 : old + 1;   /* inc */
    case 10: return (old == 0 || old > v) ? v : old - 1;   /* dec */
    default: return old;
    }
}

static int h_atomic(warp *w, const insn_t *in, uint32_t m)
{
    int t = in->t, sz = ptx_type_size(t), op = in->aop;
    const uint64_t *A = ROW(in->s[4]), *B = ROW(in->s[0]), *C = ROW(in->s[1]);
    uint64_t *D = ROW(in->d[0]);
    int64_t off = in->off;
    uint64_t mask = sz >= 8 ? ~0ull : (1ull << (8 * sz)) - 1;
    for (uint32_t mm = m; mm; mm &= mm - 1) {   /* lanes in order: CAS winners are deterministic */
        int l = __builtin_ctz(mm);
        uint64_t a = (in->am == AM_FRAME ? w->fp[l] : A[l]) + (uint64_t)off;
        void *p = ptx_mem(w, in, l, in->space, a, (size_t)sz);
        if (!p) return R_FAULT;
        uint64_t v = B[l] & mask, c = C[l] & mask, old;
        if (sz == 4) {
            uint32_t *q = p, o = __atomic_load_n(q, __ATOMIC_RELAXED), nv;
            do { nv = (uint32_t)atom_apply(op, t, o, v, c); }
            while (!__atomic_compare_exchange_n(q, &o, nv, 1, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED));
            old = o;
        } else if (sz == 8) {
            uint64_t *q = p, o = __atomic_load_n(q, __ATOMIC_RELAXED), nv;
            do { nv = atom_apply(op, t, o, v, c); }
            while (!__atomic_compare_exchange_n(q, &o, nv, 1, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED));
            old = o;
        } else if (sz == 2) {
            uint16_t *q = p, o = __atomic_load_n(q, __ATOMIC_RELAXED), nv;
            do { nv = (uint16_t)atom_apply(op, t, o, v, c); }
            while (!__atomic_compare_exchange_n(q, &o, nv, 1, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED));
            old = o;
        } else return ptx_fault(w, in, l, PTX_E_ILLEGAL_INSTRUCTION, "atomic of %d bytes", sz);
        D[l] = old;
    }
    return R_NEXT;
}

int h_atom(warp *w, const insn_t *in, uint32_t m) { return h_atomic(w, in, m); }
int h_red(warp *w, const insn_t *in, uint32_t m) { return h_atomic(w, in, m); }

/* ---------------------------------------------------------------------------------------- the tables */

#define BIN(name, keys, T, expr) h_##name,
#define SHIFT(name, keys, T, expr) h_##name,
#define UN(name, keys, T, expr) h_##name,
#define TERN(name, keys, T, expr) h_##name,
#define WIDE(name, keys, TS, TD, expr) h_##name,
#define WIDE3(name, keys, TS, TD, expr) h_##name,
#define CMP(name, keys, T) h_##name,
#define SPEC(name, keys, cls) h_##name,
const handler_fn ptx_handlers[] = {
#include "ptx_ops.def"
};
#undef BIN
#undef SHIFT
#undef UN
#undef TERN
#undef WIDE
#undef WIDE3
#undef CMP
#undef SPEC

#define BIN(name, keys, T, expr) {keys, C_BIN},
#define SHIFT(name, keys, T, expr) {keys, C_SHIFT},
#define UN(name, keys, T, expr) {keys, C_UN},
#define TERN(name, keys, T, expr) {keys, C_TERN},
#define WIDE(name, keys, TS, TD, expr) {keys, C_WIDE},
#define WIDE3(name, keys, TS, TD, expr) {keys, C_WIDE3},
#define CMP(name, keys, T) {keys, C_CMP},
#define SPEC(name, keys, cls) {keys, cls},
const opvar ptx_opvars[] = {
#include "ptx_ops.def"
};
const int ptx_nops = (int)(sizeof ptx_opvars / sizeof *ptx_opvars);
