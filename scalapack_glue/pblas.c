/* scalapack_glue/pblas.c: the PBLAS level-3 entry points of libtessera_scalapack.so.
 *
 * p?gemm_ (s, d, c, z) read their arguments exactly as PBLAS 2.0 (ScaLAPACK's PBLAS/SRC
 * p?gemm_.c) does, run PBLAS's argument checks in PBLAS's order and report a bad argument
 * the way PBLAS does: each problem found through PB_Cwarn (same text, same line numbers as
 * Debian's ScaLAPACK 2.2.1), then PB_Cabort(ctxt, "PDGEMM", info) with PBLAS's info code,
 * and return. Those handlers belong to the program (its own definitions when it has them,
 * the ScaLAPACK library's otherwise): found with dlsym, never defined here. A good call
 * takes PBLAS's quick return, or goes to route.c (tessera or the reference routine).
 *
 * The other level-3 routines (p?symm_, p?hemm_, p?syrk_, p?herk_, p?syr2k_, p?her2k_,
 * p?trmm_, p?trsm_) are pass-throughs in this increment: the reference routine underneath
 * (dlsym(RTLD_NEXT)) with the same arguments, counted as reference calls.
 *
 * Arguments are taken as PBLAS's C prototypes declare them; the hidden CHARACTER lengths a
 * Fortran caller appends are not read (PBLAS does not read them either).
 */
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>

#include "glue.h"

/* PBLAS's input-check constants (PBtools.h) */
enum { DESCMULT = 100, BIGNUM = 10000 };

/* Debian ScaLAPACK 2.2.1's p?gemm_.c: the source lines of its two PB_Cwarn calls (the
 * message names them: "on line 274 of routine PDGEMM") */
enum { LINE_TRANSA = 274, LINE_TRANSB = 279 };

static char upcase(char c) { return c >= 'a' && c <= 'z' ? (char)(c - 'a' + 'A') : c; }

/* PB_CargFtoC: a 9-entry (DTYPE_ = 1) or 11-entry (DTYPE_ = 2) descriptor into the 11-entry
 * form, Fortran indices into 0-based ones. Any other DTYPE_ keeps DTYPE_ and CTXT_ and gets
 * harmless values elsewhere (the check then reports DTYPE_). */
static void arg_ftoc(f_int i, f_int j, const f_int *in, f_int *ic, f_int *jc, f_int out[GLUE_DLEN_]) {
    *ic = i - 1;
    *jc = j - 1;
    if (in[0] == GLUE_BLOCK_CYCLIC_2D) {
        /* DTYPE CTXT M N MB NB RSRC CSRC LLD */
        out[GLUE_DTYPE_] = GLUE_BLOCK_CYCLIC_2D_INB;
        out[GLUE_CTXT_] = in[1];
        out[GLUE_M_] = in[2];
        out[GLUE_N_] = in[3];
        out[GLUE_IMB_] = out[GLUE_MB_] = in[4];
        out[GLUE_INB_] = out[GLUE_NB_] = in[5];
        out[GLUE_RSRC_] = in[6];
        out[GLUE_CSRC_] = in[7];
        out[GLUE_LLD_] = in[8];
    } else if (in[0] == GLUE_BLOCK_CYCLIC_2D_INB) {
        for (int e = 0; e < GLUE_DLEN_; e++) out[e] = in[e];
    } else {
        out[GLUE_DTYPE_] = in[0];
        out[GLUE_CTXT_] = in[1];
        out[GLUE_M_] = out[GLUE_N_] = 0;
        out[GLUE_IMB_] = out[GLUE_INB_] = out[GLUE_MB_] = out[GLUE_NB_] = 1;
        out[GLUE_RSRC_] = out[GLUE_CSRC_] = 0;
        out[GLUE_LLD_] = 1;
    }
}

/* PBLAS's Mnumroc for the whole dimension (i = 0): every index on every process when the
 * dimension is replicated (src = -1) or has one process. */
static int64_t numroc0(f_int n, f_int ib, f_int nb, f_int p, f_int src, f_int np) {
    if (src < 0 || np <= 1) return n;
    struct tess__comm_bc d = {.n = n, .ib = ib, .nb = nb, .src = src, .np = np};
    return tess__comm_bc_numroc(&d, p);
}

