/* tests/ref.h: what the API-level tests share: a seeded generator, matrices of any
 * precision, scalars, the OpenBLAS reference GEMM, the error-bounded comparison, the
 * probe-vector oracle, NaN poisoning and the "untouched bytes" checks, and a GEMM case
 * runner (set up, call tessera, verify). Calls only the public API (tessera.h).
 * Storage: a stored matrix of `rows` x `cols` in layout L with leading dimension ld holds
 * element (r, c) at r + c*ld (TESS_COL_MAJOR) or r*ld + c (TESS_ROW_MAJOR), and takes
 * ld * outer elements, outer = cols (column-major) or rows (row-major).
 * Error bound: the one of the probe-vector oracle (src/tools/oracle.h, derived there); the
 * elementwise comparison with OpenBLAS takes twice it, both results carrying it:
 *   |C_ij - Cref_ij| <= 2 gamma_N (|alpha| (|op(A)| |op(B)|)_ij + |beta| |C0_ij|) + 2 floor
 * with N = f (k + 4), f = 1 real, 2 complex, gamma_N = N u / (1 - N u), u the unit roundoff,
 * |x| = |re| + |im| for complex; the probe check (ref_probe_check) is the oracle's GEMM check.
 */
#ifndef TESS_TEST_REF_H
#define TESS_TEST_REF_H

#include <stddef.h>
#include <stdint.h>

#include "tessera.h"

/* ---- generator: splitmix64, one state per user (threads keep their own) ---------- */
uint64_t ref_rng_next(uint64_t *state);
/* Uniform in [-1, 1]. */
double ref_rand_unit(uint64_t *state);
/* Uniform integer in [lo, hi]. */
int64_t ref_rand_int(uint64_t *state, int64_t lo, int64_t hi);

/* ---- precisions and scalars ------------------------------------------------------- */
size_t ref_esize(tess_dtype_t dt);
int ref_is_complex(tess_dtype_t dt);
double ref_eps(tess_dtype_t dt);
/* Element idx of X (precision dt, interleaved complex) as a long double pair. */
void ref_get(tess_dtype_t dt, const void *X, size_t idx, long double *re, long double *im);
/* Set element idx of X to re (+ i im for complex precisions; real ones ignore im). */
void ref_set(tess_dtype_t dt, void *X, size_t idx, long double re, long double im);
const char *ref_dtype_name(tess_dtype_t dt);  /* "s", "d", "c", "z" */
const char *ref_trans_name(tess_trans_t t);   /* "N", "T", "C" */
const char *ref_layout_name(tess_layout_t l); /* "col", "row" */
/* Store re + i*im as one scalar of precision dt in out (16 bytes are enough for any). */
void ref_scalar(tess_dtype_t dt, void *out, double re, double im);

/* ---- matrices ----------------------------------------------------------------------- */
/* malloc that aborts the program on failure (never NULL, even for 0 bytes). */
void *ref_malloc(size_t bytes);
/* Smallest legal leading dimension of a stored rows x cols matrix: max(1, inner). */
int64_t ref_min_ld(tess_layout_t layout, int64_t rows, int64_t cols);
/* Elements a stored rows x cols matrix with leading dimension ld occupies (ld * outer). */
size_t ref_nelem(tess_layout_t layout, int64_t rows, int64_t cols, int64_t ld);
/* Index of element (r, c) of a stored matrix. */
size_t ref_index(tess_layout_t layout, int64_t r, int64_t c, int64_t ld);
/* Stored dimensions of X when op(X) is rows x cols. */
void ref_stored_dims(tess_trans_t t, int64_t oprows, int64_t opcols, int64_t *rows, int64_t *cols);
/* Fill nelem elements with random values in [-1, 1] (both parts for complex). */
void ref_fill_random(tess_dtype_t dt, void *X, size_t nelem, uint64_t *state);
/* Fill nelem elements with quiet NaN. */
void ref_fill_nan(tess_dtype_t dt, void *X, size_t nelem);
/* Number of NaN or infinite values (parts) in the rows x cols part of a stored matrix. */
size_t ref_count_nonfinite(tess_dtype_t dt, tess_layout_t layout, const void *X, int64_t rows,
                           int64_t cols, int64_t ld);
/* 0 when every byte of X outside the rows x cols part (padding rows/columns of the leading
 * dimension and the nelem_total - ld*outer tail) equals X0's; otherwise the index of the
 * first changed element + 1. */
