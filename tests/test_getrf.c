/* tests/test_getrf.c: the LU factorization tess_?getrf and the solves tess_?getrs, tess_?gesv
 * (the contract is the comment in tessera.h, "factorizations", and docs/lapack.md) on emulated
 * devices with small tiles, against OpenBLAS's own LAPACK (sgetrf_ ... zgetrf_, sgetrs_ ...
 * zgetrs_ called directly; row-major against LAPACK on a column-major copy of the matrix, as
 * LAPACKE):
 * - lapack, jitter: s, d, c, z x column-, row-major x m < n, m = n, m > n not multiples of the
 *   tile, lda above its minimum, typed and generic entries: *info as LAPACK's, every pivot in
 *   i..m, the backward error |P L U - A|, the factors against LAPACK's where the pivots are
 *   LAPACK's (at least 90% of the cases), the padding and a guard bit for bit as they were;
 * - singular: a zero column (at tile boundaries, mid-tile, the last) and zero rows: *info as
 *   LAPACK's, the factorization completed (the same checks);
 * - bad_args: every bad argument of getrf, getrs and gesv: TESS_EINVAL, *info = -position, a
 *   message naming the function, A, B and ipiv untouched; quick returns; a bad dtype;
 * - solve: getrs (N, T, C) on LAPACK's factors against ?getrs_ and the known X, gesv (A as
 *   tess_getrf factors it); gesv on a singular matrix leaves B as it was;
 * - cpu_worker: no device: LAPACK's factors and pivots bit for bit;
 * - counters: the strip kernels ran on several devices, strips went peer to peer and crossed
 *   the host link at most once each way;
 * - faults: device 1 of 3 fails at its k-th operation: TESS_OK with a right factorization, or
 *   TESS_EDEVICE; nothing outside the matrix written either way.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu_start.h"
#include "harness.h"
#include "ref.h"
#include "tessera.h"

#if defined(__SANITIZE_THREAD__) /* gcc */
#define UNDER_TSAN 1
#elif defined(__has_feature) /* clang */
#if __has_feature(thread_sanitizer)
#define UNDER_TSAN 1
#endif
#endif

/* OpenBLAS's LAPACK (LP64 ints, column-major) */
void sgetrf_(const int *m, const int *n, void *a, const int *lda, int *ipiv, int *info);
void dgetrf_(const int *m, const int *n, void *a, const int *lda, int *ipiv, int *info);
void cgetrf_(const int *m, const int *n, void *a, const int *lda, int *ipiv, int *info);
void zgetrf_(const int *m, const int *n, void *a, const int *lda, int *ipiv, int *info);
void sgetrs_(const char *trans, const int *n, const int *nrhs, const void *a, const int *lda,
             const int *ipiv, void *b, const int *ldb, int *info);
void dgetrs_(const char *trans, const int *n, const int *nrhs, const void *a, const int *lda,
             const int *ipiv, void *b, const int *ldb, int *info);
void cgetrs_(const char *trans, const int *n, const int *nrhs, const void *a, const int *lda,
             const int *ipiv, void *b, const int *ldb, int *info);
void zgetrs_(const char *trans, const int *n, const int *nrhs, const void *a, const int *lda,
             const int *ipiv, void *b, const int *ldb, int *info);

enum { GUARD = 5 };
#define PIV_MARK INT64_C(-7777) /* ipiv's entries before a call */
/* |P L U - A|_F / (|A|_F max(m, n) eps) (eps the unit roundoff): partial pivoting's growth
 * on these random matrices is small (seen: at most 0.13); and |F - F_lapack|_F /
 * (|F_lapack|_F max(m, n) eps) for the factors F (L and U in A's place) when the pivots are
 * LAPACK's: both backward stable with the same pivots, apart by that times the condition of
 * the leading blocks of P^T A (seen: at most 0.52). */
#define BWD_BOUND 20.0
#define FWD_BOUND 20.0
/* at least this share of the cases has LAPACK's pivots (random matrices: the candidates of a
 * pivot are rarely within rounding of each other) */
#define SAME_PIVOTS 0.9

/* emu_start with two streams a device and write-behind on */
static void start(int ndev, const char *tile, const char *mem) {
    emu_start(ndev, tile, mem, "2", "1");
}

static const tess_dtype_t dts[4] = {TESS_S, TESS_D, TESS_C, TESS_Z};
static const tess_layout_t lays[2] = {TESS_COL_MAJOR, TESS_ROW_MAJOR};

static int64_t imin(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t imax(int64_t a, int64_t b) { return a > b ? a : b; }

/* ---- LAPACK ---------------------------------------------------------------------------------- */

/* ?getrf_ on the column-major m x n a (leading dimension ld): pivots into piv, its INFO. */
static int lapack_getrf(tess_dtype_t dt, int64_t m, int64_t n, void *a, int64_t ld, int *piv) {
    int mm = (int)m, nn = (int)n, l = (int)ld, info = -999;
    switch (dt) {
    case TESS_S: sgetrf_(&mm, &nn, a, &l, piv, &info); break;
    case TESS_D: dgetrf_(&mm, &nn, a, &l, piv, &info); break;
    case TESS_C: cgetrf_(&mm, &nn, a, &l, piv, &info); break;
    case TESS_Z: zgetrf_(&mm, &nn, a, &l, piv, &info); break;
    }
    return info;
}

/* ?getrs_ with op trans on the column-major factors a (ld) and n x nrhs b (ldb); its INFO. */
static int lapack_getrs(tess_dtype_t dt, tess_trans_t trans, int64_t n, int64_t nrhs, const void *a,
                        int64_t ld, const int *piv, void *b, int64_t ldb) {
    char t = ref_trans_name(trans)[0];
    int nn = (int)n, nr = (int)nrhs, l = (int)ld, lb = (int)ldb, info = -999;
    switch (dt) {
    case TESS_S: sgetrs_(&t, &nn, &nr, a, &l, piv, b, &lb, &info); break;
    case TESS_D: dgetrs_(&t, &nn, &nr, a, &l, piv, b, &lb, &info); break;
    case TESS_C: cgetrs_(&t, &nn, &nr, a, &l, piv, b, &lb, &info); break;
    case TESS_Z: zgetrs_(&t, &nn, &nr, a, &l, piv, b, &lb, &info); break;
    }
    return info;
}

/* ---- matrices ----------------------------------------------------------------------------------
 * The m x n matrix A in the call's layout: column-major element (i, j) at i + j lda (lda >= m),
 * row-major at i lda + j (lda >= n); LAPACK factors the same logical matrix column-major. */

struct lu {
    tess_dtype_t dt;
    tess_layout_t layout;
    int64_t m, n, lda, d; /* d = min(m, n): the pivots */
    size_t es, nel;       /* element size; elements allocated: lda * (n or m) + GUARD */
    char *a, *a0;         /* tessera's operand; its input */
    int64_t *ipiv;        /* tessera's pivots: d + GUARD entries, PIV_MARK before the call */
    char *f;              /* LAPACK's factors, column-major m x n, leading dimension fld */
    int64_t fld;
    int *rpiv; /* LAPACK's pivots */
    int ref_info;
    char desc[112];
};

static size_t aix(const struct lu *x, int64_t i, int64_t j) {
    return x->layout == TESS_COL_MAJOR ? (size_t)(i + j * x->lda) : (size_t)(i * x->lda + j);
}
static size_t fix(const struct lu *x, int64_t i, int64_t j) { return (size_t)(i + j * x->fld); }
/* Storage element idx inside the m x n matrix (not padding, not the guard). */
static int in_mat(const struct lu *x, size_t idx) {
    int64_t in = (int64_t)(idx % (size_t)x->lda), out = (int64_t)(idx / (size_t)x->lda);
    return x->layout == TESS_COL_MAJOR ? in < x->m && out < x->n : in < x->n && out < x->m;
}

/* A random m x n matrix (uniform in [-1, 1], both parts for complex); the padding and the
 * guard alternate NaN and markers. */
static void lu_make(struct lu *x, tess_dtype_t dt, tess_layout_t layout, int64_t m, int64_t n,
                    int64_t lda, uint64_t seed) {
    memset(x, 0, sizeof *x);
    x->dt = dt, x->layout = layout, x->m = m, x->n = n, x->lda = lda, x->d = imin(m, n);
    x->es = ref_esize(dt);
    x->nel = (size_t)(lda * (layout == TESS_COL_MAJOR ? n : m)) + GUARD;
    x->a = ref_malloc(x->nel * x->es);
    x->a0 = ref_malloc(x->nel * x->es);
    x->ipiv = ref_malloc((size_t)(x->d + GUARD) * sizeof *x->ipiv);
    x->rpiv = ref_malloc((size_t)imax(x->d, 1) * sizeof *x->rpiv);
    snprintf(x->desc, sizeof x->desc, "%s %s m=%lld n=%lld lda=%lld", ref_dtype_name(dt),
             ref_layout_name(layout), (long long)m, (long long)n, (long long)lda);
    for (size_t i = 0; i < x->nel; i++) {
        double v = (i & 1) ? NAN : -4096.5 - (double)(i % 64);
        ref_set(dt, x->a, i, v, v);
    }
    uint64_t rng = seed;
    for (int64_t j = 0; j < n; j++)
        for (int64_t i = 0; i < m; i++) {
            double re = ref_rand_unit(&rng), im = ref_is_complex(dt) ? ref_rand_unit(&rng) : 0;
            ref_set(dt, x->a, aix(x, i, j), re, im);
        }
}

static void lu_set(struct lu *x, int64_t i, int64_t j, double re, double im) {
    ref_set(x->dt, x->a, aix(x, i, j), re, im);
}

/* The operand back to its input, the pivots to PIV_MARK. */
static void lu_reset(struct lu *x) {
    memcpy(x->a, x->a0, x->nel * x->es);
    for (int64_t i = 0; i < x->d + GUARD; i++) x->ipiv[i] = PIV_MARK;
}

/* The input is complete: keep a copy, and LAPACK factors it (column-major: a copy of the
 * storage, lda and all; row-major: the transposed copy with leading dimension m, as LAPACKE
 * and tess_?getrf make it). */
static void lu_finish(struct lu *x) {
    memcpy(x->a0, x->a, x->nel * x->es);
    lu_reset(x);
    int col = x->layout == TESS_COL_MAJOR;
    x->fld = col ? x->lda : x->m;
    x->f = ref_malloc((size_t)(x->fld * x->n) * x->es);
    for (int64_t j = 0; j < x->n; j++)
        for (int64_t i = 0; i < x->m; i++)
            memcpy(x->f + fix(x, i, j) * x->es, x->a + aix(x, i, j) * x->es, x->es);
    x->ref_info = lapack_getrf(x->dt, x->m, x->n, x->f, x->fld, x->rpiv);
}

static void lu_free(struct lu *x) {
    free(x->a), free(x->a0), free(x->ipiv), free(x->f), free(x->rpiv);
}

/* tessera on the matrix: tess_getrf (generic) or tess_?getrf. */
static int call_getrf(struct lu *x, int generic, int64_t *info) {
    if (generic) return tess_getrf(x->dt, x->layout, x->m, x->n, x->a, x->lda, x->ipiv, info);
    switch (x->dt) {
    case TESS_S: return tess_sgetrf(x->layout, x->m, x->n, (float *)x->a, x->lda, x->ipiv, info);
    case TESS_D: return tess_dgetrf(x->layout, x->m, x->n, (double *)x->a, x->lda, x->ipiv, info);
    case TESS_C: return tess_cgetrf(x->layout, x->m, x->n, x->a, x->lda, x->ipiv, info);
    case TESS_Z: return tess_zgetrf(x->layout, x->m, x->n, x->a, x->lda, x->ipiv, info);
    }
    return -100;
}

/* Index + 1 of the first storage element outside the m x n matrix (padding, guard) that
 * differs from the input in any bit; 0 if none. */
static size_t outside_changed(const struct lu *x) {
    for (size_t i = 0; i < x->nel; i++)
        if (!in_mat(x, i) && memcmp(x->a + i * x->es, x->a0 + i * x->es, x->es)) return i + 1;
    return 0;
}

/* |P^T A - L U|_F / (|A|_F max(m, n) eps), A the input, L and U tessera's factors, P its
 * pivots (checked in range before), in long double; infinity when a factor is not finite. */
static double lu_backward(const struct lu *x) {
    int64_t m = x->m, n = x->n;
    size_t mn = (size_t)(m * n);
    /* row-major m x n here: F's rows (L) contiguous; U read by columns from the copy ut */
    long double *fr = ref_malloc(mn * sizeof *fr), *fi = ref_malloc(mn * sizeof *fi);
    long double *ur = ref_malloc(mn * sizeof *ur), *ui = ref_malloc(mn * sizeof *ui);
    long double *pr = ref_malloc(mn * sizeof *pr), *pi = ref_malloc(mn * sizeof *pi);
    double out = 0;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            long double re, im;
            ref_get(x->dt, x->a, aix(x, i, j), &re, &im);
            if (!isfinite(re) || !isfinite(im)) out = INFINITY;
            fr[i * n + j] = re, fi[i * n + j] = im;
            ur[j * m + i] = re, ui[j * m + i] = im; /* column j of U contiguous */
            ref_get(x->dt, x->a0, aix(x, i, j), &pr[i * n + j], &pi[i * n + j]);
        }
    for (int64_t i = 0; i < x->d; i++) { /* P^T A: A's rows interchanged as xLASWP does */
        int64_t p = x->ipiv[i] - 1;
        if (p == i) continue;
        for (int64_t j = 0; j < n; j++) {
            long double t = pr[i * n + j];
            pr[i * n + j] = pr[p * n + j], pr[p * n + j] = t;
            t = pi[i * n + j];
            pi[i * n + j] = pi[p * n + j], pi[p * n + j] = t;
        }
    }
    if (out == 0) {
        long double e2 = 0, a2 = 0;
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                /* (L U)(i, j) = sum over k <= min(i, j) of L(i, k) U(k, j), L(i, i) = 1 */
                int64_t kk = imin(i, j);
                long double sr = 0, si = 0;
                const long double *lr = fr + i * n, *li = fi + i * n, *vr = ur + j * m,
                                  *vi = ui + j * m;
                for (int64_t k = 0; k < kk; k++) {
                    sr += lr[k] * vr[k] - li[k] * vi[k];
                    si += lr[k] * vi[k] + li[k] * vr[k];
                }
                if (i <= j) /* L(i, i) U(i, j) */
                    sr += vr[i], si += vi[i];
                else /* L(i, j) U(j, j) */
                    sr += lr[j] * vr[j] - li[j] * vi[j], si += lr[j] * vi[j] + li[j] * vr[j];
                long double ar = pr[i * n + j], ai = pi[i * n + j];
                e2 += (ar - sr) * (ar - sr) + (ai - si) * (ai - si);
                a2 += ar * ar + ai * ai;
            }
        out = a2 == 0 ? (e2 == 0 ? 0 : INFINITY)
                      : (double)(sqrtl(e2 / a2) / ((long double)imax(m, n) * ref_eps(x->dt)));
    }
    free(fr), free(fi), free(ur), free(ui), free(pr), free(pi);
    return out;
}

