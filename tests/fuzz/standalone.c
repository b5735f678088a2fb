/* standalone.c - runs a libFuzzer target without libFuzzer, as a ctest
 * (fuzz.<name>) in every test build: each file of the corpus folders
 * named on the command line, then MUTATIONS deterministic mutations of
 * each (byte flips, insertions, truncations, splices with another file;
 * a fixed seed, so a failure repeats). A real fuzzing run is
 * scripts/fuzz, which builds the same targets with clang's libFuzzer. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MUTATIONS 300
#define FUZZ_MAX_INPUT (1u << 20)

typedef struct blob {
    unsigned char *p;
    size_t n;
} blob;

static blob *files;
static size_t nfiles, capfiles;

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void add_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return;
    unsigned char *p = malloc(FUZZ_MAX_INPUT);
    size_t n = p ? fread(p, 1, FUZZ_MAX_INPUT, f) : 0;
    fclose(f);
    if (!p)
        return;
    unsigned char *fit = realloc(p, n ? n : 1);
    if (fit)
        p = fit;
    if (nfiles == capfiles) {
        capfiles = capfiles ? capfiles * 2 : 64;
        blob *nb = realloc(files, capfiles * sizeof *files);
        if (!nb) {
            free(p);
            return;
        }
        files = nb;
    }
    files[nfiles++] = (blob){ p, n };
}

/* The folder's regular files, in name order (the same run every time). */
static int add_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) {
        add_file(dir); /* a single file */
        return 0;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            char **nn = realloc(names, cap * sizeof *names);
            if (!nn)
                break;
            names = nn;
        }
        names[n++] = strdup(e->d_name);
    }
    closedir(d);
    if (n)
        qsort(names, n, sizeof *names, by_name);
    for (size_t i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        add_file(path);
        free(names[i]);
    }
    free(names);
    return 0;
}

/* One mutation of file i into out (at most cap bytes); its length. */
static size_t mutate(size_t i, unsigned char *out, size_t cap)
{
    const blob *b = &files[i];
    size_t n = b->n < cap ? b->n : cap;
    memcpy(out, b->p, n);
    int edits = 1 + (int)(next_rand() % 4);
    for (int k = 0; k < edits; k++) {
        switch (next_rand() % 5) {
        case 0: /* flip a byte */
            if (n)
                out[next_rand() % n] ^= (unsigned char)(1u << (next_rand() % 8));
            break;
        case 1: /* an interesting byte */
            if (n) {
                static const unsigned char odd[] = { 0, 0xff, '"', '\\', '{', '}', '[',
                                                     ']', ':', ',', 0x80, 0xc3, '9', '-' };
                out[next_rand() % n] = odd[next_rand() % sizeof odd];
            }
            break;
        case 2: /* truncate */
            if (n)
                n = (size_t)(next_rand() % n);
            break;
        case 3: /* insert a byte */
            if (n < cap) {
                size_t at = n ? (size_t)(next_rand() % (n + 1)) : 0;
                memmove(out + at + 1, out + at, n - at);
                out[at] = (unsigned char)next_rand();
                n++;
            }
            break;
        default: { /* splice the tail of another file */
            const blob *o = &files[next_rand() % nfiles];
            size_t at = n ? (size_t)(next_rand() % n) : 0;
            size_t from = o->n ? (size_t)(next_rand() % o->n) : 0;
            size_t take = o->n - from;
            if (at + take > cap)
                take = cap - at;
            memcpy(out + at, o->p + from, take);
            n = at + take;
            break;
        }
        }
    }
    return n;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s CORPUS_DIR_OR_FILE...\n", argv[0]);
        return 2;
    }
    for (int i = 1; i < argc; i++)
        add_dir(argv[i]);
    if (nfiles == 0) {
        fprintf(stderr, "%s: no corpus files\n", argv[0]);
        return 2;
    }
    for (size_t i = 0; i < nfiles; i++)
        LLVMFuzzerTestOneInput(files[i].p, files[i].n);
    size_t cap = 64 * 1024;
    unsigned char *buf = malloc(cap);
    if (!buf)
        return 2;
    size_t runs = 0;
    for (size_t i = 0; i < nfiles; i++)
        for (int m = 0; m < MUTATIONS; m++) {
            size_t n = mutate(i, buf, cap);
            /* a copy of exactly n bytes, so ASan sees a read past its end */
            unsigned char *exact = malloc(n ? n : 1);
            if (!exact)
                return 2;
            memcpy(exact, buf, n);
            LLVMFuzzerTestOneInput(exact, n);
            free(exact);
            runs++;
        }
    printf("%s: %zu corpus files, %zu mutations, no failure\n", argv[0], nfiles, runs);
    for (size_t i = 0; i < nfiles; i++)
        free(files[i].p);
    free(files);
    free(buf);
    return 0;
}
