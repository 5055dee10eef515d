/* src/tools/oracle_l3.h: the probe-vector oracle (oracle.h, its bound) for every level-3
 * routine. For a result R it compares R t with what the inputs give:
 *   GEMM (NN)    alpha A (B t) + beta C0 t
 *   SYMM/HEMM    alpha Ah (B t) + beta C0 t (side L), alpha B (Ah t) + ... (R); Ah the
 *                symmetric / Hermitian matrix of A's triangle uplo (HEMM: real diagonal)
 *   SYRK/HERK    Rh t vs alpha P (P^* t) + beta C0h t, P = op(A), ^* = ^T / ^H, Rh and C0h of
 *                the triangle uplo; also: R's other triangle is C0's byte for byte and (HERK,
 *                HER2K) R's diagonal has no imaginary part
 *   SYR2K/HER2K  Rh t vs alpha P (Q^* t) + alpha' Q (P^* t) + beta C0h t, Q = op(B), alpha' =
 *                alpha or conj(alpha); the same two extra checks
 *   TRMM         alpha op(T) (B0 t) (side L), alpha B0 (op(T) t) (R); T A's triangle uplo
 *   TRSM         the residual op(T) (R t) vs alpha B0 t (L), R (op(T) t) vs alpha B0 t (R)
 * K: k (GEMM, SYRK), 2k (rank 2k), m or n by side (SYMM, TRMM, TRSM). All column-major; the
 * products run on `threads` threads. */
#ifndef TESS_TOOLS_ORACLE_L3_H
#define TESS_TOOLS_ORACLE_L3_H

#include <stddef.h>
#include <stdint.h>

#include "oracle.h"

enum routine { R_GEMM, R_SYMM, R_HEMM, R_SYRK, R_HERK, R_SYR2K, R_HER2K, R_TRMM, R_TRSM, R_N };

struct prob {
    enum routine r;
    tess_dtype_t dt;
    char side, uplo, trans, diag; /* effective: trans as the libraries are given it */
    int64_t m, n, k;              /* C (or B) is m x n; SYRK-like: n x n, inner k */
    const char *A, *B;            /* inputs (TRMM/TRSM: B is B0) */
    int64_t lda, ldb;
    int threads; /* for the products (prob_init: 1) */
    /* the scalars as the libraries take them (HERK alpha, HERK/HER2K beta of the real type) */
    _Alignas(16) unsigned char alpha[16], beta[16];
    long double ar, ai, br, bi, a2r, a2i; /* alpha, beta, alpha' (SYR2K/HER2K) */
    double flops;
    /* oracle state (prob_begin) */
    struct oracle_bound bound;
    long double *t, *tabs, *e, *eabs, *w, *wabs, *y, *yabs, *z, *zabs;
    uint64_t other_hash; /* SYRK-like: C0's strict other triangle */
};

struct check_flags {
    int other_changed; /* SYRK-like: the other triangle of R differs from C0's */
    int64_t diag_imag; /* HERK/HER2K: diagonal entries of R with a nonzero imaginary part */
};

extern const char *const routine_name[R_N];
int routine_complex_only(enum routine r); /* HEMM, HERK, HER2K */
int routine_rank(enum routine r);         /* SYRK-like */

/* Routine, shape, options (trans normalised: herk/her2k read T as C, complex syrk/syr2k C as
 * T; GEMM is always NN), inputs, scalars (real: alpha 1, beta 0.5; complex: alpha 0.8 + 0.6i,
 * beta 0.5 + 0.25i; HERK alpha 1, HERK/HER2K beta 0.5) and flop count. */
void prob_init(struct prob *p, enum routine r, tess_dtype_t dt, char side, char uplo, char trans,
               char diag, int64_t m, int64_t n, int64_t k, const void *A, int64_t lda,
               const void *B, int64_t ldb);
/* Before any run: what the check needs from the inputs and from C0 (ldc; NULL for TRMM/TRSM,
 * whose C0 is B). 0, or -1 out of host memory. */
int prob_begin(struct prob *p, const void *C0, int64_t ldc);
/* After a run: the worst error/bound over the rows of R (ldr), and the extra checks. */
double prob_check(struct prob *p, const void *R, int64_t ldr, struct check_flags *f);
void prob_end(struct prob *p);
/* "side L uplo L" etc.: the options the routine has, for headers */
const char *prob_opts(const struct prob *p, char *buf, size_t len);

#endif
