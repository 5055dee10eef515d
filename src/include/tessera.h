/* tessera.h: the public C API of tessera, level-3 BLAS on host-resident matrices run by a
 * tile runtime across every GPU (and the CPU cores) of a node.
 *
 * Owns: status codes, the persistent runtime's init/finalize, tess_?gemm and the rest of
 * level 3 (symm/hemm, syrk/herk, syr2k/her2k, trmm, trsm), per-device statistics, the
 * knob table printer. Nothing here knows about devices or tiles.
 *
 * Matrices live in host memory (pinned or pageable) and stay there: the runtime moves tiles
 * to the devices itself. Every routine is synchronous: when it returns, C is final.
 * Calls from several host threads at once are safe.
 */
#ifndef TESSERA_H
#define TESSERA_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define TESS_API __attribute__((visibility("default")))
#else
#define TESS_API
#endif

#define TESS_VERSION_MAJOR 0
#define TESS_VERSION_MINOR 1
#define TESS_VERSION_PATCH 0

/* One list makes the status enum and the messages (tess_strerror). */
#define TESS_STATUS_MAP(X)                           \
    X(OK, 0, "success")                              \
    X(EINVAL, -1, "invalid argument")                \
    X(ENOMEM, -2, "out of memory")                   \
    X(EDEVICE, -3, "device, CUDA or cuBLAS failure") \
    X(ECOMM, -4, "MPI or NCCL failure")              \
    X(EAGAIN, -5, "in flight; poll again")           \
    X(ENODEV, -6, "no usable device")                \
    X(ENOSYS, -7, "not supported by this build")     \
    X(EINTERNAL, -8, "internal error")

typedef enum tess_status {
#define TESS_X_(name, value, msg) TESS_##name = value,
    TESS_STATUS_MAP(TESS_X_)
#undef TESS_X_
} tess_status_t;

/* Message of a status code ("invalid argument"); never NULL. */
TESS_API const char *tess_strerror(int status);
/* Detail of the last failing call made by this thread, naming the argument or the device
 * ("tess_dgemm: argument 9 (lda = 3) must be >= max(1, m) = 5"); "" if none. */
TESS_API const char *tess_last_error(void);

/* CBLAS values, so CBLAS enums can be passed through unchanged. */
typedef enum tess_layout { TESS_ROW_MAJOR = 101, TESS_COL_MAJOR = 102 } tess_layout_t;
typedef enum tess_trans {
    TESS_NO_TRANS = 111,
    TESS_TRANS = 112,
    TESS_CONJ_TRANS = 113
} tess_trans_t;

/* Precisions: float, double, complex float, complex double (interleaved re, im). */
typedef enum tess_dtype { TESS_S = 0, TESS_D = 1, TESS_C = 2, TESS_Z = 3 } tess_dtype_t;

/* Start the runtime: read the knobs (TESSERA_* environment variables, see
 * docs/knobs.md), open the devices, create their streams and heaps. Reference counted:
 * each tess_init needs one tess_finalize. A routine called before tess_init starts the
 * runtime itself; it then lives until the matching finalize or process exit. So does a
 * routine called after the last tess_finalize: it starts a new runtime (knobs read again).
 * After fork() the child does not use the parent's runtime (its threads are not in the
 * child): the child's first call, or tess_init, starts one of its own, which the child
 * finalizes as usual; the parent's runtime goes on unharmed. */
TESS_API int tess_init(void);
/* Drop one reference; the last one joins the workers and frees every device resource.
 * Calls in flight on other threads finish on that runtime first (tess_finalize waits for
 * them, so a distributed call can make it wait long); calls that begin meanwhile wait for
 * the stop and then start a new runtime. Called on a thread that is inside a call (an
 * exit handler of a call that ends the process), it does not wait for that call: the
 * runtime then stops when the call returns.
 * Always TESS_OK; without a reference left it does nothing. */
TESS_API int tess_finalize(void);

/* C = alpha * op(A) * op(B) + beta * C, op(X) = X, X^T or X^H; C is m x n, op(A) m x k,
 * op(B) k x n. Netlib semantics: beta = 0 means C is not read (it may hold NaN); alpha = 0
 * or k = 0 means A and B are not read. Invalid arguments return TESS_EINVAL and write
 * nothing. Complex scalars and matrices are passed by pointer to interleaved pairs. */
