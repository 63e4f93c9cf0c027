/* The libnvJitLink.so.13 stand-in (`python -m accel emu`, issue 32): nvJitLink's API, linking what
 * numba-cuda and cuda.core hand it into accel's linked image (emu_ptxpack.h) instead of a SASS cubin, so
 * that the PTX reaches the emulator, which executes PTX only.  cuda.bindings looks each function up with
 * dlsym(RTLD_DEFAULT) before it asks cuda.pathfinder, and cuda.pathfinder takes a library already loaded
 * under the soname libnvJitLink.so.13 before any it finds on disk: preloaded, this one wins both ways.
 *
 * What it does with the inputs: PTX is kept as it is; an accel image's texts, a fatbin's (or a host
 * object's, or an archive's) PTX entry for the highest target not above -arch are taken out; a SASS
 * cubin is refused (NVJITLINK_ERROR_INVALID_INPUT, the error log says why).  LTO-IR (numba-cuda links
 * LTO-IR by default when nvJitLink is there) is handed to the real nvJitLink, loaded privately from
 * ACCEL_EMU_NVJITLINK (accel.emu sets it), linked with -lto -ptx into one PTX text (its -ptx output:
 * nothing else of the real one is used); without a real nvJitLink, LTO-IR is refused.  The symbols
 * are not resolved here: the driver links the texts when it loads the image (its unresolved .extern is
 * CUDA_ERROR_INVALID_PTX there).  Options are checked against what nvJitLink documents; the ones that
 * steer code generation go to the real nvJitLink for LTO-IR and have no effect on PTX.
 * nvJitLinkVersion reports the real nvJitLink's version (LTO-IR producers compare theirs with it), else
 * 13.0, the emulated runtime's CUDA version.  Exports: the plain names (what cuda.bindings looks up) and the names
 * nvJitLink.h's inline wrappers call in C programs (__nvJitLinkCreate_13_5 ...), for every CUDA 13 minor
 * version, all with the version node libnvJitLink.so.13.
 *
 * Self-contained: the emulator is not needed to link. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu_ptxpack.h"

#define EXPORT __attribute__((visibility("default")))

/* nvJitLink.h's values */
typedef enum {
    NVJITLINK_SUCCESS = 0,
    NVJITLINK_ERROR_UNRECOGNIZED_OPTION = 1,
    NVJITLINK_ERROR_MISSING_ARCH = 2,
    NVJITLINK_ERROR_INVALID_INPUT = 3,
    NVJITLINK_ERROR_PTX_COMPILE = 4,
    NVJITLINK_ERROR_NVVM_COMPILE = 5,
    NVJITLINK_ERROR_INTERNAL = 6,
    NVJITLINK_ERROR_LTO_NOT_ENABLED = 18,
} nvJitLinkResult;

typedef enum {
    NVJITLINK_INPUT_NONE = 0,
    NVJITLINK_INPUT_CUBIN = 1,
    NVJITLINK_INPUT_PTX = 2,
    NVJITLINK_INPUT_LTOIR = 3,
    NVJITLINK_INPUT_FATBIN = 4,
    NVJITLINK_INPUT_OBJECT = 5,
    NVJITLINK_INPUT_LIBRARY = 6,
    NVJITLINK_INPUT_INDEX = 7,
    NVJITLINK_INPUT_ANY = 10,
} nvJitLinkInputType;

#define NVJITLINK_MAJOR 13
#define NVJITLINK_MINOR 0

typedef struct link {
    ptxpack pack;
    int nopts;              /* the options, for the real nvJitLink (LTO-IR) */
    char **opts;
    int nlto;               /* LTO-IR inputs (copies) */
    unsigned char **lto;
    size_t *lto_size;
    char **lto_name;
    int want_ptx;           /* -ptx: the linked PTX is the result */
    unsigned maxreg;        /* -maxrregcount=N, or 0 */
    int complete;
    unsigned char *image;   /* after nvJitLinkComplete */
    size_t image_size;
    char *error_log, *info_log;
} link;

typedef link *nvJitLinkHandle;

