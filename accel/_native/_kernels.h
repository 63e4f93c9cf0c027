/* accel.lazy's compiled kernels (accel._native._kernels): row-wise softmax / log_softmax, the scaled, masked
 * softmax of attention (masked_softmax), layer_norm and a broadcast masked_fill over C-contiguous float32 /
 * float64 rows, and add / sub / mul / div over strided, broadcast float32 / float64 arrays.
 *
 * Everything but the exponential is computed as the python twin's numpy code computes it, operation for
 * operation: sums are numpy's pairwise sum (8 accumulators, blocks of 128, halved above that), a mean is that
 * sum divided in double by the count (numpy's mean divides by an intp), and every product, difference and
 * quotient is rounded on its own (this file is compiled with -ffp-contract=off: no fused multiply-add), so
 * layer_norm, masked_fill and the arithmetic are bit-equal to the python twin (softmax and masked_softmax
 * up to the exponential).  float32's exp is a vectorised polynomial of
 * about 1 ulp (numpy's own SIMD exp is too, and differs from it in the last bit for some inputs); float64
 * uses the C library's exp.
 *
 * The loops are compiled for AVX-512, AVX2 and the baseline (target_clones: the CPU picks at load time);
 * without fp-contract the clones give the same bits. */
#ifndef ACCEL_KERNELS_H
#define ACCEL_KERNELS_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__) && !defined(__clang__) && (defined(__x86_64__) || defined(__i386__))
#define AK_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define AK_CLONES
#endif

typedef ptrdiff_t ak_int;

/* numpy's pairwise sum of n contiguous values (loops_utils.h's algorithm, written from its description). */
#define AK_PAIRWISE(NAME, T)                                                                                \
    static T NAME(const T *a, ak_int n)                                                                     \
    {                                                                                                       \
        if (n < 8) {                                                                                        \
            T res = 0;                                                                                      \
            for (ak_int i = 0; i < n; i++)                                                                  \
                res += a[i];                                                                                \
            return res;                                                                                     \
        }                                                                                                   \
        if (n <= 128) {                                                                                     \
            T r[8];                                                                                         \
            ak_int i;                                                                                       \
            for (int j = 0; j < 8; j++)                                                                     \
                r[j] = a[j];                                                                                \
            for (i = 8; i < n - (n % 8); i += 8)                                                            \
                for (int j = 0; j < 8; j++)                                                                 \
                    r[j] += a[i + j];                                                                       \
            T res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));                      \
            for (; i < n; i++)                                                                              \
                res += a[i];                                                                                \
            return res;                                                                                     \
        }                                                                                                   \
        ak_int n2 = n / 2;                                                                                  \
        n2 -= n2 % 8;                                                                                       \
        return NAME(a, n2) + NAME(a + n2, n - n2);                                                          \
    }

AK_PAIRWISE(ak_sum_f32, float)
AK_PAIRWISE(ak_sum_f64, double)

static inline float ak_f32_from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* exp(x) in float: Cody-Waite reduction by ln 2 and a degree-6 minimax polynomial on [-ln2/2, ln2/2]; the
 * power of two applied in two halves so that subnormal results are rounded once; -inf -> 0, +inf -> inf,
 * NaN -> NaN. */
#define AK_EXP_HI 88.72283935546875f      /* above: inf */
#define AK_EXP_LO (-103.97208404541015625f) /* below: 0 (less than half the smallest subnormal) */

static inline float ak_expf(float x)
{
    float xc = x < AK_EXP_LO ? AK_EXP_LO : x;
    xc = xc > AK_EXP_HI ? AK_EXP_HI : xc;
    float n = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f;      /* rint: 1.5 * 2**23 */
    float r = xc - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    float y = p * (r * r) + r + 1.0f;
    int32_t k = (int32_t)n;
    int32_t k1 = k >> 1;
    int32_t k2 = k - k1;
    y = y * ak_f32_from_bits((uint32_t)(k1 + 127) << 23);
    y = y * ak_f32_from_bits((uint32_t)(k2 + 127) << 23);
    y = x < AK_EXP_LO ? 0.0f : y;
    y = x > AK_EXP_HI ? INFINITY : y;
    return x != x ? x : y;
}

AK_CLONES static void ak_exp_sub_f32(const float *x, float m, float *out, ak_int n)
{
    for (ak_int i = 0; i < n; i++)
        out[i] = ak_expf(x[i] - m);
}

/* the largest of n >= 1 values, NaN if one is NaN (as numpy's max): 16 lanes in GCC vector types, as the
 * compiler does not vectorise a select that keeps NaN */
