/* scalapack_glue/route.c: where a checked PBLAS level-3 call runs: the routing policy,
 * the tessera grid of each BLACS context, the agreement of every process before tessera
 * computes, the failure policy, and p?gemm_'s path; reduce.c and trsm.c use the same steps.
 * Policy (knobs alike on every process): a replicated operand or unreadable knobs -> the
 * reference; TESSERA_SCALAPACK_FORCE=1 -> tessera; else tessera iff the GEMM the routine
 * amounts to has min(m, n, k) >= MIN_DIM and m n k >= MIN_VOLUME (global sizes).
 * Agreement: one MPI_Allreduce: every process can take the call and passed the same global
 * arguments; differing ones are reported by every process as PBLAS reports bad arguments;
 * a process that cannot take it sends every process to the reference. A tessera failure
 * (the same on every process) reruns the call on the reference when its output still holds
 * its input, else stops the job (Cblacs_abort) rather than return a wrong result.
 * Grids: one per context's communicator (blacs_get 10), cached as an MPI attribute; the
 * delete callback parks a freed context's grid, freed at the next lookup outside MPI.
 * Lock order: grave_mu is a leaf.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "glue.h"

/* ---- sizes and flops ---------------------------------------------------------------------- */

/* The GEMM a call amounts to: m x n output, inner dimension k. */
static void gemm_dims(const struct glue_call *c, double *m, double *n, double *k) {
    switch (c->kind) {
    case GLUE_GEMM: *m = c->m, *n = c->n, *k = c->k; break;
    case GLUE_SYMM:
    case GLUE_HEMM:
    case GLUE_TRMM:
    case GLUE_TRSM: *m = c->m, *n = c->n, *k = glue_order_a(c); break;
    default: *m = *n = c->n, *k = c->k; break; /* the SYRK family */
    }
}

double glue_call_flops(const struct glue_call *c) {
    if (tess__scalar_is_zero(c->dt, &c->alpha)) return 0.0;
    double m, n, k, ma;
    gemm_dims(c, &m, &n, &k);
    switch (c->kind) {
    case GLUE_SYRK:
    case GLUE_HERK: ma = 0.5 * n * (n + 1) * k; break;
    case GLUE_SYR2K:
    case GLUE_HER2K: ma = n * (n + 1) * k; break;
    case GLUE_TRMM:
    case GLUE_TRSM: ma = 0.5 * m * n * k; break;
    default: ma = m * n * k; break;
    }
    return ma * tess__dtypes[c->dt].flop_mul;
}

/* Rows and columns of sub(A), sub(B), sub(C) (C: the output) as PBLAS checks them. */
static void operand_shapes(const struct glue_call *c, f_int r[3], f_int q[3]) {
    f_int ka = glue_order_a(c);
    int na = c->ta == 'N';
    r[1] = q[1] = 0;
    switch (c->kind) {
    case GLUE_GEMM:
        r[0] = na ? c->m : c->k, q[0] = na ? c->k : c->m;
        r[1] = c->tb == 'N' ? c->k : c->n, q[1] = c->tb == 'N' ? c->n : c->k;
        r[2] = c->m, q[2] = c->n;
        break;
    case GLUE_SYMM:
    case GLUE_HEMM: r[0] = q[0] = ka, r[1] = r[2] = c->m, q[1] = q[2] = c->n; break;
    case GLUE_TRMM:
    case GLUE_TRSM: r[0] = q[0] = ka, r[2] = c->m, q[2] = c->n; break;
    default: /* the SYRK family: op(A) (and op(B)) n x k */
        r[0] = r[1] = na ? c->n : c->k, q[0] = q[1] = na ? c->k : c->n;
        r[2] = q[2] = c->n;
        break;
    }
}

/* ---- one tessera grid per BLACS context --------------------------------------------------- */

static int keyval = MPI_KEYVAL_INVALID;
static char unusable; /* attribute value: building a grid failed on this context */
struct parked {
    tess_grid_t *g;
    struct parked *next;
};
static pthread_mutex_t grave_mu = PTHREAD_MUTEX_INITIALIZER;
static struct parked *graveyard;

