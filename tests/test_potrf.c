/* tests/test_potrf.c: the Cholesky factorization tess_?potrf and the solves tess_?potrs,
 * tess_?posv (the contract is the comment in tessera.h, "factorizations", and docs/lapack.md)
 * on emulated devices with small tiles, against OpenBLAS's own LAPACK (spotrf_ ... zpotrf_,
 * spotrs_ ... zpotrs_ called directly):
 * - lapack, jitter, cpu_worker: s, d, c, z x uplo L, U x column-, row-major x n not a multiple
 *   of the tile, lda > n, typed and generic entries: the factor against LAPACK's and the
 *   backward error |A - L L^H|; the other strict triangle (NaN: never read) and the padding
 *   rows bit for bit as they were;
 * - not_pd: a negative diagonal entry mid-tile and at tile boundaries: *info as LAPACK's, the
 *   leading columns (rows for U) final, as LAPACK factors them before the entry changed;
 * - bad_args: TESS_EINVAL, *info = -position, a message, A untouched; n = 0; a bad dtype;
 * - counters: the tiles ran on the devices and crossed the host link at most once each way;
 * - held: a held matrix factored in place, right after tess_sync and after tess_release;
 * - faults: device 1 of 3 fails at its k-th operation: TESS_OK with a right factor, or
 *   TESS_EDEVICE; nan: a NaN in the triangle never gives info 0 with a finite factor;
 * - solve: s, d, c, z x L, U x column-, row-major x n 1, 33, 100 x nrhs 1, 5, lda > n, ldb
 *   above its minimum, B = A X for a known X: tess_?posv (typed and generic) gives X, A bit
 *   for bit as tess_?potrf factors it, B's padding untouched; tess_?potrs on LAPACK's factor
 *   gives ?potrs_'s X, A and B's padding untouched;
 * - posv_not_pd: a leading minor of order j + 1 not positive definite: *info = j + 1, B every
 *   byte as it was;
 * - solve_bad_args: every bad argument of potrs and posv: TESS_EINVAL, *info = -position, a
 *   message naming the function, A and B untouched; n = 0, nrhs = 0; a bad dtype.
 */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu_start.h"
#include "harness.h"
#include "ref.h"
#include "tessera.h"

/* OpenBLAS's LAPACK (LP64 ints, column-major) */
void spotrf_(const char *uplo, const int *n, void *a, const int *lda, int *info);
void dpotrf_(const char *uplo, const int *n, void *a, const int *lda, int *info);
void cpotrf_(const char *uplo, const int *n, void *a, const int *lda, int *info);
void zpotrf_(const char *uplo, const int *n, void *a, const int *lda, int *info);
void spotrs_(const char *uplo, const int *n, const int *nrhs, const void *a, const int *lda,
             void *b, const int *ldb, int *info);
void dpotrs_(const char *uplo, const int *n, const int *nrhs, const void *a, const int *lda,
             void *b, const int *ldb, int *info);
void cpotrs_(const char *uplo, const int *n, const int *nrhs, const void *a, const int *lda,
             void *b, const int *ldb, int *info);
void zpotrs_(const char *uplo, const int *n, const int *nrhs, const void *a, const int *lda,
             void *b, const int *ldb, int *info);

enum { GUARD = 5, TILE = 32 };
/* |L - L_lapack|_F / (|L_lapack|_F n eps) and |A - L L^H|_F / (|A|_F n eps), eps the unit
 * roundoff; the matrices are B B^H + n I, condition numbers below 5 */
#define FWD_BOUND 20.0
#define BWD_BOUND 20.0

/* emu_start with two streams a device; TESSERA_WRITE_BEHIND as an earlier test left it */
static void start(int ndev, const char *tile, const char *mem) {
    emu_start(ndev, tile, mem, "2", "1");
}

/* ---- matrices ------------------------------------------------------------------------------
 * Everything is checked on the storage seen column-major: row-major uplo L is column-major
 * uplo U of the same memory (and the reverse), the triangle `u`. */

struct mat {
    tess_dtype_t dt;
    tess_layout_t layout;
    tess_uplo_t uplo;
    char u; /* the triangle in the column-major view of the storage: 'L' or 'U' */
    int64_t n, lda;
    size_t es, nel; /* element size; elements allocated: lda * n + GUARD */
    char *a, *a0;   /* tessera's operand; its input */
    char *h;        /* the Hermitian matrix in both triangles, then LAPACK's factor */
    int ref_info;   /* LAPACK's info */
    char desc[96];
};

static size_t ix(const struct mat *m, int64_t r, int64_t c) { return (size_t)(r + c * m->lda); }
static int in_tri(const struct mat *m, int64_t r, int64_t c) {
    return r < m->n && c < m->n && (m->u == 'L' ? r >= c : r <= c);
}
static double unit(tess_dtype_t dt) { return ref_eps(dt); }

/* A random Hermitian positive definite n x n matrix B B^H + n I (B uniform in [-1, 1]) in the
 * triangle of the call; the other strict triangle is NaN, the padding rows and the guard
 * alternate NaN and markers. */
static void mat_make(struct mat *m, tess_dtype_t dt, tess_layout_t layout, tess_uplo_t uplo,
                     int64_t n, int64_t lda, uint64_t seed) {
    memset(m, 0, sizeof *m);
    m->dt = dt, m->layout = layout, m->uplo = uplo, m->n = n, m->lda = lda;
    m->u = (layout == TESS_COL_MAJOR) == (uplo == TESS_LOWER) ? 'L' : 'U';
    m->es = ref_esize(dt);
    m->nel = (size_t)(lda * n) + GUARD;
    m->a = ref_malloc(m->nel * m->es);
    m->a0 = ref_malloc(m->nel * m->es);
    m->h = ref_malloc(m->nel * m->es);
    snprintf(m->desc, sizeof m->desc, "%s %s uplo %c n=%lld lda=%lld", ref_dtype_name(dt),
             ref_layout_name(layout), uplo == TESS_LOWER ? 'L' : 'U', (long long)n, (long long)lda);
    int f = ref_is_complex(dt) ? 2 : 1;
    size_t nn = (size_t)(n * n * f);
    double *B = ref_malloc(nn * sizeof(double)), *H = ref_malloc(nn * sizeof(double));
    uint64_t rng = seed;
    for (size_t i = 0; i < nn; i++) B[i] = ref_rand_unit(&rng);
    if (f == 2)
        cblas_zherk(CblasColMajor, CblasLower, CblasNoTrans, (int)n, (int)n, 1.0, B, (int)n, 0.0, H,
                    (int)n);
    else
        cblas_dsyrk(CblasColMajor, CblasLower, CblasNoTrans, (int)n, (int)n, 1.0, B, (int)n, 0.0, H,
                    (int)n);
    for (size_t i = 0; i < m->nel; i++) {
        int64_t r = (int64_t)i % lda, c = (int64_t)i / lda;
        if (r >= n || c >= n) { /* padding rows and the guard */
            double v = (i & 1) ? NAN : -4096.5 - (double)(i % 64);
            ref_set(dt, m->a, i, v, v), ref_set(dt, m->h, i, v, v);
            continue;
        }
        int64_t lr = r >= c ? r : c, lc = r >= c ? c : r; /* H holds the lower triangle */
        double re = H[(size_t)(lr + lc * n) * f],
               im = f == 2 ? H[(size_t)(lr + lc * n) * f + 1] : 0;
        if (r < c) im = -im;
        if (r == c) re += (double)n, im = 0;
        ref_set(dt, m->h, i, re, im);
        if (in_tri(m, r, c))
            ref_set(dt, m->a, i, re, im);
        else
            ref_set(dt, m->a, i, NAN, NAN);
    }
    free(B), free(H);
}

/* Element (r, c) of the Hermitian matrix and its mirror (c, r) = conj (tessera's copy holds
 * the one inside its triangle). */
static void mat_set(struct mat *m, int64_t r, int64_t c, double re, double im) {
    ref_set(m->dt, m->h, ix(m, r, c), re, im);
    ref_set(m->dt, m->h, ix(m, c, r), re, -im);
    if (in_tri(m, r, c))
        ref_set(m->dt, m->a, ix(m, r, c), re, im);
    else
        ref_set(m->dt, m->a, ix(m, c, r), re, -im);
}

static int lapack_potrf(tess_dtype_t dt, char u, int64_t n, void *a, int64_t lda) {
    int nn = (int)n, ld = (int)lda, info = -999;
    switch (dt) {
    case TESS_S: spotrf_(&u, &nn, a, &ld, &info); break;
    case TESS_D: dpotrf_(&u, &nn, a, &ld, &info); break;
    case TESS_C: cpotrf_(&u, &nn, a, &ld, &info); break;
    case TESS_Z: zpotrf_(&u, &nn, a, &ld, &info); break;
    }
    return info;
}

/* The input is complete: keep a copy, and LAPACK factors h. */
static void mat_finish(struct mat *m) {
    memcpy(m->a0, m->a, m->nel * m->es);
    m->ref_info = lapack_potrf(m->dt, m->u, m->n, m->h, m->lda);
}

static void mat_free(struct mat *m) { free(m->a), free(m->a0), free(m->h); }

/* tessera on the matrix: tess_potrf (generic) or tess_?potrf. */
static int call(const struct mat *m, int generic, int64_t *info) {
    if (generic) return tess_potrf(m->dt, m->layout, m->uplo, m->n, m->a, m->lda, info);
    switch (m->dt) {
    case TESS_S: return tess_spotrf(m->layout, m->uplo, m->n, (float *)m->a, m->lda, info);
    case TESS_D: return tess_dpotrf(m->layout, m->uplo, m->n, (double *)m->a, m->lda, info);
    case TESS_C: return tess_cpotrf(m->layout, m->uplo, m->n, m->a, m->lda, info);
    case TESS_Z: return tess_zpotrf(m->layout, m->uplo, m->n, m->a, m->lda, info);
    }
    return -100;
}

/* Index + 1 of the first element outside the triangle (the other strict triangle, the padding
 * rows, the guard) that differs from the input in any bit; 0 if none. */
static size_t outside_changed(const struct mat *m) {
    for (size_t i = 0; i < m->nel; i++) {
        if (in_tri(m, (int64_t)i % m->lda, (int64_t)i / m->lda)) continue;
        if (memcmp(m->a + i * m->es, m->a0 + i * m->es, m->es)) return i + 1;
    }
    return 0;
}

