/* scalapack_glue/pgetrf_grid.c: p?getrf_ on a grid of several process rows (P > 1), the
 * device transport on one node, sub(A) starting a block. sub(A) moves into host scratch
 * laid out for the grid's flat grid (1 x PQ, the same processes, column = rank: block
 * column J on column J mod PQ, every row), pgetrf.c's LU factors it there, and the factor
 * moves back; IPIV is spread to ScaLAPACK's layout (each process: its local rows, on every
 * process column). A move: every pair of processes once (round t: to me + t, from
 * me - t), each block on the list both sides enumerate alike (block columns, then block
 * rows): over the device transport, copied host to device packed into chunks of C bytes,
 * exchanged, copied device to host where it goes. Invariants: A is written only by the
 * move back, after every process agreed that the LU succeeded and had its device buffers:
 * a failure before leaves A and IPIV as they were (*wrote false; the caller may send the
 * call to the reference); every process reaches every exchange and agreement (buffers and
 * queued exchanges are agreed before anyone waits for a peer).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "glue.h"
#include "level3.h" /* (the copy kinds) */

#define CHUNK ((size_t)256 << 20) /* the device buffers' bytes at most */

struct mv {
    tess_grid_t *g;
    size_t es;
    int64_t m, n, nb, ia, ja, nbr, nbc; /* sub(A): blocks nbr x nbc */
    struct tess__comm_bc R, C;          /* A's rows over P, columns over Q */
    int P, PQ, me;                      /* me: my rank in g->comm, my flat column */
    char *A, *F;                        /* my local array of A; my flat scratch */
    int64_t lda, ldf;
};

/* Block (I, J) of sub(A): its size, its process on the grid and on the flat grid, and its
 * addresses there (NULL where that process is not me). */
struct blk {
    int64_t bm, bn;
    int grid, flat;
    char *a, *f;
};

static void blk_of(const struct mv *v, int64_t I, int64_t J, struct blk *b) {
    int64_t r = v->ia + I * v->nb, c = v->ja + J * v->nb;
    b->bm = TESS__MIN(v->nb, v->m - I * v->nb);
    b->bn = TESS__MIN(v->nb, v->n - J * v->nb);
    b->grid = tess__comm_grid_rank(v->g, tess__comm_bc_g2p(&v->R, r), tess__comm_bc_g2p(&v->C, c));
    b->flat = (int)(J % v->PQ);
    b->a = b->grid != v->me ? NULL
                            : v->A + ((size_t)tess__comm_bc_g2l(&v->R, r) +
                                      (size_t)tess__comm_bc_g2l(&v->C, c) * (size_t)v->lda) *
                                         v->es;
    b->f = b->flat != v->me
               ? NULL
               : v->F +
                     ((size_t)(I * v->nb) + (size_t)(J / v->PQ * v->nb) * (size_t)v->ldf) * v->es;
}

/* One block of a move: where it is read and written (NULL: not on this process). */
struct mb {
    const char *from;
    char *to;
    int64_t ldfrom, ldto, bm, bn;
};

static size_t mb_bytes(const struct mv *v, const struct mb *b) {
    return (size_t)(b->bm * b->bn) * v->es;
}

/* Copy a bm x bn block between column-major arrays (ld 0: packed). */
static void copy_blk(char *dst, int64_t ldd, const char *src, int64_t lds, int64_t bm, int64_t bn,
                     size_t es) {
    size_t col = (size_t)bm * es;
    for (int64_t j = 0; j < bn; j++)
        memcpy(dst + (size_t)j * (size_t)(ldd ? ldd : bm) * es,
               src + (size_t)j * (size_t)(lds ? lds : bm) * es, col);
}

/* The blocks going from process s to process d (back: flat to grid, else grid to flat), in
 * the one order both sides enumerate: *n of them in *out (the caller frees it), *bytes. */