TESS_API int tess_sgemm(tess_layout_t layout, tess_trans_t transa, tess_trans_t transb, int64_t m,
                        int64_t n, int64_t k, float alpha, const float *A, int64_t lda,
                        const float *B, int64_t ldb, float beta, float *C, int64_t ldc);
TESS_API int tess_dgemm(tess_layout_t layout, tess_trans_t transa, tess_trans_t transb, int64_t m,
                        int64_t n, int64_t k, double alpha, const double *A, int64_t lda,
                        const double *B, int64_t ldb, double beta, double *C, int64_t ldc);
TESS_API int tess_cgemm(tess_layout_t layout, tess_trans_t transa, tess_trans_t transb, int64_t m,
                        int64_t n, int64_t k, const void *alpha, const void *A, int64_t lda,
                        const void *B, int64_t ldb, const void *beta, void *C, int64_t ldc);
TESS_API int tess_zgemm(tess_layout_t layout, tess_trans_t transa, tess_trans_t transb, int64_t m,
                        int64_t n, int64_t k, const void *alpha, const void *A, int64_t lda,
                        const void *B, int64_t ldb, const void *beta, void *C, int64_t ldc);
/* The same for any precision: alpha and beta point to one scalar of that precision. */
TESS_API int tess_gemm(tess_dtype_t dtype, tess_layout_t layout, tess_trans_t transa,
                       tess_trans_t transb, int64_t m, int64_t n, int64_t k, const void *alpha,
                       const void *A, int64_t lda, const void *B, int64_t ldb, const void *beta,
                       void *C, int64_t ldc);

/* ---- the rest of level 3 (docs/level3.md has the tile algorithms) ----------------------
 * CBLAS argument order and values, int64_t dimensions; real scalars by value, complex ones
 * by pointer to an interleaved pair. Netlib semantics throughout: only the triangle `uplo`
 * of a symmetric/Hermitian/triangular A is read; SYRK-like routines read and write only
 * the triangle `uplo` of C (the other is left byte-for-byte untouched); beta = 0 means C is
 * not read; alpha = 0 means A and B are not read (C = beta C; TRMM/TRSM: B = 0). Invalid
 * arguments return TESS_EINVAL naming the argument and write nothing. */
typedef enum tess_uplo { TESS_UPPER = 121, TESS_LOWER = 122 } tess_uplo_t;
typedef enum tess_diag { TESS_NON_UNIT = 131, TESS_UNIT = 132 } tess_diag_t;
typedef enum tess_side { TESS_LEFT = 141, TESS_RIGHT = 142 } tess_side_t;

/* C = alpha A B + beta C (side TESS_LEFT, A m x m) or alpha B A + beta C (TESS_RIGHT, A
 * n x n); A symmetric (?symm) or Hermitian (?hemm: the imaginary parts of its diagonal are
 * taken as zero), stored in its triangle uplo; B and C m x n. */
TESS_API int tess_ssymm(tess_layout_t layout, tess_side_t side, tess_uplo_t uplo, int64_t m,
                        int64_t n, float alpha, const float *A, int64_t lda, const float *B,
                        int64_t ldb, float beta, float *C, int64_t ldc);
TESS_API int tess_dsymm(tess_layout_t layout, tess_side_t side, tess_uplo_t uplo, int64_t m,
                        int64_t n, double alpha, const double *A, int64_t lda, const double *B,
                        int64_t ldb, double beta, double *C, int64_t ldc);
TESS_API int tess_csymm(tess_layout_t layout, tess_side_t side, tess_uplo_t uplo, int64_t m,
                        int64_t n, const void *alpha, const void *A, int64_t lda, const void *B,
                        int64_t ldb, const void *beta, void *C, int64_t ldc);
TESS_API int tess_zsymm(tess_layout_t layout, tess_side_t side, tess_uplo_t uplo, int64_t m,
                        int64_t n, const void *alpha, const void *A, int64_t lda, const void *B,
                        int64_t ldb, const void *beta, void *C, int64_t ldc);
TESS_API int tess_chemm(tess_layout_t layout, tess_side_t side, tess_uplo_t uplo, int64_t m,
                        int64_t n, const void *alpha, const void *A, int64_t lda, const void *B,
                        int64_t ldb, const void *beta, void *C, int64_t ldc);
