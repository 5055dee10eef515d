/* scalapack_glue/glue.h: what the files of libtessera_scalapack.so share (pblas.c: the
 * PBLAS entry points and PBLAS's argument checks; route.c: the program's BLACS/PBLAS
 * symbols, the reference routines, knobs, counters, the grid cache and the routing).
 * Nothing here is exported; the exported names are in exports.map.
 *
 * One p?gemm_ call:
 *
 *   pblas.c   descriptors read as PB_CargFtoC does (9 or 11 entries -> 11, indices 0-based)
 *             context read with Cblacs_gridinfo; PBLAS's checks in PBLAS's order, each
 *             problem reported through PB_Cwarn, the info code through PB_Cabort (both the
 *             program's: found with dlsym, never defined here); PBLAS's quick return
 *   route.c   glue_gemm_route: the reference routine (dlsym(RTLD_NEXT)) or tessera's
 *             distributed GEMM (tess__pgemm_run) on a grid built once per BLACS context
 *
 * The other level-3 routines go straight to the reference in this increment (issue 7
 * stays open for their distributed versions).
 */
#ifndef TESS_SCALAPACK_GLUE_H
#define TESS_SCALAPACK_GLUE_H

#include <stdint.h>

#include "comm.h"

typedef int f_int;  /* INTEGER of the LP64 ScaLAPACK (PBLAS's Int) */

/* PBLAS's 11-entry descriptor (BLOCK_CYCLIC_2D_INB), 0-based positions. */
enum {
    GLUE_DTYPE_ = 0, GLUE_CTXT_, GLUE_M_, GLUE_N_, GLUE_IMB_, GLUE_INB_, GLUE_MB_, GLUE_NB_,
    GLUE_RSRC_, GLUE_CSRC_, GLUE_LLD_, GLUE_DLEN_
};
enum { GLUE_BLOCK_CYCLIC_2D = 1, GLUE_BLOCK_CYCLIC_2D_INB = 2 };

/* The level-3 routine kinds, one counter row each. */
enum glue_kind {
    GLUE_GEMM, GLUE_SYMM, GLUE_HEMM, GLUE_SYRK, GLUE_HERK, GLUE_SYR2K, GLUE_HER2K,
    GLUE_TRMM, GLUE_TRSM, GLUE_NKINDS
};
extern const char *const glue_kind_name[GLUE_NKINDS];  /* "gemm", "herk", ... */

/* ---- the program's BLACS and PBLAS symbols (route.c) ----------------------------------
 * Found with dlsym(RTLD_DEFAULT) at the first call: the program's own definition when it
 * has one (a handler it installed), else the ScaLAPACK library's. Any may be NULL. */
struct glue_syms {
    void (*gridinfo)(f_int ctxt, f_int *nprow, f_int *npcol, f_int *myrow, f_int *mycol);
    void (*blacs_get)(const f_int *ctxt, const f_int *what, f_int *val); /* Fortran door */
    void (*cabort)(f_int ctxt, char *rout, f_int info);                  /* PB_Cabort */
    void (*cwarn)(f_int ctxt, f_int line, char *rout, char *form, ...);  /* PB_Cwarn */
    void (*blacs_abort)(f_int ctxt, f_int code);                         /* Cblacs_abort */
};
const struct glue_syms *glue_syms(void);

/* The reference routine `name` ("pdgemm_") underneath this library: dlsym(RTLD_NEXT), cached
 * by the caller. Never NULL: without one nothing can compute the call, so the process stops
 * with a message. */
void *glue_reference(const char *name);

/* ---- counters (route.c) -------------------------------------------------------------- */
void glue_count_reference(enum glue_kind k, tess_dtype_t dt, double flops);
void glue_count_quick(enum glue_kind k, tess_dtype_t dt);
void glue_count_error(enum glue_kind k, tess_dtype_t dt);

/* ---- p?gemm_ after PBLAS's checks and quick return (route.c) --------------------------
 * Everything as PBLAS sees it after PB_CargFtoC: 0-based indices, 11-entry descriptors;
 * ta, tb upper case 'N', 'T' or 'C'. grid: the context's shape and this process's place.
 * ref: the reference routine, called with the original arguments (orig) when the call does
 * not go to tessera. */
struct glue_gemm_call {
    tess_dtype_t dt;
    char ta, tb;
    f_int m, n, k;
    const void *alpha, *beta;
    const void *A, *B;
    void *C;
    f_int ia, ja, ib, jb, ic, jc;      /* 0-based */
    const f_int *da, *db, *dc;         /* 11 entries each */
    f_int ctxt, nprow, npcol, myrow, mycol;
};
/* Runs the call (tessera or the reference); `reference` runs the original call. */
void glue_gemm_route(const struct glue_gemm_call *c, void (*reference)(void *arg), void *arg);

#if defined(__GNUC__)
#define GLUE_EXPORT __attribute__((visibility("default")))
#else
#define GLUE_EXPORT
#endif

#endif /* TESS_SCALAPACK_GLUE_H */
