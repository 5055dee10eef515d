/* src/tools/bench_l3calls.c: tessera-bench --routine's calls of one level-3 problem (struct
 * prob, oracle_l3.h) by in-core cuBLAS (the _64 API), cuBLAS-XT and tessera, one switch per
 * library, and the check of cuBLAS TRMM with C == B: the CUDA backend runs its TRMM tile
 * kernel as cublas<t>trmm in place (src/backend/cuda.c), so for every precision asked the
 * bench runs cublas<t>trmm_64 out of place and with C == B for every side, uplo, transa and
 * diag at 777 x 1000 and 4096 x 4096, checks both with the oracle, compares them bitwise and
 * prints one line. */
#include <cublasXt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "oracle.h"
#include "oracle_l3.h"
#include "tessera.h"

enum { TRMM_BAD = 2048 }; /* bytes of the failing option sets a line lists */

/* ---- the calls, one switch per library ------------------------------------------------------- */

static cublasOperation_t cb_op(char t) {
    return t == 'N' ? CUBLAS_OP_N : t == 'T' ? CUBLAS_OP_T : CUBLAS_OP_C;
}

/* In-core: A, B (TRMM: input), C (TRMM: output, dB itself in the C == B check; TRSM: a copy
 * of B0, solved in place) on the device. */
cublasStatus_t l3_incore_call(cublasHandle_t h, const struct prob *p, const void *dA,
                              const void *dB, void *dC, int64_t ldc) {
#if CUBLAS_VER_MAJOR >= 12 /* the _64 API: 64-bit dimensions and leading dimensions */
    const cublasSideMode_t sd = p->side == 'L' ? CUBLAS_SIDE_LEFT : CUBLAS_SIDE_RIGHT;
    const cublasFillMode_t ul = p->uplo == 'U' ? CUBLAS_FILL_MODE_UPPER : CUBLAS_FILL_MODE_LOWER;
    const cublasOperation_t tr = cb_op(p->trans), N = CUBLAS_OP_N;
    const cublasDiagType_t dg = p->diag == 'U' ? CUBLAS_DIAG_UNIT : CUBLAS_DIAG_NON_UNIT;
    const int64_t m = p->m, n = p->n, k = p->k, lda = p->lda, ldb = p->ldb;
    const void *al = p->alpha, *be = p->beta;
#define CALLS_(X)                                                                                 \
    switch (p->r) {                                                                               \
    case R_GEMM: return cublas##X##gemm_64(h, N, N, m, n, k, al, dA, lda, dB, ldb, be, dC, ldc);  \
    case R_SYMM: return cublas##X##symm_64(h, sd, ul, m, n, al, dA, lda, dB, ldb, be, dC, ldc);   \
    case R_SYRK: return cublas##X##syrk_64(h, ul, tr, n, k, al, dA, lda, be, dC, ldc);            \
    case R_SYR2K: return cublas##X##syr2k_64(h, ul, tr, n, k, al, dA, lda, dB, ldb, be, dC, ldc); \
    case R_TRMM:                                                                                  \
        return cublas##X##trmm_64(h, sd, ul, tr, dg, m, n, al, dA, lda, dB, ldb, dC, ldc);        \
    case R_TRSM: return cublas##X##trsm_64(h, sd, ul, tr, dg, m, n, al, dA, lda, dC, ldc);        \
    default: break;                                                                               \
    }
#define HERM_(X)                                                                                  \
    switch (p->r) {                                                                               \
    case R_HEMM: return cublas##X##hemm_64(h, sd, ul, m, n, al, dA, lda, dB, ldb, be, dC, ldc);   \
    case R_HERK: return cublas##X##herk_64(h, ul, tr, n, k, al, dA, lda, be, dC, ldc);            \
    case R_HER2K: return cublas##X##her2k_64(h, ul, tr, n, k, al, dA, lda, dB, ldb, be, dC, ldc); \
    default: break;                                                                               \
    }
    switch (p->dt) {
    case TESS_S: CALLS_(S) break;
    case TESS_D: CALLS_(D) break;
    case TESS_C: CALLS_(C) HERM_(C) break;
    case TESS_Z: CALLS_(Z) HERM_(Z) break;
    }
#undef CALLS_
#undef HERM_
    return CUBLAS_STATUS_INVALID_VALUE;
#else
    return CUBLAS_STATUS_NOT_SUPPORTED; /* the level-3 rows need the _64 API (cuBLAS >= 12) */
#endif
}

