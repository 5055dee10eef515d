/* tests/l3_dispatch.c: the routine x precision dispatch of the level-3 tests, to tessera
 * and to the CBLAS (tests/l3_dispatch.h). */
#include "l3_dispatch.h"

#include <cblas.h>

const char *const l3_rname[L3_NR] = {"gemm",  "symm",  "hemm", "syrk", "herk",
                                     "syr2k", "her2k", "trmm", "trsm"};

static float fl(const void *p) { return p ? *(const float *)p : 0.0f; }
static double db(const void *p) { return p ? *(const double *)p : 0.0; }

int l3_call(const struct l3_args *a) {
    tess_layout_t L = (tess_layout_t)a->layout;
    tess_side_t sd = (tess_side_t)a->side;
    tess_uplo_t ul = (tess_uplo_t)a->uplo;
    tess_trans_t ta = (tess_trans_t)a->ta, tb = (tess_trans_t)a->tb;
    tess_diag_t dg = (tess_diag_t)a->diag;
    tess_dtype_t dt = a->dt;
    int64_t m = a->m, n = a->n, k = a->k;
    const void *al = a->alpha, *be = a->beta, *A = a->A, *B = a->B;
    void *C = a->C;
    int64_t lda = a->lda, ldb = a->ldb, ldc = a->ldc;
    if (!a->typed) {
        switch (a->r) {
        case L3_GEMM: return tess_gemm(dt, L, ta, tb, m, n, k, al, A, lda, B, ldb, be, C, ldc);
        case L3_SYMM: return tess_symm(dt, L, sd, ul, m, n, al, A, lda, B, ldb, be, C, ldc);
        case L3_HEMM: return tess_hemm(dt, L, sd, ul, m, n, al, A, lda, B, ldb, be, C, ldc);
        case L3_SYRK: return tess_syrk(dt, L, ul, ta, n, k, al, A, lda, be, C, ldc);
        case L3_HERK: return tess_herk(dt, L, ul, ta, n, k, al, A, lda, be, C, ldc);
        case L3_SYR2K: return tess_syr2k(dt, L, ul, ta, n, k, al, A, lda, B, ldb, be, C, ldc);
        case L3_HER2K: return tess_her2k(dt, L, ul, ta, n, k, al, A, lda, B, ldb, be, C, ldc);
        case L3_TRMM: return tess_trmm(dt, L, sd, ul, ta, dg, m, n, al, A, lda, C, ldc);
        case L3_TRSM: return tess_trsm(dt, L, sd, ul, ta, dg, m, n, al, A, lda, C, ldc);
        default: return -100;
        }
    }
    switch (a->r) {
    case L3_GEMM:
        switch (dt) {
        case TESS_S: return tess_sgemm(L, ta, tb, m, n, k, fl(al), A, lda, B, ldb, fl(be), C, ldc);
        case TESS_D: return tess_dgemm(L, ta, tb, m, n, k, db(al), A, lda, B, ldb, db(be), C, ldc);
        case TESS_C: return tess_cgemm(L, ta, tb, m, n, k, al, A, lda, B, ldb, be, C, ldc);
        case TESS_Z: return tess_zgemm(L, ta, tb, m, n, k, al, A, lda, B, ldb, be, C, ldc);
        }
        break;
    case L3_SYMM:
        switch (dt) {
        case TESS_S: return tess_ssymm(L, sd, ul, m, n, fl(al), A, lda, B, ldb, fl(be), C, ldc);
        case TESS_D: return tess_dsymm(L, sd, ul, m, n, db(al), A, lda, B, ldb, db(be), C, ldc);
        case TESS_C: return tess_csymm(L, sd, ul, m, n, al, A, lda, B, ldb, be, C, ldc);
        case TESS_Z: return tess_zsymm(L, sd, ul, m, n, al, A, lda, B, ldb, be, C, ldc);
        }
        break;
    case L3_HEMM:
        if (dt == TESS_C) return tess_chemm(L, sd, ul, m, n, al, A, lda, B, ldb, be, C, ldc);
        if (dt == TESS_Z) return tess_zhemm(L, sd, ul, m, n, al, A, lda, B, ldb, be, C, ldc);
        break;
    case L3_SYRK:
        switch (dt) {
        case TESS_S: return tess_ssyrk(L, ul, ta, n, k, fl(al), A, lda, fl(be), C, ldc);
        case TESS_D: return tess_dsyrk(L, ul, ta, n, k, db(al), A, lda, db(be), C, ldc);
        case TESS_C: return tess_csyrk(L, ul, ta, n, k, al, A, lda, be, C, ldc);
        case TESS_Z: return tess_zsyrk(L, ul, ta, n, k, al, A, lda, be, C, ldc);
        }
        break;
    case L3_HERK:
        if (dt == TESS_C) return tess_cherk(L, ul, ta, n, k, fl(al), A, lda, fl(be), C, ldc);
        if (dt == TESS_Z) return tess_zherk(L, ul, ta, n, k, db(al), A, lda, db(be), C, ldc);
        break;
    case L3_SYR2K:
        switch (dt) {
        case TESS_S: return tess_ssyr2k(L, ul, ta, n, k, fl(al), A, lda, B, ldb, fl(be), C, ldc);
        case TESS_D: return tess_dsyr2k(L, ul, ta, n, k, db(al), A, lda, B, ldb, db(be), C, ldc);
        case TESS_C: return tess_csyr2k(L, ul, ta, n, k, al, A, lda, B, ldb, be, C, ldc);
        case TESS_Z: return tess_zsyr2k(L, ul, ta, n, k, al, A, lda, B, ldb, be, C, ldc);
        }
        break;
    case L3_HER2K:
        if (dt == TESS_C) return tess_cher2k(L, ul, ta, n, k, al, A, lda, B, ldb, fl(be), C, ldc);
        if (dt == TESS_Z) return tess_zher2k(L, ul, ta, n, k, al, A, lda, B, ldb, db(be), C, ldc);
        break;
    case L3_TRMM:
        switch (dt) {
        case TESS_S: return tess_strmm(L, sd, ul, ta, dg, m, n, fl(al), A, lda, C, ldc);
        case TESS_D: return tess_dtrmm(L, sd, ul, ta, dg, m, n, db(al), A, lda, C, ldc);
        case TESS_C: return tess_ctrmm(L, sd, ul, ta, dg, m, n, al, A, lda, C, ldc);
        case TESS_Z: return tess_ztrmm(L, sd, ul, ta, dg, m, n, al, A, lda, C, ldc);
        }
        break;
    case L3_TRSM:
        switch (dt) {
        case TESS_S: return tess_strsm(L, sd, ul, ta, dg, m, n, fl(al), A, lda, C, ldc);
        case TESS_D: return tess_dtrsm(L, sd, ul, ta, dg, m, n, db(al), A, lda, C, ldc);
        case TESS_C: return tess_ctrsm(L, sd, ul, ta, dg, m, n, al, A, lda, C, ldc);
        case TESS_Z: return tess_ztrsm(L, sd, ul, ta, dg, m, n, al, A, lda, C, ldc);
        }
        break;
    default: break;
    }
    return -100;
}

