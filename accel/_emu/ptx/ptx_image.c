/* Images handed to the driver, decoded to PTX texts: ptx_image.h says what is read and how. */
#include "ptx_image.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void msg(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || !errlen) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

static void wr32(uint8_t *b, uint32_t v) { for (int i = 0; i < 4; i++) b[i] = (uint8_t)(v >> 8 * i); }
static void wr64(uint8_t *b, uint64_t v) { for (int i = 0; i < 8; i++) b[i] = (uint8_t)(v >> 8 * i); }

void ptx_image_release(ptx_image *im)
{
    if (!im) return;
    for (int i = 0; i < im->n; i++) free(im->text[i]);
    free(im->text);
    free(im->len);
    free(im->sass_kernels);
    memset(im, 0, sizeof *im);
}

/* Appends a NUL-terminated copy of text[0..n) (up to its first NUL). */
static int add_text(ptx_image *im, const char *text, size_t n)
{
    const char *nul = memchr(text, 0, n);
    if (nul) n = (size_t)(nul - text);
    char **t = realloc(im->text, (size_t)(im->n + 1) * sizeof *t);
    if (!t) return -1;
    im->text = t;
    size_t *l = realloc(im->len, (size_t)(im->n + 1) * sizeof *l);
    if (!l) return -1;
    im->len = l;
    char *c = malloc(n + 1);
    if (!c) return -1;
    memcpy(c, text, n);
    c[n] = 0;
    im->text[im->n] = c;
    im->len[im->n++] = n;
    return 0;
}

/* ------------------------------------------------------------------ LZ4 */

int ptx_lz4_block_decode(const uint8_t *in, size_t n, uint8_t *out, size_t cap)
{
    size_t i = 0, o = 0;
    while (i < n) {
        unsigned token = in[i++];
        size_t lit = token >> 4;
        if (lit == 15) {
            unsigned b;
            do {
                if (i >= n) return -1;
                b = in[i++];
                lit += b;
            } while (b == 255);
        }
        if (lit > n - i || lit > cap - o) return -1;
        memcpy(out + o, in + i, lit);
        i += lit;
        o += lit;
        if (i == n) break;                      /* the last sequence has literals only */
        if (n - i < 2) return -1;
        size_t off = ptx_rd16(in + i);
        i += 2;
        if (!off || off > o) return -1;
        size_t len = (token & 15u) + 4;
        if ((token & 15u) == 15) {
            unsigned b;
            do {
                if (i >= n) return -1;
                b = in[i++];
                len += b;
            } while (b == 255);
        }
        if (len > cap - o) return -1;
        for (size_t k = 0; k < len; k++, o++) out[o] = out[o - off];   /* may overlap: byte by byte */
    }
    return o == cap ? 0 : -1;
}

/* ------------------------------------------------------------------ zstd, through libzstd.so.1 */

static pthread_once_t g_zstd_once = PTHREAD_ONCE_INIT;
static size_t (*g_zstd_decompress)(void *, size_t, const void *, size_t);
static unsigned (*g_zstd_is_error)(size_t);
static const char *(*g_zstd_error_name)(size_t);