/* cuBLAS-XT on host operands: TRMM out of place B -> C, TRSM in place on C. */
cublasStatus_t l3_xt_call(cublasXtHandle_t h, const struct prob *p, void *C, size_t ldc) {
    const cublasSideMode_t sd = p->side == 'L' ? CUBLAS_SIDE_LEFT : CUBLAS_SIDE_RIGHT;
    const cublasFillMode_t ul = p->uplo == 'U' ? CUBLAS_FILL_MODE_UPPER : CUBLAS_FILL_MODE_LOWER;
    const cublasOperation_t tr = cb_op(p->trans), N = CUBLAS_OP_N;
    const cublasDiagType_t dg = p->diag == 'U' ? CUBLAS_DIAG_UNIT : CUBLAS_DIAG_NON_UNIT;
    const size_t m = (size_t)p->m, n = (size_t)p->n, k = (size_t)p->k, lda = (size_t)p->lda,
                 ldb = (size_t)p->ldb;
    const void *al = p->alpha, *be = p->beta, *A = p->A, *B = p->B;
#define CALLS_(X)                                                                               \
    switch (p->r) {                                                                             \
    case R_GEMM: return cublasXt##X##gemm(h, N, N, m, n, k, al, A, lda, B, ldb, be, C, ldc);    \
    case R_SYMM: return cublasXt##X##symm(h, sd, ul, m, n, al, A, lda, B, ldb, be, C, ldc);     \
    case R_SYRK: return cublasXt##X##syrk(h, ul, tr, n, k, al, A, lda, be, C, ldc);             \
    case R_SYR2K: return cublasXt##X##syr2k(h, ul, tr, n, k, al, A, lda, B, ldb, be, C, ldc);   \
    case R_TRMM: return cublasXt##X##trmm(h, sd, ul, tr, dg, m, n, al, A, lda, B, ldb, C, ldc); \
    case R_TRSM: return cublasXt##X##trsm(h, sd, ul, tr, dg, m, n, al, A, lda, C, ldc);         \
    default: break;                                                                             \
    }
#define HERM_(X)                                                                              \
    switch (p->r) {                                                                           \
    case R_HEMM: return cublasXt##X##hemm(h, sd, ul, m, n, al, A, lda, B, ldb, be, C, ldc);   \
    case R_HERK: return cublasXt##X##herk(h, ul, tr, n, k, al, A, lda, be, C, ldc);           \
    case R_HER2K: return cublasXt##X##her2k(h, ul, tr, n, k, al, A, lda, B, ldb, be, C, ldc); \
    default: break;                                                                           \
    }
    switch (p->dt) {
    case TESS_S: CALLS_(S) break;
    case TESS_D: CALLS_(D) break;
    case TESS_C: CALLS_(C) HERM_(C) break;
    case TESS_Z: CALLS_(Z) HERM_(Z) break;
    }
#undef CALLS_
#undef HERM_
    return CUBLAS_STATUS_INVALID_VALUE;
}

