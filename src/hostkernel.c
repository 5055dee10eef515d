/* src/hostkernel.c: every tile kernel kind of the backend interface (backend.h) run on
 * host memory through the CPU BLAS table (hostblas.h): the host backend's stream threads
 * call it for the CPU worker and the emulated devices. Owns the mapping of kinds and
 * precisions to CBLAS calls, nothing else. */
#include "backend/backend.h"
#include "hostblas.h"

static enum CBLAS_SIDE side_(char c) { return c == 'L' ? CblasLeft : CblasRight; }
static enum CBLAS_UPLO uplo_(char c) { return c == 'U' ? CblasUpper : CblasLower; }
static enum CBLAS_TRANSPOSE trans_(char c) {
    return c == 'N' ? CblasNoTrans : c == 'T' ? CblasTrans : CblasConjTrans;
}
static enum CBLAS_DIAG diag_(char c) { return c == 'U' ? CblasUnit : CblasNonUnit; }

void tess__host_kernel(const struct tess__kernel *k) {
    const struct tess__hostblas *b = tess__hostblas();
    if (k->m < 0 || k->n < 0 || k->k < 0) return;
    if (k->kind == TESS__K_GEMM) {
        tess__host_gemm(k->dt, k->ta, k->tb, k->m, k->n, k->k, k->alpha, k->A, k->lda, k->B,
                        k->ldb, k->beta, k->C, k->ldc);
        return;
    }
    const enum CBLAS_ORDER o = CblasColMajor;
    enum CBLAS_SIDE sd = side_(k->side);
    enum CBLAS_UPLO ul = uplo_(k->uplo);
    enum CBLAS_TRANSPOSE tr = trans_(k->ta);
    enum CBLAS_DIAG dg = diag_(k->diag);
    /* blasint is int in the LP64 OpenBLAS: tile dimensions always fit */
    int m = (int)k->m, n = (int)k->n, kk = (int)k->k;
    int lda = (int)k->lda, ldb = (int)k->ldb, ldc = (int)k->ldc;
    const float *as = k->alpha, *bs = k->beta;
    const double *ad = k->alpha, *bd = k->beta;
    switch (k->dt) {
    case TESS_S:
        switch (k->kind) {
        case TESS__K_SYMM: b->ssymm(o, sd, ul, m, n, *as, k->A, lda, k->B, ldb, *bs, k->C, ldc); break;
        case TESS__K_SYRK: b->ssyrk(o, ul, tr, n, kk, *as, k->A, lda, *bs, k->C, ldc); break;
        case TESS__K_SYR2K: b->ssyr2k(o, ul, tr, n, kk, *as, k->A, lda, k->B, ldb, *bs, k->C, ldc); break;
        case TESS__K_TRMM: b->strmm(o, sd, ul, tr, dg, m, n, *as, k->A, lda, k->C, ldc); break;
        case TESS__K_TRSM: b->strsm(o, sd, ul, tr, dg, m, n, *as, k->A, lda, k->C, ldc); break;
        default: break;
        }
        break;
    case TESS_D:
        switch (k->kind) {
        case TESS__K_SYMM: b->dsymm(o, sd, ul, m, n, *ad, k->A, lda, k->B, ldb, *bd, k->C, ldc); break;
        case TESS__K_SYRK: b->dsyrk(o, ul, tr, n, kk, *ad, k->A, lda, *bd, k->C, ldc); break;
        case TESS__K_SYR2K: b->dsyr2k(o, ul, tr, n, kk, *ad, k->A, lda, k->B, ldb, *bd, k->C, ldc); break;
        case TESS__K_TRMM: b->dtrmm(o, sd, ul, tr, dg, m, n, *ad, k->A, lda, k->C, ldc); break;
        case TESS__K_TRSM: b->dtrsm(o, sd, ul, tr, dg, m, n, *ad, k->A, lda, k->C, ldc); break;
        default: break;
        }
        break;
    case TESS_C:
        switch (k->kind) {
        case TESS__K_SYMM: b->csymm(o, sd, ul, m, n, k->alpha, k->A, lda, k->B, ldb, k->beta, k->C, ldc); break;
        case TESS__K_HEMM: b->chemm(o, sd, ul, m, n, k->alpha, k->A, lda, k->B, ldb, k->beta, k->C, ldc); break;
        case TESS__K_SYRK: b->csyrk(o, ul, tr, n, kk, k->alpha, k->A, lda, k->beta, k->C, ldc); break;
        case TESS__K_HERK: b->cherk(o, ul, tr, n, kk, *as, k->A, lda, *bs, k->C, ldc); break;
        case TESS__K_SYR2K: b->csyr2k(o, ul, tr, n, kk, k->alpha, k->A, lda, k->B, ldb, k->beta, k->C, ldc); break;
        case TESS__K_HER2K: b->cher2k(o, ul, tr, n, kk, k->alpha, k->A, lda, k->B, ldb, *bs, k->C, ldc); break;
        case TESS__K_TRMM: b->ctrmm(o, sd, ul, tr, dg, m, n, k->alpha, k->A, lda, k->C, ldc); break;
        case TESS__K_TRSM: b->ctrsm(o, sd, ul, tr, dg, m, n, k->alpha, k->A, lda, k->C, ldc); break;
        default: break;
        }
        break;
    case TESS_Z:
        switch (k->kind) {
        case TESS__K_SYMM: b->zsymm(o, sd, ul, m, n, k->alpha, k->A, lda, k->B, ldb, k->beta, k->C, ldc); break;
        case TESS__K_HEMM: b->zhemm(o, sd, ul, m, n, k->alpha, k->A, lda, k->B, ldb, k->beta, k->C, ldc); break;
        case TESS__K_SYRK: b->zsyrk(o, ul, tr, n, kk, k->alpha, k->A, lda, k->beta, k->C, ldc); break;
        case TESS__K_HERK: b->zherk(o, ul, tr, n, kk, *ad, k->A, lda, *bd, k->C, ldc); break;
        case TESS__K_SYR2K: b->zsyr2k(o, ul, tr, n, kk, k->alpha, k->A, lda, k->B, ldb, k->beta, k->C, ldc); break;
        case TESS__K_HER2K: b->zher2k(o, ul, tr, n, kk, k->alpha, k->A, lda, k->B, ldb, *bd, k->C, ldc); break;
        case TESS__K_TRMM: b->ztrmm(o, sd, ul, tr, dg, m, n, k->alpha, k->A, lda, k->C, ldc); break;
        case TESS__K_TRSM: b->ztrsm(o, sd, ul, tr, dg, m, n, k->alpha, k->A, lda, k->C, ldc); break;
        default: break;
        }
        break;
    }
}