/* |F - F_lapack|_F / (|F_lapack|_F max(m, n) eps) over the m x n factors; infinity when F holds
 * a NaN or an infinity. */
static double lu_forward(const struct lu *x) {
    long double d2 = 0, r2 = 0;
    for (int64_t j = 0; j < x->n; j++)
        for (int64_t i = 0; i < x->m; i++) {
            long double xr, xi, yr, yi;
            ref_get(x->dt, x->a, aix(x, i, j), &xr, &xi);
            ref_get(x->dt, x->f, fix(x, i, j), &yr, &yi);
            if (!isfinite(xr) || !isfinite(xi)) return INFINITY;
            d2 += (xr - yr) * (xr - yr) + (xi - yi) * (xi - yi);
            r2 += yr * yr + yi * yi;
        }
    if (r2 == 0) return d2 == 0 ? 0 : INFINITY;
    return (double)(sqrtl(d2 / r2) / ((long double)imax(x->m, x->n) * ref_eps(x->dt)));
}

/* What a group saw: cases, those with LAPACK's pivots, the largest ratios. */
struct tally {
    int cases, same;
    double fwd, bwd;
};

/* After a call that must have factored x: TESS_OK, *info as LAPACK's, the padding and the
 * guard untouched, ipiv past min(m, n) untouched and ipiv[i] in i + 1..m (1-based), the
 * backward error, and with LAPACK's pivots the factors against LAPACK's. A case whose pivots
 * differ from LAPACK's says where (a line, not a failure). */
static void check_lu(const struct lu *x, const char *tag, int rc, int64_t info, struct tally *t) {
    ASSERT_MSG(rc == TESS_OK, "%s %s: returned %d (%s)", tag, x->desc, rc, tess_last_error());
    ASSERT_MSG(info == x->ref_info, "%s %s: info %lld, LAPACK's %d", tag, x->desc, (long long)info,
               x->ref_info);
    size_t bad = outside_changed(x);
    ASSERT_MSG(!bad,
               "%s %s: storage element %zu (outside the m x n matrix: padding or guard) was "
               "written",
               tag, x->desc, bad - 1);
    for (int64_t i = x->d; i < x->d + GUARD; i++)
        ASSERT_MSG(x->ipiv[i] == PIV_MARK, "%s %s: ipiv[%lld], past min(m, n) = %lld, written", tag,
                   x->desc, (long long)i, (long long)x->d);
    int same = 1;
    int64_t first = -1;
    for (int64_t i = 0; i < x->d; i++) {
        ASSERT_MSG(x->ipiv[i] >= i + 1 && x->ipiv[i] <= x->m,
                   "%s %s: ipiv[%lld] = %lld, not in %lld..m = %lld", tag, x->desc, (long long)i,
                   (long long)x->ipiv[i], (long long)(i + 1), (long long)x->m);
        if (x->ipiv[i] != x->rpiv[i] && first < 0) first = i;
    }
    same = first < 0;
    double b = lu_backward(x);
    ASSERT_MSG(b <= BWD_BOUND, "%s %s: |P L U - A|_F / |A|_F = %.3g max(m, n) eps (bound %g)", tag,
               x->desc, b, BWD_BOUND);
    double f = 0;
    if (same) {
        f = lu_forward(x);
        ASSERT_MSG(f <= FWD_BOUND,
                   "%s %s: LAPACK's pivots, but |F - F_lapack|_F / |F_lapack|_F = %.3g max(m, n) "
                   "eps (bound %g)",
                   tag, x->desc, f, FWD_BOUND);
    } else {
        fprintf(stderr,
                "  %s %s: pivots differ from LAPACK's first at %lld (%lld, LAPACK %d); "
                "backward error %.3g\n",
                tag, x->desc, (long long)first, (long long)x->ipiv[first], x->rpiv[first], b);
    }
    if (t) {
        t->cases++, t->same += same;
        t->bwd = fmax(t->bwd, b), t->fwd = fmax(t->fwd, f);
    }
}

/* The pivot count of a group: at least SAME_PIVOTS of its cases with LAPACK's pivots. */
static void check_same(const char *tag, const struct tally *t) {
    ASSERT_MSG(t->same >= SAME_PIVOTS * t->cases,
               "%s: LAPACK's pivots in %d of %d cases only (want at least %.0f%%)", tag, t->same,
               t->cases, 100 * SAME_PIVOTS);
}

/* m x n shapes: m < n, m = n, m > n, none a multiple of the tile 32 but 1 x 1 ... */
static const int64_t shapes[][2] = {{1, 1},     {1, 33},   {33, 1},    {31, 31},   {33, 33},
                                    {31, 100},  {100, 31}, {100, 100}, {157, 157}, {157, 100},
                                    {100, 157}, {33, 157}, {157, 33}};

/* Every precision and layout at the shapes, lda = rows (col) or n (row) + 1..5, the typed and
 * generic entries in turns, on the runtime running. */
static void sweep(const char *tag, const int64_t (*sh)[2], int nsh, uint64_t seed,
                  struct tally *t) {
    int idx = 0;
    for (int d = 0; d < 4; d++)
        for (int l = 0; l < 2; l++)
            for (int s = 0; s < nsh; s++, idx++) {
                struct lu x;
                int64_t m = sh[s][0], n = sh[s][1];
                int64_t lda = (lays[l] == TESS_COL_MAJOR ? m : n) + 1 + idx % 5;
                lu_make(&x, dts[d], lays[l], m, n, lda, seed + (uint64_t)idx);
                lu_finish(&x);
                int64_t info = -77;
                int rc = call_getrf(&x, idx & 1, &info);
                check_lu(&x, tag, rc, info, t);
                lu_free(&x);
            }
}

/* s, d, c, z x column-, row-major x the 13 shapes (1 x 1 .. 157 x 157, m < n, m = n, m > n),
 * tile 32 on 3 emulated devices, lda above its minimum, typed and generic entries in turns:
 * TESS_OK, *info = LAPACK's (0), the padding and a guard after the matrix bit for bit as they
 * were, ipiv past min(m, n) untouched, the backward error within BWD_BOUND, and where the pivots
 * are LAPACK's (at least 90% of the cases) the factors within FWD_BOUND of LAPACK's. */
TEST(lapack) {
    const int nsh = (int)(sizeof shapes / sizeof shapes[0]);
    start(3, "32", "16M");
    ASSERT_OK(tess_init());
    struct tally t = {0, 0, 0, 0};
    sweep("lapack", shapes, nsh, 1000, &t);
    ASSERT_OK(tess_finalize());
    fprintf(stderr,
            "  lapack: %d cases (s d c z, col row, m x n 1 x 1 .. 157 x 157, tile 32, 3 "
            "devices): LAPACK's pivots in %d; worst backward %.3g, |F - F_lapack| %.3g "
            "(max(m, n) eps)\n",
            t.cases, t.same, t.bwd, t.fwd);
    check_same("lapack", &t);
}

/* The same checks with the tasks' order shuffled: 2 devices of 4 streams each, random delays
 * up to 30 us before every emulated operation, tile 16 (45 and 157: 3 and 10 strips). */
TEST(jitter) {
    static const int64_t sh[][2] = {{45, 45}, {157, 157}, {157, 45}, {45, 157}};
    start(2, "16", "16M");
    setenv("TESSERA_EMULATE_STREAMS", "4", 1);
    setenv("TESSERA_EMULATE_JITTER", "30", 1);
    ASSERT_OK(tess_init());
    struct tally t = {0, 0, 0, 0};
    sweep("jitter", sh, 4, 2000, &t);
    ASSERT_OK(tess_finalize());
    fprintf(stderr,
            "  jitter: %d cases (s d c z, col row, 45 x 45, 157 x 157, 157 x 45, 45 x 157, tile "
            "16, 2 devices x 4 streams, jitter 30 us): LAPACK's pivots in %d; worst backward "
            "%.3g, |F - F_lapack| %.3g\n",
            t.cases, t.same, t.bwd, t.fwd);
    check_same("jitter", &t);
}

/* Exact zero pivots, every precision and layout, tile 32 on 3 devices: column j of a random
 * matrix zero (100 x 100: j = 0, 31, 32 (tile boundaries), 45 (mid-tile), 99 (the last);
 * 100 x 60, j = 45; 60 x 100, j = 59 (the last pivot) and j = 80 (no pivot: info 0)), and a
 * 100 x 100 matrix of rank 67 (rows 1, 4, ..., 97 zero: U(67, 67) and on exactly zero, info
 * 68). TESS_OK, *info = LAPACK's (checked to be the one above), and the factorization
 * completed: the checks of lapack (backward error, LAPACK's factors where the pivots are
 * LAPACK's). */
