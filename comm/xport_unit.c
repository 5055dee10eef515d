/* comm/xport_unit.c: one unit of the device transport: for every peer of this rank the
 * pieces it owns and the peer needs are packed on the device, sent among the ranks of the
 * node (hw->exchange) and unpacked into the peer's panel; the pieces it needs itself go
 * straight into its panel; ranks of other nodes are served by xport_remote.c. Once the
 * unit's event completes the unit is in the panel. Invariants: every rank goes on with a
 * unit or none does (agreed before anything is queued); after that a local error never
 * stops this rank's part of the exchange (its peers count on it) but is kept for the next
 * agreement; every copy's block list, offsets and order are the same on every kind of
 * device. Owns the block lists, the exchange buffers (from the runtime's heap on the
 * panels' device, counted against the memory of the tiles) and the pass's error.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "xport_dev.h"

static void collect(void *arg, int op, int64_t sr, int64_t sc, int64_t tr, int64_t tc, int64_t rows,
                    int64_t cols) {
    struct tess__xblocks *l = arg;
    if (l->nb == l->capb) {
        size_t cap = l->capb ? 2 * l->capb : 256;
        void *p = realloc(l->b, cap * sizeof *l->b);
        if (!p) return; /* noticed by the caller: nb stays below the count */
        l->b = p;
        l->capb = cap;
    }
    l->b[l->nb++] = (struct tess__xblk){op, sr, sc, tr, tc, rows, cols};
}

int64_t tess__xdev_blocks(struct tess__xdev *n, int orow, int ocol, int drow, int dcol,
                          const struct tess__xport_unit *u) {
    struct tess__xblocks *l = &n->bl;
    l->nb = 0;
    if (tess__redist_blocks(n->ops, 2, orow, ocol, drow, dcol, u->k0, u->k1, u->kbase, u->s0, u->s1,
                            collect, l))
        return -1;
    int64_t bytes = 0;
    for (size_t i = 0; i < l->nb; i++)
        bytes += l->b[i].rows * l->b[i].cols * (int64_t)n->ops[l->b[i].op].es;
    return bytes;
}

/* Copy the nb blocks of list on stream `which`, from the local arrays (FROM_LOCAL: H2D), a
 * packed buffer `packed` in device memory (FROM_PACKED: D2D) or host memory
 * (FROM_HOST_PACKED: H2D), or where the blocks lie in the panel (FROM_PANEL: D2D), into
 * the panel or, with `pack`, packed into pack. */
int tess__xdev_copy_blocks(struct tess__xdev *n, const struct tess__xblk *list, size_t nb,
                           int which, int from, const char *packed, char *pack, const char *what) {
    int st = TESS_OK, s = x_stream(n, which);
    size_t o = 0;
    for (size_t i = 0; i < nb && !st; i++) {
        const struct tess__xblk *b = &list[i];
        const struct tess__redist_op *op = &n->ops[b->op];
        size_t es = op->es, w = (size_t)b->rows * es, lbuf = (size_t)op->ldbuf * es;
        char *inpanel = (char *)op->buf + (size_t)(b->tr + b->tc * op->ldbuf) * es;
        bool fp = from == FROM_PACKED || from == FROM_HOST_PACKED;
        const char *src = fp ? packed + o
                          : from == FROM_PANEL
                              ? inpanel
                              : (const char *)op->X + (size_t)(b->sr + b->sc * op->ldx) * es;
        size_t spitch = fp ? w : from == FROM_PANEL ? lbuf : (size_t)op->ldx * es;
        bool h2d = from == FROM_LOCAL || from == FROM_HOST_PACKED;
        st = n->hw->copy(n, s, h2d ? TESS__H2D : TESS__D2D, pack ? pack + o : inpanel,
                         pack ? w : lbuf, src, spitch, w, (size_t)b->cols, what);
        o += w * (size_t)b->cols;
    }
    if (!st && from == FROM_PANEL) n->base.packed_d2d += o;
    return st;
}

/* Keep the self blocks (bl.b) as bl.self. */
static int keep_self(struct tess__xblocks *l) {
    if (l->nb > l->capself) {
        void *p = realloc(l->self, l->nb * sizeof *l->self);
        if (!p) return tess__fail(TESS_ENOMEM, "pgemm: out of host memory");
        l->self = p;
        l->capself = l->nb;
    }
    if (l->nb) memcpy(l->self, l->b, l->nb * sizeof *l->b);
    l->nself = l->nb;
    return TESS_OK;
}

/* Whether the blocks in bl.b read the same pieces of the local arrays, in the same order,
 * as the self blocks kept by keep_self (then they are in the own panel already). */
