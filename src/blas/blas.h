/* src/blas/blas.h: what the drop-in library's files share (libtessera_blas.so: fortran.c,
 * cblas.c, check.c, route.c). Nothing here is exported; the exported names are the netlib
 * Fortran symbols (sgemm_ ... ztrsm_) and the CBLAS ones (cblas_sgemm ... cblas_ztrsm),
 * listed in exports.map.
 *
 * One call, whichever door it came in by, becomes a struct tess__blas_call: column-major,
 * netlib letters (upper case), 64-bit dimensions, scalars by pointer. The Fortran door fills
 * it straight from its arguments; the CBLAS door folds row-major into it exactly as the
 * reference CBLAS does before it calls the Fortran routine. Then:
 *
 *   info = tess__blas_check(call)      netlib's checks, netlib's order, Fortran positions
 *   info != 0  -> the door reports it  (xerbla_ with the Fortran position, or cblas_xerbla
 *                                       with the CBLAS position) and returns
 *   tess__blas_run(call)               quick returns, then the routing table (route.c):
 *                                       the devices (tess_gemm ...) or the CPU BLAS
 *
 * Error handlers (xerbla_, cblas_xerbla) belong to the program or its BLAS: they are found
 * with dlsym, never defined here.
 */
#ifndef TESS_BLAS_H
#define TESS_BLAS_H

#include <stdint.h>

#include "../internal.h"

/* The level-3 routines, one table row each in route.c. */
enum tess__blas_kind {
    TESS__BLAS_GEMM,
    TESS__BLAS_SYMM,
    TESS__BLAS_HEMM,
    TESS__BLAS_SYRK,
    TESS__BLAS_HERK,
    TESS__BLAS_SYR2K,
    TESS__BLAS_HER2K,
    TESS__BLAS_TRMM,
    TESS__BLAS_TRSM,
    TESS__BLAS_NKINDS
};

/* One checked (or to-be-checked) call in column-major form.
 *
 *   kind   dims used      scalars                       operands
 *   GEMM   m, n, k        alpha, beta                   A, B read; C written
 *   SYMM   m, n           alpha, beta                   A (symmetric), B read; C written
 *   HEMM   m, n           alpha, beta                   A (Hermitian), B read; C written
 *   SYRK   n, k           alpha, beta                   A read; C (triangle uplo) written
 *   HERK   n, k           alpha, beta REAL              A read; C (triangle uplo) written
 *   SYR2K  n, k           alpha, beta                   A, B read; C (triangle) written
 *   HER2K  n, k           alpha, beta REAL              A, B read; C (triangle) written
 *   TRMM   m, n           alpha (no beta)               A (triangular) read; B in/out
 *   TRSM   m, n           alpha (no beta)               A (triangular) read; B in/out
 *
 * For TRMM/TRSM the in/out matrix B is also named C (C == B, ldc == ldb), so every routine
 * writes C. A real scalar of a complex routine points to one float/double. */
struct tess__blas_call {
    enum tess__blas_kind kind;
    tess_dtype_t dt;
    char side, uplo, ta, tb, diag;  /* 'L'/'R', 'U'/'L', 'N'/'T'/'C', 'N'/'T'/'C', 'U'/'N' */
    int64_t m, n, k;
    const void *alpha, *beta;
    const void *A, *B;
    void *C;
    int64_t lda, ldb, ldc;
    /* The CPU path of a door that has its own CPU library behind it (scipy64.c): runs the
     * folded column-major call on the next definition of the door's symbol. NULL: the CPU
     * BLAS table (hostblas.h). */
    void (*fwd)(const struct tess__blas_call *c);
    tess__scalar_t scratch;  /* a folded scalar lives here (row-major HER2K's conj(alpha)) */
};

/* A bad enumerated CBLAS argument: its CBLAS position, its name in the reference's
 * message ("TransA") and its value. */
struct tess__blas_bad {
    int pos;
    const char *what;
    int value;
};

/* Fold a CBLAS call into column-major netlib form, as the reference CBLAS does (cblas.c):
 * c holds the kind, the precision and the arguments as given (m, n, k, operands, scalars;
 * for TRMM/TRSM the in/out matrix in B); e the enumerated arguments after the layout, in
 * order (GEMM transa, transb; SYMM/HEMM side, uplo; SYRK family uplo, trans; TRMM/TRSM
 * side, uplo, transa, diag). 0, or the CBLAS position of the first bad one (in *bad). */
int tess__blas_fold(struct tess__blas_call *c, int layout, const int e[4],
                    struct tess__blas_bad *bad);
/* A whole CBLAS call as cblas_<routine> takes it (c and e as for tess__blas_fold): fold,
 * check, report a bad argument to the program's cblas_xerbla with its CBLAS position, or
 * run. */
void tess__blas_cblas_call(struct tess__blas_call *c, int layout, const int e[4]);

/* netlib's argument checks of call->kind in netlib's order: 0, or the 1-based position of
 * the first bad argument in the Fortran routine's argument list (what xerbla_ gets). */
int tess__blas_check(const struct tess__blas_call *c);

/* Run a call that passed tess__blas_check: quick returns, then the devices or the CPU BLAS
 * (route.c). Never fails: a call the devices cannot take runs on the CPU BLAS. */
void tess__blas_run(const struct tess__blas_call *c);

/* Report a bad argument to the program: xerbla_(name, &info) (Fortran door; name is the
 * blank-padded routine name, "DGEMM "), or cblas_xerbla(pos, "cblas_dgemm", form, ...)
 * (CBLAS door). Each found with dlsym in the program first, then in the CPU BLAS; without
 * either, netlib's message goes to stderr and the call returns. */
void tess__blas_xerbla(const char *name, int info);
/* form is printf-style with at most one int conversion, which gets value (the reference
 * CBLAS's "Illegal Uplo setting, %d\n"); "" when the Fortran-level check found it. */
void tess__blas_cblas_xerbla(int pos, const char *rout, const char *form, int value);

/* Netlib's LSAME on one character: upper case of an ASCII letter, anything else as is. */
static inline char tess__blas_upper(char c) { return c >= 'a' && c <= 'z' ? (char)(c - 32) : c; }

/* Prefix letter of a precision: 's', 'd', 'c', 'z'. */
static inline char tess__blas_prefix(tess_dtype_t dt) { return "sdcz"[dt]; }

/* The name of a routine kind without prefix: "gemm", "herk", ... */
extern const char *const tess__blas_kind_name[TESS__BLAS_NKINDS];

#if defined(__GNUC__)
#define TESS__BLAS_EXPORT __attribute__((visibility("default")))
#else
#define TESS__BLAS_EXPORT
#endif

#endif /* TESS_BLAS_H */