static int list_of(const struct mv *v, bool back, int s, int d, struct mb **out, size_t *n,
                   size_t *bytes) {
    size_t cap = 16, cnt = 0, at = 0;
    struct mb *l = malloc(sizeof *l * cap);
    struct blk b;
    for (int64_t J = 0; l && J < v->nbc; J++) {
        if ((int)(J % v->PQ) != (back ? s : d)) continue; /* its flat process */
        for (int64_t I = 0; l && I < v->nbr; I++) {
            blk_of(v, I, J, &b);
            if ((back ? b.flat : b.grid) != s || (back ? b.grid : b.flat) != d) continue;
            if (cnt == cap) {
                struct mb *g = realloc(l, sizeof *l * (cap *= 2));
                if (!g) free(l);
                l = g;
                if (!l) break;
            }
            l[cnt] = (struct mb){.from = back ? b.f : b.a,
                                 .to = back ? b.a : b.f,
                                 .ldfrom = back ? v->ldf : v->lda,
                                 .ldto = back ? v->lda : v->ldf,
                                 .bm = b.bm,
                                 .bn = b.bn};
            at += mb_bytes(v, &l[cnt++]);
        }
    }
    *out = l, *n = cnt, *bytes = at;
    return l ? TESS_OK : tess__fail(TESS_ENOMEM, "p?getrf: move: out of host memory");
}

/* ---- the move over the device transport: chunks of C bytes through device memory ----- */

struct dmove {
    struct tess__dpanel *dp;
    char *Ds, *Dr; /* device memory: C bytes each */
    void *h[2];
    size_t C;
};

/* Blocks [i, *end) of l: as many as fit in C bytes (*bytes). */
static size_t chunk(const struct mv *v, const struct mb *l, size_t n, size_t i, size_t C,
                    size_t *bytes) {
    size_t b = 0;
    for (; i < n && b + mb_bytes(v, &l[i]) <= C; i++) b += mb_bytes(v, &l[i]);
    *bytes = b;
    return i;
}

static size_t nchunks(const struct mv *v, const struct mb *l, size_t n, size_t C) {
    size_t c = 0, b;
    for (size_t i = 0; i < n; c++) i = chunk(v, l, n, i, C, &b);
    return c;
}

/* Round with `to` and `from` over the device transport: every process runs the grid's
 * most chunks, each agreed once queued (a failure, carried to the next agreement, reaches
 * everyone before anyone waits for a peer). */
static int dev_round(const struct mv *v, const struct dmove *dm, int to, const struct mb *sl,
                     size_t ns, int from, const struct mb *rl, size_t nr) {
    int64_t iters = (int64_t)TESS__MAX(nchunks(v, sl, ns, dm->C), nchunks(v, rl, nr, dm->C));
    int st = TESS__MPI(MPI_Allreduce(MPI_IN_PLACE, &iters, 1, MPI_INT64_T, MPI_MAX, v->g->comm)),
        carry = TESS_OK;
    st = tess__comm_agree(v->g, st);
    size_t is = 0, ir = 0;
    for (int64_t c = 0; !st && c < iters; c++) {
        size_t sb, rb, o = 0, is1 = chunk(v, sl, ns, is, dm->C, &sb),
                       ir1 = chunk(v, rl, nr, ir, dm->C, &rb);
        int q = carry;
        for (size_t i = is; !q && i < is1; o += mb_bytes(v, &sl[i++]))
            q = tess__dpanel_copy(dm->dp, TESS__H2D, dm->Ds + o, (size_t)sl[i].bm * v->es,
                                  sl[i].from, (size_t)sl[i].ldfrom * v->es,
                                  (size_t)sl[i].bm * v->es, (size_t)sl[i].bn);
        /* (a process whose copies failed still takes part: its peers wait for it) */
        struct tess__dpiece s = {to, dm->Ds, sb}, r = {from, dm->Dr, rb};
        int x = tess__dpanel_exchange(dm->dp, &s, sb > 0, &r, rb > 0);
        if (!q) q = x;
        if ((st = tess__comm_agree(v->g, q))) break;
        o = 0;
        for (size_t i = ir; !q && i < ir1; o += mb_bytes(v, &rl[i++]))
            q = tess__dpanel_copy(dm->dp, TESS__D2H, rl[i].to, (size_t)rl[i].ldto * v->es,
                                  dm->Dr + o, (size_t)rl[i].bm * v->es, (size_t)rl[i].bm * v->es,
                                  (size_t)rl[i].bn);
        int w = tess__dpanel_sync(dm->dp);
        carry = q ? q : w;
        is = is1, ir = ir1;
    }
    return st ? st : tess__comm_agree(v->g, carry);
}