/* MPI calls this while the context's communicator is freed (blacs_gridexit): park the grid,
 * no MPI call here. */
static int grid_attr_delete(MPI_Comm comm, int key, void *val, void *extra) {
    (void)comm, (void)key, (void)extra;
    if (val == &unusable) return MPI_SUCCESS;
    struct parked *p = malloc(sizeof *p);
    if (!p) return MPI_SUCCESS; /* leak the grid rather than fail the program's free */
    p->g = val;
    pthread_mutex_lock(&grave_mu);
    p->next = graveyard;
    graveyard = p;
    pthread_mutex_unlock(&grave_mu);
    return MPI_SUCCESS;
}

static void reap(void) {
    pthread_mutex_lock(&grave_mu);
    struct parked *p = graveyard;
    graveyard = NULL;
    pthread_mutex_unlock(&grave_mu);
    while (p) {
        struct parked *next = p->next;
        tess__log(TESS__LOG_INFO,
                  "scalapack glue: rank %d: freeing the %d x %d grid of a freed "
                  "BLACS context",
                  glue_world_rank(), p->g->at.nprow, p->g->at.npcol);
        tess_grid_free(p->g);
        free(p);
        p = next;
    }
}

/* The context's communicator, MPI_COMM_NULL if BLACS does not tell. */
static MPI_Comm context_comm(f_int ctxt) {
    const struct glue_syms *S = glue_syms();
    if (!S->blacs_get) return MPI_COMM_NULL;
    /* SGET_BLACSCONTXT: the context's communicator, as a Fortran handle (any int: MPICH's
     * are negative) */
    f_int what = 10, fcomm = (f_int)MPI_Comm_c2f(MPI_COMM_NULL);
    S->blacs_get(&ctxt, &what, &fcomm);
    return MPI_Comm_f2c((MPI_Fint)fcomm);
}

/* The grid of the call's context, built on first use (collective over the context's
 * processes); NULL when it cannot be had (the same answer on every process). */
static tess_grid_t *grid_for(const struct glue_call *c) {
    reap();
    MPI_Comm comm = context_comm(c->ctxt);
    if (comm == MPI_COMM_NULL) return NULL;
    if (keyval == MPI_KEYVAL_INVALID &&
        MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, grid_attr_delete, &keyval, NULL) !=
            MPI_SUCCESS) {
        keyval = MPI_KEYVAL_INVALID;
        return NULL;
    }
    void *val = NULL;
    int flag = 0;
    if (MPI_Comm_get_attr(comm, keyval, &val, &flag) != MPI_SUCCESS) return NULL;
    if (flag) return val == &unusable ? NULL : val;

    tess_grid_t *g = calloc(1, sizeof *g);
    int st = g ? TESS_OK : tess__fail(TESS_ENOMEM, "tessera-scalapack: grid: out of host memory");
    int built = 0;
    if (!st) {
        /* collective over comm; a description problem makes every process fail alike */
        st = tess__comm_grid_from_blacs(comm, c->nprow, c->npcol, c->myrow, c->mycol, g);
        built = !st;
    }
    /* every process keeps a grid, or none does */
    st = tess__comm_agree_on(comm, st);
    if (st) {
        if (glue_knobs()->verbose)
            fprintf(stderr,
                    "tessera-scalapack: rank %d: no tessera grid for BLACS context %d "
                    "(%s); its calls go to the reference ScaLAPACK\n",
                    glue_world_rank(), c->ctxt, tess_last_error());
        if (built)
            tess_grid_free(g);
        else
            free(g);
        g = NULL;
    } else
        tess__log(TESS__LOG_INFO,
                  "scalapack glue: rank %d: %d x %d grid built for BLACS "
                  "context %d",
                  glue_world_rank(), c->nprow, c->npcol, c->ctxt);
    MPI_Comm_set_attr(comm, keyval, g ? (void *)g : (void *)&unusable);
    return g;
}

tess_grid_t *glue_context_grid(f_int ctxt) {
    const struct glue_syms *S = glue_syms();
    struct glue_call c = {.ctxt = ctxt};
    if (!S->gridinfo) return NULL;
    S->gridinfo(ctxt, &c.nprow, &c.npcol, &c.myrow, &c.mycol);
    return c.nprow >= 1 && c.npcol >= 1 ? grid_for(&c) : NULL;
}

