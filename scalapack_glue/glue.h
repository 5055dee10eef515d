/* scalapack_glue/glue.h: what the files of libtessera_scalapack.so share; nothing here is
 * exported (exports.map). One PBLAS level-3 call: pblas.c reads the arguments as
 * PB_CargFtoC does, runs PBLAS's checks (pbcheck.c) and quick return, then the routine's
 * path with the reference routine as the way out: route.c (the policy, the context's grid,
 * the agreement, the failure policy; p?gemm_), reduce.c (p?symm_ ... p?trmm_ as reductions
 * to the distributed GEMM), trsm.c (p?trsm_), over dist.c (distributed temporaries, the
 * GEMM and ScaLAPACK-auxiliary calls). state.c: the program's BLACS/PBLAS symbols, the
 * reference and auxiliary routines, knobs, counters, the exit summary.
 */
#ifndef TESS_SCALAPACK_GLUE_H
#define TESS_SCALAPACK_GLUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "autostart.h"
#include "comm.h"

typedef int f_int; /* INTEGER of the LP64 ScaLAPACK (PBLAS's Int) */

/* PBLAS's 11-entry descriptor (BLOCK_CYCLIC_2D_INB), 0-based positions. */
enum {
    GLUE_DTYPE_ = 0,
    GLUE_CTXT_,
    GLUE_M_,
    GLUE_N_,
    GLUE_IMB_,
    GLUE_INB_,
    GLUE_MB_,
    GLUE_NB_,
    GLUE_RSRC_,
    GLUE_CSRC_,
    GLUE_LLD_,
    GLUE_DLEN_
};
enum { GLUE_BLOCK_CYCLIC_2D = 1, GLUE_BLOCK_CYCLIC_2D_INB = 2 };

/* The routine kinds, one counter row each: PBLAS level 3, then the solvers (solve.c). */
enum glue_kind {
    GLUE_GEMM,
    GLUE_SYMM,
    GLUE_HEMM,
    GLUE_SYRK,
    GLUE_HERK,
    GLUE_SYR2K,
    GLUE_HER2K,
    GLUE_TRMM,
    GLUE_TRSM,
    GLUE_POTRF,
    GLUE_POTRS,
    GLUE_POSV,
    GLUE_GETRF,
    GLUE_GETRS,
    GLUE_GESV,
    GLUE_NKINDS
};
extern const char *const glue_kind_name[GLUE_NKINDS]; /* "gemm", "herk", ... */

#define GLUE_MIN(a, b) ((a) < (b) ? (a) : (b))
#define GLUE_MAX(a, b) ((a) > (b) ? (a) : (b))

/* ---- one call, as PBLAS sees it after its checks --------------------------------------
 * Everything after PB_CargFtoC: 0-based indices, 11-entry descriptors, letters upper case
 * (real routines' 'C' already read as 'T'). Letters a routine does not take are 0. The
 * scalars are copies in the routine's precision: a real alpha or beta of HERK/HER2K is
 * widened to a complex one with imaginary part 0. */
struct glue_call {
    enum glue_kind kind;
    tess_dtype_t dt;
    char side, uplo, ta, tb, diag; /* ta: TRANS (TRANSA); tb: GEMM's TRANSB */
    f_int m, n, k;                 /* the routine's sizes; SYRK family: m = n */
    tess__scalar_t alpha, beta;    /* TRMM/TRSM: beta unused (0) */
    const void *A, *B;
    void *C;                      /* the output: C, or TRMM's/TRSM's B (then B is NULL) */
    f_int ia, ja, ib, jb, ic, jc; /* 0-based */
    const f_int *da, *db, *dc;    /* 11 entries each (db NULL where there is no B) */
    f_int ctxt, nprow, npcol, myrow, mycol;
    const char *rout; /* PBLAS's name of the routine ("PDGEMM"), for reports */
};

/* The order of a routine's triangular or symmetric A (m for SIDE = 'L', else n). */
static inline f_int glue_order_a(const struct glue_call *c) { return c->side == 'L' ? c->m : c->n; }

/* ---- PBLAS's argument reading and checks (pbcheck.c) --------------------------------- */
char glue_upcase(char c);
/* PB_CargFtoC: a 9-entry (DTYPE_ = 1) or 11-entry (DTYPE_ = 2) descriptor into the 11-entry
 * form, Fortran indices into 0-based ones. Any other DTYPE_ keeps DTYPE_ and CTXT_ (the
 * check then reports DTYPE_). */
