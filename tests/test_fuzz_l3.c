/* tests/test_fuzz_l3.c: random calls of EVERY level-3 routine (gemm, symm, hemm, syrk, herk,
 * syr2k, her2k, trmm, trsm) in s, d, c and z against OpenBLAS, from several host threads at
 * once (issue 8, "Load"); what a call draws is said above fz_random_case, how it is
 * verified above fz_verify. Setups: the table `configs` below (`test_fuzz_l3 CONFIG`,
 * CTest's test_fuzz_l3:CONFIG): knobs, call count, what each must show besides right
 * results. Environment: TESS_FUZZ_CALLS (default: the setup's count; 400 without one),
 * TESS_FUZZ_THREADS (default 8), TESS_FUZZ_SEED (default: from the clock; printed with the
 * tile, for a replay), TESS_FUZZ_ONLY=t:i (replay call i of thread t alone),
 * TESS_FUZZ_CORRUPT=N (fz_verify), TESS_TEST_KNOWN_BUGS=1 (also draw the cases of library
 * bugs found here and not fixed yet: none is left in this file; test_exhaust.c uses
 * fz_known_bugs for B7). TESSERA_TILE, when unset, is drawn in 8..24 from the seed before
 * the runtime starts. The documented full run is TESS_FUZZ_CALLS=10000. test_args.c and
 * test_exhaust.c include this file with TESS_FUZZ_L3_NO_TESTS defined for its case
 * machinery (setup, verification; the routine dispatch is tests/l3_dispatch.c).
 */
#include <cblas.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "l3_dispatch.h"
#include "oracle.h"
#include "ref.h"
#include "tessera.h"

uint64_t tess__bal_deferred(void); /* node/balance.c: tasks held back for a faster peer */

#define FZ_FN static __attribute__((unused))
#define FZ_GUARD 16 /* elements after every matrix that nobody may write */

/* cblas_strsm as netlib computes it. OpenBLAS 0.3.21's single-precision kernels for side R
 * (its column-major view) on Zen and Haswell solve the rows left over below a multiple of 4
 * four columns at a time against the packed triangle, zeros included: a NaN or Inf in B
 * spreads (0 x NaN) into up to three columns that netlib keeps finite, in a pattern that
 * depends on the call's rows (a whole call and tessera's tiles differ). Its dtrsm is exact,
 * so the reference solves on double copies of A and B and rounds X back to float. */
FZ_FN void fz_strsm_netlib(enum CBLAS_ORDER L, enum CBLAS_SIDE sd, enum CBLAS_UPLO ul,
                           enum CBLAS_TRANSPOSE ta, enum CBLAS_DIAG dg, blasint m, blasint n,
                           float alpha, const float *A, blasint lda, float *B, blasint ldb) {
    if (m <= 0 || n <= 0) return;
    tess_layout_t lay = (tess_layout_t)L;
    blasint ka = sd == CblasLeft ? m : n;
    size_t na = ref_index(lay, ka - 1, ka - 1, lda) + 1; /* the spans read */
    size_t nb = ref_index(lay, m - 1, n - 1, ldb) + 1;
    double *Ad = ref_malloc(na * sizeof *Ad), *Bd = ref_malloc(nb * sizeof *Bd);
    for (size_t i = 0; i < na; i++) Ad[i] = A[i];
    for (size_t i = 0; i < nb; i++) Bd[i] = B[i];
    cblas_dtrsm(L, sd, ul, ta, dg, m, n, alpha, Ad, lda, Bd, ldb);
    for (blasint c = 0; c < n; c++)
        for (blasint r = 0; r < m; r++) {
            size_t i = ref_index(lay, r, c, ldb);
            B[i] = (float)Bd[i];
        }
    free(Ad);
    free(Bd);
}

/* The same call on OpenBLAS's cblas (valid arguments only; CBLAS enum values equal
 * tessera's; single-precision TRSM as netlib computes it: fz_strsm_netlib). Real
 * precisions read TESS_CONJ_TRANS as TESS_TRANS. */
FZ_FN void fz_cblas(const struct l3_args *a0) {
    /* netlib's semantics where OpenBLAS builds differ (0.3.21's small-matrix kernels on
     * AVX-512 multiply even when alpha = 0 or k = 0, so a NaN in A or an infinite alpha
     * would reach C): alpha = 0, or k = 0 in GEMM and the SYRK family, reads neither A nor
     * B; the call becomes one that reads only C (TRMM/TRSM: C = 0). */
    static const unsigned char zero[16];
    struct l3_args an = *a0;
    const struct l3_args *a = &an;
    size_t es = ref_esize(a0->dt);
    int rk = l3_rk(a0->r), alpha0 = 0;
    if (a0->alpha) { /* HERK's alpha is real */
        int sgl = a0->dt == TESS_S || a0->dt == TESS_C;
        int cplx = ref_is_complex(a0->dt) && a0->r != L3_HERK;
        double re = sgl ? ((const float *)a0->alpha)[0] : ((const double *)a0->alpha)[0];
        double im = !cplx ? 0.0
                    : sgl ? ((const float *)a0->alpha)[1]
                          : ((const double *)a0->alpha)[1];
        alpha0 = re == 0.0 && im == 0.0;
    }
    if (a0->r == L3_TRMM || a0->r == L3_TRSM) {
        if (alpha0) {
            for (int64_t r = 0; r < a0->m; r++)
                for (int64_t col = 0; col < a0->n; col++)
                    memset((char *)a0->C +
                               ref_index((tess_layout_t)a0->layout, r, col, a0->ldc) * es,
                           0, es);
            return;
        }
    } else if (alpha0 || ((a0->r == L3_GEMM || rk) && a0->k == 0)) {
        an.alpha = zero, an.k = 0;
        if (a0->r == L3_SYMM || a0->r == L3_HEMM) { /* C m x n: a GEMM with k = 0 */
            an.r = L3_GEMM, an.ta = an.tb = TESS_NO_TRANS;
            an.A = an.B = a0->C, an.lda = an.ldb = a0->ldc;
        }
    }
    if (a->r == L3_TRSM && a->dt == TESS_S) { /* as netlib computes it (fz_strsm_netlib) */
        fz_strsm_netlib((enum CBLAS_ORDER)a->layout, (enum CBLAS_SIDE)a->side,
                        (enum CBLAS_UPLO)a->uplo,
                        (enum CBLAS_TRANSPOSE)(a->ta == TESS_CONJ_TRANS ? TESS_TRANS : a->ta),
                        (enum CBLAS_DIAG)a->diag, (blasint)a->m, (blasint)a->n,
                        a->alpha ? *(const float *)a->alpha : 0.0f, a->A, (blasint)a->lda, a->C,
                        (blasint)a->ldc);
        return;
    }
    l3_cblas(a);
}

/* ---- elements -------------------------------------------------------------------------- */

/* Set only the imaginary part of complex element i. */
static void fz_set_im(tess_dtype_t dt, void *X, size_t i, long double im) {
    if (dt == TESS_C)
        ((float *)X)[2 * i + 1] = (float)im;
    else if (dt == TESS_Z)
        ((double *)X)[2 * i + 1] = (double)im;
}

static long double fz_abs1(long double re, long double im) { return fabsl(re) + fabsl(im); }

/* Class of element i of X: 0 finite, 1 infinite (no NaN part), 2 NaN in some part. Read
 * in the element's own precision, not through long double (valgrind, which runs x87 long
 * double arithmetic in double, does not keep an Inf an Inf there). */
static int fz_class_at(tess_dtype_t dt, const void *X, size_t i) {
    double re = 0, im = 0;
    switch (dt) {
    case TESS_S: re = ((const float *)X)[i]; break;
    case TESS_D: re = ((const double *)X)[i]; break;
    case TESS_C: re = ((const float *)X)[2 * i], im = ((const float *)X)[2 * i + 1]; break;
    case TESS_Z: re = ((const double *)X)[2 * i], im = ((const double *)X)[2 * i + 1]; break;
    default: break;
    }
    if (isnan(re) || isnan(im)) return 2;
    if (isinf(re) || isinf(im)) return 1;
    return 0;
}

static void *fz_dup(const void *X, size_t bytes) {
    void *Y = ref_malloc(bytes);
    memcpy(Y, X, bytes);
    return Y;
}

/* ---- one case ----------------------------------------------------------------------------- */