/* In the leading k columns (u 'L') or rows ('U') of the triangle. */
static int leading(const struct mat *m, int64_t r, int64_t c, int64_t k) {
    return in_tri(m, r, c) && (m->u == 'L' ? c < k : r < k);
}

/* |F - R|_F / (|R|_F n eps) over the leading k columns (rows) of the triangle, F tessera's
 * factor, R LAPACK's; infinity when F holds a NaN or an infinity there. */
static double factor_err(const struct mat *m, int64_t k) {
    long double d2 = 0, r2 = 0;
    for (int64_t c = 0; c < m->n; c++)
        for (int64_t r = 0; r < m->n; r++) {
            if (!leading(m, r, c, k)) continue;
            long double xr, xi, yr, yi;
            ref_get(m->dt, m->a, ix(m, r, c), &xr, &xi);
            ref_get(m->dt, m->h, ix(m, r, c), &yr, &yi);
            if (!isfinite(xr) || !isfinite(xi)) return INFINITY;
            d2 += (xr - yr) * (xr - yr) + (xi - yi) * (xi - yi);
            r2 += yr * yr + yi * yi;
        }
    if (r2 == 0) return d2 == 0 ? 0 : INFINITY;
    return (double)(sqrtl(d2 / r2) / ((long double)m->n * unit(m->dt)));
}

/* |M - L L^H|_F / (|M|_F n eps) over the lower triangle, M the input (its triangle u), L the
 * factor (u 'U': L = U^H), in long double; infinity when the factor is not finite. */
static double backward_err(const struct mat *m) {
    int64_t n = m->n;
    long double *lr = calloc((size_t)(n * n), sizeof *lr),
                *li = calloc((size_t)(n * n), sizeof *li);
    if (!lr || !li) abort();
    double out = 0;
    for (int64_t r = 0; r < n; r++) /* row-major L: row r's entries contiguous */
        for (int64_t c = 0; c <= r; c++) {
            long double re, im;
            ref_get(m->dt, m->a, m->u == 'L' ? ix(m, r, c) : ix(m, c, r), &re, &im);
            if (m->u == 'U') im = -im;
            if (!isfinite(re) || !isfinite(im)) out = INFINITY;
            lr[r * n + c] = re, li[r * n + c] = im;
        }
    if (out == 0) {
        long double e2 = 0, a2 = 0;
        for (int64_t r = 0; r < n; r++)
            for (int64_t c = 0; c <= r; c++) {
                long double sr = 0, si = 0;
                const long double *xr = lr + r * n, *xi = li + r * n, *yr = lr + c * n,
                                  *yi = li + c * n;
                for (int64_t k = 0; k <= c; k++) { /* L(r,k) conj(L(c,k)) */
                    sr += xr[k] * yr[k] + xi[k] * yi[k];
                    si += xi[k] * yr[k] - xr[k] * yi[k];
                }
                long double mr, mi;
                ref_get(m->dt, m->a0, m->u == 'L' ? ix(m, r, c) : ix(m, c, r), &mr, &mi);
                if (m->u == 'U') mi = -mi;
                e2 += (mr - sr) * (mr - sr) + (mi - si) * (mi - si);
                a2 += mr * mr + mi * mi;
            }
        out = (double)(sqrtl(e2 / a2) / ((long double)n * unit(m->dt)));
    }
    free(lr), free(li);
    return out;
}

/* Largest ratios seen by a group (printed in its line). */
struct maxes {
    double fwd, bwd;
    int cases;
};

/* On a failure: the tiles (TILE x TILE) of the triangle as a map, row by row: '.' within
 * FWD_BOUND n eps of LAPACK's (elementwise, relative to max |L_lapack|), 'i' every element as
 * the input had it, 'n' a NaN or infinity, 'x' another wrong value. */
static void tile_map(const struct mat *m) {
    long double mx = 0;
    for (size_t i = 0; i < (size_t)(m->lda * m->n); i++) {
        long double re, im;
        if (!in_tri(m, (int64_t)i % m->lda, (int64_t)i / m->lda)) continue;
        ref_get(m->dt, m->h, i, &re, &im);
        mx = fmaxl(mx, fabsl(re) + fabsl(im));
    }
    const long double tol = FWD_BOUND * (long double)m->n * unit(m->dt) * mx;
    fprintf(stderr, "  tiles of %s (u %c in the column-major view):\n", m->desc, m->u);
    for (int64_t ti = 0; ti * TILE < m->n; ti++) {
        fprintf(stderr, "    ");
        for (int64_t tj = 0; tj * TILE < m->n; tj++) {
            int input = 1, nonfinite = 0, wrong = 0, any = 0;
            for (int64_t c = tj * TILE; c < m->n && c < (tj + 1) * TILE; c++)
                for (int64_t r = ti * TILE; r < m->n && r < (ti + 1) * TILE; r++) {
                    if (!in_tri(m, r, c)) continue;
                    long double xr, xi, yr, yi;
                    size_t i = ix(m, r, c);
                    any = 1;
                    ref_get(m->dt, m->a, i, &xr, &xi);
                    ref_get(m->dt, m->h, i, &yr, &yi);
                    input &= !memcmp(m->a + i * m->es, m->a0 + i * m->es, m->es);
                    nonfinite |= !isfinite(xr) || !isfinite(xi);
                    wrong |= !(fabsl(xr - yr) + fabsl(xi - yi) <= tol);
                }
            fputc(!any ? ' ' : !wrong ? '.' : nonfinite ? 'n' : input ? 'i' : 'x', stderr);
        }
        fputc('\n', stderr);
    }
}

/* After a call that must have factored the SPD matrix m: TESS_OK, info 0, the factor against
 * LAPACK's and its backward error, nothing outside the triangle written. */
static void check_factor(const struct mat *m, const char *tag, int rc, int64_t info,
                         struct maxes *mx) {
    ASSERT_MSG(m->ref_info == 0, "%s %s: LAPACK's info %d on the test's SPD matrix", tag, m->desc,
               m->ref_info);
    ASSERT_MSG(rc == TESS_OK, "%s %s: returned %d (%s)", tag, m->desc, rc, tess_last_error());
    ASSERT_MSG(info == 0, "%s %s: info %lld, want 0", tag, m->desc, (long long)info);
    size_t bad = outside_changed(m);
    ASSERT_MSG(!bad,
               "%s %s: element %zu (row %lld, column %lld of the column-major storage), outside "
               "the triangle %c, was written",
               tag, m->desc, bad - 1, (long long)((bad - 1) % (size_t)m->lda),
               (long long)((bad - 1) / (size_t)m->lda), m->u);
    double f = factor_err(m, m->n), b = backward_err(m);
    if (!(f <= FWD_BOUND && b <= BWD_BOUND)) tile_map(m);
    ASSERT_MSG(f <= FWD_BOUND, "%s %s: |L - L_lapack|_F / |L_lapack|_F = %.3g n eps (bound %g)",
               tag, m->desc, f, FWD_BOUND);
    ASSERT_MSG(b <= BWD_BOUND, "%s %s: |A - L L^H|_F / |A|_F = %.3g n eps (bound %g)", tag, m->desc,
               b, BWD_BOUND);
    if (mx) {
        mx->fwd = fmax(mx->fwd, f), mx->bwd = fmax(mx->bwd, b);
        mx->cases++;
    }
}

static const tess_dtype_t dts[4] = {TESS_S, TESS_D, TESS_C, TESS_Z};
static const tess_layout_t lays[2] = {TESS_COL_MAJOR, TESS_ROW_MAJOR};
static const tess_uplo_t uplos[2] = {TESS_LOWER, TESS_UPPER};

/* Every precision, uplo and layout at sizes[], lda = n + 1..5, on the runtime running. */
static void sweep(const char *tag, const int64_t *sizes, int nsizes, struct maxes *mx) {
    int idx = 0;
    for (int d = 0; d < 4; d++)
        for (int u = 0; u < 2; u++)
            for (int l = 0; l < 2; l++)
                for (int s = 0; s < nsizes; s++, idx++) {
                    struct mat m;
                    int64_t n = sizes[s];
                    mat_make(&m, dts[d], lays[l], uplos[u], n, n + 1 + idx % 5,
                             1000 + (uint64_t)idx);
                    mat_finish(&m);
                    int64_t info = -77;
                    int rc = call(&m, idx & 1, &info);
                    check_factor(&m, tag, rc, info, mx);
                    mat_free(&m);
                }
}

/* s, d, c, z x L, U x column-, row-major x n = 1, 31, 33, 100, 157 with lda > n, tile 32, 3
 * emulated devices, typed and generic entries in turn: TESS_OK, info 0, the factor within
 * 20 n eps of LAPACK's (normwise), backward error below 20 n eps, and the other strict
 * triangle (NaN, so never read into the factor), the padding rows and a guard after the
 * matrix bit for bit as they were. */
TEST(lapack) {
    static const int64_t sizes[] = {1, 31, 33, 100, 157};
    start(3, "32", "16M");
    ASSERT_OK(tess_init());
    struct maxes mx = {0, 0, 0};
    sweep("lapack", sizes, 5, &mx);
    ASSERT_OK(tess_finalize());
    fprintf(stderr,
            "  lapack: %d cases (s d c z, L U, col row, n 1..157, tile 32, 3 devices): worst "
            "|L - L_lapack| %.3g n eps, backward %.3g n eps\n",
            mx.cases, mx.fwd, mx.bwd);
}

/* The same checks with the tasks' order shuffled: 2 devices of 4 streams each, random
 * delays up to 30 us before every emulated operation, tile 16 (n = 45, 157: 3 and 10 tiles a
 * side). */
TEST(jitter) {
    static const int64_t sizes[] = {45, 157};
    start(2, "16", "16M");
    setenv("TESSERA_EMULATE_STREAMS", "4", 1);
    setenv("TESSERA_EMULATE_JITTER", "30", 1);
    ASSERT_OK(tess_init());
    struct maxes mx = {0, 0, 0};
    sweep("jitter", sizes, 2, &mx);
    ASSERT_OK(tess_finalize());
    fprintf(stderr,
            "  jitter: %d cases (n 45, 157, tile 16, 2 devices x 4 streams, jitter 30 us): worst "
            "|L - L_lapack| %.3g n eps, backward %.3g n eps\n",
            mx.cases, mx.fwd, mx.bwd);
}

