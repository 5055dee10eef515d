/* scalapack_glue/pbcheck.c: PBLAS's argument reading and checks, written out for the
 * level-3 routines: PB_CargFtoC (9- or 11-entry descriptors into the 11-entry form, indices
 * 0-based), PB_Cchkmat, and each routine's own checks (p?gemm_, p?symm_, p?hemm_, p?syrk_,
 * p?herk_, p?syr2k_, p?her2k_, p?trmm_, p?trsm_ of ScaLAPACK's PBLAS/SRC) in PBLAS's order,
 * with PBLAS's info codes and PB_Cwarn texts. A warning names the source line of the
 * routine's PB_Cwarn call in Debian's ScaLAPACK 2.2.1 ("on line 290 of routine PDSYMM"):
 * the table below, read off that library (a bad letter to each routine, the line its
 * PB_Cwarn received). glue_report is PBLAS's way out after the warnings (PB_Cabort).
 * PB_Cwarn and PB_Cabort are the program's (found with dlsym, never defined here).
 */
#include <stddef.h>
#include <stdio.h>

#include "glue.h"

/* PBLAS's input-check constants (PBtools.h) */
enum { DESCMULT = 100, BIGNUM = 10000 };

char glue_upcase(char c) { return c >= 'a' && c <= 'z' ? (char)(c - 'a' + 'A') : c; }

/* PB_CargFtoC: a 9-entry (DTYPE_ = 1) or 11-entry (DTYPE_ = 2) descriptor into the 11-entry
 * form, Fortran indices into 0-based ones. Any other DTYPE_ keeps DTYPE_ and CTXT_ and gets
 * harmless values elsewhere (the check then reports DTYPE_). */