TESS_API int tess_zhemm(tess_layout_t layout, tess_side_t side, tess_uplo_t uplo, int64_t m,
                        int64_t n, const void *alpha, const void *A, int64_t lda, const void *B,
                        int64_t ldb, const void *beta, void *C, int64_t ldc);

/* C = alpha op(A) op(A)^T + beta C on the triangle uplo of the n x n C; op(A) = A (n x k,
 * trans TESS_NO_TRANS) or A^T (A k x n, TESS_TRANS; TESS_CONJ_TRANS too for s and d, an
 * error for c and z as in netlib). */
TESS_API int tess_ssyrk(tess_layout_t layout, tess_uplo_t uplo, tess_trans_t trans, int64_t n,
                        int64_t k, float alpha, const float *A, int64_t lda, float beta, float *C,
                        int64_t ldc);
TESS_API int tess_dsyrk(tess_layout_t layout, tess_uplo_t uplo, tess_trans_t trans, int64_t n,
                        int64_t k, double alpha, const double *A, int64_t lda, double beta,
                        double *C, int64_t ldc);
TESS_API int tess_csyrk(tess_layout_t layout, tess_uplo_t uplo, tess_trans_t trans, int64_t n,
                        int64_t k, const void *alpha, const void *A, int64_t lda, const void *beta,
                        void *C, int64_t ldc);
TESS_API int tess_zsyrk(tess_layout_t layout, tess_uplo_t uplo, tess_trans_t trans, int64_t n,
                        int64_t k, const void *alpha, const void *A, int64_t lda, const void *beta,
                        void *C, int64_t ldc);
/* C = alpha op(A) op(A)^H + beta C, alpha and beta real, trans TESS_NO_TRANS or
 * TESS_CONJ_TRANS; the diagonal of C comes out real (imaginary parts set to zero). */
TESS_API int tess_cherk(tess_layout_t layout, tess_uplo_t uplo, tess_trans_t trans, int64_t n,
                        int64_t k, float alpha, const void *A, int64_t lda, float beta, void *C,
                        int64_t ldc);
TESS_API int tess_zherk(tess_layout_t layout, tess_uplo_t uplo, tess_trans_t trans, int64_t n,
                        int64_t k, double alpha, const void *A, int64_t lda, double beta, void *C,
                        int64_t ldc);
/* C = alpha op(A) op(B)^T + alpha op(B) op(A)^T + beta C (syr2k), or
 * alpha op(A) op(B)^H + conj(alpha) op(B) op(A)^H + beta C with real beta (her2k). */
TESS_API int tess_ssyr2k(tess_layout_t layout, tess_uplo_t uplo, tess_trans_t trans, int64_t n,
                         int64_t k, float alpha, const float *A, int64_t lda, const float *B,
                         int64_t ldb, float beta, float *C, int64_t ldc);
TESS_API int tess_dsyr2k(tess_layout_t layout, tess_uplo_t uplo, tess_trans_t trans, int64_t n,
                         int64_t k, double alpha, const double *A, int64_t lda, const double *B,
                         int64_t ldb, double beta, double *C, int64_t ldc);
TESS_API int tess_csyr2k(tess_layout_t layout, tess_uplo_t uplo, tess_trans_t trans, int64_t n,
                         int64_t k, const void *alpha, const void *A, int64_t lda, const void *B,
                         int64_t ldb, const void *beta, void *C, int64_t ldc);
TESS_API int tess_zsyr2k(tess_layout_t layout, tess_uplo_t uplo, tess_trans_t trans, int64_t n,
                         int64_t k, const void *alpha, const void *A, int64_t lda, const void *B,
                         int64_t ldb, const void *beta, void *C, int64_t ldc);
TESS_API int tess_cher2k(tess_layout_t layout, tess_uplo_t uplo, tess_trans_t trans, int64_t n,
                         int64_t k, const void *alpha, const void *A, int64_t lda, const void *B,
                         int64_t ldb, float beta, void *C, int64_t ldc);
TESS_API int tess_zher2k(tess_layout_t layout, tess_uplo_t uplo, tess_trans_t trans, int64_t n,
                         int64_t k, const void *alpha, const void *A, int64_t lda, const void *B,
                         int64_t ldb, double beta, void *C, int64_t ldc);

