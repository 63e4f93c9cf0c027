/* accel's linked image, producers' side: collecting PTX texts from a linker's inputs and writing the
 * image (emu_ptxpack.h says what is accepted and refused).  The containers are read by the driver's
 * readers (ptx/ptx_image.h): a fatbin by ptx_image_decode (the PTX entry for the target, LZ4 and zstd
 * entries decompressed), accel's linked image by ptx_linked_walk, an ELF's sections by ptx_elf_sections;
 * the image is written by ptx_image_link_write.  What is read here, little-endian:
 *  - a file may hold several fatbins back to back (u32 magic 0xBA55ED50, u16 version, u16 header size,
 *    u64 payload size, then the entries), each aligned to 8 bytes.  Its wrapper (what
 *    __cudaRegisterFatBinary gets): u32 magic 0x466243b1, u32 version, then a pointer to the fatbin.
 *  - ELF64: e_machine at 18 (190: EM_CUDA, a GPU image); a host object's fatbin is its .nv_fatbin
 *    (or, for relocatable device code, __nv_relfatbin) section.
 *  - ar: "!<arch>\n", then members, each a 60-byte header (its size: decimal, bytes 48-57) and the data
 *    padded to an even size; members named "/", "//" or "/SYM64/" are the archive's own tables. */
#include "emu_ptxpack.h"
#include "ptx/ptx_image.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EM_CUDA 190

ptxpack_kind ptxpack_sniff(const void *data, size_t size)
{
    const unsigned char *b = data;
    if (size >= 8 && memcmp(b, PTX_IMAGE_MAGIC, 8) == 0) return PK_IMAGE;
    if (size >= 4 && (ptx_rd32(b) == PTX_FATBIN_MAGIC || ptx_rd32(b) == PTX_FATBIN_WRAPPER_MAGIC)) return PK_FATBIN;
    if (size >= 20 && memcmp(b, "\x7f" "ELF", 4) == 0) return ptx_rd16(b + 18) == EM_CUDA ? PK_ELF_SASS : PK_ELF_HOST;
    if (size >= 8 && memcmp(b, "!<arch>\n", 8) == 0) return PK_ARCHIVE;
    if (size >= 4 && (memcmp(b, "BC\xc0\xde", 4) == 0 || ptx_rd32(b) == 0x0B17C0DEu || ptx_rd32(b) == 0x7F4E43EDu))
        return PK_NVVM;     /* LLVM bitcode, its wrapper, NVVM's LTO-IR */
    return PK_PTX;
}

int ptxpack_target(const char *text, size_t len)
{
    static const char key[] = ".target";
    for (size_t i = 0; i + sizeof key < len; i++) {
        if (memcmp(text + i, key, sizeof key - 1) != 0) continue;
        size_t j = i + sizeof key - 1;
        while (j < len && (text[j] == ' ' || text[j] == '\t')) j++;
        if (j + 3 >= len || memcmp(text + j, "sm_", 3) != 0) return 0;
        int n = 0;
        for (j += 3; j < len && text[j] >= '0' && text[j] <= '9' && n < 100000; j++) n = n * 10 + (text[j] - '0');
        return n;
    }
    return 0;
}

/* Bytes of a PTX text: up to its first NUL; 0 when that is not PTX (no .version directive, or bytes a
 * text does not hold). */
static size_t ptx_text_len(const unsigned char *b, size_t size)
{
    size_t n = 0;
    while (n < size && b[n]) n++;
    for (size_t i = 0; i < n; i++)
        if (b[i] < 0x20 && b[i] != '\n' && b[i] != '\r' && b[i] != '\t' && b[i] != '\f' && b[i] != '\v') return 0;
    static const char key[] = ".version";
    for (size_t i = 0; i + sizeof key - 1 <= n; i++)
        if (memcmp(b + i, key, sizeof key - 1) == 0) return n;
    return 0;
}

/* A growing list of (pointer, length) of texts found in one input, committed to the pack only when the
 * whole input was read. */
#define MAX_FATBINS 64
typedef struct found {
    const unsigned char **p;
    size_t *n;
    int count, cap;
    ptx_image ims[MAX_FATBINS];     /* decoded fatbins: the texts p points into */
    int nims;
} found;

static int found_add(found *f, const unsigned char *p, size_t n)
{
    if (f->count == f->cap) {
        int cap = f->cap ? f->cap * 2 : 4;
        const unsigned char **np = realloc(f->p, (size_t)cap * sizeof *np);
        if (!np) return -1;
        f->p = np;
        size_t *nn = realloc(f->n, (size_t)cap * sizeof *nn);
        if (!nn) return -1;
        f->n = nn;
        f->cap = cap;
    }
    f->p[f->count] = p;
    f->n[f->count++] = n;
    return 0;
}

#define FAIL(...) do { snprintf(err, errlen, __VA_ARGS__); return -1; } while (0)

/* The PTX of one fatbin at b (at most `size` bytes), decoded by the driver's image reader (ptx_image.c:
 * the entry for the highest compute_XX not above `arch`, LZ4 and zstd entries decompressed); the texts
 * are copied into *im's keeping and listed in f.  *used receives the fatbin's size. */
