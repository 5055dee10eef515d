/* src/blas/cblas.c: the CBLAS level-3 symbols of the drop-in library, cblas_sgemm to
 * cblas_ztrsm (30 routines), with <cblas.h>'s prototypes (LP64). Owns this translation only.
 * Each call is handled as the reference CBLAS (netlib's, Debian's libblas3) handles it:
 * its C layer checks the layout and the enumerated arguments in order and reports a
 * rejected one to cblas_xerbla with the reference's position (not always the argument's:
 * row-major GEMM's TransB is 2, the SYRK family's Uplo 3, HER2K's 2); row-major folds into
 * the column-major call the reference hands its Fortran routine (operands and dimensions
 * swapped, side and uplo flipped, SYRK-like transposes flipped, HER2K's alpha conjugated);
 * the folded call then goes the one checked path (check.c), which reports as the Fortran
 * routine would. Unlike the reference's column-major ctrmm/ztrmm, a bad Diag ends the call
 * at the report.
 */
#include <cblas.h>
#include <stdio.h>

#include "blas.h"

enum { COL = CblasColMajor, ROW = CblasRowMajor };

/* cblas_<p><kind>, e.g. "cblas_zher2k" */
static void rout_name(char *buf, const struct tess__blas_call *c) {
    const char *k = tess__blas_kind_name[c->kind];
    int i = 0;
    for (const char *p = "cblas_"; *p; p++) buf[i++] = *p;
    buf[i++] = tess__blas_prefix(c->dt);
    while (*k) buf[i++] = *k++;
    buf[i] = '\0';
}

/* The letter of a CBLAS transpose (0 if invalid). */
static char trans_letter(int t) {
    return t == CblasNoTrans ? 'N' : t == CblasTrans ? 'T' : t == CblasConjTrans ? 'C' : 0;
}
static char side_letter(int s, int row) {
    return s == CblasLeft ? (row ? 'R' : 'L') : s == CblasRight ? (row ? 'L' : 'R') : 0;
}
static char uplo_letter(int u, int row) {
    return u == CblasUpper ? (row ? 'L' : 'U') : u == CblasLower ? (row ? 'U' : 'L') : 0;
}

#define BAD_ENUM(p, w, v) return (bad->pos = (p), bad->what = (w), bad->value = (v), (p))

int tess__blas_fold(struct tess__blas_call *c, int layout, const int e[4],
                    struct tess__blas_bad *bad) {
    c->door = TESS__BLAS_DOOR_CBLAS_COL;
    if (layout != COL && layout != ROW) BAD_ENUM(1, "layout", layout);
    int row = layout == ROW;
    if (row) c->door = TESS__BLAS_DOOR_CBLAS_ROW;
    const void *A = c->A, *B = c->B;
    int64_t lda = c->lda, ldb = c->ldb, m = c->m, n = c->n;
    switch (c->kind) {
    case TESS__BLAS_GEMM: {
        char ta = trans_letter(e[0]), tb = trans_letter(e[1]);
        if (!ta) BAD_ENUM(2, "TransA", e[0]);
        if (!tb) BAD_ENUM(row ? 2 : 3, "TransB", e[1]); /* the reference's row-major 2 */
        /* row-major: C^T = op(B)^T op(A)^T on the column-major views */
        c->ta = row ? tb : ta, c->tb = row ? ta : tb;
        c->m = row ? n : m, c->n = row ? m : n;
        c->A = row ? B : A, c->lda = row ? ldb : lda;
        c->B = row ? A : B, c->ldb = row ? lda : ldb;
        return 0;
    }
    case TESS__BLAS_SYMM:
    case TESS__BLAS_HEMM:
        if (!(c->side = side_letter(e[0], row))) BAD_ENUM(2, "Side", e[0]);
        if (!(c->uplo = uplo_letter(e[1], row))) BAD_ENUM(3, "Uplo", e[1]);
        c->m = row ? n : m, c->n = row ? m : n;
        return 0;
    case TESS__BLAS_SYRK:
    case TESS__BLAS_HERK:
    case TESS__BLAS_SYR2K:
    case TESS__BLAS_HER2K: {
        /* c->n holds n, c->k holds k. Column-major passes every transpose on to the
         * Fortran check; row-major flips it: NoTrans to the transposing letter (HERK/HER2K
         * 'C', the others 'T'), Trans and ConjTrans both to 'N'. */
        int herm = tess__blas_herm(c->kind);
        if (!(c->uplo = uplo_letter(e[0], row)))
            BAD_ENUM(row && c->kind != TESS__BLAS_HER2K ? 3 : 2, "Uplo", e[0]);
        char t = trans_letter(e[1]);
        if (row && t) t = t == 'N' ? (herm ? 'C' : 'T') : 'N';
        if (!(c->ta = t)) BAD_ENUM(3, "Trans", e[1]);
        c->m = c->n;
        if (row && c->kind == TESS__BLAS_HER2K) {
            /* row major: C^T = conj(alpha) op(A~) op(B~)^H + alpha ..., so alpha is
             * conjugated */
            tess__scalar_load(c->dt, &c->scratch, c->alpha);
            if (c->dt == TESS_C)
                c->scratch.c[1] = -c->scratch.c[1];
            else
                c->scratch.z[1] = -c->scratch.z[1];
            c->alpha = &c->scratch;
        }
        return 0;
    }
    case TESS__BLAS_TRMM:
    case TESS__BLAS_TRSM:
        if (!(c->side = side_letter(e[0], row))) BAD_ENUM(2, "Side", e[0]);
        if (!(c->uplo = uplo_letter(e[1], row))) BAD_ENUM(3, "Uplo", e[1]);
        if (!(c->ta = trans_letter(e[2]))) BAD_ENUM(4, "Trans", e[2]);
        c->diag = e[3] == CblasUnit ? 'U' : e[3] == CblasNonUnit ? 'N' : 0;
        if (!c->diag) BAD_ENUM(5, "Diag", e[3]);
        c->m = row ? n : m, c->n = row ? m : n;
        c->C = (void *)B, c->ldc = ldb; /* B is in/out: also named C */
        return 0;
    case TESS__BLAS_NKINDS: break;
    }
    BAD_ENUM(1, "layout", layout);
}

