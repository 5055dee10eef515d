/* tests/test_probe.c: the probe-vector oracle (src/tools/oracle.c, oracle_l3.c), on which
 * every benchmark's and test's "verified" rests, and its one bound (oracle.h). Sound: right
 * results (OpenBLAS's, and tessera's with 7 x 7 tiles, so k is summed in many blocks) pass in
 * every precision and transpose, with the fixed probe and random complex ones, at sizes off
 * any block size and k from 1 to 131071 (above the tools' largest). Tight: one entry moved by
 * 3 times its row's bound fails (and by 8 (k + 4) u n k, the old budget), a NaN fails, a
 * block left as C0 or a lost conjugate fails; the same for every level-3 routine and option
 * (SYRK-like: the other triangle and, HERK/HER2K, the diagonal's imaginary parts flagged).
 * oracle_gemm_check_bt with op(B) t computed outside gives the same verdict bit for bit
 * (tessera-bench shares op(B) t between the blocks of a column strip); the real loop of the
 * matrix-vector product gives the same sums as plain loops. */
#include <cblas.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "oracle.h"
#include "oracle_l3.h"
#include "ref.h"

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

static tess_trans_t ttr(char t) {
    return t == 'N' ? TESS_NO_TRANS : t == 'T' ? TESS_TRANS : TESS_CONJ_TRANS;
}

/* ---- GEMM ----------------------------------------------------------------------------------- */

struct gcase {
    int dt;
    char ta, tb;
    int64_t m, n, k, lda, ldb;
    void *A, *B, *C0, *C;
    unsigned char alpha[16], beta[16];
};

static void gcase_make(struct gcase *g, int dt, char ta, char tb, int64_t m, int64_t n, int64_t k,
                       uint64_t seed) {
    const size_t es = ref_esize(dt);
    *g = (struct gcase){.dt = dt, .ta = ta, .tb = tb, .m = m, .n = n, .k = k};
    g->lda = (ta == 'N' ? m : k) + 3, g->ldb = (tb == 'N' ? k : n) + 2;
    g->A = ref_malloc(es * (size_t)g->lda * (size_t)(ta == 'N' ? k : m));
    g->B = ref_malloc(es * (size_t)g->ldb * (size_t)(tb == 'N' ? n : k));
    g->C0 = ref_malloc(es * (size_t)(m * n)), g->C = ref_malloc(es * (size_t)(m * n));
    oracle_fill(dt, g->A, g->lda, ta == 'N' ? k : m, g->lda, seed);
    oracle_fill(dt, g->B, g->ldb, tb == 'N' ? n : k, g->ldb, seed + 1);
    oracle_fill(dt, g->C0, m, n, m, seed + 2);
    ref_scalar(dt, g->alpha, 0.75, ref_is_complex(dt) ? -0.5 : 0);
    ref_scalar(dt, g->beta, -1.25, ref_is_complex(dt) ? 0.25 : 0);
}

/* C = alpha op(A) op(B) + beta C0 by OpenBLAS, as every other test's reference */
static void gcase_ref(struct gcase *g) {
    memcpy(g->C, g->C0, ref_esize(g->dt) * (size_t)(g->m * g->n));
    ref_gemm(g->dt, TESS_COL_MAJOR, ttr(g->ta), ttr(g->tb), g->m, g->n, g->k, g->alpha, g->A,
             g->lda, g->B, g->ldb, g->beta, g->C, g->m);
}

static double gcase_check(const struct gcase *g, const struct oracle_gemm *p) {
    return oracle_gemm_check(p, g->ta, g->tb, g->k, g->alpha, g->A, g->lda, g->B, g->ldb, g->beta,
                             g->C, g->m, NULL);
}

static void gcase_free(struct gcase *g) { free(g->A), free(g->B), free(g->C0), free(g->C); }

/* Row i's bound, as oracle_gemm_check computes it (the terms T_i from |op(A)| (|op(B)| |t|)
 * and |C0| |t|, |C| |t| for the oracle's own rounding). */