enum {
    FZ_NAN_C = 1u << 0,      /* the output (all of it, padding too) starts as NaN: needs beta = 0 */
    FZ_NAN_AB = 1u << 1,     /* A and B all NaN (TRMM/TRSM: the output too): needs alpha = 0 */
    FZ_POISON = 1u << 2,     /* NaN or +-Inf planted at a few read entries of the inputs */
    FZ_POISON_INF = 1u << 3, /* ... Inf allowed among them */
    FZ_TYPED = 1u << 4,      /* the typed entry point */
};

struct fz_case {
    enum l3_routine r;
    tess_dtype_t dt;
    tess_layout_t layout;
    tess_side_t side;
    tess_uplo_t uplo;
    tess_trans_t ta, tb; /* GEMM: transa, transb; SYRK family: trans; TRMM/TRSM: transa */
    tess_diag_t diag;
    int64_t m, n, k;          /* as in struct l3_args */
    int64_t pad[3];           /* leading dimension = minimum + pad, for A, B, output */
    double alpha[2], beta[2]; /* re, im (im ignored where the scalar is real) */
    unsigned flags;
    uint64_t seed;
};

struct fz_data {
    struct fz_case c;
    int64_t sh[3][2], ld[3]; /* stored rows x cols of A, B, output; 0 x 0: absent */
    size_t ne[3];            /* elements allocated, guard tail included */
    void *X[3];              /* what tessera sees */
    void *X0[3];             /* copies of tessera's inputs */
    void *R[3];              /* the reference's inputs */
    unsigned char alpha[16], beta[16], aalpha[16], abeta[16];
    bool inf; /* an Inf in a scalar or an input: NaN/Inf may trade places */
    int npoison;
};

/* Stored shapes (rows x cols as laid out in the caller's layout) of A, B and the output. */
FZ_FN void fz_shapes(const struct fz_case *c, int64_t sh[3][2]) {
    memset(sh, 0, sizeof(int64_t) * 6);
    if (c->r == L3_GEMM) {
        ref_stored_dims(c->ta, c->m, c->k, &sh[0][0], &sh[0][1]);
        ref_stored_dims(c->tb, c->k, c->n, &sh[1][0], &sh[1][1]);
        sh[2][0] = c->m, sh[2][1] = c->n;
        return;
    }
    if (l3_rk(c->r)) {
        bool nt = c->ta == TESS_NO_TRANS;
        sh[0][0] = nt ? c->n : c->k, sh[0][1] = nt ? c->k : c->n;
        if (l3_rank2(c->r)) sh[1][0] = sh[0][0], sh[1][1] = sh[0][1];
        sh[2][0] = sh[2][1] = c->n;
        return;
    }
    int64_t ka = c->side == TESS_LEFT ? c->m : c->n;
    sh[0][0] = sh[0][1] = ka;
    if (l3_sm(c->r)) sh[1][0] = c->m, sh[1][1] = c->n;
    sh[2][0] = c->m, sh[2][1] = c->n;
}

/* Output entry (r, col) is read/written by the routine (SYRK family: its triangle). */
FZ_FN bool fz_out_ref(const struct fz_case *c, int64_t r, int64_t col) {
    if (!l3_rk(c->r)) return true;
    return c->uplo == TESS_UPPER ? r <= col : r >= col;
}

/* Entry (r, col) of A is read (SYMM/HEMM/TRMM/TRSM: its triangle, not a unit diagonal). */
FZ_FN bool fz_a_ref(const struct fz_case *c, int64_t r, int64_t col) {
    if (!l3_sm(c->r) && !l3_tr(c->r)) return true;
    if (l3_tr(c->r) && r == col && c->diag == TESS_UNIT) return false;
    return c->uplo == TESS_UPPER ? r <= col : r >= col;
}

/* Inner dimension of the rounding bound: products summed per entry. */
FZ_FN int64_t fz_inner(const struct fz_case *c) {
    if (c->r == L3_GEMM) return c->k;
    if (l3_rk(c->r)) return l3_rank2(c->r) ? 2 * c->k : c->k;
    return c->side == TESS_LEFT ? c->m : c->n;
}

/* TESS_TEST_KNOWN_BUGS=1 also draws the cases of library bugs found by issue 8 and not
 * fixed yet (each marked "Known bug" where it is avoided); by default they are avoided so
 * that the suite stays green while they are open. */
FZ_FN int fz_known_bugs(void) { return ref_env_long("TESS_TEST_KNOWN_BUGS", 0) != 0; }

static bool fz_is_zero(const double v[2]) { return v[0] == 0 && v[1] == 0; }
static bool fz_is_one(const double v[2]) { return v[0] == 1 && v[1] == 0; }

/* The scalar as routine r takes it (HERK alpha, HERK/HER2K beta: real type). */
static void fz_scalar(enum l3_routine r, bool is_alpha, tess_dtype_t dt, void *out, double re,
                      double im) {
    bool real = is_alpha ? l3_real_alpha(r) : l3_real_beta(r);
    if (real)
        ref_scalar(dt == TESS_C ? TESS_S : dt == TESS_Z ? TESS_D : dt, out, re, 0);
    else
        ref_scalar(dt, out, re, ref_is_complex(dt) ? im : 0);
}

/* The effective scalar (real parts only where the routine takes a real one). */
static void fz_eff(const struct fz_case *c, bool is_alpha, double v[2]) {
    const double *s = is_alpha ? c->alpha : c->beta;
    bool real = is_alpha ? l3_real_alpha(c->r) : l3_real_beta(c->r);
    v[0] = s[0];
    v[1] = (real || !ref_is_complex(c->dt)) ? 0 : s[1];
    if (c->dt == TESS_S || c->dt == TESS_C) v[0] = (float)v[0], v[1] = (float)v[1];
}

/* Plant NaN or +-Inf at one read entry of matrix w (0 A, 1 B, 2 output). */
static void fz_plant(struct fz_data *d, int w, uint64_t *s) {
    const struct fz_case *c = &d->c;
    int64_t rows = d->sh[w][0], cols = d->sh[w][1];
    if (rows == 0 || cols == 0) return;
    int64_t r = ref_rand_int(s, 0, rows - 1), col = ref_rand_int(s, 0, cols - 1);
    if (w == 0 && !fz_a_ref(c, r, col)) {
        int64_t t = r;
        r = col, col = t;
        if (!fz_a_ref(c, r, col)) return; /* a unit diagonal: not read */
    }
    if (w == 2 && !fz_out_ref(c, r, col)) {
        int64_t t = r;
        r = col, col = t;
    }
    long double v = NAN;
    if ((c->flags & FZ_POISON_INF) && ref_rand_int(s, 0, 1)) {
        v = ref_rand_int(s, 0, 1) ? INFINITY : -INFINITY;
        d->inf = true;
    }
    size_t idx = ref_index(c->layout, r, col, d->ld[w]);
    long double re, im;
    ref_get(c->dt, d->X[w], idx, &re, &im);
    int part = ref_is_complex(c->dt) ? (int)ref_rand_int(s, 0, 2) : 0;
    /* HEMM's A diagonal and HERK/HER2K's C diagonal: only the real part is read */
    bool real_diag = r == col && ((w == 0 && c->r == L3_HEMM) ||
                                  (w == 2 && (c->r == L3_HERK || c->r == L3_HER2K)));
    if (real_diag) part = 0;
    ref_set(c->dt, d->X[w], idx, part != 1 ? v : re, part != 0 ? v : im);
    d->npoison++;
}

