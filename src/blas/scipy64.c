/* src/blas/scipy64.c: the drop-in's door for numpy's and scipy's pip wheels, which call
 * their bundled OpenBLAS under renamed symbols. numpy (>= 2.0, ILP64 library
 * libscipy_openblas64_): scipy_cblas_<p>gemm64_ and scipy_cblas_<p>syrk64_ (`a @ b`,
 * `a @ a.T`), and the LAPACK routines scipy_<p>potrf_64_ (numpy.linalg.cholesky),
 * scipy_<p>getrf_64_ (numpy.linalg.det, slogdet) and scipy_<p>gesv_64_ (numpy.linalg.solve,
 * inv), Fortran convention with 64-bit INTEGERs (IPIV too). scipy (LP64 library
 * libscipy_openblas): scipy_<p>getrf_ (scipy.linalg.lu_factor, ...), Fortran convention with
 * 32-bit INTEGERs. Owns those 28 symbols and their next definitions, nothing else. A BLAS
 * call is folded as the CBLAS door folds it (cblas.c), a LAPACK call taken as the Fortran
 * door takes it (fortran.c); each goes the one checked path (check.c), then routed
 * (route.c). What stays on the CPU runs on the wheel's own OpenBLAS with the folded
 * arguments (the wheel's library stays the CPU baseline); a call netlib or LAPACK rejects is
 * passed to it unchanged (it reports and sets INFO); a call whose arrays cannot be addressed
 * is refused here first. The next definition (tess__blas_next: the wheels' modules are
 * dlopen'ed RTLD_LOCAL, so the loaded objects are walked): without one the call is an
 * ordinary CBLAS or Fortran LAPACK call.
 */
#include <cblas.h>
#include <pthread.h>
#include <stdio.h>

#include "blas.h"

typedef int64_t i64;

enum { SLOT_GEMM, SLOT_SYRK, SLOT_POTRF, SLOT_GETRF, SLOT_GESV, SLOT_GETRF32, NSLOTS };
static const char *const slot_name[NSLOTS] = {"scipy_cblas_%cgemm64_", "scipy_cblas_%csyrk64_",
                                              "scipy_%cpotrf_64_",     "scipy_%cgetrf_64_",
                                              "scipy_%cgesv_64_",      "scipy_%cgetrf_"};
static void *next_fn[NSLOTS][4];
static pthread_once_t next_once = PTHREAD_ONCE_INIT;

static void next_load(void) {
    for (int s = 0; s < NSLOTS; s++)
        for (int d = 0; d < 4; d++) {
            char name[40];
            snprintf(name, sizeof name, slot_name[s], tess__blas_prefix((tess_dtype_t)d));
            next_fn[s][d] = tess__blas_next(name);
        }
}

static void *next(int slot, tess_dtype_t dt) {
    pthread_once(&next_once, next_load);
    return next_fn[slot][dt];
}

/* 1: the caller passes its original call to the next definition (an argument netlib
 * rejects: that library reports it). 0: handled here (run, or a span refused). */
static int door(struct tess__blas_call *c, int layout, int e0, int e1, void *nx,
                void (*fwd)(const struct tess__blas_call *)) {
    const int e[4] = {e0, e1, 0, 0};
    if (!nx) {
        tess__blas_cblas_call(c, layout, e);
        return 0;
    }
    struct tess__blas_bad bad;
    if (tess__blas_fold(c, layout, e, &bad) || tess__blas_check_netlib(c)) return 1;
    c->fwd = fwd;
    tess__blas_submit(c);
    return 0;
}

static enum CBLAS_TRANSPOSE cb_trans(char t) {
    return t == 'N' ? CblasNoTrans : t == 'T' ? CblasTrans : CblasConjTrans;
}
static enum CBLAS_UPLO cb_uplo(char u) { return u == 'U' ? CblasUpper : CblasLower; }

/* The scalar conventions of <cblas.h>: s and d by value, c and z by pointer. ADDR takes a
 * parameter's address for the call record, LOAD turns the record's pointer back. */
#define ADDR_s(x) (&(x))
#define ADDR_d(x) (&(x))
#define ADDR_c(x) (x)
#define ADDR_z(x) (x)
#define LOAD_s(p) (*(const float *)(p))
#define LOAD_d(p) (*(const double *)(p))
#define LOAD_c(p) (p)
#define LOAD_z(p) (p)

#define E TESS__BLAS_EXPORT