TEST(singular) {
    static const struct {
        int64_t m, n, zcol; /* zcol -1: the zero rows */
        int want;
    } cs[] = {{100, 100, 0, 1},   {100, 100, 31, 32},  {100, 100, 32, 33},
              {100, 100, 45, 46}, {100, 100, 99, 100}, {100, 100, -1, 68},
              {100, 60, 45, 46},  {60, 100, 59, 60},   {60, 100, 80, 0}};
    const int ncs = (int)(sizeof cs / sizeof cs[0]);
    start(3, "32", "16M");
    ASSERT_OK(tess_init());
    struct tally t = {0, 0, 0, 0};
    int idx = 0;
    for (int d = 0; d < 4; d++)
        for (int l = 0; l < 2; l++)
            for (int c = 0; c < ncs; c++, idx++) {
                struct lu x;
                int64_t m = cs[c].m, n = cs[c].n;
                lu_make(&x, dts[d], lays[l], m, n, (lays[l] == TESS_COL_MAJOR ? m : n) + 2,
                        3000 + (uint64_t)idx);
                if (cs[c].zcol >= 0) {
                    for (int64_t i = 0; i < m; i++) lu_set(&x, i, cs[c].zcol, 0, 0);
                    snprintf(x.desc + strlen(x.desc), sizeof x.desc - strlen(x.desc),
                             " column %lld zero", (long long)cs[c].zcol);
                } else {
                    for (int64_t i = 1; i < m; i += 3)
                        for (int64_t j = 0; j < n; j++) lu_set(&x, i, j, 0, 0);
                    snprintf(x.desc + strlen(x.desc), sizeof x.desc - strlen(x.desc),
                             " rows 1, 4, .. zero");
                }
                lu_finish(&x);
                ASSERT_MSG(x.ref_info == cs[c].want, "%s: LAPACK's info %d, want %d (the test)",
                           x.desc, x.ref_info, cs[c].want);
                int64_t info = -77;
                int rc = call_getrf(&x, idx & 1, &info);
                check_lu(&x, "singular", rc, info, &t);
                lu_free(&x);
            }
    ASSERT_OK(tess_finalize());
    fprintf(stderr,
            "  singular: %d cases (s d c z, col row, zero column 0 31 32 45 99 of 100 x 100, 45 "
            "of 100 x 60, 59 80 of 60 x 100, rank 67 of 100): info = LAPACK's; LAPACK's pivots "
            "in %d; worst backward %.3g, |F - F_lapack| %.3g\n",
            t.cases, t.same, t.bwd, t.fwd);
    check_same("singular", &t);
}

/* No emulated device (TESSERA_EMULATE=0, the CPU worker alone): the CPU LAPACK factors the
 * matrix (a column-major copy with leading dimension m for row-major, as LAPACKE), so every
 * precision, layout and shape (1 x 1, 33 x 157, 157 x 33, 100 x 100, and a zero column) gives
 * LAPACK's *info, pivots and factors bit for bit; the padding and the guard untouched. */
TEST(cpu_worker) {
    static const int64_t sh[][2] = {{1, 1}, {33, 157}, {157, 33}, {100, 100}, {100, 100}};
    start(0, "32", "16M");
    ASSERT_OK(tess_init());
    int cases = 0, idx = 0;
    for (int d = 0; d < 4; d++)
        for (int l = 0; l < 2; l++)
            for (int s = 0; s < 5; s++, idx++) {
                struct lu x;
                int64_t m = sh[s][0], n = sh[s][1];
                lu_make(&x, dts[d], lays[l], m, n, (lays[l] == TESS_COL_MAJOR ? m : n) + 1 + s,
                        4000 + (uint64_t)idx);
                if (s == 4)
                    for (int64_t i = 0; i < m; i++) lu_set(&x, i, 40, 0, 0);
                lu_finish(&x);
                int64_t info = -77;
                int rc = call_getrf(&x, idx & 1, &info);
                check_lu(&x, "cpu_worker", rc, info, NULL);
                for (int64_t i = 0; i < x.d; i++)
                    ASSERT_MSG(x.ipiv[i] == x.rpiv[i],
                               "cpu_worker %s: ipiv[%lld] = %lld, LAPACK's %d", x.desc,
                               (long long)i, (long long)x.ipiv[i], x.rpiv[i]);
                for (int64_t j = 0; j < n; j++)
                    for (int64_t i = 0; i < m; i++)
                        ASSERT_MSG(
                            !memcmp(x.a + aix(&x, i, j) * x.es, x.f + fix(&x, i, j) * x.es, x.es),
                            "cpu_worker %s: factor element (%lld, %lld) is not LAPACK's bit "
                            "for bit",
                            x.desc, (long long)i, (long long)j);
                cases++;
                lu_free(&x);
            }
    ASSERT_OK(tess_finalize());
    fprintf(stderr,
            "  cpu_worker: %d cases (s d c z, col row, 1 x 1, 33 x 157, 157 x 33, 100 x 100, one "
            "with column 40 zero; no emulated device): info, pivots and factors LAPACK's bit "
            "for bit\n",
            cases);
}

/* ---- arguments --------------------------------------------------------------------------- */

/* A different message first (tess_hold with a bad dtype), which must not name fn. */
static void other_message(const char *fn) {
    char junk[64];
    ASSERT_EQ(tess_hold((tess_dtype_t)9, junk, 8, 5, 5, 0), TESS_EINVAL);
    ASSERT_MSG(!strstr(tess_last_error(), fn), "tess_hold's message names %s: %s", fn,
               tess_last_error());
}

struct bad_rf {
    int layout;
    int64_t m, n;
    int null_a;
    int64_t lda;
    int null_ipiv;
    int64_t want; /* *info: -(position of the first bad argument) */
    const char *what;
};

static int getrf_call(tess_dtype_t dt, int generic, tess_layout_t layout, int64_t m, int64_t n,
                      void *A, int64_t lda, int64_t *ipiv, int64_t *info) {
    if (generic) return tess_getrf(dt, layout, m, n, A, lda, ipiv, info);
    switch (dt) {
    case TESS_S: return tess_sgetrf(layout, m, n, A, lda, ipiv, info);
    case TESS_D: return tess_dgetrf(layout, m, n, A, lda, ipiv, info);
    case TESS_C: return tess_cgetrf(layout, m, n, A, lda, ipiv, info);
    case TESS_Z: return tess_zgetrf(layout, m, n, A, lda, ipiv, info);
    }
    return -100;
}

static int getrs_call(tess_dtype_t dt, int generic, tess_layout_t layout, tess_trans_t trans,
                      int64_t n, int64_t nrhs, const void *A, int64_t lda, const int64_t *ipiv,
                      void *B, int64_t ldb, int64_t *info) {
    if (generic) return tess_getrs(dt, layout, trans, n, nrhs, A, lda, ipiv, B, ldb, info);
    switch (dt) {
    case TESS_S: return tess_sgetrs(layout, trans, n, nrhs, A, lda, ipiv, B, ldb, info);
    case TESS_D: return tess_dgetrs(layout, trans, n, nrhs, A, lda, ipiv, B, ldb, info);
    case TESS_C: return tess_cgetrs(layout, trans, n, nrhs, A, lda, ipiv, B, ldb, info);
    case TESS_Z: return tess_zgetrs(layout, trans, n, nrhs, A, lda, ipiv, B, ldb, info);
    }
    return -100;
}

static int gesv_call(tess_dtype_t dt, int generic, tess_layout_t layout, int64_t n, int64_t nrhs,
                     void *A, int64_t lda, int64_t *ipiv, void *B, int64_t ldb, int64_t *info) {
    if (generic) return tess_gesv(dt, layout, n, nrhs, A, lda, ipiv, B, ldb, info);
    switch (dt) {
    case TESS_S: return tess_sgesv(layout, n, nrhs, A, lda, ipiv, B, ldb, info);
    case TESS_D: return tess_dgesv(layout, n, nrhs, A, lda, ipiv, B, ldb, info);
    case TESS_C: return tess_cgesv(layout, n, nrhs, A, lda, ipiv, B, ldb, info);
    case TESS_Z: return tess_zgesv(layout, n, nrhs, A, lda, ipiv, B, ldb, info);
    }
    return -100;
}

/* "tess_getrf", "tess_dgetrs", ... */
static const char *fn_name(const char *what, int generic, tess_dtype_t dt, char *buf, size_t len) {
    snprintf(buf, len, "tess_%s%s", generic ? "" : ref_dtype_name(dt), what);
    return buf;
}

struct bad_sv {
    int layout, trans; /* trans: getrs only */
    int64_t n, nrhs;
    int null_a;
    int64_t lda;
    int null_ipiv, piv_at; /* piv_at >= 0: ipiv[piv_at] = piv (a bad pivot, getrs) */
    int64_t piv;
    int null_b;
    int64_t ldb;
    int64_t want_rs, want_sv; /* *info of getrs and gesv; want_sv 0: gesv has no bad argument */
    const char *what;
};

/* The buffers the bad calls get: A, B, ipiv (random, the pivots valid for n = 5) and copies. */
struct bufs {
    char *A, *A0, *B, *B0;
    int64_t P[16], P0[16];
    size_t cap;
};

static void bufs_same(const struct bufs *b, const char *fn, const char *what) {
    ASSERT_MSG(!memcmp(b->A, b->A0, b->cap), "%s %s: A was written", fn, what);
    ASSERT_MSG(!memcmp(b->B, b->B0, b->cap), "%s %s: B was written", fn, what);
    ASSERT_MSG(!memcmp(b->P, b->P0, sizeof b->P), "%s %s: ipiv was written", fn, what);
}

/* Calls of bad_args whose *info was not the expected one (each printed; the group fails at
 * its end, so that every case runs). */
static int bad_info_wrong;

/* One call that must fail: TESS_EINVAL, *info = want (info given), a message naming fn from
 * this call, nothing written. */
static void bad_result(const char *fn, const char *what, int with_info, int rc, int64_t info,
                       int64_t want, const struct bufs *b) {
    ASSERT_MSG(rc == TESS_EINVAL, "%s %s, info %s: returned %d, want TESS_EINVAL", fn, what,
               with_info ? "given" : "NULL", rc);
    if (with_info && info != want) {
        fprintf(stderr, "  bad_args: %s %s: *info %lld, want %lld\n", fn, what, (long long)info,
                (long long)want);
        bad_info_wrong++;
    }
    ASSERT_MSG(strstr(tess_last_error(), fn),
               "%s %s, info %s: tess_last_error() does not name %s: \"%s\"", fn, what,
               with_info ? "given" : "NULL", fn, tess_last_error());
    bufs_same(b, fn, what);
}

/* Every bad argument of getrf, getrs and gesv alone and two at once (the first is reported,
 * as LAPACK does), every precision, typed and generic entries, info given and NULL:
 * TESS_EINVAL, *info = -position as tessera.h numbers them (getrf: layout 1, m 2, n 3, A 4,
 * lda 5, ipiv 6; getrs: layout 1, trans 2, n 3, nrhs 4, A 5, lda 6, ipiv 7 (also a pivot
 * outside 1..n), B 8, ldb 9; gesv: layout 1, n 2, nrhs 3, A 4, lda 5, ipiv 6, B 7, ldb 8, its
 * ipiv an output whose values are never checked), a message naming the function, A, B and
 * ipiv untouched. Valid arguments with info NULL: TESS_EINVAL. Quick returns: getrf with m = 0
 * or n = 0 (A, ipiv NULL or not), getrs and gesv with n = 0, getrs with nrhs = 0: TESS_OK,
 * *info 0, nothing written; gesv with nrhs = 0 factors A as tess_getrf does (A and ipiv bit
 * for bit), B untouched. The generic entries with dtype 4 or -1: TESS_EINVAL, nothing
 * written. */
