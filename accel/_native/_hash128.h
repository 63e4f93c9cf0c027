/* 128-bit LTC hash arithmetic for accel._native._ir (shared/reference/ltc_ir.md section 1).
 * Values are {lo, hi} 64-bit halves; every operation is mod 2^128.  Uses unsigned __int128 where the
 * compiler has it and a 32-bit-limb fallback elsewhere (both give the same bits). */
#ifndef ACCEL_HASH128_H
#define ACCEL_HASH128_H
#include <stdint.h>
#include <stddef.h>
#include <string.h>

typedef struct { uint64_t lo, hi; } acc_h128;

#define ACC_MUR 0xc6a4a7935bd1e995ULL
#define ACC_DATA_SEED 0xc2b2ae3d27d4eb4fULL
#define ACC_KB_LO 0x27d4eb2f165667c5ULL
#define ACC_KB_HI 101ULL
#define ACC_GOLD 0x9e3779b97f4a7c15ULL

static inline acc_h128 acc_mk(uint64_t hi, uint64_t lo) { acc_h128 r; r.lo = lo; r.hi = hi; return r; }

#if defined(__SIZEOF_INT128__) && !defined(ACCEL_NO_INT128)
typedef unsigned __int128 acc_u128;
static inline acc_u128 acc_to(acc_h128 a) { return ((acc_u128)a.hi << 64) | a.lo; }
static inline acc_h128 acc_from(acc_u128 v) { return acc_mk((uint64_t)(v >> 64), (uint64_t)v); }
static inline acc_h128 acc_mul(acc_h128 a, acc_h128 b) { return acc_from(acc_to(a) * acc_to(b)); }
static inline acc_h128 acc_add(acc_h128 a, acc_h128 b) { return acc_from(acc_to(a) + acc_to(b)); }
static inline acc_h128 acc_shl(acc_h128 a, unsigned n) { return acc_from(acc_to(a) << n); }
static inline acc_h128 acc_shr(acc_h128 a, unsigned n) { return acc_from(acc_to(a) >> n); }
#else
static inline void acc_mul64(uint64_t a, uint64_t b, uint64_t *hi, uint64_t *lo) {
    uint64_t a0 = (uint32_t)a, a1 = a >> 32, b0 = (uint32_t)b, b1 = b >> 32;
    uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
    uint64_t mid = (p00 >> 32) + (uint32_t)p01 + (uint32_t)p10;
    *lo = (mid << 32) | (uint32_t)p00;
    *hi = p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
}
static inline acc_h128 acc_mul(acc_h128 a, acc_h128 b) {
    uint64_t hi, lo;
    acc_mul64(a.lo, b.lo, &hi, &lo);
    hi += a.lo * b.hi + a.hi * b.lo;
    return acc_mk(hi, lo);
}
static inline acc_h128 acc_add(acc_h128 a, acc_h128 b) {
    uint64_t lo = a.lo + b.lo;
    return acc_mk(a.hi + b.hi + (lo < a.lo), lo);
}
static inline acc_h128 acc_shl(acc_h128 a, unsigned n) {   /* 0 < n < 64 */
    return acc_mk((a.hi << n) | (a.lo >> (64 - n)), a.lo << n);
}
static inline acc_h128 acc_shr(acc_h128 a, unsigned n) {   /* 0 < n < 64 */
    return acc_mk(a.hi >> n, (a.lo >> n) | (a.hi << (64 - n)));
}
#endif

static inline acc_h128 acc_xor(acc_h128 a, acc_h128 b) { return acc_mk(a.hi ^ b.hi, a.lo ^ b.lo); }
static inline int acc_eq(acc_h128 a, acc_h128 b) { return a.lo == b.lo && a.hi == b.hi; }

/* HashCombine(a, b) = a ^ (b*kb + golden + (a << 6) + (a >> 2)) */
static inline acc_h128 acc_combine(acc_h128 a, acc_h128 b) {
    acc_h128 t = acc_mul(b, acc_mk(ACC_KB_HI, ACC_KB_LO));
    t = acc_add(t, acc_mk(0, ACC_GOLD));
    t = acc_add(t, acc_shl(a, 6));
    t = acc_add(t, acc_shr(a, 2));
    return acc_xor(a, t);
}

static inline uint64_t acc_std_combine(uint64_t a, uint64_t b) {
    return a ^ (b * ACC_KB_LO + ACC_GOLD + (a << 6) + (a >> 2));
}

static inline uint64_t acc_reduce(acc_h128 h) { return acc_std_combine(h.lo, h.hi); }

static inline uint64_t acc_load64(const unsigned char *p) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint64_t v; memcpy(&v, p, 8); return v;
#else
    uint64_t v = 0; int j;
    for (j = 7; j >= 0; j--) v = (v << 8) | p[j];
    return v;
#endif
}

static inline acc_h128 acc_mix_block(acc_h128 h, acc_h128 k) {
    const acc_h128 m = acc_mk(0, ACC_MUR);
    k = acc_mul(k, m);
    k = acc_xor(k, acc_shr(k, 47));
    k = acc_mul(k, m);
    return acc_mul(acc_xor(h, k), m);
}

/* MurmurHash64A widened to 128 bits (HashBlock); the last chunk is zero-padded at the high end. */
static inline acc_h128 acc_hash_block(const void *data, size_t n, acc_h128 seed) {
    const unsigned char *p = (const unsigned char *)data;
    const acc_h128 m = acc_mk(0, ACC_MUR);
    acc_h128 h = acc_xor(seed, acc_mul(acc_mk(0, (uint64_t)n), m));
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        h = acc_mix_block(h, acc_mk(acc_load64(p + i + 8), acc_load64(p + i)));
    if (i < n) {
        unsigned char buf[16];
        memset(buf, 0, sizeof buf);
        memcpy(buf, p + i, n - i);
        h = acc_mix_block(h, acc_mk(acc_load64(buf + 8), acc_load64(buf)));
    }
    h = acc_xor(h, acc_shr(h, 47));
    h = acc_mul(h, m);
    return acc_xor(h, acc_shr(h, 47));
}

static inline acc_h128 acc_data_hash(const void *data, size_t n) {
    return acc_hash_block(data, n, acc_mk(0, ACC_DATA_SEED));
}

static inline acc_h128 acc_u64_hash(uint64_t v) {   /* Hash((size_t)v) / Hash((int64_t)v) */
    unsigned char b[8]; int j;
    for (j = 0; j < 8; j++) { b[j] = (unsigned char)(v >> (8 * j)); }
    return acc_data_hash(b, 8);
}
#endif