/* scipy_cblas_<p>gemm64_(order, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc) */
#define GEMM64(p, ST, DT)                                                                          \
    typedef void (*p##gemm64_fn)(int, int, int, i64, i64, i64, ST, const void *, i64,              \
                                 const void *, i64, ST, void *, i64);                              \
    static void p##gemm64_fwd(const struct tess__blas_call *c) {                                   \
        ((p##gemm64_fn)next(SLOT_GEMM, DT))(CblasColMajor, cb_trans(c->ta), cb_trans(c->tb), c->m, \
                                            c->n, c->k, LOAD_##p(c->alpha), c->A, c->lda, c->B,    \
                                            c->ldb, LOAD_##p(c->beta), c->C, c->ldc);              \
    }                                                                                              \
    E void scipy_cblas_##p##gemm64_(int o, int ta, int tb, i64 m, i64 n, i64 k, ST alpha,          \
                                    const void *A, i64 lda, const void *B, i64 ldb, ST beta,       \
                                    void *C, i64 ldc) {                                            \
        void *nx = next(SLOT_GEMM, DT);                                                            \
        struct tess__blas_call c = tess__blas_operands(TESS__BLAS_GEMM, DT, m, n, k,               \
                                                       ADDR_##p(alpha), A, lda, B, ldb,            \
                                                       ADDR_##p(beta), C, ldc);                    \
        if (door(&c, o, ta, tb, nx, p##gemm64_fwd))                                                \
            ((p##gemm64_fn)nx)(o, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);           \
    }

/* scipy_cblas_<p>syrk64_(order, uplo, trans, n, k, alpha, A, lda, beta, C, ldc) */
#define SYRK64(p, ST, DT)                                                                          \
    typedef void (*p##syrk64_fn)(int, int, int, i64, i64, ST, const void *, i64, ST, void *, i64); \
    static void p##syrk64_fwd(const struct tess__blas_call *c) {                                   \
        ((p##syrk64_fn)next(SLOT_SYRK, DT))(CblasColMajor, cb_uplo(c->uplo), cb_trans(c->ta),      \
                                            c->n, c->k, LOAD_##p(c->alpha), c->A, c->lda,          \
                                            LOAD_##p(c->beta), c->C, c->ldc);                      \
    }                                                                                              \
    E void scipy_cblas_##p##syrk64_(int o, int u, int t, i64 n, i64 k, ST alpha, const void *A,    \
                                    i64 lda, ST beta, void *C, i64 ldc) {                          \
        void *nx = next(SLOT_SYRK, DT);                                                            \
        struct tess__blas_call c = tess__blas_operands(TESS__BLAS_SYRK, DT, n, n, k,               \
                                                       ADDR_##p(alpha), A, lda, NULL, 0,           \
                                                       ADDR_##p(beta), C, ldc);                    \
        if (door(&c, o, u, t, nx, p##syrk64_fwd))                                                  \
            ((p##syrk64_fn)nx)(o, u, t, n, k, alpha, A, lda, beta, C, ldc);                        \
    }

GEMM64(s, float, TESS_S)
GEMM64(d, double, TESS_D)
GEMM64(c, const void *, TESS_C)
GEMM64(z, const void *, TESS_Z)
SYRK64(s, float, TESS_S)
SYRK64(d, double, TESS_D)
SYRK64(c, const void *, TESS_C)
SYRK64(z, const void *, TESS_Z)

/* A LAPACK call c of a door whose next definition is nx: 1 when the caller passes its
 * original call to nx (an argument LAPACK rejects: that library reports it and sets INFO),
 * 0 when handled here (run, or a span refused). */
static int lapack_door(struct tess__lapack_call *c, void *nx,
                       int64_t (*fwd)(const struct tess__lapack_call *)) {
    if (nx && tess__lapack_check_netlib(c)) return 1;
    c->fwd = nx ? fwd : NULL, c->next = nx;
    tess__lapack_submit(c);
    return 0;
}

/* scipy_<p>potrf_64_(uplo, n, A, lda, info): ?POTRF with 64-bit INTEGERs. numpy declares it
 * without the hidden length of UPLO; whatever comes is passed on unread. */
typedef void potrf64_fn(const char *uplo, const i64 *n, void *A, const i64 *lda, i64 *info,
                        size_t luplo);
static int64_t potrf64_fwd(const struct tess__lapack_call *c) {
    i64 n = c->n, lda = c->lda, info = 0;
    char uplo = c->uplo;
    ((potrf64_fn *)c->next)(&uplo, &n, c->A, &lda, &info, 1);
    return info;
}
#define POTRF64(p, DT)                                                                             \
    E void scipy_##p##potrf_64_(const char *uplo, const i64 *n, void *A, const i64 *lda,           \
                                i64 *info, size_t lu) {                                            \
        void *nx = next(SLOT_POTRF, DT);                                                           \
        struct tess__lapack_call c = tess__lapack_operands(TESS__LAPACK_POTRF, DT, uplo, *n, 0, A, \
                                                           *lda, NULL, 0, info, 1);                \
        if (lapack_door(&c, nx, potrf64_fwd)) ((potrf64_fn *)nx)(uplo, n, A, lda, info, lu);       \
    }

POTRF64(s, TESS_S)
POTRF64(d, TESS_D)
POTRF64(c, TESS_C)
POTRF64(z, TESS_Z)

/* scipy_<p>getrf_64_(m, n, A, lda, ipiv, info) and scipy_<p>gesv_64_(n, nrhs, A, lda, ipiv,
 * B, ldb, info): ?GETRF and ?GESV with 64-bit INTEGERs, IPIV included (numpy's
 * _umath_linalg: det and slogdet factor with getrf; solve and inv call gesv, inv with B the
 * identity). */
typedef void getrf64_fn(const i64 *m, const i64 *n, void *A, const i64 *lda, i64 *ipiv, i64 *info);
typedef void gesv64_fn(const i64 *n, const i64 *nrhs, void *A, const i64 *lda, i64 *ipiv, void *B,
                       const i64 *ldb, i64 *info);
static int64_t getrf64_fwd(const struct tess__lapack_call *c) {
    i64 m = c->m, n = c->n, lda = c->lda, info = 0;
    ((getrf64_fn *)c->next)(&m, &n, c->A, &lda, c->ipiv, &info);
    return info;
}
static int64_t gesv64_fwd(const struct tess__lapack_call *c) {
    i64 n = c->n, nrhs = c->nrhs, lda = c->lda, ldb = c->ldb, info = 0;
    void *getrf = next(SLOT_GETRF, c->dt);
    if (nrhs == 0 && getrf) /* reference LAPACK's ?GESV factors A; OpenBLAS's returns */
        ((getrf64_fn *)getrf)(&n, &n, c->A, &lda, c->ipiv, &info);
    else
        ((gesv64_fn *)c->next)(&n, &nrhs, c->A, &lda, c->ipiv, c->B, &ldb, &info);
    return info;
}
/* scipy_<p>getrf_(m, n, A, lda, ipiv, info): scipy's wheel, ?GETRF with 32-bit INTEGERs */
typedef void getrf32_fn(const int *m, const int *n, void *A, const int *lda, int *ipiv, int *info);
static int64_t getrf32_fwd(const struct tess__lapack_call *c) {
    int m = (int)c->m, n = (int)c->n, lda = (int)c->lda, info = 0;
    ((getrf32_fn *)c->next)(&m, &n, c->A, &lda, c->ipiv, &info);
    return info;
}
#define LU64(p, DT)                                                                               \
    E void scipy_##p##getrf_64_(const i64 *m, const i64 *n, void *A, const i64 *lda, i64 *ipiv,   \
                                i64 *info) {                                                      \
        void *nx = next(SLOT_GETRF, DT);                                                          \
        struct tess__lapack_call c = tess__lapack_lu_operands(                                    \
            TESS__LAPACK_GETRF, DT, NULL, *m, *n, 0, A, *lda, ipiv, NULL, 0, info, 1);            \
        if (lapack_door(&c, nx, getrf64_fwd)) ((getrf64_fn *)nx)(m, n, A, lda, ipiv, info);       \
    }                                                                                             \
    E void scipy_##p##gesv_64_(const i64 *n, const i64 *nrhs, void *A, const i64 *lda, i64 *ipiv, \
                               void *B, const i64 *ldb, i64 *info) {                              \
        void *nx = next(SLOT_GESV, DT);                                                           \
        struct tess__lapack_call c = tess__lapack_lu_operands(                                    \
            TESS__LAPACK_GESV, DT, NULL, *n, *n, *nrhs, A, *lda, ipiv, B, *ldb, info, 1);         \
        if (lapack_door(&c, nx, gesv64_fwd))                                                      \
            ((gesv64_fn *)nx)(n, nrhs, A, lda, ipiv, B, ldb, info);                               \
    }                                                                                             \
    E void scipy_##p##getrf_(const int *m, const int *n, void *A, const int *lda, int *ipiv,      \
                             int *info) {                                                         \
        void *nx = next(SLOT_GETRF32, DT);                                                        \
        struct tess__lapack_call c = tess__lapack_lu_operands(                                    \
            TESS__LAPACK_GETRF, DT, NULL, *m, *n, 0, A, *lda, ipiv, NULL, 0, info, 0);            \
        if (lapack_door(&c, nx, getrf32_fwd)) ((getrf32_fn *)nx)(m, n, A, lda, ipiv, info);       \
    }

LU64(s, TESS_S)
LU64(d, TESS_D)
LU64(c, TESS_C)
LU64(z, TESS_Z)
