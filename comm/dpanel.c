/* comm/dpanel.c: device buffers moved among the grid's ranks of one node (comm.h), for a
 * distributed factorization whose panels never leave the devices: the grid's device
 * transport (xport_dev.c) lends its heap buffers, its stream 0 (2D copies, then the
 * node's exchange: NCCL on GPUs, MPI between emulated devices' arenas) and its drain.
 * Invariants: only ranks of one node (no MPI leg through host memory); everything is
 * queued on one stream, so copies and exchanges run in the order they were asked for.
 */
#include <string.h>

#include "xport_dev.h"

int tess__dpanel_open(struct tess__comm_grid *g, struct tess__dpanel *p) {
    memset(p, 0, sizeof *p);
    struct tess__xport *x = NULL;
    int st = tess__xport_get(g, &x); /* agreed */
    if (st) return st;
    /* the device transport, on one node, on every rank */
    int ok = x && strcmp(x->ops->name, "device") == 0 && !((struct tess__xdev *)x)->remote, all = 0;
    if ((st = TESS__MPI(MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, g->comm))))
        return tess__comm_agree(g, st);
    if (!all) return TESS_ENOSYS;
    p->x = x;
    p->dev = x->dev;
    return TESS_OK;
}

int tess__dpanel_alloc(struct tess__dpanel *p, size_t bytes, void **ptr, void **handle) {
    return tess__xport_alloc(p->x, bytes, ptr, handle);
}

void tess__dpanel_free(struct tess__dpanel *p, void *handle) {
    if (handle) tess__xport_free(p->x, handle);
}

int tess__dpanel_copy(struct tess__dpanel *p, int kind, void *dst, size_t dpitch, const void *src,
                      size_t spitch, size_t width, size_t height) {
    struct tess__xdev *n = (struct tess__xdev *)p->x;
    if (!width || !height) return TESS_OK;
    int st = n->hw->setdev(n);
    return st ? st : n->hw->copy(n, 0, kind, dst, dpitch, src, spitch, width, height, "dpanel");
}

int tess__dpanel_exchange(struct tess__dpanel *p, const struct tess__dpiece *send, int ns,
                          const struct tess__dpiece *recv, int nr) {
    struct tess__xdev *n = (struct tess__xdev *)p->x;
    if (!ns && !nr) return TESS_OK;
    int st = n->hw->setdev(n);
    return st ? st : n->hw->pieces(n, send, ns, recv, nr);
}

int tess__dpanel_sync(struct tess__dpanel *p) {
    struct tess__xdev *n = (struct tess__xdev *)p->x;
    int st = n->hw->setdev(n);
    if (!st) st = n->hw->drain(n);
    if (!st && n->hw->async_error) st = n->hw->async_error(n);
    return st;
}