/* Allocate and fill a case. */
FZ_FN void fz_setup(const struct fz_case *c, struct fz_data *d) {
    memset(d, 0, sizeof *d);
    d->c = *c;
    tess_dtype_t dt = c->dt;
    size_t es = ref_esize(dt);
    uint64_t s = c->seed * 0x2545f4914f6cdd1dull + 977;
    fz_shapes(c, d->sh);
    for (int i = 0; i < 3; i++) {
        int64_t rows = d->sh[i][0], cols = d->sh[i][1];
        d->ld[i] = ref_min_ld(c->layout, rows, cols) + c->pad[i];
        d->ne[i] = ref_nelem(c->layout, rows, cols, d->ld[i]) + FZ_GUARD;
        d->X[i] = ref_malloc(d->ne[i] * es);
        ref_fill_random(dt, d->X[i], d->ne[i], &s);
    }
    /* A of SYMM/HEMM/TRMM/TRSM: NaN where it is not read (the other triangle, a unit
     * diagonal, HEMM's diagonal imaginary parts); TRSM's diagonal made dominant */
    if (l3_sm(c->r) || l3_tr(c->r)) {
        int64_t ka = d->sh[0][0];
        for (int64_t col = 0; col < ka; col++)
            for (int64_t r = 0; r < ka; r++) {
                size_t idx = ref_index(c->layout, r, col, d->ld[0]);
                if (!fz_a_ref(c, r, col)) {
                    ref_set(dt, d->X[0], idx, NAN, NAN);
                } else if (r == col && c->r == L3_HEMM) {
                    fz_set_im(dt, d->X[0], idx, NAN);
                } else if (r == col && c->r == L3_TRSM) {
                    long double re, im;
                    ref_get(dt, d->X[0], idx, &re, &im);
                    ref_set(dt, d->X[0], idx, re + (re < 0 ? -1 : 1) * (ka + 1), im);
                }
            }
    }
    /* HERK/HER2K: the imaginary parts of C's diagonal are not read. (Bug B5, fixed in
     * src/level3.c: with alpha = 0 or k = 0 tessera multiplied the whole complex diagonal
     * entry by beta, so a NaN/Inf imaginary part turned the real part NaN.) */
    double al0[2], be0[2];
    fz_eff(c, true, al0);
    fz_eff(c, false, be0);
    bool b5 = (fz_is_zero(al0) || c->k == 0) && !fz_is_zero(be0) && !fz_is_one(be0);
    (void)b5;
    if (c->r == L3_HERK || c->r == L3_HER2K)
        for (int64_t j = 0; j < c->n; j++)
            fz_set_im(dt, d->X[2], ref_index(c->layout, j, j, d->ld[2]), NAN);
    if (c->flags & FZ_POISON) {
        double al[2], be[2];
        fz_eff(c, true, al);
        fz_eff(c, false, be);
        int nw = 0, which[3];
        if (!fz_is_zero(al)) {
            which[nw++] = 0;
            if (l3_has_b(c->r)) which[nw++] = 1;
        }
        /* TRMM's B is not poisoned: a NaN/Inf there spreads through the structural zeros
         * of the triangle in OpenBLAS's kernels (0 x NaN), with a pattern that depends on
         * their blocking (a whole call and a tile differ), where netlib's TRMM, which
         * loops over the triangle only, keeps the other entries finite. */
        if (c->r == L3_TRSM ? !fz_is_zero(al)
                            : c->r != L3_TRMM && !fz_is_zero(be) && !(c->flags & FZ_NAN_C))
            which[nw++] = 2;
        int np = (int)ref_rand_int(&s, 1, 3);
        for (int p = 0; p < np && nw > 0; p++) fz_plant(d, which[ref_rand_int(&s, 0, nw - 1)], &s);
    }
    for (int i = 0; i < 3; i++) d->R[i] = fz_dup(d->X[i], d->ne[i] * es);
    if (c->flags & FZ_NAN_AB) {
        ref_fill_nan(dt, d->X[0], d->ne[0]);
        ref_fill_nan(dt, d->X[1], d->ne[1]);
        if (l3_tr(c->r)) ref_fill_nan(dt, d->X[2], d->ne[2]);
    }
    if (c->flags & FZ_NAN_C) {
        ref_fill_nan(dt, d->X[2], d->ne[2]);
        memcpy(d->R[2], d->X[2], d->ne[2] * es);
        /* the reference gets zeros where it may read (beta = 0: the values do not matter) */
        for (int64_t col = 0; col < d->sh[2][1]; col++)
            for (int64_t r = 0; r < d->sh[2][0]; r++)
                if (fz_out_ref(c, r, col))
                    ref_set(dt, d->R[2], ref_index(c->layout, r, col, d->ld[2]), 0, 0);
    }
    for (int i = 0; i < 3; i++) d->X0[i] = fz_dup(d->X[i], d->ne[i] * es);
    fz_scalar(c->r, true, dt, d->alpha, c->alpha[0], c->alpha[1]);
    fz_scalar(c->r, false, dt, d->beta, c->beta[0], c->beta[1]);
    double al[2], be[2];
    fz_eff(c, true, al);
    fz_eff(c, false, be);
    if (isinf(al[0]) || isinf(al[1]) || (!l3_tr(c->r) && (isinf(be[0]) || isinf(be[1]))))
        d->inf = true;
    fz_scalar(c->r, true, dt, d->aalpha, fabs(al[0]) + fabs(al[1]), 0);
    fz_scalar(c->r, false, dt, d->abeta, fabs(be[0]) + fabs(be[1]), 0);
}

FZ_FN void fz_release(struct fz_data *d) {
    for (int i = 0; i < 3; i++) {
        free(d->X[i]);
        free(d->X0[i]);
        free(d->R[i]);
    }
    memset(d, 0, sizeof *d);
}

/* The arguments of the case on matrices M (A, B, output) with scalars al, be. */
FZ_FN struct l3_args fz_args_of(const struct fz_data *d, void *const M[3], const void *al,
                                const void *be) {
    const struct fz_case *c = &d->c;
    struct l3_args a;
    memset(&a, 0, sizeof a);
    a.r = c->r, a.dt = c->dt, a.typed = !!(c->flags & FZ_TYPED);
    a.layout = c->layout, a.side = c->side, a.uplo = c->uplo, a.ta = c->ta, a.tb = c->tb;
    a.diag = c->diag;
    a.m = c->m, a.n = c->n, a.k = c->k;
    a.alpha = al, a.beta = be;
    a.A = M[0], a.lda = d->ld[0];
    a.B = l3_has_b(c->r) ? M[1] : NULL, a.ldb = d->ld[1];
    a.C = M[2], a.ldc = d->ld[2];
    return a;
}

/* Call tessera on the case's own matrices. */
FZ_FN int fz_run_tessera(struct fz_data *d) {
    struct l3_args a = fz_args_of(d, d->X, d->alpha, d->beta);
    return l3_call(&a);
}

/* Copy of matrix w with each entry replaced by |re| + |im| (imaginary part 0); entries
 * whose imaginary part is not read (HEMM's A diagonal, HERK/HER2K's C diagonal) count
 * their real part only. NaN and Inf stay non-finite. */
static void *fz_abs_copy(const struct fz_data *d, const void *X, int w) {
    const struct fz_case *c = &d->c;
    tess_dtype_t dt = c->dt;
    void *Y = ref_malloc(d->ne[w] * ref_esize(dt));
    for (size_t i = 0; i < d->ne[w]; i++) {
        long double re, im;
        ref_get(dt, X, i, &re, &im);
        int cl = fz_class_at(dt, X, i);
        ref_set(dt, Y, i, cl == 2 ? NAN : cl == 1 ? INFINITY : fz_abs1(re, im), 0);
    }
    bool a_diag = w == 0 && c->r == L3_HEMM;
    bool c_diag = w == 2 && (c->r == L3_HERK || c->r == L3_HER2K);
    if (a_diag || c_diag)
        for (int64_t j = 0; j < d->sh[w][0]; j++) {
            size_t idx = ref_index(c->layout, j, j, d->ld[w]);
            long double re, im;
            ref_get(dt, X, idx, &re, &im);
            ref_set(dt, Y, idx, fabsl(re), 0);
        }
    return Y;
}

#define FZ_MSG(...) snprintf(msg, len, __VA_ARGS__)

/* One line describing the case. */
FZ_FN void fz_describe(const struct fz_case *c, char *buf, size_t len) {
    static const char *ul[2] = {"U", "L"}, *sd[2] = {"L", "R"}, *dg[2] = {"N", "U"};
    snprintf(buf, len,
             "tess_%s%s%s%s %s side=%s uplo=%s ta=%s tb=%s diag=%s m=%lld n=%lld k=%lld "
             "pad=%lld/%lld/%lld alpha=%g%+gi beta=%g%+gi%s%s%s%s seed=%llu",
             c->flags & FZ_TYPED ? ref_dtype_name(c->dt) : "", l3_rname[c->r],
             c->flags & FZ_TYPED ? "" : "(", c->flags & FZ_TYPED ? "" : ref_dtype_name(c->dt),
             ref_layout_name(c->layout), sd[c->side == TESS_RIGHT], ul[c->uplo == TESS_LOWER],
             ref_trans_name(c->ta), ref_trans_name(c->tb), dg[c->diag == TESS_UNIT],
             (long long)c->m, (long long)c->n, (long long)c->k, (long long)c->pad[0],
             (long long)c->pad[1], (long long)c->pad[2], c->alpha[0], c->alpha[1], c->beta[0],
             c->beta[1], c->flags & FZ_NAN_C ? " nanC" : "", c->flags & FZ_NAN_AB ? " nanAB" : "",
             c->flags & FZ_POISON ? " poison" : "", c->flags & FZ_POISON_INF ? "+inf" : "",
             (unsigned long long)c->seed);
}