static long double row_bound(const struct gcase *g, const struct oracle_gemm *p, int64_t i) {
    const int64_t m = g->m, n = g->n, k = g->k;
    long double *bt = calloc(2 * (size_t)k + 2, sizeof *bt),
                *ba = calloc((size_t)k + 1, sizeof *ba);
    long double *w = calloc(2 * (size_t)m, sizeof *w), *wa = calloc((size_t)m, sizeof *wa);
    long double *c = calloc(2 * (size_t)m, sizeof *c), *ca = calloc((size_t)m, sizeof *ca);
    ASSERT(bt && ba && w && wa && c && ca);
    oracle_matvec(g->dt, g->tb, g->tb == 'N' ? k : n, g->tb == 'N' ? n : k, g->B, g->ldb, p->t,
                  p->tabs, bt, ba);
    oracle_matvec(g->dt, g->ta, g->ta == 'N' ? m : k, g->ta == 'N' ? k : m, g->A, g->lda, bt, ba, w,
                  wa);
    oracle_matvec(g->dt, 'N', m, n, g->C, m, p->t, p->tabs, c, ca);
    long double ar, ai, br, bi;
    oracle_scalar(g->dt, g->alpha, &ar, &ai);
    oracle_scalar(g->dt, g->beta, &br, &bi);
    long double T = (fabsl(ar) + fabsl(ai)) * wa[i] + (fabsl(br) + fabsl(bi)) * p->c0abs[i];
    struct oracle_bound b;
    oracle_bound_init(&b, g->dt, k, n, p->tsum);
    long double r = b.g * T + b.gl * (T + ca[i]) + b.floor;
    free(bt), free(ba), free(w), free(wa), free(c), free(ca);
    return r;
}

/* One case: the right product passes (fixed probe and a random complex one), the same
 * verdict through oracle_gemm_check_bt; one entry moved by 3 times its row's bound fails, and
 * by 8 (k + 4) u n k; a NaN fails. */
static void one_case(int dt, char ta, char tb, int64_t m, int64_t n, int64_t k, uint64_t seed) {
    struct gcase g;
    gcase_make(&g, dt, ta, tb, m, n, k, seed);
    gcase_ref(&g);
    struct oracle_gemm p, pr;
    ASSERT_EQ(oracle_gemm_begin(&p, dt, m, n, g.C0, m, 0), 0);
    ASSERT_EQ(oracle_gemm_begin(&pr, dt, m, n, g.C0, m, seed + 99), 0);
    double r = gcase_check(&g, &p), rr = gcase_check(&g, &pr);
    ASSERT_MSG(r <= 1 && rr <= 1, "dt %d %c%c %lldx%lldx%lld: a right product fails (%g, %g)", dt,
               ta, tb, (long long)m, (long long)n, (long long)k, r, rr);
    /* op(B) t outside, then the rest */
    long double *bt = malloc(sizeof(long double) * 2 * (size_t)k),
                *btabs = malloc(sizeof(long double) * (size_t)k);
    ASSERT(bt && btabs);
    oracle_matvec(dt, tb, tb == 'N' ? k : n, tb == 'N' ? n : k, g.B, g.ldb, p.t, p.tabs, bt, btabs);
    double r2 = oracle_gemm_check_bt(&p, ta, k, g.alpha, g.A, g.lda, bt, btabs, g.beta, g.C, m,
                                     NULL);
    ASSERT_MSG(r2 == r, "oracle_gemm_check_bt %g != oracle_gemm_check %g", r2, r);
    /* one entry off by 3 times its row's bound (divided by its probe entry, >= 1): fails */
    const int64_t i = m / 2, j = n / 3;
    const size_t at = (size_t)i + (size_t)j * (size_t)m;
    long double cr, ci, B = row_bound(&g, &p, i);
    get(dt, g.C, at, &cr, &ci);
    put(dt, g.C, at, cr + 3 * B / p.t[2 * j], ci);
    double r3 = gcase_check(&g, &p);
    ASSERT_MSG(r3 > 1, "dt %d %c%c: an entry moved by 3 x its row's bound %Lg passes (%g)", dt, ta,
               tb, B, r3);
    /* one entry off by 8 times (k + 4) u n k */
    const long double u = oracle_unit(dt);
    put(dt, g.C, at, cr + 8 * (long double)(k + 4) * u * (long double)(n * k), ci);
    double r4 = gcase_check(&g, &p);
    ASSERT_MSG(r4 > 1, "dt %d %c%c: an entry moved by 8 (k + 4) u n k passes (%g)", dt, ta, tb, r4);
    /* a NaN fails */
    put(dt, g.C, at, NAN, 0);
    ASSERT(isnan(gcase_check(&g, &p)));
    oracle_gemm_end(&p), oracle_gemm_end(&pr);
    free(bt), free(btabs);
    gcase_free(&g);
}