/* Device buffers for the moves: C bytes each, agreed (the grid's least, at least the
 * largest block); dm->C = 0 where some process could not have them. */
static void dev_open(const struct mv *v, struct tess__dpanel *dp, size_t pair_max,
                     struct dmove *dm) {
    memset(dm, 0, sizeof *dm);
    dm->dp = dp;
    size_t blk = (size_t)(v->nb * v->nb) * v->es,
           C = TESS__MAX(blk, TESS__MIN(pair_max, CHUNK / 4));
    void *p[2] = {0};
    for (; C >= blk; C /= 2) {
        if (!tess__dpanel_alloc(dp, C, &p[0], &dm->h[0]) &&
            !tess__dpanel_alloc(dp, C, &p[1], &dm->h[1]))
            break;
        tess__dpanel_free(dp, dm->h[0]), tess__dpanel_free(dp, dm->h[1]);
        dm->h[0] = dm->h[1] = NULL;
    }
    tess__clear_error();
    uint64_t c = C >= blk ? C : 0;
    if (MPI_Allreduce(MPI_IN_PLACE, &c, 1, MPI_UINT64_T, MPI_MIN, v->g->comm) != MPI_SUCCESS) c = 0;
    dm->C = c >= blk ? c : 0;
    dm->Ds = p[0], dm->Dr = p[1];
}

static void dev_close(struct dmove *dm) {
    if (!dm->dp) return;
    (void)tess__dpanel_sync(dm->dp);
    tess__dpanel_free(dm->dp, dm->h[0]), tess__dpanel_free(dm->dp, dm->h[1]);
}

/* One move (collective) over the device transport: my own blocks in place, then round t
 * with process me + t (sent to) and me - t (received from). *wrote: the destination was
 * written (not where device buffers were missing: TESS_ENOMEM, nothing done). */
static int move(const struct mv *v, bool back, struct tess__dpanel *dp, bool *wrote) {
    int PQ = v->PQ, st;
    struct mb **sl = calloc((size_t)PQ, sizeof *sl), **rl = calloc((size_t)PQ, sizeof *rl);
    size_t *ns = calloc((size_t)PQ, sizeof *ns), *nr = calloc((size_t)PQ, sizeof *nr), pmax = 0, sb,
           rb;
    st = sl && rl && ns && nr ? TESS_OK
                              : tess__fail(TESS_ENOMEM, "p?getrf: move: out of host memory");
    for (int t = 0; !st && t < PQ; t++) {
        st = list_of(v, back, v->me, (v->me + t) % PQ, &sl[t], &ns[t], &sb);
        if (!st) st = list_of(v, back, (v->me - t + PQ) % PQ, v->me, &rl[t], &nr[t], &rb);
        if (t) pmax = TESS__MAX(pmax, TESS__MAX(sb, rb));
    }
    st = tess__comm_agree_on(v->g->comm, st);
    struct dmove dm = {0};
    if (!st) dev_open(v, dp, pmax, &dm);
    if (!st && !dm.C)
        st = tess__fail(TESS_ENOMEM, "p?getrf: no device memory to move sub(A) through");
    *wrote = !st;
    for (size_t i = 0; !st && i < ns[0]; i++) /* my blocks staying with me */
        copy_blk(sl[0][i].to, sl[0][i].ldto, sl[0][i].from, sl[0][i].ldfrom, sl[0][i].bm,
                 sl[0][i].bn, v->es);
    for (int t = 1; !st && t < PQ; t++)
        st = dev_round(v, &dm, (v->me + t) % PQ, sl[t], ns[t], (v->me - t + PQ) % PQ, rl[t], nr[t]);
    dev_close(&dm);
    for (int t = 0; t < PQ && sl && rl; t++) free(sl[t]), free(rl[t]);
    free(sl), free(rl), free(ns), free(nr);
    return tess__comm_agree_on(v->g->comm, st);
}