/* Report one problem through the program's PB_Cwarn (PBLAS's text). */
#define WARN(S, ctxt, line, rout, ...)                                      \
    do {                                                                    \
        if ((S)->cwarn) (S)->cwarn((ctxt), (line), (char *)(rout), __VA_ARGS__); \
    } while (0)

#define MIN_(a, b) ((a) < (b) ? (a) : (b))
#define MAX_(a, b) ((a) > (b) ? (a) : (b))

/* PB_Cchkmat: check M, N, IA, JA and DESCA of matrix mname as seen from this process, with
 * the positions of M, N and DESCA in the routine's argument list (IA, JA are 2 and 1 before
 * DESCA); merge into *info the smallest code (-(pos*100 + entry) for a descriptor entry,
 * -pos for a scalar), as PBLAS does. Same checks, order and messages as PBLAS. */
static void chkmat(const struct glue_syms *S, f_int ctxt, const char *rout, const char *mname,
                   f_int m, int mpos0, f_int n, int npos0, f_int ia, f_int ja, const f_int *d,
                   int dpos0, f_int *info) {
    f_int nprow, npcol, myrow, mycol;
    if (*info >= 0) *info = BIGNUM;
    else if (*info < -DESCMULT) *info = -*info;
    else *info = -*info * DESCMULT;
    const f_int mpos = mpos0 * DESCMULT, npos = npos0 * DESCMULT;
    const f_int iapos = (dpos0 - 2) * DESCMULT, japos = (dpos0 - 1) * DESCMULT;
    const f_int dpos = dpos0 * DESCMULT + 1;
    S->gridinfo(ctxt, &nprow, &npcol, &myrow, &mycol);

    if (m < 0) {
        *info = MIN_(*info, mpos);
        WARN(S, ctxt, -1, rout, "%s sub( %s ) = %d, it must be at least 0",
             "Illegal number of rows of", mname, m);
    }
    if (n < 0) {
        *info = MIN_(*info, npos);
        WARN(S, ctxt, -1, rout, "%s sub( %s ) = %d, it must be at least 0",
             "Illegal number of columns of", mname, n);
    }
    if (ia < 0) {
        *info = MIN_(*info, iapos);
        WARN(S, ctxt, -1, rout, "Illegal I%s = %d, I%s must be at least 1", mname, ia + 1, mname);
    }
    if (ja < 0) {
        *info = MIN_(*info, japos);
        /* sic: PBLAS prints IA + 1 and "I" here */
        WARN(S, ctxt, -1, rout, "Illegal J%s = %d, I%s must be at least 1", mname, ia + 1, mname);
    }
    if (d[GLUE_DTYPE_] != GLUE_BLOCK_CYCLIC_2D_INB) {
        *info = MIN_(*info, dpos + GLUE_DTYPE_);
        WARN(S, ctxt, -1, rout, "%s %d for matrix %s. PBLAS accepts: %d or %d",
             "Illegal descriptor type", d[GLUE_DTYPE_], mname, GLUE_BLOCK_CYCLIC_2D,
             GLUE_BLOCK_CYCLIC_2D_INB);
        *info = *info % DESCMULT == 0 ? -(*info / DESCMULT) : -*info;
        return; /* nothing more is checked */
    }
    if (d[GLUE_CTXT_] != ctxt) {
        *info = MIN_(*info, dpos + GLUE_CTXT_);
        WARN(S, ctxt, -1, rout, "DESC%s[CTXT_] = %d %s= %d", mname, d[GLUE_CTXT_],
             "does not match other operand's context ", ctxt);
        *info = *info % DESCMULT == 0 ? -(*info / DESCMULT) : -*info;
        return;
    }
    if (d[GLUE_IMB_] < 1) {
        *info = MIN_(*info, dpos + GLUE_IMB_);
        WARN(S, ctxt, -1, rout, "Illegal DESC%s[IMB_] = %d, DESC%s[IMB_] %s", mname,
             d[GLUE_IMB_], mname, "must be at least 1");
    }
    if (d[GLUE_INB_] < 1) {
        *info = MIN_(*info, dpos + GLUE_INB_);
        WARN(S, ctxt, -1, rout, "Illegal DESC%s[INB_] = %d, DESC%s[INB_] %s", mname,
             d[GLUE_INB_], mname, "must be at least 1");
    }
    if (d[GLUE_MB_] < 1) {
        *info = MIN_(*info, dpos + GLUE_MB_);
        WARN(S, ctxt, -1, rout, "Illegal DESC%s[MB_] = %d, DESC%s[MB_] %s", mname,
             d[GLUE_MB_], mname, "must be at least 1");
    }
    if (d[GLUE_NB_] < 1) {
        *info = MIN_(*info, dpos + GLUE_NB_);
        WARN(S, ctxt, -1, rout, "Illegal DESC%s[NB_] = %d, DESC%s[NB_] %s", mname,
             d[GLUE_NB_], mname, "must be at least 1");
    }
    if (d[GLUE_RSRC_] < -1 || d[GLUE_RSRC_] >= nprow) {
        *info = MIN_(*info, dpos + GLUE_RSRC_);
        WARN(S, ctxt, -1, rout, "Illegal DESC%s[RSRC_] = %d, DESC%s[RSRC_] %s%d", mname,
             d[GLUE_RSRC_], mname, "must be either -1, or >= 0 and < ", nprow);
    }
    if (d[GLUE_CSRC_] < -1 || d[GLUE_CSRC_] >= npcol) {
        *info = MIN_(*info, dpos + GLUE_CSRC_);
        WARN(S, ctxt, -1, rout, "Illegal DESC%s[CSRC_] = %d, DESC%s[CSRC_] %s%d", mname,
             d[GLUE_CSRC_], mname, "must be either -1, or >= 0 and < ", npcol);
    }
    if (m == 0 || n == 0) {
        /* an empty sub( A ): some checks relaxed */
        if (d[GLUE_M_] < 0) {
            *info = MIN_(*info, dpos + GLUE_M_);
            WARN(S, ctxt, -1, rout, "DESC%s[M_] = %d, it must be at least 0", mname, d[GLUE_M_]);
        }
        if (d[GLUE_N_] < 0) {
            *info = MIN_(*info, dpos + GLUE_N_);
            WARN(S, ctxt, -1, rout, "DESC%s[N_] = %d, it must be at least 0", mname, d[GLUE_N_]);
        }
        if (d[GLUE_LLD_] < 1) {
            *info = MIN_(*info, dpos + GLUE_LLD_);
            WARN(S, ctxt, -1, rout, "DESC%s[LLD_] = %d, it must be at least 1", mname,
                 d[GLUE_LLD_]);
        }
    } else {
        if (d[GLUE_M_] < 1) {
            *info = MIN_(*info, dpos + GLUE_M_);
            WARN(S, ctxt, -1, rout, "Illegal DESC%s[M_] = %d, it must be at least 1", mname,
                 d[GLUE_M_]);
        }
        if (d[GLUE_N_] < 1) {
            *info = MIN_(*info, dpos + GLUE_N_);
            WARN(S, ctxt, -1, rout, "Illegal DESC%s[N_] = %d, it must be at least 1", mname,
                 d[GLUE_N_]);
        }
        if (d[GLUE_M_] >= 1 && d[GLUE_N_] >= 1) {
            /* PBLAS adds in Int; so do we (a sum past INT_MAX is the caller's problem) */
            if ((int64_t)ia + m > d[GLUE_M_]) {
                *info = MIN_(*info, iapos);
                WARN(S, ctxt, -1, rout, "%s M = %d, I%s = %d, DESC%s[M_] = %d",
                     "Operation out of bounds:", m, mname, ia + 1, mname, d[GLUE_M_]);
            }
            if ((int64_t)ja + n > d[GLUE_N_]) {
                *info = MIN_(*info, japos);
                WARN(S, ctxt, -1, rout, "%s N = %d, J%s = %d, DESC%s[N_] = %d",
                     "Operation out of bounds:", n, mname, ja + 1, mname, d[GLUE_N_]);
            }
        }
        /* LLD_ only when nothing is wrong so far (in this call's earlier arguments too) */
        if (*info == BIGNUM) {
            int64_t np = numroc0(d[GLUE_M_], d[GLUE_IMB_], d[GLUE_MB_], myrow, d[GLUE_RSRC_], nprow);
            if (d[GLUE_LLD_] < MAX_(1, np)) {
                int64_t nq = numroc0(d[GLUE_N_], d[GLUE_INB_], d[GLUE_NB_], mycol, d[GLUE_CSRC_],
                                     npcol);
                if (d[GLUE_LLD_] < 1) {
                    *info = MIN_(*info, dpos + GLUE_LLD_);
                    WARN(S, ctxt, -1, rout, "DESC%s[LLD_] = %d, it must be at least 1", mname,
                         d[GLUE_LLD_]);
                } else if (nq > 0) {
                    *info = MIN_(*info, dpos + GLUE_LLD_);
                    WARN(S, ctxt, -1, rout, "DESC%s[LLD_] = %d, it must be at least %d", mname,
                         d[GLUE_LLD_], (int)MAX_(1, np));
                }
            }
        }
    }
    if (*info == BIGNUM) *info = 0;
    else if (*info % DESCMULT == 0) *info = -(*info / DESCMULT);
    else *info = -*info;
}