void tess__blas_cblas_call(struct tess__blas_call *c, int layout, const int e[4]) {
    struct tess__blas_bad bad;
    if (tess__blas_fold(c, layout, e, &bad)) {
        char rout[16], form[48];
        rout_name(rout, c);
        snprintf(form, sizeof form, "Illegal %s setting, %%d\n", bad.what);
        tess__blas_cblas_xerbla(c->door == TESS__BLAS_DOOR_CBLAS_ROW, bad.pos, rout, form,
                                bad.value);
        return;
    }
    tess__blas_submit(c);
}

static void cblas_call(struct tess__blas_call *c, int layout, int e0, int e1, int e2, int e3) {
    const int e[4] = {e0, e1, e2, e3};
    tess__blas_cblas_call(c, layout, e);
}

static void gemm(tess_dtype_t dt, int layout, int transa, int transb, int m, int n, int k,
                 const void *alpha, const void *A, int lda, const void *B, int ldb,
                 const void *beta, void *C, int ldc) {
    struct tess__blas_call c = tess__blas_operands(TESS__BLAS_GEMM, dt, m, n, k, alpha, A, lda, B,
                                                   ldb, beta, C, ldc);
    cblas_call(&c, layout, transa, transb, 0, 0);
}

static void symm(enum tess__blas_kind kind, tess_dtype_t dt, int layout, int side, int uplo, int m,
                 int n, const void *alpha, const void *A, int lda, const void *B, int ldb,
                 const void *beta, void *C, int ldc) {
    struct tess__blas_call c = tess__blas_operands(kind, dt, m, n, 0, alpha, A, lda, B, ldb, beta,
                                                   C, ldc);
    cblas_call(&c, layout, side, uplo, 0, 0);
}

/* SYRK, HERK, SYR2K, HER2K (B NULL for the rank-k ones) */
static void rank_k(enum tess__blas_kind kind, tess_dtype_t dt, int layout, int uplo, int trans,
                   int n, int k, const void *alpha, const void *A, int lda, const void *B, int ldb,
                   const void *beta, void *C, int ldc) {
    struct tess__blas_call c = tess__blas_operands(kind, dt, n, n, k, alpha, A, lda, B, ldb, beta,
                                                   C, ldc);
    cblas_call(&c, layout, uplo, trans, 0, 0);
}