/* A runtime without device memory (the CPU worker alone): the same checks at n = 100. */
TEST(cpu_worker) {
    static const int64_t sizes[] = {100};
    start(0, "32", "16M");
    ASSERT_OK(tess_init());
    struct maxes mx = {0, 0, 0};
    sweep("cpu_worker", sizes, 1, &mx);
    ASSERT_OK(tess_finalize());
    fprintf(stderr,
            "  cpu_worker: %d cases (n 100, no emulated device): worst |L - L_lapack| %.3g n eps, "
            "backward %.3g n eps\n",
            mx.cases, mx.fwd, mx.bwd);
}

/* Diagonal entry j of an SPD matrix (n = 100, tile 32) set to -1000 n: j = 0, 31, 32, 64 (tile
 * boundaries), 45 (mid-tile), 99 (the last, partial tile); every precision, uplo and layout:
 * TESS_OK, *info = j + 1 = LAPACK's info, nothing outside the triangle written, and the
 * leading j columns (uplo L) or rows (U) of the factor final (tessera.h): within 20 n eps of
 * LAPACK's factor of the matrix before entry j changed (those columns do not depend on it).
 * Not LAPACK's output on the changed matrix: OpenBLAS's blocked ?potrf_ leaves the rows
 * below its failing diagonal block undone, as LAPACK's own blocked DPOTRF does. Every case
 * runs; the failures are listed at the end. */
TEST(not_pd) {
    static const int64_t js[] = {0, 31, 32, 45, 64, 99};
    const int64_t n = 100;
    start(3, "32", "16M");
    ASSERT_OK(tess_init());
    int cases = 0, idx = 0, failed = 0;
    double worst = 0;
    for (int d = 0; d < 4; d++)
        for (int u = 0; u < 2; u++)
            for (int l = 0; l < 2; l++)
                for (int t = 0; t < 6; t++, idx++) {
                    struct mat m;
                    int64_t j = js[t];
                    mat_make(&m, dts[d], lays[l], uplos[u], n, n + 2, 2000 + (uint64_t)idx);
                    char *spd = ref_malloc(m.nel * m.es);
                    memcpy(spd, m.h, m.nel * m.es);
                    mat_set(&m, j, j, -1000.0 * (double)n, 0);
                    mat_finish(&m);
                    ASSERT_MSG(m.ref_info == j + 1, "%s j=%lld: LAPACK's info %d (the test)",
                               m.desc, (long long)j, m.ref_info);
                    int spd_info = lapack_potrf(m.dt, m.u, n, spd, m.lda);
                    ASSERT_MSG(spd_info == 0, "%s: LAPACK's info %d before the change (the test)",
                               m.desc, spd_info);
                    memcpy(m.h, spd, m.nel * m.es); /* the reference: the final columns */
                    free(spd);
                    int64_t info = -77;
                    int rc = call(&m, idx & 1, &info);
                    ASSERT_MSG(rc == TESS_OK, "not_pd %s j=%lld: returned %d (%s)", m.desc,
                               (long long)j, rc, tess_last_error());
                    ASSERT_MSG(info == j + 1, "not_pd %s j=%lld: info %lld, want %lld (LAPACK's)",
                               m.desc, (long long)j, (long long)info, (long long)(j + 1));
                    size_t bad = outside_changed(&m);
                    ASSERT_MSG(!bad,
                               "not_pd %s j=%lld: element %zu outside the triangle %c was written",
                               m.desc, (long long)j, bad - 1, m.u);
                    double f = factor_err(&m, j);
                    if (!(f <= FWD_BOUND)) {
                        fprintf(stderr,
                                "  not_pd %s j=%lld: info %lld right, but the leading %lld %s "
                                "are not final: %.3g n eps from the factor's (bound %g)\n",
                                m.desc, (long long)j, (long long)info, (long long)j,
                                m.uplo == TESS_LOWER ? "columns" : "rows", f, FWD_BOUND);
                        if (failed++ < 2) tile_map(&m);
                    } else {
                        worst = fmax(worst, f);
                    }
                    cases++;
                    mat_free(&m);
                }
    ASSERT_OK(tess_finalize());
    fprintf(stderr,
            "  not_pd: %d cases (s d c z, L U, col row, n 100, j 0 31 32 45 64 99): info = j + 1; "
            "leading part not final in %d; worst of the others %.3g n eps\n",
            cases, failed, worst);
    ASSERT_MSG(!failed, "%d case(s) with leading columns (rows) not final", failed);
}

/* ---- arguments -------------------------------------------------------------------------- */

struct bad_case {
    int layout, uplo;
    int64_t n;
    int null_a;
    int64_t lda, want; /* want: *info, -(position of the first bad argument) */
    const char *what;
};

/* One bad call: TESS_EINVAL, *info = want (when info is given), a message from this call
 * naming potrf (another failing call set a different one just before), A untouched. */
static void bad_call(tess_dtype_t dt, const struct bad_case *b, int generic, int with_info, char *A,
                     const char *A0, size_t bytes) {
    ASSERT_EQ(tess_hold((tess_dtype_t)9, A, 8, 5, 5, 0), TESS_EINVAL); /* another message */
    ASSERT_MSG(!strstr(tess_last_error(), "potrf"), "tess_hold's message names potrf: %s",
               tess_last_error());
    int64_t info = 4242;
    void *a = b->null_a ? NULL : A;
    int64_t *pi = with_info ? &info : NULL;
    tess_layout_t L = (tess_layout_t)b->layout;
    tess_uplo_t U = (tess_uplo_t)b->uplo;
    int rc;
    if (generic)
        rc = tess_potrf(dt, L, U, b->n, a, b->lda, pi);
    else if (dt == TESS_S)
        rc = tess_spotrf(L, U, b->n, a, b->lda, pi);
    else if (dt == TESS_D)
        rc = tess_dpotrf(L, U, b->n, a, b->lda, pi);
    else if (dt == TESS_C)
        rc = tess_cpotrf(L, U, b->n, a, b->lda, pi);
    else
        rc = tess_zpotrf(L, U, b->n, a, b->lda, pi);
    const char *who = generic ? "tess_potrf" : "tess_?potrf";
    ASSERT_MSG(rc == TESS_EINVAL, "%s(%s) %s, info %s: returned %d, want TESS_EINVAL", who,
               ref_dtype_name(dt), b->what, with_info ? "given" : "NULL", rc);
    if (with_info)
        ASSERT_MSG(info == b->want, "%s(%s) %s: *info %lld, want %lld", who, ref_dtype_name(dt),
                   b->what, (long long)info, (long long)b->want);
    ASSERT_MSG(strstr(tess_last_error(), "potrf"),
               "%s(%s) %s, info %s: tess_last_error() is not this call's: \"%s\"", who,
               ref_dtype_name(dt), b->what, with_info ? "given" : "NULL", tess_last_error());
    ASSERT_MSG(!memcmp(A, A0, bytes), "%s(%s) %s: A was written", who, ref_dtype_name(dt), b->what);
}

/* Every bad argument alone, and two at once (the first one is reported, as LAPACK does),
 * in every precision through the typed and the generic entries, with info given and NULL:
 * TESS_EINVAL, *info = -position (layout 1, uplo 2, n 3, A 4, lda 5, also for tess_potrf),
 * a message from that call, A (random, n = 5, lda 6) untouched. Valid arguments with info
 * NULL: TESS_EINVAL. n = 0 (A NULL or not, lda 1): TESS_OK, *info = 0. tess_potrf with
 * dtype 4 or -1: TESS_EINVAL, A untouched. */
TEST(bad_args) {
    const int C = TESS_COL_MAJOR, R = TESS_ROW_MAJOR, L = TESS_LOWER, U = TESS_UPPER;
    static const struct bad_case bad[] = {
        {0, TESS_LOWER, 5, 0, 6, -1, "layout 0"},
        {100, TESS_LOWER, 5, 0, 6, -1, "layout 100"},
        {103, TESS_LOWER, 5, 0, 6, -1, "layout 103"},
        {TESS_COL_MAJOR, 0, 5, 0, 6, -2, "uplo 0"},
        {TESS_COL_MAJOR, 120, 5, 0, 6, -2, "uplo 120"},
        {TESS_ROW_MAJOR, 123, 5, 0, 6, -2, "uplo 123"},
        {TESS_COL_MAJOR, TESS_NO_TRANS, 5, 0, 6, -2, "uplo 111 (a trans value)"},
        {TESS_COL_MAJOR, TESS_LOWER, -1, 0, 6, -3, "n -1"},
        {TESS_ROW_MAJOR, TESS_UPPER, -100, 0, 6, -3, "n -100"},
        {TESS_COL_MAJOR, TESS_LOWER, 5, 1, 6, -4, "A NULL, n 5"},
        {TESS_ROW_MAJOR, TESS_UPPER, 5, 1, 6, -4, "A NULL, n 5, row-major"},
        {TESS_COL_MAJOR, TESS_LOWER, 5, 0, 4, -5, "lda 4 < n 5"},
        {TESS_ROW_MAJOR, TESS_LOWER, 5, 0, 4, -5, "lda 4 < n 5, row-major"},
        {TESS_COL_MAJOR, TESS_UPPER, 5, 0, -1, -5, "lda -1"},
        {TESS_COL_MAJOR, TESS_LOWER, 0, 0, 0, -5, "lda 0, n 0"},
        {TESS_COL_MAJOR, TESS_UPPER, 1, 0, 0, -5, "lda 0, n 1"},
        {TESS_COL_MAJOR, 0, -1, 0, 6, -2, "uplo 0 and n -1"},
        {TESS_COL_MAJOR, TESS_LOWER, -1, 0, 0, -3, "n -1 and lda 0"},
        {TESS_ROW_MAJOR, TESS_LOWER, 5, 1, 4, -4, "A NULL and lda 4"},
        {0, 0, -1, 1, 0, -1, "everything"},
    };
    const int nbad = (int)(sizeof bad / sizeof bad[0]);
    start(2, "32", "16M");
    ASSERT_OK(tess_init());
    uint64_t rng = 77;
    const size_t cap = 6 * 5 * 16;
    char *A = ref_malloc(cap), *A0 = ref_malloc(cap);
    int calls = 0;
    for (int d = 0; d < 4; d++) {
        tess_dtype_t dt = dts[d];
        ref_fill_random(dt, A, 30, &rng);
        size_t bytes = 30 * ref_esize(dt);
        memcpy(A0, A, bytes);
        for (int i = 0; i < nbad; i++)
            for (int g = 0; g < 2; g++)
                for (int wi = 1; wi >= 0; wi--, calls++) bad_call(dt, &bad[i], g, wi, A, A0, bytes);
        /* valid arguments, info NULL */
        const struct bad_case ok = {C, L, 5, 0, 6, 0, "valid arguments"};
        for (int g = 0; g < 2; g++, calls++) bad_call(dt, &ok, g, 0, A, A0, bytes);
        /* n = 0 */
        for (int l = 0; l < 2; l++)
            for (int g = 0; g < 2; g++)
                for (int na = 0; na < 2; na++, calls++) {
                    struct mat m;
                    memset(&m, 0, sizeof m);
                    m.dt = dt, m.layout = l ? R : C, m.uplo = g ? U : L, m.n = 0, m.lda = 1;
                    m.a = na ? NULL : A;
                    int64_t info = 4242;
                    int rc = call(&m, g, &info);
                    ASSERT_MSG(rc == TESS_OK && info == 0,
                               "%s n = 0, A %s: returned %d, info %lld; want TESS_OK, 0",
                               ref_dtype_name(dt), na ? "NULL" : "given", rc, (long long)info);
                }
        ASSERT_MSG(!memcmp(A, A0, bytes), "%s: n = 0 wrote A", ref_dtype_name(dt));
    }
    /* the generic entry with a bad dtype */
    ref_fill_random(TESS_Z, A, 30, &rng);
    memcpy(A0, A, cap);
    for (int b = 0; b < 2; b++, calls++) {
        int64_t info = 4242;
        tess_dtype_t dt = (tess_dtype_t)(b ? -1 : 4);
        ASSERT_EQ(tess_hold((tess_dtype_t)9, A, 8, 5, 5, 0), TESS_EINVAL);
        int rc = tess_potrf(dt, TESS_COL_MAJOR, TESS_LOWER, 5, A, 6, &info);
        ASSERT_MSG(rc == TESS_EINVAL, "tess_potrf(dtype %d): returned %d", (int)dt, rc);
        ASSERT_MSG(strstr(tess_last_error(), "potrf"), "tess_potrf(dtype %d): message \"%s\"",
                   (int)dt, tess_last_error());
        ASSERT_MSG(!memcmp(A, A0, cap), "tess_potrf(dtype %d) wrote A", (int)dt);
    }
    ASSERT_OK(tess_finalize());
    free(A), free(A0);
    fprintf(stderr,
            "  bad_args: %d calls (%d bad cases x s d c z x typed, generic x info, NULL; valid "
            "with info NULL; n = 0; bad dtype): TESS_EINVAL, *info, message, A untouched\n",
            calls, nbad);
}

