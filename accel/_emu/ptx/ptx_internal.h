/* The PTX engine's internal types, shared by its parser (ptx_parse.c), its interpreter (ptx_exec.c) and its
 * instruction handlers (ptx_ops.c, generated from the variant table ptx_ops.def).
 *
 * Decoded form: a program is one array of insn_t for all its functions; a function's code starts at its
 * `pc0`.  Every source operand is a register row: immediates and symbol addresses become read-only
 * "constant rows" (the program's constant pool, copied once into each worker's register files), so a
 * handler reads every operand the same way.  A register row is 32 lanes of 64 bits: a value narrower than
 * 64 bits sits in the low bits, zero-extended (predicates are 0 / 1).  Each function's registers have
 * their own rows (function base + index), so a call needs no renaming; a recursive call saves the callee's
 * rows of the calling lanes. */
#ifndef ACCEL_EMU_PTX_INTERNAL_H
#define ACCEL_EMU_PTX_INTERNAL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ptx.h"

#pragma GCC visibility push(hidden)

/* Types (the instruction's .type suffixes). */
enum {
    T_NONE, T_B8, T_B16, T_B32, T_B64, T_B128, T_U8, T_U16, T_U32, T_U64, T_S8, T_S16, T_S32, T_S64,
    T_F16, T_F16X2, T_BF16, T_BF16X2, T_F32, T_F64, T_PRED, T_TF32, T_E4M3, T_E5M2, T_NTYPES
};
int ptx_type_size(int t);          /* bytes */

/* Rounding modes (.rn default). RNI.. are cvt's round-to-integer forms. */
enum { RND_NONE, RND_RN, RND_RZ, RND_RM, RND_RP, RND_RNI, RND_RZI, RND_RMI, RND_RPI, RND_RNA };

/* Comparisons of setp / set. */
enum { CMP_NONE, CMP_EQ, CMP_NE, CMP_LT, CMP_LE, CMP_GT, CMP_GE, CMP_LO, CMP_LS, CMP_HI, CMP_HS,
       CMP_EQU, CMP_NEU, CMP_LTU, CMP_LEU, CMP_GTU, CMP_GEU, CMP_NUM, CMP_NAN };

/* State spaces of an access. */
enum { SP_GENERIC, SP_GLOBAL, SP_SHARED, SP_LOCAL, SP_PARAM, SP_CONST, SP_KPARAM };

/* Address modes: how a memory operand's per-lane address is formed. */
enum { AM_REG, AM_FRAME };   /* row + off;  lane's frame base + off (function .local / .param) */

/* Flags of an instruction. */
enum { F_FTZ = 1, F_SAT = 2, F_NEGPRED = 4, F_CC = 8, F_RELU = 16, F_HASCOUNT = 32, F_NEGSRC = 64, F_CIN = 128 };

/* Generic-address windows for shared and local memory (never user-space host addresses). */
#define PTX_SHWIN  0xfffe000000000000ull
#define PTX_LOCWIN 0xfffd000000000000ull
#define PTX_PARWIN 0xfffc000000000000ull  /* a kernel's parameter buffer (cvta.param) */
#define PTX_WINMASK 0xffff000000000000ull

typedef struct insn {
    uint16_t h;          /* handler index (ptx_ops.def order) */
    uint8_t t, t2;       /* type, second type (cvt source, setp.. operand type) */
    uint8_t rnd, cmp, space, am;
    uint8_t flags, nd, ns, vec;
    uint8_t aop;         /* atomic / reduction / vote / shfl mode, class-specific */
    uint8_t bop;         /* boolean op of setp's combining form */
    int16_t line_hi;
    uint32_t guard;      /* predicate row + 1, 0 = always */
    uint32_t d[4];       /* destination rows */
    uint32_t s[5];       /* source rows */
    int64_t off;         /* address offset */
    uint32_t target;     /* branch target pc, callee index, barrier id ... */
    uint32_t line;       /* source line */
} insn_t;

struct warp;
typedef int (*handler_fn)(struct warp *w, const insn_t *in, uint32_t m);

/* Handler return codes: what the scheduler does next. */
enum { R_NEXT = 0, R_JUMPED, R_RESCHED, R_YIELD, R_FAULT };

typedef struct psym {
    char *name;
    int kind;            /* SK_* */
    int space;           /* SP_* for variables */
    int linkage;         /* LK_* */
    int defined;
    uint64_t addr;       /* global/const: device address; shared: offset; local/param: frame offset */
    size_t size, align;
    int elem;            /* element size (bytes) */
    unsigned char *init; /* initialiser bytes (size), or NULL */
    struct psym *resolved;   /* an .extern's definition after linking */
    struct pfunc *func;  /* SK_FUNC */
    int text;            /* index of the text it came from */
    int dyn_shared;      /* .extern .shared x[] (1); a kernel parameter (2) */
    struct pfunc *owner; /* a kernel's own .shared variable: laid out with that kernel's */
    struct psym *next;   /* hash chain */
} psym;

