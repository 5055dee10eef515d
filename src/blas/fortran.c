/* src/blas/fortran.c: the netlib Fortran level-3 symbols of the drop-in library, sgemm_ to
 * ztrsm_ (30 routines), LAPACK's Cholesky routines ?potrf_, ?potrs_, ?posv_ (12) and its LU
 * routines ?getrf_, ?getrs_, ?gesv_ (12), in the LP64 gfortran convention: every argument by
 * reference, 32-bit INTEGERs (IPIV too), one hidden length per CHARACTER argument at the end
 * (accepted, never read: only the first character counts, case-insensitive, as netlib's
 * LSAME does).
 *
 * Owns only the translation of arguments into a struct tess__blas_call (LAPACK: struct
 * tess__lapack_call, with the next definition of its symbol, the program's own LAPACK, as its
 * CPU path); checks and error reports live in check.c, routing in route.c. Each routine is
 * one line of a per-family macro; the families differ only in which arguments exist.
 */
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>

#include "blas.h"

typedef int f_int;    /* INTEGER of LP64 netlib BLAS */
typedef size_t f_len; /* gfortran's hidden CHARACTER length */

/* The one checked path (check.c): report to the program's XERBLA with the Fortran
 * position, or run. The call's door is TESS__BLAS_DOOR_FORTRAN (0). */
static void submit(const struct tess__blas_call *c) { tess__blas_submit(c); }

#define U(p) tess__blas_upper(*(p))

/* ?GEMM(TRANSA, TRANSB, M, N, K, ALPHA, A, LDA, B, LDB, BETA, C, LDC) */
#define GEMM(pre, T, DT)                                                                           \
    TESS__BLAS_EXPORT void pre##gemm_(                                                             \
        const char *ta, const char *tb, const f_int *m, const f_int *n, const f_int *k,            \
        const T *alpha, const T *A, const f_int *lda, const T *B, const f_int *ldb, const T *beta, \
        T *C, const f_int *ldc, f_len lta, f_len ltb) {                                            \
        struct tess__blas_call c = tess__blas_operands(TESS__BLAS_GEMM, DT, *m, *n, *k, alpha, A,  \
                                                       *lda, B, *ldb, beta, C, *ldc);              \
        c.ta = U(ta), c.tb = U(tb);                                                                \
        submit(&c);                                                                                \
    }

/* ?SYMM / ?HEMM(SIDE, UPLO, M, N, ALPHA, A, LDA, B, LDB, BETA, C, LDC) */
#define SYMM(name, KIND, T, DT)                                                                \
    TESS__BLAS_EXPORT void name(const char *side, const char *uplo, const f_int *m,            \
                                const f_int *n, const T *alpha, const T *A, const f_int *lda,  \
                                const T *B, const f_int *ldb, const T *beta, T *C,             \
                                const f_int *ldc, f_len ls, f_len lu) {                        \
        struct tess__blas_call c = tess__blas_operands(KIND, DT, *m, *n, 0, alpha, A, *lda, B, \
                                                       *ldb, beta, C, *ldc);                   \
        c.side = U(side), c.uplo = U(uplo);                                                    \
        submit(&c);                                                                            \
    }

/* ?SYRK / ?HERK(UPLO, TRANS, N, K, ALPHA, A, LDA, BETA, C, LDC); RT is the scalar type
 * (real for HERK) */
#define SYRK(name, KIND, T, RT, DT)                                                                \
    TESS__BLAS_EXPORT void name(const char *uplo, const char *trans, const f_int *n,               \
                                const f_int *k, const RT *alpha, const T *A, const f_int *lda,     \
                                const RT *beta, T *C, const f_int *ldc, f_len lu, f_len lt) {      \
        struct tess__blas_call c = tess__blas_operands(KIND, DT, *n, *n, *k, alpha, A, *lda, NULL, \
                                                       0, beta, C, *ldc);                          \
        c.uplo = U(uplo), c.ta = U(trans);                                                         \
        submit(&c);                                                                                \
    }