/* ---- counters ------------------------------------------------------------------------------ */

/* Bytes of the tiles (tile x tile, anchored at A) of one triangle of an n x n matrix: what
 * crosses the host link one way when each of its tiles crosses once. */
static uint64_t triangle_tile_bytes(int64_t n, int64_t t, size_t es) {
    uint64_t s = 0;
    for (int64_t i = 0; i < n; i += t)
        for (int64_t j = 0; j <= i; j += t)
            s += (uint64_t)((n - i < t ? n - i : t) * (n - j < t ? n - j : t)) * es;
    return s;
}

/* n = 200, tile 32 (7 x 7 tiles, 28 in the triangle) on 3 emulated devices, d column-major L
 * and z row-major L: the factor is right; the devices launched exactly the tile kernels of
 * the tile Cholesky (7 POTRF, 21 TRSM, 56 updates: one each; how they spread over the
 * devices depends on the machine's load, so it is printed, not asserted); and
 * the tiles stayed on the devices across the tile tasks: summed over the devices bytes_h2d
 * and bytes_d2h are each at most the bytes of the triangle's tiles (each tile into the
 * devices once, the peers serving the others, and out once). Write-behind is on and the
 * devices slowed (TESSERA_EMULATE_GFLOPS) so that tiles idle past its 50 ms between their
 * updates: it must leave a tile a later task of the call writes again. */
TEST(counters) {
    start(3, "32", "16M");
    setenv("TESSERA_WRITE_BEHIND", "1", 1);
    setenv("TESSERA_EMULATE_GFLOPS", "0.005", 1);
    ASSERT_OK(tess_init());
    ASSERT_EQ(tess_device_count(), 3);
    for (int v = 0; v < 2; v++) {
        struct mat m;
        const int64_t n = 200;
        mat_make(&m, v ? TESS_Z : TESS_D, v ? TESS_ROW_MAJOR : TESS_COL_MAJOR, TESS_LOWER, n, 203,
                 3000 + (uint64_t)v);
        mat_finish(&m);
        tess_reset_stats();
        int64_t info = -77;
        int rc = call(&m, 0, &info);
        check_factor(&m, "counters", rc, info, NULL);
        uint64_t h2d = 0, d2h = 0, p2p = 0, steps[3] = {0, 0, 0};
        uint64_t total = 0;
        for (int d = 0; d < 3; d++) {
            tess_dev_stats_t st;
            ASSERT_OK(tess_device_stats(d, &st));
            h2d += st.bytes_h2d, d2h += st.bytes_d2h, p2p += st.bytes_p2p;
            steps[d] = st.steps;
            total += st.steps;
        }
        uint64_t bound = triangle_tile_bytes(n, TILE, m.es);
        fprintf(stderr,
                "  counters: %s: steps %llu %llu %llu; h2d %llu, d2h %llu (bound: the triangle's "
                "tiles %llu), p2p %llu\n",
                m.desc, (unsigned long long)steps[0], (unsigned long long)steps[1],
                (unsigned long long)steps[2], (unsigned long long)h2d, (unsigned long long)d2h,
                (unsigned long long)bound, (unsigned long long)p2p);
        ASSERT_MSG(total == 7 + 21 + 56,
                   "%s: the devices launched %llu tile kernels, want 84 (7 POTRF, 21 TRSM, 56 "
                   "updates)",
                   m.desc, (unsigned long long)total);
        ASSERT_MSG(h2d <= bound,
                   "%s: %llu bytes host to device, more than the triangle's tiles (%llu): tiles "
                   "crossed the host link more than once",
                   m.desc, (unsigned long long)h2d, (unsigned long long)bound);
        ASSERT_MSG(d2h <= bound,
                   "%s: %llu bytes device to host, more than the triangle's tiles (%llu)", m.desc,
                   (unsigned long long)d2h, (unsigned long long)bound);
        mat_free(&m);
    }
    ASSERT_OK(tess_finalize());
}

/* ---- held data ---------------------------------------------------------------------------- */

/* tess_hold(d, A, lda, n, n, 32) then tess_dpotrf column-major on A (n = 150, lda 153), L and
 * U, 3 devices: TESS_OK, info 0; after tess_sync(A) (A stays held: it succeeds) the factor
 * is right and nothing outside the triangle changed; the same after tess_release(A). */
TEST(held) {
    start(3, "32", "16M");
    setenv("TESSERA_WRITE_BEHIND", "0", 1);
    ASSERT_OK(tess_init());
    struct maxes mx = {0, 0, 0};
    for (int u = 0; u < 2; u++) {
        struct mat m;
        const int64_t n = 150;
        mat_make(&m, TESS_D, TESS_COL_MAJOR, uplos[u], n, 153, 4000 + (uint64_t)u);
        mat_finish(&m);
        ASSERT_OK(tess_hold(TESS_D, m.a, m.lda, n, n, 32));
        tess_reset_stats();
        int64_t info = -77;
        int rc = tess_dpotrf(TESS_COL_MAJOR, uplos[u], n, (double *)m.a, m.lda, &info);
        ASSERT_MSG(rc == TESS_OK && info == 0, "held %s: returned %d (%s), info %lld", m.desc, rc,
                   tess_last_error(), (long long)info);
        uint64_t d2h_before = 0;
        for (int d = 0; d < 3; d++) {
            tess_dev_stats_t st;
            ASSERT_OK(tess_device_stats(d, &st));
            d2h_before += st.bytes_d2h;
        }
        rc = tess_sync(m.a);
        ASSERT_MSG(rc == TESS_OK, "held %s: tess_sync returned %d (%s)", m.desc, rc,
                   tess_last_error());
        check_factor(&m, "held, after tess_sync:", rc, info, &mx);
        rc = tess_release(m.a);
        ASSERT_MSG(rc == TESS_OK, "held %s: tess_release returned %d (%s)", m.desc, rc,
                   tess_last_error());
        check_factor(&m, "held, after tess_release:", rc, info, &mx);
        fprintf(stderr,
                "  held: %s: right after tess_sync and tess_release (d2h before the sync "
                "%llu bytes, write-behind off)\n",
                m.desc, (unsigned long long)d2h_before);
        mat_free(&m);
    }
    ASSERT_OK(tess_finalize());
}

/* ---- faults ------------------------------------------------------------------------------- */

/* fault_sweep's point: the matrix restored, tess_dpotrf or tess_zpotrf */
static int fault_run(void *ctx, int64_t *info) {
    struct mat *m = ctx;
    memcpy(m->a, m->a0, m->nel * m->es);
    return call(m, 0, info);
}

/* TESS_OK: a right factor; TESS_EDEVICE: nothing outside the triangle written */
static void fault_check(void *ctx, const char *tag, int rc, int64_t info) {
    struct mat *m = ctx;
    if (rc == TESS_OK) {
        check_factor(m, tag, rc, info, NULL);
        return;
    }
    size_t bad = outside_changed(m);
    ASSERT_MSG(!bad, "%s %s: TESS_EDEVICE, and element %zu outside the triangle written", tag,
               m->desc, bad - 1);
}

/* Device 1 of 3 fails at its k-th copy or kernel (TESSERA_FAULT=1:k), k = 1, 2, ... until
 * it no longer reaches k six times in a row: the call returns TESS_OK with info 0 and a
 * right factor (against LAPACK and the backward error), or TESS_EDEVICE with a message;
 * never anything else, never TESS_OK with a wrong factor; nothing outside the triangle is
 * written either way. d column-major L and z row-major L (n = 100, tile 32), with
 * TESSERA_RECOVER=0, and d with TESSERA_RECOVER=1. A failure prints the tile map (tile_map).
 * Reproducer: TESS_POTRF_FAULT=k runs fault point k alone. */
