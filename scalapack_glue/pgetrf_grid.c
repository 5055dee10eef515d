/* scalapack_glue/pgetrf_grid.c: p?getrf_ on a grid of several process rows (P > 1), the
 * device transport on one node, sub(A) starting a block. sub(A) moves into host scratch
 * laid out for the grid's flat grid (1 x PQ, the same processes, column = rank: block
 * column J on column J mod PQ, every row), pgetrf.c's LU factors it there, and the factor
 * moves back; IPIV is spread to ScaLAPACK's layout (each process: its local rows, on every
 * process column). A move: every pair of processes once (round t: to me + t, from
 * me - t), each block on the list both sides enumerate alike (block columns, then block
 * rows): over the device transport in chunks of C bytes, packed by host threads into
 * pinned memory, copied to the device, exchanged, copied back and unpacked where they go
 * (chunk c + 1 moves while c is unpacked and c + 2 packed). Invariants: A is written only by the
 * move back, after every process agreed that the LU succeeded and had its device buffers:
 * a failure before leaves A and IPIV as they were (*wrote false; the caller may send the
 * call to the reference); every process reaches every exchange and agreement (buffers and
 * queued exchanges are agreed before anyone waits for a peer).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "glue.h"
#include "level3.h" /* (the copy kinds) */
#include "par.h"

#define CHUNK ((size_t)64 << 20) /* a chunk at most: two device and four pinned buffers of it */

