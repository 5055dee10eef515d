/* src/backend/hostkernel.c: every tile kernel kind of backend.h run on host memory through
 * the CPU BLAS table (hostblas.h), for the host backend's stream threads and the drop-in's
 * CPU calls. Owns the mapping of kinds and precisions to CBLAS calls and what makes 64-bit
 * arguments safe for the CPU BLAS's int ones; one generic path for every kind and precision.
 * Invariants: nothing is truncated: a dimension beyond INT_MAX is split (GEMM along m, n, k;
 * the others along their free dimension or k; beta to the first k piece), a leading
 * dimension beyond INT_MAX is served from a copy of at most HK_BLK columns (C copied in
 * only when read, its referenced part copied back); a square operand beyond INT_MAX is
 * TESS_EINVAL. The SYRK family scales its triangle by beta here (HERK/HER2K: the diagonal's
 * imaginary parts zeroed, not read), then calls with beta = 1, so a NaN beta gives NaN as
 * netlib does (OpenBLAS 0.3.21 takes it as 0: B6). STRSM side R solves its 1-3 left-over
 * rows in a copy padded to 4 rows, so OpenBLAS's Zen/Haswell kernels cannot spread a NaN
 * across columns (B12).
 * POTRF is LAPACK's xPOTRF of the same library (optional there: TESS_ENOSYS naming the
 * symbol when absent), in place on C's triangle uplo, its INFO written to *info; an order
 * beyond INT_MAX is TESS_EINVAL, a leading dimension beyond it served from a copy of the
 * triangle (copied back). GETRF is LAPACK's xGETRF (optional likewise), in place on the
 * m x n C, its pivots written to ipiv[0 .. min(m, n) - 1] and its INFO to *info; m or n
 * beyond INT_MAX is TESS_EINVAL, a leading dimension beyond it served from a copy of C.
 * LASWP is LAPACK's xLASWP (optional likewise; k1 = 1, k2 = k, incx = 1) on C's n columns,
 * in pieces of at most INT_MAX columns; every pivot is checked to lie in 1..m (k <= m)
 * first, else TESS_EINVAL with C untouched; a leading dimension beyond INT_MAX is served
 * here, column by column, the interchanges in the same order.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "hostblas.h"

#define HK_INT INT_MAX /* the CPU BLAS's int */
#define HK_BLK 1024    /* free dimensions cut to this when operands are copied */

static enum CBLAS_SIDE side_(char c) { return c == 'L' ? CblasLeft : CblasRight; }
static enum CBLAS_UPLO uplo_(char c) { return c == 'U' ? CblasUpper : CblasLower; }
static enum CBLAS_TRANSPOSE trans_(char c) {
    return c == 'N' ? CblasNoTrans : c == 'T' ? CblasTrans : CblasConjTrans;
}
static enum CBLAS_DIAG diag_(char c) { return c == 'U' ? CblasUnit : CblasNonUnit; }

static bool is_rk(enum tess__kernel_kind kd) {
    return kd == TESS__K_SYRK || kd == TESS__K_HERK || kd == TESS__K_SYR2K || kd == TESS__K_HER2K;
}
static bool has_b(enum tess__kernel_kind kd) {
    return kd == TESS__K_GEMM || kd == TESS__K_SYMM || kd == TESS__K_HEMM || kd == TESS__K_SYR2K ||
           kd == TESS__K_HER2K;
}
static bool is_side(enum tess__kernel_kind kd) {
    return kd == TESS__K_SYMM || kd == TESS__K_HEMM || kd == TESS__K_TRMM || kd == TESS__K_TRSM;
}
/* HERK's alpha, HERK's and HER2K's beta are of the real type */
static tess_dtype_t real_of(tess_dtype_t dt) {
    return dt == TESS_C ? TESS_S : dt == TESS_Z ? TESS_D : dt;
}
static tess_dtype_t beta_dt(const struct tess__kernel *k) {
    return k->kind == TESS__K_HERK || k->kind == TESS__K_HER2K ? real_of(k->dt) : k->dt;
}