void glue_arg_ftoc(f_int i, f_int j, const f_int *in, f_int *ic, f_int *jc, f_int out[GLUE_DLEN_]) {
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
#define WARN(S, ctxt, line, rout, ...)                                           \
    do {                                                                         \
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
    if (*info >= 0)
        *info = BIGNUM;
    else if (*info < -DESCMULT)
        *info = -*info;
    else
        *info = -*info * DESCMULT;
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
    /* the block sizes, in PB_Cchkmat's order */
    static const struct {
        int at;
        const char *name;
    } blk[] = {{GLUE_IMB_, "IMB_"}, {GLUE_INB_, "INB_"}, {GLUE_MB_, "MB_"}, {GLUE_NB_, "NB_"}};
    for (size_t i = 0; i < sizeof blk / sizeof blk[0]; i++)
        if (d[blk[i].at] < 1) {
            *info = MIN_(*info, dpos + blk[i].at);
            WARN(S, ctxt, -1, rout, "Illegal DESC%s[%s] = %d, DESC%s[%s] %s", mname, blk[i].name,
                 d[blk[i].at], mname, blk[i].name, "must be at least 1");
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
            int64_t np = numroc0(d[GLUE_M_], d[GLUE_IMB_], d[GLUE_MB_], myrow, d[GLUE_RSRC_],
                                 nprow);
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
    if (*info == BIGNUM)
        *info = 0;
    else if (*info % DESCMULT == 0)
        *info = -(*info / DESCMULT);
    else
        *info = -*info;
}

/* ---- the routines' own checks ------------------------------------------------------------- */

/* Source lines of the PB_Cwarn calls on bad letters, in the order the routine checks its
 * letters, Debian ScaLAPACK 2.2.1 (the s and d files share theirs, c and z theirs). */
static const int *warn_lines(enum glue_kind k, int cplx) {
    static const int gemm[] = {274, 279}, symm[] = {290, 295}, hemm[] = {293, 298},
                     syrk_r[] = {269, 274}, syrk_c[] = {266, 271}, herk[] = {273, 278},
                     syr2k_r[] = {305, 310}, syr2k_c[] = {300, 305}, her2k[] = {306, 311},
                     trxm[] = {271, 276, 281, 286};
    switch (k) {
    case GLUE_GEMM: return gemm;
    case GLUE_SYMM: return symm;
    case GLUE_HEMM: return hemm;
    case GLUE_SYRK: return cplx ? syrk_c : syrk_r;
    case GLUE_HERK: return herk;
    case GLUE_SYR2K: return cplx ? syr2k_c : syr2k_r;
    case GLUE_HER2K: return her2k;
    default: return trxm;
    }
}

/* Position of DESCA in the routine's argument list (for the context's info code). */
static int desca_pos(enum glue_kind k) {
    switch (k) {
    case GLUE_GEMM: return 10;
    case GLUE_TRMM:
    case GLUE_TRSM: return 11;
    default: return 9;
    }
}

void glue_report(const struct glue_call *c, const char *rout, f_int info) {
    const struct glue_syms *S = glue_syms();
    glue_count_error(c->kind, c->dt);
    if (S->cabort)
        S->cabort(c->ctxt, (char *)rout, info);
    else
        fprintf(stderr,
                "tessera-scalapack: %s: parameter number %d had an illegal value "
                "(no PB_Cabort found to report it)\n",
                rout, -info);
}

/* SIDE, then UPLO (the first two letters of p?symm_, p?hemm_, p?trmm_, p?trsm_): the first
 * bad one reported at its line of L, its info code returned; 0 when both are good. */
static f_int side_uplo(const struct glue_syms *S, f_int ctxt, const int *L, const char *rout,
                       const struct glue_call *c) {
    if (c->side != 'L' && c->side != 'R') {
        WARN(S, ctxt, L[0], rout, "Illegal SIDE = %c\n", c->side);
        return -1;
    }
    if (c->uplo != 'U' && c->uplo != 'L') {
        WARN(S, ctxt, L[1], rout, "Illegal UPLO = %c\n", c->uplo);
        return -2;
    }
    return 0;
}

f_int glue_check(struct glue_call *c, const char *rout) {
    const struct glue_syms *S = glue_syms();
    f_int ctxt = c->da[GLUE_CTXT_];
    S->gridinfo(ctxt, &c->nprow, &c->npcol, &c->myrow, &c->mycol);
    c->ctxt = ctxt;
    if (c->nprow == -1) return -(desca_pos(c->kind) * DESCMULT + 1 + GLUE_CTXT_);
    const int *L = warn_lines(c->kind, tess__dtypes[c->dt].complex_);
    const f_int M = c->m, N = c->n, K = c->k;
    f_int info = 0;
    int notran = c->ta == 'N', upper = c->uplo == 'U', lside = c->side == 'L';

    switch (c->kind) {
    case GLUE_GEMM: {
        int notb = c->tb == 'N';
        if (!notran && c->ta != 'T' && c->ta != 'C') {
            WARN(S, ctxt, L[0], rout, "Illegal TRANSA = %c\n", c->ta);
            info = -1;
        } else if (!notb && c->tb != 'T' && c->tb != 'C') {
            WARN(S, ctxt, L[1], rout, "Illegal TRANSB = %c\n", c->tb);
            info = -2;
        }
        if (notran)
            chkmat(S, ctxt, rout, "A", M, 3, K, 5, c->ia, c->ja, c->da, 10, &info);
        else
            chkmat(S, ctxt, rout, "A", K, 5, M, 3, c->ia, c->ja, c->da, 10, &info);
        if (notb)
            chkmat(S, ctxt, rout, "B", K, 5, N, 4, c->ib, c->jb, c->db, 14, &info);
        else
            chkmat(S, ctxt, rout, "B", N, 4, K, 5, c->ib, c->jb, c->db, 14, &info);
        chkmat(S, ctxt, rout, "C", M, 3, N, 4, c->ic, c->jc, c->dc, 19, &info);
        break;
    }
    case GLUE_SYMM:
    case GLUE_HEMM:
        info = side_uplo(S, ctxt, L, rout, c);
        if (lside) {
            chkmat(S, ctxt, rout, "A", M, 3, M, 3, c->ia, c->ja, c->da, 9, &info);
            chkmat(S, ctxt, rout, "B", M, 3, N, 4, c->ib, c->jb, c->db, 13, &info);
        } else {
            chkmat(S, ctxt, rout, "A", N, 4, N, 4, c->ia, c->ja, c->da, 9, &info);
            chkmat(S, ctxt, rout, "B", M, 3, N, 4, c->ib, c->jb, c->db, 13, &info);
        }
        chkmat(S, ctxt, rout, "C", M, 3, N, 4, c->ic, c->jc, c->dc, 18, &info);
        break;
    case GLUE_TRMM:
    case GLUE_TRSM: {
        int nounit = c->diag == 'N';
        if ((info = side_uplo(S, ctxt, L, rout, c))) {
            /* reported */
        } else if (!notran && c->ta != 'T' && c->ta != 'C') {
            WARN(S, ctxt, L[2], rout, "Illegal TRANS = %c\n", c->ta);
            info = -3;
        } else if (c->kind == GLUE_TRSM && !nounit && c->diag != 'U') {
            WARN(S, ctxt, L[3], rout, "Illegal DIAG = %c\n", c->diag);
            info = -4;
        }
        /* p?trmm_ checks DIAG whatever came before it (an `if`, not an `else if`) */
        if (c->kind == GLUE_TRMM && !nounit && c->diag != 'U') {
            WARN(S, ctxt, L[3], rout, "Illegal DIAG = %c\n", c->diag);
            info = -4;
        }
        if (lside)
            chkmat(S, ctxt, rout, "A", M, 5, M, 5, c->ia, c->ja, c->da, 11, &info);
        else
            chkmat(S, ctxt, rout, "A", N, 6, N, 6, c->ia, c->ja, c->da, 11, &info);
        chkmat(S, ctxt, rout, "B", M, 5, N, 6, c->ic, c->jc, c->dc, 15, &info);
        break;
    }
    default: { /* the SYRK family: UPLO, TRANS, N, K */
        int herm = c->kind == GLUE_HERK || c->kind == GLUE_HER2K;
        int two = c->kind == GLUE_SYR2K || c->kind == GLUE_HER2K;
        /* TRANS besides 'N': HERK/HER2K 'C'; complex SYRK/SYR2K 'T'; real ones 'T' or 'C' */
        int trans_ok = herm ? c->ta == 'C'
                            : c->ta == 'T' || (!tess__dtypes[c->dt].complex_ && c->ta == 'C');
        if (!upper && c->uplo != 'L') {
            WARN(S, ctxt, L[0], rout, "Illegal UPLO = %c\n", c->uplo);
            info = -1;
        } else if (!notran && !trans_ok) {
            WARN(S, ctxt, L[1], rout, "Illegal TRANS = %c\n", c->ta);
            info = -2;
        }
        if (notran) {
            chkmat(S, ctxt, rout, "A", N, 3, K, 4, c->ia, c->ja, c->da, 9, &info);
            if (two) chkmat(S, ctxt, rout, "B", N, 3, K, 4, c->ib, c->jb, c->db, 13, &info);
        } else {
            chkmat(S, ctxt, rout, "A", K, 4, N, 3, c->ia, c->ja, c->da, 9, &info);
            if (two) chkmat(S, ctxt, rout, "B", K, 4, N, 3, c->ib, c->jb, c->db, 13, &info);
        }
        chkmat(S, ctxt, rout, "C", N, 3, N, 3, c->ic, c->jc, c->dc, two ? 18 : 14, &info);
        break;
    }
    }
    return info;
}
