/* src/blas/blas.h: what the drop-in library's files share (libtessera_blas.so: fortran.c,
 * cblas.c, scipy64.c, check.c, route.c). Nothing here is exported (exports.map lists the
 * netlib, CBLAS, LAPACK and numpy-wheel names).
 * One call, whichever door it came in by, becomes a struct tess__blas_call: column-major,
 * netlib letters (upper case), 64-bit dimensions, scalars by pointer, and its door. Then
 * every door calls tess__blas_submit (check.c): netlib's checks and the spans of the arrays
 * it touches; a bad argument goes to tess__blas_report (the program's handlers, found with
 * dlsym, never defined here), a good call to tess__blas_run (route.c: quick returns, then
 * the devices or the CPU BLAS). A LAPACK call (?potrf, ?potrs, ?posv; ?getrf, ?getrs,
 * ?gesv) takes the same steps as a struct tess__lapack_call: tess__lapack_submit,
 * tess__lapack_report (XERBLA), tess__lapack_run (the devices, or the program's own LAPACK:
 * its next definition).
 */
#ifndef TESS_BLAS_H
#define TESS_BLAS_H

#include <stdint.h>

#include "internal.h"

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
    char side, uplo, ta, tb, diag; /* 'L'/'R', 'U'/'L', 'N'/'T'/'C', 'N'/'T'/'C', 'U'/'N' */
    int64_t m, n, k;
    const void *alpha, *beta;
    const void *A, *B;
    void *C;
    int64_t lda, ldb, ldc;
    /* The CPU path of a door that has its own CPU library behind it (scipy64.c): runs the
     * folded column-major call on the next definition of the door's symbol. NULL: the CPU
     * BLAS table (hostblas.h). */
    void (*fwd)(const struct tess__blas_call *c);
    tess__scalar_t scratch; /* a folded scalar lives here (row-major HER2K's conj(alpha)) */
    int door;               /* enum tess__blas_door: how a bad argument is reported */
};

/* A call's kind, precision, dimensions, scalars and operands, as every door builds it;
 * the letters (side, uplo, ta, tb, diag), fwd and door are left 0 for the door to set.
 * Pass what the routine lacks as 0 / NULL (k of SYMM, B of SYRK, beta and C of TRMM). */
static inline struct tess__blas_call tess__blas_operands(enum tess__blas_kind kind, tess_dtype_t dt,
                                                         int64_t m, int64_t n, int64_t k,
                                                         const void *alpha, const void *A,
                                                         int64_t lda, const void *B, int64_t ldb,
                                                         const void *beta, void *C, int64_t ldc) {
    struct tess__blas_call c = {.kind = kind, .dt = dt, .m = m, .n = n, .k = k};
    c.alpha = alpha, c.beta = beta;
    c.A = A, c.lda = lda, c.B = B, c.ldb = ldb, c.C = C, c.ldc = ldc;
    return c;
}

/* The door a call came by (check.c reports each as the reference does). */
enum tess__blas_door {
    TESS__BLAS_DOOR_FORTRAN = 0, /* dgemm_ ...: xerbla_ */
    TESS__BLAS_DOOR_CBLAS_COL,   /* cblas_dgemm ..., scipy_cblas_*64_, column-major */
    TESS__BLAS_DOOR_CBLAS_ROW,   /* the same, row-major (RowMajorStrg = 1) */
};

/* A bad enumerated CBLAS argument: its CBLAS position as the reference reports it, its
 * name in the reference's message ("TransA") and its value. */
struct tess__blas_bad {
    int pos;
    const char *what;
    int value;
};

/* Fold a CBLAS call into column-major netlib form, as the reference CBLAS does (cblas.c):
 * c holds the kind, the precision and the arguments as given (m, n, k, operands, scalars;
 * for TRMM/TRSM the in/out matrix in B); e the enumerated arguments after the layout, in
 * order (GEMM transa, transb; SYMM/HEMM side, uplo; SYRK family uplo, trans; TRMM/TRSM
 * side, uplo, transa, diag). Sets c->door. 0, or the CBLAS position of the first argument
 * the reference's C layer rejects (in *bad). */
int tess__blas_fold(struct tess__blas_call *c, int layout, const int e[4],
                    struct tess__blas_bad *bad);
/* A whole CBLAS call as cblas_<routine> takes it (c and e as for tess__blas_fold): fold,
 * report what the C layer rejects to the program's cblas_xerbla, or submit. */
void tess__blas_cblas_call(struct tess__blas_call *c, int layout, const int e[4]);

/* The one checked path of every door: tess__blas_check, then tess__blas_report or
 * tess__blas_run. */
void tess__blas_submit(const struct tess__blas_call *c);

/* netlib's argument checks of call->kind in netlib's order: 0, or the 1-based position of
 * the first bad argument in the Fortran routine's argument list (what xerbla_ gets). */