/* Element (r, c) of the column-major X, in size_t arithmetic (the operand is addressable). */
static char *at(const void *X, int64_t r, int64_t c, int64_t ld, size_t es) {
    return (char *)X + ((size_t)r + (size_t)c * (size_t)ld) * es;
}

/* Stored shapes (rows x cols) of A, B and C of k; an absent operand is 0 x 0. */
static void shapes(const struct tess__kernel *k, int64_t sh[3][2]) {
    memset(sh, 0, sizeof(int64_t) * 6);
    int64_t ka = k->side == 'L' ? k->m : k->n;
    switch (k->kind) {
    case TESS__K_GEMM:
        sh[0][0] = k->ta == 'N' ? k->m : k->k, sh[0][1] = k->ta == 'N' ? k->k : k->m;
        sh[1][0] = k->tb == 'N' ? k->k : k->n, sh[1][1] = k->tb == 'N' ? k->n : k->k;
        sh[2][0] = k->m, sh[2][1] = k->n;
        break;
    case TESS__K_SYMM:
    case TESS__K_HEMM:
        sh[0][0] = sh[0][1] = ka;
        sh[1][0] = k->m, sh[1][1] = k->n;
        sh[2][0] = k->m, sh[2][1] = k->n;
        break;
    case TESS__K_TRMM:
    case TESS__K_TRSM:
        sh[0][0] = sh[0][1] = ka;
        sh[2][0] = k->m, sh[2][1] = k->n;
        break;
    case TESS__K_SYRK:
    case TESS__K_HERK:
    case TESS__K_SYR2K:
    case TESS__K_HER2K:
        sh[0][0] = k->ta == 'N' ? k->n : k->k, sh[0][1] = k->ta == 'N' ? k->k : k->n;
        if (k->kind == TESS__K_SYR2K || k->kind == TESS__K_HER2K)
            sh[1][0] = sh[0][0], sh[1][1] = sh[0][1];
        sh[2][0] = sh[2][1] = k->n;
        break;
    case TESS__K_POTRF: sh[2][0] = sh[2][1] = k->n; break; /* its own path: potrf() */
    case TESS__K_GETRF: /* their own paths too: getrf(), laswp() */
    case TESS__K_LASWP: sh[2][0] = k->m, sh[2][1] = k->n; break;
    }
}

/* The CBLAS call itself. Every dimension and leading dimension it passes fits an int
 * (run_fit makes sure). */