typedef float ak_f8 __attribute__((vector_size(32)));
typedef int32_t ak_i8 __attribute__((vector_size(32)));

/* m = lanewise max(m, v), NaN kept (a macro: a function taking vectors would change the ABI per clone) */
#define AK_MAX8(m, v)                                                                                       \
    do {                                                                                                    \
        ak_i8 take_ = ((v) > (m)) | ((v) != (v));                                                           \
        (m) = (ak_f8)(((ak_i8)(v) & take_) | ((ak_i8)(m) & ~take_));                                        \
    } while (0)

static inline float ak_max1(float m, float v)
{
    return (v > m || v != v) ? v : m;
}

AK_CLONES static float ak_max_f32(const float *x, ak_int n)
{
    float r = x[0];
    ak_int i = 0;
    if (n >= 16) {
        ak_f8 m0, m1, v0, v1;
        memcpy(&m0, x, sizeof m0);
        memcpy(&m1, x + 8, sizeof m1);
        for (i = 16; i + 16 <= n; i += 16) {
            memcpy(&v0, x + i, sizeof v0);
            memcpy(&v1, x + i + 8, sizeof v1);
            AK_MAX8(m0, v0);
            AK_MAX8(m1, v1);
        }
        AK_MAX8(m0, m1);
        for (int j = 0; j < 8; j++)
            r = ak_max1(r, m0[j]);
    }
    for (; i < n; i++)
        r = ak_max1(r, x[i]);
    return r;
}

AK_CLONES static void ak_div_f32(float *out, float s, ak_int n)
{
    for (ak_int i = 0; i < n; i++)
        out[i] = out[i] / s;
}

AK_CLONES static void ak_sub2_f32(const float *x, float m, float l, float *out, ak_int n)
{
    for (ak_int i = 0; i < n; i++)
        out[i] = (x[i] - m) - l;
}

/* softmax (log == 0) or log_softmax over each of ``rows`` rows of n values (n >= 1): as numpy's
 * exp(x - max) / sum and (x - max) - log(sum(exp(x - max))). */
static void ak_softmax_f32(const float *x, float *out, ak_int rows, ak_int n, int log_)
{
    for (ak_int r = 0; r < rows; r++, x += n, out += n) {
        float m = ak_max_f32(x, n);
        ak_exp_sub_f32(x, m, out, n);
        float s = ak_sum_f32(out, n);
        if (log_)
            ak_sub2_f32(x, m, logf(s), out, n);
        else
            ak_div_f32(out, s, n);
    }
}

static void ak_softmax_f64(const double *x, double *out, ak_int rows, ak_int n, int log_)
{
    for (ak_int r = 0; r < rows; r++, x += n, out += n) {
        double m = x[0];
        int nan = 0;
        for (ak_int i = 0; i < n; i++) {
            nan |= x[i] != x[i];
            m = x[i] > m ? x[i] : m;
        }
        if (nan)
            m = NAN;
        for (ak_int i = 0; i < n; i++)
            out[i] = exp(x[i] - m);
        double s = ak_sum_f64(out, n);
        if (log_) {
            double l = log(s);
            for (ak_int i = 0; i < n; i++)
                out[i] = (x[i] - m) - l;
        } else {
            for (ak_int i = 0; i < n; i++)
                out[i] = out[i] / s;
        }
    }
}

/* softmax over each row of masked_fill(x * s, mask, v) (scale when has_s; mask, of mask_rows rows that repeat
 * over x's rows, when not NULL), each step rounded as the three kernels round it one after another */
#define AK_MASKED_SOFTMAX(NAME, T, MAX, EXPSUB, SUM)                                                        \
    AK_CLONES static void NAME##_fill(const T *x, T *out, ak_int n, int has_s, T s, const uint8_t *mask, T v) \
    {                                                                                                       \
        if (has_s && mask)                                                                                  \
            for (ak_int i = 0; i < n; i++)                                                                  \
                out[i] = mask[i] ? v : x[i] * s;                                                            \
        else if (has_s)                                                                                     \
            for (ak_int i = 0; i < n; i++)                                                                  \
                out[i] = x[i] * s;                                                                          \
        else if (mask)                                                                                      \
            for (ak_int i = 0; i < n; i++)                                                                  \
                out[i] = mask[i] ? v : x[i];                                                                \
        else                                                                                                \
            for (ak_int i = 0; i < n; i++)                                                                  \
                out[i] = x[i];                                                                              \
    }                                                                                                       \
    static void NAME(const T *x, T *out, ak_int rows, ak_int n, int has_s, T s, const uint8_t *mask,        \
                     ak_int mask_rows, T v)                                                                 \
    {                                                                                                       \
        for (ak_int r = 0; r < rows; r++, x += n, out += n) {                                               \
            NAME##_fill(x, out, n, has_s, s, mask ? mask + (r % mask_rows) * n : NULL, v);                  \
            T m = MAX(out, n);                                                                              \
            EXPSUB(out, m, out, n);                                                                         \
            T sum = SUM(out, n);                                                                            \
            for (ak_int i = 0; i < n; i++)                                                                  \
                out[i] = out[i] / sum;                                                                      \
        }                                                                                                   \
    }