static bool same_sources(const struct tess__xblocks *l) {
    if (l->nb != l->nself || l->nb == 0) return false;
    for (size_t i = 0; i < l->nb; i++) {
        const struct tess__xblk *a = &l->b[i], *b = &l->self[i];
        if (a->op != b->op || a->sr != b->sr || a->sc != b->sc || a->rows != b->rows ||
            a->cols != b->cols)
            return false;
    }
    return true;
}

/* An exchange buffer of at least `need` bytes (its contents are not kept). */
static int grow(struct tess__xdev *n, void **ptr, void **h, size_t *cap, size_t need) {
    if (need <= *cap) return TESS_OK;
    int st = n->hw->drain(n);
    if (st) return st;
    if (*h) tess__node_work_free(n->rt, *h);
    *ptr = *h = NULL;
    *cap = 0;
    if (tess__node_work_alloc(n->rt, n->base.dev, need, ptr, h))
        return tess__fail(TESS_ENOMEM, "pgemm: %zu bytes of device memory for the exchange buffers",
                          need);
    *cap = need;
    return TESS_OK;
}

void tess__xdev_unit_free(struct tess__xdev *n) {
    struct tess__xbufs *b = &n->buf;
    if (b->sh2) tess__node_work_free(n->rt, b->sh2);
    if (b->sh) tess__node_work_free(n->rt, b->sh);
    if (b->rh) tess__node_work_free(n->rt, b->rh);
    memset(b, 0, sizeof *b);
    free(n->bl.b);
    free(n->bl.self);
    memset(&n->bl, 0, sizeof n->bl);
}

/* What goes to and comes from every rank of this node: soff/roff (size + 1 each) into the
 * packed buffers. */
static int node_offsets(struct tess__xdev *n, const struct tess__xport_unit *u, size_t *soff,
                        size_t *roff) {
    const struct tess__comm_grid *g = n->base.g;
    const int me_r = g->at.myrow, me_c = g->at.mycol, size = n->base.size;
    const int *prow = n->base.prow, *pcol = n->base.pcol;
    size_t stot = 0, rtot = 0;
    for (int j = 0; j < size; j++) {
        soff[j] = stot, roff[j] = rtot;
        if (j == g->rank || n->nrank[j] < 0) continue;
        int64_t sb = tess__xdev_blocks(n, me_r, me_c, prow[j], pcol[j], u);
        int64_t rb = tess__xdev_blocks(n, prow[j], pcol[j], me_r, me_c, u);
        if (sb < 0 || rb < 0) return tess__fail(TESS_ENOMEM, "pgemm: out of host memory");
        if (n->hw->int_counts && (sb > INT_MAX || rb > INT_MAX)) /* MPI's int counts */
            return tess__fail(TESS_ENOSYS,
                              "pgemm: a unit over MPI's int counts (lower TESSERA_PGEMM_CHUNK)");
        stot += (size_t)sb, rtot += (size_t)rb;
    }
    soff[size] = stot, roff[size] = rtot;
    return TESS_OK;
}

/* Queue the copies of an agreed unit on the transport's streams:
 *   self     the pieces this rank owns and needs itself: H2D straight into its panel;
 *   pack     the pieces this rank owns and a peer needs: 2D H2D copies from the local array
 *            into a packed send buffer (device), in tess__redist_blocks' order; or, with
 *            TESSERA_PGEMM_PACK_D2D, D2D from the own panel when the peer needs exactly what
 *            this rank took for itself;
 *   send     the packed pieces among the ranks of the node, all peers at once (whatever
 *            happened before: the peers count on it);
 *   unpack   2D D2D copies from the receive buffer into the panel.
 * With two streams the self and pack copies run on the pack stream into one of two send
 * buffers (by unit parity), so unit u+1 is packed while unit u travels: the transfer
 * stream waits for the unit's pack (EV_PACKED), the pack stream for the end of the send
 * that last read its buffer (EV_SENT0/1). */