static void raw(const struct tess__hostblas *b, const struct tess__kernel *k) {
    const enum CBLAS_ORDER o = CblasColMajor;
    enum CBLAS_SIDE sd = side_(k->side);
    enum CBLAS_UPLO ul = uplo_(k->uplo);
    enum CBLAS_TRANSPOSE tr = trans_(k->ta), tb = trans_(k->tb);
    enum CBLAS_DIAG dg = diag_(k->diag);
    int m = (int)k->m, n = (int)k->n, kk = (int)k->k;
    int lda = (int)k->lda, ldb = (int)k->ldb, ldc = (int)k->ldc;
    const float *as = k->alpha, *bs = k->beta;
    const double *ad = k->alpha, *bd = k->beta;
    switch (k->dt) {
    case TESS_S:
        switch (k->kind) {
        case TESS__K_GEMM:
            b->sgemm(o, tr, tb, m, n, kk, *as, k->A, lda, k->B, ldb, *bs, k->C, ldc);
            break;
        case TESS__K_SYMM:
            b->ssymm(o, sd, ul, m, n, *as, k->A, lda, k->B, ldb, *bs, k->C, ldc);
            break;
        case TESS__K_SYRK: b->ssyrk(o, ul, tr, n, kk, *as, k->A, lda, *bs, k->C, ldc); break;
        case TESS__K_SYR2K:
            b->ssyr2k(o, ul, tr, n, kk, *as, k->A, lda, k->B, ldb, *bs, k->C, ldc);
            break;
        case TESS__K_TRMM: b->strmm(o, sd, ul, tr, dg, m, n, *as, k->A, lda, k->C, ldc); break;
        case TESS__K_TRSM: b->strsm(o, sd, ul, tr, dg, m, n, *as, k->A, lda, k->C, ldc); break;
        default: break;
        }
        break;
    case TESS_D:
        switch (k->kind) {
        case TESS__K_GEMM:
            b->dgemm(o, tr, tb, m, n, kk, *ad, k->A, lda, k->B, ldb, *bd, k->C, ldc);
            break;
        case TESS__K_SYMM:
            b->dsymm(o, sd, ul, m, n, *ad, k->A, lda, k->B, ldb, *bd, k->C, ldc);
            break;
        case TESS__K_SYRK: b->dsyrk(o, ul, tr, n, kk, *ad, k->A, lda, *bd, k->C, ldc); break;
        case TESS__K_SYR2K:
            b->dsyr2k(o, ul, tr, n, kk, *ad, k->A, lda, k->B, ldb, *bd, k->C, ldc);
            break;
        case TESS__K_TRMM: b->dtrmm(o, sd, ul, tr, dg, m, n, *ad, k->A, lda, k->C, ldc); break;
        case TESS__K_TRSM: b->dtrsm(o, sd, ul, tr, dg, m, n, *ad, k->A, lda, k->C, ldc); break;
        default: break;
        }
        break;
    case TESS_C:
        switch (k->kind) {
        case TESS__K_GEMM:
            b->cgemm(o, tr, tb, m, n, kk, k->alpha, k->A, lda, k->B, ldb, k->beta, k->C, ldc);
            break;
        case TESS__K_SYMM:
            b->csymm(o, sd, ul, m, n, k->alpha, k->A, lda, k->B, ldb, k->beta, k->C, ldc);
            break;
        case TESS__K_HEMM:
            b->chemm(o, sd, ul, m, n, k->alpha, k->A, lda, k->B, ldb, k->beta, k->C, ldc);
            break;
        case TESS__K_SYRK:
            b->csyrk(o, ul, tr, n, kk, k->alpha, k->A, lda, k->beta, k->C, ldc);
            break;
        case TESS__K_HERK: b->cherk(o, ul, tr, n, kk, *as, k->A, lda, *bs, k->C, ldc); break;
        case TESS__K_SYR2K:
            b->csyr2k(o, ul, tr, n, kk, k->alpha, k->A, lda, k->B, ldb, k->beta, k->C, ldc);
            break;
        case TESS__K_HER2K:
            b->cher2k(o, ul, tr, n, kk, k->alpha, k->A, lda, k->B, ldb, *bs, k->C, ldc);
            break;
        case TESS__K_TRMM: b->ctrmm(o, sd, ul, tr, dg, m, n, k->alpha, k->A, lda, k->C, ldc); break;
        case TESS__K_TRSM: b->ctrsm(o, sd, ul, tr, dg, m, n, k->alpha, k->A, lda, k->C, ldc); break;
        default: break;
        }
        break;
    case TESS_Z:
        switch (k->kind) {
        case TESS__K_GEMM:
            b->zgemm(o, tr, tb, m, n, kk, k->alpha, k->A, lda, k->B, ldb, k->beta, k->C, ldc);
            break;
        case TESS__K_SYMM:
            b->zsymm(o, sd, ul, m, n, k->alpha, k->A, lda, k->B, ldb, k->beta, k->C, ldc);
            break;
        case TESS__K_HEMM:
            b->zhemm(o, sd, ul, m, n, k->alpha, k->A, lda, k->B, ldb, k->beta, k->C, ldc);
            break;
        case TESS__K_SYRK:
            b->zsyrk(o, ul, tr, n, kk, k->alpha, k->A, lda, k->beta, k->C, ldc);
            break;
        case TESS__K_HERK: b->zherk(o, ul, tr, n, kk, *ad, k->A, lda, *bd, k->C, ldc); break;
        case TESS__K_SYR2K:
            b->zsyr2k(o, ul, tr, n, kk, k->alpha, k->A, lda, k->B, ldb, k->beta, k->C, ldc);
            break;
        case TESS__K_HER2K:
            b->zher2k(o, ul, tr, n, kk, k->alpha, k->A, lda, k->B, ldb, *bd, k->C, ldc);
            break;
        case TESS__K_TRMM: b->ztrmm(o, sd, ul, tr, dg, m, n, k->alpha, k->A, lda, k->C, ldc); break;
        case TESS__K_TRSM: b->ztrsm(o, sd, ul, tr, dg, m, n, k->alpha, k->A, lda, k->C, ldc); break;
        default: break;
        }
        break;
    }
}