/* ---- the three steps -------------------------------------------------------------------- */

static int replicated(const f_int *d) { return d && (d[GLUE_RSRC_] < 0 || d[GLUE_CSRC_] < 0); }

tess_grid_t *glue_route_grid(const struct glue_call *c) {
    const struct glue_knobs *K = glue_knobs();
    /* global arguments and knobs: every process of the context decides alike */
    int want = K->ok && !replicated(c->da) && !replicated(c->db) && !replicated(c->dc);
    if (want && !K->force) {
        double m, n, k;
        gemm_dims(c, &m, &n, &k);
        want = GLUE_MIN(GLUE_MIN(m, n), k) >= (double)K->min_dim && m * n * k >= K->min_volume;
    }
    return want ? grid_for(c) : NULL;
}

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

/* What every process must pass alike: letters, sizes, scalars, offsets, descriptors but
 * CTXT_ (a local handle) and LLD_ (a local size). */
static uint64_t args_hash(const struct glue_call *c) {
    uint64_t h = 1469598103934665603ull;
    int v[10] = {(int)c->kind, (int)c->dt, c->side, c->uplo, c->ta,
                 c->tb,        c->diag,    c->m,    c->n,    c->k};
    h = fnv(h, v, sizeof v);
    size_t es = tess__dtypes[c->dt].size;
    h = fnv(h, c->alpha.bytes, es);
    h = fnv(h, c->beta.bytes, es);
    const f_int *d[3] = {c->da, c->db, c->dc};
    const f_int off[3][2] = {{c->ia, c->ja}, {c->ib, c->jb}, {c->ic, c->jc}};
    for (int i = 0; i < 3; i++) {
        if (!d[i]) continue;
        h = fnv(h, off[i], sizeof off[i]);
        for (int e = 0; e < GLUE_DLEN_; e++)
            if (e != GLUE_CTXT_ && e != GLUE_LLD_) h = fnv(h, &d[i][e], sizeof d[i][e]);
    }
    return h;
}

/* comm/ takes this descriptor and submatrix as PBLAS does (it should, once PBLAS's checks
 * passed and no source is replicated). */
static int comm_takes(const f_int *d, const char *name, const struct tess__comm_coords *at, f_int i,
                      f_int j, f_int rows, f_int cols) {
    struct tess__comm_desc out;
    return tess__comm_desc_from_scalapack(d, name, &out) == TESS_OK &&
           tess__comm_desc_check(&out, name, at, i, j, rows, cols, NULL, NULL) == TESS_OK;
}

/* ---- global arguments that differ across the processes ---------------------------------- */

/* Where a routine's arguments sit in its list (1-based; 0: not an argument of it): the
 * letters SIDE, UPLO, TRANS(A), TRANSB, DIAG; M, N, K; ALPHA, BETA; DESCA, DESCB, DESCC
 * (the output's; IX and JX are the two arguments before each descriptor). */
struct arg_pos {
    int letter[5];
    int m, n, k, alpha, beta;
    int desc[3];
};

static struct arg_pos arg_positions(enum glue_kind k) {
    switch (k) {
    case GLUE_GEMM: return (struct arg_pos){{0, 0, 1, 2, 0}, 3, 4, 5, 6, 15, {10, 14, 19}};
    case GLUE_SYMM:
    case GLUE_HEMM: return (struct arg_pos){{1, 2, 0, 0, 0}, 3, 4, 0, 5, 14, {9, 13, 18}};
    case GLUE_SYRK:
    case GLUE_HERK: return (struct arg_pos){{0, 1, 2, 0, 0}, 0, 3, 4, 5, 10, {9, 0, 14}};
    case GLUE_SYR2K:
    case GLUE_HER2K: return (struct arg_pos){{0, 1, 2, 0, 0}, 0, 3, 4, 5, 14, {9, 13, 18}};
    default: /* TRMM, TRSM: the output is B */
        return (struct arg_pos){{1, 2, 3, 0, 4}, 5, 6, 0, 7, 0, {11, 0, 15}};
    }
}

