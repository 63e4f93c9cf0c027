/* The PTX engine's front end: tokenizer, parser, decoder and linker (ptx_program_build and the module
 * queries of ptx.h).
 *
 * One pass per text: directives and declarations are read as they come; each instruction is decoded at once
 * into an insn_t (its handler looked up by opcode key in the table generated from ptx_ops.def).  Forward
 * references (labels, functions, symbols' addresses) are recorded as fixups and resolved when every text
 * has been read: then `.extern` functions and variables are linked by name to a `.visible` / `.weak` /
 * `.common` definition of another text, register rows are laid out (each function its own block),
 * frames are sized along the call graph, and constants that hold addresses are patched.
 *
 * What is skipped on purpose: `.loc`, `.file`, `.section` (DWARF), `.pragma`, `.alias` declarations,
 * debug-only directives.  What is refused: an unknown opcode (PTX_E_NOT_SUPPORTED naming opcode and line),
 * a syntax error or undefined name (PTX_E_INVALID_PTX), a `.version` above 9.9 (PTX_E_UNSUPPORTED_PTX_VERSION). */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>

#include "ptx_internal.h"

#define MAX_VERSION 99   /* 9.9 */
#define NAME_MAX_ 4096  /* longest identifier (numba's mangled names run to hundreds of characters) */

/* ------------------------------------------------------------------ small growable arrays and strings */

#define GROW(arr, n, cap) do { if ((n) >= (cap)) { size_t nc_ = (cap) ? (size_t)(cap) * 2 : 16; \
    void *p_ = realloc((arr), nc_ * sizeof *(arr)); if (!p_) return perr(P, PTX_E_OUT_OF_MEMORY, "out of memory"); \
    (arr) = p_; (cap) = nc_; } } while (0)

/* ---------------------------------------------------------------------------------------- opcode table */


typedef struct keyent { const char *key; int op; struct keyent *next; } keyent;
#define KEYBUCKETS 1024
static keyent *g_keys[KEYBUCKETS];
static keyent *g_keypool;
static pthread_once_t g_keys_once = PTHREAD_ONCE_INIT;

static unsigned hash_str(const char *s, size_t n)
{
    unsigned h = 2166136261u;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h;
}

static char *g_keytext;
static void keys_init(void)
{
    size_t total = 0, nk = 0;
    for (int i = 0; i < ptx_nops; i++) {
        total += strlen(ptx_opvars[i].keys) + 1;
        for (const char *p = ptx_opvars[i].keys; *p; p++) nk += *p == ' ';
        nk++;
    }
    g_keytext = malloc(total);
    g_keypool = calloc(nk, sizeof *g_keypool);
    if (!g_keytext || !g_keypool) return;
    char *t = g_keytext;
    size_t k = 0;
    for (int i = 0; i < ptx_nops; i++) {
        strcpy(t, ptx_opvars[i].keys);
        char *save = NULL;
        for (char *tok = strtok_r(t, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
            unsigned b = hash_str(tok, strlen(tok)) % KEYBUCKETS;
            keyent *e = &g_keypool[k++];
            e->key = tok; e->op = i; e->next = g_keys[b]; g_keys[b] = e;
        }
        t += strlen(ptx_opvars[i].keys) + 1;
    }
}

static int key_lookup(const char *key)
{
    unsigned b = hash_str(key, strlen(key)) % KEYBUCKETS;
    for (keyent *e = g_keys[b]; e; e = e->next)
        if (!strcmp(e->key, key)) return e->op;
    return -1;
}

/* --------------------------------------------------------------------------------------------- types */

static const struct { const char *name; int t; } TYPES[] = {
    {"b8", T_B8}, {"b16", T_B16}, {"b32", T_B32}, {"b64", T_B64}, {"b128", T_B128},
    {"u8", T_U8}, {"u16", T_U16}, {"u32", T_U32}, {"u64", T_U64},
    {"s8", T_S8}, {"s16", T_S16}, {"s32", T_S32}, {"s64", T_S64},
    {"f16", T_F16}, {"f16x2", T_F16X2}, {"bf16", T_BF16}, {"bf16x2", T_BF16X2}, {"f32", T_F32}, {"f64", T_F64},
    {"pred", T_PRED}, {"tf32", T_TF32}, {"e4m3", T_E4M3}, {"e5m2", T_E5M2},
};

static int type_of(const char *s)
{
    for (size_t i = 0; i < sizeof TYPES / sizeof *TYPES; i++)
        if (!strcmp(s, TYPES[i].name)) return TYPES[i].t;
    return T_NONE;
}

int ptx_type_size(int t)
{
    switch (t) {
    case T_B8: case T_U8: case T_S8: case T_E4M3: case T_E5M2: return 1;
    case T_B16: case T_U16: case T_S16: case T_F16: case T_BF16: return 2;
    case T_B32: case T_U32: case T_S32: case T_F32: case T_F16X2: case T_BF16X2: case T_TF32: return 4;
    case T_B64: case T_U64: case T_S64: case T_F64: return 8;
    case T_B128: return 16;
    case T_PRED: return 1;
    default: return 0;
    }
}

static int type_is_float(int t) { return t == T_F32 || t == T_F64 || t == T_F16 || t == T_BF16; }

/* ------------------------------------------------------------------------------------------ the parser */

enum { TK_EOF, TK_ID, TK_NUM, TK_STR, TK_PUNCT };

typedef struct regent { const char *name; size_t len; uint32_t idx, count; int ranged; struct regent *next; } regent;
#define REGBUCKETS 256

typedef struct fixup { int kind; uint32_t at; psym *sym; char *name; int64_t add; int line; pfunc *fn; } fixup;
enum { FX_CONST_SYM, FX_LABEL, FX_CALL };


typedef struct parser {
    const char *src, *p, *end;
    int line, text;
    int tk; const char *ts; size_t tl;   /* current token */
    int tline;
    char tbuf[NAME_MAX_ + 1];
    int err; char *msg; size_t msglen;
    struct ptx_module *M;
    const ptx_env *env;
    /* symbols: per text (index text) and program-wide for linkage */
    psym **tsyms; int ntsyms, captsyms;        /* every symbol of every text */
    psym *fsyms;                               /* function-scope symbols (chain), innermost first */
    /* the function being parsed */
    pfunc *fn;
    regent *regs[REGBUCKETS];
    regent **rstack; int nrstack, caprstack;   /* scope undo */
    int *scopemarks; int nscopes, capscopes;
    psym **fscope; int nfscope, capfscope; int *fscopemarks;
    uint32_t nregs;
    uint8_t *regpred; uint32_t capregpred;     /* 1 for the function's rows declared .pred */
    uint8_t *regw; uint32_t capregw;           /* each register's 32-bit words (predicates 0) */
    size_t frame;
    /* labels of the function */
    struct { char *name; uint32_t pc; } *labels; int nlabels, caplabels;
    /* program-wide */
    pfunc **funcs; int nfuncs, capfuncs;
    insn_t *code; uint32_t ncode, capcode;
    uint64_t *consts; uint32_t nconst, capconst;
    uint8_t *constsym;                         /* 1: patched with an address at link time (never shared) */
    fixup *fx; int nfx, capfx;
    callsite *calls; int ncalls, capcalls;
    size_t smem;
    int version, target;
    char **strs; int nstrs, capstrs;
} parser;

static int perr(parser *P, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int perr(parser *P, int code, const char *fmt, ...)
{
    if (P->err) return P->err;
    P->err = code;
    if (P->msg && P->msglen) {
        int n = snprintf(P->msg, P->msglen, "PTX text %d, line %d: ", P->text + 1, P->tline ? P->tline : P->line);
        if (n < 0) n = 0;
        if ((size_t)n < P->msglen) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(P->msg + n, P->msglen - (size_t)n, fmt, ap);
            va_end(ap);
        }
    }
    return code;
}

static char *sdup(parser *P, const char *s, size_t n)
{
    char *r = malloc(n + 1);
    if (!r) { perr(P, PTX_E_OUT_OF_MEMORY, "out of memory"); return NULL; }
    memcpy(r, s, n);
    r[n] = 0;
    if (P->nstrs >= P->capstrs) {
        int nc = P->capstrs ? P->capstrs * 2 : 64;
        char **q = realloc(P->strs, (size_t)nc * sizeof *q);
        if (!q) { free(r); perr(P, PTX_E_OUT_OF_MEMORY, "out of memory"); return NULL; }
        P->strs = q; P->capstrs = nc;
    }
    P->strs[P->nstrs++] = r;
    return r;
}

static int is_idch(int c) { return isalnum(c) || c == '_' || c == '$' || c == '%' || c == '.'; }

static void skip_ws(parser *P)
{
    for (;;) {
        while (P->p < P->end && isspace((unsigned char)*P->p)) { if (*P->p == '\n') P->line++; P->p++; }
        if (P->p + 1 < P->end && P->p[0] == '/' && P->p[1] == '/') {
            while (P->p < P->end && *P->p != '\n') P->p++;
            continue;
        }
        if (P->p + 1 < P->end && P->p[0] == '/' && P->p[1] == '*') {
            P->p += 2;
            while (P->p + 1 < P->end && !(P->p[0] == '*' && P->p[1] == '/')) { if (*P->p == '\n') P->line++; P->p++; }
            P->p = P->p + 2 <= P->end ? P->p + 2 : P->end;
            continue;
        }
        break;
    }
}

static void next(parser *P)
{
    skip_ws(P);
    P->tline = P->line;
    P->ts = P->p;
    if (P->p >= P->end || !*P->p) { P->tk = TK_EOF; P->tl = 0; return; }
    int c = (unsigned char)*P->p;
    if (c == '"') {
        P->p++;
        while (P->p < P->end && *P->p != '"') { if (*P->p == '\n') P->line++; P->p++; }
        if (P->p < P->end) P->p++;
        P->tk = TK_STR;
    } else if (isdigit(c)) {
        P->p++;
        while (P->p < P->end && (isalnum((unsigned char)*P->p) || *P->p == '.' ||
               ((*P->p == '+' || *P->p == '-') && (P->p[-1] == 'e' || P->p[-1] == 'E') &&
                !(P->ts[0] == '0' && (P->ts[1] == 'x' || P->ts[1] == 'X' || P->ts[1] == 'f' || P->ts[1] == 'F' ||
                                      P->ts[1] == 'd' || P->ts[1] == 'D')))))
            P->p++;
        P->tk = TK_NUM;
    } else if (is_idch(c)) {
        while (P->p < P->end && (is_idch((unsigned char)*P->p) || (P->p[0] == ':' && P->p + 1 < P->end && P->p[1] == ':')))
            P->p += P->p[0] == ':' ? 2 : 1;
        P->tk = TK_ID;
    } else {
        P->p++;
        P->tk = TK_PUNCT;
    }
    P->tl = (size_t)(P->p - P->ts);
    size_t n = P->tl < sizeof P->tbuf - 1 ? P->tl : sizeof P->tbuf - 1;
    memcpy(P->tbuf, P->ts, n);
    P->tbuf[n] = 0;
}

static int is(parser *P, const char *s) { return P->tk != TK_EOF && P->tl == strlen(s) && !memcmp(P->ts, s, P->tl); }
static int ispunct_(parser *P, char c) { return P->tk == TK_PUNCT && P->ts[0] == c; }

static int expect(parser *P, char c)
{
    if (!ispunct_(P, c)) return perr(P, PTX_E_INVALID_PTX, "expected '%c' but found '%s'", c, P->tbuf);
    next(P);
    return 0;
}

static void skip_line(parser *P)
{
    while (P->p < P->end && *P->p != '\n') P->p++;
    next(P);
}

/* A number token: integer (decimal, hex, octal, binary, U suffix) or float (0f / 0d hex bits, decimal).
 * Returns 1 for an integer in *iv, 2 for a float in *fv (and its bit form: 'f' / 'd' / 0 in *fk). */
static int parse_number(parser *P, const char *s, int64_t *iv, double *fv, int *fk)
{
    *fk = 0;
    if (s[0] == '0' && (s[1] == 'f' || s[1] == 'F') && strlen(s) == 10) {
        uint32_t u = (uint32_t)strtoul(s + 2, NULL, 16);
        *fv = ptx_f32(u); *iv = u; *fk = 'f'; return 2;
    }
    if (s[0] == '0' && (s[1] == 'd' || s[1] == 'D') && strlen(s) == 18) {
        uint64_t u = strtoull(s + 2, NULL, 16);
        *fv = ptx_f64(u); *iv = (int64_t)u; *fk = 'd'; return 2;
    }
    if (strchr(s, '.') || ((strchr(s, 'e') || strchr(s, 'E')) && !(s[0] == '0' && (s[1] == 'x' || s[1] == 'X')))) {
        char *e;
        *fv = strtod(s, &e);
        if (*e) return perr(P, PTX_E_INVALID_PTX, "bad number '%s'", s), 0;
        return 2;
    }
    char *e;
    errno = 0;
    uint64_t u;
    if (s[0] == '0' && (s[1] == 'b' || s[1] == 'B')) u = strtoull(s + 2, &e, 2);
    else if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) u = strtoull(s + 2, &e, 16);
    else if (s[0] == '0' && s[1]) u = strtoull(s + 1, &e, 8);
    else u = strtoull(s, &e, 10);
    if (*e == 'U' || *e == 'u') e++;
    if (*e || errno) return perr(P, PTX_E_INVALID_PTX, "bad number '%s'", s), 0;
    *iv = (int64_t)u;
    return 1;
}

/* ------------------------------------------------------------------------------------ symbol tables */

static psym *find_text_sym(parser *P, const char *name)
{
    psym *found = NULL;
    for (int i = P->ntsyms - 1; i >= 0; i--) {
        psym *s = P->tsyms[i];
        if (s->text == P->text && !strcmp(s->name, name)) { found = s; break; }
    }
    return found;
}

static psym *find_sym(parser *P, const char *name)
{
    for (int i = P->nfscope - 1; i >= 0; i--)
        if (!strcmp(P->fscope[i]->name, name)) return P->fscope[i];
    return find_text_sym(P, name);
}

static psym *new_sym(parser *P, const char *name, size_t n)
{
    psym *s = calloc(1, sizeof *s);
    if (!s) { perr(P, PTX_E_OUT_OF_MEMORY, "out of memory"); return NULL; }
    s->name = sdup(P, name, n);
    s->text = P->text;
    if (!s->name) { free(s); return NULL; }
    if (P->ntsyms >= P->captsyms) {
        int nc = P->captsyms ? P->captsyms * 2 : 64;
        psym **q = realloc(P->tsyms, (size_t)nc * sizeof *q);
        if (!q) { free(s); perr(P, PTX_E_OUT_OF_MEMORY, "out of memory"); return NULL; }
        P->tsyms = q; P->captsyms = nc;
    }
    P->tsyms[P->ntsyms++] = s;
    return s;
}

/* ---------------------------------------------------------------------------------------- registers */

static int reg_add(parser *P, const char *name, size_t len, uint32_t count, int ranged, int words)
{
    if (P->nregs + count > P->capregw) {
        uint32_t nc = P->capregw ? P->capregw : 64;
        while (nc < P->nregs + count) nc *= 2;
        uint8_t *nw = realloc(P->regw, nc);
        if (!nw) return perr(P, PTX_E_OUT_OF_MEMORY, "out of memory");
        P->regw = nw; P->capregw = nc;
    }
    memset(P->regw + P->nregs, words, count);
    regent *r = calloc(1, sizeof *r);
    if (!r) return perr(P, PTX_E_OUT_OF_MEMORY, "out of memory");
    r->name = sdup(P, name, len);
    if (!r->name) { free(r); return P->err; }
    r->len = len; r->idx = P->nregs; r->count = count; r->ranged = ranged;
    P->nregs += count;
    unsigned b = hash_str(name, len) % REGBUCKETS;
    r->next = P->regs[b]; P->regs[b] = r;
    GROW(P->rstack, P->nrstack, P->caprstack);
    P->rstack[P->nrstack++] = r;
    return 0;
}

/* Records whether the function's rows [idx, idx + n) are predicates (cp.async's ignore-src operand). */
static int reg_mark(parser *P, uint32_t idx, uint32_t n, int pred)
{
    if (idx + n > P->capregpred) {
        uint32_t nc = P->capregpred ? P->capregpred : 256;
        while (nc < idx + n) nc *= 2;
        uint8_t *q = realloc(P->regpred, nc);
        if (!q) return perr(P, PTX_E_OUT_OF_MEMORY, "out of memory");
        memset(q + P->capregpred, 0, nc - P->capregpred);
        P->regpred = q; P->capregpred = nc;
    }
    memset(P->regpred + idx, pred ? 1 : 0, n);
    return 0;
}

static int reg_find(parser *P, const char *name, uint32_t *idx)
{
    size_t len = strlen(name);
    unsigned b = hash_str(name, len) % REGBUCKETS;
    for (regent *r = P->regs[b]; r; r = r->next)
        if (!r->ranged && r->len == len && !memcmp(r->name, name, len)) { *idx = r->idx; return 1; }
    size_t k = len;
    while (k > 0 && isdigit((unsigned char)name[k - 1])) k--;
    if (k == len || k == 0) return 0;
    if (len - k > 1 && name[k] == '0') return 0;
    unsigned long n = strtoul(name + k, NULL, 10);
    b = hash_str(name, k) % REGBUCKETS;
    for (regent *r = P->regs[b]; r; r = r->next)
        if (r->ranged && r->len == k && !memcmp(r->name, name, k) && n < r->count) { *idx = r->idx + (uint32_t)n; return 1; }
    return 0;
}

