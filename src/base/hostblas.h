/* src/base/hostblas.h: the CPU BLAS (OpenBLAS by default) that tessera itself calls, as function
 * pointers resolved once with dlopen + dlsym from a named library (TESSERA_CPU_BLAS, default
 * libopenblas.so.0). tessera never calls a BLAS symbol by name: when the drop-in library
 * (libtessera_blas.so) is preloaded in front of a program, its exported dgemm_/cblas_dgemm
 * would otherwise be what tessera's own CPU kernels call, and calls would loop back. */
#ifndef TESS_HOSTBLAS_H
#define TESS_HOSTBLAS_H

#include <cblas.h>

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

#endif
