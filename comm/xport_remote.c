/* comm/xport_remote.c: the device transport's pieces from and to ranks of other nodes,
 * over MPI through host memory (the Open MPI here is not CUDA-aware). The owner sends
 * straight from its local arrays through a datatype that lists the unit's blocks in
 * tess__redist_blocks' order (tess__redist_types); the receiver lands them packed in that
 * order in the unit's pinned host buffer and, once its requests completed (the unit's
 * wait), copies them H2D into the panel with the block list, then records the unit's
 * event. Owns, per unit in flight, the requests and the pinned receive buffer, and the
 * element type of the call's precision.
 */
#include <stdlib.h>

#include "xport_dev.h"

/* The unit of a remote unit record, for the block lists. */
static struct tess__xport_unit unit_of(const struct tess__xremote_unit *u) {
    return (struct tess__xport_unit){
        .k0 = u->k0, .k1 = u->k1, .kbase = u->kbase, .s0 = u->s0, .s1 = u->s1};
}

int tess__xremote_element(struct tess__xdev *n, size_t es) {
    struct tess__xremote *r = &n->rem;
    if (r->es == es) return TESS_OK;
    if (r->elem != MPI_DATATYPE_NULL) MPI_Type_free(&r->elem);
    r->es = es;
    int st = TESS__MPI(MPI_Type_contiguous((int)es, MPI_BYTE, &r->elem));
    if (!st) st = TESS__MPI(MPI_Type_commit(&r->elem));
    return st;
}

/* Before the unit's agreement (what can fail for want of memory fails here, where every
 * rank can still drop the unit): the request array, where each remote rank's pieces land
 * in the unit's pinned receive buffer, the buffer. */
int tess__xremote_prepare(struct tess__xdev *n, struct tess__xremote_unit *u) {
    const struct tess__comm_grid *g = n->base.g;
    const int me_r = g->at.myrow, me_c = g->at.mycol, size = n->base.size;
    const struct tess__xport_unit xu = unit_of(u);
    if (!u->req) u->req = malloc(sizeof *u->req * (size_t)size * 2);
    if (!u->hoff) u->hoff = malloc(sizeof *u->hoff * ((size_t)size + 1));
    if (!u->req || !u->hoff) return tess__fail(TESS_ENOMEM, "pgemm: out of host memory");
    size_t off = 0;
    for (int j = 0; j < size; j++) {
        u->hoff[j] = off;
        if (n->nrank[j] >= 0) continue;
        int64_t rb = tess__xdev_blocks(n, n->base.prow[j], n->base.pcol[j], me_r, me_c, &xu);
        if (rb < 0) return tess__fail(TESS_ENOMEM, "pgemm: out of host memory");
        off += (size_t)rb;
    }
    u->hoff[size] = off;
    if (off > u->hcap) {
        tess_free_host(u->hbuf);
        u->hcap = 0;
        if (!(u->hbuf = tess_malloc_host(off)))
            return tess__fail(TESS_ENOMEM, "pgemm: %zu bytes of pinned receive buffer", off);
        u->hcap = off;
    }
    if ((off / n->rem.es) > INT32_MAX)
        return tess__fail(TESS_ENOSYS,
                          "pgemm: a unit over MPI's int counts (lower TESSERA_PGEMM_CHUNK)");
    return TESS_OK;
}

/* Post the unit's receives into its pinned buffer, packed in block order, and its sends
 * from the local arrays. */
int tess__xremote_post(struct tess__xdev *n, struct tess__xremote_unit *u) {
    const struct tess__comm_grid *g = n->base.g;
    const int me_r = g->at.myrow, me_c = g->at.mycol, size = n->base.size;
    int st = TESS_OK;
    u->nreq = 0;
    for (int j = 0; j < size && !st; j++) {
        if (n->nrank[j] >= 0) continue;
        size_t rb = u->hoff[j + 1] - u->hoff[j];
        if (rb) {
            st = TESS__MPI(MPI_Irecv(u->hbuf + u->hoff[j], (int)(rb / n->rem.es), n->rem.elem, j,
                                     TAG_REMOTE, g->comm, &u->req[u->nreq]));
            if (!st) u->nreq++, n->base.recvd += rb;
        }
        MPI_Datatype t = MPI_DATATYPE_NULL;
        if (!st)
            st = tess__redist_types(n->ops, 2, me_r, me_c, n->base.prow[j], n->base.pcol[j], u->k0,
                                    u->k1, u->kbase, u->s0, u->s1, true, n->rem.elem, &t);
        if (!st && t != MPI_DATATYPE_NULL) {
            MPI_Count sz = 0;
            MPI_Type_size_x(t, &sz);
            st = TESS__MPI(MPI_Isend(MPI_BOTTOM, 1, t, j, TAG_REMOTE, g->comm, &u->req[u->nreq]));
            if (!st) u->nreq++, n->base.sent += (uint64_t)sz;
            MPI_Type_free(&t);
        }
    }
    return st;
}

/* Wait for the unit's MPI requests, then queue the H2D copies of the received pieces into
 * the panel and record the unit's event after them. */
int tess__xremote_finish(struct tess__xdev *n, struct tess__xremote_unit *u, int slot) {
    int st = TESS_OK;
    for (int i = 0; i < u->nreq; i++) {
        int s2 = tess__mpi_wait(&u->req[i]);
        if (!st) st = s2;
    }
    u->nreq = 0;
    const struct tess__comm_grid *g = n->base.g;
    const int me_r = g->at.myrow, me_c = g->at.mycol;
    const struct tess__xport_unit xu = unit_of(u);
    if (!st && n->timed) st = x_record(n, 0, EV_TR0 + slot % NEV); /* the pieces are here */
    for (int j = 0; j < n->base.size && !st; j++) {
        if (n->nrank[j] >= 0) continue;
        if (tess__xdev_blocks(n, n->base.prow[j], n->base.pcol[j], me_r, me_c, &xu) < 0)
            return tess__fail(TESS_ENOMEM, "pgemm: out of host memory");
        /* the received pieces are packed in block order in host memory: an H2D "unpack" */
        st = tess__xdev_copy_blocks(n, n->bl.b, n->bl.nb, 0, FROM_HOST_PACKED, u->hbuf + u->hoff[j],
                                    NULL, "H2D of remote pieces");
    }
    u->pending = 0;
    if (!st) st = x_record(n, 0, slot % NEV);
    return st;
}

void tess__xremote_drop(struct tess__xdev *n) {
    for (int i = 0; i < NEV; i++) {
        struct tess__xremote_unit *u = &n->rem.unit[i];
        for (int r = 0; r < u->nreq; r++) tess__mpi_wait(&u->req[r]);
        u->nreq = 0;
        u->pending = 0;
    }
}

void tess__xremote_free(struct tess__xdev *n) {
    for (int i = 0; i < NEV; i++) {
        free(n->rem.unit[i].req);
        free(n->rem.unit[i].hoff);
        tess_free_host(n->rem.unit[i].hbuf);
    }
    if (n->rem.elem != MPI_DATATYPE_NULL) MPI_Type_free(&n->rem.elem);
}