static void scope_push(parser *P)
{
    if (P->nscopes >= P->capscopes) {
        int nc = P->capscopes ? P->capscopes * 2 : 16;
        int *q = realloc(P->scopemarks, (size_t)nc * 2 * sizeof *q);
        if (!q) { perr(P, PTX_E_OUT_OF_MEMORY, "out of memory"); return; }
        P->scopemarks = q; P->capscopes = nc;
    }
    P->scopemarks[2 * P->nscopes] = P->nrstack;
    P->scopemarks[2 * P->nscopes + 1] = P->nfscope;
    P->nscopes++;
}

static void scope_pop(parser *P)
{
    if (!P->nscopes) return;
    P->nscopes--;
    int mark = P->scopemarks[2 * P->nscopes];
    while (P->nrstack > mark) {
        regent *r = P->rstack[--P->nrstack];
        unsigned b = hash_str(r->name, r->len) % REGBUCKETS;
        regent **pp = &P->regs[b];
        while (*pp && *pp != r) pp = &(*pp)->next;
        if (*pp) *pp = r->next;
        free(r);
    }
    P->nfscope = P->scopemarks[2 * P->nscopes + 1];
}

/* ---------------------------------------------------------------------------------------- constants */

static int const_grow(parser *P)
{
    if (P->nconst < P->capconst) return 0;
    uint32_t nc = P->capconst ? P->capconst * 2 : 256;
    uint64_t *q = realloc(P->consts, nc * sizeof *q);
    if (!q) return perr(P, PTX_E_OUT_OF_MEMORY, "out of memory");
    P->consts = q;
    uint8_t *f = realloc(P->constsym, nc);
    if (!f) return perr(P, PTX_E_OUT_OF_MEMORY, "out of memory");
    P->constsym = f;
    P->capconst = nc;
    return 0;
}

/* A constant row holding v: its row id (constant rows are numbered from CONSTBIT until the layout). */
#define CONSTBIT 0x80000000u

static uint32_t const_row(parser *P, uint64_t v)
{
    /* small linear dedupe over the last few */
    uint32_t lo = P->nconst > 64 ? P->nconst - 64 : 0;
    for (uint32_t i = lo; i < P->nconst; i++)
        if (P->consts[i] == v && !P->constsym[i]) return CONSTBIT | i;
    if (const_grow(P)) return CONSTBIT;
    P->consts[P->nconst] = v;
    P->constsym[P->nconst] = 0;
    return CONSTBIT | P->nconst++;
}

/* A constant row that will hold sym's address + add (patched after linking): never shared. */
static uint32_t const_sym(parser *P, psym *s, int64_t add)
{
    if (const_grow(P)) return CONSTBIT;
    uint32_t i = P->nconst++;
    P->consts[i] = 0;
    P->constsym[i] = 1;
    if (P->nfx >= P->capfx) {
        int nc = P->capfx ? P->capfx * 2 : 64;
        fixup *q = realloc(P->fx, (size_t)nc * sizeof *q);
        if (!q) { perr(P, PTX_E_OUT_OF_MEMORY, "out of memory"); return CONSTBIT; }
        P->fx = q; P->capfx = nc;
    }
    P->fx[P->nfx++] = (fixup){FX_CONST_SYM, i, s, NULL, add, P->tline, P->fn};
    return CONSTBIT | i;
}

static int add_fixup(parser *P, int kind, uint32_t at, const char *name)
{
    GROW(P->fx, P->nfx, P->capfx);
    char *n = sdup(P, name, strlen(name));
    if (!n) return P->err;
    P->fx[P->nfx++] = (fixup){kind, at, NULL, n, 0, P->tline, P->fn};
    return 0;
}

/* ------------------------------------------------------------------------------------------ operands */

enum { OK_NONE, OK_REG, OK_IMM, OK_FIMM, OK_SYM, OK_ADDR, OK_VEC, OK_SREG, OK_SINK, OK_LIST };

typedef struct opnd {
    int kind;
    uint32_t reg, reg2;      /* reg2: dual destination (a|p) */
    int neg;                 /* !%p */
    int64_t iv; double fv; int fk;
    char name[NAME_MAX_];    /* symbol / label / function */
    /* address: base register or symbol, offset */
    int abase;               /* OK_REG / OK_SYM / OK_IMM */
    int64_t aoff;
    int sreg;
    int vn; struct { int kind; uint32_t reg; int64_t iv; double fv; int fk; } v[8];
    int ln; char list[32][512];
} opnd;

/* Special registers. */
static const char *const SREGS[] = {
    "%tid.x", "%tid.y", "%tid.z", "%ntid.x", "%ntid.y", "%ntid.z", "%ctaid.x", "%ctaid.y", "%ctaid.z",
    "%nctaid.x", "%nctaid.y", "%nctaid.z", "%laneid", "%warpid", "%nwarpid", "%smid", "%nsmid", "%gridid",
    "%lanemask_eq", "%lanemask_le", "%lanemask_lt", "%lanemask_ge", "%lanemask_gt", "%clock", "%clock_hi",
    "%clock64", "%globaltimer", "%globaltimer_lo", "%globaltimer_hi", "%dynamic_smem_size", "%total_smem_size",
    "%aggr_smem_size", "%tid", "%ntid", "%ctaid", "%nctaid", "%is_explicit_cluster", "%clusterid.x",
    "%clusterid.y", "%clusterid.z", "%nclusterid.x", "%nclusterid.y", "%nclusterid.z", "%cluster_ctaid.x",
    "%cluster_ctaid.y", "%cluster_ctaid.z", "%cluster_nctaid.x", "%cluster_nctaid.y", "%cluster_nctaid.z",
    "%cluster_ctarank", "%cluster_nctarank", "%reserved_smem_offset_begin", "%current_graph_exec", NULL,
};

static int sreg_id(const char *s)
{
    for (int i = 0; SREGS[i]; i++)
        if (!strcmp(SREGS[i], s)) return i;
    if (!strncmp(s, "%envreg", 7)) return 100 + atoi(s + 7);
    if (!strncmp(s, "%pm", 3)) return 200;
    return -1;
}

static int parse_simple(parser *P, opnd *o)
{
    if (ispunct_(P, '!')) { o->neg = 1; next(P); }
    if (ispunct_(P, '-') || ispunct_(P, '+')) {
        int neg = P->ts[0] == '-';
        next(P);
        if (P->tk != TK_NUM) return perr(P, PTX_E_INVALID_PTX, "expected a number after '-', found '%s'", P->tbuf);
        int r = parse_number(P, P->tbuf, &o->iv, &o->fv, &o->fk);
        if (!r) return P->err;
        if (r == 1) { o->kind = OK_IMM; if (neg) o->iv = (int64_t)(0ull - (uint64_t)o->iv); }
        else { o->kind = OK_FIMM; if (neg) { o->fv = -o->fv; if (o->fk == 'f') o->iv ^= 0x80000000ll; if (o->fk == 'd') o->iv ^= (int64_t)0x8000000000000000ull; } }
        next(P);
        return 0;
    }
    if (P->tk == TK_NUM) {
        int r = parse_number(P, P->tbuf, &o->iv, &o->fv, &o->fk);
        if (!r) return P->err;
        o->kind = r == 1 ? OK_IMM : OK_FIMM;
        next(P);
        return 0;
    }
    if (P->tk != TK_ID) return perr(P, PTX_E_INVALID_PTX, "unexpected '%s' in an operand", P->tbuf);
    if (is(P, "_")) { o->kind = OK_SINK; next(P); return 0; }
    uint32_t idx;
    if (reg_find(P, P->tbuf, &idx)) { o->kind = OK_REG; o->reg = idx; next(P); return 0; }
    if (P->tbuf[0] == '%') {
        int id = sreg_id(P->tbuf);
        if (id < 0) return perr(P, PTX_E_INVALID_PTX, "undeclared register '%s'", P->tbuf);
        o->kind = OK_SREG; o->sreg = id; next(P); return 0;
    }
    if (is(P, "WARP_SZ")) { o->kind = OK_IMM; o->iv = 32; next(P); return 0; }   /* PTX's predefined constant */
    if (P->tl >= sizeof o->name) return perr(P, PTX_E_INVALID_PTX, "name too long");
    o->kind = OK_SYM;
    strcpy(o->name, P->tbuf);
    next(P);
    if (ispunct_(P, '+') && o->kind == OK_SYM) {   /* sym+off as a value */
        next(P);
        opnd t = {0};
        if (parse_simple(P, &t)) return P->err;
        o->aoff = t.iv;
    }
    return 0;
}

static int parse_operand(parser *P, opnd *o)
{
    memset(o, 0, sizeof *o);
    if (ispunct_(P, '[')) {
        next(P);
        o->kind = OK_ADDR;
        opnd b = {0};
        if (P->tk == TK_NUM) { if (parse_simple(P, &b)) return P->err; o->abase = OK_IMM; o->aoff = b.iv; }
        else {
            if (parse_simple(P, &b)) return P->err;
            if (b.kind == OK_REG) { o->abase = OK_REG; o->reg = b.reg; }
            else if (b.kind == OK_SYM) { o->abase = OK_SYM; strcpy(o->name, b.name); o->aoff = b.aoff; }
            else return perr(P, PTX_E_INVALID_PTX, "bad address operand");
            while (ispunct_(P, '+') || ispunct_(P, '-')) {
                int neg = P->ts[0] == '-';
                next(P);
                opnd t = {0};
                if (ispunct_(P, '-')) { next(P); neg = !neg; }
                if (parse_simple(P, &t)) return P->err;
                if (t.kind != OK_IMM) return perr(P, PTX_E_INVALID_PTX, "bad address offset");
                o->aoff += neg ? -t.iv : t.iv;
            }
        }
        return expect(P, ']');
    }
    if (ispunct_(P, '{')) {
        next(P);
        o->kind = OK_VEC;
        while (!ispunct_(P, '}')) {
            if (o->vn >= 8) return perr(P, PTX_E_INVALID_PTX, "vector operand too long");
            opnd e = {0};
            if (parse_simple(P, &e)) return P->err;
            o->v[o->vn].kind = e.kind; o->v[o->vn].reg = e.reg; o->v[o->vn].iv = e.iv;
            o->v[o->vn].fv = e.fv; o->v[o->vn].fk = e.fk;
            o->vn++;
            if (ispunct_(P, ',')) next(P);
            else if (!ispunct_(P, '}')) return perr(P, PTX_E_INVALID_PTX, "expected ',' or '}' in a vector");
        }
        next(P);
        return 0;
    }
    if (ispunct_(P, '(')) {
        next(P);
        o->kind = OK_LIST;
        while (!ispunct_(P, ')')) {
            if (o->ln >= 32 || P->tl >= 512) return perr(P, PTX_E_INVALID_PTX, "call list too long");
            if (P->tk != TK_ID) return perr(P, PTX_E_INVALID_PTX, "expected a name in a call list, found '%s'", P->tbuf);
            strcpy(o->list[o->ln++], P->tbuf);
            next(P);
            if (ispunct_(P, ',')) next(P);
            else if (!ispunct_(P, ')')) return perr(P, PTX_E_INVALID_PTX, "expected ',' or ')' in a call list");
        }
        next(P);
        return 0;
    }
    if (parse_simple(P, o)) return P->err;
    if (o->kind == OK_REG && ispunct_(P, '|')) {
        next(P);
        opnd t = {0};
        if (parse_simple(P, &t)) return P->err;
        if (t.kind != OK_REG) return perr(P, PTX_E_INVALID_PTX, "bad second destination");
        o->reg2 = t.reg + 1;
    }
    return 0;
}

/* ------------------------------------------------------------------------------------- the decoder */

/* A value operand's row: register, or a constant row for an immediate converted to type t. */
static int val_row(parser *P, const opnd *o, int t, uint32_t *row)
{
    switch (o->kind) {
    case OK_REG: *row = o->reg; return 0;
    case OK_IMM: case OK_FIMM: {
        uint64_t v;
        if (t == T_F32) v = o->kind == OK_FIMM ? (o->fk == 'f' ? (uint64_t)(uint32_t)o->iv : ptx_bf32((float)o->fv)) : ptx_bf32((float)o->iv);
        else if (t == T_F64) v = o->kind == OK_FIMM ? (o->fk == 'd' ? (uint64_t)o->iv : ptx_bf64(o->fv)) : ptx_bf64((double)o->iv);
        else if (o->kind == OK_FIMM) v = (uint64_t)o->iv;   /* bits of a float literal for a .b / .f16 operand */
        else v = (uint64_t)o->iv;
        int sz = ptx_type_size(t);
        if (sz && sz < 8 && t != T_PRED) v &= (1ull << (8 * sz)) - 1;
        if (t == T_PRED) v = v != 0;
        *row = const_row(P, v);
        return P->err;
    }
    case OK_SYM: {
        psym *s = find_sym(P, o->name);
        if (!s) { /* a function or label name: resolved later */
            uint32_t r = const_sym(P, NULL, o->aoff);
            if (add_fixup(P, FX_CONST_SYM, r & ~CONSTBIT, o->name)) return P->err;
            P->nfx--;   /* replace the fixup const_sym made */
            P->fx[P->nfx - 1].name = P->fx[P->nfx].name;
            *row = r;
            return 0;
        }
        if (s->kind == SK_VAR && (s->space == SP_LOCAL || s->space == SP_PARAM) && P->fn && !P->fn->is_entry) {
            return perr(P, PTX_E_NOT_SUPPORTED, "the address of frame variable '%s' as a value", o->name);
        }
        *row = const_sym(P, s, o->aoff);
        return P->err;
    }
    case OK_SINK: *row = const_row(P, 0); return P->err;
    default: return perr(P, PTX_E_INVALID_PTX, "expected a register or immediate operand");
    }
}

static int dst_row(parser *P, const opnd *o, uint32_t *row)
{
    if (o->kind == OK_REG) { *row = o->reg; return 0; }
    if (o->kind == OK_SINK) { *row = UINT32_MAX; return 0; }
    return perr(P, PTX_E_INVALID_PTX, "expected a destination register");
}

/* Modifiers that select behaviour the handlers read from fields (or none at all). */
static int is_dropped(const char *m)
{
    static const char *const D[] = {"sync", "aligned", "volatile", "relaxed", "acquire", "release", "acq_rel",
        "weak", "mmio", "sc", "cta", "gpu", "sys", "cluster", "ca", "cg", "cs", "lu", "cv", "wb", "wt", "nc",
        "L1::evict_normal", "L1::evict_unchanged", "L1::evict_first", "L1::evict_last", "L1::no_allocate",
        "L2::evict_normal", "L2::evict_first", "L2::evict_last", "L2::cache_hint", "L2::64B", "L2::128B",
        "L2::256B", "noftz", "unified", "gl", "NaN_unused", NULL};
    for (int i = 0; D[i]; i++)
        if (!strcmp(D[i], m)) return 1;
    return 0;
}

static int space_of(const char *m)
{
    if (!strcmp(m, "global")) return SP_GLOBAL;
    if (!strcmp(m, "shared") || !strcmp(m, "shared::cta") || !strcmp(m, "shared::cluster")) return SP_SHARED;
    if (!strcmp(m, "local")) return SP_LOCAL;
    if (!strcmp(m, "param") || !strcmp(m, "param::entry") || !strcmp(m, "param::func")) return SP_PARAM;
    if (!strcmp(m, "const")) return SP_CONST;
    return -1;
}

static int cmp_of(const char *m)
{
    static const char *const C[] = {"", "eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs", "equ", "neu",
                                    "ltu", "leu", "gtu", "geu", "num", "nan", NULL};
    for (int i = 1; C[i]; i++)
        if (!strcmp(C[i], m)) return i;
    return 0;
}

static int rnd_of(const char *m)
{
    static const char *const R[] = {"", "rn", "rz", "rm", "rp", "rni", "rzi", "rmi", "rpi", "rna", NULL};
    for (int i = 1; R[i]; i++)
        if (!strcmp(R[i], m)) return i;
    return 0;
}

/* Atomic / reduction / vote / shfl / bar.red operations: an index stored in insn.aop. */
static const char *const AOPS[] = {"", "add", "min", "max", "and", "or", "xor", "exch", "cas", "inc", "dec",
                                   "up", "down", "bfly", "idx", "all", "any", "uni", "ballot", "popc", NULL};
static int aop_of(const char *m)
{
    for (int i = 1; AOPS[i]; i++)
        if (!strcmp(AOPS[i], m)) return i;
    return 0;
}

typedef struct decoded {
    char key[128];
    int types[4], ntypes;
    int space, rnd, cmp, aop, bop, vec, ftz, sat, cc, wide, hi, lo, relu;
    int mnemonic_only;   /* key = mnemonic, class decodes the rest */
} decoded;