struct mv {
    tess_grid_t *g;
    size_t es;
    int64_t m, n, nb, ia, ja, nbr, nbc; /* sub(A): blocks nbr x nbc */
    struct tess__comm_bc R, C;          /* A's rows over P, columns over Q */
    int P, PQ, me;                      /* me: my rank in g->comm, my flat column */
    char *A, *F;                        /* my local array of A; my flat scratch */
    int64_t lda, ldf;
    int threads; /* for host copies: the node's cores over the processes */
    double t[3]; /* this move's: my own blocks, copies to the devices, exchange and back */
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

/* Host threads for a move's host side: the node's cores shared by the grid's processes
 * (all on one node: the device transport). */
static int host_threads(int PQ) {
    long c = sysconf(_SC_NPROCESSORS_ONLN);
    return (int)TESS__MAX(1, TESS__MIN(16, c / TESS__MAX(PQ, 1)));
}

struct touch {
    char *p;
    size_t bytes;
};

#define TOUCH_PART ((size_t)64 << 20)

static void touch_part(void *ctx, int i) {
    const struct touch *t = ctx;
    size_t pg = 4096, a = (size_t)i * TOUCH_PART, b = TESS__MIN(t->bytes, a + TOUCH_PART);
    for (size_t o = a; o < b; o += pg) t->p[o] = 0;
}

/* The flat scratch: `bytes` of host memory in huge pages where the kernel gives them
 * (MADV_HUGEPAGE), its pages faulted in by `threads` threads: four processes touching 8 GiB
 * each with 16 threads took 4.5 s in 4 KiB pages and 0.52 s in huge pages on the 4 x H100
 * host (2026-11-28), where first touches by the copies into it would cost more than the
 * move. NULL: out of host memory. */
static char *flat_alloc(size_t bytes, int threads) {
    const size_t huge = (size_t)2 << 20;
    struct touch t = {NULL, (TESS__MAX(bytes, 1) + huge - 1) / huge * huge};
    if (posix_memalign((void **)&t.p, huge, t.bytes)) return NULL;
#ifdef MADV_HUGEPAGE
    (void)madvise(t.p, t.bytes, MADV_HUGEPAGE); /* a hint: 4 KiB pages do too */
#endif
    tess__par_run(threads, (int)((t.bytes + TOUCH_PART - 1) / TOUCH_PART), touch_part, &t);
    return t.p;
}

/* Copy a bm x bn block between column-major arrays (ld 0: packed), with non-temporal
 * stores: nothing on this thread reads the destination next. */
static void copy_blk(char *dst, int64_t ldd, const char *src, int64_t lds, int64_t bm, int64_t bn,
                     size_t es) {
    size_t col = (size_t)bm * es;
    for (int64_t j = 0; j < bn; j++)
        tess__copy_nt(dst + (size_t)j * (size_t)(ldd ? ldd : bm) * es,
                      src + (size_t)j * (size_t)(lds ? lds : bm) * es, col);
    tess__copy_nt_fence();
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

/* The buffers of a move: C bytes each, in device memory (the transport's) and pinned host
 * memory (two of each direction: chunk c + 1 is packed and unpacked while c moves). */
struct dmove {
    struct tess__dpanel *dp;
    char *Ds, *Dr;
    void *h[2];
    char *Hs[2], *Hr[2];
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

/* One side of a round: its blocks in chunks (chunk c: blocks [cs[c], cs[c + 1]), bytes[c]),
 * each block at off[i] in its chunk's buffer. */
struct side {
    const struct mv *v;
    const struct mb *l;
    size_t *cs, *bytes, *off;
};

static int side_open(const struct mv *v, const struct mb *l, size_t n, size_t C, int64_t iters,
                     struct side *sd) {
    *sd = (struct side){v, l, malloc(sizeof(size_t) * (size_t)(iters + 1)),
                        malloc(sizeof(size_t) * (size_t)(iters + 1)),
                        malloc(sizeof(size_t) * TESS__MAX(n, 1))};
    if (!sd->cs || !sd->bytes || !sd->off)
        return tess__fail(TESS_ENOMEM, "p?getrf: move: out of host memory");
    sd->cs[0] = 0;
    for (int64_t c = 0; c < iters; c++) {
        sd->cs[c + 1] = chunk(v, l, n, sd->cs[c], C, &sd->bytes[c]);
        for (size_t i = sd->cs[c], o = 0; i < sd->cs[c + 1]; o += mb_bytes(v, &l[i++]))
            sd->off[i] = o;
    }
    return TESS_OK;
}

static void side_close(struct side *sd) { free(sd->cs), free(sd->bytes), free(sd->off); }

/* Chunk c of a side packed into buf (send) or unpacked from it (receive), a block per item. */
struct pack {
    const struct side *sd;
    size_t first;
    char *buf;
    bool in;
};

static void pack_blk(void *ctx, int k) {
    const struct pack *p = ctx;
    size_t i = p->first + (size_t)k;
    const struct mb *b = &p->sd->l[i];
    size_t es = p->sd->v->es;
    if (p->in)
        copy_blk(p->buf + p->sd->off[i], 0, b->from, b->ldfrom, b->bm, b->bn, es);
    else
        copy_blk(b->to, b->ldto, p->buf + p->sd->off[i], 0, b->bm, b->bn, es);
}

static void pack(struct mv *v, const struct side *sd, int64_t c, char *buf, bool in) {
    double t0 = tess__now();
    struct pack p = {sd, sd->cs[c], buf, in};
    tess__par_run(v->threads, (int)(sd->cs[c + 1] - sd->cs[c]), pack_blk, &p);
    v->t[1] += tess__now() - t0;
}

/* Chunk c queued: its packed send buffer to the devices, the exchange, the received one
 * back to Hr[c % 2]. The exchange is agreed with *carry (a process whose copy failed still
 * takes part: its peers wait for it); the copy back's failure goes to *carry. */
static int queue(const struct mv *v, const struct dmove *dm, int to, const struct side *S, int from,
                 const struct side *R, int64_t c, int *carry) {
    size_t sb = S->bytes[c], rb = R->bytes[c];
    int q = *carry;
    if (!q) q = tess__dpanel_copy(dm->dp, TESS__H2D, dm->Ds, sb, dm->Hs[c % 2], sb, sb, 1);
    struct tess__dpiece s = {to, dm->Ds, sb}, r = {from, dm->Dr, rb};
    int x = tess__dpanel_exchange(dm->dp, &s, sb > 0, &r, rb > 0);
    if (!q) q = x;
    int st = tess__comm_agree(v->g, q);
    if (!st) *carry = tess__dpanel_copy(dm->dp, TESS__D2H, dm->Hr[c % 2], rb, dm->Dr, rb, rb, 1);
    return st;
}

/* Round with `to` and `from` over the device transport: every process runs the grid's
 * most chunks, each agreed once queued (a failure, carried to the next agreement, reaches
 * everyone before anyone waits for a peer). Chunk c + 1 moves while the host unpacks c and
 * packs c + 2 (stream order keeps the device buffers apart; the host ones alternate). */
static int dev_round(struct mv *v, const struct dmove *dm, int to, const struct mb *sl, size_t ns,
                     int from, const struct mb *rl, size_t nr) {
    int64_t iters = (int64_t)TESS__MAX(nchunks(v, sl, ns, dm->C), nchunks(v, rl, nr, dm->C));
    int st = TESS__MPI(MPI_Allreduce(MPI_IN_PLACE, &iters, 1, MPI_INT64_T, MPI_MAX, v->g->comm)),
        carry = TESS_OK;
    struct side S = {0}, R = {0};
    if (!st) st = side_open(v, sl, ns, dm->C, iters, &S);
    if (!st) st = side_open(v, rl, nr, dm->C, iters, &R);
    st = tess__comm_agree(v->g, st);
    if (!st && iters > 0) {
        pack(v, &S, 0, dm->Hs[0], true);
        st = queue(v, dm, to, &S, from, &R, 0, &carry);
        if (!st && iters > 1) pack(v, &S, 1, dm->Hs[1], true);
    }
    for (int64_t c = 0; !st && c < iters; c++) {
        double t0 = tess__now();
        int w = tess__dpanel_sync(dm->dp), ok = !carry && !w; /* chunk c landed */
        v->t[2] += tess__now() - t0;
        if (!carry) carry = w;
        if (c + 1 < iters && (st = queue(v, dm, to, &S, from, &R, c + 1, &carry))) break;
        if (ok) pack(v, &R, c, dm->Hr[c % 2], false);
        if (ok && c + 2 < iters) pack(v, &S, c + 2, dm->Hs[c % 2], true);
    }
    side_close(&S), side_close(&R);
    return st ? st : tess__comm_agree(v->g, carry);
}

/* The buffers for the moves: C bytes each, agreed (the grid's least, at least the largest
 * block); dm->C = 0 where some process could not have them. */
static void dev_open(const struct mv *v, struct tess__dpanel *dp, size_t pair_max,
                     struct dmove *dm) {
    memset(dm, 0, sizeof *dm);
    dm->dp = dp;
    size_t blk = (size_t)(v->nb * v->nb) * v->es, C = TESS__MAX(blk, TESS__MIN(pair_max, CHUNK));
    void *p[2] = {0};
    for (; C >= blk; C /= 2) {
        if (!tess__dpanel_alloc(dp, C, &p[0], &dm->h[0]) &&
            !tess__dpanel_alloc(dp, C, &p[1], &dm->h[1]))
            break;
        tess__dpanel_free(dp, dm->h[0]), tess__dpanel_free(dp, dm->h[1]);
        dm->h[0] = dm->h[1] = NULL;
    }
    for (int i = 0; i < 2 && C >= blk; i++)
        if (!(dm->Hs[i] = tess_malloc_host(C)) || !(dm->Hr[i] = tess_malloc_host(C))) C = 0;
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
    for (int i = 0; i < 2; i++) tess_free_host(dm->Hs[i]), tess_free_host(dm->Hr[i]);
}

struct own {
    const struct mv *v;
    const struct mb *l;
};

static void own_blk(void *ctx, int i) {
    const struct own *o = ctx;
    const struct mb *b = &o->l[i];
    copy_blk(b->to, b->ldto, b->from, b->ldfrom, b->bm, b->bn, o->v->es);
}

/* One move (collective) over the device transport: my own blocks in place (v->threads),
 * then round t with process me + t (sent to) and me - t (received from). *wrote: the
 * destination was written (not where device buffers were missing: TESS_ENOMEM, nothing
 * done). v->t: its times. */
static int move(struct mv *v, bool back, struct tess__dpanel *dp, bool *wrote) {
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
    memset(v->t, 0, sizeof v->t);
    double t0 = tess__now();
    if (!st && ns[0]) /* my blocks staying with me */
        tess__par_run(v->threads, (int)ns[0], own_blk, &(struct own){v, sl[0]});
    v->t[0] = tess__now() - t0;
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
                   .ldf = TESS__MAX(1, m),
                   .threads = host_threads(g->at.nprow * g->at.npcol)};
    v.R = (struct tess__comm_bc){.n = d[2], .ib = nb, .nb = nb, .src = d[6], .np = v.P};
    v.C = (struct tess__comm_bc){.n = d[3], .ib = nb, .nb = nb, .src = d[7], .np = g->at.npcol};
    struct tess__comm_bc fc = {.n = n, .ib = nb, .nb = nb, .src = 0, .np = v.PQ};
    int64_t nlf = tess__comm_bc_numroc(&fc, v.me), k = TESS__MIN(m, n);
    double t0 = tess__now();
    v.F = flat_alloc((size_t)(m * nlf) * v.es, v.threads);
    double ta = tess__now() - t0;
    f_int *ipf = malloc(sizeof *ipf * (size_t)k);
    st = !local_ok    ? tess__fail(TESS_EINVAL, "p?getrf: a local argument (LLD_A)")
         : v.F && ipf ? TESS_OK
                      : tess__fail(TESS_ENOMEM, "p?getrf: the flat scratch: out of host memory");
    st = tess__comm_agree_on(g->comm, st);
    double t1 = t0, t2 = t0, tm[3] = {0};
    bool mw = false;
    if (!st) st = move(&v, false, &dp, &mw);
    if (!st) {
        memcpy(tm, v.t, sizeof tm);
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
                "move there %.3f s (scratch %.3f, own blocks %.3f, packing %.3f, waiting "
                "%.3f), LU %.3f s, move back %.3f s (own %.3f, packing %.3f, waiting %.3f)\n",
                glue_world_rank(), g->at.nprow, g->at.npcol, t1 - t0, ta, tm[0], tm[1], tm[2],
                t2 - t1, tess__now() - t2, v.t[0], v.t[1], v.t[2]);
    free(v.F), free(ipf);
    return st;
}