int tess__blas_check_netlib(const struct tess__blas_call *c);
/* For a call that passed tess__blas_check_netlib: 0, or the Fortran position of the first
 * array it touches whose span cannot be addressed (check.c). */
int tess__blas_check_span(const struct tess__blas_call *c);
/* Both, in that order. */
int tess__blas_check(const struct tess__blas_call *c);

/* The operands a call that passed the netlib checks reads or writes: 0 for netlib's quick
 * returns, else C (for TRMM/TRSM the in/out B) and A, B unless alpha = 0 or the inner
 * dimension is 0 (B only where the routine has one). */
enum { TESS__BLAS_TOUCH_A = 1, TESS__BLAS_TOUCH_B = 2, TESS__BLAS_TOUCH_C = 4 };
int tess__blas_touches(const struct tess__blas_call *c);

/* Run a call that passed tess__blas_check: quick returns, then the devices or the CPU BLAS
 * (route.c). Never fails: a call the devices cannot take runs on the CPU BLAS. */
void tess__blas_run(const struct tess__blas_call *c);

/* Report the bad argument at Fortran position info of a call, per its door, as the
 * reference does (check.c's comment): xerbla_(SRNAME, info), or for a CBLAS door with
 * RowMajorStrg and CBLAS_CallFromC set and no xerbla_ in the program, cblas_xerbla(info +
 * 1, "cblas_dgemm ", ""). */
void tess__blas_report(const struct tess__blas_call *c, int info);
/* An argument the reference's C layer rejects: cblas_xerbla(pos, "cblas_dgemm", form,
 * value) with RowMajorStrg = row_major and CBLAS_CallFromC = 1 around it; form is
 * printf-style with one int conversion ("Illegal Uplo setting, %d\n"). */
void tess__blas_cblas_xerbla(int row_major, int pos, const char *rout, const char *form, int value);
/* netlib's SRNAME of a call: "DGEMM ", "ZHER2K" (upper case, blank-padded to 6). */
void tess__blas_srname(const struct tess__blas_call *c, char name[8]);

/* Netlib's LSAME on one character: upper case of an ASCII letter, anything else as is. */
static inline char tess__blas_upper(char c) { return c >= 'a' && c <= 'z' ? (char)(c - 32) : c; }

/* Prefix letter of a precision: 's', 'd', 'c', 'z'. */
static inline char tess__blas_prefix(tess_dtype_t dt) { return "sdcz"[dt]; }
/* HERK, HER2K: their real scalars (alpha of HERK, beta of both); the rank-k family (SYRK,
 * HERK, SYR2K, HER2K); the two-operand one of it (SYR2K, HER2K). */
static inline int tess__blas_herm(enum tess__blas_kind k) {
    return k == TESS__BLAS_HERK || k == TESS__BLAS_HER2K;
}
static inline int tess__blas_rank(enum tess__blas_kind k) {
    return k == TESS__BLAS_SYRK || k == TESS__BLAS_SYR2K || tess__blas_herm(k);
}
static inline int tess__blas_rank2(enum tess__blas_kind k) {
    return k == TESS__BLAS_SYR2K || k == TESS__BLAS_HER2K;
}

/* The name of a routine kind without prefix: "gemm", "herk", ... */
extern const char *const tess__blas_kind_name[TESS__BLAS_NKINDS];

/* The next definition of an exported name: the same symbol in another loaded object (the
 * program's own LAPACK, numpy's wheel library), never this library's; NULL if none. Looked
 * up in the global scope after this library (dlsym RTLD_NEXT), then in every loaded object
 * (dl_iterate_phdr: python loads extension modules and their libraries RTLD_LOCAL, out of
 * RTLD_NEXT's reach). route.c; callers cache the answer. */
void *tess__blas_next(const char *name);

/* ---- LAPACK: the Cholesky and LU routines (docs/dropin.md) ------------------------------ */

enum tess__lapack_kind {
    TESS__LAPACK_POTRF, /* ?POTRF(UPLO, N, A, LDA, INFO) */
    TESS__LAPACK_POTRS, /* ?POTRS(UPLO, N, NRHS, A, LDA, B, LDB, INFO): A read, B in/out */
    TESS__LAPACK_POSV,  /* ?POSV(UPLO, N, NRHS, A, LDA, B, LDB, INFO): A, B in/out */
    TESS__LAPACK_GETRF, /* ?GETRF(M, N, A, LDA, IPIV, INFO): A in/out, IPIV written */
    TESS__LAPACK_GETRS, /* ?GETRS(TRANS, N, NRHS, A, LDA, IPIV, B, LDB, INFO): A, IPIV read */
    TESS__LAPACK_GESV,  /* ?GESV(N, NRHS, A, LDA, IPIV, B, LDB, INFO): A, B in/out, IPIV out */
    TESS__LAPACK_NKINDS
};
/* "potrf", "potrs", "posv", "getrf", "getrs", "gesv" (route.c) */
extern const char *const tess__lapack_kind_name[TESS__LAPACK_NKINDS];