static int queue_unit(struct tess__xdev *n, const struct tess__xport_unit *u, int st, int bi,
                      char *sbuf, const size_t *soff, char *rbuf, const size_t *roff) {
    const struct tess__comm_grid *g = n->base.g;
    const int me_r = g->at.myrow, me_c = g->at.mycol, size = n->base.size, es = u->slot % NEV;
    const int *prow = n->base.prow, *pcol = n->base.pcol;
    struct tess__xblocks *l = &n->bl;
    const size_t stot = soff[size], rtot = roff[size];
    /* two streams: nothing is packed into this buffer before its last send has ended */
    if (!st && n->two) st = n->hw->stream_wait(n, x_stream(n, 1), EV_SENT0 + bi);
    if (!st && n->timed) st = x_record(n, 1, EV_TS0 + es);
    /* self: straight into the panel */
    if (!st && tess__xdev_blocks(n, me_r, me_c, me_r, me_c, u) < 0)
        st = tess__fail(TESS_ENOMEM, "pgemm: out of host memory");
    if (!st)
        st = tess__xdev_copy_blocks(n, l->b, l->nb, 1, FROM_LOCAL, NULL, NULL,
                                    "H2D into the panel");
    if (!st && n->pack_d2d) st = keep_self(l);
    /* pack what the peers of this node need: from the own panel (D2D, after the self
     * copies on the same stream) when they need exactly what this rank took for itself,
     * from the local arrays (H2D) otherwise */
    for (int j = 0; j < size && !st; j++) {
        if (j == g->rank || n->nrank[j] < 0) continue;
        if (tess__xdev_blocks(n, me_r, me_c, prow[j], pcol[j], u) < 0)
            st = tess__fail(TESS_ENOMEM, "pgemm: out of host memory");
        else if (n->pack_d2d && same_sources(l)) /* where the self copies put them */
            st = tess__xdev_copy_blocks(n, l->self, l->nself, 1, FROM_PANEL, NULL, sbuf + soff[j],
                                        "D2D pack");
        else
            st = tess__xdev_copy_blocks(n, l->b, l->nb, 1, FROM_LOCAL, NULL, sbuf + soff[j],
                                        "H2D pack");
    }
    if (!st && n->timed) st = x_record(n, 1, EV_TP0 + es);
    /* two streams: the transfer stream takes over once the unit is packed (and in the panel) */
    if (!st && n->two) st = x_record(n, 1, EV_PACKED);
    if (!st && n->two) st = n->hw->stream_wait(n, 0, EV_PACKED);
    /* a device error queueing this unit may leave the exchange unrun on this rank (a lost
     * device): the peers are told and stop theirs */
    if (st && n->hw->lose_on_error) st = tess__xlost_lose(n, st, true);
    /* the exchange among the ranks of this node, whatever happened above */
    if (stot + rtot > 0) {
        int xst = n->hw->exchange(n, sbuf, soff, rbuf, roff);
        if (!st) st = xst;
    }
    if (!st && n->timed) st = x_record(n, 0, EV_TX0 + es);
    if (!st && n->timed && !n->remote) st = x_record(n, 0, EV_TR0 + es); /* nothing to wait for */
    if (!st && n->two) st = x_record(n, 0, EV_SENT0 + bi);
    /* unpack into the panel */
    for (int j = 0; j < size && !st; j++) {
        if (j == g->rank || n->nrank[j] < 0) continue;
        if (tess__xdev_blocks(n, prow[j], pcol[j], me_r, me_c, u) < 0)
            st = tess__fail(TESS_ENOMEM, "pgemm: out of host memory");
        else
            st = tess__xdev_copy_blocks(n, l->b, l->nb, 0, FROM_PACKED, rbuf + roff[j], NULL,
                                        "D2D unpack");
    }
    return st;
}