size_t ref_untouched(tess_dtype_t dt, tess_layout_t layout, const void *X, const void *X0,
                     int64_t rows, int64_t cols, int64_t ld, size_t nelem_total);

/* ---- reference GEMM (OpenBLAS cblas) ------------------------------------------------ */
/* C = alpha op(A) op(B) + beta C with the tessera contract: beta = 0 does not read C,
 * alpha = 0 or k = 0 does not read A or B. alpha and beta point to scalars of dt. */
void ref_gemm(tess_dtype_t dt, tess_layout_t layout, tess_trans_t ta, tess_trans_t tb, int64_t m,
              int64_t n, int64_t k, const void *alpha, const void *A, int64_t lda, const void *B,
              int64_t ldb, const void *beta, void *C, int64_t ldc);

/* ---- one GEMM case: data, call, verification ---------------------------------------- */

enum {
    REF_NAN_C = 1u << 0,      /* C (all of it, padding too) starts as NaN: needs beta = 0 */
    REF_NAN_AB = 1u << 1,     /* A and B are NaN: needs alpha = 0 or k = 0 */
    REF_TYPED = 1u << 2,      /* call tess_?gemm instead of tess_gemm */
    REF_PROBE_ONLY = 1u << 3, /* verify by the probe oracle only (big sizes) */
};

struct ref_gemm_case {
    tess_dtype_t dt;
    tess_layout_t layout;
    tess_trans_t ta, tb;
    int64_t m, n, k;
    int64_t pad_a, pad_b, pad_c; /* leading dimension = minimum + pad */
    double alpha[2], beta[2];    /* re, im (im ignored for real types) */
    unsigned flags;              /* REF_* */
    uint64_t seed;
};

struct ref_gemm_data {
    struct ref_gemm_case c;
    int64_t lda, ldb, ldc;
    int64_t ar, ac, br, bc; /* stored dimensions of A and B */
    size_t na, nb, nc;      /* elements of A, B, C including the guard tail */
    void *A, *B, *C;        /* what tessera sees */
    void *A0, *B0, *C0;     /* copies of the inputs */
    unsigned char alpha[16], beta[16];
};

/* Allocate and fill a case (A, B, C random in [-1, 1] or NaN per flags; guard tails). */
void ref_gemm_setup(const struct ref_gemm_case *c, struct ref_gemm_data *d);
/* Call tessera on the case (tess_gemm, or tess_?gemm with REF_TYPED); returns its status. */
int ref_gemm_call(struct ref_gemm_data *d);
/* Verify after a TESS_OK call: values (reference and probe oracle), no NaN when none is
 * expected, A and B unchanged, C unchanged outside m x n. 0 if all hold, else 1 with a
 * description in msg. */
int ref_gemm_verify(const struct ref_gemm_data *d, char *msg, size_t len);
/* 0 if C (every byte, padding included) is still as set up; else 1 with msg. */
int ref_gemm_c_unchanged(const struct ref_gemm_data *d, char *msg, size_t len);
void ref_gemm_free(struct ref_gemm_data *d);
/* One line describing the case ("d col NT m=5 n=7 k=0 lda=+0 ... alpha=1+0i beta=0+0i"). */
void ref_gemm_describe(const struct ref_gemm_case *c, char *buf, size_t len);
/* setup + call + verify + free: 0 on success, else 1 with msg (status included). */
int ref_gemm_run(const struct ref_gemm_case *c, char *msg, size_t len);

/* The oracle's GEMM check (src/tools/oracle.h) on its own: 0 if C t matches beta C0 t +
 * alpha op(A) (op(B) t) for nprobe random complex vectors t within its bound, else 1 with
 * msg. */
int ref_probe_check(tess_dtype_t dt, tess_layout_t layout, tess_trans_t ta, tess_trans_t tb,
                    int64_t m, int64_t n, int64_t k, const void *alpha, const void *A, int64_t lda,
                    const void *B, int64_t ldb, const void *beta, const void *C0, const void *C,
                    int64_t ldc, int nprobe, uint64_t seed, char *msg, size_t len);

/* Integer value of environment variable name, def when unset or empty. */
long ref_env_long(const char *name, long def);
/* 1 if the comma list in environment variable name contains word. */
int ref_env_has(const char *name, const char *word);

#endif