TEST(bad_args) {
    const int C = TESS_COL_MAJOR, R = TESS_ROW_MAJOR, N = TESS_NO_TRANS;
    static const struct bad_rf rf[] = {
        {0, 5, 4, 0, 6, 0, -1, "layout 0"},
        {100, 5, 4, 0, 6, 0, -1, "layout 100"},
        {103, 5, 4, 0, 6, 0, -1, "layout 103"},
        {TESS_COL_MAJOR, -1, 4, 0, 6, 0, -2, "m -1"},
        {TESS_ROW_MAJOR, -100, 4, 0, 6, 0, -2, "m -100, row-major"},
        {TESS_COL_MAJOR, 5, -1, 0, 6, 0, -3, "n -1"},
        {TESS_ROW_MAJOR, 5, -100, 0, 6, 0, -3, "n -100, row-major"},
        {TESS_COL_MAJOR, 5, 4, 1, 6, 0, -4, "A NULL"},
        {TESS_ROW_MAJOR, 5, 4, 1, 6, 0, -4, "A NULL, row-major"},
        {TESS_COL_MAJOR, 5, 4, 0, 4, 0, -5, "lda 4 < m 5"},
        {TESS_ROW_MAJOR, 5, 4, 0, 3, 0, -5, "lda 3 < n 4, row-major"},
        {TESS_COL_MAJOR, 5, 4, 0, -1, 0, -5, "lda -1"},
        {TESS_COL_MAJOR, 0, 4, 0, 0, 0, -5, "lda 0, m 0"},
        {TESS_ROW_MAJOR, 5, 0, 0, 0, 0, -5, "lda 0, n 0, row-major"},
        {TESS_COL_MAJOR, 1, 4, 0, 0, 0, -5, "lda 0, m 1"},
        {TESS_COL_MAJOR, 5, 4, 0, 6, 1, -6, "ipiv NULL"},
        {TESS_ROW_MAJOR, 5, 4, 0, 6, 1, -6, "ipiv NULL, row-major"},
        {TESS_COL_MAJOR, -1, -1, 0, 6, 0, -2, "m -1 and n -1"},
        {TESS_COL_MAJOR, 5, -1, 1, 6, 0, -3, "n -1 and A NULL"},
        {TESS_COL_MAJOR, 5, 4, 1, 2, 0, -4, "A NULL and lda 2"},
        {TESS_ROW_MAJOR, 5, 4, 0, 2, 1, -5, "lda 2 and ipiv NULL"},
        {0, -1, -1, 1, 0, 1, -1, "everything"},
    };
    static const struct bad_sv sv[] = {
        {0, N, 5, 3, 0, 6, 0, -1, 0, 0, 6, -1, -1, "layout 0"},
        {100, N, 5, 3, 0, 6, 0, -1, 0, 0, 6, -1, -1, "layout 100"},
        {103, N, 5, 3, 0, 6, 0, -1, 0, 0, 6, -1, -1, "layout 103"},
        {TESS_COL_MAJOR, 0, 5, 3, 0, 6, 0, -1, 0, 0, 6, -2, 0, "trans 0"},
        {TESS_COL_MAJOR, 110, 5, 3, 0, 6, 0, -1, 0, 0, 6, -2, 0, "trans 110"},
        {TESS_ROW_MAJOR, 114, 5, 3, 0, 6, 0, -1, 0, 0, 4, -2, 0, "trans 114, row-major"},
        {TESS_COL_MAJOR, TESS_LOWER, 5, 3, 0, 6, 0, -1, 0, 0, 6, -2, 0, "trans 121 (uplo L)"},
        {TESS_COL_MAJOR, N, -1, 3, 0, 6, 0, -1, 0, 0, 6, -3, -2, "n -1"},
        {TESS_ROW_MAJOR, N, -100, 3, 0, 6, 0, -1, 0, 0, 4, -3, -2, "n -100, row-major"},
        {TESS_COL_MAJOR, N, 5, -1, 0, 6, 0, -1, 0, 0, 6, -4, -3, "nrhs -1"},
        {TESS_ROW_MAJOR, N, 5, -100, 0, 6, 0, -1, 0, 0, 4, -4, -3, "nrhs -100, row-major"},
        {TESS_COL_MAJOR, N, 5, 3, 1, 6, 0, -1, 0, 0, 6, -5, -4, "A NULL"},
        {TESS_ROW_MAJOR, N, 5, 0, 1, 6, 0, -1, 0, 0, 1, -5, -4, "A NULL, nrhs 0, row-major"},
        {TESS_COL_MAJOR, N, 5, 3, 0, 4, 0, -1, 0, 0, 6, -6, -5, "lda 4 < n 5"},
        {TESS_ROW_MAJOR, N, 5, 3, 0, 4, 0, -1, 0, 0, 4, -6, -5, "lda 4 < n 5, row-major"},
        {TESS_COL_MAJOR, N, 5, 3, 0, -1, 0, -1, 0, 0, 6, -6, -5, "lda -1"},
        {TESS_COL_MAJOR, N, 0, 3, 0, 0, 0, -1, 0, 0, 6, -6, -5, "lda 0, n 0"},
        {TESS_COL_MAJOR, N, 5, 3, 0, 6, 1, -1, 0, 0, 6, -7, -6, "ipiv NULL"},
        {TESS_ROW_MAJOR, N, 5, 0, 0, 6, 1, -1, 0, 0, 1, -7, -6, "ipiv NULL, nrhs 0, row-major"},
        {TESS_COL_MAJOR, N, 5, 3, 0, 6, 0, 0, 0, 0, 6, -7, 0, "ipiv[0] = 0"},
        {TESS_COL_MAJOR, TESS_TRANS, 5, 3, 0, 6, 0, 4, 6, 0, 6, -7, 0, "ipiv[4] = 6 = n + 1"},
        {TESS_ROW_MAJOR, N, 5, 3, 0, 6, 0, 2, -1, 0, 4, -7, 0, "ipiv[2] = -1, row-major"},
        {TESS_COL_MAJOR, TESS_CONJ_TRANS, 5, 3, 0, 6, 0, 4, INT64_MAX, 0, 6, -7, 0,
         "ipiv[4] = INT64_MAX"},
        {TESS_COL_MAJOR, N, 5, 3, 0, 6, 0, 1, INT64_MIN, 0, 6, -7, 0, "ipiv[1] = INT64_MIN"},
        {TESS_COL_MAJOR, N, 5, 3, 0, 6, 0, -1, 0, 1, 6, -8, -7, "B NULL"},
        {TESS_ROW_MAJOR, N, 5, 3, 0, 6, 0, -1, 0, 1, 4, -8, -7, "B NULL, row-major"},
        {TESS_COL_MAJOR, N, 5, 3, 0, 6, 0, -1, 0, 0, 4, -9, -8, "ldb 4 < n 5"},
        {TESS_COL_MAJOR, N, 5, 3, 0, 6, 0, -1, 0, 0, 3, -9, -8, "ldb 3 = nrhs < n 5"},
        {TESS_COL_MAJOR, N, 5, 0, 0, 6, 0, -1, 0, 0, 4, -9, -8, "ldb 4 < n 5, nrhs 0"},
        {TESS_COL_MAJOR, N, 0, 3, 0, 1, 0, -1, 0, 0, 0, -9, -8, "ldb 0, n 0"},
        {TESS_ROW_MAJOR, N, 5, 3, 0, 6, 0, -1, 0, 0, 2, -9, -8, "ldb 2 < nrhs 3, row-major"},
        {TESS_ROW_MAJOR, N, 5, 0, 0, 6, 0, -1, 0, 0, 0, -9, -8, "ldb 0, nrhs 0, row-major"},
        {TESS_ROW_MAJOR, N, 5, 3, 0, 6, 0, -1, 0, 0, -1, -9, -8, "ldb -1, row-major"},
        {TESS_COL_MAJOR, 0, -1, 3, 0, 6, 0, -1, 0, 0, 6, -2, -2, "trans 0 and n -1"},
        {TESS_COL_MAJOR, N, -1, -1, 0, 6, 0, -1, 0, 0, 6, -3, -2, "n -1 and nrhs -1"},
        {TESS_COL_MAJOR, N, 5, -1, 1, 6, 0, -1, 0, 0, 6, -4, -3, "nrhs -1 and A NULL"},
        {TESS_ROW_MAJOR, N, 5, 3, 1, 4, 0, -1, 0, 0, 4, -5, -4, "A NULL and lda 4"},
        {TESS_COL_MAJOR, N, 5, 3, 0, 4, 1, -1, 0, 0, 6, -6, -5, "lda 4 and ipiv NULL"},
        {TESS_COL_MAJOR, N, 5, 3, 0, 6, 1, -1, 0, 1, 6, -7, -6, "ipiv NULL and B NULL"},
        {TESS_COL_MAJOR, N, 5, 3, 0, 6, 0, 1, 0, 1, 6, -7, -7, "ipiv[1] = 0 and B NULL"},
        {TESS_COL_MAJOR, N, 5, 3, 0, 6, 0, 3, 9, 0, 1, -7, -8, "ipiv[3] = 9 and ldb 1"},
        {TESS_COL_MAJOR, N, 5, 3, 0, 6, 0, -1, 0, 1, 1, -8, -7, "B NULL and ldb 1"},
        {0, 0, -1, -1, 1, 0, 1, -1, 0, 1, 0, -1, -1, "everything"},
    };
    const int nrf = (int)(sizeof rf / sizeof rf[0]), nsv = (int)(sizeof sv / sizeof sv[0]);
    static const int64_t pivs[5] = {3, 2, 5, 4, 5}; /* valid for n = 5 */
    start(2, "32", "16M");
    ASSERT_OK(tess_init());
    bad_info_wrong = 0;
    uint64_t rng = 79;
    /* 64 elements of any precision: more than any A or B spans (static: a failed check
     * leaves nothing to leak) */
    static double abuf[128], a0buf[128], bbuf[128], b0buf[128];
    struct bufs b = {(char *)abuf, (char *)a0buf, (char *)bbuf, (char *)b0buf,
                     {0},          {0},           sizeof abuf};
    int calls = 0;
    char fn[32];
    for (int d = 0; d < 4; d++) {
        tess_dtype_t dt = dts[d];
        ref_fill_random(dt, b.A, 64, &rng);
        ref_fill_random(dt, b.B, 64, &rng);
        memcpy(b.A0, b.A, b.cap), memcpy(b.B0, b.B, b.cap);
        for (int i = 0; i < 16; i++) b.P[i] = b.P0[i] = i < 5 ? pivs[i] : PIV_MARK;
        /* getrf */
        for (int i = 0; i < nrf; i++)
            for (int g = 0; g < 2; g++)
                for (int wi = 1; wi >= 0; wi--, calls++) {
                    const struct bad_rf *c = &rf[i];
                    fn_name("getrf", g, dt, fn, sizeof fn);
                    other_message(fn);
                    int64_t info = 4242;
                    int rc = getrf_call(dt, g, (tess_layout_t)c->layout, c->m, c->n,
                                        c->null_a ? NULL : b.A, c->lda, c->null_ipiv ? NULL : b.P,
                                        wi ? &info : NULL);
                    bad_result(fn, c->what, wi, rc, info, c->want, &b);
                }
        /* getrs and gesv */
        for (int i = 0; i < nsv; i++)
            for (int sv1 = 0; sv1 < 2; sv1++)
                for (int g = 0; g < 2; g++)
                    for (int wi = 1; wi >= 0; wi--) {
                        const struct bad_sv *c = &sv[i];
                        if (sv1 && !c->want_sv) continue;
                        fn_name(sv1 ? "gesv" : "getrs", g, dt, fn, sizeof fn);
                        if (c->piv_at >= 0) b.P[c->piv_at] = b.P0[c->piv_at] = c->piv;
                        other_message(fn);
                        int64_t info = 4242;
                        void *A = c->null_a ? NULL : b.A, *B = c->null_b ? NULL : b.B;
                        int64_t *P = c->null_ipiv ? NULL : b.P, *pi = wi ? &info : NULL;
                        tess_layout_t L = (tess_layout_t)c->layout;
                        int rc = sv1 ? gesv_call(dt, g, L, c->n, c->nrhs, A, c->lda, P, B, c->ldb,
                                                 pi)
                                     : getrs_call(dt, g, L, (tess_trans_t)c->trans, c->n, c->nrhs,
                                                  A, c->lda, P, B, c->ldb, pi);
                        bad_result(fn, c->what, wi, rc, info, sv1 ? c->want_sv : c->want_rs, &b);
                        if (c->piv_at >= 0) b.P[c->piv_at] = b.P0[c->piv_at] = pivs[c->piv_at];
                        calls++;
                    }
        /* valid arguments, info NULL */
        for (int g = 0; g < 2; g++)
            for (int l = 0; l < 2; l++, calls += 3) {
                tess_layout_t L = l ? R : C;
                fn_name("getrf", g, dt, fn, sizeof fn);
                other_message(fn);
                bad_result(fn, "valid arguments", 0, getrf_call(dt, g, L, 5, 4, b.A, 6, b.P, NULL),
                           0, 0, &b);
                fn_name("getrs", g, dt, fn, sizeof fn);
                other_message(fn);
                bad_result(fn, "valid arguments", 0,
                           getrs_call(dt, g, L, N, 5, 3, b.A, 6, b.P, b.B, l ? 3 : 5, NULL), 0, 0,
                           &b);
                fn_name("gesv", g, dt, fn, sizeof fn);
                other_message(fn);
                bad_result(fn, "valid arguments", 0,
                           gesv_call(dt, g, L, 5, 3, b.A, 6, b.P, b.B, l ? 3 : 5, NULL), 0, 0, &b);
            }
        /* quick returns: nothing to do, whatever the pointers are */
        for (int g = 0; g < 2; g++)
            for (int l = 0; l < 2; l++)
                for (int nulls = 0; nulls < 8; nulls++) {
                    tess_layout_t L = l ? R : C;
                    void *A = nulls & 1 ? NULL : b.A, *B = nulls & 2 ? NULL : b.B;
                    int64_t *P = nulls & 4 ? NULL : b.P;
                    for (int z = 0; z < 2; z++, calls++) { /* getrf m = 0 or n = 0 */
                        int64_t info = 4242, m = z ? 5 : 0, n = z ? 0 : 4;
                        fn_name("getrf", g, dt, fn, sizeof fn);
                        int rc = getrf_call(dt, g, L, m, n, A, 6, P, &info);
                        ASSERT_MSG(rc == TESS_OK && info == 0,
                                   "%s m = %lld, n = %lld, %s, A %s, ipiv %s: returned %d (%s), "
                                   "info %lld; want TESS_OK, 0",
                                   fn, (long long)m, (long long)n, ref_layout_name(L),
                                   A ? "given" : "NULL", P ? "given" : "NULL", rc,
                                   tess_last_error(), (long long)info);
                        bufs_same(&b, fn, "quick return");
                    }
                    for (int nr = 0; nr < 2; nr++)
                        for (int s1 = 0; s1 < 2; s1++, calls++) { /* getrs, gesv n = 0 */
                            int64_t info = 4242, nrhs = nr ? 3 : 0;
                            fn_name(s1 ? "gesv" : "getrs", g, dt, fn, sizeof fn);
                            int rc = s1 ? gesv_call(dt, g, L, 0, nrhs, A, 1, P, B, l && nr ? 3 : 1,
                                                    &info)
                                        : getrs_call(dt, g, L, TESS_TRANS, 0, nrhs, A, 1, P, B,
                                                     l && nr ? 3 : 1, &info);
                            ASSERT_MSG(rc == TESS_OK && info == 0,
                                       "%s n = 0, nrhs %lld, %s, A %s, B %s, ipiv %s: returned "
                                       "%d (%s), info %lld; want TESS_OK, 0",
                                       fn, (long long)nrhs, ref_layout_name(L),
                                       A ? "given" : "NULL", B ? "given" : "NULL",
                                       P ? "given" : "NULL", rc, tess_last_error(),
                                       (long long)info);
                            bufs_same(&b, fn, "n = 0");
                        }
                    if (nulls & 5) continue; /* getrs nrhs = 0, n = 5: A and ipiv given */
                    for (int t = 0; t < 3; t++, calls++) {
                        int64_t info = 4242;
                        tess_trans_t tr = (tess_trans_t)(TESS_NO_TRANS + t);
                        fn_name("getrs", g, dt, fn, sizeof fn);
                        int rc = getrs_call(dt, g, L, tr, 5, 0, b.A, 6, b.P, B, l ? 1 : 5, &info);
                        ASSERT_MSG(rc == TESS_OK && info == 0,
                                   "%s n = 5, nrhs = 0, trans %s, %s, B %s: returned %d (%s), "
                                   "info %lld; want TESS_OK, 0",
                                   fn, ref_trans_name(tr), ref_layout_name(L), B ? "given" : "NULL",
                                   rc, tess_last_error(), (long long)info);
                        bufs_same(&b, fn, "nrhs = 0");
                    }
                }
        /* gesv nrhs = 0, n = 5: A factored as tess_getrf factors it, B untouched */
        for (int g = 0; g < 2; g++)
            for (int l = 0; l < 2; l++)
                for (int nb = 0; nb < 2; nb++, calls++) {
                    struct lu x, y;
                    lu_make(&x, dt, l ? R : C, 5, 5, 6, 9900 + (uint64_t)(l * 4 + g * 2 + nb));
                    lu_finish(&x);
                    lu_make(&y, dt, l ? R : C, 5, 5, 6, 9900 + (uint64_t)(l * 4 + g * 2 + nb));
                    lu_finish(&y);
                    fn_name("gesv", g, dt, fn, sizeof fn);
                    int64_t info = 4242, yinfo = -77;
                    int rc = gesv_call(dt, g, x.layout, 5, 0, x.a, x.lda, x.ipiv, nb ? NULL : b.B,
                                       l ? 1 : 5, &info);
                    check_lu(&x, fn, rc, info, NULL);
                    ASSERT_MSG(!memcmp(b.B, b.B0, b.cap), "%s %s, nrhs = 0: wrote B", fn, x.desc);
                    rc = call_getrf(&y, g, &yinfo);
                    ASSERT_MSG(rc == TESS_OK, "%s: tess_getrf returned %d (%s)", y.desc, rc,
                               tess_last_error());
                    ASSERT_MSG(!memcmp(x.a, y.a, x.nel * x.es) &&
                                   !memcmp(x.ipiv, y.ipiv, (size_t)(x.d + GUARD) * sizeof *x.ipiv),
                               "%s %s, nrhs = 0: A and ipiv are not tess_getrf's factors", fn,
                               x.desc);
                    lu_free(&x), lu_free(&y);
                }
    }
    /* the generic entries with a bad dtype */
    for (int v = 0; v < 2; v++)
        for (int w = 0; w < 3; w++, calls++) {
            static const char *names[3] = {"tess_getrf", "tess_getrs", "tess_gesv"};
            tess_dtype_t dt = (tess_dtype_t)(v ? -1 : 4);
            int64_t info = 4242;
            other_message(names[w]);
            int rc = w == 0   ? tess_getrf(dt, C, 5, 4, b.A, 6, b.P, &info)
                     : w == 1 ? tess_getrs(dt, C, N, 5, 3, b.A, 6, b.P, b.B, 6, &info)
                              : tess_gesv(dt, C, 5, 3, b.A, 6, b.P, b.B, 6, &info);
            ASSERT_MSG(rc == TESS_EINVAL, "%s(dtype %d): returned %d", names[w], (int)dt, rc);
            ASSERT_MSG(strstr(tess_last_error(), names[w]), "%s(dtype %d): message \"%s\"",
                       names[w], (int)dt, tess_last_error());
            bufs_same(&b, names[w], "bad dtype");
        }
    ASSERT_OK(tess_finalize());
    fprintf(stderr,
            "  bad_args: %d calls (getrf %d, getrs/gesv %d bad cases x s d c z x typed, generic x "
            "info, NULL; valid with info NULL; quick returns; gesv nrhs = 0; bad dtype): "
            "TESS_EINVAL, *info, message, A, B and ipiv untouched\n",
            calls, nrf, nsv);
    ASSERT_MSG(!bad_info_wrong, "bad_args: %d call(s) with a wrong *info (listed above)",
               bad_info_wrong);
}

