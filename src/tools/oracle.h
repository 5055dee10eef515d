/* src/tools/oracle.h: the probe-vector oracle of the tools and the tests. A result R (m x n) of
 * a level-3 expression E is checked as R t against E t, t a probe vector, E t formed by
 * matrix-vector products in long double (O(mn + nK) work). Row i passes when
 *   |R t - E t|_i <= gamma_N T_i + gamma'_M (T_i + (|R| |t|)_i) + 8 N lambda sum_j |t_j|
 * T: E on absolute values applied to |t| (|alpha||op(A)||op(B)||t| + |beta||C0||t|; a residual
 * check adds |op(T)||X||t|); |x| = |re| + |im|; gamma_j = j u / (1 - j u), u the unit roundoff;
 * N = f (K + 4), f = 1 real, 2 complex, K the products summed per entry; gamma' the same with
 * long double's u, M = 2 f (n + K + 8); lambda the smallest normal number. Why: a real
 * component of an entry is a sum of f K products of input parts plus the beta term, scaled by
 * alpha's parts, so any path from an input to it (any order, any blocking, FMA or not) meets
 * at most f K + 4 roundings, each a factor 1 + d, |d| <= u (Higham, Lemma 3.1, 3.4), and those
 * terms' moduli sum to T; TRSM's residual (op(T) + dT) X = alpha B, |dT| <= gamma |op(T)|,
 * holds alike. gamma' covers the oracle's own long double sums, lambda underflow (flush to
 * zero too). Comparing two results entry by entry takes twice gamma_N T + oracle_floor.
 * Column-major everywhere; pass <= 1, NaN fails. */
#ifndef TESS_TOOLS_ORACLE_H
#define TESS_TOOLS_ORACLE_H

#include <stdint.h>

#include "tessera.h"

/* ---- the bound ------------------------------------------------------------------------- */
long double oracle_unit(tess_dtype_t dt);             /* u: 2^-24 or 2^-53 */
long double oracle_gamma(tess_dtype_t dt, int64_t K); /* gamma_N, N = f (K + 4) */
long double oracle_floor(tess_dtype_t dt, int64_t K); /* 8 N lambda: one entry's underflow */

struct oracle_bound {
    long double g, gl, floor; /* gamma_N, gamma'_M, 8 N lambda sum |t| */
};
/* The bound of a check with inner dimension K over n probe entries of sum |t| = tsum. */
void oracle_bound_init(struct oracle_bound *b, tess_dtype_t dt, int64_t K, int64_t n,
                       long double tsum);
/* The worst |y - e|_i / bound_i over the rows (pass <= 1; NaN when a row is NaN), with
 * y = R t, yabs = |R| |t|, e = E t, eabs = T (residual: T = eabs + yabs, y = op(T) X t);
 * y, e: (re, im) pairs. worst_row (may be NULL): the row of the worst ratio. */
double oracle_rows(const struct oracle_bound *b, int64_t rows, const long double *y,
                   const long double *yabs, const long double *e, const long double *eabs,
                   int residual, int64_t *worst_row);

/* ---- probe vectors, data ------------------------------------------------------------------ */
/* t (n pairs) and |t|: seed 0 the fixed real vector 1 + ((7919 j) mod 1000) / 1000 (in
 * [1, 2)); otherwise uniform in [-1, 1], both parts when cplx. Returns sum |t|. */
long double oracle_probe(int64_t n, uint64_t seed, int cplx, long double *t, long double *tabs);
/* x (rows x cols, ld) uniform in [-1, 1] from seed (xorshift; both parts for complex). */
void oracle_fill(tess_dtype_t dt, void *x, int64_t rows, int64_t cols, int64_t ld, uint64_t seed);

/* ---- y (+)= op(mask(X)) v, yabs (+)= |op(mask(X))| vabs --------------------------------------- */
enum oracle_mask { OM_FULL, OM_UP, OM_LO, OM_SUP, OM_SLO }; /* entries (i, j): all, i <= j, ... */
enum oracle_diag { OD_ASIS, OD_REAL, OD_UNIT }; /* diagonal as stored, real part, ones */
/* X stored rows x cols (ld); op 'N' (y: rows entries), 'T' or 'C' (y: cols); zero: y and yabs
 * start at 0, else accumulate; on up to `threads` threads (chunks of outputs). */
void oracle_mv(tess_dtype_t dt, int threads, int zero, char op, enum oracle_mask mk,
               enum oracle_diag dg, int64_t rows, int64_t cols, const void *X, int64_t ld,
               const long double *v, const long double *vabs, long double *y, long double *yabs);
/* y = op(X) v, the whole matrix, one thread. */
void oracle_matvec(tess_dtype_t dt, char op, int64_t rows, int64_t cols, const void *X, int64_t ld,
                   const long double *v, const long double *vabs, long double *y,
                   long double *yabs);
/* y += s x, yabs += |s| xabs (m pairs) */
void oracle_axpy(long double *y, long double *yabs, long double sr, long double si,
                 const long double *x, const long double *xabs, int64_t m);
/* element 0 of a scalar of dt as (re, im) */
void oracle_scalar(tess_dtype_t dt, const void *s, long double *re, long double *im);

/* ---- GEMM: C = alpha op(A) op(B) + beta C0 (alpha = 0 or k = 0: A, B not read; beta = 0:
 * C0 not used) ------------------------------------------------------------------------------ */
struct oracle_gemm {
    tess_dtype_t dt;
    int64_t m, n;
    long double tsum;
    long double *t, *tabs;    /* n: the probe */
    long double *c0t, *c0abs; /* m: C0 t, |C0| |t| */
};
/* Before the call: the probe (seed as oracle_probe) and C0 t. 0, or -1 out of memory. */
int oracle_gemm_begin(struct oracle_gemm *p, tess_dtype_t dt, int64_t m, int64_t n, const void *C0,
                      int64_t ldc, uint64_t seed);
/* After it: the worst ratio over the rows of C (oracle_rows). */
double oracle_gemm_check(const struct oracle_gemm *p, char ta, char tb, int64_t k,
                         const void *alpha, const void *A, int64_t lda, const void *B, int64_t ldb,
                         const void *beta, const void *C, int64_t ldc, int64_t *worst_row);
/* The same with op(B) t given (bt: k pairs, btabs), shared by blocks of C with the same
 * columns. */
double oracle_gemm_check_bt(const struct oracle_gemm *p, char ta, int64_t k, const void *alpha,
                            const void *A, int64_t lda, const long double *bt,
                            const long double *btabs, const void *beta, const void *C, int64_t ldc,
                            int64_t *worst_row);
void oracle_gemm_end(struct oracle_gemm *p);

#endif