/* STRSM with side R and m % 4 != 0 (see the top): rows 0 .. m4-1 (m4 = m rounded down to
 * a multiple of 4) in place, the other 1 to 3 in a 4 x n copy (ld 4) whose padding rows are
 * zero, their results copied back. TESS_OK, or TESS_ENOMEM (C not written) when the copy
 * cannot be had. */
static int trsm_right_rows(const struct tess__hostblas *hb, const struct tess__kernel *k) {
    int64_t m4 = k->m - k->m % 4, rest = k->m % 4;
    float *P = calloc((size_t)4 * (size_t)k->n, sizeof *P);
    if (!P)
        return tess__fail(TESS_ENOMEM,
                          "host kernel: no memory for a 4 x %lld copy of the last "
                          "rows of a TRSM",
                          (long long)k->n);
    struct tess__kernel p = *k;
    if (m4 > 0) {
        p.m = m4;
        raw(hb, &p);
    }
    float *C = (float *)k->C + m4;
    for (int64_t j = 0; j < k->n; j++) memcpy(P + 4 * j, C + j * k->ldc, (size_t)rest * sizeof *P);
    p.m = 4, p.C = P, p.ldc = 4;
    raw(hb, &p);
    for (int64_t j = 0; j < k->n; j++) memcpy(C + j * k->ldc, P + 4 * j, (size_t)rest * sizeof *P);
    free(P);
    return TESS_OK;
}

/* raw, with the SYRK family's beta applied here (see the top): C's triangle scaled by
 * beta (beta != 0, 1), then the CPU BLAS with beta = 1; STRSM with side R through
 * trsm_right_rows. TESS_OK, or TESS_ENOMEM from trsm_right_rows. */
static int call(const struct tess__hostblas *hb, const struct tess__kernel *k) {
    /* alpha = 0: netlib reads neither A nor B (C = beta C; TRMM/TRSM: C = 0), and k = 0
     * leaves beta C; some CPU BLAS builds multiply anyway (OpenBLAS 0.3.21's small-matrix
     * kernels on AVX-512), so a NaN in A or an infinite alpha would reach C: the call
     * becomes one that reads only C. */
    struct tess__kernel p;
    if (k->alpha) {
        tess_dtype_t adt = k->kind == TESS__K_HERK ? real_of(k->dt) : k->dt;
        tess__scalar_t al;
        tess__scalar_load(adt, &al, k->alpha);
        bool no_k = (k->kind == TESS__K_GEMM || is_rk(k->kind)) && k->k == 0; /* Inf alpha x 0 */
        if (tess__scalar_is_zero(adt, &al) || no_k) {
            if (k->kind == TESS__K_TRMM || k->kind == TESS__K_TRSM) {
                size_t es = tess__dtypes[k->dt].size;
                for (int64_t j = 0; j < k->n; j++)
                    memset(at(k->C, 0, j, k->ldc, es), 0, (size_t)k->m * es);
                return TESS_OK;
            }
            p = *k;
            if (k->kind == TESS__K_SYMM || k->kind == TESS__K_HEMM) { /* C m x n: GEMM, k = 0 */
                p.kind = TESS__K_GEMM, p.ta = p.tb = 'N';
                p.A = p.B = k->C, p.lda = p.ldb = k->ldc;
            }
            p.k = 0; /* GEMM and the SYRK family: only beta C is left (the lds stay legal) */
            p.alpha = tess__scalar_zero();
            k = &p;
        }
    }
    if (is_rk(k->kind) && k->beta && k->n > 0) {
        tess_dtype_t bdt = beta_dt(k);
        tess__scalar_t be;
        tess__scalar_load(bdt, &be, k->beta);
        if (!tess__scalar_is_zero(bdt, &be) && !tess__scalar_is_one(bdt, &be)) {
            bool herm = bdt != k->dt;
            tess__scalar_t bc;
            if (herm) { /* a real beta as the complex (beta, 0) */
                memset(&bc, 0, sizeof bc);
                if (k->dt == TESS_C)
                    bc.c[0] = be.s;
                else
                    bc.z[0] = be.d;
            } else {
                bc = be;
            }
            tess__host_scale_tri(k->dt, k->uplo, k->n, &bc, herm, k->C, k->ldc);
            struct tess__kernel p = *k;
            p.beta = tess__scalar_one(bdt);
            raw(hb, &p);
            return TESS_OK;
        }
    }
    if (k->kind == TESS__K_TRSM && k->dt == TESS_S && k->side == 'R' && k->m % 4 != 0 && k->n > 0)
        return trsm_right_rows(hb, k);
    raw(hb, k);
    return TESS_OK;
}