/* Verify tessera's output d->X[2] after a TESS_OK call; 0, or 1 with msg. In this order:
 *   - status TESS_OK; A and B byte for byte unchanged; the output unchanged outside its
 *     m x n part (padding, a guard tail) and, for the SYRK family, outside its triangle;
 *   - NaN/Inf: the same entries as OpenBLAS's result are non-finite. When no Inf is
 *     involved (finite or NaN inputs and scalars) the classes match exactly: NaN where the
 *     reference has NaN, finite where it is finite. With an Inf in a scalar or an input,
 *     "finite" must match but NaN and Inf may trade places (Inf - Inf depends on the
 *     summation order and on where alpha is applied: per tile here, per call there).
 *     The SYRK family under beta = NaN expects netlib's NaN everywhere (OpenBLAS 0.3.21's
 *     s, c and z variants return finite values there); single-precision TRSM's reference is
 *     solved in double precision (fz_strsm_netlib: OpenBLAS's strsm spreads a NaN or Inf
 *     of B through side R's packed triangle where netlib does not);
 *   - every entry finite in both is within twice the oracle's bound (src/tools/oracle.h)
 *       |C - Cref| <= 2 gamma_N (|alpha| |op(A)| |op(B)| + |beta| |C0|) + oracle_floor
 *     (N = f (K + 4), K the inner dimension, twice k for the rank-2k updates; f = 1 real,
 *     2 complex; |x| = |re| + |im|), evaluated by the same OpenBLAS routine on absolute values;
 *     TRSM by its residual |op(A) X - alpha B| against |op(A)| |X| + |alpha| |B|
 *     (A diagonally dominant unless its diagonal is unit);
 *   - HERK/HER2K: the diagonal of C comes out real (imaginary parts exactly 0) unless the
 *     call is netlib's quick return (alpha = 0 or k = 0 with beta = 1: nothing written).
 * A wrong result fails: fuzz_l3_verifier_self_check corrupts real results (one entry moved
 * by 4 x its bound, a NaN, a padding element, the other triangle) and requires each to be
 * caught, and TESS_FUZZ_CORRUPT=N moves one entry of call N (from 0) of thread 0 (when
 * its output is not empty): the run must then fail. Library bugs planted in a scratch copy
 * (beta at every k step of SYRK's off-diagonal tiles, TRMM's chains reversed, HEMM's
 * mirrored tiles not conjugated) were each caught within the first 125 calls of a run
 * (docs/reliability.md). */
FZ_FN int fz_verify(const struct fz_data *d, char *msg, size_t len) {
    const struct fz_case *c = &d->c;
    tess_dtype_t dt = c->dt;
    size_t es = ref_esize(dt);
    int64_t rows = d->sh[2][0], cols = d->sh[2][1], ldc = d->ld[2];
    const void *C = d->X[2];
    for (int i = 0; i < 2; i++)
        if (memcmp(d->X[i], d->X0[i], d->ne[i] * es) != 0) {
            FZ_MSG("%s was modified", i ? "B" : "A");
            return 1;
        }
    size_t bad = ref_untouched(dt, c->layout, C, d->X0[2], rows, cols, ldc, d->ne[2]);
    if (bad) {
        FZ_MSG("output element %zu (outside the %lld x %lld part, ld %lld) was written", bad - 1,
               (long long)rows, (long long)cols, (long long)ldc);
        return 1;
    }
    for (int64_t col = 0; col < cols; col++)
        for (int64_t r = 0; r < rows; r++) {
            size_t idx = ref_index(c->layout, r, col, ldc);
            if (!fz_out_ref(c, r, col) &&
                memcmp((const char *)C + idx * es, (const char *)d->X0[2] + idx * es, es)) {
                FZ_MSG("C(%lld,%lld) outside the triangle was written", (long long)r,
                       (long long)col);
                return 1;
            }
        }
    if (rows == 0 || cols == 0) return 0;

    /* The reference result (TRSM: X), then the bound's ingredients. */
    void *Yref = fz_dup(d->R[2], d->ne[2] * es);
    {
        void *M[3] = {d->R[0], d->R[1], Yref};
        struct l3_args a = fz_args_of(d, M, d->alpha, d->beta);
        fz_cblas(&a);
    }
    void *Y, *W, *absM[3];
    for (int i = 0; i < 3; i++) absM[i] = fz_abs_copy(d, d->R[i], i);
    unsigned char one[16];
    ref_scalar(dt, one, 1, 0);
    if (c->r == L3_TRSM) {
        /* residual: Y = op(A) X, W = |op(A)| |X| (+ |alpha| |B| below) */
        Y = fz_dup(C, d->ne[2] * es);
        void *M[3] = {d->R[0], NULL, Y};
        struct l3_args a = fz_args_of(d, M, one, NULL);
        a.r = L3_TRMM;
        fz_cblas(&a);
        W = fz_abs_copy(d, C, 2);
        void *N[3] = {absM[0], NULL, W};
        a = fz_args_of(d, N, one, NULL);
        a.r = L3_TRMM;
        fz_cblas(&a);
    } else {
        Y = NULL;
        W = fz_dup(absM[2], d->ne[2] * es);
        void *N[3] = {absM[0], absM[1], W};
        struct l3_args a = fz_args_of(d, N, d->aalpha, d->abeta);
        fz_cblas(&a);
    }
    double al[2], be[2];
    fz_eff(c, true, al);
    fz_eff(c, false, be);
    long double aabs = fabsl(al[0]) + fabsl(al[1]);
    long double fac = 2 * oracle_gamma(dt, fz_inner(c)), tiny = oracle_floor(dt, fz_inner(c));
    bool herm_c = c->r == L3_HERK || c->r == L3_HER2K;
    bool quick = herm_c && (fz_is_zero(al) || c->k == 0) && fz_is_one(be);
    /* The SYRK family under beta = NaN: netlib's C = NaN everywhere in the triangle, where
     * OpenBLAS 0.3.21's s/c/z variants (NaN-blind ?scal) leave finite values. */
    bool nan_beta_rk = l3_rk(c->r) && (isnan(be[0]) || isnan(be[1]));
    int rc = 0;
    for (int64_t col = 0; col < cols && !rc; col++)
        for (int64_t r = 0; r < rows && !rc; r++) {
            if (!fz_out_ref(c, r, col)) continue;
            size_t idx = ref_index(c->layout, r, col, ldc);
            long double xr, xi, yr, yi, wr, wi;
            ref_get(dt, C, idx, &xr, &xi);
            ref_get(dt, Yref, idx, &yr, &yi);
            int tc = fz_class_at(dt, C, idx), rcl = nan_beta_rk ? 2 : fz_class_at(dt, Yref, idx);
            bool same = d->inf ? (tc == 0) == (rcl == 0) : tc == rcl;
            if (!same) {
                static const char *cn[3] = {"finite", "Inf", "NaN"};
                FZ_MSG("C(%lld,%lld) = %Lg%+Lgi is %s, the reference %Lg%+Lgi is %s%s%s",
                       (long long)r, (long long)col, xr, xi, cn[tc], yr, yi, cn[rcl],
                       d->inf ? " (Inf involved: only finiteness must match)" : "",
                       nan_beta_rk ? " (beta = NaN: netlib's NaN expected, whatever OpenBLAS says)"
                                   : "");
                rc = 1;
                break;
            }
            if (tc != 0) continue;
            if (herm_c && r == col && !quick && xi != 0) {
                FZ_MSG("C(%lld,%lld) = %Lg%+Lgi: the diagonal of HERK/HER2K must be real",
                       (long long)r, (long long)col, xr, xi);
                rc = 1;
                break;
            }
            if (fz_class_at(dt, W, idx)) continue;
            ref_get(dt, W, idx, &wr, &wi);
            if (c->r == L3_TRSM) {
                /* op(A) X against alpha B0 where both are defined */
                long double br, bi;
                if (fz_class_at(dt, Y, idx) || fz_class_at(dt, d->R[2], idx)) continue;
                ref_get(dt, d->R[2], idx, &br, &bi);
                ref_get(dt, Y, idx, &xr, &xi);
                yr = (long double)al[0] * br - (long double)al[1] * bi;
                yi = (long double)al[0] * bi + (long double)al[1] * br;
                wr += aabs * fz_abs1(br, bi);
            }
            if (!isfinite(wr)) continue;
            long double diff = fz_abs1(xr - yr, xi - yi), bound = fac * fabsl(wr) + tiny;
            if (!(diff <= bound)) {
                FZ_MSG("%s(%lld,%lld) = %.10Lg%+.10Lgi, expected %.10Lg%+.10Lgi, |diff| %.3Lg > "
                       "bound %.3Lg",
                       c->r == L3_TRSM ? "(op(A) X)" : "C", (long long)r, (long long)col, xr, xi,
                       yr, yi, diff, bound);
                rc = 1;
            }
        }
    for (int i = 0; i < 3; i++) free(absM[i]);
    free(Yref);
    free(Y);
    free(W);
    return rc;
}