void glue_arg_ftoc(f_int i, f_int j, const f_int *in, f_int *ic, f_int *jc, f_int out[GLUE_DLEN_]);
/* The routine's checks in PBLAS's order: c holds the kind, precision, letters (upper case,
 * as passed), sizes, offsets and descriptors; the context's shape and this process's place
 * are filled in. Each problem goes to the program's PB_Cwarn with PBLAS's text; returns
 * PBLAS's info code (0: good). rout: "PDSYMM". */
f_int glue_check(struct glue_call *c, const char *rout);
/* PBLAS's way out of a bad call, after its PB_Cwarn texts: counted as an argument error,
 * then the program's PB_Cabort(ctxt, rout, info) (without one, a line on stderr). */
void glue_report(const struct glue_call *c, const char *rout, f_int info);

/* ---- the program's BLACS and PBLAS symbols (state.c) ----------------------------------
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

/* ScaLAPACK's auxiliary routines of precision dt the reductions use, looked up once
 * (dlsym(RTLD_NEXT), then RTLD_DEFAULT); a member is NULL when the library lacks it, and
 * the call then goes to the reference routine. PBLAS's p?tradd_/p?geadd_ are C (they take
 * 9- and 11-entry descriptors); p?trtri_ is Fortran (9-entry descriptors, hidden lengths). */
struct glue_aux {
    void (*tradd)(const char *uplo, const char *trans, const f_int *m, const f_int *n,
                  const void *alpha, const void *A, const f_int *ia, const f_int *ja,
                  const f_int *desca, const void *beta, void *C, const f_int *ic, const f_int *jc,
                  const f_int *descc);
    void (*geadd)(const char *trans, const f_int *m, const f_int *n, const void *alpha,
                  const void *A, const f_int *ia, const f_int *ja, const f_int *desca,
                  const void *beta, void *C, const f_int *ic, const f_int *jc, const f_int *descc);
    void (*trtri)(const char *uplo, const char *diag, const f_int *n, void *A, const f_int *ia,
                  const f_int *ja, const f_int *desca, f_int *info, size_t luplo, size_t ldiag);
};
const struct glue_aux *glue_aux(tess_dtype_t dt);

/* ---- knobs (state.c), read once at the first call ---------------------------------- */
struct glue_knobs {
    int force;          /* TESSERA_SCALAPACK_FORCE */
    int64_t min_dim;    /* TESSERA_SCALAPACK_MIN_DIM */
    double min_volume;  /* TESSERA_SCALAPACK_MIN_VOLUME */
    int verbose;        /* TESSERA_SCALAPACK_VERBOSE */
    int64_t trsm_block; /* TESSERA_SCALAPACK_TRSM_BLOCK */
    int ok;             /* every TESSERA_* knob taken; else every call goes to the reference */
};
const struct glue_knobs *glue_knobs(void);
int glue_world_rank(void); /* MPI_COMM_WORLD rank, -1 before MPI */

/* ---- counters (state.c) ------------------------------------------------------------ */
void glue_count_reference(enum glue_kind k, tess_dtype_t dt, double flops);
void glue_count_tessera(enum glue_kind k, tess_dtype_t dt, double flops);
void glue_count_quick(enum glue_kind k, tess_dtype_t dt);
void glue_count_error(enum glue_kind k, tess_dtype_t dt);
void glue_count_fallback(enum glue_kind k, tess_dtype_t dt);
/* of the tessera calls: a distributed factorization whose panels stayed on the devices */
void glue_count_device(enum glue_kind k, tess_dtype_t dt);

/* ---- the node runtime (state.c) ---------------------------------------------------- */
/* Started at the first call sent to tessera (src/autostart.c); true when it is up and worth
 * using (any device when forced; unforced, a device other than the CPU worker), never in a
 * child forked after the first call. tess__autostart_off: no device left. */
bool glue_devices_ready(void);

/* ---- where a call runs (route.c) ----------------------------------------------------- */

/* The whole operation's flops (the counters'): GEMM 2mnk, SYMM 2mnk_a, SYRK n(n+1)k,
 * SYR2K 2n(n+1)k, TRMM/TRSM m n k_a (times 4 for complex); 0 when alpha = 0. */
double glue_call_flops(const struct glue_call *c);

/* Step 1, global: the tessera grid this call would run on, or NULL when it goes to the
 * reference (replicated operand, knobs unreadable, below the size thresholds unforced, no
 * grid for the context). Every process of the context gets the same answer; building the
 * grid the first time is collective. */