static void zstd_load(void)
{
    void *h = dlopen("libzstd.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) return;
    g_zstd_is_error = (unsigned (*)(size_t))dlsym(h, "ZSTD_isError");
    g_zstd_error_name = (const char *(*)(size_t))dlsym(h, "ZSTD_getErrorName");
    g_zstd_decompress = (size_t (*)(void *, size_t, const void *, size_t))dlsym(h, "ZSTD_decompress");
    if (!g_zstd_is_error || !g_zstd_error_name) g_zstd_decompress = NULL;
}

/* -------------------------------------------------------------- ELF (SASS): the kernels it defines */

int ptx_elf_sections(const uint8_t *elf, size_t n,
                     int (*each)(void *ctx, const char *name, uint64_t off, uint64_t size),
                     void *ctx, char *err, size_t errlen)
{
    if ((n && n < 64) || elf[4] != 2 || elf[5] != 1) {     /* ELF64, little-endian: what cubins are */
        msg(err, errlen, "not a 64-bit little-endian ELF object");
        return PTX_IMAGE_E_INVALID_IMAGE;
    }
    uint64_t shoff = ptx_rd64(elf + 0x28);
    unsigned shentsize = ptx_rd16(elf + 0x3a), shnum = ptx_rd16(elf + 0x3c), shstrndx = ptx_rd16(elf + 0x3e);
    if (shentsize < 64 || shstrndx >= shnum || (n && (shoff > n || (uint64_t)shnum * shentsize > n - shoff))) {
        msg(err, errlen, "corrupt ELF section table");
        return PTX_IMAGE_E_INVALID_IMAGE;
    }
    const uint8_t *strh = elf + shoff + (uint64_t)shstrndx * shentsize;
    uint64_t stroff = ptx_rd64(strh + 0x18), strsize = ptx_rd64(strh + 0x20);
    if ((n && (stroff > n || strsize > n - stroff)) || (!n && strsize > (1u << 24))) {
        msg(err, errlen, "corrupt ELF section names");
        return PTX_IMAGE_E_INVALID_IMAGE;
    }
    const char *strtab = (const char *)elf + stroff;
    for (unsigned i = 0; i < shnum; i++) {
        const uint8_t *sh = elf + shoff + (uint64_t)i * shentsize;
        uint32_t name = ptx_rd32(sh);
        if (name >= strsize) continue;
        size_t room = strsize - name;
        if (strnlen(strtab + name, room) == room) continue;
        int r = each(ctx, strtab + name, ptx_rd64(sh + 0x18), ptx_rd64(sh + 0x20));
        if (r) return r;
    }
    return PTX_IMAGE_OK;
}

/* Appends a ".text.<kernel>" section's kernel to *names (comma-separated). */
static int kernel_section(void *ctx, const char *name, uint64_t off, uint64_t size)
{
    char **names = ctx;
    size_t len = strlen(name);
    (void)off, (void)size;
    if (len <= 6 || memcmp(name, ".text.", 6)) return 0;
    size_t have = *names ? strlen(*names) : 0;
    if (have > 200) {           /* a library's cubin can define thousands: the first ones name it */
        char *s = realloc(*names, have + 6);
        if (s) memcpy(s + have, ", ...", 6), *names = s;
        return 1;
    }
    char *s = realloc(*names, have + (have ? 2 : 0) + len - 6 + 1);
    if (!s) return 1;
    if (have) memcpy(s + have, ", ", 2), have += 2;
    memcpy(s + have, name + 6, len - 6);
    s[have + len - 6] = 0;
    *names = s;
    return 0;
}

/* The kernels `elf` defines (its ".text.<kernel>" sections), appended to *names; nothing when its headers
 * are unreadable. */
static void elf_kernels(const uint8_t *elf, size_t n, char **names)
{
    ptx_elf_sections(elf, n, kernel_section, names, NULL, 0);
}

/* ------------------------------------------------------------------ fatbin */

#define FB_KIND_PTX 1
#define FB_KIND_ELF 2
#define FB_LZ4 0x2000ull
#define FB_ZSTD 0x8000ull

/* An entry's payload, decompressed when it is: a malloc'd buffer (*out, *outlen), or a code. */
static int entry_payload(const uint8_t *h, const uint8_t *payload, uint64_t psize, uint8_t **out, size_t *outlen,
                         char *err, size_t errlen)
{
    uint64_t flags = ptx_rd64(h + 40), csize = ptx_rd32(h + 16), dsize = ptx_rd64(h + 56);
    if (!(flags & (FB_LZ4 | FB_ZSTD))) {
        if (!(*out = malloc(psize + 1))) return PTX_IMAGE_E_OUT_OF_MEMORY;
        memcpy(*out, payload, psize);
        *outlen = psize;
        return PTX_IMAGE_OK;
    }
    if (!csize || csize > psize || !dsize || dsize > ((uint64_t)1 << 32)) {
        msg(err, errlen, "malformed fatbin: a compressed entry of %llu bytes says %llu compressed, %llu decompressed",
            (unsigned long long)psize, (unsigned long long)csize, (unsigned long long)dsize);
        return PTX_IMAGE_E_INVALID_IMAGE;
    }
    if (!(*out = malloc(dsize + 1))) return PTX_IMAGE_E_OUT_OF_MEMORY;
    *outlen = dsize;
    if (flags & FB_LZ4) {
        if (ptx_lz4_block_decode(payload, csize, *out, dsize)) {
            free(*out);
            *out = NULL;
            msg(err, errlen, "malformed fatbin: an LZ4-compressed entry does not decode to its %llu bytes",
                (unsigned long long)dsize);
            return PTX_IMAGE_E_INVALID_IMAGE;
        }
        return PTX_IMAGE_OK;
    }
    pthread_once(&g_zstd_once, zstd_load);
    if (!g_zstd_decompress) {
        free(*out);
        *out = NULL;
        msg(err, errlen, "the fatbin's entry is zstd-compressed (CUDA 13's default) and libzstd.so.1 could not be "
            "loaded: install the zstd library (e.g. the libzstd1 package) or build with -Xfatbin=-compress-mode=speed");
        return PTX_IMAGE_E_NOT_SUPPORTED;
    }
    size_t r = g_zstd_decompress(*out, dsize, payload, csize);
    if (g_zstd_is_error(r) || r != dsize) {
        msg(err, errlen, "malformed fatbin: a zstd-compressed entry does not decode to its %llu bytes (%s)",
            (unsigned long long)dsize, g_zstd_is_error(r) ? g_zstd_error_name(r) : "size differs");
        free(*out);
        *out = NULL;
        return PTX_IMAGE_E_INVALID_IMAGE;
    }
    return PTX_IMAGE_OK;
}

uint64_t ptx_fatbin_size(const uint8_t *fb, size_t avail)
{
    if (avail && avail < 16) return 0;
    uint64_t hsize = ptx_rd16(fb + 6), total = ptx_rd64(fb + 8);
    if (hsize < 16 || total > ((uint64_t)1 << 40) || (avail && (hsize > avail || total > avail - hsize))) return 0;
    return hsize + total;
}

/* The fatbin at fb (`avail` bytes readable, 0: unknown). */
static int decode_fatbin(const uint8_t *fb, size_t avail, int cc, ptx_image *im, char *err, size_t errlen)
{
    if (avail && avail < 16) {
        msg(err, errlen, "malformed fatbin: %zu bytes, less than its 16-byte header", avail);
        return PTX_IMAGE_E_INVALID_IMAGE;
    }
    unsigned hsize = ptx_rd16(fb + 6);
    uint64_t total = ptx_rd64(fb + 8);
    if (!ptx_fatbin_size(fb, avail)) {
        msg(err, errlen, "malformed fatbin: header size %u, %llu bytes of entries%s", hsize,
            (unsigned long long)total, avail ? " past the end of the image" : "");
        return PTX_IMAGE_E_INVALID_IMAGE;
    }
    const uint8_t *p = fb + hsize, *end = p + total;
    const uint8_t *best = NULL, *elf = NULL;
    unsigned best_arch = 0, min_ptx = 0;
    int nptx = 0;
    while (p < end) {
        if ((size_t)(end - p) < 64) break;              /* trailing padding */
        unsigned kind = ptx_rd16(p);
        uint32_t ehsize = ptx_rd32(p + 4);
        uint64_t psize = ptx_rd64(p + 8);
        if (ehsize < 64 || ehsize > (size_t)(end - p) || psize > (uint64_t)(end - p) - ehsize) {
            msg(err, errlen, "malformed fatbin: an entry (header %u bytes, payload %llu) overruns the fatbin", ehsize,
                (unsigned long long)psize);
            return PTX_IMAGE_E_INVALID_IMAGE;
        }
        unsigned arch = ptx_rd32(p + 28);
        if (kind == FB_KIND_PTX) {
            nptx++;
            if (!min_ptx || arch < min_ptx) min_ptx = arch;
            if (arch <= (unsigned)cc && (!best || arch > best_arch)) best = p, best_arch = arch;
        } else if (kind == FB_KIND_ELF && !elf) {
            elf = p;
        }
        p += ehsize + psize;
    }
    if (best) {
        uint8_t *text = NULL;
        size_t len = 0;
        int r = entry_payload(best, best + ptx_rd32(best + 4), ptx_rd64(best + 8), &text, &len, err, errlen);
        if (r) return r;
        r = add_text(im, (const char *)text, len) ? PTX_IMAGE_E_OUT_OF_MEMORY : PTX_IMAGE_OK;
        free(text);
        return r;
    }
    if (nptx) {
        msg(err, errlen, "the fatbin's PTX is for compute_%u and later; the device is compute_%d", min_ptx, cc);
        return PTX_IMAGE_E_NO_BINARY;
    }
    if (elf) {      /* SASS only: name its kernels (decompressing costs nothing worth saving here) */
        uint8_t *bin = NULL;
        size_t len = 0;
        char lerr[8];
        if (!entry_payload(elf, elf + ptx_rd32(elf + 4), ptx_rd64(elf + 8), &bin, &len, lerr, sizeof lerr)) {
            if (len)    /* an empty payload names nothing (and a 0 length would mean "unbounded") */
                elf_kernels(bin, len, &im->sass_kernels);
            free(bin);
        }
        return PTX_IMAGE_E_NO_BINARY;
    }
    msg(err, errlen, "the fatbin has no PTX and no cubin entry");
    return PTX_IMAGE_E_NO_BINARY;
}

/* ------------------------------------------------------------------ the image */

int ptx_linked_walk(const uint8_t *p, size_t avail, int (*each)(void *ctx, uint32_t i, const char *text, uint64_t len),
                    void *ctx, char *err, size_t errlen)
{
    if (avail && avail < PTX_IMAGE_HEADER) {
        msg(err, errlen, "malformed linked image: %zu bytes, less than its %d-byte header", avail, PTX_IMAGE_HEADER);
        return PTX_IMAGE_E_INVALID_IMAGE;
    }
    uint32_t count = ptx_rd32(p + 8);
    uint64_t total = ptx_rd64(p + 16);
    if (total < PTX_IMAGE_HEADER || (avail && total > avail) || total > ((uint64_t)1 << 40)
        || count > (total - PTX_IMAGE_HEADER) / 8) {
        msg(err, errlen, "malformed linked image: %u texts in %llu bytes", count, (unsigned long long)total);
        return PTX_IMAGE_E_INVALID_IMAGE;
    }
    uint64_t off = PTX_IMAGE_HEADER;
    for (uint32_t i = 0; i < count; i++) {
        if (total - off < 8) goto bad;
        uint64_t len = ptx_rd64(p + off);
        off += 8;
        if (len > total - off) goto bad;
        int r = each(ctx, i, (const char *)p + off, len);
        if (r) return r;
        off += (len + 7) & ~(uint64_t)7;
        if (off > total) goto bad;
    }
    return PTX_IMAGE_OK;
bad:
    msg(err, errlen, "malformed linked image: its texts overrun its %llu bytes", (unsigned long long)total);
    return PTX_IMAGE_E_INVALID_IMAGE;
}

static int linked_text(void *im, uint32_t i, const char *text, uint64_t len)
{
    (void)i;
    return add_text(im, text, len) ? PTX_IMAGE_E_OUT_OF_MEMORY : PTX_IMAGE_OK;
}

int ptx_image_decode(const void *image, size_t size, int cc, ptx_image *out, char *err, size_t errlen)
{
    if (err && errlen) err[0] = 0;
    memset(out, 0, sizeof *out);
    if (!image) {
        msg(err, errlen, "the image is NULL");
        return PTX_IMAGE_E_INVALID_VALUE;
    }
    const uint8_t *p = image;
    int r;
    if ((!size || size >= PTX_IMAGE_HEADER) && !memcmp(p, PTX_IMAGE_MAGIC, 8)) {
        out->kind = PTX_IMAGE_KIND_LINKED;
        r = ptx_linked_walk(p, size, linked_text, out, err, errlen);
    } else if ((!size || size >= 16) && ptx_rd32(p) == PTX_FATBIN_WRAPPER_MAGIC) {
        out->kind = PTX_IMAGE_KIND_FATBIN;
        const uint8_t *fb;
        memcpy(&fb, p + 8, sizeof fb);
        if (!fb || ptx_rd32(fb) != PTX_FATBIN_MAGIC) {
            msg(err, errlen, "malformed fatbin wrapper: its pointer does not lead to a fatbin (magic 0x%x)",
                PTX_FATBIN_MAGIC);
            r = PTX_IMAGE_E_INVALID_IMAGE;
        } else {
            r = decode_fatbin(fb, 0, cc, out, err, errlen);
        }
    } else if ((!size || size >= 4) && ptx_rd32(p) == PTX_FATBIN_MAGIC) {
        out->kind = PTX_IMAGE_KIND_FATBIN;
        r = decode_fatbin(p, size, cc, out, err, errlen);
    } else if ((!size || size >= 4) && !memcmp(p, "\x7f" "ELF", 4)) {
        out->kind = PTX_IMAGE_KIND_ELF;
        elf_kernels(p, size, &out->sass_kernels);
        r = PTX_IMAGE_E_NO_BINARY;
    } else {
        out->kind = PTX_IMAGE_KIND_PTX;
        size_t n = size ? strnlen(image, size) : strlen(image);
        r = add_text(out, image, n) ? PTX_IMAGE_E_OUT_OF_MEMORY : PTX_IMAGE_OK;
    }
    if (r == PTX_IMAGE_E_NO_BINARY && out->kind != PTX_IMAGE_KIND_PTX && (!err || !err[0])) {
        if (!out->sass_kernels && !(out->sass_kernels = calloc(1, 1))) r = PTX_IMAGE_E_OUT_OF_MEMORY;
        else msg(err, errlen, "the image is SASS (a cubin for a real GPU) without PTX: accel's emulator executes PTX "
                 "only (kernels: %s)", out->sass_kernels[0] ? out->sass_kernels : "unknown");
    }
    if (r == PTX_IMAGE_E_OUT_OF_MEMORY) msg(err, errlen, "out of memory decoding the image");
    if (r) {
        char *keep = r == PTX_IMAGE_E_NO_BINARY ? out->sass_kernels : NULL;
        if (keep) out->sass_kernels = NULL;
        int kind = out->kind;
        ptx_image_release(out);
        out->kind = kind;
        out->sass_kernels = keep;
    }
    return r;
}

size_t ptx_image_link_size(const char *const *texts, const size_t *len, int n)
{
    size_t total = PTX_IMAGE_HEADER;
    for (int i = 0; i < n; i++) {
        size_t l = len && len[i] ? len[i] : strlen(texts[i]);
        total += 8 + ((l + 7) & ~(size_t)7);
    }
    return total;
}

void ptx_image_link_write(const char *const *texts, const size_t *len, int n, void *out)
{
    uint8_t *b = out;
    size_t total = ptx_image_link_size(texts, len, n), off = PTX_IMAGE_HEADER;
    memset(b, 0, total);
    memcpy(b, PTX_IMAGE_MAGIC, 8);
    wr32(b + 8, (uint32_t)n);
    wr64(b + 16, total);
    for (int i = 0; i < n; i++) {
        size_t l = len && len[i] ? len[i] : strlen(texts[i]);
        wr64(b + off, l);
        memcpy(b + off + 8, texts[i], l);
        off += 8 + ((l + 7) & ~(size_t)7);
    }
}

void *ptx_image_link(const char *const *texts, const size_t *len, int n, size_t *size)
{
    size_t total = ptx_image_link_size(texts, len, n);
    void *b = malloc(total);
    if (!b) return NULL;
    ptx_image_link_write(texts, len, n, b);
    *size = total;
    return b;
}

/* Emulator-only (tests): decodes an image as the driver does for a device of compute capability cc.
 * Returns the number of PTX texts, written into text[0..textlen) one after another, each followed by a
 * NUL (cut at textlen), or minus the code, with the message (for SASS: the kernels the ELF defines) in err. */
__attribute__((visibility("default"))) int accelEmuPtxImage(const void *image, size_t size, int cc, char *text,
                                                            size_t textlen, char *err, size_t errlen)
{
    ptx_image im;
    int r = ptx_image_decode(image, size, cc, &im, err, errlen);
    if (r) {
        if (r == PTX_IMAGE_E_NO_BINARY && im.sass_kernels && err && errlen) snprintf(err, errlen, "%s", im.sass_kernels);
        ptx_image_release(&im);
        return -r;
    }
    size_t at = 0;
    for (int i = 0; i < im.n && text; i++)
        for (size_t k = 0; k <= im.len[i] && at < textlen; k++) text[at++] = im.text[i][k];
    int n = im.n;
    ptx_image_release(&im);
    return n;
}