/* ?SYR2K / ?HER2K(UPLO, TRANS, N, K, ALPHA, A, LDA, B, LDB, BETA, C, LDC); BT is beta's
 * type (real for HER2K) */
#define SYR2K(name, KIND, T, BT, DT)                                                            \
    TESS__BLAS_EXPORT void name(const char *uplo, const char *trans, const f_int *n,            \
                                const f_int *k, const T *alpha, const T *A, const f_int *lda,   \
                                const T *B, const f_int *ldb, const BT *beta, T *C,             \
                                const f_int *ldc, f_len lu, f_len lt) {                         \
        struct tess__blas_call c = tess__blas_operands(KIND, DT, *n, *n, *k, alpha, A, *lda, B, \
                                                       *ldb, beta, C, *ldc);                    \
        c.uplo = U(uplo), c.ta = U(trans);                                                      \
        submit(&c);                                                                             \
    }

/* ?TRMM / ?TRSM(SIDE, UPLO, TRANSA, DIAG, M, N, ALPHA, A, LDA, B, LDB) */
#define TRMM(name, KIND, T, DT)                                                                   \
    TESS__BLAS_EXPORT void name(const char *side, const char *uplo, const char *transa,           \
                                const char *diag, const f_int *m, const f_int *n, const T *alpha, \
                                const T *A, const f_int *lda, T *B, const f_int *ldb, f_len ls,   \
                                f_len lu, f_len lt, f_len ld) {                                   \
        struct tess__blas_call c = tess__blas_operands(KIND, DT, *m, *n, 0, alpha, A, *lda, B,    \
                                                       *ldb, NULL, B, *ldb);                      \
        c.side = U(side), c.uplo = U(uplo), c.ta = U(transa), c.diag = U(diag);                   \
        submit(&c);                                                                               \
    }

/* complex scalars and elements are interleaved pairs: void keeps them opaque */
GEMM(s, float, TESS_S)
GEMM(d, double, TESS_D)
GEMM(c, void, TESS_C)
GEMM(z, void, TESS_Z)

SYMM(ssymm_, TESS__BLAS_SYMM, float, TESS_S)
SYMM(dsymm_, TESS__BLAS_SYMM, double, TESS_D)
SYMM(csymm_, TESS__BLAS_SYMM, void, TESS_C)
SYMM(zsymm_, TESS__BLAS_SYMM, void, TESS_Z)
SYMM(chemm_, TESS__BLAS_HEMM, void, TESS_C)
SYMM(zhemm_, TESS__BLAS_HEMM, void, TESS_Z)

SYRK(ssyrk_, TESS__BLAS_SYRK, float, float, TESS_S)
SYRK(dsyrk_, TESS__BLAS_SYRK, double, double, TESS_D)
SYRK(csyrk_, TESS__BLAS_SYRK, void, void, TESS_C)
SYRK(zsyrk_, TESS__BLAS_SYRK, void, void, TESS_Z)
SYRK(cherk_, TESS__BLAS_HERK, void, float, TESS_C)
SYRK(zherk_, TESS__BLAS_HERK, void, double, TESS_Z)

SYR2K(ssyr2k_, TESS__BLAS_SYR2K, float, float, TESS_S)
SYR2K(dsyr2k_, TESS__BLAS_SYR2K, double, double, TESS_D)
SYR2K(csyr2k_, TESS__BLAS_SYR2K, void, void, TESS_C)
SYR2K(zsyr2k_, TESS__BLAS_SYR2K, void, void, TESS_Z)
SYR2K(cher2k_, TESS__BLAS_HER2K, void, float, TESS_C)
SYR2K(zher2k_, TESS__BLAS_HER2K, void, double, TESS_Z)

TRMM(strmm_, TESS__BLAS_TRMM, float, TESS_S)
TRMM(dtrmm_, TESS__BLAS_TRMM, double, TESS_D)
TRMM(ctrmm_, TESS__BLAS_TRMM, void, TESS_C)
TRMM(ztrmm_, TESS__BLAS_TRMM, void, TESS_Z)
TRMM(strsm_, TESS__BLAS_TRSM, float, TESS_S)
TRMM(dtrsm_, TESS__BLAS_TRSM, double, TESS_D)
TRMM(ctrsm_, TESS__BLAS_TRSM, void, TESS_C)
TRMM(ztrsm_, TESS__BLAS_TRSM, void, TESS_Z)