enum { SK_VAR, SK_FUNC };
enum { LK_NONE, LK_VISIBLE, LK_EXTERN, LK_WEAK, LK_COMMON };

typedef struct pparam { char *name; int t; size_t size, align; uint32_t off; } pparam;

typedef struct pfunc {
    char *name;
    int is_entry, defined, linkage, text, recursive;
    pparam *params; int nparams;       /* entry: kernel params (offsets in the param buffer); func: frame */
    pparam *rets; int nrets;           /* func only: return params (frame offsets) */
    uint32_t pc0, pc1;                 /* code range */
    uint32_t nregs, reg_base;
    size_t frame;                      /* bytes of its frame: params, returns, .local, call-site params */
    size_t maxchain;                   /* frame + the deepest callee chain (non-recursive) */
    unsigned maxntid[3], reqntid[3], minnctapersm;
    unsigned maxnreg;                  /* .maxnreg, or 0 */
    uint32_t est_regs;                 /* registers a register allocator might give it (ptx_parse.c) */
    size_t smem;                       /* an entry's static shared memory (common + its own) */
    int line;
    struct pfunc *resolved;            /* an .extern .func's definition */
    psym *sym;
    int visiting;
    uint32_t *callees; int ncallees, capcallees;
} pfunc;

/* A call site: the caller's frame offsets of its argument and return .params, and the callee; builtin: a call of
 * a device-runtime function the emulator answers itself (PTX_BUILTIN_*; fn is then its declaration).
 * An indirect call (`call (r), %rd, (a), proto;`) has no fn: the callee is the pfunc whose address is in the
 * insn's s[0] row, checked per lane against the module's functions. */
enum { PTX_BUILTIN_NONE, PTX_BUILTIN_SET_CONDITIONAL };
typedef struct callsite {
    uint32_t func_sym; int nargs, nrets; uint32_t args[32], rets[8]; psym *callee; pfunc *fn; int builtin, indirect;
} callsite;

struct ptx_kernel {
    pfunc *f;
    struct ptx_module *m;
    uint32_t *param_off, *param_size;
    uint32_t param_bytes;
    ptx_kernel_info info;
};

struct ptx_module {
    insn_t *code; uint32_t ncode;
    pfunc **funcs; int nfuncs;
    struct ptx_kernel *kernels; int nkernels;
    psym **globals; int nglobals;      /* .global / .const variables (allocated) */
    uint64_t *consts; uint32_t nconst; /* constant values (one per constant row) */
    uint32_t nrows;                    /* registers of all functions (constant rows follow) */
    uint64_t *constrows;               /* nconst rows x 32 lanes */
    size_t smem_static;                /* all .shared variables (laid out once for the program) */
    size_t smem_dyn_align;
    size_t local_per_lane;             /* frames of the deepest call chain (+ recursion allowance) */
    int has_recursion;
    int ptx_version, target_sm;
    const ptx_env *env;
    void **allocs; int nallocs;
    char **strs; int nstrs;            /* names for messages */
    callsite *calls; int ncalls;
    psym **syms; int nsyms;
};

/* One lane's call frame record. */
typedef struct cframe { uint32_t retpc, callpc; uint64_t fp; uint32_t savepos; const pfunc *fn; } cframe;

typedef struct worker worker;

typedef struct warp {
    uint64_t *regs;      /* rows x 32 */
    uint32_t pc, active; /* the running group: its pc and lanes */
    uint32_t alive;      /* lanes that have not exited */
    uint32_t bar;        /* lanes waiting at a block barrier */
    uint32_t wsync;      /* lanes waiting at a warp-synchronous instruction for the others */
    uint32_t minother;   /* lowest pc of the runnable lanes outside the group, ~0u when none */
    uint32_t lpc[32];    /* pc of each lane outside the group */
    uint32_t rot;        /* independent-scheduling rotation budget (branches), 0 when off */
    uint32_t divsteps;   /* branches executed while diverged (livelock detection) */
    int force;           /* a warp-sync op may run with missing lanes (they can never arrive) */
    int id, bar_id, bar_count, state;
    uint32_t bar_red_dst; int bar_red_op; uint32_t bar_red_lanes;
    uint64_t fp[32];     /* frame base (local-space offset) per lane */
    int depth[32];
    uint8_t carry[32];   /* the carry flag of add.cc / addc chains */
    cframe *cs;          /* per lane: depth-indexed call frames, lane * PTX_MAXDEPTH */
    uint64_t *save; uint32_t savecap, *savetop;   /* register saves of recursive calls, per lane */
    unsigned char *local;/* lane l's local memory at local + l * local_per_lane */
    worker *wk;
    uint64_t icount;
} warp;