tess_grid_t *glue_route_grid(const struct glue_call *c);
/* The tessera grid of BLACS context ctxt (built on first use: collective over the context's
 * processes), NULL when it cannot be had (the same answer on every process). */
tess_grid_t *glue_context_grid(f_int ctxt);

/* p?potrf_ (uplo 'L' or 'U') on grid g (ppotrf.c), for a call whose global arguments passed
 * the checks (9-entry descriptor d, MB_ = NB_, ia, ja (0-based) on block boundaries, n >= 1,
 * sub(A) inside A); local_ok: this process's own (LLD_A). Collective: every process takes
 * it or none (TESS_OK with *info, or a status, the same everywhere); *wrote: A was written
 * (its input is lost). */
int glue_ppotrf(tess_grid_t *g, tess_dtype_t dt, char uplo, int64_t n, void *A, int64_t ia,
                int64_t ja, const f_int *d, bool local_ok, int64_t *info, bool *wrote);
/* p?getrf_ on grid g (pgetrf.c), for a call whose global arguments passed the checks (as
 * glue_ppotrf's; m, n >= 1): taken where the grid is one process row whose transport is
 * the device one on one node and ia, ja start a block, else TESS_ENOSYS with nothing
 * written (the same answer everywhere). Collective: TESS_OK with *info and IPIV written
 * as ScaLAPACK's, or a status, the same everywhere; *wrote: A was written. */
int glue_pgetrf(tess_grid_t *g, tess_dtype_t dt, int64_t m, int64_t n, void *A, int64_t ia,
                int64_t ja, const f_int *d, bool local_ok, f_int *ipiv, int64_t *info, bool *wrote);
/* p?getrf_ on a grid of several process rows (pgetrf_grid.c): as glue_pgetrf, sub(A) moved
 * to one process row of the same processes and back; TESS_ENOSYS (nothing written) where
 * that row's transport is not the device one on one node or ia, ja do not start a block. A
 * failure before the move back leaves A and IPIV as they were (*wrote false). */
int glue_pgetrf_grid(tess_grid_t *g, tess_dtype_t dt, int64_t m, int64_t n, void *A, int64_t ia,
                     int64_t ja, const f_int *d, bool local_ok, f_int *ipiv, int64_t *info,
                     bool *wrote);
/* Step 2, collective: how the call goes on, the same answer on every process.
 *   GLUE_TESSERA    every process can take the call (local_ok: its own preparations, e.g.
 *                   temporaries allocated; the runtime up; comm/ takes the descriptors)
 *                   and passed the same global arguments;
 *   GLUE_REFERENCE  the same arguments everywhere, but some process cannot take it: the
 *                   caller runs the reference routine (nothing was computed);
 *   GLUE_REPORTED   the processes passed different global arguments (letters, sizes,
 *                   scalars, offsets, descriptors but CTXT_ and LLD_): reported as PBLAS
 *                   reports a bad argument, the same PB_Cwarn texts and PB_Cabort code on
 *                   every process (glue_report); the caller returns at once, computing
 *                   nothing and not calling the reference (whose processes would wait for
 *                   each other forever in BLACS). */
enum glue_way { GLUE_REFERENCE, GLUE_TESSERA, GLUE_REPORTED };
enum glue_way glue_route_way(tess_grid_t *g, const struct glue_call *c, bool local_ok);
/* tessera failed with status st (the same on every process). intact: the call's output
 * still holds its input, or is not an input (beta = 0): the failure is reported at
 * TESSERA_SCALAPACK_VERBOSE, counted as a fallback, and this returns (the caller runs the
 * reference routine). Otherwise the input is lost: the process says why on stderr and
 * stops (Cblacs_abort, then abort). */
void glue_route_failed(const struct glue_call *c, int st, bool intact, const char *where);

/* p?gemm_ after PBLAS's checks and quick return: tessera (one glue_pgemm) or the
 * reference (reference(arg) runs the original call). */
void glue_gemm_route(const struct glue_call *c, void (*reference)(void *arg), void *arg);

/* ---- the reductions (reduce.c, trsm.c) --------------------------------------------------
 * After PBLAS's checks and quick return. Each decides (route.c) and then computes through
 * glue_pgemm and ScaLAPACK's auxiliary routines, or runs reference(arg). */
void glue_symm_route(const struct glue_call *c, void (*reference)(void *arg), void *arg);
void glue_syrk_route(const struct glue_call *c, void (*reference)(void *arg), void *arg);
void glue_trmm_route(const struct glue_call *c, void (*reference)(void *arg), void *arg);
void glue_trsm_route(const struct glue_call *c, void (*reference)(void *arg), void *arg);