/* ---- solves: tess_?getrs, tess_?gesv ------------------------------------------------------
 * B is n x nrhs in the matrix's layout: column-major element (i, r) at i + r ldb (ldb >= n),
 * row-major at i ldb + r (ldb >= nrhs), as LAPACKE. */

/* |X - R|_F / (|R|_F n eps) for X against the known solution and against ?getrs_'s, and the
 * residual |op(A) X - B|_F / (|A|_F |X|_F n eps): the systems are A = R + (2n + 2) Q, R
 * uniform in [-1, 1], Q a random permutation (condition number below 6; the pivots follow
 * Q, so B's rows are interchanged), so the forward errors are a few times the backward ones,
 * O(n eps) (seen: at most 2.6). */
#define SOL_BOUND 20.0
#define GETRS_BOUND 20.0
#define RES_BOUND 20.0

struct rhs {
    int64_t n, nrhs, ldb;
    int row;
    tess_trans_t trans; /* B = op(A) X */
    size_t nel;         /* elements allocated: ldb * (n row-major, nrhs column-major) + GUARD */
    char *b, *b0;       /* tessera's operand; its input */
    char *x;            /* the known X, column-major n x nrhs (leading dimension n) */
    char desc[160];
};

static size_t bix(const struct rhs *b, int64_t i, int64_t r) {
    return b->row ? (size_t)(i * b->ldb + r) : (size_t)(i + r * b->ldb);
}
static int in_rhs(const struct rhs *b, size_t idx) {
    int64_t in = (int64_t)(idx % (size_t)b->ldb), out = (int64_t)(idx / (size_t)b->ldb);
    return b->row ? in < b->nrhs && out < b->n : in < b->n && out < b->nrhs;
}

/* op(A)(i, k) of x's input. */
static void op_get(const struct lu *x, tess_trans_t t, int64_t i, int64_t k, long double *re,
                   long double *im) {
    ref_get(x->dt, x->a0, t == TESS_NO_TRANS ? aix(x, i, k) : aix(x, k, i), re, im);
    if (t == TESS_CONJ_TRANS) *im = -*im;
}

/* B = op(A) X for a random X (in the precision), A x's input (after lu_finish), summed in long
 * double; the padding and the guard alternate NaN and markers. */
static void rhs_make(struct rhs *b, const struct lu *x, tess_trans_t trans, int64_t nrhs,
                     int64_t ldb, uint64_t seed) {
    memset(b, 0, sizeof *b);
    b->n = x->n, b->nrhs = nrhs, b->ldb = ldb, b->row = x->layout == TESS_ROW_MAJOR;
    b->trans = trans;
    b->nel = (size_t)(ldb * (b->row ? x->n : nrhs)) + GUARD;
    b->b = ref_malloc(b->nel * x->es);
    b->b0 = ref_malloc(b->nel * x->es);
    b->x = ref_malloc((size_t)(x->n * nrhs) * x->es);
    snprintf(b->desc, sizeof b->desc, "%s trans %s nrhs=%lld ldb=%lld", x->desc,
             ref_trans_name(trans), (long long)nrhs, (long long)ldb);
    uint64_t rng = seed;
    ref_fill_random(x->dt, b->x, (size_t)(x->n * nrhs), &rng);
    for (size_t i = 0; i < b->nel; i++) {
        double v = (i & 1) ? NAN : -2048.25 - (double)(i % 32);
        ref_set(x->dt, b->b, i, v, v);
    }
    for (int64_t r = 0; r < nrhs; r++)
        for (int64_t i = 0; i < x->n; i++) {
            long double sr = 0, si = 0;
            for (int64_t k = 0; k < x->n; k++) {
                long double ar, ai, xr, xi;
                op_get(x, trans, i, k, &ar, &ai);
                ref_get(x->dt, b->x, (size_t)(k + r * x->n), &xr, &xi);
                sr += ar * xr - ai * xi, si += ar * xi + ai * xr;
            }
            ref_set(x->dt, b->b, bix(b, i, r), sr, si);
        }
    memcpy(b->b0, b->b, b->nel * x->es);
}

static void rhs_free(struct rhs *b) { free(b->b), free(b->b0), free(b->x); }

/* Index + 1 of the first element of B's storage outside n x nrhs that differs from the input in
 * any bit; 0 if none. */
static size_t rhs_outside_changed(const struct lu *x, const struct rhs *b) {
    for (size_t i = 0; i < b->nel; i++)
        if (!in_rhs(b, i) && memcmp(b->b + i * x->es, b->b0 + i * x->es, x->es)) return i + 1;
    return 0;
}

/* |X - R|_F / (|R|_F n eps), X tessera's solution in B, R column-major n x nrhs (leading
 * dimension n); infinity when X holds a NaN or an infinity. */
static double sol_err(const struct lu *x, const struct rhs *b, const char *ref) {
    long double d2 = 0, r2 = 0;
    for (int64_t r = 0; r < b->nrhs; r++)
        for (int64_t i = 0; i < b->n; i++) {
            long double xr, xi, yr, yi;
            ref_get(x->dt, b->b, bix(b, i, r), &xr, &xi);
            ref_get(x->dt, ref, (size_t)(i + r * b->n), &yr, &yi);
            if (!isfinite(xr) || !isfinite(xi)) return INFINITY;
            d2 += (xr - yr) * (xr - yr) + (xi - yi) * (xi - yi);
            r2 += yr * yr + yi * yi;
        }
    if (r2 == 0) return d2 == 0 ? 0 : INFINITY;
    return (double)(sqrtl(d2 / r2) / ((long double)b->n * ref_eps(x->dt)));
}