int tess__xdev_post(struct tess__xport *x, const struct tess__xport_unit *u, int prior) {
    struct tess__xdev *n = (struct tess__xdev *)x;
    const struct tess__comm_grid *g = x->g;
    const int size = x->size, slot = u->slot;
    int st = n->hw->setdev(n);
    double tq0 = n->timed ? tess__now() : 0;
    n->posted = true;
    if (slot == 0) { /* a new pass */
        n->err = TESS_OK;
        tess__xlost_pass(n);
    }
    if (!st && n->remote) st = tess__xremote_element(n, n->ops[0].es);
    size_t *soff = calloc((size_t)size * 2 + 2, sizeof *soff),
           *roff = soff ? soff + size + 1 : NULL;
    if (!st && !soff) st = tess__fail(TESS_ENOMEM, "pgemm: out of host memory");
    if (!st) st = node_offsets(n, u, soff, roff);
    const size_t stot = st ? 0 : soff[size], rtot = st ? 0 : roff[size];
    /* ranks of other nodes: MPI, prepared now, posted once the unit is agreed, unpacked in
     * its wait */
    struct tess__xremote_unit *ru = &n->rem.unit[slot % NEV];
    ru->pending = 0;
    if (!st && n->remote) {
        ru->k0 = u->k0, ru->k1 = u->k1, ru->kbase = u->kbase, ru->s0 = u->s0, ru->s1 = u->s1;
        ru->nreq = 0;
        st = tess__xremote_prepare(n, ru);
    }
    /* the send buffer of this unit (two alternate with a pack stream) */
    struct tess__xbufs *b = &n->buf;
    int bi = n->two ? slot % 2 : 0;
    if (!st)
        st = bi ? grow(n, &b->sbuf2, &b->sh2, &b->scap2, stot)
                : grow(n, &b->sbuf, &b->sh, &b->scap, stot);
    if (!st) st = grow(n, &b->rbuf, &b->rh, &b->rcap, rtot);
    /* Every rank goes on with this unit or none does: the last wait's status, an error of
     * the units before (n->err) and this unit's preparation, agreed. From here on a local
     * error does not stop this rank's part of the exchange (its peers count on it); it is
     * kept in n->err and agreed at the next unit or returned by the wait. */
    st = tess__comm_agree(g, st ? st : prior ? prior : n->err);
    if (st) {
        free(soff);
        return st;
    }
    if (x->dead) /* lost in an earlier unit of this pass, whose agreement had not seen it */
        st = tess__fail(TESS_EDEVICE, "pgemm: the transport's device was lost");
    if (!st) st = tess__xlost_injected(n, slot);
    if (n->remote) {
        ru->pending = 1;
        int rst = tess__xremote_post(n, ru);
        if (!st) st = rst;
    }
    x->sent += stot;
    x->recvd += rtot;
    char *sbuf = stot ? (bi ? b->sbuf2 : b->sbuf) : NULL, *rbuf = rtot ? b->rbuf : NULL;
    st = queue_unit(n, u, st, bi, sbuf, soff, rbuf, roff);
    free(soff);
    if (!st && !ru->pending) st = x_record(n, 0, slot % NEV);
    if (st && !n->err) n->err = st;
    if (n->timed) n->t_q0[slot % NEV] = tq0, n->t_q1[slot % NEV] = tess__now();
    return TESS_OK;
}

/* The timeline of unit `unit` (complete), on the device's comm tracks: the pack stream's
 * copies into the panel and the send buffer, the exchange, the wait for the pieces of
 * other nodes (MPI), the unpack (D2D, and H2D of remote pieces), and the caller's queueing
 * of the unit and its wait [w0, w1]. */
static void trace_unit(struct tess__xdev *n, int unit, double w0, double w1) {
    int s = unit % NEV, d = n->base.dev;
    double ts, tp, tx, tr, te;
    if (n->hw->time(n, EV_TS0 + s, &ts) || n->hw->time(n, EV_TP0 + s, &tp) ||
        n->hw->time(n, EV_TX0 + s, &tx) || n->hw->time(n, EV_TR0 + s, &tr) ||
        n->hw->time(n, s, &te))
        return;
    char name[48];
    snprintf(name, sizeof name, "pack %d", unit);
    tess__node_trace_comm(n->rt, d, n->two ? 1 : 0, ts, tp, name);
    snprintf(name, sizeof name, "exchange %d", unit);
    tess__node_trace_comm(n->rt, d, 0, tp, tx, name);
    if (n->remote) {
        snprintf(name, sizeof name, "remote %d", unit);
        tess__node_trace_comm(n->rt, d, 0, tx, tr, name);
    }
    snprintf(name, sizeof name, "unpack %d", unit);
    tess__node_trace_comm(n->rt, d, 0, tr, te, name);
    snprintf(name, sizeof name, "queue unit %d", unit);
    tess__node_trace_comm(n->rt, d, 2, n->t_q0[s], n->t_q1[s], name);
    snprintf(name, sizeof name, "wait unit %d", unit);
    tess__node_trace_comm(n->rt, d, 2, w0, w1, name);
}

int tess__xdev_wait(struct tess__xport *x, int slot) {
    struct tess__xdev *n = (struct tess__xdev *)x;
    (void)n->hw->setdev(n);
    int st = TESS_OK;
    double w0 = n->timed ? tess__now() : 0;
    struct tess__xremote_unit *ru = &n->rem.unit[slot % NEV];
    if (ru->pending) st = tess__xremote_finish(n, ru, slot);
    if (!st) st = x_sync(n, slot % NEV);
    if (!st && n->hw->async_error) st = n->hw->async_error(n);
    /* this rank's device failed while the unit ran: its peers may wait on it */
    if (st && !x->dead && n->hw->lose_on_error) st = tess__xlost_lose(n, st, true);
    if (!st && !n->err && n->timed) trace_unit(n, slot, w0, tess__now());
    return st ? st : n->err;
}