static int read_fatbin(found *f, ptx_image *ims, int *nims, const unsigned char *b, size_t size, int arch,
                       size_t *used, const char *name, char *err, size_t errlen)
{
    if (size < 16 || ptx_rd32(b) != PTX_FATBIN_MAGIC) FAIL("%s: not a fatbin (no magic 0xBA55ED50)", name);
    if (!(*used = ptx_fatbin_size(b, size)))
        FAIL("%s: truncated fatbin (header %llu + payload %llu bytes, %zu given)", name,
             (unsigned long long)ptx_rd16(b + 6), (unsigned long long)ptx_rd64(b + 8), size);
    char why[400];
    ptx_image *im = &ims[*nims];
    int rc = ptx_image_decode(b, *used, arch, im, why, sizeof why);
    if (rc) {
        if (rc == PTX_IMAGE_E_NO_BINARY)
            FAIL("%s: %s: accel's emulator executes PTX only (its fatbin has no PTX for sm_%d or older)", name, why,
                 arch);
        FAIL("%s: %s", name, why);
    }
    ++*nims;
    for (int i = 0; i < im->n; i++)
        if (found_add(f, (const unsigned char *)im->text[i], im->len[i])) FAIL("%s: out of memory", name);
    return 0;
}

/* Every fatbin in [b, b + size): back to back, each aligned to 8 bytes, zero padding between. */
static int read_fatbins(found *f, const unsigned char *b, size_t size, int arch, const char *name,
                        char *err, size_t errlen)
{
    size_t off = 0;
    int any = 0;
    while (off + 16 <= size) {
        if (ptx_rd32(b + off) != PTX_FATBIN_MAGIC) {
            if (any && ptx_rd32(b + off) == 0) { off += 8; continue; }
            if (any) break;
            FAIL("%s: not a fatbin (no magic 0xBA55ED50)", name);
        }
        size_t used;
        if (f->nims == MAX_FATBINS) FAIL("%s: more than %d fatbins", name, MAX_FATBINS);
        if (read_fatbin(f, f->ims, &f->nims, b + off, size - off, arch, &used, name, err, errlen)) return -1;
        any = 1;
        off += (used + 7) & ~(size_t)7;
    }
    if (!any) FAIL("%s: not a fatbin (%zu bytes)", name, size);
    return 0;
}

/* A host object's .nv_fatbin / __nv_relfatbin sections, read by host_section. */
typedef struct {
    found *f;
    const unsigned char *b;
    size_t size;
    int arch, sections;
    const char *name;
    char *err;
    size_t errlen;
} host_elf;

static int host_section(void *ctx, const char *sname, uint64_t off, uint64_t sz)
{
    host_elf *h = ctx;
    char *err = h->err;
    size_t errlen = h->errlen;
    if (strcmp(sname, ".nv_fatbin") && strcmp(sname, "__nv_relfatbin")) return 0;
    if (off > h->size || sz > h->size - off) FAIL("%s: corrupt ELF section %s", h->name, sname);
    if (read_fatbins(h->f, h->b + off, sz, h->arch, h->name, err, errlen)) return -1;
    h->sections++;
    return 0;
}

static int read_host_elf(found *f, const unsigned char *b, size_t size, int arch, const char *name,
                         char *err, size_t errlen, int *none)
{
    host_elf h = { f, b, size, arch, 0, name, err, errlen };
    char why[200];
    *none = 0;
    if (size < 64) FAIL("%s: not a 64-bit little-endian ELF object", name);     /* 0 would trust the headers */
    int rc = ptx_elf_sections(b, size, host_section, &h, why, sizeof why);
    if (rc == PTX_IMAGE_E_INVALID_IMAGE) FAIL("%s: %s", name, why);
    if (rc) return -1;
    if (!h.sections) {
        *none = 1;
        FAIL("%s: the host object holds no fatbin (.nv_fatbin section)", name);
    }
    return 0;
}

static int read_archive(found *f, const unsigned char *b, size_t size, int arch, const char *name,
                        char *err, size_t errlen)
{
    size_t off = 8;
    int objects = 0;
    while (off + 60 <= size) {
        const unsigned char *h = b + off;
        char num[11];
        memcpy(num, h + 48, 10);
        num[10] = 0;
        char *endp;
        unsigned long long msize = strtoull(num, &endp, 10);
        if (endp == num || h[58] != '`' || h[59] != '\n' || msize > size - off - 60)
            FAIL("%s: corrupt archive member header at offset %zu", name, off);
        const unsigned char *m = h + 60;
        int table = h[0] == '/' && (h[1] == ' ' || h[1] == '/' || memcmp(h, "/SYM64/", 7) == 0);
        if (!table && msize >= 20 && memcmp(m, "\x7f" "ELF", 4) == 0 && ptx_rd16(m + 18) != EM_CUDA) {
            int none;
            if (read_host_elf(f, m, msize, arch, name, err, errlen, &none) && !none) return -1;
            objects += !none;
        }
        off += 60 + msize + (msize & 1);
    }
    if (!objects) FAIL("%s: no member of the archive holds a fatbin with PTX", name);
    return 0;
}