/* The reference routine `name`, looked up once per entry point (a racing second lookup finds
 * the same address). A GNU statement expression. */
#define REF_LOOKUP(name)                                                   \
    __extension__({                                                        \
        static _Atomic(void *) ref_;                                       \
        void *r_ = atomic_load_explicit(&ref_, memory_order_acquire);      \
        if (!r_) {                                                         \
            r_ = glue_reference(name);                                     \
            atomic_store_explicit(&ref_, r_, memory_order_release);        \
        }                                                                  \
        r_;                                                                \
    })

/* ---- p?gemm_ --------------------------------------------------------------------------- */

typedef void (*pgemm_fn)(const char *, const char *, const f_int *, const f_int *,
                         const f_int *, const void *, const void *, const f_int *,
                         const f_int *, const f_int *, const void *, const f_int *,
                         const f_int *, const f_int *, const void *, void *, const f_int *,
                         const f_int *, const f_int *);

/* The original arguments, for the reference routine. */
struct gemm_orig {
    pgemm_fn ref;
    const char *ta, *tb;
    const f_int *m, *n, *k;
    const void *alpha, *A;
    const f_int *ia, *ja, *desca;
    const void *B;
    const f_int *ib, *jb, *descb;
    const void *beta;
    void *C;
    const f_int *ic, *jc, *descc;
};