/* |op(A) X - B|_F / (|A|_F |X|_F n eps), X tessera's solution in B, B the input. */
static double residual(const struct lu *x, const struct rhs *b) {
    long double e2 = 0, a2 = 0, x2 = 0;
    for (int64_t k = 0; k < b->n; k++)
        for (int64_t i = 0; i < b->n; i++) {
            long double re, im;
            op_get(x, TESS_NO_TRANS, i, k, &re, &im);
            a2 += re * re + im * im;
        }
    for (int64_t r = 0; r < b->nrhs; r++)
        for (int64_t i = 0; i < b->n; i++) {
            long double sr = 0, si = 0, br, bi, xr, xi;
            ref_get(x->dt, b->b, bix(b, i, r), &xr, &xi);
            if (!isfinite(xr) || !isfinite(xi)) return INFINITY;
            x2 += xr * xr + xi * xi;
            for (int64_t k = 0; k < b->n; k++) {
                long double ar, ai;
                op_get(x, b->trans, i, k, &ar, &ai);
                ref_get(x->dt, b->b, bix(b, k, r), &xr, &xi);
                sr += ar * xr - ai * xi, si += ar * xi + ai * xr;
            }
            ref_get(x->dt, b->b0, bix(b, i, r), &br, &bi);
            e2 += (sr - br) * (sr - br) + (si - bi) * (si - bi);
        }
    if (x2 == 0) return e2 == 0 ? 0 : INFINITY;
    return (double)(sqrtl(e2 / (a2 * x2)) / ((long double)b->n * ref_eps(x->dt)));
}

/* LAPACK's solution of the input B with LAPACK's factors and pivots (x->f, x->rpiv), into out
 * (column-major n x nrhs, leading dimension n); ?getrs_'s INFO. */
static int lapack_solve(const struct lu *x, const struct rhs *b, char *out) {
    for (int64_t r = 0; r < b->nrhs; r++)
        for (int64_t i = 0; i < b->n; i++)
            memcpy(out + (size_t)(i + r * b->n) * x->es, b->b0 + bix(b, i, r) * x->es, x->es);
    return lapack_getrs(x->dt, b->trans, b->n, b->nrhs, x->f, x->fld, x->rpiv, out, b->n);
}

/* Largest ratios of the solve group. */
struct solve_maxes {
    double gesv_x, gesv_res, getrs_lapack, getrs_x, getrs_res;
    int gesv, getrs;
};

/* The system of a solve case: A = R + (2n + 2) Q, Q the permutation of a shuffle. */
static void solve_matrix(struct lu *x, tess_dtype_t dt, tess_layout_t layout, int64_t n,
                         int64_t lda, uint64_t seed) {
    lu_make(x, dt, layout, n, n, lda, seed);
    int64_t *q = ref_malloc((size_t)n * sizeof *q);
    uint64_t rng = seed ^ 0x5eed;
    for (int64_t i = 0; i < n; i++) q[i] = i;
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = ref_rand_int(&rng, 0, i), t = q[i];
        q[i] = q[j], q[j] = t;
    }
    for (int64_t j = 0; j < n; j++) {
        long double re, im;
        ref_get(dt, x->a, aix(x, q[j], j), &re, &im);
        lu_set(x, q[j], j, (double)re + (double)(2 * n + 2), (double)im);
    }
    free(q);
    snprintf(x->desc + strlen(x->desc), sizeof x->desc - strlen(x->desc), " (R + %lldQ)",
             (long long)(2 * n + 2));
}

/* One solve case on the runtime running (idx picks the leading dimensions, the seeds and the
 * entries):
 * - tess_?gesv on B = A X: TESS_OK, info 0, X within SOL_BOUND n eps of the known X, the
 *   residual within RES_BOUND, B's padding and guard untouched; A and ipiv: the checks of
 *   lapack, and bit for bit what tess_?getrf makes of the same input;
 * - tess_?getrs with trans N, T, C on LAPACK's factors and pivots (in the call's layout, the
 *   padding as the input had it) and B = op(A) X: TESS_OK, info 0, X within GETRS_BOUND n eps of
 *   ?getrs_'s on the same factors, within SOL_BOUND of the known X, the residual, A and ipiv
 *   (const) untouched, B's padding untouched. */
static void solve_case(tess_dtype_t dt, tess_layout_t layout, int64_t n, int64_t nrhs, int idx,
                       struct solve_maxes *mx) {
    struct lu x;
    char fn[32];
    int col = layout == TESS_COL_MAJOR;
    int64_t ldb = (col ? n : nrhs) + 1 + idx % 2;
    solve_matrix(&x, dt, layout, n, n + 1 + idx % 3, 7000 + (uint64_t)idx);
    lu_finish(&x);
    ASSERT_MSG(x.ref_info == 0, "solve %s: LAPACK's info %d (the test)", x.desc, x.ref_info);
    int moved = 0;
    for (int64_t i = 0; i < n; i++) moved += x.rpiv[i] != i + 1;
    ASSERT_MSG(n == 1 || moved, "solve %s: LAPACK interchanged no rows (the test)", x.desc);

    /* gesv, the entries in turns */
    int gen = ((idx >> 1) + idx) & 1;
    struct rhs b;
    rhs_make(&b, &x, TESS_NO_TRANS, nrhs, ldb, 8000 + (uint64_t)idx);
    fn_name("gesv", gen, dt, fn, sizeof fn);
    int64_t info = -77;
    int rc = gesv_call(dt, gen, layout, n, nrhs, x.a, x.lda, x.ipiv, b.b, ldb, &info);
    check_lu(&x, fn, rc, info, NULL);
    size_t bad = rhs_outside_changed(&x, &b);
    ASSERT_MSG(!bad, "%s %s: element %zu of B's storage (padding or guard) was written", fn, b.desc,
               bad - 1);
    double e = sol_err(&x, &b, b.x), res = residual(&x, &b);
    ASSERT_MSG(e <= SOL_BOUND, "%s %s: |X - X_true|_F / |X_true|_F = %.3g n eps (bound %g)", fn,
               b.desc, e, SOL_BOUND);
    ASSERT_MSG(res <= RES_BOUND, "%s %s: |A X - B|_F / (|A|_F |X|_F) = %.3g n eps (bound %g)", fn,
               b.desc, res, RES_BOUND);
    mx->gesv_x = fmax(mx->gesv_x, e), mx->gesv_res = fmax(mx->gesv_res, res), mx->gesv++;
    struct lu y = x; /* tess_getrf on the same input, the same entry */
    y.a = ref_malloc(x.nel * x.es);
    y.ipiv = ref_malloc((size_t)(x.d + GUARD) * sizeof *y.ipiv);
    memcpy(y.a, x.a0, x.nel * x.es);
    for (int64_t i = 0; i < x.d + GUARD; i++) y.ipiv[i] = PIV_MARK;
    int64_t yinfo = -77;
    rc = call_getrf(&y, gen, &yinfo);
    ASSERT_MSG(rc == TESS_OK && yinfo == 0, "solve %s: tess_getrf returned %d (%s), info %lld",
               x.desc, rc, tess_last_error(), (long long)yinfo);
    ASSERT_MSG(!memcmp(x.a, y.a, x.nel * x.es), "%s %s: A is not tess_getrf's factors bit for bit",
               fn, b.desc);
    ASSERT_MSG(!memcmp(x.ipiv, y.ipiv, (size_t)(x.d + GUARD) * sizeof *x.ipiv),
               "%s %s: ipiv is not tess_getrf's", fn, b.desc);
    free(y.a), free(y.ipiv);
    rhs_free(&b);

    /* getrs on LAPACK's factors */
    char *g = ref_malloc(x.nel * x.es), *g0 = ref_malloc(x.nel * x.es);
    char *xl = ref_malloc((size_t)(n * nrhs) * x.es);
    int64_t *p = ref_malloc((size_t)(n + GUARD) * sizeof *p),
            *p0 = ref_malloc((size_t)(n + GUARD) * sizeof *p0);
    memcpy(g, x.a0, x.nel * x.es);
    for (int64_t j = 0; j < n; j++)
        for (int64_t i = 0; i < n; i++)
            memcpy(g + aix(&x, i, j) * x.es, x.f + fix(&x, i, j) * x.es, x.es);
    memcpy(g0, g, x.nel * x.es);
    for (int64_t i = 0; i < n + GUARD; i++) p[i] = i < n ? x.rpiv[i] : PIV_MARK;
    memcpy(p0, p, (size_t)(n + GUARD) * sizeof *p);
    for (int t = 0; t < 3; t++) {
        tess_trans_t tr = (tess_trans_t)(TESS_NO_TRANS + t);
        if (tr == TESS_CONJ_TRANS && !ref_is_complex(dt)) continue; /* the same solve as T */
        gen = !gen;
        rhs_make(&b, &x, tr, nrhs, ldb, 8500 + (uint64_t)(3 * idx + t));
        fn_name("getrs", gen, dt, fn, sizeof fn);
        info = -77;
        rc = getrs_call(dt, gen, layout, tr, n, nrhs, g, x.lda, p, b.b, ldb, &info);
        ASSERT_MSG(rc == TESS_OK, "%s %s: returned %d (%s)", fn, b.desc, rc, tess_last_error());
        ASSERT_MSG(info == 0, "%s %s: info %lld, want 0", fn, b.desc, (long long)info);
        ASSERT_MSG(!memcmp(g, g0, x.nel * x.es), "%s %s: A (the factors, const) was written", fn,
                   b.desc);
        ASSERT_MSG(!memcmp(p, p0, (size_t)(n + GUARD) * sizeof *p), "%s %s: ipiv was written", fn,
                   b.desc);
        bad = rhs_outside_changed(&x, &b);
        ASSERT_MSG(!bad, "%s %s: element %zu of B's storage (padding or guard) was written", fn,
                   b.desc, bad - 1);
        int linfo = lapack_solve(&x, &b, xl);
        ASSERT_MSG(linfo == 0, "solve %s: ?getrs_'s info %d (the test)", b.desc, linfo);
        double el = sol_err(&x, &b, xl), ex = sol_err(&x, &b, b.x), r = residual(&x, &b);
        ASSERT_MSG(el <= GETRS_BOUND,
                   "%s %s: |X - X_lapack|_F / |X_lapack|_F = %.3g n eps (bound %g)", fn, b.desc, el,
                   GETRS_BOUND);
        ASSERT_MSG(ex <= SOL_BOUND, "%s %s: |X - X_true|_F / |X_true|_F = %.3g n eps (bound %g)",
                   fn, b.desc, ex, SOL_BOUND);
        ASSERT_MSG(r <= RES_BOUND, "%s %s: |op(A) X - B|_F / (|A|_F |X|_F) = %.3g n eps (bound %g)",
                   fn, b.desc, r, RES_BOUND);
        mx->getrs_lapack = fmax(mx->getrs_lapack, el), mx->getrs_x = fmax(mx->getrs_x, ex);
        mx->getrs_res = fmax(mx->getrs_res, r), mx->getrs++;
        rhs_free(&b);
    }
    free(g), free(g0), free(xl), free(p), free(p0);
    lu_free(&x);
}

/* s, d, c, z x column-, row-major x n = 1, 33, 100 x nrhs = 1, 5, 40 (under ThreadSanitizer,
 * whose runs look for races, not numbers: d, z x n 33, 100 x nrhs 5, 40, and the singular
 * columns 0, 32, 99), tile 32 on 3 emulated devices, lda and ldb above their minimum:
 * solve_case (gesv; getrs with trans N, T, and C for complex). Then
 * gesv on a singular matrix (n = 100, column j zero: j = 0, 31, 32, 45, 99; nrhs 3): TESS_OK,
 * *info = j + 1 (LAPACK's), B every byte (padding and guard too) as it was, A and ipiv as
 * tess_?getrf leaves them (the checks of lapack). */