/* Splits an opcode into its key and fields.  Instructions whose variants are decoded by the class handler
 * (ld/st/atom/red/cvt/cvta/mov/bar/shfl/vote/...) keep a key of their mnemonic family only. */
static int split_opcode(parser *P, const char *op, decoded *d)
{
    memset(d, 0, sizeof *d);
    char buf[256];
    if (strlen(op) >= sizeof buf) return perr(P, PTX_E_INVALID_PTX, "opcode too long");
    strcpy(buf, op);
    char *parts[24]; int np = 0;
    char *s = buf;
    /* split on '.' but not inside '::' spellings (they have no dots) */
    for (char *q = s; ; q++) {
        if (*q == '.' || !*q) {
            int endc = !*q;
            *q = 0;
            if (np < 24) parts[np++] = s;
            s = q + 1;
            if (endc) break;
        }
    }
    const char *mn = parts[0];
    static const char *const FAMILY[] = {"ld", "ldu", "st", "atom", "red", "cvt", "cvta", "mov", "bar", "barrier",
                                         "shfl", "vote", "bra", "call", "ret", "exit", "membar", "fence",
                                         "prefetch", "prefetchu", "isspacep", "nanosleep", "brx", "activemask",
                                         "trap", "brkpt", "pmevent", "elect", "griddepcontrol", NULL};
    int family = 0;
    for (int i = 0; FAMILY[i]; i++)
        if (!strcmp(FAMILY[i], mn)) family = 1;
    char key[128] = "";
    strcat(key, mn);
    for (int i = 1; i < np; i++) {
        const char *m = parts[i];
        int t, sp, r, c, a;
        if (is_dropped(m)) continue;
        if ((sp = space_of(m)) >= 0) { d->space = sp; if (!strcmp(mn, "cvta") || !strcmp(mn, "isspacep")) { if (!strcmp(mn, "cvta") && i > 1 && !strcmp(parts[i - 1], "to")) {} } continue; }
        if ((t = type_of(m)) != T_NONE) {
            if (d->ntypes < 4) d->types[d->ntypes++] = t;
            if (!family) { strcat(key, "."); strcat(key, m); }
            continue;
        }
        if (!strcmp(m, "v2") || !strcmp(m, "v4") || !strcmp(m, "v8")) { d->vec = m[1] - '0'; continue; }
        if ((r = rnd_of(m))) { d->rnd = r; continue; }
        if (!strcmp(m, "ftz")) { d->ftz = 1; continue; }
        if (!strcmp(m, "relu") && (!strcmp(mn, "fma") || !strcmp(mn, "min") || !strcmp(mn, "max") || !strcmp(mn, "cvt"))) { d->relu = 1; continue; }
        if (!strcmp(m, "sat") && strcmp(mn, "add") && strcmp(mn, "sub")) { d->sat = 1; continue; }
        if (!strcmp(m, "sat") && i + 1 < np && strcmp(parts[i + 1], "s32")) { d->sat = 1; continue; }
        if ((!strcmp(mn, "setp") || !strcmp(mn, "set")) && !d->cmp && (c = cmp_of(m))) { d->cmp = c; continue; }
        if ((!strcmp(mn, "setp") || !strcmp(mn, "set")) && (!strcmp(m, "and") || !strcmp(m, "or") || !strcmp(m, "xor"))) {
            d->bop = !strcmp(m, "and") ? 1 : !strcmp(m, "or") ? 2 : 3;
            continue;
        }
        if ((!strcmp(mn, "atom") || !strcmp(mn, "red") || !strcmp(mn, "shfl") || !strcmp(mn, "vote") ||
             !strcmp(mn, "bar") || !strcmp(mn, "barrier") || !strcmp(mn, "redux")) && (a = aop_of(m))) {
            d->aop = a;
            if (!strcmp(mn, "redux")) { strcat(key, "."); strcat(key, m); }
            continue;
        }
        if (!strcmp(mn, "bar") || !strcmp(mn, "barrier")) {
            if (!strcmp(m, "sync") || !strcmp(m, "arrive") || !strcmp(m, "red") || !strcmp(m, "warp") || !strcmp(m, "cta")) {
                strcat(key, "."); strcat(key, m);
                continue;
            }
        }
        if (!strcmp(m, "cc")) d->cc = 1;
        if (!strcmp(m, "wide")) d->wide = 1;
        if (!strcmp(m, "hi")) d->hi = 1;
        if (!strcmp(m, "lo")) d->lo = 1;
        if (family) {
            if (!strcmp(mn, "cvta") && !strcmp(m, "to")) { strcat(key, ".to"); continue; }
            if (!strcmp(mn, "bra") && !strcmp(m, "uni")) continue;
            if (!strcmp(mn, "call") && !strcmp(m, "uni")) continue;
            if (!strcmp(mn, "ret") && !strcmp(m, "uni")) continue;
            if (!strcmp(mn, "brx") && (!strcmp(m, "idx") || !strcmp(m, "uni"))) { strcat(key, "."); strcat(key, m); continue; }
            if (!strcmp(mn, "fence") && (!strcmp(m, "proxy") || !strcmp(m, "async") || !strcmp(m, "alias") ||
                                          !strcmp(m, "tensormap") || !strcmp(m, "generic"))) continue;
            if (!strcmp(mn, "griddepcontrol")) { strcat(key, "."); strcat(key, m); continue; }
            if (!strcmp(mn, "atom") || !strcmp(mn, "red")) {
                if (!strcmp(m, "noftz")) continue;
            }
            if (!strcmp(mn, "vote") || !strcmp(mn, "shfl")) continue;
            if (!strcmp(mn, "prefetch") && (!strcmp(m, "L1") || !strcmp(m, "L2"))) continue;
            if (!strcmp(mn, "ld") && !strcmp(m, "nc")) continue;
            return perr(P, PTX_E_NOT_SUPPORTED, "unsupported modifier '.%s' of '%s'", m, op);
        }
        strcat(key, "."); strcat(key, m);
    }
    if (!strcmp(mn, "vote")) { strcpy(key, d->aop == 18 ? "vote.b32" : "vote.pred"); }
    if (!strcmp(mn, "shfl")) strcpy(key, "shfl.b32");
    if (!strcmp(mn, "min") || !strcmp(mn, "max")) {
        /* .NaN / .xorsign.abs stay in the key */
    }
    if (strlen(key) >= sizeof d->key) return perr(P, PTX_E_INVALID_PTX, "opcode too long");
    strcpy(d->key, key);
    return 0;
}

static int emit(parser *P, insn_t *in)
{
    if (P->ncode >= P->capcode) {
        uint32_t nc = P->capcode ? P->capcode * 2 : 1024;
        insn_t *q = realloc(P->code, nc * sizeof *q);
        if (!q) return perr(P, PTX_E_OUT_OF_MEMORY, "out of memory");
        P->code = q; P->capcode = nc;
    }
    P->code[P->ncode++] = *in;
    return 0;
}

/* An address operand into in->s[si] (base row), in->off and in->am; `space` may be refined by the symbol. */
static int addr_operand(parser *P, const opnd *o, insn_t *in, int si)
{
    if (o->kind != OK_ADDR) return perr(P, PTX_E_INVALID_PTX, "expected an address operand [..]");
    in->am = AM_REG;
    if (o->abase == OK_REG) {
        in->s[si] = o->reg; in->off = o->aoff;
        /* a .param address in a register: the kernel's parameter buffer, or a .func's frame */
        if (in->space == SP_PARAM) in->space = P->fn && P->fn->is_entry ? SP_KPARAM : SP_LOCAL;
        return 0;
    }
    if (o->abase == OK_IMM) { in->s[si] = const_row(P, 0); in->off = o->aoff; return P->err; }
    psym *s = find_sym(P, o->name);
    if (!s) return perr(P, PTX_E_INVALID_PTX, "undefined symbol '%s'", o->name);
    if (s->kind == SK_VAR && s->space == SP_PARAM && s->dyn_shared == 2) {   /* kernel parameter */
        in->s[si] = const_row(P, 0);
        in->off = (int64_t)s->addr + o->aoff;
        if (in->space == SP_PARAM || in->space == SP_GENERIC) in->space = SP_KPARAM;
        return P->err;
    }
    if (s->kind == SK_VAR && (s->space == SP_LOCAL || s->space == SP_PARAM)) {   /* frame variable */
        in->am = AM_FRAME;
        in->s[si] = const_row(P, 0);
        in->off = (int64_t)s->addr + o->aoff;
        if (in->space == SP_PARAM || in->space == SP_GENERIC) in->space = SP_LOCAL;
        return P->err;
    }
    in->s[si] = const_sym(P, s, 0);
    in->off = o->aoff;
    return P->err;
}

static int lookup_op(parser *P, const char *key, const char *op)
{
    int h = key_lookup(key);
    if (h < 0) return perr(P, PTX_E_NOT_SUPPORTED, "unsupported instruction '%s'", op), -1;
    return h;
}

/* The rows of a vector operand (or of one register) into rows[]: destinations (dst) or values of type t;
 * exactly `want` of them. */
static int vec_rows(parser *P, const opnd *o, int dst, int t, uint32_t *rows, int want, const char *op, const char *what)
{
    int n = o->kind == OK_VEC ? o->vn : 1;
    if (n != want || (o->kind != OK_VEC && o->kind != OK_REG && (dst || (o->kind != OK_IMM && o->kind != OK_FIMM))))
        return perr(P, PTX_E_INVALID_PTX, "'%s' takes %d register%s as its %s, found %d", op, want, want == 1 ? "" : "s", what, n);
    for (int i = 0; i < n; i++) {
        opnd e = {0};
        if (o->kind == OK_VEC) { e.kind = o->v[i].kind; e.reg = o->v[i].reg; e.iv = o->v[i].iv; e.fv = o->v[i].fv; e.fk = o->v[i].fk; }
        else e = *o;
        if (dst ? dst_row(P, &e, &rows[i]) : val_row(P, &e, t, &rows[i])) return P->err;
    }
    return 0;
}

/* A payload insn_t after an instruction that needs more operand rows than one holds (ptx_internal.h):
 * never dispatched (its handler is a no-op), its rows relocated like any other's. */
static int emit_payload(parser *P, const insn_t *head, const uint32_t *srows, int ns)
{
    insn_t pl;
    memset(&pl, 0, sizeof pl);
    pl.h = (uint16_t)key_lookup("membar");
    pl.line = head->line;
    for (int i = 0; i < 4; i++) pl.d[i] = UINT32_MAX;
    for (int i = 0; i < 5; i++) pl.s[i] = i < ns ? srows[i] : const_row(P, 0);
    return P->err ? P->err : emit(P, &pl);
}

/* mma, ldmatrix, stmatrix, movmatrix, cp.async, mbarrier (handlers in ptx_mma.c). */
static int decode_async(parser *P, insn_t *in, const decoded *d, const char *op, opnd *ops, int nops)
{
    const char *key = d->key;
    int cls = ptx_opvars[in->h].cls;
    if (cls == C_MMA) {
        static const struct { const char *s; int shape, m, n, k; } SH[] = {
            {".m16n8k16.", MMA_M16N8K16, 16, 8, 16}, {".m16n8k8.", MMA_M16N8K8, 16, 8, 8}, {".m16n8k4.", MMA_M16N8K4, 16, 8, 4},
            {".m8n8k4.", MMA_M8N8K4, 8, 8, 4}, {".m16n8k32.", MMA_M16N8K32, 16, 8, 32}};
        int si = 0;
        while (!strstr(key, SH[si].s)) si++;
        if (d->ntypes != 4) return perr(P, PTX_E_INVALID_PTX, "'%s' needs four types", op);
        if (nops != 4) return perr(P, PTX_E_INVALID_PTX, "'%s' takes 4 operands (d, a, b, c), found %d", op, nops);
        in->aop = (uint8_t)SH[si].shape;
        in->t = (uint8_t)d->types[0]; in->t2 = (uint8_t)d->types[1]; in->cmp = (uint8_t)d->types[2]; in->bop = (uint8_t)d->types[3];
        if (strstr(key, ".satfinite")) in->flags |= F_SAT;
        int at = d->types[1], ab = at == T_F16 || at == T_BF16 ? 16 : at == T_S8 || at == T_U8 ? 8 : at == T_F64 ? 64 : 32;
        int per = ab < 32 ? 32 / ab : 1, rt = at == T_F64 ? T_B64 : T_B32;
        int na = SH[si].m * SH[si].k / 32 / per, nb = SH[si].k * SH[si].n / 32 / per;
        int nc = SH[si].m * SH[si].n / 32, nd = nc / (d->types[0] == T_F16 ? 2 : 1);
        nc /= d->types[3] == T_F16 ? 2 : 1;
        uint32_t brows[4], crows[4];
        if (vec_rows(P, &ops[0], 1, rt, in->d, nd, op, "d") || vec_rows(P, &ops[1], 0, rt, in->s, na, op, "a") ||
            vec_rows(P, &ops[2], 0, rt, brows, nb, op, "b") || vec_rows(P, &ops[3], 0, d->types[3] == T_F64 ? T_B64 : T_B32, crows, nc, op, "c"))
            return P->err;
        for (int i = nd; i < 4; i++) in->d[i] = UINT32_MAX;
        for (int i = na; i < 5; i++) in->s[i] = const_row(P, 0);
        if (P->err || emit(P, in)) return P->err;
        return emit_payload(P, in, brows, nb) || emit_payload(P, in, crows, nc) ? P->err : 0;
    }
    if (cls == C_LDSM || cls == C_STSM) {
        int nm = strstr(key, ".x4") ? 4 : strstr(key, ".x2") ? 2 : 1, ld = cls == C_LDSM;
        in->aop = (uint8_t)nm;
        in->bop = strstr(key, ".trans") != NULL;
        if (nops != 2) return perr(P, PTX_E_INVALID_PTX, "'%s' takes 2 operands", op);
        if (in->space != SP_SHARED) in->space = SP_GENERIC;
        for (int i = 0; i < 4; i++) in->d[i] = UINT32_MAX;
        if (ld ? vec_rows(P, &ops[0], 1, T_B32, in->d, nm, op, "destination") : vec_rows(P, &ops[1], 0, T_B32, in->s, nm, op, "source"))
            return P->err;
        if (addr_operand(P, &ops[ld ? 1 : 0], in, 4)) return P->err;
        return emit(P, in);
    }
    if (cls == C_MOVM) {
        if (nops != 2) return perr(P, PTX_E_INVALID_PTX, "'%s' takes 2 operands", op);
        if (dst_row(P, &ops[0], &in->d[0]) || val_row(P, &ops[1], T_B32, &in->s[0])) return P->err;
        return emit(P, in);
    }
    if (cls == C_CPASYNC) {
        /* cp.async.ca/cg.shared{::cta}.global [dst], [src], cp-size{, src-size | ignore-src}{, cache-policy} */
        int hint = strstr(op, "L2::cache_hint") != NULL, extra = nops - 3 - hint;
        if (nops < 3 || extra < 0 || extra > 1) return perr(P, PTX_E_INVALID_PTX, "'%s': bad operand count %d", op, nops);
        in->space = SP_SHARED;
        if (addr_operand(P, &ops[0], in, 4) || val_row(P, &ops[2], T_U32, &in->s[0])) return P->err;
        if (extra) {
            int pred = ops[3].kind == OK_REG && ops[3].reg < P->capregpred && P->regpred[ops[3].reg];
            in->flags |= pred ? F_NEGSRC : F_HASCOUNT;
            if (val_row(P, &ops[3], pred ? T_PRED : T_U32, &in->s[1])) return P->err;
        } else in->s[1] = const_row(P, 0);
        insn_t src;
        memset(&src, 0, sizeof src);
        src.space = SP_GLOBAL;
        if (addr_operand(P, &ops[1], &src, 4)) return P->err;
        if (emit(P, in)) return P->err;
        insn_t *pl;
        if (emit_payload(P, in, NULL, 0)) return P->err;
        pl = &P->code[P->ncode - 1];
        pl->s[4] = src.s[4]; pl->off = src.off; pl->space = src.space; pl->am = src.am;
        return 0;
    }
    if (cls == C_WMMA) {
        /* wmma.load.{a,b,c} r, [p]{, stride};  wmma.store.d [p], r{, stride};  wmma.mma d, a, b, c (ptx_mma.c) */
        int isload = !strncmp(key, "wmma.load", 9), isstore = !strncmp(key, "wmma.store", 10);
        uint32_t rows[3][8];
        if (isload || isstore) {
            int which = isstore ? 3 : key[10] == 'a' ? 1 : key[10] == 'b' ? 2 : 3;
            int f32 = d->types[0] == T_F32, nr = which < 3 ? 8 : f32 ? 8 : 4;
            in->aop = (uint8_t)which;
            in->bop = strstr(key, ".col.") != NULL;
            if (nops != 2 && nops != 3) return perr(P, PTX_E_INVALID_PTX, "'%s' takes 2 or 3 operands", op);
            if (vec_rows(P, &ops[isload ? 0 : 1], isload, T_B32, rows[0], nr, op, isload ? "destination" : "source") ||
                addr_operand(P, &ops[isload ? 1 : 0], in, 4)) return P->err;
            uint32_t stride;
            if (nops == 3) { if (val_row(P, &ops[2], T_U32, &stride)) return P->err; }
            else stride = const_row(P, 16);
            for (int i = 0; i < 4; i++) {
                if (isload) { in->d[i] = i < nr ? rows[0][i] : UINT32_MAX; in->s[i] = const_row(P, 0); }
                else { in->d[i] = UINT32_MAX; in->s[i] = i < nr ? rows[0][i] : const_row(P, 0); }
            }
            if (isload) in->s[0] = stride;
            if (P->err || emit(P, in)) return P->err;
            uint32_t ps[5];
            for (int i = 0; i < 5; i++) ps[i] = !isload && i < 4 && i + 4 < nr ? rows[0][i + 4] : i == 4 && !isload ? stride : const_row(P, 0);
            if (emit_payload(P, in, ps, 5)) return P->err;
            if (isload)
                for (int i = 0; i < 4; i++) P->code[P->ncode - 1].d[i] = i + 4 < nr ? rows[0][i + 4] : UINT32_MAX;
            return 0;
        }
        if (nops != 4 || d->ntypes != 2) return perr(P, PTX_E_INVALID_PTX, "'%s' takes 4 operands (d, a, b, c)", op);
        in->t = (uint8_t)d->types[0]; in->t2 = (uint8_t)d->types[1];
        int nd = d->types[0] == T_F32 ? 8 : 4, nc = d->types[1] == T_F32 ? 8 : 4;
        uint32_t drows[8], crows[8];
        if (vec_rows(P, &ops[0], 1, T_B32, drows, nd, op, "d") || vec_rows(P, &ops[1], 0, T_B32, rows[0], 8, op, "a") ||
            vec_rows(P, &ops[2], 0, T_B32, rows[1], 8, op, "b") || vec_rows(P, &ops[3], 0, T_B32, crows, nc, op, "c"))
            return P->err;
        for (int i = 0; i < 4; i++) { in->d[i] = drows[i]; in->s[i] = rows[0][i]; }
        in->s[4] = const_row(P, 0);
        if (P->err || emit(P, in)) return P->err;
        uint32_t z = const_row(P, 0);
        uint32_t p1[5] = {rows[0][4], rows[0][5], rows[0][6], rows[0][7], z};
        uint32_t p2[5] = {rows[1][0], rows[1][1], rows[1][2], rows[1][3], z}, p3[5] = {rows[1][4], rows[1][5], rows[1][6], rows[1][7], z};
        uint32_t p4[5] = {crows[0], crows[1], crows[2], crows[3], z};
        uint32_t p5[5] = {nc > 4 ? crows[4] : z, nc > 4 ? crows[5] : z, nc > 4 ? crows[6] : z, nc > 4 ? crows[7] : z, z};
        if (emit_payload(P, in, p1, 5)) return P->err;
        for (int i = 0; i < 4; i++) P->code[P->ncode - 1].d[i] = nd > 4 ? drows[4 + i] : UINT32_MAX;
        if (emit_payload(P, in, p2, 5) || emit_payload(P, in, p3, 5) || emit_payload(P, in, p4, 5) || emit_payload(P, in, p5, 5))
            return P->err;
        return 0;
    }
    /* mbarrier */
    static const char *const MB[] = {"", ".init.", ".arrive.", ".arrive_drop.", ".test_wait.", ".test_wait.parity.",
                                     ".try_wait.", ".try_wait.parity.", ".inval.", ".pending_count.", NULL};
    int mop = 0;
    if (!strncmp(key, "cp.async", 8)) mop = strstr(key, ".noinc") ? 11 : 10;
    else for (int i = 1; MB[i]; i++) if (strstr(key, MB[i])) mop = i;
    in->aop = (uint8_t)mop;
    if (in->space != SP_SHARED) in->space = SP_GENERIC;
    in->d[0] = UINT32_MAX;
    in->s[0] = const_row(P, 0);
    switch (mop) {
    case 1:   /* init [a], count */
        if (nops != 2 || addr_operand(P, &ops[0], in, 4) || val_row(P, &ops[1], T_U32, &in->s[0])) return P->err ? P->err : perr(P, PTX_E_INVALID_PTX, "'%s' takes 2 operands", op);
        break;
    case 2: case 3:   /* arrive state, [a]{, count} */
        if ((nops != 2 && nops != 3) || dst_row(P, &ops[0], &in->d[0]) || addr_operand(P, &ops[1], in, 4)) return P->err ? P->err : perr(P, PTX_E_INVALID_PTX, "'%s' takes 2 or 3 operands", op);
        if (nops == 3) { if (val_row(P, &ops[2], T_U32, &in->s[0])) return P->err; in->flags |= F_HASCOUNT; }
        break;
    case 4: case 5: case 6: case 7:   /* waitComplete, [a], state | parity{, suspendTimeHint} */
        if ((nops != 3 && !(nops == 4 && mop >= 6)) || dst_row(P, &ops[0], &in->d[0]) || addr_operand(P, &ops[1], in, 4) ||
            val_row(P, &ops[2], T_U64, &in->s[0])) return P->err ? P->err : perr(P, PTX_E_INVALID_PTX, "'%s' takes 3 operands", op);
        break;
    case 8: case 10: case 11:   /* [a] */
        if (nops != 1 || addr_operand(P, &ops[0], in, 4)) return P->err ? P->err : perr(P, PTX_E_INVALID_PTX, "'%s' takes 1 operand", op);
        break;
    case 9:   /* pending_count count, state */
        if (nops != 2 || dst_row(P, &ops[0], &in->d[0]) || val_row(P, &ops[1], T_U64, &in->s[0])) return P->err ? P->err : perr(P, PTX_E_INVALID_PTX, "'%s' takes 2 operands", op);
        break;
    default: return perr(P, PTX_E_NOT_SUPPORTED, "unsupported instruction '%s'", op);
    }
    return emit(P, in);
}