/* accel's linked image: its texts, each of which must be PTX. */
typedef struct { found *f; const char *name; char *err; size_t errlen; } linked;

static int linked_text(void *ctx, uint32_t i, const char *text, uint64_t n)
{
    linked *l = ctx;
    char *err = l->err;
    size_t errlen = l->errlen;
    if (ptx_text_len((const unsigned char *)text, n) != n)
        FAIL("%s: text %u of the accel image is not PTX", l->name, i);
    if (found_add(l->f, (const unsigned char *)text, n)) FAIL("%s: out of memory", l->name);
    return 0;
}

static int read_image(found *f, const unsigned char *b, size_t size, const char *name, char *err, size_t errlen)
{
    linked l = { f, name, err, errlen };
    char why[200];
    int rc = ptx_linked_walk(b, size, linked_text, &l, why, sizeof why);
    if (rc == PTX_IMAGE_E_INVALID_IMAGE) FAIL("%s: %s", name, why);
    return rc ? -1 : 0;
}

int ptxpack_add(ptxpack *p, ptxpack_kind kind, const void *data, size_t size, const char *name,
                char *err, size_t errlen)
{
    const unsigned char *b = data;
    static const found empty;
    found f = empty;
    int rc = 0, none;
    if (!name || !*name) name = "(unnamed input)";
    if (!data) FAIL("%s: no data", name);
    switch (kind) {
    case PK_PTX: {
        size_t n = ptx_text_len(b, size);
        if (!n) FAIL("%s: not PTX text (no .version directive, or binary bytes)", name);
        rc = found_add(&f, b, n) ? (snprintf(err, errlen, "%s: out of memory", name), -1) : 0;
        break;
    }
    case PK_IMAGE: rc = read_image(&f, b, size, name, err, errlen); break;
    case PK_FATBIN:
        if (size >= 16 && ptx_rd32(b) == PTX_FATBIN_WRAPPER_MAGIC) {
            const unsigned char *fb;
            memcpy(&fb, b + 8, sizeof fb);
            if (!fb) FAIL("%s: fatbin wrapper without a fatbin", name);
            if (ptx_rd32(fb) != PTX_FATBIN_MAGIC) FAIL("%s: the fatbin wrapper's data is not a fatbin", name);
            rc = read_fatbins(&f, fb, ptx_rd16(fb + 6) + ptx_rd64(fb + 8), p->arch, name, err, errlen);
        } else {
            rc = read_fatbins(&f, b, size, p->arch, name, err, errlen);
        }
        break;
    case PK_ELF_SASS:
        FAIL("%s is a SASS cubin (ELF for the GPU): accel's emulator executes PTX only (link the PTX instead)",
             name);
    case PK_ELF_HOST: rc = read_host_elf(&f, b, size, p->arch, name, err, errlen, &none); break;
    case PK_ARCHIVE: rc = read_archive(&f, b, size, p->arch, name, err, errlen); break;
    case PK_NVVM:
        FAIL("%s is LTO-IR / NVVM IR: accel's emulator executes PTX only and cannot link LTO-IR "
             "(compile to PTX, without -dlto / link_time_optimization)", name);
    default: FAIL("%s: unknown input kind %d", name, (int)kind);
    }
    if (!rc && p->count + f.count > p->cap) {
        int cap = p->cap ? p->cap : 4;
        while (cap < p->count + f.count) cap *= 2;
        char **nt = realloc(p->text, (size_t)cap * sizeof *nt);
        if (nt) p->text = nt;
        size_t *nl = nt ? realloc(p->len, (size_t)cap * sizeof *nl) : NULL;
        if (nl) { p->len = nl; p->cap = cap; }
        else rc = (snprintf(err, errlen, "%s: out of memory", name), -1);
    }
    int added = 0;
    for (int i = 0; !rc && i < f.count; i++) {
        char *t = malloc(f.n[i] + 1);
        if (!t) { rc = (snprintf(err, errlen, "%s: out of memory", name), -1); break; }
        memcpy(t, f.p[i], f.n[i]);
        t[f.n[i]] = 0;
        p->text[p->count + added] = t;
        p->len[p->count + added++] = f.n[i];
    }
    if (rc) while (added) free(p->text[p->count + --added]);
    p->count += added;
    for (int i = 0; i < f.nims; i++) ptx_image_release(&f.ims[i]);
    free(f.p);
    free(f.n);
    return rc;
}

size_t ptxpack_image_size(const ptxpack *p)
{
    return ptx_image_link_size((const char *const *)p->text, p->len, p->count);
}

void ptxpack_image_write(const ptxpack *p, void *out)
{
    ptx_image_link_write((const char *const *)p->text, p->len, p->count, out);
}

void ptxpack_free(ptxpack *p)
{
    for (int i = 0; i < p->count; i++) free(p->text[i]);
    free(p->text);
    free(p->len);
    p->text = NULL;
    p->len = NULL;
    p->count = p->cap = 0;
}
