/* src/backend/dtype.c: the precision table and the host (OpenBLAS) kernels every layer shares:
 * scalars of any precision, C = beta*C on the host, and the CBLAS gemm dispatch (through
 * the CPU BLAS table of hostblas.h, never a BLAS symbol by name). The one place where
 * s, d, c, z are spelled out; every tile loop elsewhere is generic. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "hostblas.h"

const struct tess__dtype_info tess__dtypes[4] = {
    [TESS_S] = {"s", 4, 0, 2.0},
    [TESS_D] = {"d", 8, 0, 2.0},
    [TESS_C] = {"c", 8, 1, 8.0},
    [TESS_Z] = {"z", 16, 1, 8.0},
};

static const tess__scalar_t zero;
static const tess__scalar_t ones[4] = {
    [TESS_S] = {.s = 1.0f},
    [TESS_D] = {.d = 1.0},
    [TESS_C] = {.c = {1.0f, 0.0f}},
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

void tess__host_gemm(tess_dtype_t dt, char ta, char tb, int64_t m, int64_t n, int64_t k,
                     const void *alpha, const void *A, int64_t lda, const void *B, int64_t ldb,
                     const void *beta, void *C, int64_t ldc) {
    if (!tess__hostblas()) {
        /* the runtime does not start without the CPU BLAS (tess__hostblas_load), so only a
         * caller that bypassed it gets here */
        fprintf(stderr, "tessera: no CPU BLAS for a host kernel: %s\n",
                tess__hostblas_load() ? tess_last_error() : "?");
        abort();
    }
    struct tess__kernel kn = {
        .kind = TESS__K_GEMM,
        .dt = dt,
        .ta = ta,
        .tb = tb,
        .m = m,
        .n = n,
        .k = k,
        .alpha = alpha,
        .beta = beta,
        .A = A,
        .lda = lda,
        .B = B,
        .ldb = ldb,
        .C = C,
        .ldc = ldc,
    };
    (void)tess__host_kernel(&kn);
}

void tess__host_scale(tess_dtype_t dt, int64_t m, int64_t n, const tess__scalar_t *beta, void *C,
                      int64_t ldc) {
    size_t es = tess__dtypes[dt].size;
    if (tess__scalar_is_one(dt, beta)) return;
    for (int64_t j = 0; j < n; j++) {
        char *col = (char *)C + (size_t)j * (size_t)ldc * es;
        if (tess__scalar_is_zero(dt, beta)) {
            memset(col, 0, (size_t)m * es); /* beta = 0: C is not read */
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

void tess__host_scale_tri(tess_dtype_t dt, char uplo, int64_t n, const tess__scalar_t *beta,
                          bool herm, void *C, int64_t ldc) {
    size_t es = tess__dtypes[dt].size;
    for (int64_t j = 0; j < n; j++) {
        int64_t r0 = uplo == 'U' ? 0 : j, r1 = uplo == 'U' ? j + 1 : n;
        char *col = (char *)C + ((size_t)r0 + (size_t)j * (size_t)ldc) * es;
        char *d = (char *)C + ((size_t)j + (size_t)j * (size_t)ldc) * es;
        if (herm) { /* netlib: Im(C(j,j)) need not be set: never let it reach Re */
            if (dt == TESS_C)
                ((float *)d)[1] = 0.0f;
            else
                ((double *)d)[1] = 0.0;
        }
        tess__host_scale(dt, r1 - r0, 1, beta, col, ldc);
        if (herm) { /* (beta, 0) times (x, 0) is (beta x, 0 x): NaN when beta is */
            if (dt == TESS_C)
                ((float *)d)[1] = 0.0f;
            else
                ((double *)d)[1] = 0.0;
        }
    }
}

bool tess__span_ok(const void *X, int64_t rows, int64_t cols, int64_t ld, size_t es,
                   size_t *bytes) {
    uint64_t el, b;
    if (rows < 1 || cols < 1 || ld < rows) return false;
    if (__builtin_mul_overflow((uint64_t)(cols - 1), (uint64_t)ld, &el) ||
        __builtin_add_overflow(el, (uint64_t)rows, &el) ||
        __builtin_mul_overflow(el, (uint64_t)es, &b) || b > (uint64_t)PTRDIFF_MAX ||
        (uintptr_t)X > UINTPTR_MAX - (uintptr_t)b)
        return false;
    if (bytes) *bytes = (size_t)b;
    return true;
}