/* Decodes one instruction (opcode text op, guard) with its operands into the code array. */
static int decode(parser *P, const char *op, uint32_t guard, int gneg, opnd *ops, int nops)
{
    decoded d;
    if (split_opcode(P, op, &d)) return P->err;
    insn_t in;
    memset(&in, 0, sizeof in);
    in.line = (uint32_t)P->tline;
    in.guard = guard;
    if (gneg) in.flags |= F_NEGPRED;
    in.rnd = (uint8_t)d.rnd; in.cmp = (uint8_t)d.cmp; in.space = (uint8_t)d.space; in.aop = (uint8_t)d.aop;
    in.bop = (uint8_t)d.bop; in.vec = (uint8_t)d.vec;
    if (d.ftz) in.flags |= F_FTZ;
    if (d.sat) in.flags |= F_SAT;
    if (d.cc) in.flags |= F_CC;
    if (d.relu) in.flags |= F_RELU;
    in.t = (uint8_t)(d.ntypes ? d.types[0] : T_NONE);
    in.t2 = (uint8_t)(d.ntypes > 1 ? d.types[1] : in.t);
    const char *mn = d.key;
    char mnbuf[32];
    { size_t k = strcspn(mn, "."); if (k >= sizeof mnbuf) k = sizeof mnbuf - 1; memcpy(mnbuf, mn, k); mnbuf[k] = 0; }
    int h;
    /* per-family key refinements */
    if (!strcmp(mnbuf, "mov")) {
        if (nops != 2) return perr(P, PTX_E_INVALID_PTX, "mov takes 2 operands");
        if (ops[1].kind == OK_SREG) strcpy(d.key, "mov.sreg");
        else if (ops[0].kind == OK_VEC) strcpy(d.key, "mov.unpack");
        else if (ops[1].kind == OK_VEC) strcpy(d.key, "mov.pack");
        else { snprintf(d.key, sizeof d.key, "mov.%s", in.t == T_PRED ? "pred" : "b64"); }
    }
    if (!strcmp(mnbuf, "cvt") && d.ntypes != 2) return perr(P, PTX_E_INVALID_PTX, "cvt needs two types: '%s'", op);
    if ((h = lookup_op(P, d.key, op)) < 0) return P->err;
    in.h = (uint16_t)h;
    int cls = ptx_opvars[h].cls;
    int t = in.t;
    /* modes the shared handlers read from aop / flags */
    if (!strcmp(mnbuf, "prmt")) {
        static const char *const PM[] = {".f4e", ".b4e", ".rc8", ".ecl", ".ecr", ".rc16"};
        for (int i = 0; i < 6; i++) { size_t kl = strlen(d.key), ml = strlen(PM[i]); if (kl > ml && !strcmp(d.key + kl - ml, PM[i])) in.aop = (uint8_t)(i + 1); }
    } else if (!strcmp(mnbuf, "shf")) in.aop = (uint8_t)((strstr(d.key, ".r.") ? 1 : 0) | (strstr(d.key, ".clamp") ? 2 : 0));
    else if (!strcmp(mnbuf, "testp")) {
        static const char *const TP[] = {".finite.", ".infinite.", ".number.", ".notanumber.", ".normal.", ".subnormal."};
        for (int i = 0; i < 6; i++) if (strstr(d.key, TP[i])) { in.aop = (uint8_t)i; break; }
    } else if (!strcmp(mnbuf, "bfind")) in.aop = strstr(d.key, ".shiftamt") != NULL;
    else if (!strcmp(mnbuf, "addc") || !strcmp(mnbuf, "subc") || !strcmp(mnbuf, "madc")) in.flags |= F_CIN;
    if (ptx_handlers[h] == h_h_arith || ptx_handlers[h] == h_h_un) in.aop = (uint8_t)ptx_half_op(mnbuf);
#define NEED(n) do { if (nops != (n)) return perr(P, PTX_E_INVALID_PTX, "'%s' takes %d operands, found %d", op, (n), nops); } while (0)
    switch (cls) {
    case C_BIN: case C_SHIFT: case C_WIDE:
        NEED(3);
        if (dst_row(P, &ops[0], &in.d[0])) return P->err;
        if (val_row(P, &ops[1], t, &in.s[0]) || val_row(P, &ops[2], cls == C_SHIFT ? T_U32 : t, &in.s[1])) return P->err;
        in.nd = 1; in.ns = 2;
        break;
    case C_UN:
        if (!strcmp(mnbuf, "cvta") || !strcmp(mnbuf, "isspacep")) {
            NEED(2);
            if (dst_row(P, &ops[0], &in.d[0])) return P->err;
            if (in.space == SP_PARAM) in.space = P->fn && P->fn->is_entry ? SP_KPARAM : SP_LOCAL;
            if (ops[1].kind == OK_SYM) {
                psym *s = find_sym(P, ops[1].name);
                if (s && s->kind == SK_VAR && (s->space == SP_LOCAL || (s->space == SP_PARAM && s->dyn_shared != 2))) {
                    in.am = AM_FRAME; in.off = (int64_t)s->addr + ops[1].aoff; in.s[0] = const_row(P, 0);
                    if (in.space == SP_PARAM || in.space == SP_KPARAM) in.space = SP_LOCAL;
                    break;
                }
            }
            if (val_row(P, &ops[1], T_U64, &in.s[0])) return P->err;
            break;
        }
        NEED(2);
        if (dst_row(P, &ops[0], &in.d[0]) || val_row(P, &ops[1], t, &in.s[0])) return P->err;
        if (ops[0].reg2) in.d[1] = ops[0].reg2 - 1;
        in.nd = 1; in.ns = 1;
        break;
    case C_TERN: case C_WIDE3: {
        NEED(4);
        if (dst_row(P, &ops[0], &in.d[0])) return P->err;
        int ta = t, tb = t, tc = t;
        if (cls == C_WIDE3) tc = t == T_U16 || t == T_S16 ? T_U32 : T_U64;
        if (!strcmp(mnbuf, "bfe")) { tb = tc = T_U32; }
        if (!strcmp(mnbuf, "shf")) { tc = T_U32; }
        if (val_row(P, &ops[1], ta, &in.s[0]) || val_row(P, &ops[2], tb, &in.s[1]) || val_row(P, &ops[3], tc, &in.s[2])) return P->err;
        in.nd = 1; in.ns = 3;
        if (d.hi) in.aop = 1;
        break;
    }
    case C_QUAD:
        NEED(5);
        if (dst_row(P, &ops[0], &in.d[0])) return P->err;
        for (int i = 0; i < 4; i++)
            if (val_row(P, &ops[1 + i], i >= 2 ? T_U32 : t, &in.s[i])) return P->err;
        in.nd = 1; in.ns = 4;
        break;
    case C_CMP: case C_SETP: {
        /* setp.cmp.t p[|q], a, b[, {!}c];   set.cmp.dt.st d, a, b[, {!}c] */
        if (nops != 3 && nops != 4) return perr(P, PTX_E_INVALID_PTX, "'%s' takes 3 or 4 operands", op);
        int st = !strcmp(mnbuf, "set") ? in.t2 : t;
        if (!strcmp(mnbuf, "set")) { in.t2 = (uint8_t)st; }
        if (dst_row(P, &ops[0], &in.d[0])) return P->err;
        in.d[1] = ops[0].reg2 ? ops[0].reg2 - 1 : UINT32_MAX;
        if (val_row(P, &ops[1], st, &in.s[0]) || val_row(P, &ops[2], st, &in.s[1])) return P->err;
        if (nops == 4) {
            if (val_row(P, &ops[3], T_PRED, &in.s[2])) return P->err;
            if (ops[3].neg) in.flags |= F_NEGSRC;
            if (!in.bop) return perr(P, PTX_E_INVALID_PTX, "'%s' with a predicate operand needs .and/.or/.xor", op);
        } else in.bop = 0;
        if (!in.cmp) return perr(P, PTX_E_INVALID_PTX, "'%s' lacks a comparison", op);
        in.nd = 1; in.ns = (uint8_t)(nops - 1);
        break;
    }
    case C_SELP:
        NEED(4);
        if (dst_row(P, &ops[0], &in.d[0])) return P->err;
        if (val_row(P, &ops[1], t, &in.s[0]) || val_row(P, &ops[2], t, &in.s[1]) ||
            val_row(P, &ops[3], !strcmp(mnbuf, "slct") ? in.t2 : T_PRED, &in.s[2])) return P->err;
        in.nd = 1; in.ns = 3;
        break;
    case C_MOV:
        if (ops[1].kind == OK_SREG) {
            if (dst_row(P, &ops[0], &in.d[0])) return P->err;
            in.target = (uint32_t)ops[1].sreg;
        } else if (ops[0].kind == OK_VEC) {          /* mov.b64 {lo, hi}, x  (unpack) */
            if (ops[0].vn > 4) return perr(P, PTX_E_NOT_SUPPORTED, "mov unpacking into %d registers", ops[0].vn);
            in.nd = (uint8_t)ops[0].vn;
            for (int i = 0; i < ops[0].vn; i++) {
                if (ops[0].v[i].kind == OK_REG) in.d[i] = ops[0].v[i].reg;
                else if (ops[0].v[i].kind == OK_SINK) in.d[i] = UINT32_MAX;
                else return perr(P, PTX_E_INVALID_PTX, "bad vector destination");
            }
            if (val_row(P, &ops[1], t, &in.s[0])) return P->err;
        } else if (ops[1].kind == OK_VEC) {          /* mov.b64 x, {lo, hi}  (pack) */
            if (dst_row(P, &ops[0], &in.d[0])) return P->err;
            in.ns = (uint8_t)ops[1].vn;
            if (in.ns > 5) return perr(P, PTX_E_INVALID_PTX, "vector too long");
            int et = ptx_type_size(t) / (in.ns ? in.ns : 1) == 4 ? T_B32 : ptx_type_size(t) / in.ns == 2 ? T_B16 : T_B8;
            for (int i = 0; i < ops[1].vn; i++) {
                opnd e = {0};
                e.kind = ops[1].v[i].kind; e.reg = ops[1].v[i].reg; e.iv = ops[1].v[i].iv; e.fv = ops[1].v[i].fv; e.fk = ops[1].v[i].fk;
                if (val_row(P, &e, et, &in.s[i])) return P->err;
            }
        } else {
            NEED(2);
            if (dst_row(P, &ops[0], &in.d[0])) return P->err;
            if (ops[1].kind == OK_SYM) {
                psym *s = find_sym(P, ops[1].name);
                if (s && s->kind == SK_VAR && (s->space == SP_LOCAL || (s->space == SP_PARAM && s->dyn_shared != 2))) {
                    /* a frame variable's local-space address: frame base + offset */
                    in.am = AM_FRAME; in.off = (int64_t)s->addr + ops[1].aoff;
                    in.s[0] = const_row(P, 0);
                    break;
                }
            }
            if (val_row(P, &ops[1], t, &in.s[0])) return P->err;
        }
        break;
    case C_CVT:
        if ((d.types[0] == T_F16X2 || d.types[0] == T_BF16X2) && d.types[1] == T_F32 && nops == 3) {
            /* cvt.rn.f16x2.f32 d, a, b: a to the upper half, b to the lower */
            in.t = (uint8_t)d.types[0]; in.t2 = T_F32;
            if (dst_row(P, &ops[0], &in.d[0]) || val_row(P, &ops[1], T_F32, &in.s[0]) || val_row(P, &ops[2], T_F32, &in.s[1])) return P->err;
            in.ns = 2;
            break;
        }
        NEED(2);
        for (int i = 0; i < 2; i++) {
            int ct = d.types[i], sz = ptx_type_size(ct);
            if (!sz || sz > 8 || ct == T_PRED || ct == T_F16X2 || ct == T_BF16X2 || ct == T_TF32 || ct == T_E4M3 || ct == T_E5M2)
                return perr(P, PTX_E_NOT_SUPPORTED, "unsupported conversion '%s'", op);
        }
        in.t = (uint8_t)d.types[0]; in.t2 = (uint8_t)d.types[1];
        if (dst_row(P, &ops[0], &in.d[0]) || val_row(P, &ops[1], in.t2, &in.s[0])) return P->err;
        break;
    case C_LD: {
        NEED(2);
        if (!ptx_type_size(t) || ptx_type_size(t) > 8 || t == T_PRED)
            return perr(P, t == T_B128 ? PTX_E_NOT_SUPPORTED : PTX_E_INVALID_PTX, "'%s' needs a type of 1 to 8 bytes", op);
        int n = ops[0].kind == OK_VEC ? ops[0].vn : 1;
        if (n > 4 && !(n == 8)) return perr(P, PTX_E_INVALID_PTX, "bad vector width");
        /* one braced register without .vN is a scalar (Triton's inline asm writes `ld.global.b32 { %r1 }, [a]`) */
        if (n != (in.vec ? in.vec : 1) || (ops[0].kind == OK_VEC && !(n == 1 && !in.vec)) != (in.vec != 0))
            return perr(P, PTX_E_INVALID_PTX, "'%s' has %d destination%s for %s%d elements", op, n, n == 1 ? "" : "s",
                        in.vec ? ".v" : "", in.vec ? in.vec : 1);
        in.nd = (uint8_t)n;
        if (ops[0].kind == OK_VEC) {
            if (n > 4) return perr(P, PTX_E_NOT_SUPPORTED, "ld with 8 destinations");
            for (int i = 0; i < n; i++) in.d[i] = ops[0].v[i].kind == OK_REG ? ops[0].v[i].reg : UINT32_MAX;
        } else if (dst_row(P, &ops[0], &in.d[0])) return P->err;
        if (addr_operand(P, &ops[1], &in, 0)) return P->err;
        break;
    }
    case C_ST: {
        NEED(2);
        if (!ptx_type_size(t) || ptx_type_size(t) > 8 || t == T_PRED)
            return perr(P, t == T_B128 ? PTX_E_NOT_SUPPORTED : PTX_E_INVALID_PTX, "'%s' needs a type of 1 to 8 bytes", op);
        int n = ops[1].kind == OK_VEC ? ops[1].vn : 1;
        if (n > 4) return perr(P, PTX_E_NOT_SUPPORTED, "st with more than 4 sources");
        if (n != (in.vec ? in.vec : 1) || (ops[1].kind == OK_VEC && !(n == 1 && !in.vec)) != (in.vec != 0))
            return perr(P, PTX_E_INVALID_PTX, "'%s' has %d source%s for %s%d elements", op, n, n == 1 ? "" : "s",
                        in.vec ? ".v" : "", in.vec ? in.vec : 1);
        in.ns = (uint8_t)n;
        if (addr_operand(P, &ops[0], &in, 4)) return P->err;
        if (ops[1].kind == OK_VEC) {
            for (int i = 0; i < n; i++) {
                opnd e = {0};
                e.kind = ops[1].v[i].kind; e.reg = ops[1].v[i].reg; e.iv = ops[1].v[i].iv; e.fv = ops[1].v[i].fv; e.fk = ops[1].v[i].fk;
                if (val_row(P, &e, t, &in.s[i])) return P->err;
            }
        } else if (val_row(P, &ops[1], t, &in.s[0])) return P->err;
        break;
    }
    case C_BRA:
        if (!strcmp(mnbuf, "brx")) return perr(P, PTX_E_NOT_SUPPORTED, "unsupported instruction '%s'", op);
        NEED(1);
        if (ops[0].kind != OK_SYM) return perr(P, PTX_E_INVALID_PTX, "bra needs a label");
        if (add_fixup(P, FX_LABEL, P->ncode, ops[0].name)) return P->err;
        break;
    case C_CALL: {
        /* call (rets), f, (args);  call f, (args);  call (rets), f;  call f; */
        int i = 0;
        callsite cs;
        memset(&cs, 0, sizeof cs);
        const opnd *retl = NULL, *argl = NULL;
        if (i < nops && ops[i].kind == OK_LIST) retl = &ops[i++];
        const char *fname = NULL;
        if (i < nops && ops[i].kind == OK_REG) {      /* indirect: the callee's address in a register */
            if (val_row(P, &ops[i++], T_U64, &in.s[0])) return P->err;
            cs.indirect = 1;
        } else if (i < nops && ops[i].kind == OK_SYM) {
            fname = ops[i++].name;
        } else {
            return perr(P, PTX_E_INVALID_PTX, "call needs a function name");
        }
        if (i < nops && ops[i].kind == OK_LIST) argl = &ops[i++];
        if (cs.indirect) {
            if (i >= nops || ops[i].kind != OK_SYM) return perr(P, PTX_E_NOT_SUPPORTED, "indirect call without a prototype label");
            i++;    /* the .callprototype label: the callee's parameters are checked when the call runs */
        }
        if (i < nops) return perr(P, PTX_E_INVALID_PTX, "call with %d operands", nops);
        if (retl && !argl && 0) argl = retl;
        for (int k = 0; retl && k < retl->ln; k++) {
            psym *s = find_sym(P, retl->list[k]);
            if (!s || s->kind != SK_VAR || s->space != SP_PARAM) return perr(P, PTX_E_INVALID_PTX, "call return '%s' is not a .param", retl->list[k]);
            if (cs.nrets >= 8) return perr(P, PTX_E_NOT_SUPPORTED, "too many return values");
            cs.rets[cs.nrets++] = (uint32_t)s->addr;
        }
        for (int k = 0; argl && k < argl->ln; k++) {
            psym *s = find_sym(P, argl->list[k]);
            if (!s || s->kind != SK_VAR || s->space != SP_PARAM) return perr(P, PTX_E_INVALID_PTX, "call argument '%s' is not a .param", argl->list[k]);
            if (cs.nargs >= 32) return perr(P, PTX_E_NOT_SUPPORTED, "call with more than 32 arguments");
            cs.args[cs.nargs++] = (uint32_t)s->addr;
        }
        GROW(P->calls, P->ncalls, P->capcalls);
        in.target = (uint32_t)P->ncalls;
        P->calls[P->ncalls++] = cs;
        if (fname && add_fixup(P, FX_CALL, P->ncode, fname)) return P->err;
        break;
    }
    case C_BAR:
        /* bar.sync a{, b};  bar.red.op.pred p, a{, b}, {!}c;  bar.red.popc.u32 d, a{, b}, {!}c */
        if (!strcmp(d.key, "bar.red") || !strcmp(d.key, "barrier.red") || strstr(d.key, ".red")) {
            if (nops != 3 && nops != 4) return perr(P, PTX_E_INVALID_PTX, "bar.red takes 3 or 4 operands");
            if (dst_row(P, &ops[0], &in.d[0])) return P->err;
            if (val_row(P, &ops[1], T_U32, &in.s[0])) return P->err;
            if (nops == 4) { if (val_row(P, &ops[2], T_U32, &in.s[1])) return P->err; in.flags |= F_HASCOUNT; }
            if (val_row(P, &ops[nops - 1], T_PRED, &in.s[2])) return P->err;
            if (ops[nops - 1].neg) in.flags |= F_NEGSRC;
        } else {
            if (nops == 0) { in.s[0] = const_row(P, 0); break; }
            if (nops != 1 && nops != 2) return perr(P, PTX_E_INVALID_PTX, "bar takes 1 or 2 operands");
            if (val_row(P, &ops[0], T_U32, &in.s[0])) return P->err;
            if (nops == 2) { if (val_row(P, &ops[1], T_U32, &in.s[1])) return P->err; in.flags |= F_HASCOUNT; }
        }
        break;
    case C_SHFL:
        /* shfl.sync.mode.b32 d[|p], a, b, c, membermask */
        NEED(5);
        if (dst_row(P, &ops[0], &in.d[0])) return P->err;
        in.d[1] = ops[0].reg2 ? ops[0].reg2 - 1 : UINT32_MAX;
        for (int k = 0; k < 4; k++)
            if (val_row(P, &ops[1 + k], T_U32, &in.s[k])) return P->err;
        if (!(in.aop >= 11 && in.aop <= 14)) return perr(P, PTX_E_INVALID_PTX, "shfl needs .up/.down/.bfly/.idx");
        break;
    case C_VOTE:
        /* vote.sync.mode.pred d, {!}a, membermask;  vote.sync.ballot.b32 d, {!}a, mask;  redux.sync.op d, a, mask */
        if (nops == 2 && !strncmp(d.key, "vote", 4)) {   /* old non-sync vote */
            if (dst_row(P, &ops[0], &in.d[0]) || val_row(P, &ops[1], T_PRED, &in.s[0])) return P->err;
            in.s[1] = const_row(P, 0xffffffffu);
        } else {
            NEED(3);
            if (dst_row(P, &ops[0], &in.d[0])) return P->err;
            if (val_row(P, &ops[1], strncmp(d.key, "vote", 4) ? T_U32 : T_PRED, &in.s[0]) || val_row(P, &ops[2], T_U32, &in.s[1])) return P->err;
        }
        if (ops[1].neg) in.flags |= F_NEGSRC;
        break;
    case C_MATCH:
        NEED(3);
        if (dst_row(P, &ops[0], &in.d[0])) return P->err;
        in.d[1] = ops[0].reg2 ? ops[0].reg2 - 1 : UINT32_MAX;
        if (val_row(P, &ops[1], t, &in.s[0]) || val_row(P, &ops[2], T_U32, &in.s[1])) return P->err;
        in.aop = strstr(d.key, ".all") ? 15 : 16;
        break;
    case C_ATOM: {
        /* atom.op.t d, [a], b{, c};  red.op.t [a], b */
        int isred = !strcmp(mnbuf, "red");
        if (!in.aop || in.aop > 10) return perr(P, PTX_E_NOT_SUPPORTED, "unsupported atomic '%s'", op);
        if (ptx_type_size(t) < 2 || ptx_type_size(t) > 8 || t == T_PRED || in.vec)
            return perr(P, PTX_E_NOT_SUPPORTED, "unsupported atomic '%s'", op);
        int k = 0;
        if (!isred) { if (dst_row(P, &ops[k++], &in.d[0])) return P->err; }
        else in.d[0] = UINT32_MAX;
        int want = (isred ? 2 : 3) + (in.aop == 8);
        NEED(want);
        if (addr_operand(P, &ops[k++], &in, 4)) return P->err;
        int vt = t;
        if (t == T_F16X2 || t == T_BF16X2 || t == T_F16 || t == T_BF16) vt = T_B32;
        if (val_row(P, &ops[k++], vt, &in.s[0])) return P->err;
        if (in.aop == 8 && val_row(P, &ops[k++], vt, &in.s[1])) return P->err;
        break;
    }
    case C_NONE:
        if (!strcmp(mnbuf, "bar")) {}   /* bar.warp.sync mask */
        if (nops >= 1 && (ops[0].kind == OK_REG || ops[0].kind == OK_IMM)) {
            if (val_row(P, &ops[0], T_U32, &in.s[0])) return P->err;
        } else in.s[0] = const_row(P, 0xffffffffu);
        if (!strcmp(d.key, "activemask") || !strcmp(d.key, "elect")) {
            if (nops < 1 || dst_row(P, &ops[0], &in.d[0])) return P->err;
            in.d[1] = ops[0].reg2 ? ops[0].reg2 - 1 : 0;
            if (!strcmp(d.key, "elect")) {
                if (nops != 2 || val_row(P, &ops[1], T_U32, &in.s[0])) return perr(P, PTX_E_INVALID_PTX, "elect.sync takes a destination and a member mask");
                if (!ops[0].reg2) in.d[1] = UINT32_MAX;
            }
        }
        break;
    case C_MMA: case C_LDSM: case C_STSM: case C_MOVM: case C_CPASYNC: case C_MBAR: case C_WMMA:
        return decode_async(P, &in, &d, op, ops, nops);
    default:
        return perr(P, PTX_E_NOT_SUPPORTED, "unsupported instruction '%s'", op);
    }
    return emit(P, &in);
}

