/* src/tools/probe.h: the probe-vector oracle the tools share. For C = alpha op(A) op(B) +
 * beta C0 it checks C t against beta (C0 t) + alpha op(A) (op(B) t) in long double, in O(n^2)
 * work for an O(n^3) result, against the rigorous bound gamma_{k+2} * (|alpha||A||B||t| +
 * |beta||C0||t|) per row. Column-major, any precision, any transposes. */
#ifndef TESS_PROBE_H
#define TESS_PROBE_H

#include <stdint.h>

#include "tessera.h"

struct probe {
    tess_dtype_t dt;
    int64_t m, n;
    long double *t;      /* n probe entries (real, in [1, 2]) */
    long double *tabs;   /* n: |t| */
    long double *c0t;    /* 2m: C0 t (re, im) */
    long double *c0abs;  /* m: |C0| |t| */
};

/* Fill x (rows x cols, leading dimension ld) with uniform values in [-1, 1]. */
void probe_fill(tess_dtype_t dt, void *x, int64_t rows, int64_t cols, int64_t ld, uint64_t seed);
/* Before the call: remember C0 t. */
int probe_begin(struct probe *p, tess_dtype_t dt, int64_t m, int64_t n, const void *C, int64_t ldc);
/* After the call: worst ratio error / bound over the rows (pass if <= 1). */
double probe_check(const struct probe *p, char ta, char tb, int64_t k, const void *alpha,
                   const void *A, int64_t lda, const void *B, int64_t ldb, const void *beta,
                   const void *C, int64_t ldc);
/* The same with op(B) t given (bt: 2k entries, re/im; btabs: |op(B)| |t|, k entries), for
 * callers that share it between blocks of C with the same columns. */
double probe_check_bt(const struct probe *p, char ta, int64_t k, const void *alpha, const void *A,
                      int64_t lda, const long double *bt, const long double *btabs,
                      const void *beta, const void *C, int64_t ldc);
/* y = op(X) v (v, y: re/im pairs), yabs = |op(X)| vabs; X rows x cols (ld); y has rows
 * entries for trans 'N', cols otherwise. */
void probe_matvec(tess_dtype_t dt, char trans, int64_t rows, int64_t cols, const void *X,
                  int64_t ld, const long double *v, const long double *vabs, long double *y,
                  long double *yabs);
void probe_end(struct probe *p);

#endif