/* The real nvJitLink (ACCEL_EMU_NVJITLINK), for LTO-IR only; it is linked -Bsymbolic, so it never calls
 * back into this stand-in. */
typedef void *real_handle;
static struct {
    nvJitLinkResult (*create)(real_handle *, uint32_t, const char **);
    nvJitLinkResult (*destroy)(real_handle *);
    nvJitLinkResult (*add_data)(real_handle, nvJitLinkInputType, const void *, size_t, const char *);
    nvJitLinkResult (*complete)(real_handle);
    nvJitLinkResult (*ptx_size)(real_handle, size_t *);
    nvJitLinkResult (*ptx)(real_handle, char *);
    nvJitLinkResult (*log_size)(real_handle, size_t *);
    nvJitLinkResult (*log)(real_handle, char *);
    nvJitLinkResult (*version)(unsigned *, unsigned *);
} real;
static pthread_once_t real_once = PTHREAD_ONCE_INIT;
static char real_error[600];

static void load_real(void)
{
    const char *path = getenv("ACCEL_EMU_NVJITLINK");
    if (!path || !*path) {
        snprintf(real_error, sizeof real_error, "no real nvJitLink to turn LTO-IR into PTX (ACCEL_EMU_NVJITLINK "
                 "is not set: `python -m accel emu` sets it when an nvJitLink wheel or toolkit is installed)");
        return;
    }
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(real_error, sizeof real_error, "cannot load ACCEL_EMU_NVJITLINK=%s: %s", path, dlerror());
        return;
    }
    *(void **)&real.create = dlsym(h, "nvJitLinkCreate");
    *(void **)&real.destroy = dlsym(h, "nvJitLinkDestroy");
    *(void **)&real.add_data = dlsym(h, "nvJitLinkAddData");
    *(void **)&real.complete = dlsym(h, "nvJitLinkComplete");
    *(void **)&real.ptx_size = dlsym(h, "nvJitLinkGetLinkedPtxSize");
    *(void **)&real.ptx = dlsym(h, "nvJitLinkGetLinkedPtx");
    *(void **)&real.log_size = dlsym(h, "nvJitLinkGetErrorLogSize");
    *(void **)&real.log = dlsym(h, "nvJitLinkGetErrorLog");
    *(void **)&real.version = dlsym(h, "nvJitLinkVersion");
    if (!real.create || !real.destroy || !real.add_data || !real.complete || !real.ptx_size || !real.ptx
        || !real.log_size || !real.log || !real.version) {
        snprintf(real_error, sizeof real_error, "ACCEL_EMU_NVJITLINK=%s is not nvJitLink 12.3 or newer", path);
        real.create = NULL;
    }
}

static int have_real(void)
{
    pthread_once(&real_once, load_real);
    return real.create != NULL;
}

static void log_append(char **log, const char *line)
{
    size_t old = *log ? strlen(*log) : 0, n = strlen(line);
    char *s = realloc(*log, old + n + 2);
    if (!s) return;     /* the log is best effort; the result code says what happened */
    memcpy(s + old, line, n);
    s[old + n] = '\n';
    s[old + n + 1] = 0;
    *log = s;
}

