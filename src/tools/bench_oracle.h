/* src/tools/bench_oracle.h: the probe-vector oracle of tessera-bench --routine, for every
 * level-3 routine (bench_oracle.c). For a result R (m x n) it compares R t, t a fixed real
 * probe vector, with the value the inputs give, computed by matrix-vector products on the
 * host in long double in O(n^2) work for an O(n^3) result:
 *
 *   GEMM (NN)      R t  vs  alpha A (B t) + beta C0 t
 *   SYMM/HEMM      R t  vs  alpha Ah (B t) + beta C0 t  (side L)  or  alpha B (Ah t) + ...  (R)
 *                  Ah the symmetric / Hermitian matrix of A's triangle uplo (HEMM: the
 *                  imaginary parts of its diagonal taken as zero)
 *   SYRK/HERK      Rh t vs  alpha P (P^* t) + beta C0h t, P = op(A), ^* = ^T / ^H, Rh and C0h
 *                  the symmetric / Hermitian matrices of the triangle uplo of R and C0;
 *                  also: the other triangle of R is C0's byte for byte, and (HERK/HER2K)
 *                  the imaginary parts of R's diagonal are zero
 *   SYR2K/HER2K    Rh t vs  alpha P (Q^* t) + alpha' Q (P^* t) + beta C0h t, Q = op(B),
 *                  alpha' = alpha / conj(alpha); the same two extra checks
 *   TRMM           R t  vs  alpha op(T) (B0 t)  (side L)  or  alpha B0 (op(T) t)  (side R),
 *                  T the triangle uplo of A (diag U: ones on the diagonal, A's not read)
 *   TRSM           residual: op(T) (R t)  vs  alpha B0 t  (side L),  R (op(T) t) vs alpha
 *                  B0 t  (side R)
 *
 * Each row i passes when |error_i| <= gamma_{K+4} (|terms|_i) + 2 u (|R| |t|)_i, where
 * |terms| is the same expression on absolute values (|alpha| |A| |B| |t| ...), K the inner
 * dimension (twice k for the rank-2k updates), u the unit roundoff, gamma_j = j u (x4 for
 * complex); for TRSM the bound is gamma_{K+4} (|op(T)| |R| |t| + |alpha| |B0| |t|). The
 * result is the worst error/bound ratio over the rows (pass <= 1, NaN = fail), as in probe.c.
 * All matrices column-major. The matrix-vector products run on o.threads threads. */
#ifndef TESS_BENCH_ORACLE_H
#define TESS_BENCH_ORACLE_H

#include <stdint.h>

#include "bench.h"

struct prob {
    enum routine r;
    tess_dtype_t dt;
    char side, uplo, trans, diag; /* effective: trans as the libraries are given it */
    int64_t m, n, k;              /* C (or B) is m x n; SYRK-like: n x n, inner k */
    const char *A, *B;            /* inputs (TRMM/TRSM: B is B0) */
    int64_t lda, ldb;
    /* the scalars as the libraries take them (HERK alpha, HERK/HER2K beta of the real type) */
    _Alignas(16) unsigned char alpha[16], beta[16];
    long double ar, ai, br, bi, a2r, a2i; /* alpha, beta, alpha' (SYR2K/HER2K) */
    double flops;
    /* oracle state (prob_begin) */
    long double gamma, u;
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

/* Set routine, shape, options (trans normalised per routine: herk/her2k read T as C,
 * complex syrk/syr2k C as T; GEMM is always NN), inputs, scalars and flop count. */
void prob_init(struct prob *p, enum routine r, tess_dtype_t dt, char side, char uplo,
               char trans, char diag, int64_t m, int64_t n, int64_t k, const void *A,
               int64_t lda, const void *B, int64_t ldb);
/* Before any run: take what the check needs from the inputs and from C0 (ldc; NULL for
 * TRMM/TRSM, whose C0 is B). 0, or -1 when out of host memory. */
int prob_begin(struct prob *p, const void *C0, int64_t ldc);
/* After a run: the worst error/bound over the rows of R (ldr) and the extra checks. */
double prob_check(struct prob *p, const void *R, int64_t ldr, struct check_flags *f);
void prob_end(struct prob *p);

/* "side L uplo L" etc.: the options the routine has, for headers */
const char *prob_opts(const struct prob *p, char *buf, size_t len);

#endif