/* Every precision, every transpose pair (C for complex only), sizes off any block size. */
TEST(right_passes_wrong_fails_every_precision_and_transpose) {
    const char ts[3] = {'N', 'T', 'C'};
    uint64_t seed = 11;
    for (int dt = 0; dt < 4; dt++)
        for (int a = 0; a < (ref_is_complex(dt) ? 3 : 2); a++)
            for (int b = 0; b < (ref_is_complex(dt) ? 3 : 2); b++)
                one_case(dt, ts[a], ts[b], 37, 29, 41, seed++);
}

/* Errors of the kinds a scheduler makes fail by far (over 100 times the bound): a block of C left as C0 (a lost task),
 * and (complex) op(A) taken as A^T instead of A^H (a lost conjugate). */
TEST(lost_block_and_lost_conjugate_fail) {
    for (int dt = 0; dt < 4; dt++) {
        struct gcase g;
        gcase_make(&g, dt, ref_is_complex(dt) ? 'C' : 'T', 'N', 37, 29, 41, 7 + (uint64_t)dt);
        gcase_ref(&g);
        struct oracle_gemm p;
        ASSERT_EQ(oracle_gemm_begin(&p, dt, g.m, g.n, g.C0, g.m, 0), 0);
        ASSERT(gcase_check(&g, &p) <= 1);
        void *keep = ref_malloc(ref_esize(dt) * (size_t)(g.m * g.n));
        memcpy(keep, g.C, ref_esize(dt) * (size_t)(g.m * g.n));
        for (int64_t j = 8; j < 16; j++) /* an 8 x 8 block as C0 */
            memcpy((char *)g.C + ((size_t)j * (size_t)g.m + 16) * ref_esize(dt),
                   (char *)g.C0 + ((size_t)j * (size_t)g.m + 16) * ref_esize(dt),
                   8 * ref_esize(dt));
        double lost = gcase_check(&g, &p);
        ASSERT_MSG(lost > 100, "dt %d: a block left as C0 gives only %g", dt, lost);
        if (ref_is_complex(dt)) {
            memcpy(g.C, g.C0, ref_esize(dt) * (size_t)(g.m * g.n));
            ref_gemm(dt, TESS_COL_MAJOR, TESS_TRANS, TESS_NO_TRANS, g.m, g.n, g.k, g.alpha, g.A,
                     g.lda, g.B, g.ldb, g.beta, g.C, g.m);
            double conj = gcase_check(&g, &p);
            ASSERT_MSG(conj > 100, "dt %d: a lost conjugate gives only %g", dt, conj);
        }
        free(keep);
        oracle_gemm_end(&p);
        gcase_free(&g);
    }
}

/* Sound at every k the tools and tests use: OpenBLAS's products, k from 1 to 131071 (the
 * tools' largest is 98304), fixed and random probes, beta = 0 over a NaN C0 and alpha = 0
 * over NaN operands (neither read). The worst ratio is printed. */