TEST(solve) {
    static const int64_t sizes[] = {1, 33, 100}, nrhss[] = {1, 5, 40};
    start(3, "32", "16M");
    ASSERT_OK(tess_init());
    struct solve_maxes mx = {0, 0, 0, 0, 0, 0, 0};
    int idx = 0;
    for (int d = 0; d < 4; d++)
        for (int l = 0; l < 2; l++)
            for (int s = 0; s < 3; s++)
                for (int r = 0; r < 3; r++, idx++) {
#ifdef UNDER_TSAN
                    /* its races, not the numbers: d and z, n 33 and 100 with nrhs 5 and 40 */
                    if (s == 0 || r == 0 || d % 2 == 0) continue;
#endif
                    solve_case(dts[d], lays[l], sizes[s], nrhss[r], idx, &mx);
                }
    fprintf(stderr,
            "  solve: %d gesv, %d getrs (s d c z, col row, n 1 33 100, nrhs 1 5 40, trans N T C, "
            "tile 32, 3 devices): worst gesv |X - X_true| %.3g, residual %.3g; getrs |X - "
            "X_lapack| %.3g, |X - X_true| %.3g, residual %.3g (n eps); gesv's A and ipiv = "
            "tess_getrf's bit for bit\n",
            mx.gesv, mx.getrs, mx.gesv_x, mx.gesv_res, mx.getrs_lapack, mx.getrs_x, mx.getrs_res);

    static const int64_t js[] = {0, 31, 32, 45, 99};
    const int64_t n = 100, nrhs = 3;
    int cases = 0;
    idx = 0;
    for (int d = 0; d < 4; d++)
        for (int l = 0; l < 2; l++)
            for (int t = 0; t < 5; t++, idx++) {
#ifdef UNDER_TSAN
                if (d % 2 == 0 || t % 2 == 1) continue; /* d and z, columns 0, 32, 99 */
#endif
                struct lu x;
                struct rhs b;
                char fn[32];
                int64_t j = js[t], ldb = (lays[l] == TESS_COL_MAJOR ? n : nrhs) + 2;
                lu_make(&x, dts[d], lays[l], n, n, n + 1 + idx % 3, 9000 + (uint64_t)idx);
                for (int64_t i = 0; i < n; i++) lu_set(&x, i, j, 0, 0);
                snprintf(x.desc + strlen(x.desc), sizeof x.desc - strlen(x.desc),
                         " column %lld zero", (long long)j);
                lu_finish(&x);
                ASSERT_MSG(x.ref_info == j + 1, "%s: LAPACK's info %d (the test)", x.desc,
                           x.ref_info);
                rhs_make(&b, &x, TESS_NO_TRANS, nrhs, ldb, 9500 + (uint64_t)idx);
                fn_name("gesv", idx & 1, x.dt, fn, sizeof fn);
                int64_t info = -77;
                int rc = gesv_call(x.dt, idx & 1, x.layout, n, nrhs, x.a, x.lda, x.ipiv, b.b, ldb,
                                   &info);
                check_lu(&x, fn, rc, info, NULL);
                for (size_t i = 0; i < b.nel; i++)
                    ASSERT_MSG(!memcmp(b.b + i * x.es, b.b0 + i * x.es, x.es),
                               "%s %s: info %lld, and B's element %zu (%s) changed", fn, b.desc,
                               (long long)info, i,
                               in_rhs(&b, i) ? "inside n x nrhs" : "padding or guard");
                cases++;
                rhs_free(&b);
                lu_free(&x);
            }
    ASSERT_OK(tess_finalize());
    fprintf(stderr,
            "  solve: gesv singular: %d cases (s d c z, col row, n 100, nrhs 3, column 0 31 32 45 "
            "99 zero): info = j + 1, B untouched, A factored\n",
            cases);
}

/* tess_dgesv column-major (n = 200, lda 203, tile 32, nrhs 3, ldb 201) on 3 emulated
 * devices: the solves read the factor where tess_dgetrf left it, in strips held on the
 * devices: summed over the devices, bytes_h2d is at most the matrix once plus B twice (each
 * triangular solve reads it), where solving from the host would read the factor's
 * triangles again. And X is right. */
TEST(solve_held) {
    const int64_t n = 200, nrhs = 3;
    start(3, "32", "16M");
    ASSERT_OK(tess_init());
    struct lu x;
    struct rhs b;
    lu_make(&x, TESS_D, TESS_COL_MAJOR, n, n, n + 3, 9700);
    lu_finish(&x);
    rhs_make(&b, &x, TESS_NO_TRANS, nrhs, n + 1, 9800);
    tess_reset_stats();
    int64_t info = -77;
    int rc = tess_dgesv(TESS_COL_MAJOR, n, nrhs, (double *)x.a, x.lda, x.ipiv, (double *)b.b, b.ldb,
                        &info);
    ASSERT_MSG(rc == TESS_OK && info == 0, "tess_dgesv %s: returned %d (%s), info %lld", b.desc, rc,
               tess_last_error(), (long long)info);
    double e = sol_err(&x, &b, b.x);
    ASSERT_MSG(e <= SOL_BOUND, "tess_dgesv %s: |X - X_true|_F / |X_true|_F = %.3g n eps", b.desc,
               e);
    emu_check_solve_h2d("tess_dgesv", 3, (uint64_t)(n * n) * x.es, (uint64_t)(n * nrhs) * x.es);
    rhs_free(&b);
    lu_free(&x);
    ASSERT_OK(tess_finalize());
}

/* ---- counters ------------------------------------------------------------------------------ */

/* tess_dgetrf column-major, m = n = 200 (lda 203), tile 32 (7 strips of 200 x 32, the last
 * 200 x 8) on 3 emulated devices, write-behind off: the factorization is right (the checks of
 * lapack); the devices launched exactly the kernels of the strip algorithm (docs/lapack.md:
 * 7 panel GETRF; per panel k < 6 one LASWP, TRSM and GEMM for each of the 6 - k strips right of
 * it: 63; and the final swaps, one LASWP per strip j < 6 and panel right of it: 21), on more
 * than one device; strips went from device to device (p2p bytes > 0); and each strip crossed
 * the host link at most once each way: summed over the devices bytes_h2d and bytes_d2h are at
 * most m n 8 (a strip comes in at its first task, the peers serve the other devices, and it is
 * written back once, at its final write; write-behind off, so no early write-back of a strip
 * the factorization changes again). */
TEST(counters) {
    const int64_t n = 200;
    start(3, "32", "16M");
    setenv("TESSERA_WRITE_BEHIND", "0", 1);
    ASSERT_OK(tess_init());
    ASSERT_EQ(tess_device_count(), 3);
    struct lu x;
    lu_make(&x, TESS_D, TESS_COL_MAJOR, n, n, n + 3, 6000);
    lu_finish(&x);
    tess_reset_stats();
    int64_t info = -77;
    int rc = call_getrf(&x, 0, &info);
    check_lu(&x, "counters", rc, info, NULL);
    uint64_t h2d = 0, d2h = 0, p2p = 0, steps[3] = {0, 0, 0}, total = 0;
    int busy = 0;
    for (int d = 0; d < 3; d++) {
        tess_dev_stats_t st;
        ASSERT_OK(tess_device_stats(d, &st));
        h2d += st.bytes_h2d, d2h += st.bytes_d2h, p2p += st.bytes_p2p;
        steps[d] = st.steps, total += st.steps;
        busy += st.steps > 0;
    }
    ASSERT_OK(tess_finalize());
    const uint64_t bound = (uint64_t)(n * n) * sizeof(double), want = 7 + 63 + 21;
    fprintf(stderr,
            "  counters: %s: kernels %llu %llu %llu (want %llu in all); h2d %llu, d2h %llu "
            "(bound m n 8 = %llu each), p2p %llu\n",
            x.desc, (unsigned long long)steps[0], (unsigned long long)steps[1],
            (unsigned long long)steps[2], (unsigned long long)want, (unsigned long long)h2d,
            (unsigned long long)d2h, (unsigned long long)bound, (unsigned long long)p2p);
    ASSERT_MSG(total == want, "%s: the devices launched %llu kernels, want %llu", x.desc,
               (unsigned long long)total, (unsigned long long)want);
    ASSERT_MSG(busy >= 2, "%s: kernels ran on %d device(s) only", x.desc, busy);
    ASSERT_MSG(p2p > 0, "%s: no strip went from device to device (p2p 0 bytes)", x.desc);
    ASSERT_MSG(h2d <= bound,
               "%s: %llu bytes host to device, more than the matrix (%llu): strips crossed the "
               "link more than once",
               x.desc, (unsigned long long)h2d, (unsigned long long)bound);
    ASSERT_MSG(d2h <= bound, "%s: %llu bytes device to host, more than the matrix (%llu)", x.desc,
               (unsigned long long)d2h, (unsigned long long)bound);
    lu_free(&x);
}

/* ---- NaN and Inf ------------------------------------------------------------------------- */

/* One NaN (or Inf) in a random matrix (100 x 100 and 120 x 80, tile 32, 3 devices; at
 * (0, 0), (45, 45), (50, 20), (99, 10)), every precision and layout: TESS_OK with LAPACK's
 * info, pivots in range, and never an all-finite factorization; nothing outside the
 * matrix (nor ipiv past min(m, n)) written. */
TEST(nan) {
    static const int64_t at[4][2] = {{0, 0}, {45, 45}, {50, 20}, {99, 10}};
    static const int64_t sh[2][2] = {{100, 100}, {120, 80}};
    start(3, "32", "16M");
    ASSERT_OK(tess_init());
    int cases = 0, idx = 0, same_info = 0;
    for (int d = 0; d < 4; d++)
        for (int l = 0; l < 2; l++)
            for (int p = 0; p < 4; p++, idx++) {
                struct lu x;
                const int64_t m = sh[idx & 1][0], n = sh[idx & 1][1];
                lu_make(&x, dts[d], lays[l], m, n, (lays[l] == TESS_COL_MAJOR ? m : n) + 1,
                        8000 + (uint64_t)idx);
                const double bad = (idx & 2) ? INFINITY : NAN;
                lu_set(&x, at[p][0], at[p][1], bad, 0);
                lu_finish(&x);
                int64_t info = -77;
                int rc = call_getrf(&x, idx & 1, &info);
                ASSERT_MSG(rc == TESS_OK && info >= 0,
                           "nan %s, %g at (%lld, %lld): returned %d (%s), info %lld", x.desc, bad,
                           (long long)at[p][0], (long long)at[p][1], rc, tess_last_error(),
                           (long long)info);
                size_t nonfinite = 0;
                for (int64_t j = 0; j < n; j++)
                    for (int64_t i = 0; i < m; i++) {
                        long double re, im;
                        ref_get(x.dt, x.a, aix(&x, i, j), &re, &im);
                        nonfinite += !isfinite(re) || !isfinite(im);
                    }
                ASSERT_MSG(nonfinite > 0, "nan %s, %g at (%lld, %lld): an all-finite factorization",
                           x.desc, bad, (long long)at[p][0], (long long)at[p][1]);
                for (int64_t i = 0; i < x.d; i++)
                    ASSERT_MSG(x.ipiv[i] >= i + 1 && x.ipiv[i] <= m,
                               "nan %s: ipiv[%lld] = %lld out of range", x.desc, (long long)i,
                               (long long)x.ipiv[i]);
                for (int64_t i = x.d; i < x.d + GUARD; i++)
                    ASSERT_MSG(x.ipiv[i] == PIV_MARK, "nan %s: ipiv[%lld] written", x.desc,
                               (long long)i);
                size_t wrote = outside_changed(&x);
                ASSERT_MSG(!wrote, "nan %s: storage element %zu outside the matrix written", x.desc,
                           wrote - 1);
                ASSERT_MSG(info == x.ref_info, "nan %s, %g at (%lld, %lld): info %lld, LAPACK's %d",
                           x.desc, bad, (long long)at[p][0], (long long)at[p][1], (long long)info,
                           x.ref_info);
                same_info += info == x.ref_info;
                cases++;
                lu_free(&x);
            }
    ASSERT_OK(tess_finalize());
    fprintf(stderr,
            "  nan: %d cases (s d c z, col row, NaN and Inf at 4 places, 100 x 100 and 120 x 80): "
            "TESS_OK, a non-finite factorization, pivots in range; info as LAPACK's in %d\n",
            cases, same_info);
}

/* ---- out of core ---------------------------------------------------------------------------- */