static int run_dims(const struct tess__hostblas *hb, const struct tess__kernel *k, int64_t lim);

/* Copy the rows x cols block (only the triangle uplo when uplo is 'U' or 'L', square)
 * from (src, lds) to (dst, ldd). */
static void copy_block(size_t es, char uplo, int64_t rows, int64_t cols, const void *src,
                       int64_t lds, void *dst, int64_t ldd) {
    for (int64_t j = 0; j < cols; j++) {
        int64_t r0 = uplo == 'L' ? j : 0, r1 = uplo == 'U' ? j + 1 : rows;
        if (r1 > rows) r1 = rows;
        if (r1 > r0)
            memcpy(at(dst, r0, j, ldd, es), at(src, r0, j, lds, es), (size_t)(r1 - r0) * es);
    }
}

/* Dimensions fit an int (free ones at most HK_BLK); some leading dimension does not: run
 * on temporaries with the smallest leading dimensions for the operands whose leading
 * dimension does not fit. */
static int run_copied(const struct tess__hostblas *hb, const struct tess__kernel *k) {
    size_t es = tess__dtypes[k->dt].size;
    int64_t sh[3][2];
    shapes(k, sh);
    struct tess__kernel p = *k;
    const void *src[3] = {k->A, k->B, k->C};
    int64_t *ld[3] = {&p.lda, &p.ldb, &p.ldc};
    void *tmp[3] = {NULL, NULL, NULL};
    /* does the kernel read C? (TRMM/TRSM: always; the others unless beta = 0) */
    bool reads_c = true;
    if (!(k->kind == TESS__K_TRMM || k->kind == TESS__K_TRSM) && k->beta) {
        tess__scalar_t be;
        tess__scalar_load(beta_dt(k), &be, k->beta);
        reads_c = !tess__scalar_is_zero(beta_dt(k), &be);
    }
    char tri = is_rk(k->kind) ? k->uplo : 0; /* the SYRK family: C's triangle only */
    int rc = TESS_OK;
    for (int i = 0; i < 3 && !rc; i++) {
        int64_t rows = sh[i][0], cols = sh[i][1];
        if (*ld[i] <= HK_INT || (i == 1 && !has_b(k->kind))) continue;
        if (rows == 0 || cols == 0) { /* empty: nothing read, any legal ld */
            *ld[i] = rows > 1 ? rows : 1;
            continue;
        }
        size_t el, bytes;
        if (__builtin_mul_overflow((size_t)rows, (size_t)cols, &el) ||
            __builtin_mul_overflow(el, es, &bytes) || !(tmp[i] = malloc(bytes))) {
            rc = tess__fail(TESS_ENOMEM,
                            "host kernel: no memory for a %lld x %lld copy of an "
                            "operand with leading dimension %lld",
                            (long long)rows, (long long)cols, (long long)*ld[i]);
            break;
        }
        if (i < 2)
            copy_block(es, 0, rows, cols, src[i], *ld[i], tmp[i], rows);
        else if (reads_c)
            copy_block(es, tri, rows, cols, src[i], *ld[i], tmp[i], rows);
        else
            memset(tmp[i], 0, bytes); /* beta = 0: C not read */
        *ld[i] = rows;
        if (i == 0)
            p.A = tmp[i];
        else if (i == 1)
            p.B = tmp[i];
        else
            p.C = tmp[i];
    }
    if (!rc) rc = call(hb, &p);
    if (!rc && tmp[2]) copy_block(es, tri, sh[2][0], sh[2][1], tmp[2], sh[2][0], k->C, k->ldc);
    for (int i = 0; i < 3; i++) free(tmp[i]);
    return rc;
}

