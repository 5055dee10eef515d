/* scalapack_glue/pblas.c: the 30 PBLAS level-3 entry points of libtessera_scalapack.so
 * (p?gemm_, p?symm_, p?hemm_, p?syrk_, p?herk_, p?syr2k_, p?her2k_, p?trmm_, p?trsm_).
 * Each reads its arguments exactly as PBLAS 2.0 does (its C prototypes; the hidden
 * CHARACTER lengths are not read; HERK's alpha and beta and HER2K's beta are real), runs
 * PBLAS's checks in PBLAS's order (pbcheck.c) and reports a bad argument as PBLAS does:
 * PB_Cwarn per problem (same texts and line numbers as Debian's ScaLAPACK 2.2.1), then
 * PB_Cabort with PBLAS's info code (the program's handlers, found with dlsym). A good call
 * takes PBLAS's quick return or its path (route.c, reduce.c, trsm.c), which computes
 * through tessera or runs the reference routine underneath (dlsym(RTLD_NEXT)) with the
 * original arguments.
 */
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

#include "glue.h"

/* The reference routine `name`, looked up once per entry point (a racing second lookup finds
 * the same address). A GNU statement expression. */
#define REF_LOOKUP(name)                                              \
    __extension__({                                                   \
        static _Atomic(void *) ref_;                                  \
        void *r_ = atomic_load_explicit(&ref_, memory_order_acquire); \
        if (!r_) {                                                    \
            r_ = glue_reference(name);                                \
            atomic_store_explicit(&ref_, r_, memory_order_release);   \
        }                                                             \
        r_;                                                           \
    })

/* A scalar of the routine: in its precision, or real (widened to complex, imaginary 0). */
static void load_scalar(tess_dtype_t dt, tess__scalar_t *out, const void *p, int real) {
    if (!real) {
        tess__scalar_load(dt, out, p);
        return;
    }
    memset(out, 0, sizeof *out);
    if (dt == TESS_C)
        out->c[0] = *(const float *)p;
    else
        out->z[0] = *(const double *)p;
}

/* PBLAS's quick return: nothing to compute, nothing read or written (scalars compared
 * whole: both parts of a complex one, the real one of HERK/HER2K as PBLAS compares it). */
static int quick(const struct glue_call *c) {
    int alpha0 = tess__scalar_is_zero(c->dt, &c->alpha);
    int beta1 = tess__scalar_is_one(c->dt, &c->beta);
    switch (c->kind) {
    case GLUE_GEMM: return c->m == 0 || c->n == 0 || ((alpha0 || c->k == 0) && beta1);
    case GLUE_SYMM:
    case GLUE_HEMM: return c->m == 0 || c->n == 0 || (alpha0 && beta1);
    case GLUE_TRMM:
    case GLUE_TRSM: return c->m == 0 || c->n == 0;
    default: return c->n == 0 || ((alpha0 || c->k == 0) && beta1);
    }
}

typedef void (*route_fn)(const struct glue_call *, void (*)(void *), void *);

/* Everything after the arguments were read into c (letters upper case, descriptors in the
 * 11-entry form): checks, quick return, the routine's path. alpha/beta: the caller's
 * scalars (beta NULL for TRMM/TRSM); real_*: that scalar is real in a complex routine. */
static void l3(struct glue_call *c, const char *rout, const void *alpha, int real_alpha,
               const void *beta, int real_beta, route_fn route, void (*reference)(void *),
               void *arg) {
    const struct glue_syms *S = glue_syms();
    if (!S->gridinfo) {
        /* no BLACS in sight: the reference routine is the only one that can say anything */
        glue_count_reference(c->kind, c->dt, 0.0);
        reference(arg);
        return;
    }
    c->rout = rout;
    f_int info = glue_check(c, rout);
    if (info) {
        glue_report(c, rout, info);
        return;
    }
    load_scalar(c->dt, &c->alpha, alpha, real_alpha);
    if (beta)
        load_scalar(c->dt, &c->beta, beta, real_beta);
    else
        memset(&c->beta, 0, sizeof c->beta);
    if (!tess__dtypes[c->dt].complex_) { /* a real 'C' is 'T' */
        if (c->ta == 'C') c->ta = 'T';
        if (c->tb == 'C') c->tb = 'T';
    }
    if (quick(c)) {
        glue_count_quick(c->kind, c->dt);
        return;
    }
    route(c, reference, arg);
}