static double ak_max_f64(const double *x, ak_int n)
{
    double m = x[0];
    for (ak_int i = 0; i < n; i++)
        m = (x[i] > m || x[i] != x[i]) ? x[i] : m;
    return m;
}

static void ak_exp_sub_f64(const double *x, double m, double *out, ak_int n)
{
    for (ak_int i = 0; i < n; i++)
        out[i] = exp(x[i] - m);
}

AK_MASKED_SOFTMAX(ak_masked_softmax_f32, float, ak_max_f32, ak_exp_sub_f32, ak_sum_f32)
AK_MASKED_SOFTMAX(ak_masked_softmax_f64, double, ak_max_f64, ak_exp_sub_f64, ak_sum_f64)

/* layer_norm over rows of n values: mean = sum / n, d = x - mean, var = sum(d * d) / n, rstd = 1 / sqrt(var +
 * eps), out = d * rstd (* w) (+ b); ``sq`` is scratch of n values.  mean / rstd: one value per row. */
#define AK_LAYER_NORM(NAME, T, SUM, SQRT, ATTR)                                                             \
    ATTR static void NAME##_row(const T *x, const T *w, const T *b, T eps, T *out, T *sq, ak_int n,          \
                                T *mean_out, T *rstd_out)                                                   \
    {                                                                                                       \
        T mean = (T)((double)SUM(x, n) / (double)n);                                                        \
        for (ak_int i = 0; i < n; i++) {                                                                    \
            T d = x[i] - mean;                                                                              \
            out[i] = d;                                                                                     \
            sq[i] = d * d;                                                                                  \
        }                                                                                                   \
        T var = (T)((double)SUM(sq, n) / (double)n);                                                        \
        T rstd = (T)1 / SQRT(var + eps);                                                                    \
        /* one pass, each step rounded as numpy's d *= rstd; d *= w; d += b */                               \
        if (w && b)                                                                                         \
            for (ak_int i = 0; i < n; i++)                                                                  \
                out[i] = (out[i] * rstd) * w[i] + b[i];                                                     \
        else if (w)                                                                                         \
            for (ak_int i = 0; i < n; i++)                                                                  \
                out[i] = (out[i] * rstd) * w[i];                                                            \
        else if (b)                                                                                         \
            for (ak_int i = 0; i < n; i++)                                                                  \
                out[i] = out[i] * rstd + b[i];                                                              \
        else                                                                                                \
            for (ak_int i = 0; i < n; i++)                                                                  \
                out[i] = out[i] * rstd;                                                                     \
        *mean_out = mean;                                                                                   \
        *rstd_out = rstd;                                                                                   \
    }                                                                                                       \
    static int NAME(const T *x, const T *w, const T *b, T eps, T *out, ak_int rows, ak_int n, T *mean,     \
                    T *rstd)                                                                                \
    {                                                                                                       \
        T *sq = (T *)malloc(sizeof(T) * (size_t)n);                                                         \
        if (!sq)                                                                                            \
            return -1;                                                                                      \
        for (ak_int r = 0; r < rows; r++)                                                                   \
            NAME##_row(x + r * n, w, b, eps, out + r * n, sq, n, mean + r, rstd + r);                       \
        free(sq);                                                                                           \
        return 0;                                                                                           \
    }

AK_LAYER_NORM(ak_layer_norm_f32, float, ak_sum_f32, sqrtf, AK_CLONES)
AK_LAYER_NORM(ak_layer_norm_f64, double, ak_sum_f64, sqrt, AK_CLONES)

/* out = x where the mask is 0, else v; the mask (of ``inner`` values) repeats over the ``outer`` blocks. */
#define AK_MASKED_FILL(NAME, T)                                                                             \
    AK_CLONES static void NAME(const T *x, const uint8_t *mask, T v, T *out, ak_int outer, ak_int inner)    \
    {                                                                                                       \
        for (ak_int o = 0; o < outer; o++, x += inner, out += inner)                                        \
            for (ak_int i = 0; i < inner; i++)                                                              \
                out[i] = mask[i] ? v : x[i];                                                                \
    }