TEST(sound_up_to_large_k) {
    static const int64_t ks[] = {1, 2, 3, 100, 1001, 20011, 131071};
    for (int dt = 0; dt < 4; dt++) {
        double worst = 0;
        for (size_t q = 0; q < sizeof ks / sizeof ks[0]; q++) {
            const int64_t k = ks[q], m = k > 5000 ? 7 : 23, n = k > 5000 ? 5 : 19;
            struct gcase g;
            gcase_make(&g, dt, 'N', ref_is_complex(dt) ? 'C' : 'T', m, n, k, 100 + (uint64_t)q);
            gcase_ref(&g);
            for (uint64_t seed = 0; seed < 3; seed++) {
                struct oracle_gemm p;
                ASSERT_EQ(oracle_gemm_begin(&p, dt, m, n, g.C0, m, seed), 0);
                double r = gcase_check(&g, &p);
                ASSERT_MSG(r <= 1, "dt %d k %lld seed %llu: a right product fails (%g)", dt,
                           (long long)k, (unsigned long long)seed, r);
                if (r > worst) worst = r;
                oracle_gemm_end(&p);
            }
            /* beta = 0 over NaN, then alpha = 0 over NaN operands */
            ref_scalar(dt, g.beta, 0, 0);
            ref_fill_nan(dt, g.C0, (size_t)(m * n));
            gcase_ref(&g);
            struct oracle_gemm p;
            ASSERT_EQ(oracle_gemm_begin(&p, dt, m, n, g.C0, m, 0), 0);
            ASSERT(gcase_check(&g, &p) <= 1);
            oracle_gemm_end(&p);
            oracle_fill(dt, g.C0, m, n, m, 5);
            ref_scalar(dt, g.alpha, 0, 0), ref_scalar(dt, g.beta, 0.5, 0);
            ref_fill_nan(dt, g.A, (size_t)(g.lda * (g.ta == 'N' ? k : m)));
            ref_fill_nan(dt, g.B, (size_t)(g.ldb * (g.tb == 'N' ? n : k)));
            gcase_ref(&g);
            ASSERT_EQ(oracle_gemm_begin(&p, dt, m, n, g.C0, m, 0), 0);
            ASSERT(gcase_check(&g, &p) <= 1);
            oracle_gemm_end(&p);
            gcase_free(&g);
        }
        fprintf(stderr, "  %s: worst error/bound of a right product %.2e\n", ref_dtype_name(dt),
                worst);
    }
}

/* Sound on tessera's own products: 7 x 7 tiles on two emulated devices, so every entry is
 * summed over up to 143 k blocks, in every precision. */
TEST(sound_on_tessera_tiles) {
    setenv("TESSERA_DEVICES", "none", 1), setenv("TESSERA_EMULATE", "2", 1);
    setenv("TESSERA_TILE", "7", 1), setenv("TESSERA_CPU_WORKER", "0", 1);
    setenv("TESSERA_EMULATE_MEM", "16M", 1);
    ASSERT_OK(tess_init());
    static const int64_t ks[] = {1, 13, 1001};
    for (int dt = 0; dt < 4; dt++)
        for (size_t q = 0; q < sizeof ks / sizeof ks[0]; q++) {
            struct gcase g;
            char ta = ref_is_complex(dt) ? 'C' : 'T';
            gcase_make(&g, dt, ta, 'N', 23, 17, ks[q], 300 + (uint64_t)q);
            memcpy(g.C, g.C0, ref_esize(dt) * (size_t)(g.m * g.n));
            ASSERT_OK(tess_gemm(dt, TESS_COL_MAJOR, ttr(ta), TESS_NO_TRANS, g.m, g.n, g.k, g.alpha,
                                g.A, g.lda, g.B, g.ldb, g.beta, g.C, g.m));
            for (uint64_t seed = 0; seed < 2; seed++) {
                struct oracle_gemm p;
                ASSERT_EQ(oracle_gemm_begin(&p, dt, g.m, g.n, g.C0, g.m, seed), 0);
                double r = gcase_check(&g, &p);
                ASSERT_MSG(r <= 1, "dt %d k %lld: tessera's product fails (%g)", dt,
                           (long long)ks[q], r);
                oracle_gemm_end(&p);
            }
            gcase_free(&g);
        }
    tess_finalize();
}