/* One distributed operand as PBLAS receives it: the local array and (I, J, DESC), Fortran
 * indices, 9- or 11-entry descriptor. p is the caller's pointer (the output's too). */
struct pmat {
    const void *p;
    const f_int *i, *j, *desc;
};
#define PMAT(X, i, j, desc) \
    { X, i, j, desc }

/* The operands into c (PB_CargFtoC): A, B (NULL: none) and the output, in d's rows. */
static void read_operands(struct glue_call *c, const struct pmat *a, const struct pmat *b,
                          const struct pmat *out, f_int d[3][GLUE_DLEN_]) {
    glue_arg_ftoc(*a->i, *a->j, a->desc, &c->ia, &c->ja, d[0]);
    c->A = a->p, c->da = d[0];
    if (b) {
        glue_arg_ftoc(*b->i, *b->j, b->desc, &c->ib, &c->jb, d[1]);
        c->B = b->p, c->db = d[1];
    }
    glue_arg_ftoc(*out->i, *out->j, out->desc, &c->ic, &c->jc, d[2]);
    c->C = (void *)out->p, c->dc = d[2];
}

/* ---- p?gemm_( TRANSA, TRANSB, M, N, K, ALPHA, A, IA, JA, DESCA, B, IB, JB, DESCB, BETA, C,
 *              IC, JC, DESCC ) ------------------------------------------------------------- */

typedef void (*pgemm_fn)(const char *, const char *, const f_int *, const f_int *, const f_int *,
                         const void *, const void *, const f_int *, const f_int *, const f_int *,
                         const void *, const f_int *, const f_int *, const f_int *, const void *,
                         void *, const f_int *, const f_int *, const f_int *);
struct gemm_orig {
    pgemm_fn ref;
    const char *ta, *tb;
    const f_int *m, *n, *k;
    const void *alpha, *beta;
    struct pmat a, b, c;
};

static void gemm_reference(void *arg) {
    const struct gemm_orig *o = arg;
    o->ref(o->ta, o->tb, o->m, o->n, o->k, o->alpha, o->a.p, o->a.i, o->a.j, o->a.desc, o->b.p,
           o->b.i, o->b.j, o->b.desc, o->beta, (void *)o->c.p, o->c.i, o->c.j, o->c.desc);
}

static void pgemm(tess_dtype_t dt, const char *rout, struct gemm_orig *o) {
    f_int d[3][GLUE_DLEN_];
    struct glue_call c = {.kind = GLUE_GEMM,
                          .dt = dt,
                          .ta = glue_upcase(o->ta[0]),
                          .tb = glue_upcase(o->tb[0]),
                          .m = *o->m,
                          .n = *o->n,
                          .k = *o->k};
    read_operands(&c, &o->a, &o->b, &o->c, d);
    l3(&c, rout, o->alpha, 0, o->beta, 0, glue_gemm_route, gemm_reference, o);
}

