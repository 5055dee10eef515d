/* tests/test_probe.c: the tools' probe-vector oracle (src/tools/probe.c), which every GPU
 * benchmark's "verified" rests on: a right product passes and one entry off by a little
 * more than the rounding bound fails, in every precision and transpose; probe_check_bt with op(B) t
 * computed outside gives the same verdict bit for bit (tessera-bench shares op(B) t between
 * the blocks of a column strip); the right products come from OpenBLAS (ref_gemm); the
 * real-precision loop of probe_matvec gives the same
 * sums as plain loops.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "ref.h"
#include "../src/tools/probe.h"


static void get(int dt, const void *x, size_t i, long double *re, long double *im) {
    *im = 0;
    switch (dt) {
    case TESS_S: *re = ((const float *)x)[i]; break;
    case TESS_D: *re = ((const double *)x)[i]; break;
    case TESS_C: *re = ((const float *)x)[2 * i], *im = ((const float *)x)[2 * i + 1]; break;
    default: *re = ((const double *)x)[2 * i], *im = ((const double *)x)[2 * i + 1]; break;
    }
}

static void put(int dt, void *x, size_t i, long double re, long double im) {
    switch (dt) {
    case TESS_S: ((float *)x)[i] = (float)re; break;
    case TESS_D: ((double *)x)[i] = (double)re; break;
    case TESS_C: ((float *)x)[2 * i] = (float)re, ((float *)x)[2 * i + 1] = (float)im; break;
    default: ((double *)x)[2 * i] = (double)re, ((double *)x)[2 * i + 1] = (double)im; break;
    }
}

static tess_trans_t ttr(char t) { return t == 'N' ? TESS_NO_TRANS : t == 'T' ? TESS_TRANS : TESS_CONJ_TRANS; }

/* One case: pass, the same verdict through probe_check_bt, a failure after one entry moves
 * by a few times the row's rounding bound, and a failure for a NaN. */
static void one_case(int dt, char ta, char tb, int64_t m, int64_t n, int64_t k, uint64_t seed) {
    const size_t es = ref_esize(dt);
    int64_t lda = (ta == 'N' ? m : k) + 3, ldb = (tb == 'N' ? k : n) + 2;
    void *A = malloc(es * (size_t)lda * (size_t)(ta == 'N' ? k : m));
    void *B = malloc(es * (size_t)ldb * (size_t)(tb == 'N' ? n : k));
    void *C0 = malloc(es * (size_t)m * (size_t)n), *C = malloc(es * (size_t)m * (size_t)n);
    ASSERT(A && B && C0 && C);
    probe_fill(dt, A, lda, ta == 'N' ? k : m, lda, seed);
    probe_fill(dt, B, ldb, tb == 'N' ? n : k, ldb, seed + 1);
    probe_fill(dt, C0, m, n, m, seed + 2);
    unsigned char alpha[16], beta[16];
    ref_scalar(dt, alpha, 0.75, ref_is_complex(dt) ? -0.5 : 0);
    ref_scalar(dt, beta, -1.25, ref_is_complex(dt) ? 0.25 : 0);
    /* the product by OpenBLAS, as every other test's reference */
    memcpy(C, C0, es * (size_t)m * (size_t)n);
    ref_gemm(dt, TESS_COL_MAJOR, ttr(ta), ttr(tb), m, n, k, alpha, A, lda, B, ldb, beta, C, m);
    struct probe p;
    ASSERT_EQ(probe_begin(&p, dt, m, n, C0, m), 0);
    double r = probe_check(&p, ta, tb, k, alpha, A, lda, B, ldb, beta, C, m);
    ASSERT_MSG(r <= 1, "dt %d %c%c %lldx%lldx%lld: a right product fails (%g)", dt, ta, tb,
               (long long)m, (long long)n, (long long)k, r);
    /* op(B) t outside, then the rest */
    long double *bt = malloc(sizeof(long double) * 2 * (size_t)k), *btabs = malloc(sizeof(long double) * (size_t)k);
    ASSERT(bt && btabs);
    probe_matvec(dt, tb, tb == 'N' ? k : n, tb == 'N' ? n : k, B, ldb, p.t, p.tabs, bt, btabs);
    double r2 = probe_check_bt(&p, ta, k, alpha, A, lda, bt, btabs, beta, C, m);
    ASSERT_MSG(r2 == r, "probe_check_bt %g != probe_check %g", r2, r);
    /* one entry off by 8 times the row's whole rounding budget, (k + 4) u n k (the bound
     * sums |A||B||t| over a row of n entries of about k/4 each): a few 1e-11 in double */
    const long double u = (dt == TESS_S || dt == TESS_C) ? FLT_EPSILON / 2 : DBL_EPSILON / 2;
    size_t at = (size_t)(m / 2) + (size_t)(n / 3) * (size_t)m;
    long double cr, ci;
    get(dt, C, at, &cr, &ci);
    put(dt, C, at, cr + 8 * (long double)(k + 4) * u * (long double)(n * k), ci);
    double r3 = probe_check(&p, ta, tb, k, alpha, A, lda, B, ldb, beta, C, m);
    ASSERT_MSG(r3 > 1, "dt %d %c%c: an entry moved by 8 (k + 4) u n k passes (%g)", dt, ta, tb, r3);
    /* a NaN fails */
    put(dt, C, at, NAN, 0);
    ASSERT(isnan(probe_check(&p, ta, tb, k, alpha, A, lda, B, ldb, beta, C, m)));
    probe_end(&p);
    free(bt), free(btabs), free(A), free(B), free(C0), free(C);
}