static void gemm_reference(void *arg) {
    const struct gemm_orig *o = arg;
    o->ref(o->ta, o->tb, o->m, o->n, o->k, o->alpha, o->A, o->ia, o->ja, o->desca, o->B, o->ib,
           o->jb, o->descb, o->beta, o->C, o->ic, o->jc, o->descc);
}

/* Real part == 0 (== 1), and for complex scalars the imaginary part == 0 too: PBLAS's tests */
static int scal_is(tess_dtype_t dt, const void *p, double v) {
    switch (dt) {
    case TESS_S: return ((const float *)p)[0] == (float)v;
    case TESS_D: return ((const double *)p)[0] == v;
    case TESS_C: return ((const float *)p)[0] == (float)v && ((const float *)p)[1] == 0.0f;
    case TESS_Z: return ((const double *)p)[0] == v && ((const double *)p)[1] == 0.0;
    }
    return 0;
}

static void pgemm(tess_dtype_t dt, const char *rout, struct gemm_orig *o) {
    const struct glue_syms *S = glue_syms();
    if (!S->gridinfo) {
        /* no BLACS in sight: the reference routine is the only one that can say anything */
        glue_count_reference(GLUE_GEMM, dt, 0.0);
        gemm_reference(o);
        return;
    }
    char TrA = upcase(o->ta[0]), TrB = upcase(o->tb[0]);
    int nota = TrA == 'N', notb = TrB == 'N';
    f_int Ai, Aj, Bi, Bj, Ci, Cj, Ad[GLUE_DLEN_], Bd[GLUE_DLEN_], Cd[GLUE_DLEN_];
    arg_ftoc(*o->ia, *o->ja, o->desca, &Ai, &Aj, Ad);
    arg_ftoc(*o->ib, *o->jb, o->descb, &Bi, &Bj, Bd);
    arg_ftoc(*o->ic, *o->jc, o->descc, &Ci, &Cj, Cd);
    const f_int M = *o->m, N = *o->n, K = *o->k;

    /* PBLAS's checks, in PBLAS's order */
    f_int ctxt = Ad[GLUE_CTXT_], nprow, npcol, myrow, mycol;
    S->gridinfo(ctxt, &nprow, &npcol, &myrow, &mycol);
    f_int info = nprow == -1 ? -(1001 + GLUE_CTXT_) : 0;
    if (!info) {
        if (!nota && TrA != 'T' && TrA != 'C') {
            WARN(S, ctxt, LINE_TRANSA, rout, "Illegal TRANSA = %c\n", TrA);
            info = -1;
        } else if (!notb && TrB != 'T' && TrB != 'C') {
            WARN(S, ctxt, LINE_TRANSB, rout, "Illegal TRANSB = %c\n", TrB);
            info = -2;
        }
        if (nota) chkmat(S, ctxt, rout, "A", M, 3, K, 5, Ai, Aj, Ad, 10, &info);
        else chkmat(S, ctxt, rout, "A", K, 5, M, 3, Ai, Aj, Ad, 10, &info);
        if (notb) chkmat(S, ctxt, rout, "B", K, 5, N, 4, Bi, Bj, Bd, 14, &info);
        else chkmat(S, ctxt, rout, "B", N, 4, K, 5, Bi, Bj, Bd, 14, &info);
        chkmat(S, ctxt, rout, "C", M, 3, N, 4, Ci, Cj, Cd, 19, &info);
    }
    if (info) {
        glue_count_error(GLUE_GEMM, dt);
        if (S->cabort) S->cabort(ctxt, (char *)rout, info);
        else fprintf(stderr, "tessera-scalapack: %s: parameter number %d had an illegal value "
                     "(no PB_Cabort found to report it)\n", rout, -info);
        return;
    }

    /* PBLAS's quick return: nothing to compute, nothing read or written */
    if (M == 0 || N == 0 || ((scal_is(dt, o->alpha, 0.0) || K == 0) && scal_is(dt, o->beta, 1.0))) {
        glue_count_quick(GLUE_GEMM, dt);
        return;
    }

    struct glue_gemm_call c = {
        .dt = dt, .ta = TrA, .tb = TrB, .m = M, .n = N, .k = K, .alpha = o->alpha,
        .beta = o->beta, .A = o->A, .B = o->B, .C = o->C, .ia = Ai, .ja = Aj, .ib = Bi,
        .jb = Bj, .ic = Ci, .jc = Cj, .da = Ad, .db = Bd, .dc = Cd, .ctxt = ctxt,
        .nprow = nprow, .npcol = npcol, .myrow = myrow, .mycol = mycol,
    };
    glue_gemm_route(&c, gemm_reference, o);
}