/* ----------------------------------------------------------------------------------- declarations */

/* Reads `.align N`, `.vN`, `.type`, `.ptr`, ... after a state space; stops at the name. */
static int decl_attrs(parser *P, int *t, size_t *align, int *vec)
{
    *t = T_NONE; *align = 0; *vec = 1;
    while (P->tk == TK_ID && P->tbuf[0] == '.') {
        if (is(P, ".align")) {
            next(P);
            if (P->tk != TK_NUM) return perr(P, PTX_E_INVALID_PTX, ".align needs a number");
            *align = strtoull(P->tbuf, NULL, 0);
            if (!*align || (*align & (*align - 1))) return perr(P, PTX_E_INVALID_PTX, ".align %s is not a power of two", P->tbuf);
            next(P);
            continue;
        }
        if (is(P, ".v2") || is(P, ".v4") || is(P, ".v8")) { *vec = P->tbuf[2] - '0'; next(P); continue; }
        if (is(P, ".ptr") || is(P, ".global") || is(P, ".shared") || is(P, ".const") || is(P, ".local") || is(P, ".const")) { next(P); continue; }
        if (is(P, ".attribute")) {
            next(P);
            if (ispunct_(P, '(')) { while (P->tk != TK_EOF && !ispunct_(P, ')')) next(P); next(P); }
            continue;
        }
        int tt = type_of(P->tbuf + 1);
        if (tt != T_NONE) { *t = tt; next(P); continue; }
        return perr(P, PTX_E_NOT_SUPPORTED, "unsupported declaration attribute '%s'", P->tbuf);
    }
    return 0;
}

/* Parses `[N][M]...` (or `[]`) after a name; *count = elements (0 for []), *unsized = 1 for []. */
static int decl_dims(parser *P, size_t *count, int *unsized)
{
    *count = 1; *unsized = 0;
    while (ispunct_(P, '[')) {
        next(P);
        if (ispunct_(P, ']')) { *unsized = 1; *count = 0; next(P); continue; }
        if (P->tk != TK_NUM) return perr(P, PTX_E_INVALID_PTX, "expected an array size");
        *count *= strtoull(P->tbuf, NULL, 0);
        next(P);
        if (expect(P, ']')) return P->err;
    }
    return 0;
}

/* An initialiser for a variable of element type t into buf (size bytes). */
static int parse_init(parser *P, int t, unsigned char *buf, size_t size, size_t *pos)
{
    if (ispunct_(P, '{')) {
        next(P);
        while (!ispunct_(P, '}')) {
            if (parse_init(P, t, buf, size, pos)) return P->err;
            if (ispunct_(P, ',')) next(P);
            else if (!ispunct_(P, '}')) return perr(P, PTX_E_INVALID_PTX, "expected ',' or '}' in an initialiser");
        }
        next(P);
        return 0;
    }
    int es = ptx_type_size(t);
    if (!es) es = 1;
    uint64_t v = 0;
    if (P->tk == TK_ID && (is(P, "generic") || P->tbuf[0] != '.')) {
        /* an address: generic(sym) or sym (+off) */
        int gen = is(P, "generic");
        if (gen) { next(P); if (expect(P, '(')) return P->err; }
        psym *s = find_sym(P, P->tbuf);
        if (!s) return perr(P, PTX_E_INVALID_PTX, "undefined symbol '%s' in an initialiser", P->tbuf);
        next(P);
        int64_t add = 0;
        if (ispunct_(P, '+')) { next(P); add = strtoll(P->tbuf, NULL, 0); next(P); }
        if (gen && expect(P, ')')) return P->err;
        if (s->kind == SK_VAR && (s->space == SP_GLOBAL || s->space == SP_CONST) && s->addr) v = s->addr + (uint64_t)add;
        else return perr(P, PTX_E_NOT_SUPPORTED, "initialiser with the address of '%s'", s->name);
    } else {
        opnd o = {0};
        if (parse_simple(P, &o)) return P->err;
        if (o.kind == OK_IMM) v = t == T_F32 ? ptx_bf32((float)o.iv) : t == T_F64 ? ptx_bf64((double)o.iv) : (uint64_t)o.iv;
        else if (o.kind == OK_FIMM) {
            if (t == T_F32) v = o.fk == 'f' ? (uint64_t)(uint32_t)o.iv : ptx_bf32((float)o.fv);
            else if (t == T_F64) v = o.fk == 'd' ? (uint64_t)o.iv : ptx_bf64(o.fv);
            else v = (uint64_t)o.iv;
        } else return perr(P, PTX_E_INVALID_PTX, "bad initialiser");
    }
    if (*pos + (size_t)es > size) return perr(P, PTX_E_INVALID_PTX, "initialiser longer than its variable's %zu bytes", size);
    memcpy(buf + *pos, &v, (size_t)es);
    *pos += (size_t)es;
    return 0;
}