/* Dimensions fit an int: the CBLAS call, on copies where a leading dimension does not. */
static int run_fit(const struct tess__hostblas *hb, const struct tess__kernel *k) {
    bool big = k->lda > HK_INT || (has_b(k->kind) && k->ldb > HK_INT) || k->ldc > HK_INT;
    if (!big) return call(hb, k);
    bool cut = false;
    switch (k->kind) {
    case TESS__K_GEMM: cut = k->m > HK_BLK || k->n > HK_BLK || k->k > HK_BLK; break;
    case TESS__K_SYRK:
    case TESS__K_HERK:
    case TESS__K_SYR2K:
    case TESS__K_HER2K: cut = k->k > HK_BLK; break;
    default: cut = (k->side == 'L' ? k->n : k->m) > HK_BLK; break;
    }
    return cut ? run_dims(hb, k, HK_BLK) : run_copied(hb, k);
}

/* Split the dimensions of k that can be split and exceed lim into pieces of at most lim
 * (in order: beta on the first k piece), then run_fit each piece. */
static int run_dims(const struct tess__hostblas *hb, const struct tess__kernel *k, int64_t lim) {
    size_t es = tess__dtypes[k->dt].size;
    struct tess__kernel p = *k;
    int rc = TESS_OK;
    if (k->kind == TESS__K_GEMM) {
        if (k->m > lim) {
            for (int64_t i0 = 0; i0 < k->m && !rc; i0 += lim) {
                p.m = TESS__MIN(lim, k->m - i0);
                p.A = k->ta == 'N' ? at(k->A, i0, 0, k->lda, es) : at(k->A, 0, i0, k->lda, es);
                p.C = at(k->C, i0, 0, k->ldc, es);
                rc = run_dims(hb, &p, lim);
            }
            return rc;
        }
        if (k->n > lim) {
            for (int64_t j0 = 0; j0 < k->n && !rc; j0 += lim) {
                p.n = TESS__MIN(lim, k->n - j0);
                p.B = k->tb == 'N' ? at(k->B, 0, j0, k->ldb, es) : at(k->B, j0, 0, k->ldb, es);
                p.C = at(k->C, 0, j0, k->ldc, es);
                rc = run_dims(hb, &p, lim);
            }
            return rc;
        }
        if (k->k > lim) {
            for (int64_t l0 = 0; l0 < k->k && !rc; l0 += lim) {
                p.k = TESS__MIN(lim, k->k - l0);
                p.A = k->ta == 'N' ? at(k->A, 0, l0, k->lda, es) : at(k->A, l0, 0, k->lda, es);
                p.B = k->tb == 'N' ? at(k->B, l0, 0, k->ldb, es) : at(k->B, 0, l0, k->ldb, es);
                p.beta = l0 == 0 ? k->beta : (const void *)tess__scalar_one(k->dt);
                rc = run_fit(hb, &p);
            }
            return rc;
        }
        return run_fit(hb, k);
    }
    if (is_rk(k->kind)) {
        if (k->n > HK_INT)
            return tess__fail(TESS_EINVAL, "host kernel: C of order %lld cannot be addressed",
                              (long long)k->n);
        if (k->k > lim) {
            bool two = k->kind == TESS__K_SYR2K || k->kind == TESS__K_HER2K;
            for (int64_t l0 = 0; l0 < k->k && !rc; l0 += lim) {
                p.k = TESS__MIN(lim, k->k - l0);
                p.A = k->ta == 'N' ? at(k->A, 0, l0, k->lda, es) : at(k->A, l0, 0, k->lda, es);
                if (two)
                    p.B = k->ta == 'N' ? at(k->B, 0, l0, k->ldb, es) : at(k->B, l0, 0, k->ldb, es);
                p.beta = l0 == 0 ? k->beta : (const void *)tess__scalar_one(beta_dt(k));
                rc = run_fit(hb, &p);
            }
            return rc;
        }
        return run_fit(hb, k);
    }
    if (is_side(k->kind)) {
        bool left = k->side == 'L';
        int64_t ka = left ? k->m : k->n, fr = left ? k->n : k->m;
        if (ka > HK_INT)
            return tess__fail(TESS_EINVAL, "host kernel: A of order %lld cannot be addressed",
                              (long long)ka);
        if (fr > lim) {
            for (int64_t x0 = 0; x0 < fr && !rc; x0 += lim) {
                int64_t r0 = left ? 0 : x0, c0 = left ? x0 : 0;
                if (left)
                    p.n = TESS__MIN(lim, fr - x0);
                else
                    p.m = TESS__MIN(lim, fr - x0);
                if (has_b(k->kind)) p.B = at(k->B, r0, c0, k->ldb, es);
                p.C = at(k->C, r0, c0, k->ldc, es);
                rc = run_fit(hb, &p);
            }
            return rc;
        }
        return run_fit(hb, k);
    }
    return tess__fail(TESS_EINVAL, "host kernel: kind %d", (int)k->kind);
}