/* B = alpha op(A) B (side TESS_LEFT, A m x m) or alpha B op(A) (TESS_RIGHT, A n x n), A
 * triangular (uplo; diag TESS_UNIT: unit diagonal, not read), B m x n, in place. */
TESS_API int tess_strmm(tess_layout_t layout, tess_side_t side, tess_uplo_t uplo,
                        tess_trans_t transa, tess_diag_t diag, int64_t m, int64_t n, float alpha,
                        const float *A, int64_t lda, float *B, int64_t ldb);
TESS_API int tess_dtrmm(tess_layout_t layout, tess_side_t side, tess_uplo_t uplo,
                        tess_trans_t transa, tess_diag_t diag, int64_t m, int64_t n, double alpha,
                        const double *A, int64_t lda, double *B, int64_t ldb);
TESS_API int tess_ctrmm(tess_layout_t layout, tess_side_t side, tess_uplo_t uplo,
                        tess_trans_t transa, tess_diag_t diag, int64_t m, int64_t n,
                        const void *alpha, const void *A, int64_t lda, void *B, int64_t ldb);
TESS_API int tess_ztrmm(tess_layout_t layout, tess_side_t side, tess_uplo_t uplo,
                        tess_trans_t transa, tess_diag_t diag, int64_t m, int64_t n,
                        const void *alpha, const void *A, int64_t lda, void *B, int64_t ldb);
/* Solve op(A) X = alpha B (side TESS_LEFT) or X op(A) = alpha B (TESS_RIGHT); X
 * overwrites B. No test for singularity (as in BLAS). */
TESS_API int tess_strsm(tess_layout_t layout, tess_side_t side, tess_uplo_t uplo,
                        tess_trans_t transa, tess_diag_t diag, int64_t m, int64_t n, float alpha,
                        const float *A, int64_t lda, float *B, int64_t ldb);
TESS_API int tess_dtrsm(tess_layout_t layout, tess_side_t side, tess_uplo_t uplo,
                        tess_trans_t transa, tess_diag_t diag, int64_t m, int64_t n, double alpha,
                        const double *A, int64_t lda, double *B, int64_t ldb);
TESS_API int tess_ctrsm(tess_layout_t layout, tess_side_t side, tess_uplo_t uplo,
                        tess_trans_t transa, tess_diag_t diag, int64_t m, int64_t n,
                        const void *alpha, const void *A, int64_t lda, void *B, int64_t ldb);
TESS_API int tess_ztrsm(tess_layout_t layout, tess_side_t side, tess_uplo_t uplo,
                        tess_trans_t transa, tess_diag_t diag, int64_t m, int64_t n,
                        const void *alpha, const void *A, int64_t lda, void *B, int64_t ldb);

/* The same for any precision (dtype first, so every other argument's position is one
 * more than in the typed entry): scalars point to one scalar of that precision, except
 * tess_herk's alpha and beta and tess_her2k's beta, which point to the REAL type (float
 * for TESS_C, double for TESS_Z). tess_hemm, tess_herk and tess_her2k take TESS_C or
 * TESS_Z only. */
TESS_API int tess_symm(tess_dtype_t dtype, tess_layout_t layout, tess_side_t side, tess_uplo_t uplo,
                       int64_t m, int64_t n, const void *alpha, const void *A, int64_t lda,
                       const void *B, int64_t ldb, const void *beta, void *C, int64_t ldc);
TESS_API int tess_hemm(tess_dtype_t dtype, tess_layout_t layout, tess_side_t side, tess_uplo_t uplo,
                       int64_t m, int64_t n, const void *alpha, const void *A, int64_t lda,
                       const void *B, int64_t ldb, const void *beta, void *C, int64_t ldc);
TESS_API int tess_syrk(tess_dtype_t dtype, tess_layout_t layout, tess_uplo_t uplo,
                       tess_trans_t trans, int64_t n, int64_t k, const void *alpha, const void *A,
                       int64_t lda, const void *beta, void *C, int64_t ldc);
TESS_API int tess_herk(tess_dtype_t dtype, tess_layout_t layout, tess_uplo_t uplo,
                       tess_trans_t trans, int64_t n, int64_t k, const void *alpha, const void *A,
                       int64_t lda, const void *beta, void *C, int64_t ldc);