/* The real loop of the product ('N' and 'T') against the plain sums in the same order. */
TEST(real_matvec_matches_plain_sums) {
    for (int dt = TESS_S; dt <= TESS_D; dt++) {
        const int64_t rows = 53, cols = 31, ld = 57;
        void *X = malloc(ref_esize(dt) * (size_t)ld * (size_t)cols);
        ASSERT(X);
        oracle_fill(dt, X, ld, cols, ld, 99 + (uint64_t)dt);
        long double v[2 * 53], va[53], y[2 * 53], ya[53];
        for (int t = 0; t < 2; t++) {
            const char tr = t ? 'T' : 'N';
            const int64_t in = tr == 'N' ? cols : rows, out = tr == 'N' ? rows : cols;
            for (int64_t j = 0; j < in; j++)
                v[2 * j] = 1 + 0.01L * (long double)j, v[2 * j + 1] = 0, va[j] = v[2 * j];
            oracle_matvec(dt, tr, rows, cols, X, ld, v, va, y, ya);
            for (int64_t o = 0; o < out; o++) {
                long double s = 0, sa = 0, re, im;
                for (int64_t l = 0; l < in; l++) {
                    size_t at = tr == 'N' ? (size_t)o + (size_t)l * (size_t)ld
                                          : (size_t)l + (size_t)o * (size_t)ld;
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

/* ---- every level-3 routine -------------------------------------------------------------------- */

static enum CBLAS_SIDE cs(char c) { return c == 'L' ? CblasLeft : CblasRight; }
static enum CBLAS_UPLO cu(char c) { return c == 'U' ? CblasUpper : CblasLower; }
static enum CBLAS_TRANSPOSE ct(char c) {
    return c == 'N' ? CblasNoTrans : c == 'T' ? CblasTrans : CblasConjTrans;
}
static enum CBLAS_DIAG cd(char c) { return c == 'U' ? CblasUnit : CblasNonUnit; }

/* The routine of p by OpenBLAS into C (ldc = m): C holds C0, or B0 for TRMM/TRSM. */
static void ref_l3(const struct prob *p, void *C) {
    const int m = (int)p->m, n = (int)p->n, k = (int)p->k, lda = (int)p->lda, ldb = (int)p->ldb;
    const enum CBLAS_ORDER o = CblasColMajor;
    const enum CBLAS_SIDE sd = cs(p->side);
    const enum CBLAS_UPLO ul = cu(p->uplo);
    const enum CBLAS_TRANSPOSE tr = ct(p->trans);
    const enum CBLAS_DIAG dg = cd(p->diag);
    const void *A = p->A, *B = p->B, *al = p->alpha, *be = p->beta;
    float fa, fb;
    double da, db;
    memcpy(&fa, al, 4), memcpy(&fb, be, 4), memcpy(&da, al, 8), memcpy(&db, be, 8);
#define REAL_(X, a, b)                                                                       \
    switch (p->r) {                                                                          \
    case R_GEMM:                                                                             \
        cblas_##X##gemm(o, CblasNoTrans, CblasNoTrans, m, n, k, a, A, lda, B, ldb, b, C, m); \
        break;                                                                               \
    case R_SYMM: cblas_##X##symm(o, sd, ul, m, n, a, A, lda, B, ldb, b, C, m); break;        \
    case R_SYRK: cblas_##X##syrk(o, ul, tr, n, k, a, A, lda, b, C, m); break;                \
    case R_SYR2K: cblas_##X##syr2k(o, ul, tr, n, k, a, A, lda, B, ldb, b, C, m); break;      \
    case R_TRMM: cblas_##X##trmm(o, sd, ul, tr, dg, m, n, a, A, lda, C, m); break;           \
    case R_TRSM: cblas_##X##trsm(o, sd, ul, tr, dg, m, n, a, A, lda, C, m); break;           \
    default: break;                                                                          \
    }
#define CPLX_(X, ra, rb)                                                                       \
    switch (p->r) {                                                                            \
    case R_GEMM:                                                                               \
        cblas_##X##gemm(o, CblasNoTrans, CblasNoTrans, m, n, k, al, A, lda, B, ldb, be, C, m); \
        break;                                                                                 \
    case R_SYMM: cblas_##X##symm(o, sd, ul, m, n, al, A, lda, B, ldb, be, C, m); break;        \
    case R_HEMM: cblas_##X##hemm(o, sd, ul, m, n, al, A, lda, B, ldb, be, C, m); break;        \
    case R_SYRK: cblas_##X##syrk(o, ul, tr, n, k, al, A, lda, be, C, m); break;                \
    case R_HERK: cblas_##X##herk(o, ul, tr, n, k, ra, A, lda, rb, C, m); break;                \
    case R_SYR2K: cblas_##X##syr2k(o, ul, tr, n, k, al, A, lda, B, ldb, be, C, m); break;      \
    case R_HER2K: cblas_##X##her2k(o, ul, tr, n, k, al, A, lda, B, ldb, rb, C, m); break;      \
    case R_TRMM: cblas_##X##trmm(o, sd, ul, tr, dg, m, n, al, A, lda, C, m); break;            \
    case R_TRSM: cblas_##X##trsm(o, sd, ul, tr, dg, m, n, al, A, lda, C, m); break;            \
    default: break;                                                                            \
    }
    switch (p->dt) {
    case TESS_S: REAL_(s, fa, fb) break;
    case TESS_D: REAL_(d, da, db) break;
    case TESS_C: CPLX_(c, fa, fb) break;
    default: CPLX_(z, da, db) break;
    }
#undef REAL_
#undef CPLX_
}

/* TRSM's A as tessera-bench makes it: off-diagonal / (2 n), diagonal 1 + |re| (+ i im / 2) */
static void diag_dominant(int dt, void *A, int64_t n) {
    for (int64_t j = 0; j < n; j++)
        for (int64_t i = 0; i < n; i++) {
            long double re, im;
            size_t at = (size_t)(i + j * n);
            get(dt, A, at, &re, &im);
            if (i == j)
                put(dt, A, at, 1 + fabsl(re), im / 2);
            else
                put(dt, A, at, re / (2 * (long double)n), im / (2 * (long double)n));
        }
}

/* One routine and option set: OpenBLAS's result passes; one entry of the written part moved
 * by 3 times its row's bound (over what the move does to the row) fails; SYRK-like: an entry
 * of the other triangle changed is flagged, and (HERK/HER2K) an imaginary diagonal. */
static void l3_case(enum routine r, int dt, char side, char uplo, char trans, char diag,
                    uint64_t seed) {
    const int64_t m = routine_rank(r) ? 29 : 37, n = 29, k = 41;
    const size_t es = ref_esize(dt);
    const int64_t ka = r == R_SYMM || r == R_HEMM || r == R_TRMM || r == R_TRSM
                           ? (side == 'L' ? m : n)
                           : 0;
    /* A: ka x ka (square routines) or the stored op(A) of SYRK-like (n x k or k x n); B: m x n
     * (SYMM, TRMM/TRSM, GEMM: k x n) or like A (SYR2K-like) */
    int64_t ar = ka, ac = ka, br = m, bc = n;
    if (r == R_GEMM) ar = m, ac = k, br = k, bc = n;
    if (routine_rank(r)) {
        int nt = trans == 'N';
        ar = nt ? n : k, ac = nt ? k : n, br = ar, bc = ac;
    }
    void *A = ref_malloc(es * (size_t)(ar * ac)), *B = ref_malloc(es * (size_t)(br * bc));
    void *C0 = ref_malloc(es * (size_t)(m * n)), *C = ref_malloc(es * (size_t)(m * n));
    oracle_fill(dt, A, ar, ac, ar, seed), oracle_fill(dt, B, br, bc, br, seed + 1);
    oracle_fill(dt, C0, m, n, m, seed + 2);
    if (r == R_TRSM) diag_dominant(dt, A, ka);
    struct prob p;
    prob_init(&p, r, dt, side, uplo, trans, diag, m, n, k, A, ar, B, br);
    p.threads = 2;
    int tr = r == R_TRMM || r == R_TRSM;
    ASSERT_EQ(prob_begin(&p, tr ? NULL : C0, m), 0);
    memcpy(C, tr ? B : C0, es * (size_t)(m * n));
    ref_l3(&p, C);
    struct check_flags f;
    char opts[64];
    prob_opts(&p, opts, sizeof opts);
    double w = prob_check(&p, C, m, &f);
    ASSERT_MSG(w <= 1 && !f.other_changed && !f.diag_imag,
               "%c%s %s: OpenBLAS's result fails (%g, other %d, diag %lld)", "sdcz"[dt],
               routine_name[r], opts, w, f.other_changed, (long long)f.diag_imag);
    /* the row's bound after that check, and what moving R(i, j) by 1 does to the row */
    const int64_t i = m / 2, j = routine_rank(r) ? (uplo == 'L' ? i / 2 : i + 3) : n / 3;
    long double B_i = p.bound.g * (p.eabs[i] + (r == R_TRSM ? p.yabs[i] : 0)) +
                      p.bound.gl * (p.eabs[i] + 2 * p.yabs[i]) + p.bound.floor;
    long double gain = p.t[2 * j];
    if (r == R_TRSM && side == 'R') gain = fabsl(p.w[2 * j]) + fabsl(p.w[2 * j + 1]);
    if (r == R_TRSM && side == 'L' && diag == 'N') {
        long double dr, di;
        get(dt, A, (size_t)(i + i * ka), &dr, &di);
        gain *= sqrtl(dr * dr + di * di);
    }
    const size_t at = (size_t)(i + j * m);
    long double cr, ci;
    get(dt, C, at, &cr, &ci);
    put(dt, C, at, cr + 3 * B_i / gain, ci);
    w = prob_check(&p, C, m, &f);
    ASSERT_MSG(w > 1, "%c%s %s: an entry moved by 3 x its row's bound passes (%g)", "sdcz"[dt],
               routine_name[r], opts, w);
    put(dt, C, at, cr, ci);
    if (routine_rank(r)) { /* the other triangle, then the diagonal */
        const int64_t oi = uplo == 'L' ? 2 : 20, oj = uplo == 'L' ? 20 : 2;
        get(dt, C, (size_t)(oi + oj * m), &cr, &ci);
        put(dt, C, (size_t)(oi + oj * m), cr + 1, ci);
        prob_check(&p, C, m, &f);
        ASSERT_MSG(f.other_changed, "%c%s %s: the other triangle changed unnoticed", "sdcz"[dt],
                   routine_name[r], opts);
        put(dt, C, (size_t)(oi + oj * m), cr, ci);
        if (r == R_HERK || r == R_HER2K) {
            get(dt, C, (size_t)(5 + 5 * m), &cr, &ci);
            put(dt, C, (size_t)(5 + 5 * m), cr, 0.5);
            prob_check(&p, C, m, &f);
            ASSERT_MSG(f.diag_imag == 1, "%c%s %s: an imaginary diagonal unnoticed", "sdcz"[dt],
                       routine_name[r], opts);
        }
    }
    prob_end(&p);
    free(A), free(B), free(C0), free(C);
}

/* Every routine, precision (the Hermitian ones complex only) and option set. */
TEST(level3_right_passes_wrong_fails_every_option) {
    static const char LR[2] = {'L', 'R'}, UL[2] = {'U', 'L'}, NTC[3] = {'N', 'T', 'C'},
                      NU[2] = {'N', 'U'};
    uint64_t seed = 500;
    for (int dt = 0; dt < 4; dt++)
        for (int r = 0; r < R_N; r++) {
            if (routine_complex_only((enum routine)r) && !ref_is_complex(dt)) continue;
            int ns = r == R_SYMM || r == R_HEMM || r >= R_TRMM ? 2 : 1;
            int nu = r == R_GEMM ? 1 : 2, nt = r >= R_SYRK ? (r >= R_TRMM ? 3 : 2) : 1;
            int nd = r >= R_TRMM ? 2 : 1;
            for (int a = 0; a < ns; a++)
                for (int b = 0; b < nu; b++)
                    for (int t = 0; t < nt; t++)
                        for (int d = 0; d < nd; d++)
                            l3_case((enum routine)r, dt, LR[a], UL[b], NTC[t], NU[d], seed++);
        }
}

TEST_MAIN()