/* POTRF (backend.h): C = chol(C) in place on its triangle uplo (order n; m, k, A, B and the
 * scalars unused), LAPACK's INFO to *info when info is not NULL. */
static int potrf(const struct tess__kernel *k) {
    tess__potrf_fn *fn;
    int rc = tess__hostblas_potrf((int)k->dt, "host kernel", &fn);
    if (rc) return rc;
    if (k->uplo != 'L' && k->uplo != 'U')
        return tess__fail(TESS_EINVAL, "host kernel: potrf uplo '%c' (want 'L' or 'U')", k->uplo);
    if (k->n < 0) return tess__fail(TESS_EINVAL, "host kernel: negative size");
    if (k->n > HK_INT)
        return tess__fail(TESS_EINVAL, "host kernel: potrf of order %lld cannot be addressed",
                          (long long)k->n);
    if (k->n > 0 && (k->ldc < k->n || !k->C))
        return tess__fail(TESS_EINVAL, "host kernel: potrf of order %lld: ldc %lld or C NULL",
                          (long long)k->n, (long long)k->ldc);
    int n = (int)k->n, info = 0;
    if (n > 0) {
        size_t es = tess__dtypes[k->dt].size;
        void *C = k->C, *tmp = NULL;
        int ld = n;
        if (k->ldc > HK_INT) { /* the triangle in a copy with ld n */
            if (!(tmp = malloc((size_t)n * (size_t)n * es)))
                return tess__fail(TESS_ENOMEM,
                                  "host kernel: no memory for a %d x %d copy of a potrf "
                                  "tile with leading dimension %lld",
                                  n, n, (long long)k->ldc);
            copy_block(es, k->uplo, n, n, k->C, k->ldc, tmp, n);
            C = tmp;
        } else {
            ld = (int)k->ldc;
        }
        fn(&k->uplo, &n, C, &ld, &info, 1);
        if (tmp) {
            copy_block(es, k->uplo, n, n, tmp, n, k->C, k->ldc);
            free(tmp);
        }
    }
    if (k->info) *k->info = info;
    return TESS_OK;
}

/* GETRF (backend.h): C = P L U in place, C m x n (k, A, B and the scalars unused), the
 * pivots to ipiv (required when min(m, n) > 0), LAPACK's INFO to *info when info is not
 * NULL. */