#define PTX_MAXDEPTH 128

enum { WS_RUN, WS_BAR, WS_DONE };

typedef struct barrier { uint32_t waiting, arrived_n; int expected; uint32_t red; int red_init; } barrier_t;

struct worker {
    const struct ptx_kernel *k;
    const struct ptx_module *m;
    const ptx_launch_cfg *cfg;
    const ptx_env *env;
    warp *warps; int nwarps, maxwarps;
    unsigned char *smem; size_t smem_size;
    unsigned char *local;
    uint64_t *regs;
    barrier_t bars[16];
    unsigned ctaid[3];
    uint64_t lo, hi;     /* the last global range the env confirmed */
    uint32_t nthreads;
    uint64_t deadline_ns;
    int ndone;           /* warps of the block that have exited */
    uint64_t checks;     /* watchdog pacing */
    uint64_t count;      /* thread-instructions (when the launch counts them) */
    /* fault */
    int err; char msg[512];
    struct launch *L;
};

/* ptx_launch that also returns the thread-instructions executed (for benches and tests). */
int ptx_launch_counted(const ptx_kernel *k, const ptx_launch_cfg *cfg, const ptx_env *env, char *err, size_t errlen,
                       uint64_t *thread_insns);

/* A fault inside a handler: records it in the worker (first one wins) and returns R_FAULT. */
int ptx_fault(warp *w, const insn_t *in, int lane, int code, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* Memory access helpers (ptx_exec.c): the host pointer for lane l's access of n bytes at `addr` in space
 * `sp`, or NULL after recording a fault. */
void *ptx_mem(warp *w, const insn_t *in, int lane, int sp, uint64_t addr, size_t n);

/* Operand classes of the variant table (how the decoder reads an instruction's operands). */
enum { C_NONE, C_BIN, C_UN, C_TERN, C_QUAD, C_SHIFT, C_WIDE, C_WIDE3, C_CMP, C_SETP, C_SELP, C_MOV, C_CVT,
       C_LD, C_ST, C_BRA, C_CALL, C_BAR, C_SHFL, C_VOTE, C_MATCH, C_ATOM,
       C_MMA, C_LDSM, C_STSM, C_MOVM, C_CPASYNC, C_MBAR, C_WMMA };

/* Tensor-core and asynchronous-copy instructions (ptx_mma.c).  An mma takes more operand rows than one
 * insn_t holds: the decoder emits it as three consecutive insn_t, the first dispatched (D rows in d[], A
 * rows in s[0..3]), the next two payloads the handler reads and skips (B rows, C rows in their s[]);
 * cp.async is two (the source address in the payload's s[4] / off).  A payload's handler is h_nop.
 * Fields of mma's first insn: aop = shape (MMA_*), t = D type, t2 = A type, cmp = B type, bop = C type,
 * F_SAT = .satfinite. */
enum { MMA_M16N8K16 = 1, MMA_M16N8K8, MMA_M16N8K4, MMA_M8N8K4, MMA_M16N8K32 };
/* A warp-synchronous instruction's wait for the lanes of `mask` (ptx_exec.c): R_NEXT when the group may
 * proceed, else the group is parked (R_RESCHED). */
int ptx_warp_sync(struct warp *w, const struct insn *in, uint32_t m, uint32_t mask);

int h_h_arith(struct warp *w, const struct insn *in, uint32_t m);
int h_h_un(struct warp *w, const struct insn *in, uint32_t m);
int ptx_half_op(const char *mnemonic);
long double ptx_round_fmt(long double x, int p, int emin, int emax, int rnd);
uint16_t ptx_f2h(long double x, int rnd);
float ptx_h2f(uint16_t h);
uint16_t ptx_f2bf(long double x, int rnd);
float ptx_bf2f(uint16_t h);

/* Handler table, the variant keys and classes (ptx_ops.c, from ptx_ops.def). */
typedef struct opvar { const char *keys; int cls; } opvar;
extern const handler_fn ptx_handlers[];
extern const opvar ptx_opvars[];
extern const int ptx_nops;

uint32_t ptx_sreg_value(warp *w, int id, int lane);
int ptx_warp_special(warp *w, const insn_t *in, uint32_t m, int what);

static inline float ptx_f32(uint64_t x) { float f; uint32_t u = (uint32_t)x; memcpy(&f, &u, 4); return f; }
static inline uint64_t ptx_bf32(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline double ptx_f64(uint64_t x) { double d; memcpy(&d, &x, 8); return d; }
static inline uint64_t ptx_bf64(double d) { uint64_t u; memcpy(&u, &d, 8); return u; }

#pragma GCC visibility pop

#endif