static size_t align_up(size_t x, size_t a) { return a ? (x + a - 1) / a * a : x; }

/* A variable declaration in space sp (after the space keyword). In a function: local / shared / param. */
static int parse_var(parser *P, int sp, int linkage, int infunc)
{
    int t; size_t align; int vec;
    if (decl_attrs(P, &t, &align, &vec)) return P->err;
    if (t == T_NONE) return perr(P, PTX_E_INVALID_PTX, "declaration without a type");
    size_t es = (size_t)ptx_type_size(t) * (size_t)vec;
    int words = t == T_PRED ? 0 : es > 4 ? (int)((es + 3) / 4) : 1;   /* a .reg's 32-bit registers */
    if (!align) align = es;
    for (;;) {
        if (P->tk != TK_ID) return perr(P, PTX_E_INVALID_PTX, "expected a name, found '%s'", P->tbuf);
        char name[NAME_MAX_];
        if (P->tl >= sizeof name) return perr(P, PTX_E_INVALID_PTX, "name too long");
        strcpy(name, P->tbuf);
        next(P);
        if (sp == -1) {   /* .reg */
            if (ispunct_(P, '<')) {
                next(P);
                if (P->tk != TK_NUM) return perr(P, PTX_E_INVALID_PTX, "expected a register count");
                uint32_t n = (uint32_t)strtoul(P->tbuf, NULL, 0);
                next(P);
                if (expect(P, '>')) return P->err;
                if (n > 1u << 20) return perr(P, PTX_E_INVALID_PTX, "too many registers");
                if (reg_add(P, name, strlen(name), n, 1, words) || reg_mark(P, P->nregs - n, n, t == T_PRED)) return P->err;
            } else if (reg_add(P, name, strlen(name), 1, 0, words) || reg_mark(P, P->nregs - 1, 1, t == T_PRED)) return P->err;
        } else {
            size_t count; int unsized;
            if (decl_dims(P, &count, &unsized)) return P->err;
            psym *s = NULL;
            if (!infunc) {
                psym *prev = find_text_sym(P, name);
                if (prev && prev->kind == SK_VAR && (prev->linkage == LK_EXTERN || linkage == LK_EXTERN)) {
                    if (linkage == LK_EXTERN) { while (!ispunct_(P, ';') && !ispunct_(P, ',') && P->tk != TK_EOF) next(P); goto nextname; }
                    s = prev;   /* definition after an extern declaration */
                } else if (prev) return perr(P, PTX_E_INVALID_PTX, "'%s' is declared twice", name);
            }
            if (!s) { s = new_sym(P, name, strlen(name)); if (!s) return P->err; }
            s->kind = SK_VAR; s->space = sp; s->linkage = linkage; s->align = align; s->elem = (int)es;
            s->size = es * count; s->defined = linkage != LK_EXTERN;
            if (sp == SP_SHARED && unsized) s->dyn_shared = 1;
            if (infunc) {
                GROW(P->fscope, P->nfscope, P->capfscope);
                P->fscope[P->nfscope++] = s;
            }
            if (ispunct_(P, '=')) {
                next(P);
                if (sp != SP_GLOBAL && sp != SP_CONST) return perr(P, PTX_E_INVALID_PTX, "initialiser on a non-global variable");
                size_t cap = s->size ? s->size : 1 << 16;
                unsigned char *buf = calloc(1, cap);
                if (!buf) return perr(P, PTX_E_OUT_OF_MEMORY, "out of memory");
                size_t pos = 0;
                if (parse_init(P, t, buf, cap, &pos)) { free(buf); return P->err; }
                if (!s->size) s->size = pos;
                s->init = buf;
            }
            /* placement */
            if (s->defined || sp == SP_SHARED) {
                if (sp == SP_SHARED) {
                    /* a kernel's own .shared variables are laid out per kernel after linking (kernels
                     * overlay each other); module-level and .func ones get program-wide offsets now */
                    if (infunc && P->fn && P->fn->is_entry && !s->dyn_shared) s->owner = P->fn;
                    else if (!s->dyn_shared && !(linkage == LK_EXTERN)) { P->smem = align_up(P->smem, align); s->addr = P->smem; P->smem += s->size; }
                } else if (sp == SP_LOCAL || (sp == SP_PARAM && infunc)) {
                    P->frame = align_up(P->frame, align < 4 ? 4 : align);
                    s->addr = P->frame; P->frame += s->size ? s->size : es;
                } else if (sp == SP_GLOBAL || sp == SP_CONST) {
                    if (linkage != LK_EXTERN && !(linkage == LK_WEAK && 0)) {
                        size_t n = s->size ? s->size : 1;
                        void *mem = P->env && P->env->alloc ? P->env->alloc(P->env->ctx, n, align < 16 ? 16 : align) : NULL;
                        if (!mem) return perr(P, PTX_E_OUT_OF_MEMORY, "cannot allocate %zu bytes for '%s'", n, name);
                        void **qa = realloc(P->M->allocs, ((size_t)P->M->nallocs + 1) * sizeof *qa);
                        if (!qa) { if (P->env->free) P->env->free(P->env->ctx, mem); return perr(P, PTX_E_OUT_OF_MEMORY, "out of memory"); }
                        P->M->allocs = qa;
                        P->M->allocs[P->M->nallocs++] = mem;
                        if (s->init) memcpy(mem, s->init, s->size < n ? s->size : n);
                        s->addr = (uint64_t)(uintptr_t)mem;
                        psym **qg = realloc(P->M->globals, ((size_t)P->M->nglobals + 1) * sizeof *qg);
                        if (!qg) return perr(P, PTX_E_OUT_OF_MEMORY, "out of memory");
                        P->M->globals = qg;
                        P->M->globals[P->M->nglobals++] = s;
                    }
                }
            }
        }
    nextname:
        if (ispunct_(P, ',')) { next(P); continue; }
        break;
    }
    return expect(P, ';');
}

/* Parameter list of an .entry / .func: `( .param .u64 a, .param .align 8 .b8 b[16], ... )`. */
static int parse_params(parser *P, pparam **out, int *n, int entry)
{
    int cap = 0;
    *out = NULL; *n = 0;
    if (expect(P, '(')) return P->err;
    while (!ispunct_(P, ')')) {
        if (!is(P, ".param") && !is(P, ".reg")) return perr(P, PTX_E_INVALID_PTX, "expected .param, found '%s'", P->tbuf);
        if (is(P, ".reg")) return perr(P, PTX_E_NOT_SUPPORTED, ".reg function parameters");
        next(P);
        int t; size_t align; int vec;
        if (decl_attrs(P, &t, &align, &vec)) return P->err;
        if (P->tk != TK_ID) return perr(P, PTX_E_INVALID_PTX, "expected a parameter name");
        char name[NAME_MAX_];
        if (P->tl >= sizeof name) return perr(P, PTX_E_INVALID_PTX, "name too long");
        strcpy(name, P->tbuf);
        next(P);
        size_t count; int unsized;
        if (decl_dims(P, &count, &unsized)) return P->err;
        size_t es = (size_t)ptx_type_size(t) * (size_t)vec;
        if (!align) align = es ? es : 1;
        if (*n >= cap) {
            cap = cap ? cap * 2 : 8;
            pparam *q = realloc(*out, (size_t)cap * sizeof *q);
            if (!q) return perr(P, PTX_E_OUT_OF_MEMORY, "out of memory");
            *out = q;
        }
        pparam *pp = &(*out)[(*n)++];
        pp->name = sdup(P, name, strlen(name));
        pp->t = t; pp->size = es * count; pp->align = align;
        if (ispunct_(P, ',')) next(P);
        else if (!ispunct_(P, ')')) return perr(P, PTX_E_INVALID_PTX, "expected ',' or ')' in a parameter list");
    }
    (void)entry;
    next(P);
    return P->err;
}

static pfunc *find_func_in_text(parser *P, const char *name)
{
    for (int i = P->nfuncs - 1; i >= 0; i--)
        if (P->funcs[i]->text == P->text && !strcmp(P->funcs[i]->name, name)) return P->funcs[i];
    return NULL;
}

static int parse_body(parser *P, pfunc *f);

static int parse_function(parser *P, int entry, int linkage)
{
    pfunc *f = calloc(1, sizeof *f);
    if (!f) return perr(P, PTX_E_OUT_OF_MEMORY, "out of memory");
    f->is_entry = entry; f->linkage = linkage; f->text = P->text; f->line = P->tline;
    if (!entry && ispunct_(P, '(')) { if (parse_params(P, &f->rets, &f->nrets, 0)) { free(f); return P->err; } }
    if (P->tk != TK_ID) { free(f); return perr(P, PTX_E_INVALID_PTX, "expected a function name"); }
    f->name = sdup(P, P->tbuf, P->tl);
    next(P);
    if (ispunct_(P, '(')) { if (parse_params(P, &f->params, &f->nparams, entry)) { free(f); return P->err; } }
    if (P->nfuncs >= P->capfuncs) {
        int nc = P->capfuncs ? P->capfuncs * 2 : 16;
        pfunc **q = realloc(P->funcs, (size_t)nc * sizeof *q);
        if (!q) { free(f); return perr(P, PTX_E_OUT_OF_MEMORY, "out of memory"); }
        P->funcs = q; P->capfuncs = nc;
    }
    pfunc *prev = find_func_in_text(P, f->name);
    P->funcs[P->nfuncs++] = f;
    /* performance directives */
    while (P->tk == TK_ID && P->tbuf[0] == '.') {
        unsigned *dst = NULL; int nv = 3;
        if (is(P, ".maxntid")) dst = f->maxntid;
        else if (is(P, ".reqntid")) dst = f->reqntid;
        else if (is(P, ".minnctapersm")) { dst = &f->minnctapersm; nv = 1; }
        else if (is(P, ".maxnreg")) {
            next(P);
            if (P->tk != TK_NUM) return perr(P, PTX_E_INVALID_PTX, ".maxnreg needs a number");
            unsigned v = (unsigned)strtoul(P->tbuf, NULL, 0);
            if (v && (!f->maxnreg || v < f->maxnreg)) f->maxnreg = v;
            next(P);
            continue;
        }
        else if (is(P, ".noreturn") || is(P, ".maxclusterrank") || is(P, ".reqnctapercluster") ||
                 is(P, ".explicitcluster") || is(P, ".blocksareclusters") || is(P, ".pragma") || is(P, ".abi_preserve") ||
                 is(P, ".abi_preserve_control")) {
            int prag = is(P, ".pragma");
            next(P);
            while (P->tk == TK_NUM || ispunct_(P, ',') || P->tk == TK_STR) next(P);
            if (prag && ispunct_(P, ';')) next(P);
            continue;
        } else return perr(P, PTX_E_NOT_SUPPORTED, "unsupported function directive '%s'", P->tbuf);
        next(P);
        for (int i = 0; i < nv && P->tk == TK_NUM; i++) {
            dst[i] = (unsigned)strtoul(P->tbuf, NULL, 0);
            next(P);
            if (ispunct_(P, ',')) next(P);
        }
        if (nv == 3) for (int i = 0; i < 3; i++) if (!dst[i]) dst[i] = 1;
    }
    if (ispunct_(P, ';')) { next(P); f->defined = 0; return 0; }   /* a declaration */
    if (prev && prev->defined) return perr(P, PTX_E_INVALID_PTX, "function '%s' defined twice", f->name);
    if (prev) prev->resolved = f;
    f->defined = 1;
    return parse_body(P, f);
}

/* The registers ptxas might give f (cuFuncGetAttribute's NUM_REGS, the occupancy API, the launch's register
 * check).  NVVM and NVRTC declare one virtual register per value, hundreds where ptxas allocates tens (a
 * numba transpose kernel declares over 64, so 1024-thread blocks were refused with
 * LAUNCH_OUT_OF_RESOURCES), so this is the most 32-bit registers live at once: a register lives from its
 * first to its last mention in code order, and one live into a loop (a backward branch) stays live to the
 * branch; 64-bit values count two, predicates none; plus 2 (ptxas keeps a few for itself). */
static uint32_t estimate_regs(parser *P, const pfunc *f)
{
    uint32_t n = P->nregs, len = f->pc1 - f->pc0;
    if (!n || !len) return 2;
    uint32_t *first = malloc((size_t)n * sizeof *first), *last = malloc((size_t)n * sizeof *last);
    int64_t *delta = calloc((size_t)len + 1, sizeof *delta);
    uint32_t est = 0;
    if (!first || !last || !delta) {     /* no memory for the estimate: every declared register */
        for (uint32_t r = 0; r < n; r++) est += P->regw[r];
        goto out;
    }
    for (uint32_t r = 0; r < n; r++) first[r] = UINT32_MAX, last[r] = 0;
    for (uint32_t pc = f->pc0; pc < f->pc1; pc++) {
        const insn_t *in = &P->code[pc];
        uint32_t rs[9] = {in->d[0], in->d[1], in->d[2], in->d[3], in->s[0], in->s[1], in->s[2], in->s[3], in->s[4]};
        for (int k = 0; k < 9; k++) {
            uint32_t v = rs[k];
            if (v == UINT32_MAX || (v & CONSTBIT) || v >= n) continue;
            if (pc < first[v]) first[v] = pc;
            if (pc > last[v]) last[v] = pc;
        }
    }
    int bra = key_lookup("bra");
    for (int pass = 0; pass < 2; pass++)   /* twice: a loop inside a loop */
        for (uint32_t pc = f->pc0; pc < f->pc1; pc++) {
            const insn_t *in = &P->code[pc];
            if (in->h != bra || in->target > pc) continue;
            for (uint32_t r = 0; r < n; r++)
                if (first[r] < in->target && last[r] >= in->target && last[r] < pc) last[r] = pc;
        }
    for (uint32_t r = 0; r < n; r++) {
        if (first[r] == UINT32_MAX || !P->regw[r]) continue;
        delta[first[r] - f->pc0] += P->regw[r];
        delta[last[r] - f->pc0 + 1] -= P->regw[r];
    }
    int64_t live = 0, most = 0;
    for (uint32_t i = 0; i < len; i++) {
        live += delta[i];
        if (live > most) most = live;
    }
    est = (uint32_t)most;
out:
    free(first); free(last); free(delta);
    return est + 2;
}