static void fault_sweep(tess_dtype_t dt, tess_layout_t layout, const char *recover) {
    struct mat m;
    mat_make(&m, dt, layout, TESS_LOWER, 100, 103, 5000 + (uint64_t)dt);
    mat_finish(&m);
    struct emu_sweep s = {.env = "TESS_POTRF_FAULT",
                          .recover = recover,
                          .desc = m.desc,
                          .kmax = 300,
                          .start = start,
                          .run = fault_run,
                          .check = fault_check,
                          .ctx = &m};
    emu_fault_sweep(&s);
    fprintf(stderr,
            "  faults: %s, TESSERA_RECOVER=%s: device 1 fails at op k = %d..%d (%d reached): %d "
            "TESS_OK with a right factor, %d TESS_EDEVICE\n",
            m.desc, recover, s.k0, s.k - 1, s.hit, s.right, s.edev);
    ASSERT_MSG(s.hit > 0 || s.k1 == s.k0, "%s: device 1 never reached its fault point", m.desc);
    mat_free(&m);
}

TEST(faults) {
    fault_sweep(TESS_D, TESS_COL_MAJOR, "0");
    fault_sweep(TESS_Z, TESS_ROW_MAJOR, "0");
    fault_sweep(TESS_D, TESS_COL_MAJOR, "1");
}

/* ---- NaN -------------------------------------------------------------------------------- */

/* One NaN inside the referenced triangle of an SPD matrix (n = 100, tile 32; on the diagonal
 * at 0 and 45, off it at (50, 20) and (99, 97)), every precision, uplo and layout: TESS_OK,
 * info >= 0, and never info 0 with an all-finite factor; nothing outside the triangle
 * written. */
TEST(nan) {
    static const int64_t at[4][2] = {{0, 0}, {45, 45}, {50, 20}, {99, 97}};
    const int64_t n = 100;
    start(3, "32", "16M");
    ASSERT_OK(tess_init());
    int info_pos = 0, nan_factor = 0, cases = 0, idx = 0;
    for (int d = 0; d < 4; d++)
        for (int u = 0; u < 2; u++)
            for (int l = 0; l < 2; l++)
                for (int p = 0; p < 4; p++, idx++) {
                    struct mat m;
                    mat_make(&m, dts[d], lays[l], uplos[u], n, n + 1, 6000 + (uint64_t)idx);
                    mat_set(&m, at[p][0], at[p][1], NAN, 0);
                    mat_finish(&m);
                    int64_t info = -77;
                    int rc = call(&m, idx & 1, &info);
                    ASSERT_MSG(rc == TESS_OK && info >= 0,
                               "nan %s, NaN at (%lld, %lld): returned %d (%s), info %lld", m.desc,
                               (long long)at[p][0], (long long)at[p][1], rc, tess_last_error(),
                               (long long)info);
                    size_t nonfinite = 0;
                    for (int64_t c = 0; c < n; c++)
                        for (int64_t r = 0; r < n; r++) {
                            if (!in_tri(&m, r, c)) continue;
                            long double re, im;
                            ref_get(m.dt, m.a, ix(&m, r, c), &re, &im);
                            nonfinite += !isfinite(re) || !isfinite(im);
                        }
                    ASSERT_MSG(info > 0 || nonfinite > 0,
                               "nan %s, NaN at (%lld, %lld): TESS_OK, info 0 and an all-finite "
                               "factor",
                               m.desc, (long long)at[p][0], (long long)at[p][1]);
                    size_t bad = outside_changed(&m);
                    ASSERT_MSG(!bad, "nan %s: element %zu outside the triangle was written", m.desc,
                               bad - 1);
                    info_pos += info > 0;
                    nan_factor += info == 0;
                    cases++;
                    mat_free(&m);
                }
    ASSERT_OK(tess_finalize());
    fprintf(stderr,
            "  nan: %d cases (s d c z, L U, col row, 4 places): %d info > 0, %d info 0 with NaN "
            "in the factor\n",
            cases, info_pos, nan_factor);
}

/* ---- solves: tess_?potrs, tess_?posv --------------------------------------------------------
 * B is n x nrhs in the matrix's layout: column-major element (i, r) at i + r ldb (ldb >= n),
 * row-major at i ldb + r (ldb >= nrhs), as LAPACKE. */

/* |X - X_true|_F / (|X_true|_F n eps) for the solves (posv, potrs on LAPACK's factor) and
 * |X - X_lapack|_F / (|X_lapack|_F n eps), X_lapack from ?potrs_ on the same factor, eps the
 * unit roundoff: the forward error is at most the condition number (below 5: the matrices
 * are B B^H + n I) times the backward error of the factorization and the two triangular
 * solves, O(n eps). Seen: at most 3.2 (n = 1: a few roundings of one scalar), below 0.1 at
 * n = 33 and 100. */
#define SOL_BOUND 20.0
#define POTRS_BOUND 20.0

struct rhs {
    int64_t n, nrhs, ldb;
    int row;        /* row-major */
    size_t nel;     /* elements allocated: ldb * (n row-major, nrhs column-major) + GUARD */
    char *b, *b0;   /* tessera's operand; its input */
    char *x;        /* the known X, column-major n x nrhs (leading dimension n) */
    char desc[128]; /* the matrix's, nrhs and ldb */
};

static size_t bix(const struct rhs *b, int64_t i, int64_t r) {
    return b->row ? (size_t)(i * b->ldb + r) : (size_t)(i + r * b->ldb);
}
static int in_rhs(const struct rhs *b, size_t idx) {
    int64_t in = (int64_t)idx % b->ldb, out = (int64_t)idx / b->ldb;
    return b->row ? in < b->nrhs && out < b->n : in < b->n && out < b->nrhs;
}

/* B = A X for a random X (uniform in [-1, 1], in the precision), A the matrix m holds in h
 * (call before mat_finish, which factors h), summed in long double; the padding rows and the
 * guard alternate NaN and markers. */
static void rhs_make(struct rhs *b, const struct mat *m, int64_t nrhs, int64_t ldb, uint64_t seed) {
    memset(b, 0, sizeof *b);
    b->n = m->n, b->nrhs = nrhs, b->ldb = ldb, b->row = m->layout == TESS_ROW_MAJOR;
    b->nel = (size_t)(ldb * (b->row ? m->n : nrhs)) + GUARD;
    b->b = ref_malloc(b->nel * m->es);
    b->b0 = ref_malloc(b->nel * m->es);
    b->x = ref_malloc((size_t)(m->n * nrhs) * m->es);
    snprintf(b->desc, sizeof b->desc, "%s nrhs=%lld ldb=%lld", m->desc, (long long)nrhs,
             (long long)ldb);
    uint64_t rng = seed;
    ref_fill_random(m->dt, b->x, (size_t)(m->n * nrhs), &rng);
    for (size_t i = 0; i < b->nel; i++) {
        double v = (i & 1) ? NAN : -2048.25 - (double)(i % 32);
        ref_set(m->dt, b->b, i, v, v);
    }
    for (int64_t r = 0; r < nrhs; r++)
        for (int64_t i = 0; i < m->n; i++) {
            long double sr = 0, si = 0;
            for (int64_t k = 0; k < m->n; k++) {
                /* A(i, k): the column-major view's (i, k), row-major its (k, i) */
                long double ar, ai, xr, xi;
                ref_get(m->dt, m->h, b->row ? ix(m, k, i) : ix(m, i, k), &ar, &ai);
                ref_get(m->dt, b->x, (size_t)(k + r * m->n), &xr, &xi);
                sr += ar * xr - ai * xi, si += ar * xi + ai * xr;
            }
            ref_set(m->dt, b->b, bix(b, i, r), sr, si);
        }
    memcpy(b->b0, b->b, b->nel * m->es);
}

static void rhs_free(struct rhs *b) { free(b->b), free(b->b0), free(b->x); }

/* Index + 1 of the first element of B's storage outside n x nrhs (the padding rows, the
 * guard) that differs from the input in any bit; 0 if none. */
static size_t rhs_outside_changed(const struct mat *m, const struct rhs *b) {
    for (size_t i = 0; i < b->nel; i++)
        if (!in_rhs(b, i) && memcmp(b->b + i * m->es, b->b0 + i * m->es, m->es)) return i + 1;
    return 0;
}

/* |X - R|_F / (|R|_F n eps), X tessera's solution in B, R column-major n x nrhs (leading
 * dimension n); infinity when X holds a NaN or an infinity. */
static double sol_err(const struct mat *m, const struct rhs *b, const char *ref) {
    long double d2 = 0, r2 = 0;
    for (int64_t r = 0; r < b->nrhs; r++)
        for (int64_t i = 0; i < b->n; i++) {
            long double xr, xi, yr, yi;
            ref_get(m->dt, b->b, bix(b, i, r), &xr, &xi);
            ref_get(m->dt, ref, (size_t)(i + r * b->n), &yr, &yi);
            if (!isfinite(xr) || !isfinite(xi)) return INFINITY;
            d2 += (xr - yr) * (xr - yr) + (xi - yi) * (xi - yi);
            r2 += yr * yr + yi * yi;
        }
    if (r2 == 0) return d2 == 0 ? 0 : INFINITY;
    return (double)(sqrtl(d2 / r2) / ((long double)b->n * unit(m->dt)));
}

/* LAPACK's solution of the input B with the factor in m->h (after mat_finish) into out
 * (column-major n x nrhs, leading dimension n); returns ?potrs_'s info. Row-major A is the
 * conjugate of the column-major view h factors: A X = B is view conj(X) = conj(B). */
static int lapack_potrs(const struct mat *m, const struct rhs *b, char *out) {
    size_t cnt = (size_t)(b->n * b->nrhs);
    for (int64_t r = 0; r < b->nrhs; r++)
        for (int64_t i = 0; i < b->n; i++) {
            long double re, im;
            ref_get(m->dt, b->b0, bix(b, i, r), &re, &im);
            ref_set(m->dt, out, (size_t)(i + r * b->n), re, b->row ? -im : im);
        }
    int nn = (int)b->n, nr = (int)b->nrhs, lda = (int)m->lda, ldx = (int)b->n, info = -999;
    switch (m->dt) {
    case TESS_S: spotrs_(&m->u, &nn, &nr, m->h, &lda, out, &ldx, &info); break;
    case TESS_D: dpotrs_(&m->u, &nn, &nr, m->h, &lda, out, &ldx, &info); break;
    case TESS_C: cpotrs_(&m->u, &nn, &nr, m->h, &lda, out, &ldx, &info); break;
    case TESS_Z: zpotrs_(&m->u, &nn, &nr, m->h, &lda, out, &ldx, &info); break;
    }
    if (b->row)
        for (size_t i = 0; i < cnt; i++) {
            long double re, im;
            ref_get(m->dt, out, i, &re, &im);
            ref_set(m->dt, out, i, re, -im);
        }
    return info;
}