/* Every precision, every transpose pair (C for complex only), sizes off any block size. */
TEST(right_passes_wrong_fails_every_precision_and_transpose) {
    const char ts[3] = {'N', 'T', 'C'};
    uint64_t seed = 11;
    for (int dt = 0; dt < 4; dt++)
        for (int a = 0; a < (ref_is_complex(dt) ? 3 : 2); a++)
            for (int b = 0; b < (ref_is_complex(dt) ? 3 : 2); b++) one_case(dt, ts[a], ts[b], 37, 29, 41, seed++);
}

/* The real loop of probe_matvec ('N' and 'T') against the plain sums in the same order. */
TEST(real_matvec_matches_plain_sums) {
    for (int dt = TESS_S; dt <= TESS_D; dt++) {
        const int64_t rows = 53, cols = 31, ld = 57;
        void *X = malloc(ref_esize(dt) * (size_t)ld * (size_t)cols);
        ASSERT(X);
        probe_fill(dt, X, ld, cols, ld, 99 + (uint64_t)dt);
        long double v[2 * 53], va[53], y[2 * 53], ya[53];
        for (int t = 0; t < 2; t++) {
            const char tr = t ? 'T' : 'N';
            const int64_t in = tr == 'N' ? cols : rows, out = tr == 'N' ? rows : cols;
            for (int64_t j = 0; j < in; j++) v[2 * j] = 1 + 0.01L * (long double)j, v[2 * j + 1] = 0, va[j] = v[2 * j];
            probe_matvec(dt, tr, rows, cols, X, ld, v, va, y, ya);
            for (int64_t o = 0; o < out; o++) {
                long double s = 0, sa = 0, re, im;
                for (int64_t l = 0; l < in; l++) {
                    size_t at = tr == 'N' ? (size_t)o + (size_t)l * (size_t)ld : (size_t)l + (size_t)o * (size_t)ld;
                    get(dt, X, at, &re, &im);
                    s += re * v[2 * l], sa += fabsl(re) * va[l];
                }
                ASSERT_MSG(y[2 * o] == s && y[2 * o + 1] == 0 && ya[o] == sa,
                           "dt %d %c row %lld: %Lg %Lg against %Lg %Lg", dt, tr, (long long)o,
                           y[2 * o], ya[o], s, sa);
            }
        }
        free(X);
    }
}

TEST_MAIN()