TESS_API int tess_syr2k(tess_dtype_t dtype, tess_layout_t layout, tess_uplo_t uplo,
                        tess_trans_t trans, int64_t n, int64_t k, const void *alpha, const void *A,
                        int64_t lda, const void *B, int64_t ldb, const void *beta, void *C,
                        int64_t ldc);
TESS_API int tess_her2k(tess_dtype_t dtype, tess_layout_t layout, tess_uplo_t uplo,
                        tess_trans_t trans, int64_t n, int64_t k, const void *alpha, const void *A,
                        int64_t lda, const void *B, int64_t ldb, const void *beta, void *C,
                        int64_t ldc);
TESS_API int tess_trmm(tess_dtype_t dtype, tess_layout_t layout, tess_side_t side, tess_uplo_t uplo,
                       tess_trans_t transa, tess_diag_t diag, int64_t m, int64_t n,
                       const void *alpha, const void *A, int64_t lda, void *B, int64_t ldb);
TESS_API int tess_trsm(tess_dtype_t dtype, tess_layout_t layout, tess_side_t side, tess_uplo_t uplo,
                       tess_trans_t transa, tess_diag_t diag, int64_t m, int64_t n,
                       const void *alpha, const void *A, int64_t lda, void *B, int64_t ldb);

/* ---- factorizations (docs/lapack.md) -------------------------------------------------
 * tess_?potrf: LAPACK's ?POTRF, the Cholesky factorization of the Hermitian (symmetric)
 * positive definite n x n matrix A: A = L L^H (uplo TESS_LOWER, L overwrites the lower
 * triangle) or A = U^H U (TESS_UPPER, the upper triangle); the other strict triangle is
 * neither read nor written. The factorization runs as tile tasks on every device (tile
 * POTRF, TRSM, SYRK/HERK and GEMM kernels ordered by their tiles); a small matrix, or a
 * runtime without device memory, goes to the CPU LAPACK. A held matrix (tess_hold) is
 * factored in place on its tiles and stays held.
 * Returns TESS_OK once the call ran, with *info as LAPACK's INFO: 0, or i > 0 when the
 * leading minor of order i is not positive definite (the factorization stopped: the first
 * i - 1 columns (TESS_LOWER) or rows (TESS_UPPER) of the factor are final, the rest of the
 * triangle is unspecified). A bad argument: TESS_EINVAL and *info = -(its position in the
 * typed entry, LAPACKE's numbering: layout 1, uplo 2, n 3, A 4, lda 5), nothing read or
 * written (info NULL: TESS_EINVAL only). A device failure: TESS_EDEVICE, the triangle
 * unspecified. */
TESS_API int tess_spotrf(tess_layout_t layout, tess_uplo_t uplo, int64_t n, float *A, int64_t lda,
                         int64_t *info);
TESS_API int tess_dpotrf(tess_layout_t layout, tess_uplo_t uplo, int64_t n, double *A, int64_t lda,
                         int64_t *info);
TESS_API int tess_cpotrf(tess_layout_t layout, tess_uplo_t uplo, int64_t n, void *A, int64_t lda,
                         int64_t *info);
TESS_API int tess_zpotrf(tess_layout_t layout, tess_uplo_t uplo, int64_t n, void *A, int64_t lda,
                         int64_t *info);
TESS_API int tess_potrf(tess_dtype_t dtype, tess_layout_t layout, tess_uplo_t uplo, int64_t n,
                        void *A, int64_t lda, int64_t *info);
/* tess_?potrs: LAPACK's ?POTRS, A X = B for the n x nrhs B (overwritten by X) with the
 * factor tess_?potrf left in A (uplo as given to it): two triangular solves (tess_trsm).
 * tess_?posv: LAPACK's ?POSV, tess_?potrf then tess_?potrs; with *info > 0 (A not positive
 * definite) B is unchanged. Row-major: B is n x nrhs row-major (ldb >= nrhs), as LAPACKE.
 * Bad arguments: TESS_EINVAL, *info = -(position in the typed entry: layout 1, uplo 2, n 3,
 * nrhs 4, A 5, lda 6, B 7, ldb 8), nothing written. */