/* tessera's solve: posv (1) or potrs (0), the generic entry or tess_?posv / tess_?potrs. */
static int solve_call(int posv, int generic, tess_dtype_t dt, tess_layout_t layout,
                      tess_uplo_t uplo, int64_t n, int64_t nrhs, void *A, int64_t lda, void *B,
                      int64_t ldb, int64_t *info) {
    if (posv) {
        if (generic) return tess_posv(dt, layout, uplo, n, nrhs, A, lda, B, ldb, info);
        switch (dt) {
        case TESS_S: return tess_sposv(layout, uplo, n, nrhs, A, lda, B, ldb, info);
        case TESS_D: return tess_dposv(layout, uplo, n, nrhs, A, lda, B, ldb, info);
        case TESS_C: return tess_cposv(layout, uplo, n, nrhs, A, lda, B, ldb, info);
        case TESS_Z: return tess_zposv(layout, uplo, n, nrhs, A, lda, B, ldb, info);
        }
        return -100;
    }
    if (generic) return tess_potrs(dt, layout, uplo, n, nrhs, A, lda, B, ldb, info);
    switch (dt) {
    case TESS_S: return tess_spotrs(layout, uplo, n, nrhs, A, lda, B, ldb, info);
    case TESS_D: return tess_dpotrs(layout, uplo, n, nrhs, A, lda, B, ldb, info);
    case TESS_C: return tess_cpotrs(layout, uplo, n, nrhs, A, lda, B, ldb, info);
    case TESS_Z: return tess_zpotrs(layout, uplo, n, nrhs, A, lda, B, ldb, info);
    }
    return -100;
}

/* The function's name: "tess_posv", "tess_dposv", "tess_potrs", ... */
static const char *solve_name(int posv, int generic, tess_dtype_t dt, char *buf, size_t len) {
    snprintf(buf, len, "tess_%s%s", generic ? "" : ref_dtype_name(dt), posv ? "posv" : "potrs");
    return buf;
}

/* Largest ratios seen by the solve group (printed in its line). */
struct solve_maxes {
    double posv, potrs_x, potrs_lapack;
    int cases;
};

/* One solve case on the runtime running; idx picks the leading dimensions, the seeds and
 * the entries (typed or generic). */
static void solve_case(tess_dtype_t dt, tess_layout_t layout, tess_uplo_t uplo, int64_t n,
                       int64_t nrhs, int idx, struct solve_maxes *mx) {
    struct mat m;
    struct rhs b;
    char fn[32];
    int64_t ldb = (layout == TESS_COL_MAJOR ? n : nrhs) + 1 + idx % 3;
    mat_make(&m, dt, layout, uplo, n, n + 1 + idx % 5, 7000 + (uint64_t)idx);
    rhs_make(&b, &m, nrhs, ldb, 8000 + (uint64_t)idx);
    mat_finish(&m);
    ASSERT_MSG(m.ref_info == 0, "solve %s: LAPACK's info %d on the test's SPD matrix", b.desc,
               m.ref_info);
    const size_t abytes = m.nel * m.es;

    /* tess_?posv; the entries in turns, over nrhs too */
    int gen = ((idx >> 1) + idx) & 1;
    solve_name(1, gen, dt, fn, sizeof fn);
    int64_t info = -77;
    int rc = solve_call(1, gen, dt, layout, uplo, n, nrhs, m.a, m.lda, b.b, ldb, &info);
    ASSERT_MSG(rc == TESS_OK, "%s %s: returned %d (%s)", fn, b.desc, rc, tess_last_error());
    ASSERT_MSG(info == 0, "%s %s: info %lld, want 0", fn, b.desc, (long long)info);
    size_t bad = rhs_outside_changed(&m, &b);
    ASSERT_MSG(!bad,
               "%s %s: element %zu of B's storage (outside n x nrhs: padding or guard) was "
               "written",
               fn, b.desc, bad - 1);
    double e = sol_err(&m, &b, b.x);
    ASSERT_MSG(e <= SOL_BOUND, "%s %s: |X - X_true|_F / |X_true|_F = %.3g n eps (bound %g)", fn,
               b.desc, e, SOL_BOUND);
    mx->posv = fmax(mx->posv, e);
    /* its A: tess_?potrf's factor of the same input, every byte (same entry, same tiles) */
    char *p = ref_malloc(abytes);
    memcpy(p, m.a0, abytes);
    struct mat pm = m;
    pm.a = p;
    int64_t pinfo = -77;
    rc = call(&pm, gen, &pinfo);
    ASSERT_MSG(rc == TESS_OK && pinfo == 0, "solve %s: tess_potrf returned %d (%s), info %lld",
               b.desc, rc, tess_last_error(), (long long)pinfo);
    for (size_t i = 0; i < m.nel; i++) {
        if (!memcmp(m.a + i * m.es, p + i * m.es, m.es)) continue;
        long double xr, xi, yr, yi;
        ref_get(dt, m.a, i, &xr, &xi);
        ref_get(dt, p, i, &yr, &yi);
        ASSERT_MSG(0,
                   "%s %s: A's element (%lld, %lld) of the column-major storage is %.17Lg%+.17Lgi, "
                   "tess_potrf's factor has %.17Lg%+.17Lgi",
                   fn, b.desc, (long long)(i % (size_t)m.lda), (long long)(i / (size_t)m.lda), xr,
                   xi, yr, yi);
    }
    free(p);

    /* tess_?potrs with LAPACK's factor, the entry posv did not take; the other strict
     * triangle NaN (never read) */
    gen = !gen;
    solve_name(0, gen, dt, fn, sizeof fn);
    char *f = ref_malloc(abytes), *f0 = ref_malloc(abytes), *xl = ref_malloc(b.nel * m.es);
    memcpy(f, m.a0, abytes);
    for (size_t i = 0; i < (size_t)(m.lda * n); i++)
        if (in_tri(&m, (int64_t)i % m.lda, (int64_t)i / m.lda))
            memcpy(f + i * m.es, m.h + i * m.es, m.es);
    memcpy(f0, f, abytes);
    memcpy(b.b, b.b0, b.nel * m.es);
    info = -77;
    rc = solve_call(0, gen, dt, layout, uplo, n, nrhs, f, m.lda, b.b, ldb, &info);
    ASSERT_MSG(rc == TESS_OK, "%s %s: returned %d (%s)", fn, b.desc, rc, tess_last_error());
    ASSERT_MSG(info == 0, "%s %s: info %lld, want 0", fn, b.desc, (long long)info);
    ASSERT_MSG(!memcmp(f, f0, abytes), "%s %s: A (the factor, const) was written", fn, b.desc);
    bad = rhs_outside_changed(&m, &b);
    ASSERT_MSG(!bad,
               "%s %s: element %zu of B's storage (outside n x nrhs: padding or guard) was "
               "written",
               fn, b.desc, bad - 1);
    int linfo = lapack_potrs(&m, &b, xl);
    ASSERT_MSG(linfo == 0, "solve %s: ?potrs_'s info %d (the test)", b.desc, linfo);
    double el = sol_err(&m, &b, xl), ex = sol_err(&m, &b, b.x);
    ASSERT_MSG(el <= POTRS_BOUND, "%s %s: |X - X_lapack|_F / |X_lapack|_F = %.3g n eps (bound %g)",
               fn, b.desc, el, POTRS_BOUND);
    ASSERT_MSG(ex <= SOL_BOUND, "%s %s: |X - X_true|_F / |X_true|_F = %.3g n eps (bound %g)", fn,
               b.desc, ex, SOL_BOUND);
    mx->potrs_lapack = fmax(mx->potrs_lapack, el), mx->potrs_x = fmax(mx->potrs_x, ex);
    mx->cases++;
    free(f), free(f0), free(xl);
    rhs_free(&b);
    mat_free(&m);
}

/* s, d, c, z x L, U x column-, row-major x n = 1, 33, 100 x nrhs = 1, 5, tile 32 on 3
 * emulated devices, lda > n, ldb above its minimum (n column-major, nrhs row-major), B = A X
 * for a known random X:
 * - tess_?posv (typed and generic in turns): TESS_OK, info 0, X within SOL_BOUND n eps of the
 *   known X (normwise), B's padding rows and a guard after it bit for bit as they were, and A
 *   bit for bit what tess_?potrf makes of the same input (the same tiles and kernels);
 * - tess_?potrs on LAPACK's factor (?potrf_; the other strict triangle NaN, never read):
 *   TESS_OK, info 0, X within POTRS_BOUND n eps of ?potrs_'s on that factor and within
 *   SOL_BOUND n eps of the known X, A (const) and B's padding untouched. */
TEST(solve) {
    static const int64_t sizes[] = {1, 33, 100}, nrhss[] = {1, 5};
    start(3, "32", "16M");
    ASSERT_OK(tess_init());
    struct solve_maxes mx = {0, 0, 0, 0};
    int idx = 0;
    for (int d = 0; d < 4; d++)
        for (int u = 0; u < 2; u++)
            for (int l = 0; l < 2; l++)
                for (int s = 0; s < 3; s++)
                    for (int r = 0; r < 2; r++, idx++)
                        solve_case(dts[d], lays[l], uplos[u], sizes[s], nrhss[r], idx, &mx);
    ASSERT_OK(tess_finalize());
    fprintf(stderr,
            "  solve: %d cases (s d c z, L U, col row, n 1 33 100, nrhs 1 5, tile 32, 3 devices): "
            "worst posv |X - X_true| %.3g n eps; potrs |X - X_lapack| %.3g n eps, |X - X_true| "
            "%.3g n eps; posv's A = tess_potrf's bit for bit\n",
            mx.cases, mx.posv, mx.potrs_lapack, mx.potrs_x);
}