/* ---- LAPACK ------------------------------------------------------------------------------ */

/* The next definitions of the 24 LAPACK names (the program's LAPACK), looked up once. */
static void *lapack_next[TESS__LAPACK_NKINDS][4];
static pthread_once_t lapack_once = PTHREAD_ONCE_INIT;

static void lapack_load(void) {
    for (int k = 0; k < TESS__LAPACK_NKINDS; k++)
        for (int d = 0; d < 4; d++) {
            char name[16];
            snprintf(name, sizeof name, "%c%s_", tess__blas_prefix((tess_dtype_t)d),
                     tess__lapack_kind_name[k]);
            lapack_next[k][d] = tess__blas_next(name);
        }
}

typedef void potrf_fn(const char *uplo, const f_int *n, void *A, const f_int *lda, f_int *info,
                      f_len lu);
typedef void solve_fn(const char *uplo, const f_int *n, const f_int *nrhs, void *A,
                      const f_int *lda, void *B, const f_int *ldb, f_int *info, f_len lu);
typedef void getrf_fn(const f_int *m, const f_int *n, void *A, const f_int *lda, f_int *ipiv,
                      f_int *info);
typedef void getrs_fn(const char *trans, const f_int *n, const f_int *nrhs, const void *A,
                      const f_int *lda, const f_int *ipiv, void *B, const f_int *ldb, f_int *info,
                      f_len lt);
typedef void gesv_fn(const f_int *n, const f_int *nrhs, void *A, const f_int *lda, f_int *ipiv,
                     void *B, const f_int *ldb, f_int *info);

/* The CPU path: the call on the program's own LAPACK. */
static int64_t lapack_fwd(const struct tess__lapack_call *c) {
    f_int m = (f_int)c->m, n = (f_int)c->n, nrhs = (f_int)c->nrhs, lda = (f_int)c->lda;
    f_int ldb = (f_int)c->ldb, info = 0;
    char uplo = c->uplo, trans = c->trans;
    switch (c->kind) {
    case TESS__LAPACK_POTRF: ((potrf_fn *)c->next)(&uplo, &n, c->A, &lda, &info, 1); break;
    case TESS__LAPACK_POTRS:
    case TESS__LAPACK_POSV:
        ((solve_fn *)c->next)(&uplo, &n, &nrhs, c->A, &lda, c->B, &ldb, &info, 1);
        break;
    case TESS__LAPACK_GETRF: ((getrf_fn *)c->next)(&m, &n, c->A, &lda, c->ipiv, &info); break;
    case TESS__LAPACK_GETRS:
        ((getrs_fn *)c->next)(&trans, &n, &nrhs, c->A, &lda, c->ipiv, c->B, &ldb, &info, 1);
        break;
    case TESS__LAPACK_GESV:
        /* without a right-hand side reference LAPACK's ?GESV still factors A; OpenBLAS's
         * returns at once: the program's ?getrf_ does what reference LAPACK does */
        if (nrhs == 0 && lapack_next[TESS__LAPACK_GETRF][c->dt])
            ((getrf_fn *)lapack_next[TESS__LAPACK_GETRF][c->dt])(&n, &n, c->A, &lda, c->ipiv,
                                                                 &info);
        else
            ((gesv_fn *)c->next)(&n, &nrhs, c->A, &lda, c->ipiv, c->B, &ldb, &info);
        break;
    case TESS__LAPACK_NKINDS: break;
    }
    return info;
}

static void lapack_submit(struct tess__lapack_call *c) {
    pthread_once(&lapack_once, lapack_load);
    c->next = lapack_next[c->kind][c->dt];
    c->fwd = c->next ? lapack_fwd : NULL;
    tess__lapack_submit(c);
}