#define PGEMM(pre, DT, ROUT)                                                                    \
    GLUE_EXPORT void p##pre##gemm_(                                                             \
        const char *ta, const char *tb, const f_int *m, const f_int *n, const f_int *k,         \
        const void *alpha, const void *A, const f_int *ia, const f_int *ja, const f_int *desca, \
        const void *B, const f_int *ib, const f_int *jb, const f_int *descb, const void *beta,  \
        void *C, const f_int *ic, const f_int *jc, const f_int *descc) {                        \
        pgemm_fn ref = (pgemm_fn)REF_LOOKUP("p" #pre "gemm_");                                  \
        struct gemm_orig o = {ref,                                                              \
                              ta,                                                               \
                              tb,                                                               \
                              m,                                                                \
                              n,                                                                \
                              k,                                                                \
                              alpha,                                                            \
                              beta,                                                             \
                              PMAT(A, ia, ja, desca),                                           \
                              PMAT(B, ib, jb, descb),                                           \
                              PMAT(C, ic, jc, descc)};                                          \
        pgemm(DT, ROUT, &o);                                                                    \
    }
PGEMM(s, TESS_S, "PSGEMM")
PGEMM(d, TESS_D, "PDGEMM")
PGEMM(c, TESS_C, "PCGEMM")
PGEMM(z, TESS_Z, "PZGEMM")

/* ---- p?symm_ / p?hemm_( SIDE, UPLO, M, N, ALPHA, A, IA, JA, DESCA, B, IB, JB, DESCB, BETA,
 *                        C, IC, JC, DESCC ), and p?syr2k_ / p?her2k_( UPLO, TRANS, N, K,
 *                        ALPHA, A, IA, JA, DESCA, B, IB, JB, DESCB, BETA, C, IC, JC, DESCC ):
 *      the same list (two letters, two sizes, A, B, C) ------------------------------------- */

typedef void (*pabc_fn)(const char *, const char *, const f_int *, const f_int *, const void *,
                        const void *, const f_int *, const f_int *, const f_int *, const void *,
                        const f_int *, const f_int *, const f_int *, const void *, void *,
                        const f_int *, const f_int *, const f_int *);
struct abc_orig {
    pabc_fn ref;
    const char *l1, *l2;
    const f_int *s1, *s2;
    const void *alpha, *beta;
    struct pmat a, b, c;
};

static void abc_reference(void *arg) {
    const struct abc_orig *o = arg;
    o->ref(o->l1, o->l2, o->s1, o->s2, o->alpha, o->a.p, o->a.i, o->a.j, o->a.desc, o->b.p, o->b.i,
           o->b.j, o->b.desc, o->beta, (void *)o->c.p, o->c.i, o->c.j, o->c.desc);
}

static void pabc(enum glue_kind kind, tess_dtype_t dt, const char *rout, struct abc_orig *o) {
    f_int d[3][GLUE_DLEN_];
    struct glue_call c = {.kind = kind, .dt = dt};
    int symm = kind == GLUE_SYMM || kind == GLUE_HEMM;
    if (symm) {
        c.side = glue_upcase(o->l1[0]), c.uplo = glue_upcase(o->l2[0]);
        c.m = *o->s1, c.n = *o->s2;
    } else {
        c.uplo = glue_upcase(o->l1[0]), c.ta = glue_upcase(o->l2[0]);
        c.m = c.n = *o->s1, c.k = *o->s2;
    }
    read_operands(&c, &o->a, &o->b, &o->c, d);
    l3(&c, rout, o->alpha, 0, o->beta, kind == GLUE_HER2K, symm ? glue_symm_route : glue_syrk_route,
       abc_reference, o);
}

#define PABC(fname, KIND, DT, ROUT)                                                             \
    GLUE_EXPORT void fname(const char *l1, const char *l2, const f_int *s1, const f_int *s2,    \
                           const void *alpha, const void *A, const f_int *ia, const f_int *ja,  \
                           const f_int *desca, const void *B, const f_int *ib, const f_int *jb, \
                           const f_int *descb, const void *beta, void *C, const f_int *ic,      \
                           const f_int *jc, const f_int *descc) {                               \
        pabc_fn ref = (pabc_fn)REF_LOOKUP(#fname);                                              \
        struct abc_orig o = {ref,                                                               \
                             l1,                                                                \
                             l2,                                                                \
                             s1,                                                                \
                             s2,                                                                \
                             alpha,                                                             \
                             beta,                                                              \
                             PMAT(A, ia, ja, desca),                                            \
                             PMAT(B, ib, jb, descb),                                            \
                             PMAT(C, ic, jc, descc)};                                           \
        pabc(KIND, DT, ROUT, &o);                                                               \
    }
PABC(pssymm_, GLUE_SYMM, TESS_S, "PSSYMM")
PABC(pdsymm_, GLUE_SYMM, TESS_D, "PDSYMM")
PABC(pcsymm_, GLUE_SYMM, TESS_C, "PCSYMM")
PABC(pzsymm_, GLUE_SYMM, TESS_Z, "PZSYMM")
PABC(pchemm_, GLUE_HEMM, TESS_C, "PCHEMM")
PABC(pzhemm_, GLUE_HEMM, TESS_Z, "PZHEMM")
PABC(pssyr2k_, GLUE_SYR2K, TESS_S, "PSSYR2K")
PABC(pdsyr2k_, GLUE_SYR2K, TESS_D, "PDSYR2K")
PABC(pcsyr2k_, GLUE_SYR2K, TESS_C, "PCSYR2K")
PABC(pzsyr2k_, GLUE_SYR2K, TESS_Z, "PZSYR2K")
PABC(pcher2k_, GLUE_HER2K, TESS_C, "PCHER2K")
PABC(pzher2k_, GLUE_HER2K, TESS_Z, "PZHER2K")

/* ---- p?syrk_ / p?herk_( UPLO, TRANS, N, K, ALPHA, A, IA, JA, DESCA, BETA, C, IC, JC,
 *                        DESCC ) --------------------------------------------------------- */

typedef void (*psyrk_fn)(const char *, const char *, const f_int *, const f_int *, const void *,
                         const void *, const f_int *, const f_int *, const f_int *, const void *,
                         void *, const f_int *, const f_int *, const f_int *);
struct syrk_orig {
    psyrk_fn ref;
    const char *uplo, *trans;
    const f_int *n, *k;
    const void *alpha, *beta;
    struct pmat a, c;
};

static void syrk_reference(void *arg) {
    const struct syrk_orig *o = arg;
    o->ref(o->uplo, o->trans, o->n, o->k, o->alpha, o->a.p, o->a.i, o->a.j, o->a.desc, o->beta,
           (void *)o->c.p, o->c.i, o->c.j, o->c.desc);
}

static void psyrk(enum glue_kind kind, tess_dtype_t dt, const char *rout, struct syrk_orig *o) {
    f_int d[3][GLUE_DLEN_];
    struct glue_call c = {.kind = kind,
                          .dt = dt,
                          .uplo = glue_upcase(o->uplo[0]),
                          .ta = glue_upcase(o->trans[0]),
                          .m = *o->n,
                          .n = *o->n,
                          .k = *o->k};
    read_operands(&c, &o->a, NULL, &o->c, d);
    int herk = kind == GLUE_HERK;
    l3(&c, rout, o->alpha, herk, o->beta, herk, glue_syrk_route, syrk_reference, o);
}

#define PSYRK(fname, KIND, DT, ROUT)                                                              \
    GLUE_EXPORT void fname(const char *uplo, const char *trans, const f_int *n, const f_int *k,   \
                           const void *alpha, const void *A, const f_int *ia, const f_int *ja,    \
                           const f_int *desca, const void *beta, void *C, const f_int *ic,        \
                           const f_int *jc, const f_int *descc) {                                 \
        psyrk_fn ref = (psyrk_fn)REF_LOOKUP(#fname);                                              \
        struct syrk_orig o = {                                                                    \
            ref, uplo, trans, n, k, alpha, beta, PMAT(A, ia, ja, desca), PMAT(C, ic, jc, descc)}; \
        psyrk(KIND, DT, ROUT, &o);                                                                \
    }
PSYRK(pssyrk_, GLUE_SYRK, TESS_S, "PSSYRK")
PSYRK(pdsyrk_, GLUE_SYRK, TESS_D, "PDSYRK")
PSYRK(pcsyrk_, GLUE_SYRK, TESS_C, "PCSYRK")
PSYRK(pzsyrk_, GLUE_SYRK, TESS_Z, "PZSYRK")
PSYRK(pcherk_, GLUE_HERK, TESS_C, "PCHERK")
PSYRK(pzherk_, GLUE_HERK, TESS_Z, "PZHERK")

/* ---- p?trmm_ / p?trsm_( SIDE, UPLO, TRANSA, DIAG, M, N, ALPHA, A, IA, JA, DESCA, B, IB,
 *                        JB, DESCB ) ------------------------------------------------------- */

typedef void (*ptrxm_fn)(const char *, const char *, const char *, const char *, const f_int *,
                         const f_int *, const void *, const void *, const f_int *, const f_int *,
                         const f_int *, void *, const f_int *, const f_int *, const f_int *);
struct trxm_orig {
    ptrxm_fn ref;
    const char *side, *uplo, *transa, *diag;
    const f_int *m, *n;
    const void *alpha;
    struct pmat a, b;
};

static void trxm_reference(void *arg) {
    const struct trxm_orig *o = arg;
    o->ref(o->side, o->uplo, o->transa, o->diag, o->m, o->n, o->alpha, o->a.p, o->a.i, o->a.j,
           o->a.desc, (void *)o->b.p, o->b.i, o->b.j, o->b.desc);
}

static void ptrxm(enum glue_kind kind, tess_dtype_t dt, const char *rout, struct trxm_orig *o) {
    f_int d[3][GLUE_DLEN_];
    struct glue_call c = {.kind = kind,
                          .dt = dt,
                          .side = glue_upcase(o->side[0]),
                          .uplo = glue_upcase(o->uplo[0]),
                          .ta = glue_upcase(o->transa[0]),
                          .diag = glue_upcase(o->diag[0]),
                          .m = *o->m,
                          .n = *o->n};
    read_operands(&c, &o->a, NULL, &o->b, d); /* B is in and out: in the output's place */
    l3(&c, rout, o->alpha, 0, NULL, 0, kind == GLUE_TRMM ? glue_trmm_route : glue_trsm_route,
       trxm_reference, o);
}

#define PTRXM(fname, KIND, DT, ROUT)                                                            \
    GLUE_EXPORT void fname(const char *side, const char *uplo, const char *transa,              \
                           const char *diag, const f_int *m, const f_int *n, const void *alpha, \
                           const void *A, const f_int *ia, const f_int *ja, const f_int *desca, \
                           void *B, const f_int *ib, const f_int *jb, const f_int *descb) {     \
        ptrxm_fn ref = (ptrxm_fn)REF_LOOKUP(#fname);                                            \
        struct trxm_orig o = {ref,                                                              \
                              side,                                                             \
                              uplo,                                                             \
                              transa,                                                           \
                              diag,                                                             \
                              m,                                                                \
                              n,                                                                \
                              alpha,                                                            \
                              PMAT(A, ia, ja, desca),                                           \
                              PMAT(B, ib, jb, descb)};                                          \
        ptrxm(KIND, DT, ROUT, &o);                                                              \
    }
PTRXM(pstrmm_, GLUE_TRMM, TESS_S, "PSTRMM")
PTRXM(pdtrmm_, GLUE_TRMM, TESS_D, "PDTRMM")
PTRXM(pctrmm_, GLUE_TRMM, TESS_C, "PCTRMM")
PTRXM(pztrmm_, GLUE_TRMM, TESS_Z, "PZTRMM")
PTRXM(pstrsm_, GLUE_TRSM, TESS_S, "PSTRSM")
PTRXM(pdtrsm_, GLUE_TRSM, TESS_D, "PDTRSM")
PTRXM(pctrsm_, GLUE_TRSM, TESS_C, "PCTRSM")
PTRXM(pztrsm_, GLUE_TRSM, TESS_Z, "PZTRSM")