/* ?GEMM( TRANSA, TRANSB, M, N, K, ALPHA, A, IA, JA, DESCA, B, IB, JB, DESCB, BETA, C, IC,
 *        JC, DESCC ) */
#define PGEMM(pre, DT, ROUT)                                                                    \
    GLUE_EXPORT void p##pre##gemm_(const char *ta, const char *tb, const f_int *m,             \
                                   const f_int *n, const f_int *k, const void *alpha,          \
                                   const void *A, const f_int *ia, const f_int *ja,            \
                                   const f_int *desca, const void *B, const f_int *ib,         \
                                   const f_int *jb, const f_int *descb, const void *beta,      \
                                   void *C, const f_int *ic, const f_int *jc,                  \
                                   const f_int *descc) {                                       \
        pgemm_fn ref = (pgemm_fn)REF_LOOKUP("p" #pre "gemm_");                                 \
        struct gemm_orig o = {ref, ta, tb, m, n, k, alpha, A, ia, ja, desca, B, ib, jb, descb, \
                              beta, C, ic, jc, descc};                                         \
        pgemm(DT, ROUT, &o);                                                                   \
    }
PGEMM(s, TESS_S, "PSGEMM")
PGEMM(d, TESS_D, "PDGEMM")
PGEMM(c, TESS_C, "PCGEMM")
PGEMM(z, TESS_Z, "PZGEMM")

/* ---- pass-throughs: the reference routine, counted ------------------------------------- */

/* Multiply-adds of a call, from its sizes (0 when a size is negative: the reference will
 * report it). inner: the order of the triangular/symmetric A. */
static double madds(f_int m, f_int n, f_int inner) {
    if (m < 0 || n < 0 || inner < 0) return 0.0;
    return (double)m * (double)n * (double)inner;
}
static double flops(tess_dtype_t dt, double ma) { return ma * tess__dtypes[dt].flop_mul; }

typedef void (*psymm_fn)(const char *, const char *, const f_int *, const f_int *, const void *,
                         const void *, const f_int *, const f_int *, const f_int *, const void *,
                         const f_int *, const f_int *, const f_int *, const void *, void *,
                         const f_int *, const f_int *, const f_int *);
typedef void (*psyrk_fn)(const char *, const char *, const f_int *, const f_int *, const void *,
                         const void *, const f_int *, const f_int *, const f_int *, const void *,
                         void *, const f_int *, const f_int *, const f_int *);
typedef psymm_fn psyr2k_fn; /* the same list: two letters, two sizes, A, B, C */
typedef void (*ptrxm_fn)(const char *, const char *, const char *, const char *, const f_int *,
                         const f_int *, const void *, const void *, const f_int *, const f_int *,
                         const f_int *, void *, const f_int *, const f_int *, const f_int *);

/* p?symm_ / p?hemm_( SIDE, UPLO, M, N, ALPHA, A, IA, JA, DESCA, B, IB, JB, DESCB, BETA, C,
 *                   IC, JC, DESCC ) */
#define PSYMM(fname, KIND, DT)                                                                  \
    GLUE_EXPORT void fname(const char *side, const char *uplo, const f_int *m, const f_int *n,  \
                           const void *alpha, const void *A, const f_int *ia, const f_int *ja,  \
                           const f_int *desca, const void *B, const f_int *ib, const f_int *jb, \
                           const f_int *descb, const void *beta, void *C, const f_int *ic,      \
                           const f_int *jc, const f_int *descc) {                               \
        psymm_fn ref = (psymm_fn)REF_LOOKUP(#fname);                                            \
        f_int inner = upcase(side[0]) == 'L' ? *m : *n;                                        \
        glue_count_reference(KIND, DT, flops(DT, madds(*m, *n, inner)));                        \
        ref(side, uplo, m, n, alpha, A, ia, ja, desca, B, ib, jb, descb, beta, C, ic, jc,       \
            descc);                                                                             \
    }
PSYMM(pssymm_, GLUE_SYMM, TESS_S)
PSYMM(pdsymm_, GLUE_SYMM, TESS_D)
PSYMM(pcsymm_, GLUE_SYMM, TESS_C)
PSYMM(pzsymm_, GLUE_SYMM, TESS_Z)
PSYMM(pchemm_, GLUE_HEMM, TESS_C)
PSYMM(pzhemm_, GLUE_HEMM, TESS_Z)

/* p?syrk_ / p?herk_( UPLO, TRANS, N, K, ALPHA, A, IA, JA, DESCA, BETA, C, IC, JC, DESCC ) */
#define PSYRK(fname, KIND, DT)                                                                  \
    GLUE_EXPORT void fname(const char *uplo, const char *trans, const f_int *n, const f_int *k, \
                           const void *alpha, const void *A, const f_int *ia, const f_int *ja,  \
                           const f_int *desca, const void *beta, void *C, const f_int *ic,      \
                           const f_int *jc, const f_int *descc) {                               \
        psyrk_fn ref = (psyrk_fn)REF_LOOKUP(#fname);                                            \
        double ma = *n < 0 || *k < 0 ? 0.0 : 0.5 * (double)*n * ((double)*n + 1) * (double)*k;  \
        glue_count_reference(KIND, DT, flops(DT, ma));                                          \
        ref(uplo, trans, n, k, alpha, A, ia, ja, desca, beta, C, ic, jc, descc);                \
    }
PSYRK(pssyrk_, GLUE_SYRK, TESS_S)
PSYRK(pdsyrk_, GLUE_SYRK, TESS_D)
PSYRK(pcsyrk_, GLUE_SYRK, TESS_C)
PSYRK(pzsyrk_, GLUE_SYRK, TESS_Z)
PSYRK(pcherk_, GLUE_HERK, TESS_C)
PSYRK(pzherk_, GLUE_HERK, TESS_Z)

/* p?syr2k_ / p?her2k_( UPLO, TRANS, N, K, ALPHA, A, IA, JA, DESCA, B, IB, JB, DESCB, BETA,
 *                     C, IC, JC, DESCC ) */
#define PSYR2K(fname, KIND, DT)                                                                 \
    GLUE_EXPORT void fname(const char *uplo, const char *trans, const f_int *n, const f_int *k, \
                           const void *alpha, const void *A, const f_int *ia, const f_int *ja,  \
                           const f_int *desca, const void *B, const f_int *ib, const f_int *jb, \
                           const f_int *descb, const void *beta, void *C, const f_int *ic,      \
                           const f_int *jc, const f_int *descc) {                               \
        psyr2k_fn ref = (psyr2k_fn)REF_LOOKUP(#fname);                                          \
        double ma = *n < 0 || *k < 0 ? 0.0 : (double)*n * ((double)*n + 1) * (double)*k;        \
        glue_count_reference(KIND, DT, flops(DT, ma));                                          \
        ref(uplo, trans, n, k, alpha, A, ia, ja, desca, B, ib, jb, descb, beta, C, ic, jc,      \
            descc);                                                                             \
    }
PSYR2K(pssyr2k_, GLUE_SYR2K, TESS_S)
PSYR2K(pdsyr2k_, GLUE_SYR2K, TESS_D)
PSYR2K(pcsyr2k_, GLUE_SYR2K, TESS_C)
PSYR2K(pzsyr2k_, GLUE_SYR2K, TESS_Z)
PSYR2K(pcher2k_, GLUE_HER2K, TESS_C)
PSYR2K(pzher2k_, GLUE_HER2K, TESS_Z)

/* p?trmm_ / p?trsm_( SIDE, UPLO, TRANSA, DIAG, M, N, ALPHA, A, IA, JA, DESCA, B, IB, JB,
 *                   DESCB ) */
#define PTRXM(fname, KIND, DT)                                                                  \
    GLUE_EXPORT void fname(const char *side, const char *uplo, const char *transa,              \
                           const char *diag, const f_int *m, const f_int *n, const void *alpha, \
                           const void *A, const f_int *ia, const f_int *ja, const f_int *desca, \
                           void *B, const f_int *ib, const f_int *jb, const f_int *descb) {     \
        ptrxm_fn ref = (ptrxm_fn)REF_LOOKUP(#fname);                                            \
        f_int inner = upcase(side[0]) == 'L' ? *m : *n;                                        \
        glue_count_reference(KIND, DT, flops(DT, 0.5 * madds(*m, *n, inner)));                  \
        ref(side, uplo, transa, diag, m, n, alpha, A, ia, ja, desca, B, ib, jb, descb);         \
    }
PTRXM(pstrmm_, GLUE_TRMM, TESS_S)
PTRXM(pdtrmm_, GLUE_TRMM, TESS_D)
PTRXM(pctrmm_, GLUE_TRMM, TESS_C)
PTRXM(pztrmm_, GLUE_TRMM, TESS_Z)
PTRXM(pstrsm_, GLUE_TRSM, TESS_S)
PTRXM(pdtrsm_, GLUE_TRSM, TESS_D)
PTRXM(pctrsm_, GLUE_TRSM, TESS_C)
PTRXM(pztrsm_, GLUE_TRSM, TESS_Z)