TESS_API int tess_potrs(tess_dtype_t dtype, tess_layout_t layout, tess_uplo_t uplo, int64_t n,
                        int64_t nrhs, const void *A, int64_t lda, void *B, int64_t ldb,
                        int64_t *info);
TESS_API int tess_posv(tess_dtype_t dtype, tess_layout_t layout, tess_uplo_t uplo, int64_t n,
                       int64_t nrhs, void *A, int64_t lda, void *B, int64_t ldb, int64_t *info);
TESS_API int tess_dpotrs(tess_layout_t layout, tess_uplo_t uplo, int64_t n, int64_t nrhs,
                         const double *A, int64_t lda, double *B, int64_t ldb, int64_t *info);
TESS_API int tess_dposv(tess_layout_t layout, tess_uplo_t uplo, int64_t n, int64_t nrhs, double *A,
                        int64_t lda, double *B, int64_t ldb, int64_t *info);
TESS_API int tess_spotrs(tess_layout_t layout, tess_uplo_t uplo, int64_t n, int64_t nrhs,
                         const float *A, int64_t lda, float *B, int64_t ldb, int64_t *info);
TESS_API int tess_sposv(tess_layout_t layout, tess_uplo_t uplo, int64_t n, int64_t nrhs, float *A,
                        int64_t lda, float *B, int64_t ldb, int64_t *info);
TESS_API int tess_cpotrs(tess_layout_t layout, tess_uplo_t uplo, int64_t n, int64_t nrhs,
                         const void *A, int64_t lda, void *B, int64_t ldb, int64_t *info);
TESS_API int tess_cposv(tess_layout_t layout, tess_uplo_t uplo, int64_t n, int64_t nrhs, void *A,
                        int64_t lda, void *B, int64_t ldb, int64_t *info);
TESS_API int tess_zpotrs(tess_layout_t layout, tess_uplo_t uplo, int64_t n, int64_t nrhs,
                         const void *A, int64_t lda, void *B, int64_t ldb, int64_t *info);
TESS_API int tess_zposv(tess_layout_t layout, tess_uplo_t uplo, int64_t n, int64_t nrhs, void *A,
                        int64_t lda, void *B, int64_t ldb, int64_t *info);
/* tess_?getrf: LAPACK's ?GETRF, the LU factorization A = P L U of the m x n matrix A with
 * partial pivoting (row interchanges): L unit lower trapezoidal and U upper trapezoidal
 * overwrite A, ipiv[0 .. min(m, n) - 1] gets LAPACK's 1-based pivots (row i was
 * interchanged with row ipiv[i]). The factorization runs as tile tasks on every device, the
 * matrix held as column strips (panel GETRF, LASWP, TRSM and GEMM kernels ordered by their
 * strips); a small matrix or a runtime without device memory goes to the CPU LAPACK. A held
 * matrix A overlaps is written back and its device copies dropped first (it stays held).
 * Row-major: A is m x n row-major (lda >= n) and the
 * factorization is of that matrix, through a column-major copy (as LAPACKE).
 * Returns TESS_OK once the call ran, with *info as LAPACK's INFO: 0, or i > 0 when U(i, i)
 * is exactly zero (the factorization completed; U is singular). A bad argument: TESS_EINVAL
 * and *info = -(its position in the typed entry: layout 1, m 2, n 3, A 4, lda 5, ipiv 6),
 * nothing read or written (info NULL: TESS_EINVAL only). A device failure: TESS_EDEVICE,
 * A and ipiv unspecified. */
TESS_API int tess_getrf(tess_dtype_t dtype, tess_layout_t layout, int64_t m, int64_t n, void *A,
                        int64_t lda, int64_t *ipiv, int64_t *info);
TESS_API int tess_sgetrf(tess_layout_t layout, int64_t m, int64_t n, float *A, int64_t lda,
                         int64_t *ipiv, int64_t *info);
TESS_API int tess_dgetrf(tess_layout_t layout, int64_t m, int64_t n, double *A, int64_t lda,
                         int64_t *ipiv, int64_t *info);
TESS_API int tess_cgetrf(tess_layout_t layout, int64_t m, int64_t n, void *A, int64_t lda,
                         int64_t *ipiv, int64_t *info);
TESS_API int tess_zgetrf(tess_layout_t layout, int64_t m, int64_t n, void *A, int64_t lda,
                         int64_t *ipiv, int64_t *info);