/* The compared values, the same layout on every process whatever the routine: */
enum {
    V_KIND,
    V_DT,
    V_LETTER,
    V_M = V_LETTER + 5,
    V_N,
    V_K,
    V_ALPHA,
    V_BETA = V_ALPHA + 4, /* 16 bytes each, as four 32-bit pieces */
    V_OFF = V_BETA + 4,   /* ia, ja, ib, jb, ic, jc */
    V_DESC = V_OFF + 6,   /* 3 x the entries below */
    NV = V_DESC + 3 * 8
};
static const int desc_entry[8] = {GLUE_M_,  GLUE_N_,  GLUE_IMB_,  GLUE_INB_,
                                  GLUE_MB_, GLUE_NB_, GLUE_RSRC_, GLUE_CSRC_};
static const char *const desc_entry_name[8] = {"M_",  "N_",  "IMB_",  "INB_",
                                               "MB_", "NB_", "RSRC_", "CSRC_"};

static void scalar_pieces(const struct glue_call *c, const tess__scalar_t *s, long long *out) {
    unsigned char b[16] = {0};
    memcpy(b, s->bytes, tess__dtypes[c->dt].size);
    for (int i = 0; i < 4; i++) {
        uint32_t u;
        memcpy(&u, b + 4 * i, 4);
        out[i] = u;
    }
}

static void arg_values(const struct glue_call *c, long long v[NV]) {
    memset(v, 0, sizeof(long long) * NV);
    v[V_KIND] = c->kind, v[V_DT] = c->dt;
    const char l[5] = {c->side, c->uplo, c->ta, c->tb, c->diag};
    for (int i = 0; i < 5; i++) v[V_LETTER + i] = (unsigned char)l[i];
    v[V_M] = c->m, v[V_N] = c->n, v[V_K] = c->k;
    scalar_pieces(c, &c->alpha, v + V_ALPHA);
    scalar_pieces(c, &c->beta, v + V_BETA);
    const f_int off[6] = {c->ia, c->ja, c->ib, c->jb, c->ic, c->jc};
    const f_int *d[3] = {c->da, c->db, c->dc};
    for (int x = 0; x < 3; x++) {
        if (!d[x]) continue;
        v[V_OFF + 2 * x] = off[2 * x], v[V_OFF + 2 * x + 1] = off[2 * x + 1];
        for (int e = 0; e < 8; e++) v[V_DESC + 8 * x + e] = d[x][desc_entry[e]];
    }
}

/* One argument that differs: PBLAS's scaled code (100 pos, or 100 pos + entry for a
 * descriptor entry) and the value range over the processes. */
struct differ {
    int code;
    int what; /* 0 letter, 1 integer, 2 index (printed 1-based), 3 scalar */
    char name[24];
    long long lo, hi;
};

/* A difference reported for the call as a whole: one PB_Cwarn ("Illegal call: the
 * processes of the context <what>"), then the error. */
static void differ_whole(const struct glue_call *c, const char *rout, const char *what) {
    const struct glue_syms *S = glue_syms();
    if (S->cwarn)
        S->cwarn(c->ctxt, -1, (char *)rout, (char *)"Illegal call: the processes of the context %s",
                 what);
    glue_report(c, rout, -1);
}

/* The processes passed different global arguments (every process knows, from the same
 * reduction): find which, the same way on every process (the minimum and maximum of each
 * over the grid), and report them as PBLAS reports bad arguments: one PB_Cwarn each, in
 * PBLAS's order, then PB_Cabort with the smallest code. */