/* A refusal: its line (printf-style) appended to l's error log, and its code returned. */
__attribute__((format(printf, 3, 4)))
static nvJitLinkResult refuse(link *l, nvJitLinkResult rc, const char *fmt, ...)
{
    char line[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    log_append(&l->error_log, line);
    return rc;
}

/* Options nvJitLink documents.  "=" at the end: a value follows. */
static const char *const known_options[] = {
    "-arch=", "-maxrregcount=", "-time", "-verbose", "-lto", "-ptx", "-O", "-g", "-lineinfo", "-ftz=",
    "-prec-div=", "-prec-sqrt=", "-fma=", "-kernels-used=", "-variables-used=", "-optimize-unused-variables",
    "-Xptxas=", "-Xnvvm=", "-split-compile=", "-split-compile-extended=", "-jump-table-density=", "-no-cache",
    "-device-stack-protector=", "-Werror", "-w",
};

static int option_known(const char *o)
{
    for (size_t i = 0; i < sizeof known_options / sizeof *known_options; i++) {
        const char *k = known_options[i];
        size_t n = strlen(k);
        if (k[n - 1] == '=') {
            if (strncmp(o, k, n) == 0) return 1;
        } else if (strcmp(k, "-O") == 0) {
            if (o[0] == '-' && o[1] == 'O' && o[2] >= '0' && o[2] <= '9' && !o[3]) return 1;
        } else if (strcmp(o, k) == 0) {
            return 1;
        }
    }
    return 0;
}

/* "sm_90", "sm_90a", "sm_100f" -> 90, 90, 100; 0 when malformed. */
static int parse_arch(const char *v)
{
    if (strncmp(v, "sm_", 3) != 0) return 0;
    int n = 0, digits = 0;
    for (v += 3; *v >= '0' && *v <= '9' && digits < 5; v++, digits++) n = n * 10 + (*v - '0');
    if (digits < 2 || (*v && !((*v == 'a' || *v == 'f') && !v[1]))) return 0;
    return n;
}

EXPORT nvJitLinkResult nvJitLinkCreate(nvJitLinkHandle *handle, uint32_t numOptions, const char **options)
{
    if (!handle || (numOptions && !options)) return NVJITLINK_ERROR_INVALID_INPUT;
    *handle = NULL;
    link *l = calloc(1, sizeof *l);
    if (!l) return NVJITLINK_ERROR_INTERNAL;
    nvJitLinkResult rc = NVJITLINK_SUCCESS;
    if (numOptions && !(l->opts = calloc(numOptions, sizeof *l->opts))) rc = NVJITLINK_ERROR_INTERNAL;
    for (uint32_t i = 0; i < numOptions && rc == NVJITLINK_SUCCESS; i++) {
        const char *o = options[i];
        if (!o || !option_known(o)) {
            rc = refuse(l, NVJITLINK_ERROR_UNRECOGNIZED_OPTION, "ERROR: unrecognized option '%s' (accel's nvJitLink "
                        "stand-in)", o ? o : "(null)");
        } else if (strncmp(o, "-arch=", 6) == 0) {
            l->pack.arch = parse_arch(o + 6);
            if (!l->pack.arch)
                rc = refuse(l, NVJITLINK_ERROR_UNRECOGNIZED_OPTION, "ERROR: -arch expects sm_XX (e.g. sm_90), got '%s'",
                            o + 6);
        } else if (strcmp(o, "-ptx") == 0) {
            l->want_ptx = 1;
        } else if (strncmp(o, "-maxrregcount=", 14) == 0) {
            char *end;
            unsigned long v = strtoul(o + 14, &end, 10);
            if (!o[14] || *end || v == 0 || v > 255) {
                rc = refuse(l, NVJITLINK_ERROR_UNRECOGNIZED_OPTION, "ERROR: -maxrregcount expects a number of "
                            "registers from 1 to 255, got '%.100s'", o + 14);
            }
            l->maxreg = (unsigned)v;
        }
        if (rc == NVJITLINK_SUCCESS && strcmp(o, "-ptx") && strcmp(o, "-lto")) {
            if (!(l->opts[l->nopts++] = strdup(o))) rc = NVJITLINK_ERROR_INTERNAL;
        }
    }
    if (rc == NVJITLINK_SUCCESS && !l->pack.arch)
        rc = refuse(l, NVJITLINK_ERROR_MISSING_ARCH, "ERROR: -arch=sm_XX is required");
    /* as nvJitLink does, a failed create still hands back a handle whose error log says why */
    *handle = l;
    return rc;
}

EXPORT nvJitLinkResult nvJitLinkDestroy(nvJitLinkHandle *handle)
{
    if (!handle) return NVJITLINK_ERROR_INVALID_INPUT;
    link *l = *handle;
    if (l) {
        ptxpack_free(&l->pack);
        for (int i = 0; i < l->nopts; i++) free(l->opts[i]);
        free(l->opts);
        for (int i = 0; i < l->nlto; i++) {
            free(l->lto[i]);
            free(l->lto_name[i]);
        }
        free(l->lto);
        free(l->lto_size);
        free(l->lto_name);
        free(l->image);
        free(l->error_log);
        free(l->info_log);
        free(l);
    }
    *handle = NULL;
    return NVJITLINK_SUCCESS;
}

/* A copy of an LTO-IR input, linked at nvJitLinkComplete. */
static nvJitLinkResult keep_lto(link *l, const void *data, size_t size, const char *name)
{
    int n = l->nlto + 1;
    unsigned char **lto = realloc(l->lto, n * sizeof *lto);
    if (lto) l->lto = lto;
    size_t *sizes = lto ? realloc(l->lto_size, n * sizeof *sizes) : NULL;
    if (sizes) l->lto_size = sizes;
    char **names = sizes ? realloc(l->lto_name, n * sizeof *names) : NULL;
    if (names) l->lto_name = names;
    unsigned char *copy = names ? malloc(size) : NULL;
    char *name_copy = copy ? strdup(name) : NULL;
    if (!name_copy) {
        free(copy);
        return NVJITLINK_ERROR_INTERNAL;
    }
    memcpy(copy, data, size);
    l->lto[l->nlto] = copy;
    l->lto_size[l->nlto] = size;
    l->lto_name[l->nlto++] = name_copy;
    return NVJITLINK_SUCCESS;
}

/* The LTO-IR inputs, linked by the real nvJitLink with -lto -ptx into one PTX text added to the pack;
 * its error log is appended to this link's. */
static nvJitLinkResult link_lto(link *l)
{
    const char **opts = calloc(l->nopts + 2, sizeof *opts);
    if (!opts) return NVJITLINK_ERROR_INTERNAL;
    for (int i = 0; i < l->nopts; i++) opts[i] = l->opts[i];
    opts[l->nopts] = "-lto";
    opts[l->nopts + 1] = "-ptx";
    real_handle h = NULL;
    nvJitLinkResult rc = real.create(&h, (uint32_t)l->nopts + 2, opts);
    for (int i = 0; i < l->nlto && rc == NVJITLINK_SUCCESS; i++)
        rc = real.add_data(h, NVJITLINK_INPUT_LTOIR, l->lto[i], l->lto_size[i], l->lto_name[i]);
    if (rc == NVJITLINK_SUCCESS) rc = real.complete(h);
    size_t n = 0;
    char *ptx = NULL;
    if (rc == NVJITLINK_SUCCESS) rc = real.ptx_size(h, &n);
    if (rc == NVJITLINK_SUCCESS && !(ptx = malloc(n ? n : 1))) rc = NVJITLINK_ERROR_INTERNAL;
    if (rc == NVJITLINK_SUCCESS) rc = real.ptx(h, ptx);
    if (rc == NVJITLINK_SUCCESS) {
        char err[512];
        if (ptxpack_add(&l->pack, PK_PTX, ptx, n, "the LTO-IR's PTX", err, sizeof err)) {
            log_append(&l->error_log, err);
            rc = NVJITLINK_ERROR_INTERNAL;
        }
    } else if (h && real.log_size(h, &n) == NVJITLINK_SUCCESS && n > 1) {
        char *log = malloc(n);
        if (log && real.log(h, log) == NVJITLINK_SUCCESS) log_append(&l->error_log, log);
        free(log);
    }
    free(ptx);
    if (h) real.destroy(&h);
    free(opts);
    return rc;
}

static nvJitLinkResult add(link *l, nvJitLinkInputType type, const void *data, size_t size, const char *name)
{
    char err[1024];
    ptxpack_kind kind, sniffed = ptxpack_sniff(data, size);
    if (!name || !*name) name = "(unnamed input)";
    if (l->complete) return refuse(l, NVJITLINK_ERROR_INVALID_INPUT, "ERROR: input added after nvJitLinkComplete");
    switch (type) {
    case NVJITLINK_INPUT_PTX: kind = sniffed == PK_NVVM ? PK_NVVM : PK_PTX; break;
    case NVJITLINK_INPUT_CUBIN: kind = sniffed == PK_IMAGE ? PK_IMAGE : PK_ELF_SASS; break;
    case NVJITLINK_INPUT_LTOIR: kind = PK_NVVM; break;
    case NVJITLINK_INPUT_FATBIN: kind = PK_FATBIN; break;
    case NVJITLINK_INPUT_OBJECT: kind = sniffed == PK_ELF_SASS ? PK_ELF_SASS : PK_ELF_HOST; break;
    case NVJITLINK_INPUT_LIBRARY: kind = PK_ARCHIVE; break;
    case NVJITLINK_INPUT_ANY: kind = sniffed; break;
    default:
        return refuse(l, NVJITLINK_ERROR_INVALID_INPUT, "ERROR: %s: input type %d is not one accel's emulator can link "
                      "(PTX, accel's image, fatbins and host objects holding PTX)", name, (int)type);
    }
    if (kind == PK_NVVM && have_real()) return keep_lto(l, data, size, name);
    if (kind == PK_NVVM) return refuse(l, NVJITLINK_ERROR_INVALID_INPUT, "ERROR: %s is LTO-IR: %s", name, real_error);
    if (ptxpack_add(&l->pack, kind, data, size, name, err, sizeof err))
        return refuse(l, NVJITLINK_ERROR_INVALID_INPUT, "ERROR: %s", err);
    return NVJITLINK_SUCCESS;
}

EXPORT nvJitLinkResult nvJitLinkAddData(nvJitLinkHandle handle, nvJitLinkInputType inputType, const void *data,
                                        size_t size, const char *name)
{
    if (!handle || !data || !size) return NVJITLINK_ERROR_INVALID_INPUT;
    return add(handle, inputType, data, size, name);
}

EXPORT nvJitLinkResult nvJitLinkAddFile(nvJitLinkHandle handle, nvJitLinkInputType inputType, const char *fileName)
{
    if (!handle || !fileName) return NVJITLINK_ERROR_INVALID_INPUT;
    FILE *f = fopen(fileName, "rb");
    long size = -1;
    if (f && fseek(f, 0, SEEK_END) == 0) size = ftell(f);
    int opened = size > 0 && fseek(f, 0, SEEK_SET) == 0;
    unsigned char *buf = opened ? malloc((size_t)size) : NULL;
    size_t got = buf ? fread(buf, 1, (size_t)size, f) : 0;
    if (f) fclose(f);
    if (!buf || got != (size_t)size) {
        free(buf);
        return refuse(handle, opened && !buf ? NVJITLINK_ERROR_INTERNAL : NVJITLINK_ERROR_INVALID_INPUT,
                      "ERROR: cannot read '%s'", fileName);
    }
    nvJitLinkResult rc = add(handle, inputType, buf, got, fileName);
    free(buf);
    return rc;
}

/* -maxrregcount=N is ptxas's, so the PTX the emulator receives would lose it (NVVM's PTX carries no
 * .maxnreg): each kernel of the pack's texts gets `.maxnreg N` after its parameter list, which the engine
 * honours as ptxas does (cuFuncGetAttribute's NUM_REGS stays within it).  0, or -1 out of memory. */
static int add_maxnreg(ptxpack *p, unsigned maxreg)
{
    char dir[32];
    int dl = snprintf(dir, sizeof dir, "\n.maxnreg %u\n", maxreg);
    for (int i = 0; i < p->count; i++) {
        const char *t = p->text[i], *end = t + p->len[i];
        size_t entries = 0;
        for (const char *q = t; (q = strstr(q, ".entry")); q += 6) entries++;
        if (!entries) continue;
        char *out = malloc(p->len[i] + entries * (size_t)dl + 1), *o = out;
        if (!out) return -1;
        const char *q = t;
        for (const char *e; (e = strstr(q, ".entry")); ) {
            const char *c = e + 6;
            while (c < end && *c != '(' && *c != '{' && *c != ';') c++;    /* past the name */
            if (c < end && *c == '(') {
                while (c < end && *c != ')') c++;
                if (c < end) c++;
            }
            const char *after = c;
            while (after < end && (*after == ' ' || *after == '\t' || *after == '\n' || *after == '\r')) after++;
            memcpy(o, q, (size_t)(c - q));
            o += c - q;
            if (after < end && *after != ';') {     /* a definition, not a declaration */
                memcpy(o, dir, (size_t)dl);
                o += dl;
            }
            q = c;
        }
        memcpy(o, q, (size_t)(end - q));
        o += end - q;
        *o = 0;
        free(p->text[i]);
        p->text[i] = out;
        p->len[i] = (size_t)(o - out);
    }
    return 0;
}

EXPORT nvJitLinkResult nvJitLinkComplete(nvJitLinkHandle handle)
{
    if (!handle) return NVJITLINK_ERROR_INVALID_INPUT;
    if (handle->complete) return NVJITLINK_SUCCESS;
    if (handle->nlto) {
        nvJitLinkResult rc = link_lto(handle);
        if (rc != NVJITLINK_SUCCESS) return rc;
    }
    if (!handle->pack.count)
        return refuse(handle, NVJITLINK_ERROR_INVALID_INPUT, "ERROR: nothing to link (no PTX was added)");
    if (handle->maxreg && add_maxnreg(&handle->pack, handle->maxreg)) return NVJITLINK_ERROR_INTERNAL;
    size_t n = ptxpack_image_size(&handle->pack);
    unsigned char *image = malloc(n);
    if (!image) return NVJITLINK_ERROR_INTERNAL;
    ptxpack_image_write(&handle->pack, image);
    handle->image = image;
    handle->image_size = n;
    handle->complete = 1;
    char line[200];
    snprintf(line, sizeof line, "accel's nvJitLink stand-in: %d PTX text%s for sm_%d in accel's image (%zu "
             "bytes); the emulator links them when the image is loaded", handle->pack.count,
             handle->pack.count == 1 ? "" : "s", handle->pack.arch, n);
    log_append(&handle->info_log, line);
    return NVJITLINK_SUCCESS;
}

EXPORT nvJitLinkResult nvJitLinkGetLinkedCubinSize(nvJitLinkHandle handle, size_t *size)
{
    if (!handle || !size || !handle->complete) return NVJITLINK_ERROR_INVALID_INPUT;
    *size = handle->image_size;
    return NVJITLINK_SUCCESS;
}

EXPORT nvJitLinkResult nvJitLinkGetLinkedCubin(nvJitLinkHandle handle, void *cubin)
{
    if (!handle || !cubin || !handle->complete) return NVJITLINK_ERROR_INVALID_INPUT;
    memcpy(cubin, handle->image, handle->image_size);
    return NVJITLINK_SUCCESS;
}

/* The linked PTX: one text can be handed back as it is; several are linked by the driver at load time
 * only (no single text holds them). */
static nvJitLinkResult linked_ptx(link *l)
{
    if (!l || !l->complete) return NVJITLINK_ERROR_INVALID_INPUT;
    if (l->pack.count != 1)
        return refuse(l, NVJITLINK_ERROR_INVALID_INPUT, "ERROR: accel's nvJitLink stand-in hands back linked PTX for "
                      "one PTX input only; several are linked by the emulator when it loads the cubin");
    return NVJITLINK_SUCCESS;
}

EXPORT nvJitLinkResult nvJitLinkGetLinkedPtxSize(nvJitLinkHandle handle, size_t *size)
{
    nvJitLinkResult rc = size ? linked_ptx(handle) : NVJITLINK_ERROR_INVALID_INPUT;
    if (rc == NVJITLINK_SUCCESS) *size = handle->pack.len[0] + 1;
    return rc;
}

EXPORT nvJitLinkResult nvJitLinkGetLinkedPtx(nvJitLinkHandle handle, char *ptx)
{
    nvJitLinkResult rc = ptx ? linked_ptx(handle) : NVJITLINK_ERROR_INVALID_INPUT;
    if (rc == NVJITLINK_SUCCESS) memcpy(ptx, handle->pack.text[0], handle->pack.len[0] + 1);
    return rc;
}

static nvJitLinkResult log_size(const char *log, size_t *size)
{
    if (!size) return NVJITLINK_ERROR_INVALID_INPUT;
    *size = (log ? strlen(log) : 0) + 1;
    return NVJITLINK_SUCCESS;
}

static nvJitLinkResult log_copy(const char *log, char *out)
{
    if (!out) return NVJITLINK_ERROR_INVALID_INPUT;
    strcpy(out, log ? log : "");
    return NVJITLINK_SUCCESS;
}

EXPORT nvJitLinkResult nvJitLinkGetErrorLogSize(nvJitLinkHandle handle, size_t *size)
{
    return handle ? log_size(handle->error_log, size) : NVJITLINK_ERROR_INVALID_INPUT;
}

EXPORT nvJitLinkResult nvJitLinkGetErrorLog(nvJitLinkHandle handle, char *log)
{
    return handle ? log_copy(handle->error_log, log) : NVJITLINK_ERROR_INVALID_INPUT;
}

EXPORT nvJitLinkResult nvJitLinkGetInfoLogSize(nvJitLinkHandle handle, size_t *size)
{
    return handle ? log_size(handle->info_log, size) : NVJITLINK_ERROR_INVALID_INPUT;
}

EXPORT nvJitLinkResult nvJitLinkGetInfoLog(nvJitLinkHandle handle, char *log)
{
    return handle ? log_copy(handle->info_log, log) : NVJITLINK_ERROR_INVALID_INPUT;
}

EXPORT nvJitLinkResult nvJitLinkVersion(unsigned int *major, unsigned int *minor)
{
    if (!major || !minor) return NVJITLINK_ERROR_INVALID_INPUT;
    if (have_real()) return real.version(major, minor);
    *major = NVJITLINK_MAJOR;
    *minor = NVJITLINK_MINOR;
    return NVJITLINK_SUCCESS;
}

/* Linked LTO-IR: only a link with -lto of LTO-IR inputs makes it, and this one refuses LTO-IR. */
EXPORT nvJitLinkResult nvJitLinkGetLinkedLTOIRSize(nvJitLinkHandle handle, size_t *size)
{
    if (!handle || !size) return NVJITLINK_ERROR_INVALID_INPUT;
    return refuse(handle, NVJITLINK_ERROR_LTO_NOT_ENABLED, "ERROR: accel's nvJitLink stand-in makes no LTO-IR (the "
                  "emulator executes PTX)");
}

EXPORT nvJitLinkResult nvJitLinkGetLinkedLTOIR(nvJitLinkHandle handle, void *ltoir)
{
    return nvJitLinkGetLinkedLTOIRSize(handle, ltoir ? &(size_t){0} : NULL);
}

/* __nvJitLink<name>_13_<minor>: what nvJitLink.h of CUDA 13.<minor> compiles a call of nvJitLink<name> to. */
#define ALIAS(name, minor) \
    EXPORT __typeof__(nvJitLink##name) __nvJitLink##name##_13_##minor __attribute__((alias("nvJitLink" #name)));
#define ALIASES(name) ALIAS(name, 0) ALIAS(name, 1) ALIAS(name, 2) ALIAS(name, 3) ALIAS(name, 4) \
    ALIAS(name, 5) ALIAS(name, 6) ALIAS(name, 7) ALIAS(name, 8) ALIAS(name, 9)
ALIASES(Create) ALIASES(Destroy) ALIASES(AddData) ALIASES(AddFile) ALIASES(Complete)
ALIASES(GetLinkedCubinSize) ALIASES(GetLinkedCubin) ALIASES(GetLinkedPtxSize) ALIASES(GetLinkedPtx)
ALIASES(GetLinkedLTOIRSize) ALIASES(GetLinkedLTOIR) ALIASES(GetErrorLogSize) ALIASES(GetErrorLog)
ALIASES(GetInfoLogSize) ALIASES(GetInfoLog)