/* tess_?getrs: LAPACK's ?GETRS, op(A) X = B (op: trans N, T or C) for the n x nrhs B
 * (overwritten by X) with the factors and pivots tess_?getrf left: B's rows interchanged on
 * the host, two triangular solves (tess_trsm). tess_?gesv: LAPACK's ?GESV, tess_?getrf then
 * tess_?getrs; with *info > 0 (U singular) B is unchanged. Row-major: B is n x nrhs
 * row-major (ldb >= nrhs), as LAPACKE. Bad arguments: TESS_EINVAL, *info = -(position in the
 * typed entry: getrs layout 1, trans 2, n 3, nrhs 4, A 5, lda 6, ipiv 7 (also a pivot outside
 * 1..n), B 8, ldb 9; gesv layout 1, n 2, nrhs 3, A 4, lda 5, ipiv 6, B 7, ldb 8), nothing
 * written. */
TESS_API int tess_getrs(tess_dtype_t dtype, tess_layout_t layout, tess_trans_t trans, int64_t n,
                        int64_t nrhs, const void *A, int64_t lda, const int64_t *ipiv, void *B,
                        int64_t ldb, int64_t *info);
TESS_API int tess_gesv(tess_dtype_t dtype, tess_layout_t layout, int64_t n, int64_t nrhs, void *A,
                       int64_t lda, int64_t *ipiv, void *B, int64_t ldb, int64_t *info);
TESS_API int tess_sgetrs(tess_layout_t layout, tess_trans_t trans, int64_t n, int64_t nrhs,
                         const float *A, int64_t lda, const int64_t *ipiv, float *B, int64_t ldb,
                         int64_t *info);
TESS_API int tess_dgetrs(tess_layout_t layout, tess_trans_t trans, int64_t n, int64_t nrhs,
                         const double *A, int64_t lda, const int64_t *ipiv, double *B, int64_t ldb,
                         int64_t *info);
TESS_API int tess_cgetrs(tess_layout_t layout, tess_trans_t trans, int64_t n, int64_t nrhs,
                         const void *A, int64_t lda, const int64_t *ipiv, void *B, int64_t ldb,
                         int64_t *info);
TESS_API int tess_zgetrs(tess_layout_t layout, tess_trans_t trans, int64_t n, int64_t nrhs,
                         const void *A, int64_t lda, const int64_t *ipiv, void *B, int64_t ldb,
                         int64_t *info);
TESS_API int tess_sgesv(tess_layout_t layout, int64_t n, int64_t nrhs, float *A, int64_t lda,
                        int64_t *ipiv, float *B, int64_t ldb, int64_t *info);
TESS_API int tess_dgesv(tess_layout_t layout, int64_t n, int64_t nrhs, double *A, int64_t lda,
                        int64_t *ipiv, double *B, int64_t ldb, int64_t *info);
TESS_API int tess_cgesv(tess_layout_t layout, int64_t n, int64_t nrhs, void *A, int64_t lda,
                        int64_t *ipiv, void *B, int64_t ldb, int64_t *info);
TESS_API int tess_zgesv(tess_layout_t layout, int64_t n, int64_t nrhs, void *A, int64_t lda,
                        int64_t *ipiv, void *B, int64_t ldb, int64_t *info);

/* ---- held data (docs/held.md) -------------------------------------------------------
 * tess_hold declares the column-major rows x cols matrix A (leading dimension ld >= rows,
 * elements of dtype) held: its tiles, a grid of tile x tile blocks anchored at A (tile 0:
 * the runtime's choice), stay in device memory across calls, and results written into it
 * are written back to the host lazily: at tess_sync, tess_invalidate, tess_release,
 * tess_finalize, or when a device needs the room. A GEMM (tess_?gemm, tess_gemm) whose A, B
 * or C lies inside a held matrix (same ld and precision; any offset) reads and writes its
 * tiles there; every other call that touches a held range is served as if nothing were
 * held (its dirty tiles are written back first, and device copies of a range it writes are
 * dropped). The contract: while A is held, the host reads the range only after tess_sync
 * and writes it only after tess_invalidate, in each case until the next tessera call that
 * uses the range. Row-major data is held as its column-major transpose view.
 * Errors: TESS_EINVAL for bad arguments, an overlap with a range already held, or a pointer
 * that is not the start of a held range; TESS_EDEVICE from tess_sync / tess_invalidate /
 * tess_release when a device failed while it held the only current copy of some tiles of
 * the range (the message names the range and the tiles; the host range then holds, for those
 * tiles, the contents last written back). With TESSERA_HOLD_CHECK=1 each call that uses a
 * held range and each tess_sync checks that the host did not write the range meanwhile and
 * fails TESS_EINVAL naming the range, the tile and the call otherwise. */