/* The body of f: `{ ... }`. */
static int parse_body(parser *P, pfunc *f)
{
    P->fn = f;
    P->nregs = 0;
    P->frame = 0;
    P->nlabels = 0;
    P->nfscope = 0;
    f->pc0 = P->ncode;
    if (expect(P, '{')) return P->err;
    scope_push(P);
    /* parameters as symbols: kernel params (offsets in the buffer), func params / returns (frame) */
    uint32_t off = 0;
    for (int i = 0; i < f->nparams; i++) {
        pparam *pp = &f->params[i];
        /* the driver's limit for a kernel's parameters (CUDA 12.1+): ptxas refuses more */
        if (f->is_entry && (pp->size > 32764 || align_up(off, pp->align) + pp->size > 32764))
            return perr(P, PTX_E_INVALID_PTX, "kernel '%s': parameter '%s' (%llu bytes) takes its parameters past 32764 bytes",
                        f->name, pp->name, (unsigned long long)pp->size);
        if (!f->is_entry && pp->size > ((size_t)1 << 20))
            return perr(P, PTX_E_NOT_SUPPORTED, "function '%s': parameter '%s' of %llu bytes (the engine takes at most 1 MiB)",
                        f->name, pp->name, (unsigned long long)pp->size);
        psym *s = new_sym(P, pp->name, strlen(pp->name));
        if (!s) return P->err;
        s->kind = SK_VAR; s->space = SP_PARAM; s->size = pp->size; s->align = pp->align;
        if (f->is_entry) { off = (uint32_t)align_up(off, pp->align); pp->off = off; s->addr = off; off += (uint32_t)pp->size; s->dyn_shared = 2; }
        else { P->frame = align_up(P->frame, pp->align < 4 ? 4 : pp->align); pp->off = (uint32_t)P->frame; s->addr = P->frame; P->frame += pp->size; }
        s->text = -1;   /* not a text-level name */
        GROW(P->fscope, P->nfscope, P->capfscope);
        P->fscope[P->nfscope++] = s;
    }
    for (int i = 0; i < f->nrets; i++) {
        pparam *pp = &f->rets[i];
        if (pp->size > ((size_t)1 << 20))
            return perr(P, PTX_E_NOT_SUPPORTED, "function '%s': return parameter '%s' of %llu bytes (the engine takes at most 1 MiB)",
                        f->name, pp->name, (unsigned long long)pp->size);
        psym *s = new_sym(P, pp->name, strlen(pp->name));
        if (!s) return P->err;
        s->kind = SK_VAR; s->space = SP_PARAM; s->size = pp->size; s->align = pp->align; s->text = -1;
        P->frame = align_up(P->frame, pp->align < 4 ? 4 : pp->align); pp->off = (uint32_t)P->frame; s->addr = P->frame; P->frame += pp->size;
        GROW(P->fscope, P->nfscope, P->capfscope);
        P->fscope[P->nfscope++] = s;
    }
    int depth = 1;
    opnd *ops = malloc(8 * sizeof *ops);
    if (!ops) return perr(P, PTX_E_OUT_OF_MEMORY, "out of memory");
    while (!P->err) {
        if (P->tk == TK_EOF) { perr(P, PTX_E_INVALID_PTX, "unexpected end of text in '%s'", f->name); break; }
        if (ispunct_(P, '}')) {
            next(P);
            scope_pop(P);
            if (--depth == 0) break;
            continue;
        }
        if (ispunct_(P, '{')) { next(P); scope_push(P); depth++; continue; }
        if (ispunct_(P, ';')) { next(P); continue; }
        if (P->tk == TK_ID && P->tbuf[0] == '.') {
            if (is(P, ".reg")) { next(P); if (parse_var(P, -1, LK_NONE, 1)) break; continue; }
            if (P->tl > 5 && !strncmp(P->ts, ".reg.", 5)) {   /* `.reg.b16 %rs;` (inline asm writes it so) */
                P->ts += 4; P->tl -= 4;
                memmove(P->tbuf, P->tbuf + 4, strlen(P->tbuf + 4) + 1);
                if (parse_var(P, -1, LK_NONE, 1)) break;
                continue;
            }
            if (is(P, ".local")) { next(P); if (parse_var(P, SP_LOCAL, LK_NONE, 1)) break; continue; }
            if (is(P, ".param")) { next(P); if (parse_var(P, SP_PARAM, LK_NONE, 1)) break; continue; }
            if (is(P, ".shared")) { next(P); if (parse_var(P, SP_SHARED, LK_NONE, 1)) break; continue; }
            if (is(P, ".const") || is(P, ".global")) {
                int sp = is(P, ".const") ? SP_CONST : SP_GLOBAL;
                next(P); if (parse_var(P, sp, LK_NONE, 1)) break; continue;
            }
            if (is(P, ".loc") || is(P, ".file")) { skip_line(P); continue; }
            if (is(P, ".callprototype")) {   /* `proto: .callprototype (...) _ (...);`: an indirect call's type */
                while (P->tk != TK_EOF && !ispunct_(P, ';')) next(P);
                next(P);
                continue;
            }
            if (is(P, ".pragma")) { next(P); while (P->tk == TK_STR || ispunct_(P, ',')) next(P); if (expect(P, ';')) break; continue; }
            if (is(P, ".maxntid") || is(P, ".reqntid") || is(P, ".minnctapersm") || is(P, ".maxnreg")) {
                next(P); while (P->tk == TK_NUM || ispunct_(P, ',')) next(P); continue;
            }
            if (is(P, ".extern") || is(P, ".visible")) { next(P); continue; }
            perr(P, PTX_E_NOT_SUPPORTED, "unsupported directive '%s' in a function body", P->tbuf);
            break;
        }
        if (P->tk != TK_ID && !ispunct_(P, '@')) { perr(P, PTX_E_INVALID_PTX, "unexpected '%s'", P->tbuf); break; }
        /* label? */
        if (P->tk == TK_ID) {
            const char *save = P->p; int sline = P->line;
            char name[NAME_MAX_];
            if (P->tl < sizeof name) {
                strcpy(name, P->tbuf);
                skip_ws(P);
                if (P->p < P->end && *P->p == ':') {
                    P->p++;
                    if (P->nlabels >= P->caplabels) {
                        int nc = P->caplabels ? P->caplabels * 2 : 64;
                        void *q = realloc(P->labels, (size_t)nc * sizeof *P->labels);
                        if (!q) { perr(P, PTX_E_OUT_OF_MEMORY, "out of memory"); break; }
                        P->labels = q; P->caplabels = nc;
                    }
                    P->labels[P->nlabels].name = sdup(P, name, strlen(name));
                    P->labels[P->nlabels++].pc = P->ncode;
                    next(P);
                    continue;
                }
                P->p = save; P->line = sline;
            }
        }
        /* guard */
        uint32_t guard = 0; int gneg = 0;
        if (ispunct_(P, '@')) {
            next(P);
            if (ispunct_(P, '!')) { gneg = 1; next(P); }
            uint32_t r;
            if (P->tk != TK_ID || !reg_find(P, P->tbuf, &r)) { perr(P, PTX_E_INVALID_PTX, "bad guard predicate '%s'", P->tbuf); break; }
            guard = r + 1;
            next(P);
        }
        if (P->tk != TK_ID) { perr(P, PTX_E_INVALID_PTX, "expected an instruction, found '%s'", P->tbuf); break; }
        char op[512];
        if (P->tl >= sizeof op) { perr(P, PTX_E_INVALID_PTX, "opcode too long"); break; }
        strcpy(op, P->tbuf);
        int opline = P->tline;
        {   /* an instruction the engine lacks fails here, whatever its operands look like */
            decoded dd;
            if (split_opcode(P, op, &dd)) break;
            if (strcmp(dd.key, "mov") && key_lookup(dd.key) < 0) { perr(P, PTX_E_NOT_SUPPORTED, "unsupported instruction '%s'", op); break; }
        }
        next(P);
        int nops = 0;
        while (!ispunct_(P, ';') && P->tk != TK_EOF) {
            if (nops >= 8) { perr(P, PTX_E_INVALID_PTX, "too many operands"); break; }
            if (parse_operand(P, &ops[nops])) break;
            nops++;
            if (ispunct_(P, ',')) next(P);
            else if (!ispunct_(P, ';')) { perr(P, PTX_E_INVALID_PTX, "expected ',' or ';' after an operand of '%s', found '%s'", op, P->tbuf); break; }
        }
        if (P->err) break;
        int tl = P->tline;
        P->tline = opline;
        if (decode(P, op, guard, gneg, ops, nops)) break;
        P->tline = tl;
        next(P);
    }
    free(ops);
    if (P->err) return P->err;
    while (P->nscopes) scope_pop(P);
    f->pc1 = P->ncode;
    f->nregs = P->nregs;
    f->frame = align_up(P->frame, 16);
    /* an implicit ret / exit at the end */
    insn_t end;
    memset(&end, 0, sizeof end);
    end.h = (uint16_t)key_lookup(f->is_entry ? "exit" : "ret");
    end.line = (uint32_t)P->tline;
    if (emit(P, &end)) return P->err;
    f->pc1 = P->ncode;
    /* resolve this function's labels */
    for (int i = 0; i < P->nfx; i++) {
        fixup *x = &P->fx[i];
        if (x->kind != FX_LABEL || x->fn != f || !x->name) continue;
        int found = 0;
        for (int k = 0; k < P->nlabels; k++)
            if (!strcmp(P->labels[k].name, x->name)) { P->code[x->at].target = P->labels[k].pc; found = 1; break; }
        if (!found) { P->tline = x->line; return perr(P, PTX_E_INVALID_PTX, "undefined label '%s'", x->name); }
        x->name = NULL;
    }
    f->est_regs = estimate_regs(P, f);
    P->fn = NULL;
    return 0;
}

static int parse_text(parser *P)
{
    next(P);
    while (!P->err && P->tk != TK_EOF) {
        if (P->tk != TK_ID || P->tbuf[0] != '.') {
            if (ispunct_(P, ';')) { next(P); continue; }
            return perr(P, PTX_E_INVALID_PTX, "unexpected '%s' at module level", P->tbuf);
        }
        if (is(P, ".version")) {
            next(P);
            int maj = 0, min = 0;
            if (P->tk != TK_NUM || sscanf(P->tbuf, "%d.%d", &maj, &min) != 2) return perr(P, PTX_E_INVALID_PTX, "bad .version");
            int v = maj * 10 + min;
            if (v > MAX_VERSION) return perr(P, PTX_E_UNSUPPORTED_PTX_VERSION, "PTX ISA version %d.%d is newer than the engine knows (9.9)", maj, min);
            if (v > P->version) P->version = v;
            next(P);
            continue;
        }
        if (is(P, ".target")) {
            next(P);
            for (;;) {
                if (P->tk != TK_ID) return perr(P, PTX_E_INVALID_PTX, "bad .target");
                if (!strncmp(P->tbuf, "sm_", 3)) { int sm = atoi(P->tbuf + 3); if (sm > P->target) P->target = sm; }
                next(P);
                if (!ispunct_(P, ',')) break;
                next(P);
            }
            continue;
        }
        if (is(P, ".address_size")) {
            next(P);
            if (P->tk != TK_NUM || strcmp(P->tbuf, "64")) return perr(P, PTX_E_NOT_SUPPORTED, ".address_size %s (only 64)", P->tbuf);
            next(P);
            continue;
        }
        if (is(P, ".file") || is(P, ".loc")) { skip_line(P); continue; }
        if (is(P, ".section")) {
            next(P); next(P);
            if (ispunct_(P, '{')) {
                int depth = 0;
                do {
                    if (ispunct_(P, '{')) depth++;
                    if (ispunct_(P, '}')) depth--;
                    next(P);
                } while (depth > 0 && P->tk != TK_EOF);
            }
            continue;
        }
        if (is(P, ".pragma")) { next(P); while (P->tk == TK_STR || ispunct_(P, ',')) next(P); if (expect(P, ';')) return P->err; continue; }
        if (is(P, ".alias")) { while (!ispunct_(P, ';') && P->tk != TK_EOF) next(P); next(P); continue; }
        int linkage = LK_NONE;
        while (is(P, ".visible") || is(P, ".extern") || is(P, ".weak") || is(P, ".common")) {
            linkage = is(P, ".visible") ? LK_VISIBLE : is(P, ".extern") ? LK_EXTERN : is(P, ".weak") ? LK_WEAK : LK_COMMON;
            next(P);
        }
        if (is(P, ".entry")) { next(P); if (parse_function(P, 1, linkage)) return P->err; continue; }
        if (is(P, ".func")) { next(P); if (parse_function(P, 0, linkage)) return P->err; continue; }
        if (is(P, ".global")) { next(P); if (parse_var(P, SP_GLOBAL, linkage, 0)) return P->err; continue; }
        if (is(P, ".const")) { next(P); if (parse_var(P, SP_CONST, linkage, 0)) return P->err; continue; }
        if (is(P, ".shared")) { next(P); if (parse_var(P, SP_SHARED, linkage, 0)) return P->err; continue; }
        if (is(P, ".tex") || is(P, ".surfref") || is(P, ".texref") || is(P, ".samplerref"))
            return perr(P, PTX_E_NOT_SUPPORTED, "unsupported declaration '%s' (textures and surfaces)", P->tbuf);
        return perr(P, PTX_E_NOT_SUPPORTED, "unsupported directive '%s'", P->tbuf);
    }
    return P->err;
}

/* ------------------------------------------------------------------------------------------- linking */

static pfunc *resolve_func(parser *P, pfunc *f)
{
    if (f->resolved) f = f->resolved;
    if (f->defined) return f;
    /* an .extern (or undefined) declaration: a visible definition in any text */
    for (int i = 0; i < P->nfuncs; i++) {
        pfunc *g = P->funcs[i];
        if (g->defined && !strcmp(g->name, f->name) && (g->linkage == LK_VISIBLE || g->linkage == LK_WEAK || g->text == f->text))
            return g;
    }
    return NULL;
}

static psym *resolve_var(parser *P, psym *s)
{
    if (s->defined || s->dyn_shared) return s;
    psym *weak = NULL;
    for (int i = 0; i < P->ntsyms; i++) {
        psym *g = P->tsyms[i];
        if (g != s && g->defined && g->kind == SK_VAR && !strcmp(g->name, s->name) && g->text >= 0) {
            if (g->linkage == LK_VISIBLE) return g;
            if (g->linkage == LK_WEAK || g->linkage == LK_COMMON) weak = g;
        }
    }
    return weak;
}

/* Max frame chain through the call graph; every function on a cycle (of any length) is marked recursive,
 * so a call to it saves the callee's registers of the calling lanes. */
static size_t chain(parser *P, pfunc *f, int *recursive, pfunc **stack, int depth)
{
    if (f->visiting == 2) return f->maxchain;
    if (f->visiting == 1) {
        *recursive = 1;
        for (int i = depth - 1; i >= 0; i--) {   /* everything on the stack down to f is on the cycle */
            stack[i]->recursive = 1;
            if (stack[i] == f) break;
        }
        return 0;
    }
    f->visiting = 1;
    stack[depth] = f;
    size_t best = 0;
    for (int i = 0; i < f->ncallees; i++) {
        size_t c = chain(P, P->funcs[f->callees[i]], recursive, stack, depth + 1);
        if (c > best) best = c;
    }
    f->visiting = 2;
    f->maxchain = f->frame + best;
    return f->maxchain;
}