/* setup + call + verify + release: 0, or 1 with msg (the case described). */
FZ_FN int fz_run_case(const struct fz_case *c, char *msg, size_t len) {
    struct fz_data d;
    char what[512], why[512] = "";
    fz_describe(c, what, sizeof what);
    fz_setup(c, &d);
    int st = fz_run_tessera(&d);
    int rc = 0;
    if (st != TESS_OK) {
        FZ_MSG("%s: returned %d (%s): %s", what, st, tess_strerror(st), tess_last_error());
        rc = 1;
    } else if (fz_verify(&d, why, sizeof why)) {
        FZ_MSG("%s: %s", what, why);
        rc = 1;
    }
    fz_release(&d);
    return rc;
}

/* ---- random cases ------------------------------------------------------------------------ */

/* A dimension: 0..3, a tile edge +-1 (up to 3 tiles), or anything up to 3 tiles + 5. */
static int64_t fz_dim(uint64_t *s, int64_t tile) {
    int64_t u = ref_rand_int(s, 0, 19);
    if (u < 3) return ref_rand_int(s, 0, 3);
    if (u < 9) return tile * ref_rand_int(s, 1, 3) + ref_rand_int(s, -1, 1);
    return ref_rand_int(s, 1, 3 * tile + 5);
}

/* A scalar: 0, 1, -1, non-finite (NaN, +Inf, -Inf, in the real or the imaginary part)
 * or random; p0 and p1 are the chances (in 1/100) of 0 and of 1. */
static void fz_pick_scalar(uint64_t *s, double v[2], int p0, int p1) {
    int u = (int)ref_rand_int(s, 0, 99);
    v[0] = ref_rand_unit(s) * 2, v[1] = ref_rand_unit(s);
    if (ref_rand_int(s, 0, 2) == 0) v[1] = 0;
    if (u < p0) {
        v[0] = v[1] = 0;
    } else if (u < p0 + p1) {
        v[0] = 1, v[1] = 0;
    } else if (u < p0 + p1 + 5) {
        v[0] = -1, v[1] = 0;
    } else if (u < p0 + p1 + 10) {
        static const double nf[3] = {NAN, INFINITY, -INFINITY};
        double x = nf[ref_rand_int(s, 0, 2)];
        int part = (int)ref_rand_int(s, 0, 2);
        if (part != 1) v[0] = x;
        if (part != 0) v[1] = x;
    }
}

/* Draw a random case of any routine (tile: the shape unit): the routine, the precision,
 * the entry (generic tess_X or typed tess_?X), the layout, every option the routine has
 * (side, uplo, trans/transa, transb, diag), shapes with 0, 1, 2, 3, tile edges +-1 and
 * arbitrary sizes up to a few tiles, leading dimensions larger than needed (the padding
 * must stay byte for byte untouched), alpha and beta among 0, 1, -1, random, NaN, +Inf and
 * -Inf, and sometimes NaN or +-Inf planted in the inputs (A, B, and C when beta != 0; not
 * TRMM's B, see fz_setup). The unreferenced triangle of a symmetric/Hermitian/triangular
 * A, the diagonal of a unit-triangular A, the imaginary parts of HEMM's A diagonal and of
 * HERK/HER2K's C diagonal are NaN: never read. beta = 0 sometimes comes with a C full of
 * NaN (C must not be read), alpha = 0 with A and B full of NaN (TRMM/TRSM: B too). */
FZ_FN void fz_random_case(uint64_t *s, int64_t tile, struct fz_case *c) {
    static const tess_trans_t tr[3] = {TESS_NO_TRANS, TESS_TRANS, TESS_CONJ_TRANS};
    memset(c, 0, sizeof *c);
    c->r = (enum l3_routine)ref_rand_int(s, 0, L3_NR - 1);
    c->dt = (tess_dtype_t)ref_rand_int(s, l3_herm(c->r) ? 2 : 0, 3);
    c->layout = ref_rand_int(s, 0, 1) ? TESS_ROW_MAJOR : TESS_COL_MAJOR;
    c->side = ref_rand_int(s, 0, 1) ? TESS_RIGHT : TESS_LEFT;
    c->uplo = ref_rand_int(s, 0, 1) ? TESS_LOWER : TESS_UPPER;
    c->diag = ref_rand_int(s, 0, 1) ? TESS_UNIT : TESS_NON_UNIT;
    do c->ta = tr[ref_rand_int(s, 0, 2)];
    while (!l3_trans_ok(c->r, c->dt, c->ta));
    c->tb = c->r == L3_GEMM ? tr[ref_rand_int(s, 0, 2)] : TESS_NO_TRANS;
    c->m = fz_dim(s, tile), c->n = fz_dim(s, tile), c->k = fz_dim(s, tile);
    for (int i = 0; i < 3; i++) {
        int64_t u = ref_rand_int(s, 0, 9);
        c->pad[i] = u < 4 ? 0 : u < 8 ? ref_rand_int(s, 1, 3) : ref_rand_int(s, 4, tile + 3);
    }
    fz_pick_scalar(s, c->alpha, 10, 10);
    fz_pick_scalar(s, c->beta, 15, 15);
    if (l3_real_alpha(c->r)) c->alpha[1] = 0;
    if (l3_real_beta(c->r)) c->beta[1] = 0;
    if (l3_tr(c->r)) c->beta[0] = c->beta[1] = 0;
    /* (Bug B6, fixed in src/hostkernel.c: OpenBLAS 0.3.21's s/c/z SYRK family takes a NaN
     * beta as 0, so the diagonal tiles came out finite where netlib and the off-diagonal
     * tiles give NaN. NaN betas are drawn for every routine; fuzz_l3_syrk_family_beta_nan
     * covers them for the SYRK family in every precision and option on every run.) */
    if (!l3_tr(c->r) && fz_is_zero(c->beta) && ref_rand_int(s, 0, 1)) c->flags |= FZ_NAN_C;
    if (fz_is_zero(c->alpha) && ref_rand_int(s, 0, 1)) c->flags |= FZ_NAN_AB;
    if (ref_rand_int(s, 0, 7) == 0) {
        c->flags |= FZ_POISON;
        if (ref_rand_int(s, 0, 1)) c->flags |= FZ_POISON_INF;
    }
    if (ref_rand_int(s, 0, 2) == 0) c->flags |= FZ_TYPED;
    c->seed = ref_rng_next(s);
}

/* The fuzz seed (TESS_FUZZ_SEED, else from the clock) and, when TESSERA_TILE is unset, a
 * tile edge in 8..24 drawn from it and put in the environment before the runtime starts.
 * The first call decides; later calls return the same. */
FZ_FN uint64_t fz_seed_and_tile(int64_t *tile) {
    static uint64_t seed;
    static int64_t t;
    static int done;
    if (!done) {
        const char *e = getenv("TESS_FUZZ_SEED");
        if (e && *e) {
            seed = strtoull(e, NULL, 0);
        } else {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            seed = ((uint64_t)ts.tv_sec * 1000003u) ^ (uint64_t)ts.tv_nsec ^
                   ((uint64_t)getpid() << 20);
            seed %= 1000000007u;
        }
        t = ref_env_long("TESSERA_TILE", 0);
        if (t <= 0) {
            uint64_t x = seed;
            t = 8 + (int64_t)(ref_rng_next(&x) % 17);
            char buf[32];
            snprintf(buf, sizeof buf, "%lld", (long long)t);
            setenv("TESSERA_TILE", buf, 1);
        }
        done = 1;
        fprintf(stderr,
                "  fuzz seed %llu, tile %lld (replay: TESS_FUZZ_SEED=%llu TESSERA_TILE=%lld)\n",
                (unsigned long long)seed, (long long)t, (unsigned long long)seed, (long long)t);
    }
    if (tile) *tile = t;
    return seed;
}

