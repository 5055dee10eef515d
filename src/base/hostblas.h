/* src/base/hostblas.h: the CPU BLAS (OpenBLAS by default) that tessera itself calls, as function
 * pointers resolved once with dlopen + dlsym from a named library (TESSERA_CPU_BLAS, default
 * libopenblas.so.0). tessera never calls a BLAS symbol by name: when the drop-in library
 * (libtessera_blas.so) is preloaded in front of a program, its exported dgemm_/cblas_dgemm
 * would otherwise be what tessera's own CPU kernels call, and calls would loop back.
 * The LAPACK routines tessera runs on a tile (potrf, getrf, laswp) come from the same library
 * and are optional: NULL when it has none (OpenBLAS's libopenblas.so.0 carries LAPACK). */
#ifndef TESS_HOSTBLAS_H
#define TESS_HOSTBLAS_H

#include <stddef.h>

#include <cblas.h>

/* LAPACK's xPOTRF through its Fortran symbol (spotrf_, ...): column-major, LP64 ints, every
 * argument by reference, the length of the CHARACTER uplo as a trailing hidden argument
 * (gfortran's size_t; pass 1). a is float, double, float complex or double complex. */
typedef void tess__potrf_fn(const char *uplo, const int *n, void *a, const int *lda, int *info,
                            size_t uplo_len);
/* LAPACK's xGETRF (sgetrf_, ...): the m x n a = P L U in place, ipiv[0 .. min(m, n) - 1] its
 * 1-based pivots; LP64 ints by reference, no CHARACTER argument. */
typedef void tess__getrf_fn(const int *m, const int *n, void *a, const int *lda, int *ipiv,
                            int *info);
/* LAPACK's xLASWP (slaswp_, ...): rows k1 .. k2 (1-based) of the n columns of a interchanged
 * with rows ipiv[k1 - 1 ..] in order (incx 1); LP64 ints by reference. */
typedef void tess__laswp_fn(const int *n, void *a, const int *lda, const int *k1, const int *k2,
                            const int *ipiv, const int *incx);

struct tess__hostblas {
    __typeof__(cblas_sgemm) *sgemm;
    __typeof__(cblas_dgemm) *dgemm;
    __typeof__(cblas_cgemm) *cgemm;
    __typeof__(cblas_zgemm) *zgemm;
    __typeof__(cblas_ssymm) *ssymm;
    __typeof__(cblas_dsymm) *dsymm;
    __typeof__(cblas_csymm) *csymm;
    __typeof__(cblas_zsymm) *zsymm;
    __typeof__(cblas_chemm) *chemm;
    __typeof__(cblas_zhemm) *zhemm;
    __typeof__(cblas_ssyrk) *ssyrk;
    __typeof__(cblas_dsyrk) *dsyrk;
    __typeof__(cblas_csyrk) *csyrk;
    __typeof__(cblas_zsyrk) *zsyrk;
    __typeof__(cblas_cherk) *cherk;
    __typeof__(cblas_zherk) *zherk;
    __typeof__(cblas_ssyr2k) *ssyr2k;
    __typeof__(cblas_dsyr2k) *dsyr2k;
    __typeof__(cblas_csyr2k) *csyr2k;
    __typeof__(cblas_zsyr2k) *zsyr2k;
    __typeof__(cblas_cher2k) *cher2k;
    __typeof__(cblas_zher2k) *zher2k;
    __typeof__(cblas_strmm) *strmm;
    __typeof__(cblas_dtrmm) *dtrmm;
    __typeof__(cblas_ctrmm) *ctrmm;
    __typeof__(cblas_ztrmm) *ztrmm;
    __typeof__(cblas_strsm) *strsm;
    __typeof__(cblas_dtrsm) *dtrsm;
    __typeof__(cblas_ctrsm) *ctrsm;
    __typeof__(cblas_ztrsm) *ztrsm;
    tess__potrf_fn *spotrf; /* LAPACK, optional: NULL if absent */
    tess__potrf_fn *dpotrf;
    tess__potrf_fn *cpotrf;
    tess__potrf_fn *zpotrf;
    tess__getrf_fn *sgetrf; /* LAPACK, optional too */
    tess__getrf_fn *dgetrf;
    tess__getrf_fn *cgetrf;
    tess__getrf_fn *zgetrf;
    tess__laswp_fn *slaswp; /* LAPACK, optional too */
    tess__laswp_fn *dlaswp;
    tess__laswp_fn *claswp;
    tess__laswp_fn *zlaswp;
    int (*get_num_threads)(void); /* openblas_get_num_threads, NULL if absent */
    void (*set_num_threads)(int); /* openblas_set_num_threads, NULL if absent */
    void *handle;                 /* the dlopen handle */
    char name[256];               /* the library it came from */
};

/* Resolve the CPU BLAS once (thread-safe; later calls return the first answer): TESS_OK,
 * or TESS_ENOSYS with a message naming TESSERA_CPU_BLAS and its value when the library
 * cannot be loaded, lacks a symbol or is tessera's own (the drop-in: its routines would
 * call back into tessera). The runtime calls it at start and refuses to start without it. */
int tess__hostblas_load(void);
/* The resolved table; valid (non-NULL) once tess__hostblas_load returned TESS_OK. */
const struct tess__hostblas *tess__hostblas(void);
/* xPOTRF of precision dt (a tess_dtype_t: 0 s, 1 d, 2 c, 3 z): *fn gets the routine and TESS_OK,
 * or TESS_ENOSYS with a message (who: first) naming the missing symbol, the library and
 * TESSERA_CPU_BLAS (no CPU BLAS loaded, or one without LAPACK); TESS_EINVAL for a bad dt. */
int tess__hostblas_potrf(int dt, const char *who, tess__potrf_fn **fn);
/* xGETRF and xLASWP of precision dt, answered as tess__hostblas_potrf. */
int tess__hostblas_getrf(int dt, const char *who, tess__getrf_fn **fn);
int tess__hostblas_laswp(int dt, const char *who, tess__laswp_fn **fn);

#endif