static void report_differ(tess_grid_t *g, const struct glue_call *c) {
    const struct glue_syms *S = glue_syms();
    const char *rout = c->rout ? c->rout : "PBLAS";
    long long in[2 * NV], out[2 * NV];
    arg_values(c, in);
    for (int i = 0; i < NV; i++) in[NV + i] = -in[i];
    if (MPI_Allreduce(in, out, 2 * NV, MPI_LONG_LONG, MPI_MIN, g->comm) != MPI_SUCCESS) {
        /* cannot tell which: still an error on every process, never the reference */
        differ_whole(c, rout, "passed different arguments; they must be the same on every process");
        return;
    }
    const long long *lo = out, *hi_neg = out + NV;
#define DIFF(i) (lo[i] != -hi_neg[i])
    if (DIFF(V_KIND) || DIFF(V_DT)) {
        differ_whole(c, rout, "called different PBLAS routines; they must call the same one");
        return;
    }
    const struct arg_pos P = arg_positions(c->kind);
    const bool trxm = c->kind == GLUE_TRMM || c->kind == GLUE_TRSM;
    const char *const letter[5] = {
        "SIDE", "UPLO", c->kind == GLUE_GEMM || trxm ? "TRANSA" : "TRANS", "TRANSB", "DIAG"};
    const char *const mname[3] = {"A", "B", trxm ? "B" : "C"};
    struct differ d[NV];
    int nd = 0;
#define ADD(code_, what_, lo_, hi_, ...)                                                     \
    do {                                                                                     \
        d[nd] = (struct differ){.code = (code_), .what = (what_), .lo = (lo_), .hi = (hi_)}; \
        snprintf(d[nd].name, sizeof d[nd].name, __VA_ARGS__);                                \
        nd++;                                                                                \
    } while (0)
    for (int i = 0; i < 5; i++)
        if (P.letter[i] && DIFF(V_LETTER + i))
            ADD(100 * P.letter[i], 0, lo[V_LETTER + i], -hi_neg[V_LETTER + i], "%s", letter[i]);
    const int size_pos[3] = {P.m, P.n, P.k};
    static const char *const size_name[3] = {"M", "N", "K"};
    for (int i = 0; i < 3; i++)
        if (size_pos[i] && DIFF(V_M + i))
            ADD(100 * size_pos[i], 1, lo[V_M + i], -hi_neg[V_M + i], "%s", size_name[i]);
    const int scal_pos[2] = {P.alpha, P.beta};
    for (int i = 0; i < 2; i++) {
        bool differs = false;
        for (int j = 0; j < 4; j++) differs = differs || DIFF(V_ALPHA + 4 * i + j);
        if (scal_pos[i] && differs) ADD(100 * scal_pos[i], 3, 0, 0, "%s", i ? "BETA" : "ALPHA");
    }
    for (int x = 0; x < 3; x++) {
        const int dp = P.desc[x];
        if (!dp) continue;
        for (int j = 0; j < 2; j++)
            if (DIFF(V_OFF + 2 * x + j))
                ADD(100 * (dp - 2 + j), 2, lo[V_OFF + 2 * x + j], -hi_neg[V_OFF + 2 * x + j],
                    "%c%s", j ? 'J' : 'I', mname[x]);
        for (int e = 0; e < 8; e++)
            if (DIFF(V_DESC + 8 * x + e))
                ADD(100 * dp + desc_entry[e] + 1, 1, lo[V_DESC + 8 * x + e],
                    -hi_neg[V_DESC + 8 * x + e], "DESC%s[%s]", mname[x], desc_entry_name[e]);
    }
#undef ADD
#undef DIFF
    /* PBLAS's order: by position, a descriptor's entries in order (insertion sort) */
    for (int i = 1; i < nd; i++)
        for (int j = i; j > 0 && d[j].code < d[j - 1].code; j--) {
            struct differ t = d[j];
            d[j] = d[j - 1], d[j - 1] = t;
        }
    if (nd == 0) { /* only what this routine does not take differs: cannot happen */
        if (S->cwarn)
            S->cwarn(c->ctxt, -1, (char *)rout,
                     "Illegal call: the processes of the context "
                     "passed different arguments; they must be the same on every process");
        glue_report(c, rout, -1);
        return;
    }
    static const char tail[] = "across the processes of the context; it must be the same "
                               "on every process";
    for (int i = 0; S->cwarn && i < nd; i++) {
        switch (d[i].what) {
        case 0:
            S->cwarn(c->ctxt, -1, (char *)rout, "Illegal %s: from %c to %c %s", d[i].name,
                     (char)d[i].lo, (char)d[i].hi, tail);
            break;
        case 3:
            S->cwarn(c->ctxt, -1, (char *)rout, "Illegal %s: it differs %s", d[i].name, tail);
            break;
        default: {
            const long long one = d[i].what == 2 ? 1 : 0;
            S->cwarn(c->ctxt, -1, (char *)rout, "Illegal %s: from %lld to %lld %s", d[i].name,
                     d[i].lo + one, d[i].hi + one, tail);
        }
        }
    }
    const int code = d[0].code;
    glue_report(c, rout, code % 100 == 0 ? -(code / 100) : -code);
}

