/* scalapack_glue/pgetrf_grid.c: p?getrf_ on a grid of several process rows (P > 1), the
 * device transport on one node, sub(A) starting a block. sub(A) moves into host scratch
 * laid out for the grid's flat grid (1 x PQ, the same processes, column = rank: block
 * column J on column J mod PQ, every row), pgetrf.c's LU factors it there, and the factor
 * moves back; IPIV is spread to ScaLAPACK's layout (each process: its local rows, on every
 * process column). A move: every pair of processes once, each block on the list both
 * sides enumerate alike (block columns, then block rows), packed column by column, sent in
 * messages of at most 1 GiB. Invariants: A is written only by the move back, after every
 * process agreed that the LU succeeded: a failure before leaves A and IPIV as they were
 * (*wrote false; the caller may send the call to the reference); every process reaches
 * every exchange and agreement (buffers are agreed before the first message).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "glue.h"

#define CHUNK ((size_t)1 << 30) /* bytes of one message */

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

/* Copy a bm x bn block between column-major arrays (ld 0: packed). */
static void copy_blk(char *dst, int64_t ldd, const char *src, int64_t lds, int64_t bm, int64_t bn,
                     size_t es) {
    size_t col = (size_t)bm * es;
    for (int64_t j = 0; j < bn; j++)
        memcpy(dst + (size_t)j * (size_t)(ldd ? ldd : bm) * es,
               src + (size_t)j * (size_t)(lds ? lds : bm) * es, col);
}

/* The blocks going from process s to process d (back: flat to grid, else grid to flat), in
 * the one order, their bytes in *bytes: copied in place when s and d are both me, else with
 * buf packed into it (s == me) or unpacked from it (d == me). */
static void walk(const struct mv *v, bool back, int s, int d, char *buf, size_t *bytes) {
    size_t at = 0;
    struct blk b;
    for (int64_t J = 0; J < v->nbc; J++) {
        if ((int)(J % v->PQ) != (back ? s : d)) continue; /* its flat process */
        for (int64_t I = 0; I < v->nbr; I++) {
            blk_of(v, I, J, &b);
            if ((back ? b.flat : b.grid) != s || (back ? b.grid : b.flat) != d) continue;
            size_t sz = (size_t)(b.bm * b.bn) * v->es;
            char *from = back ? b.f : b.a, *to = back ? b.a : b.f;
            int64_t ldfrom = back ? v->ldf : v->lda, ldto = back ? v->lda : v->ldf;
            if (s == v->me && d == v->me)
                copy_blk(to, ldto, from, ldfrom, b.bm, b.bn, v->es);
            else if (buf && s == v->me)
                copy_blk(buf + at, 0, from, ldfrom, b.bm, b.bn, v->es);
            else if (buf)
                copy_blk(to, ldto, buf + at, 0, b.bm, b.bn, v->es);
            at += sz;
        }
    }
    *bytes = at;
}

static int post(char *buf, size_t bytes, int peer, bool send, MPI_Comm comm, MPI_Request *rq,
                int *nrq) {
    for (size_t at = 0; at < bytes; at += CHUNK) {
        int cnt = (int)TESS__MIN(CHUNK, bytes - at), st;
        if (send)
            st = TESS__MPI(MPI_Isend(buf + at, cnt, MPI_BYTE, peer, 77, comm, &rq[(*nrq)++]));
        else
            st = TESS__MPI(MPI_Irecv(buf + at, cnt, MPI_BYTE, peer, 77, comm, &rq[(*nrq)++]));
        if (st) return st;
    }
    return TESS_OK;
}

/* One move (collective): my own blocks in place, then round t with process me + t and
 * me - t. */
static int move(const struct mv *v, bool back) {
    size_t smax = 0, rmax = 0, sz;
    for (int t = 1; t < v->PQ; t++) {
        walk(v, back, v->me, (v->me + t) % v->PQ, NULL, &sz);
        smax = TESS__MAX(smax, sz);
        walk(v, back, (v->me - t + v->PQ) % v->PQ, v->me, NULL, &sz);
        rmax = TESS__MAX(rmax, sz);
    }
    size_t nch = (TESS__MAX(smax, rmax) + CHUNK - 1) / CHUNK;
    char *sb = malloc(TESS__MAX(smax, 1)), *rb = malloc(TESS__MAX(rmax, 1));
    MPI_Request *rq = malloc(sizeof *rq * (2 * nch + 2));
    int st = sb && rb && rq ? TESS_OK
                            : tess__fail(TESS_ENOMEM, "p?getrf: move: out of host memory");
    st = tess__comm_agree_on(v->g->comm, st);
    if (!st) walk(v, back, v->me, v->me, NULL, &sz); /* my blocks staying with me */
    for (int t = 1; !st && t < v->PQ; t++) {
        int to = (v->me + t) % v->PQ, from = (v->me - t + v->PQ) % v->PQ, nrq = 0;
        size_t ss, rs;
        walk(v, back, v->me, to, sb, &ss);
        walk(v, back, from, v->me, NULL, &rs);
        st = post(rb, rs, from, false, v->g->comm, rq, &nrq);
        if (!st) st = post(sb, ss, to, true, v->g->comm, rq, &nrq);
        if (!st) st = TESS__MPI(MPI_Waitall(nrq, rq, MPI_STATUSES_IGNORE));
        if (!st) walk(v, back, from, v->me, rb, &rs);
    }
    free(sb), free(rb), free(rq);
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
    if (!st) st = move(&v, false);
    if (!st) {
        t1 = tess__now();
        /* the flat scratch's descriptor: m x n, blocks nb, from process column 0, ld m */
        f_int fd[9] = {d[0], d[1], (f_int)m, (f_int)n, (f_int)nb, (f_int)nb, 0, 0, (f_int)v.ldf};
        bool fw = false;
        st = glue_pgetrf(fg, dt, m, n, v.F, 0, 0, fd, true, ipf, info, &fw);
        t2 = tess__now();
    }
    if (!st) {
        *wrote = true;
        st = move(&v, true);
    }
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