AK_MASKED_FILL(ak_masked_fill_f32, float)
AK_MASKED_FILL(ak_masked_fill_f64, double)

/* Elementwise out = a OP b over nd >= 1 dims of sizes n[] with byte strides sa[], sb[], so[] (0: broadcast),
 * innermost last; the caller has merged what it could, so the inner loop is long where it can be. */
#define AK_BINARY(NAME, T, OP)                                                                              \
    static inline void NAME##_inner(const char *a, const char *b, char *o, ak_int n, ak_int sa, ak_int sb,   \
                                    ak_int so)                                                           \
    {                                                                                                       \
        const ak_int z = (ak_int)sizeof(T);                                                                 \
        if (so == z && sa == z && sb == z) {                                                                \
            const T *x = (const T *)a, *y = (const T *)b;                                                   \
            T *r = (T *)o;                                                                                  \
            if (r == x || r == y) {                                                                         \
                for (ak_int i = 0; i < n; i++)                                                              \
                    r[i] = x[i] OP y[i];                                                                    \
            } else {                                                                                        \
                const T *restrict xr = x, *restrict yr = y;                                                 \
                T *restrict rr = r;                                                                         \
                for (ak_int i = 0; i < n; i++)                                                              \
                    rr[i] = xr[i] OP yr[i];                                                                 \
            }                                                                                               \
        } else if (so == z && sa == z && sb == 0) {                                                         \
            const T *x = (const T *)a;                                                                      \
            const T y = *(const T *)b;                                                                      \
            T *r = (T *)o;                                                                                  \
            for (ak_int i = 0; i < n; i++)                                                                  \
                r[i] = x[i] OP y;                                                                           \
        } else if (so == z && sa == 0 && sb == z) {                                                         \
            const T x = *(const T *)a;                                                                      \
            const T *y = (const T *)b;                                                                      \
            T *r = (T *)o;                                                                                  \
            for (ak_int i = 0; i < n; i++)                                                                  \
                r[i] = x OP y[i];                                                                           \
        } else {                                                                                            \
            for (ak_int i = 0; i < n; i++)                                                                  \
                *(T *)(o + i * so) = *(const T *)(a + i * sa) OP *(const T *)(b + i * sb);                  \
        }                                                                                                   \
    }                                                                                                       \
    AK_CLONES static void NAME(int nd, const ak_int *n, const ak_int *sa, const ak_int *sb, const ak_int *so,\
                     const char *a, const char *b, char *o)                                                 \
    {                                                                                                       \
        ak_int idx[AK_MAXDIMS] = {0};                                                                       \
        int last = nd - 1;                                                                                  \
        for (;;) {                                                                                          \
            NAME##_inner(a, b, o, n[last], sa[last], sb[last], so[last]);                                   \
            int d = last - 1;                                                                               \
            for (; d >= 0; d--) {                                                                           \
                a += sa[d];                                                                                 \
                b += sb[d];                                                                                 \
                o += so[d];                                                                                 \
                if (++idx[d] < n[d])                                                                        \
                    break;                                                                                  \
                a -= sa[d] * n[d];                                                                          \
                b -= sb[d] * n[d];                                                                          \
                o -= so[d] * n[d];                                                                          \
                idx[d] = 0;                                                                                 \
            }                                                                                               \
            if (d < 0)                                                                                      \
                return;                                                                                     \
        }                                                                                                   \
    }

#define AK_MAXDIMS 64
AK_BINARY(ak_badd_f32, float, +)
AK_BINARY(ak_bsub_f32, float, -)
AK_BINARY(ak_bmul_f32, float, *)
AK_BINARY(ak_bdiv_f32, float, /)
AK_BINARY(ak_badd_f64, double, +)
AK_BINARY(ak_bsub_f64, double, -)
AK_BINARY(ak_bmul_f64, double, *)
AK_BINARY(ak_bdiv_f64, double, /)

typedef void (*ak_binary_fn)(int, const ak_int *, const ak_int *, const ak_int *, const ak_int *, const char *,
                             const char *, char *);
/* [op][dtype]: op 0 add, 1 sub, 2 mul, 3 div; dtype 0 float32, 1 float64 */
static const ak_binary_fn ak_binary[4][2] = {{ak_badd_f32, ak_badd_f64}, {ak_bsub_f32, ak_bsub_f64},
                                             {ak_bmul_f32, ak_bmul_f64}, {ak_bdiv_f32, ak_bdiv_f64}};

#endif