/* tess_posv d column-major L and z row-major U (n = 200, lda 203, tile 32, nrhs 3, ldb its
 * minimum + 1) on 3 emulated devices: the solves read the factor where tess_potrf left it,
 * held on the devices (row-major: the TRSMs' side R): summed over the devices, bytes_h2d is
 * at most the triangle's tiles once plus B twice (each solve reads it), where solving from
 * the host would read the triangle three times. And X is right. */
TEST(solve_held) {
    start(3, "32", "16M");
    ASSERT_OK(tess_init());
    for (int v = 0; v < 2; v++) {
        struct mat m;
        struct rhs b;
        const int64_t n = 200, nrhs = 3;
        tess_layout_t lay = v ? TESS_ROW_MAJOR : TESS_COL_MAJOR;
        mat_make(&m, v ? TESS_Z : TESS_D, lay, v ? TESS_UPPER : TESS_LOWER, n, n + 3,
                 3100 + (uint64_t)v);
        rhs_make(&b, &m, nrhs, (v ? nrhs : n) + 1, 3200 + (uint64_t)v);
        mat_finish(&m);
        tess_reset_stats();
        int64_t info = -77;
        int rc = tess_posv(m.dt, lay, v ? TESS_UPPER : TESS_LOWER, n, nrhs, m.a, m.lda, b.b, b.ldb,
                           &info);
        ASSERT_MSG(rc == TESS_OK && info == 0, "tess_posv %s: returned %d (%s), info %lld", b.desc,
                   rc, tess_last_error(), (long long)info);
        double e = sol_err(&m, &b, b.x);
        ASSERT_MSG(e <= SOL_BOUND, "tess_posv %s: |X - X_true|_F / |X_true|_F = %.3g n eps", b.desc,
                   e);
        emu_check_solve_h2d(b.desc, 3, triangle_tile_bytes(n, TILE, m.es),
                            (uint64_t)(n * nrhs) * m.es);
        rhs_free(&b);
        mat_free(&m);
    }
    ASSERT_OK(tess_finalize());
}

/* Diagonal entry j of an SPD matrix (n = 100, tile 32, 3 devices) set to -1000 n, j = 0, 31,
 * 32, 45, 99, every precision, uplo and layout, nrhs 3, ldb above its minimum: tess_?posv
 * (typed and generic in turns) returns TESS_OK with *info = j + 1 (LAPACK's), B every byte
 * (padding and guard too) as it was, and nothing outside A's triangle written. */
TEST(posv_not_pd) {
    static const int64_t js[] = {0, 31, 32, 45, 99};
    const int64_t n = 100, nrhs = 3;
    start(3, "32", "16M");
    ASSERT_OK(tess_init());
    int cases = 0, idx = 0;
    for (int d = 0; d < 4; d++)
        for (int u = 0; u < 2; u++)
            for (int l = 0; l < 2; l++)
                for (int t = 0; t < 5; t++, idx++) {
                    struct mat m;
                    struct rhs b;
                    char fn[32];
                    int64_t j = js[t], ldb = (lays[l] == TESS_COL_MAJOR ? n : nrhs) + 2;
                    mat_make(&m, dts[d], lays[l], uplos[u], n, n + 1 + idx % 3,
                             9000 + (uint64_t)idx);
                    mat_set(&m, j, j, -1000.0 * (double)n, 0);
                    rhs_make(&b, &m, nrhs, ldb, 9500 + (uint64_t)idx);
                    mat_finish(&m);
                    ASSERT_MSG(m.ref_info == j + 1, "%s j=%lld: LAPACK's info %d (the test)",
                               b.desc, (long long)j, m.ref_info);
                    solve_name(1, idx & 1, m.dt, fn, sizeof fn);
                    int64_t info = -77;
                    int rc = solve_call(1, idx & 1, m.dt, m.layout, m.uplo, n, nrhs, m.a, m.lda,
                                        b.b, ldb, &info);
                    ASSERT_MSG(rc == TESS_OK, "%s %s j=%lld: returned %d (%s)", fn, b.desc,
                               (long long)j, rc, tess_last_error());
                    ASSERT_MSG(info == j + 1, "%s %s j=%lld: info %lld, want %lld", fn, b.desc,
                               (long long)j, (long long)info, (long long)(j + 1));
                    for (size_t i = 0; i < b.nel; i++)
                        ASSERT_MSG(!memcmp(b.b + i * m.es, b.b0 + i * m.es, m.es),
                                   "%s %s j=%lld: info %lld, and B's element %zu (%s) changed", fn,
                                   b.desc, (long long)j, (long long)info, i,
                                   in_rhs(&b, i) ? "inside n x nrhs" : "padding or guard");
                    size_t bad = outside_changed(&m);
                    ASSERT_MSG(!bad, "%s %s j=%lld: element %zu outside A's triangle %c written",
                               fn, b.desc, (long long)j, bad - 1, m.u);
                    cases++;
                    rhs_free(&b);
                    mat_free(&m);
                }
    ASSERT_OK(tess_finalize());
    fprintf(stderr,
            "  posv_not_pd: %d cases (s d c z, L U, col row, n 100, nrhs 3, j 0 31 32 45 99): "
            "info = j + 1, B untouched\n",
            cases);
}

struct solve_bad {
    int layout, uplo;
    int64_t n, nrhs;
    int null_a;
    int64_t lda;
    int null_b;
    int64_t ldb, want; /* want: *info, -(position of the first bad argument) */
    const char *what;
};

/* One bad call of posv (1) or potrs (0): TESS_EINVAL, *info = want (info given), a message
 * from this call naming the function (another failing call set a different one just
 * before), A and B (cap bytes each) untouched. */
static void solve_bad_call(tess_dtype_t dt, const struct solve_bad *c, int posv, int generic,
                           int with_info, char *A, const char *A0, char *B, const char *B0,
                           size_t cap) {
    char fn[32];
    solve_name(posv, generic, dt, fn, sizeof fn);
    ASSERT_EQ(tess_hold((tess_dtype_t)9, A, 8, 5, 5, 0), TESS_EINVAL); /* another message */
    ASSERT_MSG(!strstr(tess_last_error(), fn), "tess_hold's message names %s: %s", fn,
               tess_last_error());
    int64_t info = 4242;
    int rc = solve_call(posv, generic, dt, (tess_layout_t)c->layout, (tess_uplo_t)c->uplo, c->n,
                        c->nrhs, c->null_a ? NULL : A, c->lda, c->null_b ? NULL : B, c->ldb,
                        with_info ? &info : NULL);
    ASSERT_MSG(rc == TESS_EINVAL, "%s %s, info %s: returned %d, want TESS_EINVAL", fn, c->what,
               with_info ? "given" : "NULL", rc);
    if (with_info)
        ASSERT_MSG(info == c->want, "%s %s: *info %lld, want %lld", fn, c->what, (long long)info,
                   (long long)c->want);
    ASSERT_MSG(strstr(tess_last_error(), fn),
               "%s %s, info %s: tess_last_error() does not name %s: \"%s\"", fn, c->what,
               with_info ? "given" : "NULL", fn, tess_last_error());
    ASSERT_MSG(!memcmp(A, A0, cap), "%s %s: A was written", fn, c->what);
    ASSERT_MSG(!memcmp(B, B0, cap), "%s %s: B was written", fn, c->what);
}

/* Every bad argument of tess_?potrs and tess_?posv alone, and two at once (the first is
 * reported), in every precision through the typed and generic entries, info given and NULL:
 * TESS_EINVAL, *info = -position (layout 1, uplo 2, n 3, nrhs 4, A 5, lda 6, B 7, ldb 8, also
 * for the generic entries), a message naming the function, A and B (random, n = 5, nrhs = 3)
 * untouched. Valid arguments with info NULL: TESS_EINVAL. n = 0 (A, B NULL or not): TESS_OK,
 * *info = 0, nothing written; nrhs = 0 (B NULL or not): potrs TESS_OK, *info 0, nothing
 * written; posv TESS_OK, *info 0, B untouched and A factored (LAPACK's ?POSV runs ?POTRF
 * whatever nrhs: A = tess_?potrf's factor). The generic entries with dtype 4 or -1:
 * TESS_EINVAL, a message naming them, A and B untouched. */