int glue_pgetrf_grid(tess_grid_t *g, tess_dtype_t dt, int64_t m, int64_t n, void *A, int64_t ia,
                     int64_t ja, const f_int *d, bool local_ok, f_int *ipiv, int64_t *info,
                     bool *wrote) {
    *info = 0;
    *wrote = false;
    const int64_t nb = d[4];
    if (ia % nb || ja % nb) return TESS_ENOSYS; /* (the same everywhere) */
    tess_grid_t *fg = NULL;
    int st = tess__comm_grid_flat(g, &fg);
    if (st) {
        tess__clear_error();
        return TESS_ENOSYS;
    }
    struct tess__dpanel dp; /* the device transport on the flat grid, or nothing moves */
    if ((st = tess__dpanel_open(fg, &dp))) {
        tess__clear_error();
        return st;
    }
    struct mv v = {.g = g,
                   .es = tess__dtypes[dt].size,
                   .m = m,
                   .n = n,
                   .nb = nb,
                   .ia = ia,
                   .ja = ja,
                   .nbr = (m + nb - 1) / nb,
                   .nbc = (n + nb - 1) / nb,
                   .P = g->at.nprow,
                   .PQ = g->at.nprow * g->at.npcol,
                   .me = g->rank,
                   .A = A,
                   .lda = d[8],
                   .ldf = TESS__MAX(1, m)};
    v.R = (struct tess__comm_bc){.n = d[2], .ib = nb, .nb = nb, .src = d[6], .np = v.P};
    v.C = (struct tess__comm_bc){.n = d[3], .ib = nb, .nb = nb, .src = d[7], .np = g->at.npcol};
    struct tess__comm_bc fc = {.n = n, .ib = nb, .nb = nb, .src = 0, .np = v.PQ};
    int64_t nlf = tess__comm_bc_numroc(&fc, v.me), k = TESS__MIN(m, n);
    v.F = malloc(TESS__MAX((size_t)(m * nlf) * v.es, 1));
    f_int *ipf = malloc(sizeof *ipf * (size_t)k);
    st = !local_ok    ? tess__fail(TESS_EINVAL, "p?getrf: a local argument (LLD_A)")
         : v.F && ipf ? TESS_OK
                      : tess__fail(TESS_ENOMEM, "p?getrf: the flat scratch: out of host memory");
    st = tess__comm_agree_on(g->comm, st);
    double t0 = tess__now(), t1 = t0, t2 = t0;
    bool mw = false;
    if (!st) st = move(&v, false, &dp, &mw);
    if (!st) {
        t1 = tess__now();
        /* the flat scratch's descriptor: m x n, blocks nb, from process column 0, ld m */
        f_int fd[9] = {d[0], d[1], (f_int)m, (f_int)n, (f_int)nb, (f_int)nb, 0, 0, (f_int)v.ldf};
        bool fw = false;
        st = glue_pgetrf(fg, dt, m, n, v.F, 0, 0, fd, true, ipf, info, &fw);
        t2 = tess__now();
    }
    if (!st) st = move(&v, true, &dp, wrote);
    /* IPIV as ScaLAPACK leaves it: each panel's pivots (global rows) go down its process
     * column and along the rows, to local index on from the panel's first row on every
     * process row (where its diagonal block is another's, a later panel's overwrite them,
     * but for the last) */
    for (int64_t s0 = 0; !st && s0 < k; s0 += nb) {
        int64_t l0 = tess__comm_bc_count(&v.R, ia + s0, g->at.myrow);
        for (int64_t i = s0; i < TESS__MIN(k, s0 + nb); i++)
            ipiv[l0 + i - s0] = (f_int)(ia + ipf[i]);
    }
    if (!st && glue_knobs()->verbose >= 2)
        fprintf(stderr,
                "tessera-scalapack: rank %d: p?getrf on %d x %d through one process row: "
                "move there %.3f s, LU %.3f s, move back %.3f s\n",
                glue_world_rank(), g->at.nprow, g->at.npcol, t1 - t0, t2 - t1, tess__now() - t2);
    free(v.F), free(ipf);
    return st;
}