static int link_program(parser *P)
{
    struct ptx_module *M = P->M;
    /* one definition per externally visible name */
    for (int i = 0; i < P->nfuncs; i++) {
        pfunc *f = P->funcs[i];
        if (!f->defined || f->linkage != LK_VISIBLE) continue;
        for (int k = i + 1; k < P->nfuncs; k++) {
            pfunc *g = P->funcs[k];
            if (g->defined && g->linkage == LK_VISIBLE && !strcmp(f->name, g->name)) {
                P->text = g->text; P->tline = g->line;
                return perr(P, PTX_E_INVALID_PTX, "'%s' is defined in PTX texts %d and %d", f->name, f->text + 1, g->text + 1);
            }
        }
    }
    for (int i = 0; i < P->ntsyms; i++) {
        psym *a = P->tsyms[i];
        if (!a->defined || a->linkage != LK_VISIBLE || a->text < 0 || a->kind != SK_VAR) continue;
        for (int k = i + 1; k < P->ntsyms; k++) {
            psym *b = P->tsyms[k];
            if (b->defined && b->linkage == LK_VISIBLE && b->kind == SK_VAR && b->text >= 0 && b->text != a->text && !strcmp(a->name, b->name)) {
                P->text = b->text; P->tline = 0;
                return perr(P, PTX_E_INVALID_PTX, "variable '%s' is defined in PTX texts %d and %d", a->name, a->text + 1, b->text + 1);
            }
        }
    }
    /* calls */
    for (int i = 0; i < P->nfx && !P->err; i++) {
        fixup *x = &P->fx[i];
        if (x->kind == FX_CALL) {
            pfunc *decl = NULL;
            for (int k = P->nfuncs - 1; k >= 0; k--)
                if (P->funcs[k]->text == x->fn->text && !strcmp(P->funcs[k]->name, x->name)) { decl = P->funcs[k]; break; }
            pfunc *g = decl ? resolve_func(P, decl) : NULL;
            P->tline = x->line; P->text = x->fn->text;
            if (!decl) return perr(P, PTX_E_INVALID_PTX, "call of undeclared function '%s'", x->name);
            if (!g && !strcmp(x->name, "cudaGraphSetConditional")) {
                /* the device runtime's setter of a conditional graph node's handle (libcudadevrt's, which the
                 * emulator answers itself): (.param .b64 handle, .param .b32 value), no result */
                callsite *cs = &P->calls[P->code[x->at].target];
                if (cs->nargs != 2 || cs->nrets || decl->nparams != 2 || decl->params[0].size != 8 || decl->params[1].size != 4)
                    return perr(P, PTX_E_INVALID_PTX, "call of '%s' with other parameters than (.b64, .b32)", x->name);
                cs->fn = decl;
                cs->builtin = PTX_BUILTIN_SET_CONDITIONAL;
                continue;
            }
            if (!g) return perr(P, PTX_E_INVALID_PTX, "unresolved external function '%s'", x->name);
            if (g->is_entry) return perr(P, PTX_E_INVALID_PTX, "call of kernel '%s'", x->name);
            callsite *cs = &P->calls[P->code[x->at].target];
            cs->fn = g;
            if (cs->nargs != g->nparams || cs->nrets > g->nrets)
                return perr(P, PTX_E_INVALID_PTX, "call of '%s' with %d arguments (it takes %d)", x->name, cs->nargs, g->nparams);
            /* callee index in funcs */
            int gi = 0;
            for (int k = 0; k < P->nfuncs; k++) if (P->funcs[k] == g) gi = k;
            pfunc *caller = x->fn;
            if (caller->ncallees >= caller->capcallees) {
                int nc = caller->capcallees ? caller->capcallees * 2 : 8;
                uint32_t *q = realloc(caller->callees, (size_t)nc * sizeof *q);
                if (!q) return perr(P, PTX_E_OUT_OF_MEMORY, "out of memory");
                caller->callees = q; caller->capcallees = nc;
            }
            caller->callees[caller->ncallees++] = (uint32_t)gi;
        } else if (x->kind == FX_CONST_SYM) {
            psym *s = x->sym;
            P->tline = x->line; P->text = x->fn ? x->fn->text : P->text;
            if (!s && x->name) {
                /* a function name used as a value (function pointer): its index + 1 */
                pfunc *g = NULL;
                for (int k = 0; k < P->nfuncs; k++) if (!strcmp(P->funcs[k]->name, x->name)) g = P->funcs[k];
                if (!g) return perr(P, PTX_E_INVALID_PTX, "undefined symbol '%s'", x->name);
                pfunc *def = resolve_func(P, g);
                if (def) g = def;
                /* compared, passed through, or called (h_call checks it is one of the module's functions); a
                 * function called through a pointer may be on the stack already: its registers are saved */
                g->recursive = 1;
                P->consts[x->at] = (uint64_t)(uintptr_t)g;
                continue;
            }
            psym *r = resolve_var(P, s);
            if (!r) return perr(P, PTX_E_INVALID_PTX, "unresolved external variable '%s'", s->name);
            uint64_t base = r->addr;
            if (r->space == SP_SHARED && r->dyn_shared == 1) base = (uint64_t)-1;   /* set below */
            P->consts[x->at] = base + (uint64_t)x->add;
            if (r->space == SP_SHARED && r->dyn_shared == 1) x->sym = r, x->kind = 99;
        }
    }
    if (P->err) return P->err;
    /* the kernels' own .shared variables, each kernel's after the common ones (kernels overlay) */
    size_t common = align_up(P->smem, 16), top = common;
    for (int i = 0; i < P->nfuncs; i++) {
        pfunc *f = P->funcs[i];
        if (!f->is_entry || !f->defined) continue;
        size_t off = common;
        for (int k = 0; k < P->ntsyms; k++) {
            psym *v = P->tsyms[k];
            if (v->owner != f) continue;
            off = align_up(off, v->align ? v->align : 1);
            v->addr = off;
            off += v->size;
        }
        f->smem = off;
        if (off > top) top = off;
        /* ptxas: "uses too much shared data (0x10000 bytes, 0xc000 max)"; only dynamic shared memory may pass
         * 48 KiB, with the opt-in (counted as the engine lays it out: the module's .shared and the kernel's) */
        if (off > 0xc000)
            return perr(P, PTX_E_INVALID_PTX, "kernel '%s' uses too much shared data (0x%zx bytes, 0xc000 max)", f->name, off);
    }
    for (int i = 0; i < P->nfx; i++)   /* addresses of kernel-owned shared variables */
        if (P->fx[i].kind == FX_CONST_SYM && P->fx[i].sym && P->fx[i].sym->owner)
            P->consts[P->fx[i].at] = P->fx[i].sym->addr + (uint64_t)P->fx[i].add;
    P->smem = top;
    /* dynamic shared memory starts after the static shared memory of every kernel */
    size_t dyn = align_up(P->smem, 16);
    for (int i = 0; i < P->nfx; i++)
        if (P->fx[i].kind == 99) P->consts[P->fx[i].at] = dyn + (uint64_t)P->fx[i].add;
    M->smem_static = P->smem;
    /* register layout: each function its own rows */
    uint32_t rows = 0;
    for (int i = 0; i < P->nfuncs; i++) {
        pfunc *f = P->funcs[i];
        if (!f->defined) continue;
        f->reg_base = rows;
        rows += f->nregs;
        for (uint32_t pc = f->pc0; pc < f->pc1; pc++) {
            insn_t *in = &P->code[pc];
            uint32_t *rs[10] = {&in->d[0], &in->d[1], &in->d[2], &in->d[3], &in->s[0], &in->s[1], &in->s[2], &in->s[3], &in->s[4], &in->guard};
            for (int k = 0; k < 10; k++) {
                uint32_t v = *rs[k];
                if (k == 9) { if (v) *rs[k] = v + f->reg_base; continue; }
                if (v == UINT32_MAX || (v & CONSTBIT)) continue;
                *rs[k] = v + f->reg_base;
            }
        }
    }
    if ((uint64_t)rows + P->nconst > 65536)
        return perr(P, PTX_E_NOT_SUPPORTED, "the program declares %u registers and %u constants (the engine takes at most 65536 together)",
                    rows, P->nconst);
    M->nrows = rows + 2;   /* + a sink row and a scratch row */
    uint32_t sink = rows;
    for (uint32_t pc = 0; pc < P->ncode; pc++) {
        insn_t *in = &P->code[pc];
        uint32_t *rs[9] = {&in->d[0], &in->d[1], &in->d[2], &in->d[3], &in->s[0], &in->s[1], &in->s[2], &in->s[3], &in->s[4]};
        for (int k = 0; k < 9; k++) {
            uint32_t v = *rs[k];
            if (v == UINT32_MAX) { if (k < 4) *rs[k] = sink; continue; }
            if (v & CONSTBIT) *rs[k] = M->nrows + (v & ~CONSTBIT);
        }
    }
    M->nconst = P->nconst;
    M->constrows = malloc(((size_t)P->nconst + 1) * 32 * sizeof(uint64_t));
    if (!M->constrows) return perr(P, PTX_E_OUT_OF_MEMORY, "out of memory");
    for (uint32_t i = 0; i < P->nconst; i++)
        for (int l = 0; l < 32; l++) M->constrows[(size_t)i * 32 + l] = P->consts[i];
    /* call graph: frames and recursion */
    size_t maxl = 0;
    int rec = 0;
    pfunc **stack = malloc(((size_t)P->nfuncs + 1) * sizeof *stack);
    if (!stack) return perr(P, PTX_E_OUT_OF_MEMORY, "out of memory");
    for (int i = 0; i < P->nfuncs; i++)
        if (P->funcs[i]->defined && P->funcs[i]->is_entry) {
            size_t c = chain(P, P->funcs[i], &rec, stack, 0);
            if (c > maxl) maxl = c;
            if (c > ((size_t)512 << 10)) {   /* a GPU thread's local memory: ptxas refuses more */
                free(stack);
                return perr(P, PTX_E_INVALID_PTX, "kernel '%s' uses %zu bytes of local memory per thread (at most 524288)",
                            P->funcs[i]->name, c);
            }
        }
    free(stack);
    for (int i = 0; i < P->ncalls; i++)
        if (P->calls[i].indirect) rec = 1;   /* callees unknown: the recursion allowance of local memory */
    for (int i = 0; i < P->nfuncs; i++)
        if (P->funcs[i]->recursive) rec = 1;
    M->has_recursion = rec;
    M->local_per_lane = align_up(maxl + (rec ? 16384 : 0), 16);
    if (!M->local_per_lane) M->local_per_lane = 16;
    return 0;
}

static void set_kernel_info(struct ptx_module *M, struct ptx_kernel *k)
{
    pfunc *f = k->f;
    ptx_kernel_info *in = &k->info;
    memset(in, 0, sizeof *in);
    in->name = f->name;
    k->param_off = calloc((size_t)f->nparams + 1, sizeof *k->param_off);
    k->param_size = calloc((size_t)f->nparams + 1, sizeof *k->param_size);
    uint32_t end = 0, maxal = 1;
    for (int i = 0; i < f->nparams && k->param_off && k->param_size; i++) {
        k->param_off[i] = f->params[i].off;
        k->param_size[i] = (uint32_t)f->params[i].size;
        if (f->params[i].off + f->params[i].size > end) end = f->params[i].off + (uint32_t)f->params[i].size;
        if (f->params[i].align > maxal) maxal = (uint32_t)f->params[i].align;
    }
    k->param_bytes = (uint32_t)align_up(end, maxal);
    in->nparams = f->nparams;
    in->param_offset = k->param_off;
    in->param_size = k->param_size;
    in->param_bytes = k->param_bytes;
    in->static_smem = f->smem;
    in->local_bytes = f->maxchain;
    size_t cb = 0;
    for (int i = 0; i < M->nglobals; i++) if (M->globals[i]->space == SP_CONST) cb += M->globals[i]->size;
    in->const_bytes = cb;
    uint32_t regs = f->est_regs;   /* a callee has its own registers (the ABI saves the caller's) */
    for (int i = 0; i < f->ncallees; i++) if (M->funcs[f->callees[i]]->est_regs > regs) regs = M->funcs[f->callees[i]]->est_regs;
    regs = regs < 16 ? 16 : regs > 255 ? 255 : regs;
    if (f->maxnreg && regs > f->maxnreg) regs = f->maxnreg;   /* ptxas spills to stay within it */
    in->num_regs = (int)regs;
    memcpy(in->maxntid, f->maxntid, sizeof in->maxntid);
    memcpy(in->reqntid, f->reqntid, sizeof in->reqntid);
    in->minnctapersm = f->minnctapersm;
    in->max_threads_per_block = 1024;
    if (f->maxntid[0]) in->max_threads_per_block = (int)(f->maxntid[0] * f->maxntid[1] * f->maxntid[2]);
    if (f->reqntid[0]) in->max_threads_per_block = (int)(f->reqntid[0] * f->reqntid[1] * f->reqntid[2]);
    if (in->max_threads_per_block > 1024) in->max_threads_per_block = 1024;
    in->ptx_version = M->ptx_version;
    in->target_sm = M->target_sm;
}

/* What the driver's JIT links in without being asked: __assertfail, which CUDA C's assert() calls (NVRTC
 * code numba links for its runtime calls it), vprintf, device printf (numba's print()), and the device
 * heap's malloc / free (numba's runtime allocates arrays made in a kernel with them).  Each is a
 * small PTX function whose `trap` carries the arguments' registers and says which built-in it is (aop 1:
 * h_trap prints CUDA's assertion line and fails the launch with CUDA_ERROR_ASSERT; aop 2: h_trap formats
 * and prints, returning the count in the destination row; aop 3 / 4: malloc / free). */
static const struct builtin {
    const char *name, *text;
    int aop;
    uint32_t s[4], d;   /* the trap's operand rows (function-relative) */
} BUILTINS[] = {
    {"__assertfail",
     ".version 6.0\n.target sm_50\n.address_size 64\n"
     ".weak .func __assertfail(.param .b64 message, .param .b64 file, .param .b32 line, .param .b64 function, "
     ".param .b64 char_size)\n{\n.reg .b64 %rd<4>;\n.reg .b32 %r<2>;\n"
     "ld.param.b64 %rd1, [message];\nld.param.b64 %rd2, [file];\nld.param.b32 %r1, [line];\n"
     "ld.param.b64 %rd3, [function];\ntrap;\nret;\n}\n",
     1, {1, 2, 5, 3}, UINT32_MAX},                          /* %rd1 %rd2 %r1 %rd3: rows 1, 2, 4 + 1, 3 */
    {"vprintf",
     ".version 6.0\n.target sm_50\n.address_size 64\n"
     ".weak .func (.param .b32 status) vprintf(.param .b64 format, .param .b64 args)\n{\n"
     ".reg .b64 %rd<3>;\n.reg .b32 %r<2>;\n"
     "ld.param.b64 %rd1, [format];\nld.param.b64 %rd2, [args];\ntrap;\nst.param.b32 [status], %r1;\nret;\n}\n",
     2, {1, 2, 0, 0}, 4},                                   /* %rd1 %rd2 -> %r1: rows 1, 2 -> 3 + 1 */
    {"malloc",
     ".version 6.0\n.target sm_50\n.address_size 64\n"
     ".weak .func (.param .b64 ptr) malloc(.param .b64 size)\n{\n.reg .b64 %rd<3>;\n"
     "ld.param.b64 %rd1, [size];\ntrap;\nst.param.b64 [ptr], %rd2;\nret;\n}\n",
     3, {1, 0, 0, 0}, 2},                                   /* %rd1 -> %rd2 */
    {"free",
     ".version 6.0\n.target sm_50\n.address_size 64\n"
     ".weak .func free(.param .b64 ptr)\n{\n.reg .b64 %rd<2>;\nld.param.b64 %rd1, [ptr];\ntrap;\nret;\n}\n",
     4, {1, 0, 0, 0}, UINT32_MAX},                          /* %rd1 */
};

static void add_builtins(parser *P, int ntexts)
{
    for (size_t b = 0; b < sizeof BUILTINS / sizeof *BUILTINS && !P->err; b++) {
        int declared = 0, defined = 0;
        for (int i = 0; i < P->nfuncs; i++)
            if (!strcmp(P->funcs[i]->name, BUILTINS[b].name)) {
                if (P->funcs[i]->defined) defined = 1;
                declared = 1;
            }
        if (!declared || defined) continue;
        int version = P->version, target = P->target;
        P->text = ntexts;
        P->src = P->p = BUILTINS[b].text;
        P->end = BUILTINS[b].text + strlen(BUILTINS[b].text);
        P->line = 1;
        P->tline = 0;
        if (parse_text(P)) return;
        P->version = version; P->target = target;   /* the program's, not the built-in's */
        pfunc *f = P->funcs[P->nfuncs - 1];
        int trap = key_lookup("trap");
        for (uint32_t pc = f->pc0; pc < f->pc1; pc++)
            if (P->code[pc].h == trap) {
                insn_t *in = &P->code[pc];
                in->aop = (uint8_t)BUILTINS[b].aop;
                memcpy(in->s, BUILTINS[b].s, sizeof BUILTINS[b].s);
                in->d[0] = BUILTINS[b].d;
            }
    }
}

int ptx_program_build(const char *const *texts, const size_t *len, int n, const ptx_env *env,
                      ptx_module **out, char *err, size_t errlen)
{
    if (err && errlen) err[0] = 0;
    if (!out || n <= 0 || !texts) {
        if (err && errlen) snprintf(err, errlen, "no PTX text");
        return PTX_E_INVALID_VALUE;
    }
    *out = NULL;
    pthread_once(&g_keys_once, keys_init);
    if (!g_keypool) return PTX_E_OUT_OF_MEMORY;
    struct ptx_module *M = calloc(1, sizeof *M);
    parser *P = calloc(1, sizeof *P);
    if (!M || !P) { free(M); free(P); return PTX_E_OUT_OF_MEMORY; }
    P->M = M; P->env = env; P->msg = err; P->msglen = errlen;
    M->env = env;
    for (int i = 0; i < n && !P->err; i++) {
        if (!texts[i]) { perr(P, PTX_E_INVALID_VALUE, "PTX text %d is NULL", i + 1); break; }
        P->text = i;
        P->src = P->p = texts[i];
        P->end = texts[i] + (len && len[i] ? len[i] : strlen(texts[i]));
        P->line = 1;
        P->tline = 0;
        if (!len || !len[i]) P->end = texts[i] + strlen(texts[i]);
        parse_text(P);
    }
    if (!P->err) add_builtins(P, n);
    if (!P->err) link_program(P);
    M->code = P->code; M->ncode = P->ncode;
    M->funcs = P->funcs; M->nfuncs = P->nfuncs;
    M->consts = P->consts;
    M->strs = P->strs; M->nstrs = P->nstrs;
    M->ptx_version = P->version; M->target_sm = P->target;
    /* call sites live after the code as a side table: keep them in the module */
    M->kernels = NULL;
    extern void ptx_exec_set_calls(struct ptx_module *, void *, int);
    ptx_exec_set_calls(M, P->calls, P->ncalls);
    P->calls = NULL;
    if (!P->err) {
        int nk = 0;
        for (int i = 0; i < P->nfuncs; i++) if (P->funcs[i]->is_entry && P->funcs[i]->defined) nk++;
        M->kernels = calloc((size_t)nk + 1, sizeof *M->kernels);
        if (!M->kernels) perr(P, PTX_E_OUT_OF_MEMORY, "out of memory");
        for (int i = 0; i < P->nfuncs && !P->err; i++) {
            pfunc *f = P->funcs[i];
            if (!f->is_entry || !f->defined) continue;
            struct ptx_kernel *k = &M->kernels[M->nkernels++];
            k->f = f; k->m = M;
            set_kernel_info(M, k);
        }
    }
    /* symbols: the module keeps them (globals point into them) */
    M->globals = M->globals;
    int code = P->err;
    for (int i = 0; i < REGBUCKETS; i++) {
        regent *r = P->regs[i];
        while (r) { regent *nx = r->next; free(r); r = nx; }
    }
    free(P->constsym);
    free(P->regpred);
    free(P->rstack); free(P->regw); free(P->scopemarks); free(P->fscope); free(P->labels); free(P->fx);
    /* the psyms: keep for globals (names); free the table */
    extern void ptx_module_keep_syms(struct ptx_module *, psym **, int);
    ptx_module_keep_syms(M, P->tsyms, P->ntsyms);
    free(P);
    if (code) { ptx_module_free(M); return code; }
    *out = M;
    return PTX_OK;
}

int ptx_module_get_kernel(const ptx_module *m, const char *name, const ptx_kernel **out)
{
    if (!m || !name || !out) return PTX_E_INVALID_VALUE;
    for (int i = 0; i < m->nkernels; i++)
        if (!strcmp(m->kernels[i].f->name, name)) { *out = &m->kernels[i]; return PTX_OK; }
    return PTX_E_NOT_FOUND;
}

int ptx_module_kernel_count(const ptx_module *m) { return m ? m->nkernels : 0; }

const ptx_kernel *ptx_module_kernel_at(const ptx_module *m, int i)
{
    return m && i >= 0 && i < m->nkernels ? &m->kernels[i] : NULL;
}

int ptx_module_get_global(const ptx_module *m, const char *name, uint64_t *addr, size_t *size)
{
    if (!m || !name) return PTX_E_INVALID_VALUE;
    for (int i = 0; i < m->nglobals; i++) {
        psym *s = m->globals[i];
        if (!strcmp(s->name, name)) {
            if (addr) *addr = s->addr;
            if (size) *size = s->size;
            return PTX_OK;
        }
    }
    return PTX_E_NOT_FOUND;
}

void ptx_kernel_get_info(const ptx_kernel *k, ptx_kernel_info *out)
{
    if (k && out) *out = k->info;
}