#ifndef TESS_FUZZ_L3_NO_TESTS

/* ---- the setups ----------------------------------------------------------------------------- */

/* 3 emulated devices of 3 streams each, jitter shuffling the streams' order */
#define FZ_EMU                                                                \
    "TESSERA_DEVICES=none TESSERA_EMULATE_MEM=16M TESSERA_EMULATE_JITTER=30 " \
    "TESSERA_EMULATE_STREAMS=3 TESS_FUZZ_THREADS=8 "
/* three devices of one engine each at unequal rates: tasks held back and stolen while
 * calls overlap (the end game, node/balance.c) */
#define FZ_SHARED                                                                \
    "TESSERA_DEVICES=none TESSERA_EMULATE_MEM=16M TESSERA_EMULATE_STREAMS=3 "    \
    "TESSERA_EMULATE_SHARED=1 TESSERA_EMULATE_GFLOPS=8,4,1 TESS_FUZZ_THREADS=8 " \
    "TESSERA_CPU_WORKER=0 TESSERA_EMULATE=3 "

static const struct fz_config {
    const char *name, *knobs;
    int calls;      /* fuzz_l3_random_calls_from_threads' calls, unless TESS_FUZZ_CALLS */
    bool dev_fails; /* the run injects a fault (TESSERA_FAULT) and every call is right
                       * nonetheless (TESSERA_RECOVER): device failed_dev must have failed */
    int failed_dev;
    bool held; /* the end game must have held tasks back for faster peers */
} configs[] = {
    {"emu3", FZ_EMU "TESSERA_CPU_WORKER=0 TESSERA_EMULATE=3", .calls = 4000},
    /* device 1 fails at its 300th operation while 8 threads call */
    {"emu3_fault_recover",
     FZ_EMU "TESSERA_CPU_WORKER=0 TESSERA_EMULATE=3 TESSERA_FAULT=1:300 TESSERA_RECOVER=1",
     .calls = 1500, .dev_fails = true, .failed_dev = 1},
    {"emu3_shared_unequal", FZ_SHARED, .calls = 600, .held = true},
    /* the fastest device fails (at its 200th operation: it does thousands) while the others
     * hold tasks back for it; they must take them up. (The slowest failing instead was
     * flaky: holding back, it sometimes ran fewer than 200 operations in all.) */
    {"emu3_shared_fault", FZ_SHARED "TESSERA_FAULT=0:200 TESSERA_RECOVER=1", .calls = 600,
     .dev_fails = true, .failed_dev = 0, .held = true},
    /* the CPU worker (in-place host kernels) and 2 emulated devices share the tasks */
    {"emu2_cpu", FZ_EMU "TESSERA_CPU_WORKER=1 TESSERA_EMULATE=2", .calls = 2000},
};

/* the setup this run is under; NULL: the environment as it is, nothing more expected */
static const struct fz_config *cfg;

/* ---- the fuzz run ----------------------------------------------------------------------------- */

struct fz_thread {
    int id, calls, failed, corrupt_at, only_thread, only_call;
    uint64_t seed;
    int64_t tile;
    int done, per_routine[L3_NR], nonfinite, nan_c, nan_ab;
    char msg[1536];
};

/* Move one entry of the output far outside the bound (TESS_FUZZ_CORRUPT). */
static void fz_corrupt(struct fz_data *d) {
    int64_t rows = d->sh[2][0], cols = d->sh[2][1];
    for (int64_t col = 0; col < cols; col++)
        for (int64_t r = 0; r < rows; r++)
            if (fz_out_ref(&d->c, r, col)) {
                size_t idx = ref_index(d->c.layout, r, col, d->ld[2]);
                long double re, im;
                ref_get(d->c.dt, d->X[2], idx, &re, &im);
                ref_set(d->c.dt, d->X[2], idx, re + 0.5, im);
                return;
            }
}

static void *fz_thread_main(void *arg) {
    struct fz_thread *ft = arg;
    uint64_t s0 = ft->seed ^ ((uint64_t)(ft->id + 1) << 40), s = ref_rng_next(&s0);
    if (ft->only_thread >= 0 && ft->id != ft->only_thread) return NULL;
    for (int i = 0; i < ft->calls && !ft->failed; i++) {
        struct fz_case c;
        fz_random_case(&s, ft->tile, &c);
        if (ft->only_call >= 0 && i != ft->only_call) continue;
        struct fz_data d;
        char what[512], why[768] = "";
        fz_setup(&c, &d);
        int st = fz_run_tessera(&d);
        if (i == ft->corrupt_at) fz_corrupt(&d);
        if (st != TESS_OK)
            snprintf(why, sizeof why, "returned %d (%s): %s", st, tess_strerror(st),
                     tess_last_error());
        else
            fz_verify(&d, why, sizeof why);
        if (why[0]) {
            fz_describe(&c, what, sizeof what);
            snprintf(ft->msg, sizeof ft->msg, "thread %d call %d: %s: %s", ft->id, i, what, why);
            ft->failed = 1;
        }
        ft->per_routine[c.r]++;
        ft->nonfinite += d.inf || d.npoison > 0 || isnan(c.alpha[0]) || isnan(c.alpha[1]) ||
                         isnan(c.beta[0]) || isnan(c.beta[1]);
        ft->nan_c += !!(c.flags & FZ_NAN_C);
        ft->nan_ab += !!(c.flags & FZ_NAN_AB);
        ft->done++;
        fz_release(&d);
    }
    return NULL;
}

static double fz_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* calls random verified calls from seed spread over nthreads threads calling at once
 * (corrupt, only_thread, only_call: TESS_FUZZ_CORRUPT and TESS_FUZZ_ONLY, -1 for none);
 * prints what they drew. Returns the number of threads that failed, the first one's
 * message in first. */
static int fz_run_threads(uint64_t seed, int64_t tile, int calls, int nthreads, int corrupt,
                          int only_thread, int only_call, char *first, size_t len) {
    struct fz_thread *ft = calloc((size_t)nthreads, sizeof *ft);
    pthread_t th[64];
    double t0 = fz_now();
    int started = 0;
    for (int t = 0; t < nthreads; t++) {
        ft[t].id = t;
        ft[t].seed = seed;
        ft[t].tile = tile;
        ft[t].calls = calls / nthreads + (t < calls % nthreads);
        ft[t].corrupt_at = t == 0 ? corrupt : -1;
        ft[t].only_thread = only_thread, ft[t].only_call = only_call;
        if (pthread_create(&th[t], NULL, fz_thread_main, &ft[t]) != 0) {
            snprintf(ft[t].msg, sizeof ft[t].msg, "thread %d: pthread_create failed", t);
            ft[t].failed = 1;
            break;
        }
        started++;
    }
    for (int t = 0; t < started; t++) pthread_join(th[t], NULL);
    double wall = fz_now() - t0;
    int done = 0, per[L3_NR] = {0}, nonfinite = 0, nan_c = 0, nan_ab = 0;
    for (int t = 0; t < nthreads; t++) {
        done += ft[t].done, nonfinite += ft[t].nonfinite;
        nan_c += ft[t].nan_c, nan_ab += ft[t].nan_ab;
        for (int r = 0; r < L3_NR; r++) per[r] += ft[t].per_routine[r];
    }
    fprintf(stderr, "  %d calls in %.1f s from %d threads (tile %lld):", done, wall, nthreads,
            (long long)tile);
    for (int r = 0; r < L3_NR; r++) fprintf(stderr, " %s %d", l3_rname[r], per[r]);
    fprintf(stderr, "; NaN/Inf involved %d, NaN C under beta = 0 %d, NaN A/B under alpha = 0 %d\n",
            nonfinite, nan_c, nan_ab);
    int failed = 0;
    for (int t = 0; t < nthreads; t++)
        if (ft[t].failed) {
            fprintf(stderr, "  FAILED %s\n", ft[t].msg);
            if (!failed++) snprintf(first, len, "%s", ft[t].msg);
        }
    free(ft);
    return failed;
}

