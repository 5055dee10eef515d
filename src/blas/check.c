/* src/blas/check.c: the netlib contract of the drop-in library: each level-3 routine's
 * argument checks, in the order and with the positions of the reference Fortran BLAS, and
 * the calls to the program's error handlers. Owns no state; the handlers are looked up on
 * every (rare) error, so a handler loaded late is still found.
 *
 * The checks, per routine (position: condition), LSAME being case-insensitive:
 *   GEMM   1 transa not N/T/C   2 transb not N/T/C   3 m < 0   4 n < 0   5 k < 0
 *          8 lda < max(1, transa = N ? m : k)   10 ldb < max(1, transb = N ? k : n)
 *          13 ldc < max(1, m)
 *   SYMM, HEMM   1 side not L/R   2 uplo not U/L   3 m < 0   4 n < 0
 *          7 lda < max(1, side = L ? m : n)   9 ldb < max(1, m)   12 ldc < max(1, m)
 *   SYRK, HERK   1 uplo   2 trans (real SYRK: N/T/C, complex SYRK: N/T, HERK: N/C)
 *          3 n < 0   4 k < 0   7 lda < max(1, trans = N ? n : k)   10 ldc < max(1, n)
 *   SYR2K, HER2K 1 uplo   2 trans (as SYRK / HERK)   3 n < 0   4 k < 0
 *          7 lda < max(1, trans = N ? n : k)   9 ldb < the same   12 ldc < max(1, n)
 *   TRMM, TRSM   1 side   2 uplo   3 transa not N/T/C   4 diag not U/N   5 m < 0   6 n < 0
 *          9 lda < max(1, side = L ? m : n)   11 ldb < max(1, m)
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "../hostblas.h"
#include "blas.h"

static int one_of(char c, const char *set) { return c && strchr(set, c) != NULL; }

int tess__blas_check(const struct tess__blas_call *c) {
    int cplx = tess__dtypes[c->dt].complex_;
    switch (c->kind) {
    case TESS__BLAS_GEMM: {
        if (!one_of(c->ta, "NTC")) return 1;
        if (!one_of(c->tb, "NTC")) return 2;
        if (c->m < 0) return 3;
        if (c->n < 0) return 4;
        if (c->k < 0) return 5;
        int64_t nrowa = c->ta == 'N' ? c->m : c->k, nrowb = c->tb == 'N' ? c->k : c->n;
        if (c->lda < TESS__MAX(1, nrowa)) return 8;
        if (c->ldb < TESS__MAX(1, nrowb)) return 10;
        if (c->ldc < TESS__MAX(1, c->m)) return 13;
        return 0;
    }
    case TESS__BLAS_SYMM:
    case TESS__BLAS_HEMM: {
        if (!one_of(c->side, "LR")) return 1;
        if (!one_of(c->uplo, "UL")) return 2;
        if (c->m < 0) return 3;
        if (c->n < 0) return 4;
        int64_t nrowa = c->side == 'L' ? c->m : c->n;
        if (c->lda < TESS__MAX(1, nrowa)) return 7;
        if (c->ldb < TESS__MAX(1, c->m)) return 9;
        if (c->ldc < TESS__MAX(1, c->m)) return 12;
        return 0;
    }
    case TESS__BLAS_SYRK:
    case TESS__BLAS_HERK:
    case TESS__BLAS_SYR2K:
    case TESS__BLAS_HER2K: {
        int herm = c->kind == TESS__BLAS_HERK || c->kind == TESS__BLAS_HER2K;
        int two = c->kind == TESS__BLAS_SYR2K || c->kind == TESS__BLAS_HER2K;
        if (!one_of(c->uplo, "UL")) return 1;
        if (!one_of(c->ta, herm ? "NC" : cplx ? "NT" : "NTC")) return 2;
        if (c->n < 0) return 3;
        if (c->k < 0) return 4;
        int64_t nrowa = c->ta == 'N' ? c->n : c->k;
        if (c->lda < TESS__MAX(1, nrowa)) return 7;
        if (two && c->ldb < TESS__MAX(1, nrowa)) return 9;
        if (c->ldc < TESS__MAX(1, c->n)) return two ? 12 : 10;
        return 0;
    }
    case TESS__BLAS_TRMM:
    case TESS__BLAS_TRSM: {
        if (!one_of(c->side, "LR")) return 1;
        if (!one_of(c->uplo, "UL")) return 2;
        if (!one_of(c->ta, "NTC")) return 3;
        if (!one_of(c->diag, "UN")) return 4;
        if (c->m < 0) return 5;
        if (c->n < 0) return 6;
        int64_t nrowa = c->side == 'L' ? c->m : c->n;
        if (c->lda < TESS__MAX(1, nrowa)) return 9;
        if (c->ldb < TESS__MAX(1, c->m)) return 11;
        return 0;
    }
    case TESS__BLAS_NKINDS: break;
    }
    return 0;
}

/* A symbol of the program (global scope) or, failing that, of the CPU BLAS. We define none
 * of these names, so the global lookup cannot find ourselves. */
static void *find_handler(const char *sym) {
    void *f = dlsym(RTLD_DEFAULT, sym);
    if (!f) {
        const struct tess__hostblas *hb = tess__hostblas();
        if (hb) f = dlsym(hb->handle, sym);
    }
    return f;
}

void tess__blas_xerbla(const char *name, int info) {
    /* gfortran's convention: the string's length comes as a hidden trailing argument */
    void (*xerbla)(const char *, const int *, size_t);
    void *f = find_handler("xerbla_");
    if (f) {
        memcpy(&xerbla, &f, sizeof f);
        xerbla(name, &info, strlen(name));
        return;
    }
    fprintf(stderr, " ** On entry to %6s parameter number %2d had an illegal value\n", name,
            info);
}

void tess__blas_cblas_xerbla(int pos, const char *rout, const char *form, int value) {
    /* The reference CBLAS passes cblas_xerbla the position its Fortran call saw and sets the
     * global RowMajorStrg so that the handler swaps row-major positions back; we pass the
     * CBLAS position itself, so a handler that reads RowMajorStrg must see 0. */
    int *row_major_strg = dlsym(RTLD_DEFAULT, "RowMajorStrg");
    if (row_major_strg) *row_major_strg = 0;
    void (*cblas_xerbla)(int, const char *, const char *, ...);
    void *f = find_handler("cblas_xerbla");
    if (f) {
        memcpy(&cblas_xerbla, &f, sizeof f);
        cblas_xerbla(pos, rout, form, value);
        return;
    }
    fprintf(stderr, "Parameter %d to routine %s was incorrect\n", pos, rout);
    if (*form) fprintf(stderr, form, value);
}