static int getrf(const struct tess__kernel *k) {
    tess__getrf_fn *fn;
    int rc = tess__hostblas_getrf((int)k->dt, "host kernel", &fn);
    if (rc) return rc;
    if (k->m < 0 || k->n < 0) return tess__fail(TESS_EINVAL, "host kernel: negative size");
    if (k->m > HK_INT || k->n > HK_INT)
        return tess__fail(TESS_EINVAL, "host kernel: getrf of %lld x %lld cannot be addressed",
                          (long long)k->m, (long long)k->n);
    int m = (int)k->m, n = (int)k->n, info = 0;
    if (m > 0 && n > 0) {
        if (k->ldc < m || !k->C || !k->ipiv)
            return tess__fail(TESS_EINVAL,
                              "host kernel: getrf of %d x %d: ldc %lld, C or ipiv NULL", m, n,
                              (long long)k->ldc);
        size_t es = tess__dtypes[k->dt].size;
        void *C = k->C, *tmp = NULL;
        int ld = m;
        if (k->ldc > HK_INT) { /* C in a copy with ld m */
            if (!(tmp = malloc((size_t)m * (size_t)n * es)))
                return tess__fail(TESS_ENOMEM,
                                  "host kernel: no memory for a %d x %d copy of a getrf "
                                  "tile with leading dimension %lld",
                                  m, n, (long long)k->ldc);
            copy_block(es, 0, m, n, k->C, k->ldc, tmp, m);
            C = tmp;
        } else {
            ld = (int)k->ldc;
        }
        fn(&m, &n, C, &ld, k->ipiv, &info);
        if (tmp) {
            copy_block(es, 0, m, n, tmp, m, k->C, k->ldc);
            free(tmp);
        }
    }
    if (k->info) *k->info = info;
    return TESS_OK;
}

/* LASWP (backend.h): for i = 0 .. k - 1 in order, rows i and ipiv[i] - 1 of the m x n C
 * interchanged (m, n, k, ldc, C, ipiv used; the rest unused). */
static int laswp(const struct tess__kernel *k) {
    tess__laswp_fn *fn;
    int rc = tess__hostblas_laswp((int)k->dt, "host kernel", &fn);
    if (rc) return rc;
    if (k->m < 0 || k->n < 0 || k->k < 0 || k->k > k->m)
        return tess__fail(TESS_EINVAL, "host kernel: laswp m %lld n %lld k %lld: bad sizes",
                          (long long)k->m, (long long)k->n, (long long)k->k);
    if (k->n == 0 || k->k == 0) return TESS_OK;
    if (k->ldc < k->m || !k->C || !k->ipiv || k->k > HK_INT)
        return tess__fail(TESS_EINVAL, "host kernel: laswp k %lld: ldc %lld, C or ipiv NULL",
                          (long long)k->k, (long long)k->ldc);
    for (int64_t i = 0; i < k->k; i++)
        if (k->ipiv[i] < 1 || k->ipiv[i] > k->m)
            return tess__fail(TESS_EINVAL, "host kernel: laswp ipiv[%lld] = %d not in 1..%lld",
                              (long long)i, k->ipiv[i], (long long)k->m);
    size_t es = tess__dtypes[k->dt].size;
    if (k->ldc > HK_INT) { /* LAPACK cannot take the ld: the same interchanges here */
        unsigned char t[16];
        for (int64_t j = 0; j < k->n; j++)
            for (int64_t i = 0; i < k->k; i++) {
                int64_t p = k->ipiv[i] - 1;
                if (p == i) continue;
                char *x = at(k->C, i, j, k->ldc, es), *y = at(k->C, p, j, k->ldc, es);
                memcpy(t, x, es);
                memcpy(x, y, es);
                memcpy(y, t, es);
            }
        return TESS_OK;
    }
    int ld = (int)k->ldc, k1 = 1, k2 = (int)k->k, inc = 1;
    for (int64_t j0 = 0; j0 < k->n; j0 += HK_INT) {
        int n = (int)TESS__MIN((int64_t)HK_INT, k->n - j0);
        fn(&n, at(k->C, 0, j0, k->ldc, es), &ld, &k1, &k2, k->ipiv, &inc);
    }
    return TESS_OK;
}

int tess__host_kernel(const struct tess__kernel *k) {
    if (k->kind == TESS__K_POTRF) return potrf(k);
    if (k->kind == TESS__K_GETRF) return getrf(k);
    if (k->kind == TESS__K_LASWP) return laswp(k);
    const struct tess__hostblas *b = tess__hostblas();
    if (!b) return tess__fail(TESS_ENOSYS, "host kernel: no CPU BLAS loaded");
    if (k->m < 0 || k->n < 0 || k->k < 0)
        return tess__fail(TESS_EINVAL, "host kernel: negative size");
    return run_dims(b, k, HK_INT);
}