/* TESS_FUZZ_CALLS random verified calls of every level-3 routine spread over
 * TESS_FUZZ_THREADS threads calling at once: zero results outside the rounding bound or
 * with NaN/Inf where OpenBLAS has none (or none where it has NaN), zero bytes written
 * outside the output's referenced part, inputs unchanged. Then what the setup must show:
 * the end game held tasks back (held); the device of the injected fault failed
 * (dev_fails). A loaded host can leave that device short of its k-th operation within
 * the run (the others hold tasks back for it while it waits for a core): then up to 3
 * more runs of as many calls (seeds seed + 1, + 2, + 3; every call verified) until it
 * has failed. */
TEST(fuzz_l3_random_calls_from_threads) {
    int64_t tile;
    uint64_t seed = fz_seed_and_tile(&tile);
    int calls = (int)ref_env_long("TESS_FUZZ_CALLS", cfg ? cfg->calls : 400);
    int nthreads = (int)ref_env_long("TESS_FUZZ_THREADS", 8);
    int corrupt = (int)ref_env_long("TESS_FUZZ_CORRUPT", -1);
    /* TESS_FUZZ_ONLY=t:i replays call i of thread t alone (same seed and tile) */
    int only_thread = -1, only_call = -1;
    if (getenv("TESS_FUZZ_ONLY"))
        sscanf(getenv("TESS_FUZZ_ONLY"), "%d:%d", &only_thread, &only_call);
    ASSERT(nthreads >= 1 && nthreads <= 64);
    ASSERT_OK(tess_init());
    char first[1600] = "";
    int failed = fz_run_threads(seed, tile, calls, nthreads, corrupt, only_thread, only_call, first,
                                sizeof first);
    ASSERT_MSG(!failed, "%d thread(s) failed; first: %s (seed %llu, tile %lld)", failed, first,
               (unsigned long long)seed, (long long)tile);
    if (cfg && cfg->dev_fails) {
        tess_dev_stats_t s;
        ASSERT_OK(tess_device_stats(cfg->failed_dev, &s));
        for (uint64_t more = 1; more <= 3 && !s.failed; more++) {
            fprintf(stderr, "  device %d has not failed yet: %d more calls, seed %llu\n",
                    cfg->failed_dev, calls, (unsigned long long)(seed + more));
            failed = fz_run_threads(seed + more, tile, calls, nthreads, -1, -1, -1, first,
                                    sizeof first);
            ASSERT_MSG(!failed, "%d thread(s) failed; first: %s (seed %llu, tile %lld)", failed,
                       first, (unsigned long long)(seed + more), (long long)tile);
            ASSERT_OK(tess_device_stats(cfg->failed_dev, &s));
        }
    }
    uint64_t held = tess__bal_deferred();
    fprintf(stderr, "  end game: a task held back for a faster peer %llu times\n",
            (unsigned long long)held);
    if (cfg && cfg->held) ASSERT(held > 0);
    if (cfg && cfg->dev_fails) {
        long fdev = cfg->failed_dev;
        tess_dev_stats_t s;
        ASSERT_OK(tess_device_stats((int)fdev, &s));
        ASSERT_MSG(s.failed, "device %ld did not fail (TESSERA_FAULT=%s)", fdev,
                   getenv("TESSERA_FAULT") ? getenv("TESSERA_FAULT") : "");
        fprintf(stderr, "  device %ld failed during the run; every call right\n", fdev);
    }
    ASSERT_OK(tess_finalize());
}

/* The verification catches wrong results: for every routine (and precision class) a real
 * result passes, and the same result with one entry moved by 4 x its bound, one finite
 * entry turned NaN, one padding element written, or (SYRK family) one entry of the other
 * triangle written, fails. */
TEST(fuzz_l3_verifier_self_check) {
    int64_t tile;
    fz_seed_and_tile(&tile);
    ASSERT_OK(tess_init());
    for (int r = 0; r < L3_NR; r++)
        for (int cplx = 0; cplx < 2; cplx++) {
            if (l3_herm((enum l3_routine)r) && !cplx) continue;
            struct fz_case c;
            memset(&c, 0, sizeof c);
            c.r = (enum l3_routine)r;
            c.dt = cplx ? TESS_Z : TESS_S;
            c.layout = cplx ? TESS_ROW_MAJOR : TESS_COL_MAJOR;
            c.side = TESS_LEFT, c.uplo = TESS_LOWER, c.diag = TESS_NON_UNIT;
            c.ta = TESS_NO_TRANS, c.tb = TESS_TRANS;
            c.m = 2 * tile + 1, c.n = tile + 2, c.k = tile + 3;
            c.pad[0] = 1, c.pad[1] = 2, c.pad[2] = 3;
            c.alpha[0] = 0.75, c.alpha[1] = cplx ? -0.5 : 0;
            c.beta[0] = l3_tr(c.r) ? 0 : -0.5, c.beta[1] = 0;
            c.seed = 99 + (uint64_t)r;
            struct fz_data d;
            char what[512], why[512] = "";
            fz_describe(&c, what, sizeof what);
            fz_setup(&c, &d);
            ASSERT_MSG(fz_run_tessera(&d) == TESS_OK, "%s: %s", what, tess_last_error());
            ASSERT_MSG(fz_verify(&d, why, sizeof why) == 0, "%s: %s", what, why);
            size_t es = ref_esize(c.dt), bytes = d.ne[2] * es;
            void *good = fz_dup(d.X[2], bytes);
            /* a referenced entry in the middle of the output */
            int64_t rr = d.sh[2][0] / 2, cc = l3_rk(c.r) ? rr : d.sh[2][1] / 2;
            size_t idx = ref_index(c.layout, rr, cc, d.ld[2]);
            long double re, im;
            ref_get(c.dt, good, idx, &re, &im);

            /* (1) moved by 4 x the bound's scale: 2 gamma_N |W| <= that */
            {
                void *absM[3];
                for (int i = 0; i < 3; i++) absM[i] = fz_abs_copy(&d, d.R[i], i);
                void *W = fz_dup(c.r == L3_TRSM ? good : absM[2], bytes);
                unsigned char one[16];
                ref_scalar(c.dt, one, 1, 0);
                if (c.r == L3_TRSM) {
                    void *Wx = fz_abs_copy(&d, good, 2);
                    void *N[3] = {absM[0], NULL, Wx};
                    struct l3_args a = fz_args_of(&d, N, one, NULL);
                    a.r = L3_TRMM;
                    fz_cblas(&a);
                    memcpy(W, Wx, bytes);
                    free(Wx);
                } else {
                    void *N[3] = {absM[0], absM[1], W};
                    struct l3_args a = fz_args_of(&d, N, d.aalpha, d.abeta);
                    fz_cblas(&a);
                }
                long double wr, wi;
                ref_get(c.dt, W, idx, &wr, &wi);
                long double fac = 2 * oracle_gamma(c.dt, fz_inner(&c));
                /* TRSM: the residual moves by A_ii * delta, |A_ii| >= 1 */
                long double delta = 4 * fac * (wr + 1);
                ref_set(c.dt, d.X[2], idx, re + delta, im);
                ASSERT_MSG(fz_verify(&d, why, sizeof why) != 0,
                           "%s: an entry moved by %Lg (4 x bound) was not caught", what, delta);
                for (int i = 0; i < 3; i++) free(absM[i]);
                free(W);
            }
            /* (2) a finite entry turned NaN */
            memcpy(d.X[2], good, bytes);
            ref_set(c.dt, d.X[2], idx, NAN, im);
            ASSERT_MSG(fz_verify(&d, why, sizeof why) != 0, "%s: a NaN was not caught", what);
            /* (3) one padding element written (pad[2] = 3: there is padding) */
            memcpy(d.X[2], good, bytes);
            /* below column 0 (column-major) or right of row 0 (row-major) */
            size_t pidx = (size_t)(c.layout == TESS_COL_MAJOR ? d.sh[2][0] : d.sh[2][1]);
            ref_set(c.dt, d.X[2], pidx, 0.25, 0);
            ASSERT_MSG(fz_verify(&d, why, sizeof why) != 0,
                       "%s: a written padding element was not caught", what);
            /* (4) the other triangle (SYRK family) */
            if (l3_rk(c.r)) {
                memcpy(d.X[2], good, bytes);
                size_t oidx = ref_index(c.layout, 0, d.sh[2][1] - 1, d.ld[2]); /* upper */
                long double orr, oi;
                ref_get(c.dt, d.X[2], oidx, &orr, &oi);
                ref_set(c.dt, d.X[2], oidx, orr + 1, oi);
                ASSERT_MSG(fz_verify(&d, why, sizeof why) != 0,
                           "%s: a write to the other triangle was not caught", what);
            }
            /* and the untouched result still passes */
            memcpy(d.X[2], good, bytes);
            ASSERT_MSG(fz_verify(&d, why, sizeof why) == 0, "%s: %s", what, why);
            free(good);
            fz_release(&d);
        }
    ASSERT_OK(tess_finalize());
}