/* tessera on host operands: TRMM and TRSM in place on C (a copy of B0). */
int l3_tess_call(const struct prob *p, void *C, int64_t ldc) {
    const tess_layout_t L = TESS_COL_MAJOR;
    const tess_side_t sd = p->side == 'L' ? TESS_LEFT : TESS_RIGHT;
    const tess_uplo_t ul = p->uplo == 'U' ? TESS_UPPER : TESS_LOWER;
    const tess_trans_t tr = p->trans == 'N'   ? TESS_NO_TRANS
                            : p->trans == 'T' ? TESS_TRANS
                                              : TESS_CONJ_TRANS;
    const tess_diag_t dg = p->diag == 'U' ? TESS_UNIT : TESS_NON_UNIT;
    const tess_dtype_t dt = p->dt;
    const int64_t m = p->m, n = p->n, k = p->k, lda = p->lda, ldb = p->ldb;
    const void *al = p->alpha, *be = p->beta, *A = p->A, *B = p->B;
    switch (p->r) {
    case R_GEMM:
        return tess_gemm(dt, L, TESS_NO_TRANS, TESS_NO_TRANS, m, n, k, al, A, lda, B, ldb, be, C,
                         ldc);
    case R_SYMM: return tess_symm(dt, L, sd, ul, m, n, al, A, lda, B, ldb, be, C, ldc);
    case R_HEMM: return tess_hemm(dt, L, sd, ul, m, n, al, A, lda, B, ldb, be, C, ldc);
    case R_SYRK: return tess_syrk(dt, L, ul, tr, n, k, al, A, lda, be, C, ldc);
    case R_HERK: return tess_herk(dt, L, ul, tr, n, k, al, A, lda, be, C, ldc);
    case R_SYR2K: return tess_syr2k(dt, L, ul, tr, n, k, al, A, lda, B, ldb, be, C, ldc);
    case R_HER2K: return tess_her2k(dt, L, ul, tr, n, k, al, A, lda, B, ldb, be, C, ldc);
    case R_TRMM: return tess_trmm(dt, L, sd, ul, tr, dg, m, n, al, A, lda, C, ldc);
    case R_TRSM: return tess_trsm(dt, L, sd, ul, tr, dg, m, n, al, A, lda, C, ldc);
    default: break;
    }
    return TESS_EINVAL;
}

/* ---- the check of cuBLAS TRMM with C == B -------------------------------------------------------- */

