/* tests/glue_test.h: what the two ScaLAPACK-glue tests (test_glue_mpi.c: p?gemm_,
 * test_glue_l3_mpi.c: the other PBLAS level-3 routines) share: MPI-aware failure, the BLACS
 * prototypes, the program's own PBLAS error handlers (recording, never stopping), a random
 * sequence and matrix values equal on every rank, one dimension of a block-cyclic map
 * written out independently of comm/, the local-matrix record, the grid shapes. Included
 * once by each test program (static definitions). */
#ifndef TESS_TESTS_GLUE_TEST_H
#define TESS_TESTS_GLUE_TEST_H

#include <dlfcn.h>
#include <float.h>
#include <math.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness_mpi.h"
#include "tessera_scalapack.h"

/* ---- BLACS (C interface) and PBLAS: Debian ships no header ---------------------------- */
void Cblacs_pinfo(int *mypnum, int *nprocs);
void Cblacs_get(int ctxt, int what, int *val);
void Cblacs_gridinit(int *ctxt, const char *order, int nprow, int npcol);
void Cblacs_gridinfo(int ctxt, int *nprow, int *npcol, int *myrow, int *mycol);
void Cblacs_gridexit(int ctxt);
void Cblacs_exit(int cont);

static const size_t esize[4] = {4, 8, 8, 16};

/* ---- the program's PBLAS error handlers: record, do not stop --------------------------- */
static struct {
    int aborts, info, ctxt;
    char rout[16];
    char warn[4096]; /* every PB_Cwarn: "ctxt|line|rout|message\n" */
} rec;

/* exported (the build hides symbols by default): the ScaLAPACK library and the glue find
 * these through the dynamic symbol table */
#define EXPORTED __attribute__((visibility("default")))
EXPORTED void PB_Cabort(int ctxt, char *rout, int info) {
    rec.aborts++;
    rec.info = info;
    rec.ctxt = ctxt;
    snprintf(rec.rout, sizeof rec.rout, "%s", rout);
}

EXPORTED void PB_Cwarn(int ctxt, int line, char *rout, char *form, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, form);
    vsnprintf(msg, sizeof msg, form, ap);
    va_end(ap);
    size_t n = strlen(rec.warn);
    snprintf(rec.warn + n, sizeof rec.warn - n, "%d|%d|%s|%s\n", ctxt, line, rout, msg);
}

static void rec_reset(void) { memset(&rec, 0, sizeof rec); }

/* The ScaLAPACK library underneath (the one defining BLACS), for dlsym of the reference
 * routines, and its file name; stops the job when it cannot be found. */
static void *reference_library(const char **fname) {
    void *gi = dlsym(RTLD_DEFAULT, "Cblacs_gridinfo");
    Dl_info info;
    void *lib = gi && dladdr(gi, &info) ? dlopen(info.dli_fname, RTLD_NOLOAD | RTLD_LAZY) : NULL;
    if (!lib) {
        int r = 0;
        MPI_Comm_rank(MPI_COMM_WORLD, &r);
        fprintf(stderr, "rank %d: cannot find the ScaLAPACK library\n", r);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    *fname = info.dli_fname;
    return lib;
}

/* ---- a tiny random generator, the same sequence on every rank -------------------------- */
static uint64_t rng_state;
static uint64_t rnd(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}
static int rint_(int lo, int hi) { return lo + (int)(rnd() % (uint64_t)(hi - lo + 1)); }

/* The value of global element (i, j) of matrix id: in [-1, 1), the same on every rank. */
static double val(int id, int i, int j, int part) {
    uint64_t h = 0x9E3779B97F4A7C15ull * (uint64_t)(id * 4 + part + 1);
    h ^= (uint64_t)i * 0xBF58476D1CE4E5B9ull;
    h ^= (uint64_t)j * 0x94D049BB133111EBull;
    h ^= h >> 31;
    h *= 0xD6E8FEB86659FD93ull;
    h ^= h >> 32;
    return (double)(h >> 11) / (double)(1ull << 52) - 1.0;
}

/* ---- one dimension of a block-cyclic map, written out independently of comm/ ----------
 * n indices, first block ib, then nb; block b on process (src + b) mod np; src = -1:
 * replicated (every process holds every index, in order). */
struct dim {
    int n, ib, nb, src, np;
};
static int owner(const struct dim *d, int g) {
    if (d->src < 0) return -1;
    int b = g < d->ib ? 0 : 1 + (g - d->ib) / d->nb;
    return (d->src + b) % d->np;
}
static int local_of(const struct dim *d, int g) {
    if (d->src < 0) return g;
    int b = g < d->ib ? 0 : 1 + (g - d->ib) / d->nb;
    int start = b == 0 ? 0 : d->ib + (b - 1) * d->nb;
    /* the earlier blocks of the same process: b - np, b - 2 np, ..., all nb long but block 0 */
    int lstart = (b / d->np) * d->nb;
    if (b % d->np == 0 && b >= d->np) lstart += d->ib - d->nb;
    return lstart + g - start;
}
static int count_on(const struct dim *d, int p) {
    if (d->src < 0) return d->n;
    int c = 0;
    for (int g = 0; g < d->n; g++) c += owner(d, g) == p;
    return c;
}

/* ---- a distributed matrix on this rank --------------------------------------------------- */
struct mat {
    int desc[11], dlen; /* as passed to PBLAS (9 or 11 entries) */
    struct dim rows, cols;
    int lr, lc, lld; /* local rows, columns, leading dimension */
    int id;
    size_t bytes; /* of the local array, guard included */
    unsigned char *buf;
};
enum { GUARD = 64 };

static const int shape_list[][2] = {{1, 1}, {1, 2}, {2, 1}, {1, 3}, {3, 1}, {2, 2}, {2, 3}, {3, 2}};
enum { NSHAPES = sizeof shape_list / sizeof shape_list[0] };

/* A P x Q context over the first P*Q processes (row-major); -1 on the others. */
static int grid_open(int P, int Q) {
    int ctxt;
    Cblacs_get(-1, 0, &ctxt);
    Cblacs_gridinit(&ctxt, "R", P, Q);
    return ctxt;
}

/* TEST_GLUE_SEED: another sequence of random calls (the same on every rank) */
static uint64_t seed(void) {
    const char *v = getenv("TEST_GLUE_SEED");
    return v ? strtoull(v, NULL, 0) : 0;
}

/* Element (gi, gj) of the rank's local array, if this rank holds it. */
static unsigned char *mat_at(const struct mat *x, unsigned char *buf, int dt, int gi, int gj,
                             int myrow, int mycol) {
    if (x->rows.src >= 0 && owner(&x->rows, gi) != myrow) return NULL;
    if (x->cols.src >= 0 && owner(&x->cols, gj) != mycol) return NULL;
    size_t li = (size_t)local_of(&x->rows, gi), lj = (size_t)local_of(&x->cols, gj);
    return buf + (li + lj * (size_t)x->lld) * esize[dt];
}

/* Part (0 real, 1 imaginary) of the element at p, as a double. */
static double part_of(int dt, const unsigned char *p, int part) {
    if (dt == 0 || dt == 2) {
        float v[2] = {0, 0};
        memcpy(v, p, dt == 0 ? 4 : 8);
        return v[part];
    }
    double v[2] = {0, 0};
    memcpy(v, p, dt == 1 ? 8 : 16);
    return v[part];
}

#endif /* TESS_TESTS_GLUE_TEST_H */
