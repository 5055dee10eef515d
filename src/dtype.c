/* src/dtype.c: the precision table and the host (OpenBLAS) kernels every layer shares:
 * scalars of any precision, C = beta*C on the host, and the CBLAS gemm dispatch (through
 * the CPU BLAS table of hostblas.h, never a BLAS symbol by name). The one place where
 * s, d, c, z are spelled out; every tile loop elsewhere is generic. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hostblas.h"
#include "internal.h"

const struct tess__dtype_info tess__dtypes[4] = {
    [TESS_S] = {"s", 4, 0, 2.0},
    [TESS_D] = {"d", 8, 0, 2.0},
    [TESS_C] = {"c", 8, 1, 8.0},
    [TESS_Z] = {"z", 16, 1, 8.0},
};

static const tess__scalar_t zero;
static const tess__scalar_t ones[4] = {
    [TESS_S] = {.s = 1.0f}, [TESS_D] = {.d = 1.0}, [TESS_C] = {.c = {1.0f, 0.0f}},
    [TESS_Z] = {.z = {1.0, 0.0}},
};

void tess__scalar_load(tess_dtype_t dt, tess__scalar_t *out, const void *p) {
    memset(out, 0, sizeof *out);
    memcpy(out, p, tess__dtypes[dt].size);
}

bool tess__scalar_is_zero(tess_dtype_t dt, const tess__scalar_t *x) {
    switch (dt) {
    case TESS_S: return x->s == 0.0f;
    case TESS_D: return x->d == 0.0;
    case TESS_C: return x->c[0] == 0.0f && x->c[1] == 0.0f;
    case TESS_Z: return x->z[0] == 0.0 && x->z[1] == 0.0;
    }
    return false;
}

bool tess__scalar_is_one(tess_dtype_t dt, const tess__scalar_t *x) {
    switch (dt) {
    case TESS_S: return x->s == 1.0f;
    case TESS_D: return x->d == 1.0;
    case TESS_C: return x->c[0] == 1.0f && x->c[1] == 0.0f;
    case TESS_Z: return x->z[0] == 1.0 && x->z[1] == 0.0;
    }
    return false;
}

const tess__scalar_t *tess__scalar_zero(void) { return &zero; }
const tess__scalar_t *tess__scalar_one(tess_dtype_t dt) { return &ones[dt]; }

static enum CBLAS_TRANSPOSE cblas_trans(char t) {
    return t == 'N' ? CblasNoTrans : t == 'T' ? CblasTrans : CblasConjTrans;
}

void tess__host_gemm(tess_dtype_t dt, char ta, char tb, int64_t m, int64_t n, int64_t k,
                     const void *alpha, const void *A, int64_t lda, const void *B,
                     int64_t ldb, const void *beta, void *C, int64_t ldc) {
    enum CBLAS_TRANSPOSE a = cblas_trans(ta), b = cblas_trans(tb);
    const struct tess__hostblas *hb = tess__hostblas();
    if (!hb) {
        /* the runtime does not start without the CPU BLAS (tess__hostblas_load), so only a
         * caller that bypassed it gets here */
        fprintf(stderr, "tessera: no CPU BLAS for a host kernel: %s\n",
                tess__hostblas_load() ? tess_last_error() : "?");
        abort();
    }
    switch (dt) {
    case TESS_S:
        hb->sgemm(CblasColMajor, a, b, m, n, k, *(const float *)alpha, A, lda, B, ldb,
                  *(const float *)beta, C, ldc);
        break;
    case TESS_D:
        hb->dgemm(CblasColMajor, a, b, m, n, k, *(const double *)alpha, A, lda, B, ldb,
                  *(const double *)beta, C, ldc);
        break;
    case TESS_C:
        hb->cgemm(CblasColMajor, a, b, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
        break;
    case TESS_Z:
        hb->zgemm(CblasColMajor, a, b, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
        break;
    }
}

void tess__host_scale(tess_dtype_t dt, int64_t m, int64_t n, const tess__scalar_t *beta,
                      void *C, int64_t ldc) {
    size_t es = tess__dtypes[dt].size;
    if (tess__scalar_is_one(dt, beta)) return;
    for (int64_t j = 0; j < n; j++) {
        char *col = (char *)C + (size_t)j * (size_t)ldc * es;
        if (tess__scalar_is_zero(dt, beta)) {
            memset(col, 0, (size_t)m * es);  /* beta = 0: C is not read */
            continue;
        }
        for (int64_t i = 0; i < m; i++) {
            switch (dt) {
            case TESS_S: ((float *)col)[i] *= beta->s; break;
            case TESS_D: ((double *)col)[i] *= beta->d; break;
            case TESS_C: {
                float *x = (float *)col + 2 * i, re = x[0], im = x[1];
                x[0] = beta->c[0] * re - beta->c[1] * im;
                x[1] = beta->c[0] * im + beta->c[1] * re;
                break;
            }
            case TESS_Z: {
                double *x = (double *)col + 2 * i, re = x[0], im = x[1];
                x[0] = beta->z[0] * re - beta->z[1] * im;
                x[1] = beta->z[0] * im + beta->z[1] * re;
                break;
            }
            }
        }
    }
}