TESS_API int tess_hold(tess_dtype_t dtype, void *A, int64_t ld, int64_t rows, int64_t cols,
                       int64_t tile);
/* Write back every tile of the held range starting at A that a device changed: the host
 * range is current (A stays held, its tiles stay on the devices). */
TESS_API int tess_sync(const void *A);
/* tess_sync, then drop every device copy of the range: the host may now write it. */
TESS_API int tess_invalidate(const void *A);
/* tess_invalidate, then A is no longer held. */
TESS_API int tess_release(const void *A);
/* Wait for every asynchronous call (a GEMM whose A, B and C all lie in held matrices
 * returns once its tasks are queued; its tasks wait by tile for earlier calls). Returns the
 * first error of an asynchronous call not yet reported by tess_wait, naming the call and
 * its arguments; a call that used tiles a failed call was to produce fails too, naming it.
 * tess_sync, tess_invalidate and tess_release wait for the asynchronous calls on their
 * range and report their first error the same way. */
TESS_API int tess_wait(void);

/* Host memory for operands: page-locked (pinned) when a GPU is present, so tiles move at
 * the link's full rate; plain malloc otherwise. NULL when out of memory. Free it with
 * tess_free_host only. Any host memory works as an operand; this is only faster. */
TESS_API void *tess_malloc_host(size_t bytes);
TESS_API void tess_free_host(void *p);

/* Device kinds reported in statistics. */
typedef enum tess_dev_kind {
    TESS_DEV_CUDA = 1,    /* an NVIDIA GPU through CUDA + cuBLAS */
    TESS_DEV_CPU = 2,     /* the CPU worker: OpenBLAS on host memory, no copies */
    TESS_DEV_EMULATED = 3 /* a host device with its own capped arena (TESSERA_EMULATE) */
} tess_dev_kind_t;

/* Counters of one device since tess_init or the last tess_reset_stats. */
typedef struct tess_dev_stats {
    char name[64];
    tess_dev_kind_t kind;
    int failed;          /* the device failed and is left out */
    uint64_t tasks;      /* output tiles computed */
    uint64_t stolen;     /* of which taken from another device's reservation station */
    uint64_t steps;      /* tile kernels launched */
    double flops;        /* floating-point operations of those kernels */
    uint64_t bytes_h2d;  /* host to device */
    uint64_t bytes_d2h;  /* device to host */
    uint64_t bytes_p2p;  /* peer device to this device */
    uint64_t l1_hits;    /* operand tile already on this device */
    uint64_t l2_hits;    /* operand tile fetched from a peer device */
    uint64_t misses;     /* operand tile fetched from the host */
    uint64_t evictions;  /* cached tiles dropped to make room */
    uint64_t writebacks; /* held tiles written back to the host (tess_hold) */
    double busy_s;       /* seconds with at least one tile kernel in flight */
    size_t mem_capacity; /* bytes of the device heap */
    size_t mem_peak;     /* most heap bytes in use at once */
} tess_dev_stats_t;

/* Number of devices the runtime drives (starts the runtime if needed). */
TESS_API int tess_device_count(void);
/* Counters of device dev (0 <= dev < tess_device_count()). */
TESS_API int tess_device_stats(int dev, tess_dev_stats_t *out);
/* Zero every device's counters (not the failed flags). */
TESS_API void tess_reset_stats(void);

/* Print the knob table (name, live value, default, accepted values, meaning) to f. */
TESS_API void tess_print_knobs(FILE *f);
/* Print the devices, their links and P2P topology, and the build configuration to f. */
TESS_API void tess_print_info(FILE *f);
/* Build configuration in one line ("cuda=yes nccl=yes mpi=no ..."). */
TESS_API const char *tess_build_config(void);

#ifdef __cplusplus
}
#endif
#endif /* TESSERA_H */