enum glue_way glue_route_way(tess_grid_t *g, const struct glue_call *c, bool local_ok) {
    f_int r[3], q[3];
    operand_shapes(c, r, q);
    int ok = local_ok && comm_takes(c->dc, "C", &g->at, c->ic, c->jc, r[2], q[2]) &&
             comm_takes(c->da, "A", &g->at, c->ia, c->ja, r[0], q[0]) &&
             (!c->db || comm_takes(c->db, "B", &g->at, c->ib, c->jb, r[1], q[1])) &&
             glue_devices_ready();
    uint64_t h = args_hash(c);
    unsigned long long mine[3] = {!ok, h, ~h}, all[3];
    if (MPI_Allreduce(mine, all, 3, MPI_UNSIGNED_LONG_LONG, MPI_MAX, g->comm) != MPI_SUCCESS)
        return GLUE_REFERENCE;
    if (all[1] != ~all[2]) { /* different global arguments: a bad call, whatever else */
        report_differ(g, c);
        return GLUE_REPORTED;
    }
    return all[0] ? GLUE_REFERENCE : GLUE_TESSERA;
}

void glue_route_failed(const struct glue_call *c, int st, bool intact, const char *where) {
    /* no device left, or one failed (also where the runtime has not seen it yet: the
     * grid's transport uses the device too): later calls go to the reference */
    if (st == TESS_ENODEV || st == TESS_EDEVICE) tess__autostart_off();
    if (intact) {
        if (glue_knobs()->verbose)
            fprintf(stderr,
                    "tessera-scalapack: rank %d: p%c%s_ failed in tessera (%s, %s: %s); "
                    "its output still holds its input, so it runs again on the reference "
                    "ScaLAPACK\n",
                    glue_world_rank(), "sdcz"[c->dt], glue_kind_name[c->kind], where,
                    tess_strerror(st), tess_last_error());
        glue_count_fallback(c->kind, c->dt);
        return;
    }
    fprintf(stderr,
            "tessera-scalapack: rank %d: p%c%s_ failed in tessera (%s, %s: %s) after "
            "writing part of its output; its input is lost, stopping\n",
            glue_world_rank(), "sdcz"[c->dt], glue_kind_name[c->kind], where, tess_strerror(st),
            tess_last_error());
    const struct glue_syms *S = glue_syms();
    if (S->blacs_abort) S->blacs_abort(c->ctxt, -1);
    abort();
}

/* ---- p?gemm_ ------------------------------------------------------------------------------ */

void glue_gemm_route(const struct glue_call *c, void (*reference)(void *arg), void *arg) {
    double flops = glue_call_flops(c);
    tess_grid_t *g = glue_route_grid(c);
    enum glue_way way = g ? glue_route_way(g, c, true) : GLUE_REFERENCE;
    if (way == GLUE_REPORTED) return;
    if (way == GLUE_REFERENCE) {
        glue_count_reference(c->kind, c->dt, flops);
        reference(arg);
        return;
    }
    int st = glue_pgemm(g, c, c->ta, c->tb, c->m, c->n, c->k, &c->alpha,
                        GLUE_SUB(c->A, c->ia, c->ja, c->da), GLUE_SUB(c->B, c->ib, c->jb, c->db),
                        &c->beta, GLUE_SUB(c->C, c->ic, c->jc, c->dc));
    if (st == TESS_OK) {
        glue_count_tessera(c->kind, c->dt, flops);
        return;
    }
    /* beta = 0: C was not an input, the reference computes it again (every process: the
     * status is the same everywhere) */
    glue_route_failed(c, st, tess__scalar_is_zero(c->dt, &c->beta), "the GEMM");
    glue_count_reference(c->kind, c->dt, flops);
    reference(arg);
}