/* ---- distributed temporaries and the calls the reductions make (dist.c) ------------- */

/* A temporary distributed matrix of the call's context: an 11-entry descriptor and this
 * process's local array (zeroed). */
struct glue_tmp {
    f_int desc[GLUE_DLEN_];
    void *buf;
    size_t bytes;
    bool held; /* buf's local part is held (glue_tmp_hold) */
};
/* Describe (no allocation) a rows x cols temporary whose element (i, j) lives where element
 * (i0 + i, j0 + j) of the matrix of descriptor d lives (same process, same block
 * position): first blocks are what remains of d's blocks at i0, j0, same block sizes, the
 * same first process; LLD = max(1, local rows). Copies between the two then move nothing.
 * *bytes: the local array's size (at least one element). false when a size overflows. */
bool glue_tmp_plan_aligned(const struct glue_call *c, const f_int *d, f_int i0, f_int j0,
                           f_int rows, f_int cols, f_int out[GLUE_DLEN_], size_t *bytes);
/* The same, allocated and zeroed; false (nothing to free) when it cannot be allocated. */
bool glue_tmp_aligned(struct glue_tmp *t, const struct glue_call *c, const f_int *d, f_int i0,
                      f_int j0, f_int rows, f_int cols);
/* Describe an n x n temporary in the 9-entry form (as ScaLAPACK's Fortran routines want
 * it): nb x nb blocks, first block on process (0, 0), LLD = max(1, local rows). */
bool glue_tmp_plan_square(const struct glue_call *c, f_int n, f_int nb, f_int out[GLUE_DLEN_],
                          size_t *bytes);
void glue_tmp_free(struct glue_tmp *t);
/* Hold t's local part (tess_hold) so that the GEMMs accumulating into it keep it on the
 * devices between them; when it cannot be held they run on it stateless (local, no error).
 * glue_tmp_unhold writes it back and ends the hold: the status, the same on every process
 * of grid g (collective); glue_tmp_free ends a hold still there, ignoring its status. */
void glue_tmp_hold(struct glue_tmp *t, const struct glue_call *c);
int glue_tmp_unhold(struct glue_tmp *t, tess_grid_t *g);
/* tess_release(A) after a call's status st: st if it failed (its message kept), else the
 * release's. */
int glue_release(const void *A, int st);

/* The local address of global element (gi, gj) (0-based) of the matrix (descriptor d,
 * local array base) on this process, NULL when another process holds it. */
void *glue_elem(const struct glue_call *c, const f_int *d, const void *base, f_int gi, f_int gj);

/* A distributed submatrix: the local array (written only as glue_pgemm's C), the 0-based
 * global row and column where it starts, and its descriptor (9 or 11 entries). */
struct glue_sub {
    const void *a;
    f_int i, j;
    const f_int *d;
};
#define GLUE_SUB(a, i, j, d) ((struct glue_sub){(a), (i), (j), (d)})

/* sub(C) = alpha op(sub(A)) op(sub(B)) + beta sub(C) through tessera's distributed GEMM
 * (tess__pgemm_exec) on grid g, in the call's precision; the status is the same on every
 * process. Nothing is done for m = 0 or n = 0. */
int glue_pgemm(tess_grid_t *g, const struct glue_call *c, char ta, char tb, f_int m, f_int n,
               f_int k, const void *alpha, struct glue_sub A, struct glue_sub B, const void *beta,
               struct glue_sub C);
/* ScaLAPACK's p?tradd_ / p?geadd_ / p?trtri_ of the call's precision (0-based indices
 * here, made 1-based for them). The caller checked that glue_aux has them. */
void glue_tradd(const struct glue_call *c, char uplo, char trans, f_int m, f_int n,
                const void *alpha, const void *A, f_int ia, f_int ja, const f_int *da,
                const void *beta, void *C, f_int ic, f_int jc, const f_int *dc);
void glue_geadd(const struct glue_call *c, f_int m, f_int n, const void *alpha, const void *A,
                f_int ia, f_int ja, const f_int *da, const void *beta, void *C, f_int ic, f_int jc,
                const f_int *dc);
f_int glue_trtri(const struct glue_call *c, char uplo, char diag, f_int n, void *A, f_int ia,
                 f_int ja, const f_int *da);

#if defined(__GNUC__)
#define GLUE_EXPORT __attribute__((visibility("default")))
#else
#define GLUE_EXPORT
#endif

#endif /* TESS_SCALAPACK_GLUE_H */