/* Devices too small for the matrix: d 300 x 300 and z 260 x 200 column-major (strips of 32
 * columns: 75 KB and 130 KB in d and z), 2 devices of 400 KB heaps each, write-behind off:
 * LAPACK's result, dirty strips evicted and written back (evictions and writebacks counted),
 * and the host bytes in both directions beyond the matrix's: strips crossed the link again. */
TEST(out_of_core) {
    static const struct {
        tess_dtype_t dt;
        int64_t m, n;
    } cs[2] = {{TESS_D, 300, 300}, {TESS_Z, 260, 200}};
    for (int c = 0; c < 2; c++) {
        start(2, "32", "400K");
        setenv("TESSERA_WRITE_BEHIND", "0", 1);
        ASSERT_OK(tess_init());
        struct lu x;
        lu_make(&x, cs[c].dt, TESS_COL_MAJOR, cs[c].m, cs[c].n, cs[c].m + 2, 9000 + (uint64_t)c);
        lu_finish(&x);
        tess_reset_stats();
        int64_t info = -77;
        int rc = call_getrf(&x, 0, &info);
        check_lu(&x, "out_of_core", rc, info, NULL);
        uint64_t ev = 0, wb = 0, h2d = 0, d2h = 0;
        for (int d = 0; d < 2; d++) {
            tess_dev_stats_t st;
            ASSERT_OK(tess_device_stats(d, &st));
            ev += st.evictions, wb += st.writebacks, h2d += st.bytes_h2d, d2h += st.bytes_d2h;
        }
        ASSERT_OK(tess_finalize());
        const uint64_t bytes = (uint64_t)(x.m * x.n) * x.es;
        fprintf(stderr,
                "  out_of_core: %s, 2 devices x 400 KB: evictions %llu, write-backs %llu, h2d "
                "%.2f and d2h %.2f times the matrix\n",
                x.desc, (unsigned long long)ev, (unsigned long long)wb, (double)h2d / bytes,
                (double)d2h / bytes);
        ASSERT_MSG(ev > 0 && wb > 0, "%s: evictions %llu, write-backs %llu: not out of core",
                   x.desc, (unsigned long long)ev, (unsigned long long)wb);
        ASSERT_MSG(h2d > bytes && d2h > bytes,
                   "%s: h2d %llu, d2h %llu bytes, the matrix %llu: nothing crossed twice", x.desc,
                   (unsigned long long)h2d, (unsigned long long)d2h, (unsigned long long)bytes);
        lu_free(&x);
    }
}

/* ---- held data ---------------------------------------------------------------------------- */

/* Hold the column-major rows x cols C (ld) with its contents only in dirty device tiles:
 * the host range gets garbage, then tess_gemm writes C := 1 C0 I + 0 C into the held tiles
 * (as a sequence of calls would leave them). A call that read the host range would see the
 * garbage. */
static void hold_dirty(tess_dtype_t dt, char *c, int64_t rows, int64_t cols, int64_t ld,
                       size_t es) {
    char *c0 = ref_malloc((size_t)(ld * cols) * es), *eye = ref_malloc((size_t)(cols * cols) * es);
    memcpy(c0, c, (size_t)(ld * cols) * es);
    memset(eye, 0, (size_t)(cols * cols) * es);
    for (int64_t i = 0; i < cols; i++) ref_set(dt, eye, (size_t)(i + i * cols), 1, 0);
    for (int64_t j = 0; j < cols; j++)
        for (int64_t i = 0; i < rows; i++)
            ref_set(dt, c, (size_t)(i + j * ld), 1e6 + (double)i, -3);
    ASSERT_OK(tess_hold(dt, c, ld, rows, cols, 32));
    unsigned char one[16], zero[16];
    ref_scalar(dt, one, 1, 0);
    ref_scalar(dt, zero, 0, 0);
    ASSERT_OK(tess_gemm(dt, TESS_COL_MAJOR, TESS_NO_TRANS, TESS_NO_TRANS, rows, cols, cols, one, c0,
                        ld, eye, cols, zero, c, ld));
    free(c0), free(eye);
}

/* tess_?getrf on a held matrix whose contents are only in dirty device tiles (hold_dirty;
 * d column-major n = 150, z row-major n = 100; tile 32, 3 devices): the factorization runs on
 * the devices (steps counted), its result is LAPACK's after tess_sync, and the matrix stays
 * held (tess_release succeeds). Then tess_getrs with a held B likewise (nrhs 7): X is
 * LAPACK's ?getrs_ on the same factors, read after tess_sync(B). */
TEST(held) {
    start(3, "32", "16M");
    ASSERT_OK(tess_init());
    static const struct {
        tess_dtype_t dt;
        tess_layout_t layout;
        int64_t n;
    } cs[2] = {{TESS_D, TESS_COL_MAJOR, 150}, {TESS_Z, TESS_ROW_MAJOR, 100}};
    for (int c = 0; c < 2; c++) {
        struct lu x;
        const int64_t n = cs[c].n, nrhs = 7;
        lu_make(&x, cs[c].dt, cs[c].layout, n, n, n + 3, 7000 + (uint64_t)c);
        lu_finish(&x);
        hold_dirty(x.dt, x.a, n, n, x.lda, x.es);
        tess_reset_stats();
        int64_t info = -77;
        int rc = call_getrf(&x, 1, &info);
        uint64_t steps = 0;
        for (int d = 0; d < 3; d++) {
            tess_dev_stats_t st;
            ASSERT_OK(tess_device_stats(d, &st));
            steps += st.steps;
        }
        ASSERT_MSG(rc == TESS_OK, "held %s: returned %d (%s)", x.desc, rc, tess_last_error());
        ASSERT_OK(tess_sync(x.a));
        check_lu(&x, "held", rc, info, NULL);
        ASSERT_MSG(steps > 0, "held %s: no device kernel ran the factorization", x.desc);
        /* B held (column-major n x nrhs, ld n + 2), dirty, solved with the factors */
        const int64_t ldb = n + 2;
        char *b = ref_malloc((size_t)(ldb * nrhs) * x.es),
             *rb = ref_malloc((size_t)(ldb * nrhs) * x.es);
        uint64_t rng = 99 + (uint64_t)c;
        for (size_t i = 0; i < (size_t)(ldb * nrhs); i++)
            ref_set(x.dt, b, i, ref_rand_unit(&rng), ref_rand_unit(&rng));
        memcpy(rb, b, (size_t)(ldb * nrhs) * x.es);
        hold_dirty(x.dt, b, n, nrhs, ldb, x.es);
        rc = tess_getrs(x.dt, TESS_COL_MAJOR, TESS_NO_TRANS, n, nrhs,
                        x.layout == TESS_COL_MAJOR ? x.a : x.f,
                        x.layout == TESS_COL_MAJOR ? x.lda : x.fld, x.ipiv, b, ldb, &info);
        ASSERT_MSG(rc == TESS_OK && info == 0, "held %s: getrs returned %d (%s), info %lld", x.desc,
                   rc, tess_last_error(), (long long)info);
        ASSERT_OK(tess_sync(b));
        /* LAPACK's solve on the factors tessera's getrs used (col-major: tessera's; row-major:
         * LAPACK's own, which the check above found equal to tessera's pivots) */
        int *piv = ref_malloc((size_t)n * sizeof *piv);
        for (int64_t i = 0; i < n; i++) piv[i] = (int)x.ipiv[i];
        ASSERT_EQ(lapack_getrs(x.dt, TESS_NO_TRANS, n, nrhs, x.layout == TESS_COL_MAJOR ? x.a : x.f,
                               x.layout == TESS_COL_MAJOR ? x.lda : x.fld, piv, rb, ldb),
                  0);
        double md = 0, mx = 0;
        for (int64_t r = 0; r < nrhs; r++)
            for (int64_t i = 0; i < n; i++) {
                long double xr, xi, yr, yi;
                ref_get(x.dt, b, (size_t)(i + r * ldb), &xr, &xi);
                ref_get(x.dt, rb, (size_t)(i + r * ldb), &yr, &yi);
                md = fmax(md, (double)(fabsl(xr - yr) + fabsl(xi - yi)));
                mx = fmax(mx, (double)(fabsl(yr) + fabsl(yi)));
            }
        ASSERT_MSG(md <= 1e-9 * mx, "held %s: getrs on a held B: |X - X_lapack| = %.3g (max %.3g)",
                   x.desc, md, mx);
        ASSERT_OK(tess_release(b));
        ASSERT_OK(tess_release(x.a));
        fprintf(stderr,
                "  held: %s: factored on the devices (%llu kernels), LAPACK's result after "
                "tess_sync, still held; getrs on a held B: |X - X_lapack| %.2g of %.2g\n",
                x.desc, (unsigned long long)steps, md, mx);
        free(b), free(rb), free(piv);
        lu_free(&x);
    }
    ASSERT_OK(tess_finalize());
}

/* ---- faults ------------------------------------------------------------------------------- */

/* fault_sweep's point and what its checks gather */
struct fault_ctx {
    struct lu *x;
    struct tally t;
};

/* fault_sweep's point: the matrix and pivots restored, tess_dgetrf or tess_zgetrf */
static int fault_run(void *ctx, int64_t *info) {
    struct fault_ctx *f = ctx;
    lu_reset(f->x);
    return call_getrf(f->x, 0, info);
}

/* TESS_OK: a right factorization; TESS_EDEVICE: nothing outside the matrix (nor ipiv past
 * min(m, n)) written */
static void fault_check(void *ctx, const char *tag, int rc, int64_t info) {
    struct fault_ctx *f = ctx;
    const struct lu *x = f->x;
    if (rc == TESS_OK) {
        check_lu(x, tag, rc, info, &f->t);
        return;
    }
    size_t bad = outside_changed(x);
    ASSERT_MSG(!bad, "%s %s: TESS_EDEVICE, and storage element %zu outside the matrix written", tag,
               x->desc, bad - 1);
    for (int64_t i = x->d; i < x->d + GUARD; i++)
        ASSERT_MSG(x->ipiv[i] == PIV_MARK, "%s %s: TESS_EDEVICE, and ipiv[%lld] written", tag,
                   x->desc, (long long)i);
}

/* Device 1 of 3 fails at its k-th copy or kernel (TESSERA_FAULT=1:k), k = 1, 2, ... until it
 * no longer reaches k six times in a row: the call returns TESS_OK with a right factorization
 * (the checks of lapack: info, pivots in range, backward error, LAPACK's factors where the
 * pivots are LAPACK's), or TESS_EDEVICE with a message; never anything else, never TESS_OK
 * with a wrong one; nothing outside the m x n matrix (nor ipiv past min(m, n)) written either
 * way. m = n = 100, tile 32. Reproducer: TESS_GETRF_FAULT=k runs fault point k alone. */
static void fault_sweep(tess_dtype_t dt, tess_layout_t layout, const char *recover) {
    struct lu x;
    const int64_t n = 100;
    lu_make(&x, dt, layout, n, n, n + 3, 5000 + (uint64_t)dt);
    lu_finish(&x);
    struct fault_ctx f = {&x, {0, 0, 0, 0}};
    struct emu_sweep s = {.env = "TESS_GETRF_FAULT",
                          .recover = recover,
                          .desc = x.desc,
                          .kmax = 400,
                          .start = start,
                          .run = fault_run,
                          .check = fault_check,
                          .ctx = &f};
    emu_fault_sweep(&s);
    fprintf(stderr,
            "  faults: %s, TESSERA_RECOVER=%s: device 1 fails at op k = %d..%d (%d reached): %d "
            "TESS_OK with a right factorization (LAPACK's pivots in %d), %d TESS_EDEVICE\n",
            x.desc, recover, s.k0, s.k - 1, s.hit, s.right, f.t.same, s.edev);
    ASSERT_MSG(s.hit > 0 || s.k1 == s.k0, "%s: device 1 never reached its fault point", x.desc);
    lu_free(&x);
}

/* fault_sweep for d column-major and z row-major with TESSERA_RECOVER=0, and d column-major
 * with TESSERA_RECOVER=1. */
TEST(faults) {
    fault_sweep(TESS_D, TESS_COL_MAJOR, "0");
    fault_sweep(TESS_Z, TESS_ROW_MAJOR, "0");
    fault_sweep(TESS_D, TESS_COL_MAJOR, "1");
}

TEST_MAIN()