void trmm_inplace_check(tess_dtype_t dt, char *line, size_t len, FILE *csv) {
    static const int64_t shapes[2][2] = {{777, 1000}, {4096, 4096}};
    static const char sides[2] = {'L', 'R'}, uplos[2] = {'U', 'L'}, transes[3] = {'N', 'T', 'C'},
                      diags[2] = {'N', 'U'};
    size_t es = esize(dt);
    int total = 0, in_ok = 0, out_ok = 0, same = 0, failed = 0;
    char bad[TRMM_BAD] = "";
    double worst_in = 0, worst_out = 0;
    fprintf(stderr, "%ctrmm: checking cuBLAS TRMM with C == B (in place) on cuda:%d\n",
            prec_char(dt), o.dev[0]);
    for (int s = 0; s < 2 && !failed; s++) {
        int64_t m = shapes[s][0], n = shapes[s][1], ka = m > n ? m : n;
        size_t bbytes = (size_t)m * (size_t)n * es, abytes = (size_t)ka * (size_t)ka * es;
        char *A = malloc(abytes), *B = malloc(bbytes), *R1 = malloc(bbytes), *R2 = malloc(bbytes);
        void *dA = NULL, *dB = NULL, *dC = NULL;
        cublasHandle_t h = NULL;
        last_err[0] = 0;
        if (!A || !B || !R1 || !R2) {
            fail_msg("trmm check", "out of host memory", __FILE__, __LINE__);
            failed = 1;
        }
        if (!failed) {
            oracle_fill(dt, A, ka, ka, ka, 11 + (uint64_t)s);
            oracle_fill(dt, B, m, n, m, 12 + (uint64_t)s);
        }
        if (!failed &&
            (CU(cudaSetDevice(o.dev[0])) || CU(cudaMalloc(&dA, abytes)) ||
             CU(cudaMalloc(&dB, bbytes)) || CU(cudaMalloc(&dC, bbytes)) || CB(cublasCreate(&h)) ||
             CU(cudaMemcpy(dA, A, abytes, cudaMemcpyHostToDevice))))
            failed = 1;
        for (int a = 0; a < 2 && !failed; a++)
            for (int b = 0; b < 2 && !failed; b++)
                for (int t = 0; t < 3 && !failed; t++)
                    for (int d = 0; d < 2 && !failed; d++) {
                        struct prob p;
                        struct check_flags f;
                        prob_init(&p, R_TRMM, dt, sides[a], uplos[b], transes[t], diags[d], m, n, 0,
                                  A, ka, B, m);
                        p.threads = o.threads;
                        /* out of place into dC, then in place on dB (C == B) */
                        if (CU(cudaMemcpy(dB, B, bbytes, cudaMemcpyHostToDevice)) ||
                            CU(cudaMemset(dC, 0, bbytes)) ||
                            CB(l3_incore_call(h, &p, dA, dB, dC, m)) ||
                            CU(cudaMemcpy(R1, dC, bbytes, cudaMemcpyDeviceToHost)) ||
                            CB(l3_incore_call(h, &p, dA, dB, dB, m)) ||
                            CU(cudaMemcpy(R2, dB, bbytes, cudaMemcpyDeviceToHost))) {
                            failed = 1;
                            break;
                        }
                        if (prob_begin(&p, NULL, 0)) {
                            fail_msg("trmm check", "out of host memory", __FILE__, __LINE__);
                            failed = 1;
                            break;
                        }
                        double w1 = prob_check(&p, R1, m, &f), w2 = prob_check(&p, R2, m, &f);
                        prob_end(&p);
                        total++;
                        out_ok += w1 <= 1.0, in_ok += w2 <= 1.0;
                        same += memcmp(R1, R2, bbytes) == 0;
                        if (!(w1 <= worst_out)) worst_out = w1;
                        if (!(w2 <= worst_in)) worst_in = w2;
                        if (!(w2 <= 1.0) || !(w1 <= 1.0)) {
                            size_t len = strlen(bad);
                            if (len + 160 < sizeof bad)
                                snprintf(bad + len, sizeof bad - len,
                                         "%s %lldx%lld side %c uplo %c trans %c diag %c: in place "
                                         "%.1e, out of place %.1e",
                                         len ? ";" : "", (long long)m, (long long)n, sides[a],
                                         uplos[b], transes[t], diags[d], w2, w1);
                        }
                    }
        if (h) (void)CB(cublasDestroy(h));
        if (dA) (void)CU(cudaFree(dA));
        if (dB) (void)CU(cudaFree(dB));
        if (dC) (void)CU(cudaFree(dC));
        free(A), free(B), free(R1), free(R2);
    }
    if (failed) {
        snprintf(line, len, "cuBLAS %ctrmm with C == B: check FAILED to run: %s", prec_char(dt),
                 last_err);
        n_errors++;
    } else {
        snprintf(line, len,
                 "cuBLAS %ctrmm_64 with C == B (in place): %s: correct in %d/%d option sets "
                 "(worst error/bound %.1e), out of place correct in %d/%d (%.1e), bitwise equal "
                 "in %d/%d [side x uplo x transa x diag at 777x1000 and 4096x4096]%s%s",
                 prec_char(dt), in_ok == total ? "OK" : "WRONG", in_ok, total, worst_in, out_ok,
                 total, worst_out, same, total, bad[0] ? "; failing:" : "", bad);
    }
    printf("\n%s\n", line);
    fflush(stdout);
    if (csv) {
        /* precision .. row, kind, then 12 empty columns (block .. worst_ratio) */
        fprintf(csv, "%c,,trmm,,,,,\"cuBLAS trmm C == B\",trmm-inplace,,,,,,,,,,,,,%d,%d,%s,",
                prec_char(dt), total, failed ? 0 : total - in_ok,
                failed           ? "failed"
                : in_ok == total ? "ok"
                                 : "wrong");
        csv_str(csv, line);
        fputc('\n', csv);
        fflush(csv);
    }
}
