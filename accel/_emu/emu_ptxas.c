/* The `ptxas` stand-in (`python -m accel emu`, issue 32): Triton compiles a kernel to PTX and then runs
 * ptxas (TRITON_PTXAS_PATH, which accel.emu points here) to make the SASS cubin it loads with
 * cuModuleLoadData.  The emulator executes PTX only, so this "assembler" writes accel's linked image
 * (emu_ptxpack.h) holding the PTX it was given; Triton hands that to the driver as its cubin, and the
 * emulator's loader builds the PTX.  Nothing of the real ptxas is used.
 *
 * Command line (ptxas's, as Triton and users spell it): `ptxas [options] file.ptx [-o out]`; `--version`
 * prints a release line Triton parses for the PTX ISA version to emit (12.9: ISA 8.8, what Triton 3.x
 * emits for its own ptxas) plus a line naming the stand-in (Triton hashes the whole answer into its cache
 * key, so its cached real cubins and these images never mix).  Options ptxas takes with a separate value
 * are skipped with their value; the input is the one other argument; the output defaults to elf.o as
 * ptxas's does.  Code-generation options (-O, --gpu-name, -lineinfo, --fmad, -v, ...) have no effect: the
 * PTX is kept as given.  The input is checked to be PTX (a .version directive); anything else exits 255
 * with ptxas's "fatal" spelling on stderr, which Triton reports. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu_ptxpack.h"

#define RELEASE "12.9"

static const char *const VALUE_OPTS[] = {"-o", "--output-file", "-arch", "--gpu-name", "--opt-level", "-O",
    "-maxrregcount", "--maxrregcount", "-m", "--machine", "-e", "--entry", "-def-load-cache", "--def-load-cache",
    "-def-store-cache", "--def-store-cache", "-h", "--extensible-whole-program", "-Xptxas", "--options-file",
    "-optf", NULL};

static int takes_value(const char *a)
{
    for (int i = 0; VALUE_OPTS[i]; i++)
        if (!strcmp(a, VALUE_OPTS[i])) return 1;
    return 0;
}

static char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap + 1);
    for (size_t r; buf && (r = fread(buf + len, 1, cap - len, f)) > 0;) {
        len += r;
        if (len == cap) { char *nb = realloc(buf, 2 * cap + 1); if (!nb) { free(buf); buf = NULL; break; } buf = nb; cap *= 2; }
    }
    fclose(f);
    if (buf) { buf[len] = 0; *n = len; }
    return buf;
}

int main(int argc, char **argv)
{
    const char *in = NULL, *out = "elf.o";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--version") || !strcmp(a, "-V")) {
            printf("ptxas: accel emulator stand-in (keeps the PTX: accel's emulator executes PTX)\n"
                   "Cuda compilation tools, release " RELEASE ", V" RELEASE ".0 (accel-emu)\n");
            return 0;
        }
        if (!strcmp(a, "-o") || !strcmp(a, "--output-file")) {
            if (i + 1 >= argc) { fprintf(stderr, "ptxas fatal   : option '%s' needs a file name\n", a); return 255; }
            out = argv[++i];
            continue;
        }
        if (!strncmp(a, "--output-file=", 14)) { out = a + 14; continue; }
        if (takes_value(a)) { i++; continue; }
        if (a[0] == '-') continue;
        if (in) { fprintf(stderr, "ptxas fatal   : more than one input file ('%s', '%s')\n", in, a); return 255; }
        in = a;
    }
    if (!in) { fprintf(stderr, "ptxas fatal   : no input file\n"); return 255; }
    size_t n = 0;
    char *text = slurp(in, &n);
    if (!text) { fprintf(stderr, "ptxas fatal   : cannot read input file '%s'\n", in); return 255; }
    ptxpack p;
    memset(&p, 0, sizeof p);
    char err[512];
    if (!strstr(text, ".version") || ptxpack_sniff(text, n) != PK_PTX ||
        ptxpack_add(&p, PK_PTX, text, n, in, err, sizeof err)) {
        fprintf(stderr, "ptxas fatal   : '%s' is not PTX text (accel's ptxas stand-in keeps PTX only)\n", in);
        free(text);
        return 255;
    }
    free(text);
    size_t sz = ptxpack_image_size(&p);
    void *img = malloc(sz);
    FILE *f = img ? fopen(out, "wb") : NULL;
    int ok = f && (ptxpack_image_write(&p, img), fwrite(img, 1, sz, f) == sz);
    if (f && fclose(f)) ok = 0;
    free(img);
    ptxpack_free(&p);
    if (!ok) { fprintf(stderr, "ptxas fatal   : cannot write output file '%s'\n", out); return 255; }
    fprintf(stderr, "ptxas info    : accel emulator stand-in: '%s' kept as PTX in accel's image '%s'\n", in, out);
    return 0;
}