TEST(solve_bad_args) {
    const int C = TESS_COL_MAJOR, R = TESS_ROW_MAJOR, L = TESS_LOWER, U = TESS_UPPER;
    static const struct solve_bad bad[] = {
        {0, TESS_LOWER, 5, 3, 0, 6, 0, 6, -1, "layout 0"},
        {100, TESS_LOWER, 5, 3, 0, 6, 0, 6, -1, "layout 100"},
        {103, TESS_UPPER, 5, 3, 0, 6, 0, 6, -1, "layout 103"},
        {TESS_COL_MAJOR, 0, 5, 3, 0, 6, 0, 6, -2, "uplo 0"},
        {TESS_COL_MAJOR, 120, 5, 3, 0, 6, 0, 6, -2, "uplo 120"},
        {TESS_ROW_MAJOR, 123, 5, 3, 0, 6, 0, 4, -2, "uplo 123"},
        {TESS_COL_MAJOR, TESS_NO_TRANS, 5, 3, 0, 6, 0, 6, -2, "uplo 111 (a trans value)"},
        {TESS_COL_MAJOR, TESS_LOWER, -1, 3, 0, 6, 0, 6, -3, "n -1"},
        {TESS_ROW_MAJOR, TESS_UPPER, -100, 3, 0, 6, 0, 4, -3, "n -100"},
        {TESS_COL_MAJOR, TESS_LOWER, 5, -1, 0, 6, 0, 6, -4, "nrhs -1"},
        {TESS_ROW_MAJOR, TESS_UPPER, 5, -100, 0, 6, 0, 4, -4, "nrhs -100"},
        {TESS_COL_MAJOR, TESS_LOWER, 5, 3, 1, 6, 0, 6, -5, "A NULL, n 5"},
        {TESS_ROW_MAJOR, TESS_UPPER, 5, 0, 1, 6, 0, 1, -5, "A NULL, n 5, nrhs 0, row-major"},
        {TESS_COL_MAJOR, TESS_LOWER, 5, 3, 0, 4, 0, 6, -6, "lda 4 < n 5"},
        {TESS_ROW_MAJOR, TESS_LOWER, 5, 3, 0, 4, 0, 4, -6, "lda 4 < n 5, row-major"},
        {TESS_COL_MAJOR, TESS_UPPER, 5, 3, 0, -1, 0, 6, -6, "lda -1"},
        {TESS_COL_MAJOR, TESS_LOWER, 0, 3, 0, 0, 0, 6, -6, "lda 0, n 0"},
        {TESS_COL_MAJOR, TESS_LOWER, 5, 3, 0, 6, 1, 6, -7, "B NULL, n 5, nrhs 3"},
        {TESS_ROW_MAJOR, TESS_UPPER, 5, 3, 0, 6, 1, 4, -7, "B NULL, n 5, nrhs 3, row-major"},
        {TESS_COL_MAJOR, TESS_LOWER, 5, 3, 0, 6, 0, 4, -8, "ldb 4 < n 5, column-major"},
        {TESS_COL_MAJOR, TESS_UPPER, 5, 3, 0, 6, 0, 3, -8, "ldb 3 = nrhs < n 5, column-major"},
        {TESS_COL_MAJOR, TESS_LOWER, 5, 0, 0, 6, 0, 4, -8, "ldb 4 < n 5, nrhs 0, column-major"},
        {TESS_COL_MAJOR, TESS_LOWER, 0, 3, 0, 1, 0, 0, -8, "ldb 0, n 0, column-major"},
        {TESS_ROW_MAJOR, TESS_LOWER, 5, 3, 0, 6, 0, 2, -8, "ldb 2 < nrhs 3, row-major"},
        {TESS_ROW_MAJOR, TESS_UPPER, 5, 0, 0, 6, 0, 0, -8, "ldb 0, nrhs 0, row-major"},
        {TESS_ROW_MAJOR, TESS_LOWER, 5, 3, 0, 6, 0, -1, -8, "ldb -1, row-major"},
        {TESS_COL_MAJOR, 0, -1, 3, 0, 6, 0, 6, -2, "uplo 0 and n -1"},
        {TESS_COL_MAJOR, TESS_LOWER, -1, -1, 0, 6, 0, 6, -3, "n -1 and nrhs -1"},
        {TESS_COL_MAJOR, TESS_LOWER, 5, -1, 1, 6, 0, 6, -4, "nrhs -1 and A NULL"},
        {TESS_ROW_MAJOR, TESS_LOWER, 5, 3, 1, 4, 0, 4, -5, "A NULL and lda 4"},
        {TESS_COL_MAJOR, TESS_UPPER, 5, 3, 0, 4, 1, 6, -6, "lda 4 and B NULL"},
        {TESS_COL_MAJOR, TESS_LOWER, 5, 3, 0, 6, 1, 1, -7, "B NULL and ldb 1"},
        {0, 0, -1, -1, 1, 0, 1, 0, -1, "everything"},
    };
    const int nbad = (int)(sizeof bad / sizeof bad[0]);
    start(2, "32", "16M");
    ASSERT_OK(tess_init());
    uint64_t rng = 78;
    const size_t cap = 64 * 16; /* 64 elements of any precision: more than A (5 x 6) or B spans */
    char *A = ref_malloc(cap), *A0 = ref_malloc(cap), *B = ref_malloc(cap), *B0 = ref_malloc(cap);
    char *P = ref_malloc(cap);
    int calls = 0;
    for (int d = 0; d < 4; d++) {
        tess_dtype_t dt = dts[d];
        ref_fill_random(dt, A, 64, &rng);
        ref_fill_random(dt, B, 64, &rng);
        memcpy(A0, A, cap), memcpy(B0, B, cap);
        for (int i = 0; i < nbad; i++)
            for (int posv = 0; posv < 2; posv++)
                for (int g = 0; g < 2; g++)
                    for (int wi = 1; wi >= 0; wi--, calls++)
                        solve_bad_call(dt, &bad[i], posv, g, wi, A, A0, B, B0, cap);
        /* valid arguments, info NULL */
        static const struct solve_bad ok[] = {
            {TESS_COL_MAJOR, TESS_LOWER, 5, 3, 0, 6, 0, 6, 0, "valid arguments"},
            {TESS_ROW_MAJOR, TESS_UPPER, 5, 3, 0, 6, 0, 3, 0, "valid arguments, row-major"}};
        for (int i = 0; i < 2; i++)
            for (int posv = 0; posv < 2; posv++)
                for (int g = 0; g < 2; g++, calls++)
                    solve_bad_call(dt, &ok[i], posv, g, 0, A, A0, B, B0, cap);
        /* n = 0: nothing to do, whatever A and B are */
        for (int l = 0; l < 2; l++)
            for (int posv = 0; posv < 2; posv++)
                for (int g = 0; g < 2; g++)
                    for (int nulls = 0; nulls < 4; nulls++)
                        for (int nr = 0; nr < 2; nr++, calls++) {
                            char fn[32];
                            int64_t info = 4242, nrhs = nr ? 3 : 0;
                            solve_name(posv, g, dt, fn, sizeof fn);
                            int rc = solve_call(posv, g, dt, l ? R : C, g ? U : L, 0, nrhs,
                                                nulls & 1 ? NULL : A, 1, nulls & 2 ? NULL : B,
                                                l && nr ? 3 : 1, &info);
                            ASSERT_MSG(rc == TESS_OK && info == 0,
                                       "%s n = 0, nrhs %lld, %s, A %s, B %s: returned %d (%s), "
                                       "info %lld; want TESS_OK, 0",
                                       fn, (long long)nrhs, l ? "row-major" : "column-major",
                                       nulls & 1 ? "NULL" : "given", nulls & 2 ? "NULL" : "given",
                                       rc, tess_last_error(), (long long)info);
                            ASSERT_MSG(!memcmp(A, A0, cap) && !memcmp(B, B0, cap),
                                       "%s n = 0, nrhs %lld: wrote A or B", fn, (long long)nrhs);
                        }
        /* nrhs = 0, n = 5: potrs does nothing */
        for (int l = 0; l < 2; l++)
            for (int g = 0; g < 2; g++)
                for (int nb = 0; nb < 2; nb++, calls++) {
                    char fn[32];
                    int64_t info = 4242;
                    solve_name(0, g, dt, fn, sizeof fn);
                    int rc = solve_call(0, g, dt, l ? R : C, l ? U : L, 5, 0, A, 6, nb ? NULL : B,
                                        l ? 1 : 5, &info);
                    ASSERT_MSG(rc == TESS_OK && info == 0,
                               "%s n = 5, nrhs = 0, %s, B %s: returned %d (%s), info %lld; want "
                               "TESS_OK, 0",
                               fn, l ? "row-major" : "column-major", nb ? "NULL" : "given", rc,
                               tess_last_error(), (long long)info);
                    ASSERT_MSG(!memcmp(A, A0, cap) && !memcmp(B, B0, cap),
                               "%s n = 5, nrhs = 0: wrote A or B", fn);
                }
        /* nrhs = 0, n = 5: posv factors A (SPD) as tess_?potrf does, B untouched */
        for (int l = 0; l < 2; l++)
            for (int g = 0; g < 2; g++)
                for (int nb = 0; nb < 2; nb++, calls++) {
                    struct mat m;
                    char fn[32];
                    solve_name(1, g, dt, fn, sizeof fn);
                    mat_make(&m, dt, l ? R : C, g ? L : U, 5, 6,
                             9900 + (uint64_t)(l * 4 + g * 2 + nb));
                    mat_finish(&m);
                    int64_t info = 4242;
                    int rc = solve_call(1, g, dt, m.layout, m.uplo, 5, 0, m.a, 6, nb ? NULL : B,
                                        l ? 1 : 5, &info);
                    ASSERT_MSG(rc == TESS_OK && info == 0,
                               "%s %s, nrhs = 0, B %s: returned %d (%s), info %lld; want "
                               "TESS_OK, 0",
                               fn, m.desc, nb ? "NULL" : "given", rc, tess_last_error(),
                               (long long)info);
                    ASSERT_MSG(!memcmp(B, B0, cap), "%s %s, nrhs = 0: wrote B", fn, m.desc);
                    memcpy(P, m.a0, m.nel * m.es);
                    struct mat pm = m;
                    pm.a = P;
                    int64_t pinfo = -77;
                    ASSERT_MSG(call(&pm, g, &pinfo) == TESS_OK && pinfo == 0,
                               "%s: tess_potrf failed (%s)", m.desc, tess_last_error());
                    ASSERT_MSG(!memcmp(m.a, P, m.nel * m.es),
                               "%s %s, nrhs = 0: A is not tess_potrf's factor of it", fn, m.desc);
                    mat_free(&m);
                }
    }
    /* the generic entries with a bad dtype */
    ref_fill_random(TESS_Z, A, 64, &rng);
    ref_fill_random(TESS_Z, B, 64, &rng);
    memcpy(A0, A, cap), memcpy(B0, B, cap);
    for (int posv = 0; posv < 2; posv++)
        for (int v = 0; v < 2; v++, calls++) {
            const char *fn = posv ? "tess_posv" : "tess_potrs";
            tess_dtype_t dt = (tess_dtype_t)(v ? -1 : 4);
            int64_t info = 4242;
            ASSERT_EQ(tess_hold((tess_dtype_t)9, A, 8, 5, 5, 0), TESS_EINVAL);
            int rc = posv ? tess_posv(dt, C, L, 5, 3, A, 6, B, 6, &info)
                          : tess_potrs(dt, C, L, 5, 3, A, 6, B, 6, &info);
            ASSERT_MSG(rc == TESS_EINVAL, "%s(dtype %d): returned %d", fn, (int)dt, rc);
            ASSERT_MSG(strstr(tess_last_error(), fn), "%s(dtype %d): message \"%s\"", fn, (int)dt,
                       tess_last_error());
            ASSERT_MSG(!memcmp(A, A0, cap) && !memcmp(B, B0, cap), "%s(dtype %d) wrote A or B", fn,
                       (int)dt);
        }
    ASSERT_OK(tess_finalize());
    free(A), free(A0), free(B), free(B0), free(P);
    fprintf(stderr,
            "  solve_bad_args: %d calls (%d bad cases x potrs, posv x s d c z x typed, generic x "
            "info, NULL; valid with info NULL; n = 0; nrhs = 0; bad dtype): TESS_EINVAL, *info, "
            "message, A and B untouched\n",
            calls, nbad);
}

TEST_MAIN()