void l3_cblas(const struct l3_args *a) {
    enum CBLAS_ORDER L = (enum CBLAS_ORDER)a->layout;
    enum CBLAS_SIDE sd = (enum CBLAS_SIDE)a->side;
    enum CBLAS_UPLO ul = (enum CBLAS_UPLO)a->uplo;
    int tav = a->ta, tbv = a->tb;
    if (!ref_is_complex(a->dt)) {
        if (tav == TESS_CONJ_TRANS) tav = TESS_TRANS;
        if (tbv == TESS_CONJ_TRANS) tbv = TESS_TRANS;
    }
    enum CBLAS_TRANSPOSE ta = (enum CBLAS_TRANSPOSE)tav, tb = (enum CBLAS_TRANSPOSE)tbv;
    enum CBLAS_DIAG dg = (enum CBLAS_DIAG)a->diag;
    blasint m = (blasint)a->m, n = (blasint)a->n, k = (blasint)a->k;
    blasint lda = (blasint)a->lda, ldb = (blasint)a->ldb, ldc = (blasint)a->ldc;
    const void *al = a->alpha, *be = a->beta, *A = a->A, *B = a->B;
    void *C = a->C;
    switch (a->r) {
    case L3_GEMM:
        switch (a->dt) {
        case TESS_S:
            cblas_sgemm(L, ta, tb, m, n, k, fl(al), A, lda, B, ldb, fl(be), C, ldc);
            return;
        case TESS_D:
            cblas_dgemm(L, ta, tb, m, n, k, db(al), A, lda, B, ldb, db(be), C, ldc);
            return;
        case TESS_C: cblas_cgemm(L, ta, tb, m, n, k, al, A, lda, B, ldb, be, C, ldc); return;
        case TESS_Z: cblas_zgemm(L, ta, tb, m, n, k, al, A, lda, B, ldb, be, C, ldc); return;
        }
        return;
    case L3_SYMM:
        switch (a->dt) {
        case TESS_S: cblas_ssymm(L, sd, ul, m, n, fl(al), A, lda, B, ldb, fl(be), C, ldc); return;
        case TESS_D: cblas_dsymm(L, sd, ul, m, n, db(al), A, lda, B, ldb, db(be), C, ldc); return;
        case TESS_C: cblas_csymm(L, sd, ul, m, n, al, A, lda, B, ldb, be, C, ldc); return;
        case TESS_Z: cblas_zsymm(L, sd, ul, m, n, al, A, lda, B, ldb, be, C, ldc); return;
        }
        return;
    case L3_HEMM:
        if (a->dt == TESS_C)
            cblas_chemm(L, sd, ul, m, n, al, A, lda, B, ldb, be, C, ldc);
        else
            cblas_zhemm(L, sd, ul, m, n, al, A, lda, B, ldb, be, C, ldc);
        return;
    case L3_SYRK:
        switch (a->dt) {
        case TESS_S: cblas_ssyrk(L, ul, ta, n, k, fl(al), A, lda, fl(be), C, ldc); return;
        case TESS_D: cblas_dsyrk(L, ul, ta, n, k, db(al), A, lda, db(be), C, ldc); return;
        case TESS_C: cblas_csyrk(L, ul, ta, n, k, al, A, lda, be, C, ldc); return;
        case TESS_Z: cblas_zsyrk(L, ul, ta, n, k, al, A, lda, be, C, ldc); return;
        }
        return;
    case L3_HERK:
        if (a->dt == TESS_C)
            cblas_cherk(L, ul, ta, n, k, fl(al), A, lda, fl(be), C, ldc);
        else
            cblas_zherk(L, ul, ta, n, k, db(al), A, lda, db(be), C, ldc);
        return;
    case L3_SYR2K:
        switch (a->dt) {
        case TESS_S: cblas_ssyr2k(L, ul, ta, n, k, fl(al), A, lda, B, ldb, fl(be), C, ldc); return;
        case TESS_D: cblas_dsyr2k(L, ul, ta, n, k, db(al), A, lda, B, ldb, db(be), C, ldc); return;
        case TESS_C: cblas_csyr2k(L, ul, ta, n, k, al, A, lda, B, ldb, be, C, ldc); return;
        case TESS_Z: cblas_zsyr2k(L, ul, ta, n, k, al, A, lda, B, ldb, be, C, ldc); return;
        }
        return;
    case L3_HER2K:
        if (a->dt == TESS_C)
            cblas_cher2k(L, ul, ta, n, k, al, A, lda, B, ldb, fl(be), C, ldc);
        else
            cblas_zher2k(L, ul, ta, n, k, al, A, lda, B, ldb, db(be), C, ldc);
        return;
    case L3_TRMM:
    case L3_TRSM: {
        bool mm = a->r == L3_TRMM;
        switch (a->dt) {
        case TESS_S:
            (mm ? cblas_strmm : cblas_strsm)(L, sd, ul, ta, dg, m, n, fl(al), A, lda, C, ldc);
            return;
        case TESS_D:
            (mm ? cblas_dtrmm : cblas_dtrsm)(L, sd, ul, ta, dg, m, n, db(al), A, lda, C, ldc);
            return;
        case TESS_C:
            (mm ? cblas_ctrmm : cblas_ctrsm)(L, sd, ul, ta, dg, m, n, al, A, lda, C, ldc);
            return;
        case TESS_Z:
            (mm ? cblas_ztrmm : cblas_ztrsm)(L, sd, ul, ta, dg, m, n, al, A, lda, C, ldc);
            return;
        }
        return;
    }
    default: return;
    }
}