/* ?POTRF(UPLO, N, A, LDA, INFO) */
#define POTRF(p, DT)                                                                               \
    TESS__BLAS_EXPORT void p##potrf_(const char *uplo, const f_int *n, void *A, const f_int *lda,  \
                                     f_int *info, f_len lu) {                                      \
        struct tess__lapack_call c = tess__lapack_operands(TESS__LAPACK_POTRF, DT, uplo, *n, 0, A, \
                                                           *lda, NULL, 0, info, 0);                \
        lapack_submit(&c);                                                                         \
    }

/* ?POTRS / ?POSV(UPLO, N, NRHS, A, LDA, B, LDB, INFO); POTRS reads A, POSV factors it */
#define SOLVE(name, KIND, DT, CA)                                                                \
    TESS__BLAS_EXPORT void name(const char *uplo, const f_int *n, const f_int *nrhs, CA void *A, \
                                const f_int *lda, void *B, const f_int *ldb, f_int *info,        \
                                f_len lu) {                                                      \
        struct tess__lapack_call c = tess__lapack_operands(KIND, DT, uplo, *n, *nrhs, (void *)A, \
                                                           *lda, B, *ldb, info, 0);              \
        lapack_submit(&c);                                                                       \
    }

POTRF(s, TESS_S)
POTRF(d, TESS_D)
POTRF(c, TESS_C)
POTRF(z, TESS_Z)

SOLVE(spotrs_, TESS__LAPACK_POTRS, TESS_S, const)
SOLVE(dpotrs_, TESS__LAPACK_POTRS, TESS_D, const)
SOLVE(cpotrs_, TESS__LAPACK_POTRS, TESS_C, const)
SOLVE(zpotrs_, TESS__LAPACK_POTRS, TESS_Z, const)
SOLVE(sposv_, TESS__LAPACK_POSV, TESS_S, )
SOLVE(dposv_, TESS__LAPACK_POSV, TESS_D, )
SOLVE(cposv_, TESS__LAPACK_POSV, TESS_C, )
SOLVE(zposv_, TESS__LAPACK_POSV, TESS_Z, )

/* ?GETRF(M, N, A, LDA, IPIV, INFO); ?GETRS(TRANS, N, NRHS, A, LDA, IPIV, B, LDB, INFO), A
 * and IPIV read; ?GESV(N, NRHS, A, LDA, IPIV, B, LDB, INFO) */
#define LU(p, DT)                                                                                 \
    TESS__BLAS_EXPORT void p##getrf_(const f_int *m, const f_int *n, void *A, const f_int *lda,   \
                                     f_int *ipiv, f_int *info) {                                  \
        struct tess__lapack_call c = tess__lapack_lu_operands(                                    \
            TESS__LAPACK_GETRF, DT, NULL, *m, *n, 0, A, *lda, ipiv, NULL, 0, info, 0);            \
        lapack_submit(&c);                                                                        \
    }                                                                                             \
    TESS__BLAS_EXPORT void p##getrs_(const char *trans, const f_int *n, const f_int *nrhs,        \
                                     const void *A, const f_int *lda, const f_int *ipiv, void *B, \
                                     const f_int *ldb, f_int *info, f_len lt) {                   \
        struct tess__lapack_call c = tess__lapack_lu_operands(TESS__LAPACK_GETRS, DT, trans, *n,  \
                                                              *n, *nrhs, (void *)A, *lda,         \
                                                              (void *)ipiv, B, *ldb, info, 0);    \
        lapack_submit(&c);                                                                        \
    }                                                                                             \
    TESS__BLAS_EXPORT void p##gesv_(const f_int *n, const f_int *nrhs, void *A, const f_int *lda, \
                                    f_int *ipiv, void *B, const f_int *ldb, f_int *info) {        \
        struct tess__lapack_call c = tess__lapack_lu_operands(                                    \
            TESS__LAPACK_GESV, DT, NULL, *n, *n, *nrhs, A, *lda, ipiv, B, *ldb, info, 0);         \
        lapack_submit(&c);                                                                        \
    }

LU(s, TESS_S)
LU(d, TESS_D)
LU(c, TESS_C)
LU(z, TESS_Z)