/* The SYRK family under beta = NaN (bug B6): every routine, precision, layout, uplo and
 * trans, typed and generic entries; n over two tiles and three more (three diagonal tiles,
 * off-diagonal ones), k over a tile; beta NaN in its real part with alpha random, alpha =
 * 0 and k = 0 (the host quick paths), and, where beta is complex (SYRK/SYR2K in c and z),
 * NaN in its imaginary part alone. netlib's C is NaN at every entry of the triangle
 * (fz_verify expects it, whatever OpenBLAS says), the other triangle and the padding
 * untouched. Before the fix, the s, c and z variants failed on their diagonal tiles. */
TEST(fuzz_l3_syrk_family_beta_nan) {
    int64_t tile;
    fz_seed_and_tile(&tile);
    ASSERT_OK(tess_init());
    static const tess_trans_t trs[3] = {TESS_NO_TRANS, TESS_TRANS, TESS_CONJ_TRANS};
    enum { NAN_RE, NAN_IM, ALPHA0, K0, NWHAT };
    int ncases = 0;
    char msg[1536];
    for (int r = L3_SYRK; r <= L3_HER2K; r++)
        for (int d = l3_herm((enum l3_routine)r) ? 2 : 0; d < 4; d++)
            for (int v = 0; v < 4; v++)
                for (int t = 0; t < 3; t++)
                    for (int what = 0; what < NWHAT; what++) {
                        struct fz_case c;
                        memset(&c, 0, sizeof c);
                        c.r = (enum l3_routine)r, c.dt = (tess_dtype_t)d;
                        c.layout = v & 1 ? TESS_ROW_MAJOR : TESS_COL_MAJOR;
                        c.uplo = v & 2 ? TESS_LOWER : TESS_UPPER;
                        c.side = TESS_LEFT, c.diag = TESS_NON_UNIT, c.tb = TESS_NO_TRANS;
                        c.ta = trs[t];
                        if (!l3_trans_ok(c.r, c.dt, c.ta)) continue;
                        if (what == NAN_IM && (!ref_is_complex(c.dt) || l3_real_beta(c.r)))
                            continue;
                        c.n = 2 * tile + 3, c.k = what == K0 ? 0 : tile + 2;
                        c.pad[0] = 1, c.pad[1] = 2, c.pad[2] = 3;
                        c.alpha[0] = what == ALPHA0 ? 0 : 0.75;
                        c.alpha[1] = what == ALPHA0 || l3_real_alpha(c.r) || !ref_is_complex(c.dt)
                                         ? 0
                                         : -0.25;
                        c.beta[0] = what == NAN_IM ? 0.5 : NAN;
                        c.beta[1] = what == NAN_IM ? NAN : 0;
                        c.flags = (v + t + what) % 2 ? FZ_TYPED : 0;
                        c.seed = 4000 + (uint64_t)ncases;
                        ASSERT_MSG(fz_run_case(&c, msg, sizeof msg) == 0, "%s", msg);
                        ncases++;
                    }
    fprintf(stderr, "  %d SYRK-family calls under beta = NaN: NaN all over the triangle\n", ncases);
    ASSERT_OK(tess_finalize());
}

/* Put v at entry (r, col) of matrix w (0 A, 1 B, 2 output) of a case: in what tessera
 * sees, in the reference's input and in the copy the padding is compared with. */
static void fz_plant_at(struct fz_data *d, int w, int64_t r, int64_t col, long double v) {
    size_t idx = ref_index(d->c.layout, r, col, d->ld[w]);
    ref_set(d->c.dt, d->X[w], idx, v, 0);
    ref_set(d->c.dt, d->R[w], idx, v, 0);
    ref_set(d->c.dt, d->X0[w], idx, v, 0);
    if (isinf(v)) d->inf = true;
    d->npoison++;
}

/* Single-precision TRSM whose column-major view has side R (col-major side R, row-major side
 * L) with a NaN or Inf in B (bug B12): every uplo, transa and diag, both layouts, typed
 * and generic entries; the view has a tile of rows and 1, 2 or 3 rows more (the rows a
 * side-R kernel call leaves over below a multiple of 4, in the edge tile's call and in the
 * whole call) and 2 tiles + 5 columns; one call per column of the middle diagonal tile,
 * with the value in the last row, NaN or +-Inf by turns. netlib's X is non-finite exactly
 * where the row depends on that entry (the reference solves in double precision:
 * fz_strsm_netlib). Before the fix, the host kernel's strsm (OpenBLAS 0.3.21 on Zen) spread
 * the value into up to three columns netlib keeps finite: deterministic, whatever the
 * interleaving (on a CPU whose strsm kernel is exact this passes either way). */
TEST(fuzz_l3_strsm_right_nonfinite) {
    int64_t tile;
    fz_seed_and_tile(&tile);
    ASSERT_OK(tess_init());
    static const tess_trans_t trs[2] = {TESS_NO_TRANS, TESS_TRANS};
    int ncalls = 0, nfailed = 0, combo = 0;
    char first[1536] = "";
    int64_t step = tile > 32 ? tile / 32 : 1;
    for (int row = 0; row < 2; row++)
        for (int u = 0; u < 2; u++)
            for (int t = 0; t < 2; t++)
                for (int g = 0; g < 2; g++, combo++) {
                    int64_t mv = tile + 1 + combo % 3, nv = 2 * tile + 5; /* the view */
                    for (int64_t cv = tile; cv < 2 * tile; cv += step) {
                        struct fz_case c;
                        memset(&c, 0, sizeof c);
                        c.r = L3_TRSM, c.dt = TESS_S;
                        c.layout = row ? TESS_ROW_MAJOR : TESS_COL_MAJOR;
                        c.side = row ? TESS_LEFT : TESS_RIGHT;
                        c.m = row ? nv : mv, c.n = row ? mv : nv;
                        c.uplo = u ? TESS_LOWER : TESS_UPPER;
                        c.ta = trs[t], c.tb = TESS_NO_TRANS;
                        c.diag = g ? TESS_UNIT : TESS_NON_UNIT;
                        c.pad[0] = 1, c.pad[2] = (int64_t)(cv % 3);
                        c.alpha[0] = cv % 2 ? 0.75 : 1.0;
                        c.flags = (combo + cv) % 2 ? FZ_TYPED : 0;
                        c.seed = 7000 + (uint64_t)ncalls;
                        struct fz_data d;
                        fz_setup(&c, &d);
                        long double v = cv % 3 == 0 ? NAN : cv % 3 == 1 ? INFINITY : -INFINITY;
                        /* view entry (mv - 1, cv): stored (cv, mv - 1) in row-major */
                        fz_plant_at(&d, 2, row ? cv : mv - 1, row ? mv - 1 : cv, v);
                        char what[512], why[768] = "";
                        int st = fz_run_tessera(&d);
                        if (st != TESS_OK)
                            snprintf(why, sizeof why, "returned %d (%s): %s", st, tess_strerror(st),
                                     tess_last_error());
                        else
                            fz_verify(&d, why, sizeof why);
                        if (why[0]) {
                            fz_describe(&c, what, sizeof what);
                            if (nfailed++ < 3) fprintf(stderr, "  FAILED %s: %s\n", what, why);
                            if (!first[0]) snprintf(first, sizeof first, "%s: %s", what, why);
                        }
                        fz_release(&d);
                        ncalls++;
                    }
                }
    fprintf(stderr, "  %d STRSM calls (side R view) with a NaN/Inf in B: %d wrong\n", ncalls,
            nfailed);
    ASSERT_MSG(nfailed == 0, "%d of %d calls wrong; first: %s (tile %lld)", nfailed, ncalls, first,
               (long long)tile);
    ASSERT_OK(tess_finalize());
}

TEST_CONFIG_MAIN(configs, cfg)

#endif /* TESS_FUZZ_L3_NO_TESTS */