/* The LU routines (GETRF, GETRS, GESV): IPIV, no UPLO. */
static inline int tess__lapack_lu(enum tess__lapack_kind k) {
    return k == TESS__LAPACK_GETRF || k == TESS__LAPACK_GETRS || k == TESS__LAPACK_GESV;
}

/* One LAPACK call, column-major, as every door builds it (tess__lapack_operands,
 * tess__lapack_lu_operands). */
struct tess__lapack_call {
    enum tess__lapack_kind kind;
    tess_dtype_t dt;
    char uplo;  /* upper case (LSAME); the Cholesky routines */
    char trans; /* upper case (LSAME); GETRS ('N' for GETRF and GESV) */
    int64_t m;  /* GETRF's rows (n for every other routine) */
    int64_t n, nrhs;
    void *A, *B; /* B: NULL for POTRF and GETRF */
    int64_t lda, ldb;
    void *ipiv; /* the LU routines' IPIV, 1-based, in the door's INTEGER width (info64) */
    void *info; /* INFO: an int (LP64 door) or an int64_t (ILP64: info64) */
    int info64; /* the door's INTEGER is 64-bit: INFO and IPIV are int64_t */
    /* The CPU path of a door whose symbol has a next definition: fwd runs the call on next
     * (the door knows its prototype) and returns INFO. fwd NULL: tessera's CPU LAPACK
     * (?potrf_, ?getrf_ and ?laswp_ of the CPU BLAS library, the solves as CPU BLAS TRSMs). */
    int64_t (*fwd)(const struct tess__lapack_call *c);
    void *next;
};

static inline struct tess__lapack_call tess__lapack_operands(enum tess__lapack_kind kind,
                                                             tess_dtype_t dt, const char *uplo,
                                                             int64_t n, int64_t nrhs, void *A,
                                                             int64_t lda, void *B, int64_t ldb,
                                                             void *info, int info64) {
    struct tess__lapack_call c = {.kind = kind, .dt = dt, .uplo = tess__blas_upper(*uplo)};
    c.trans = 'N', c.m = n, c.n = n, c.nrhs = nrhs, c.A = A, c.lda = lda, c.B = B, c.ldb = ldb;
    c.info = info, c.info64 = info64;
    return c;
}

/* An LU call: trans NULL for GETRF and GESV (no TRANS argument); m = n but for GETRF; B NULL
 * and nrhs 0 for GETRF. */
static inline struct tess__lapack_call
tess__lapack_lu_operands(enum tess__lapack_kind kind, tess_dtype_t dt, const char *trans, int64_t m,
                         int64_t n, int64_t nrhs, void *A, int64_t lda, void *ipiv, void *B,
                         int64_t ldb, void *info, int info64) {
    struct tess__lapack_call c = {.kind = kind, .dt = dt};
    c.trans = trans ? tess__blas_upper(*trans) : 'N';
    c.m = m, c.n = n, c.nrhs = nrhs, c.A = A, c.lda = lda, c.ipiv = ipiv, c.B = B, c.ldb = ldb;
    c.info = info, c.info64 = info64;
    return c;
}

/* INFO = v, in the door's width. */
static inline void tess__lapack_set_info(const struct tess__lapack_call *c, int64_t v) {
    if (c->info64)
        *(int64_t *)c->info = v;
    else
        *(int *)c->info = (int)v;
}

/* Reference LAPACK's argument checks, its order and positions: 0, or the 1-based position
 * of the first bad argument (INFO = -that). */
int tess__lapack_check_netlib(const struct tess__lapack_call *c);
/* Those, then that each array the call touches can be addressed (as tess__blas_check). */
int tess__lapack_check(const struct tess__lapack_call *c);
/* The one checked path of every LAPACK door: INFO = -pos and the program's XERBLA (as
 * reference LAPACK: INFO first, then XERBLA('DPOTRF', pos); 'DGESV '), or tess__lapack_run. */
void tess__lapack_submit(const struct tess__lapack_call *c);
/* XERBLA(SRNAME, pos) of the program (then of the CPU BLAS; else netlib's message). */
void tess__lapack_report(const struct tess__lapack_call *c, int pos);
/* Run a checked call (route.c): quick returns, the devices or the CPU path; sets INFO. */
void tess__lapack_run(const struct tess__lapack_call *c);

#if defined(__GNUC__)
#define TESS__BLAS_EXPORT __attribute__((visibility("default")))
#else
#define TESS__BLAS_EXPORT
#endif

#endif /* TESS_BLAS_H */