static void trmm(enum tess__blas_kind kind, tess_dtype_t dt, int layout, int side, int uplo,
                 int transa, int diag, int m, int n, const void *alpha, const void *A, int lda,
                 void *B, int ldb) {
    struct tess__blas_call c = tess__blas_operands(kind, dt, m, n, 0, alpha, A, lda, B, ldb, NULL,
                                                   NULL, 0);
    cblas_call(&c, layout, side, uplo, transa, diag);
}

/* ---- the exported symbols: <cblas.h>'s prototypes ------------------------------------- */

#define E TESS__BLAS_EXPORT
typedef enum CBLAS_ORDER O_;
typedef enum CBLAS_TRANSPOSE T_;
typedef enum CBLAS_SIDE S_;
typedef enum CBLAS_UPLO U_;
typedef enum CBLAS_DIAG D_;

E void cblas_sgemm(const O_ o, const T_ ta, const T_ tb, const blasint m, const blasint n,
                   const blasint k, const float alpha, const float *A, const blasint lda,
                   const float *B, const blasint ldb, const float beta, float *C,
                   const blasint ldc) {
    gemm(TESS_S, o, ta, tb, m, n, k, &alpha, A, lda, B, ldb, &beta, C, ldc);
}
E void cblas_dgemm(const O_ o, const T_ ta, const T_ tb, const blasint m, const blasint n,
                   const blasint k, const double alpha, const double *A, const blasint lda,
                   const double *B, const blasint ldb, const double beta, double *C,
                   const blasint ldc) {
    gemm(TESS_D, o, ta, tb, m, n, k, &alpha, A, lda, B, ldb, &beta, C, ldc);
}
E void cblas_cgemm(const O_ o, const T_ ta, const T_ tb, const blasint m, const blasint n,
                   const blasint k, const void *alpha, const void *A, const blasint lda,
                   const void *B, const blasint ldb, const void *beta, void *C, const blasint ldc) {
    gemm(TESS_C, o, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}
E void cblas_zgemm(const O_ o, const T_ ta, const T_ tb, const blasint m, const blasint n,
                   const blasint k, const void *alpha, const void *A, const blasint lda,
                   const void *B, const blasint ldb, const void *beta, void *C, const blasint ldc) {
    gemm(TESS_Z, o, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

#define SYMM_R(name, KIND, T, DT)                                                            \
    E void name(const O_ o, const S_ s, const U_ u, const blasint m, const blasint n,        \
                const T alpha, const T *A, const blasint lda, const T *B, const blasint ldb, \
                const T beta, T *C, const blasint ldc) {                                     \
        symm(KIND, DT, o, s, u, m, n, &alpha, A, lda, B, ldb, &beta, C, ldc);                \
    }
#define SYMM_C(name, KIND, DT)                                                        \
    E void name(const O_ o, const S_ s, const U_ u, const blasint m, const blasint n, \
                const void *alpha, const void *A, const blasint lda, const void *B,   \
                const blasint ldb, const void *beta, void *C, const blasint ldc) {    \
        symm(KIND, DT, o, s, u, m, n, alpha, A, lda, B, ldb, beta, C, ldc);           \
    }
SYMM_R(cblas_ssymm, TESS__BLAS_SYMM, float, TESS_S)
SYMM_R(cblas_dsymm, TESS__BLAS_SYMM, double, TESS_D)
SYMM_C(cblas_csymm, TESS__BLAS_SYMM, TESS_C)
SYMM_C(cblas_zsymm, TESS__BLAS_SYMM, TESS_Z)
SYMM_C(cblas_chemm, TESS__BLAS_HEMM, TESS_C)
SYMM_C(cblas_zhemm, TESS__BLAS_HEMM, TESS_Z)

/* SYRK: T the element type as CBLAS passes a scalar (float, double, or pointer) */
#define SYRK_R(name, T, DT)                                                                 \
    E void name(const O_ o, const U_ u, const T_ t, const blasint n, const blasint k,       \
                const T alpha, const T *A, const blasint lda, const T beta, T *C,           \
                const blasint ldc) {                                                        \
        rank_k(TESS__BLAS_SYRK, DT, o, u, t, n, k, &alpha, A, lda, NULL, 0, &beta, C, ldc); \
    }
#define SYRK_C(name, DT)                                                                        \
    E void name(const O_ o, const U_ u, const T_ t, const blasint n, const blasint k,           \
                const void *alpha, const void *A, const blasint lda, const void *beta, void *C, \
                const blasint ldc) {                                                            \
        rank_k(TESS__BLAS_SYRK, DT, o, u, t, n, k, alpha, A, lda, NULL, 0, beta, C, ldc);       \
    }
#define HERK(name, RT, DT)                                                                  \
    E void name(const O_ o, const U_ u, const T_ t, const blasint n, const blasint k,       \
                const RT alpha, const void *A, const blasint lda, const RT beta, void *C,   \
                const blasint ldc) {                                                        \
        rank_k(TESS__BLAS_HERK, DT, o, u, t, n, k, &alpha, A, lda, NULL, 0, &beta, C, ldc); \
    }
SYRK_R(cblas_ssyrk, float, TESS_S)
SYRK_R(cblas_dsyrk, double, TESS_D)
SYRK_C(cblas_csyrk, TESS_C)
SYRK_C(cblas_zsyrk, TESS_Z)
HERK(cblas_cherk, float, TESS_C)
HERK(cblas_zherk, double, TESS_Z)

#define SYR2K_R(name, T, DT)                                                                 \
    E void name(const O_ o, const U_ u, const T_ t, const blasint n, const blasint k,        \
                const T alpha, const T *A, const blasint lda, const T *B, const blasint ldb, \
                const T beta, T *C, const blasint ldc) {                                     \
        rank_k(TESS__BLAS_SYR2K, DT, o, u, t, n, k, &alpha, A, lda, B, ldb, &beta, C, ldc);  \
    }
#define SYR2K_C(name, DT)                                                                 \
    E void name(const O_ o, const U_ u, const T_ t, const blasint n, const blasint k,     \
                const void *alpha, const void *A, const blasint lda, const void *B,       \
                const blasint ldb, const void *beta, void *C, const blasint ldc) {        \
        rank_k(TESS__BLAS_SYR2K, DT, o, u, t, n, k, alpha, A, lda, B, ldb, beta, C, ldc); \
    }
#define HER2K(name, RT, DT)                                                                \
    E void name(const O_ o, const U_ u, const T_ t, const blasint n, const blasint k,      \
                const void *alpha, const void *A, const blasint lda, const void *B,        \
                const blasint ldb, const RT beta, void *C, const blasint ldc) {            \
        rank_k(TESS__BLAS_HER2K, DT, o, u, t, n, k, alpha, A, lda, B, ldb, &beta, C, ldc); \
    }
SYR2K_R(cblas_ssyr2k, float, TESS_S)
SYR2K_R(cblas_dsyr2k, double, TESS_D)
SYR2K_C(cblas_csyr2k, TESS_C)
SYR2K_C(cblas_zsyr2k, TESS_Z)
HER2K(cblas_cher2k, float, TESS_C)
HER2K(cblas_zher2k, double, TESS_Z)

#define TRMM_R(name, KIND, T, DT)                                                            \
    E void name(const O_ o, const S_ s, const U_ u, const T_ t, const D_ d, const blasint m, \
                const blasint n, const T alpha, const T *A, const blasint lda, T *B,         \
                const blasint ldb) {                                                         \
        trmm(KIND, DT, o, s, u, t, d, m, n, &alpha, A, lda, B, ldb);                         \
    }
#define TRMM_C(name, KIND, DT)                                                                 \
    E void name(const O_ o, const S_ s, const U_ u, const T_ t, const D_ d, const blasint m,   \
                const blasint n, const void *alpha, const void *A, const blasint lda, void *B, \
                const blasint ldb) {                                                           \
        trmm(KIND, DT, o, s, u, t, d, m, n, alpha, A, lda, B, ldb);                            \
    }
TRMM_R(cblas_strmm, TESS__BLAS_TRMM, float, TESS_S)
TRMM_R(cblas_dtrmm, TESS__BLAS_TRMM, double, TESS_D)
TRMM_C(cblas_ctrmm, TESS__BLAS_TRMM, TESS_C)
TRMM_C(cblas_ztrmm, TESS__BLAS_TRMM, TESS_Z)
TRMM_R(cblas_strsm, TESS__BLAS_TRSM, float, TESS_S)
TRMM_R(cblas_dtrsm, TESS__BLAS_TRSM, double, TESS_D)
TRMM_C(cblas_ctrsm, TESS__BLAS_TRSM, TESS_C)
TRMM_C(cblas_ztrsm, TESS__BLAS_TRSM, TESS_Z)
