/* comm/xport_emu.c: the device transport's primitives on an emulated device (CI, no GPU;
 * TESSERA_PGEMM_NCCL=2). Copies and events go through the device's backend (host.c:
 * asynchronous stream threads, device pointers checked against the arena) on the
 * TESS_COMM_STREAMS streams the runtime keeps for comm/ (they are the backend's, closed
 * with the device); MPI stands in for NCCL: the calling thread waits for the unit's pack,
 * exchanges the packed pieces with MPI_Isend/MPI_Irecv between the arenas (host memory
 * there), and the unpack is queued after. Owns its events.
 */
#include <stdlib.h>
#include <unistd.h>

#include "xport_dev.h"

struct emu {
    const struct tess__dev_ops *ops; /* the device's backend */
    void *bd;
    int es0; /* its first comm stream */
    tess__event *eev[NXEV];
};

static struct emu *E(const struct tess__xdev *n) { return n->hwst; }

static int emu_open(struct tess__xdev *n, MPI_Comm node, int lrank, int lsize) {
    (void)node, (void)lrank, (void)lsize;
    struct emu *e = calloc(1, sizeof *e);
    int st = e ? TESS_OK : tess__fail(TESS_ENOMEM, "pgemm: out of host memory");
    if (e) {
        const struct tess__node_dev d = tess__node_dev(n->rt, n->base.dev);
        e->ops = d.ops;
        e->bd = d.bd;
        e->es0 = d.comm_stream;
        n->hwst = e;
    }
    for (int i = 0; i < NXEV && !st; i++) st = e->ops->event_create(e->bd, &e->eev[i]);
    return tess__comm_agree(n->base.g, st); /* one agreement, as on GPUs: the caller counts on it */
}

static bool emu_opened(const struct tess__xdev *n) { return E(n) && E(n)->eev[NXEV - 1]; }

static void emu_close(struct tess__xdev *n) {
    struct emu *e = E(n);
    if (!e) return;
    for (int i = 0; i < NXEV; i++)
        if (e->eev[i]) e->ops->event_destroy(e->bd, e->eev[i]);
    free(e);
    n->hwst = NULL;
}

static int emu_setdev(struct tess__xdev *n) {
    (void)n;
    return TESS_OK;
}

static int emu_copy(struct tess__xdev *n, int s, int kind, void *dst, size_t dpitch,
                    const void *src, size_t spitch, size_t width, size_t height, const char *what) {
    (void)what;
    struct emu *e = E(n);
    return e->ops->copy2d(e->bd, e->es0 + s, (enum tess__copy_kind)kind, dst, dpitch, src, spitch,
                          width, height, NULL);
}

static int emu_record(struct tess__xdev *n, int s, int ev) {
    return E(n)->ops->event_record(E(n)->bd, E(n)->es0 + s, E(n)->eev[ev]);
}

static int emu_stream_wait(struct tess__xdev *n, int s, int ev) {
    return E(n)->ops->stream_wait(E(n)->bd, E(n)->es0 + s, E(n)->eev[ev]);
}

static int emu_sync(struct tess__xdev *n, int ev) {
    return E(n)->ops->event_sync(E(n)->bd, E(n)->eev[ev]);
}

static int emu_drain(struct tess__xdev *n) {
    int st = TESS_OK;
    for (int w = 0; w <= (int)n->two && !st; w++) {
        st = emu_record(n, w, EV_DRAIN0 + w);
        if (!st) st = emu_sync(n, EV_DRAIN0 + w);
    }
    return st;
}

static int emu_time(struct tess__xdev *n, int ev, double *t) {
    return E(n)->ops->event_time(E(n)->bd, E(n)->eev[ev], t);
}

/* The packed pieces must be in sbuf before MPI reads them; every rank of the node posts all
 * its receives and sends, then waits for them. A rank whose device is lost (base.dead)
 * posts its receives only, as a drain for its peers' sends, and sends nothing, as NCCL on a
 * lost device would not; its peers cancel their receives from it once they have its
 * notice. */
static int emu_exchange(struct tess__xdev *n, char *sbuf, const size_t *soff, char *rbuf,
                        const size_t *roff) {
    const struct tess__comm_grid *g = n->base.g;
    const int size = n->base.size;
    int st = emu_record(n, 0, EV_DRAIN0);
    if (!st) st = emu_sync(n, EV_DRAIN0);
    MPI_Request *req = malloc(sizeof *req * (size_t)size * 2);
    int *src = malloc(sizeof *src * (size_t)size * 2); /* a receive's source, -1 for a send */
    if (!req || !src) {
        free(req), free(src);
        return st ? st : tess__fail(TESS_ENOMEM, "pgemm: out of host memory");
    }
    int nreq = 0;
    for (int j = 0; j < size; j++) { /* counts fit an int: checked before the agreement */
        if (j == g->rank || n->nrank[j] < 0) continue;
        size_t sb = soff[j + 1] - soff[j], rb = roff[j + 1] - roff[j];
        /* a rank whose pack failed still sends (unused bytes) so that no peer hangs */
        int s2 = TESS_OK;
        if (rb)
            s2 = TESS__MPI(
                MPI_Irecv(rbuf + roff[j], (int)rb, MPI_BYTE, j, TAG_NODE, g->comm, &req[nreq]));
        if (!s2 && rb) src[nreq++] = j;
        if (!s2 && sb && !n->base.dead)
            s2 = TESS__MPI(
                MPI_Isend(sbuf + soff[j], (int)sb, MPI_BYTE, j, TAG_NODE, g->comm, &req[nreq]));
        if (!s2 && sb && !n->base.dead) src[nreq++] = -1;
        if (!st) st = s2;
    }
    int lost = -1;
    for (unsigned spin = 0;; spin++) {
        int done = 0;
        if (MPI_Testall(nreq, req, &done, MPI_STATUSES_IGNORE) != MPI_SUCCESS) {
            if (!st) st = tess__fail(TESS_ECOMM, "pgemm: MPI_Testall failed in the node exchange");
            break;
        }
        if (done) break;
        int who = n->base.dead ? -1 : tess__xlost_peer(n);
        if (who >= 0) { /* its pieces never come: cancel those receives, wait for the rest */
            lost = who;
            for (int i = 0; i < nreq; i++)
                if (src[i] == who && req[i] != MPI_REQUEST_NULL) MPI_Cancel(&req[i]);
        }
        if (spin > 64) usleep(20);
    }
    free(req), free(src);
    if (lost >= 0) st = tess__xlost_peer_status(n, lost);
    return st;
}

/* The pieces once stream 0 is done (the panels are in place): MPI between the arenas. */
static int emu_pieces(struct tess__xdev *n, const struct tess__dpiece *send, int ns,
                      const struct tess__dpiece *recv, int nr) {
    const struct tess__comm_grid *g = n->base.g;
    int st = emu_record(n, 0, EV_DRAIN0);
    if (!st) st = emu_sync(n, EV_DRAIN0);
    MPI_Request *req = malloc(sizeof *req * (size_t)(ns + nr + 1));
    if (!req) return st ? st : tess__fail(TESS_ENOMEM, "dpanel: out of host memory");
    int nreq = 0;
    for (int i = 0; i < nr; i++) { /* a rank whose queueing failed still takes part */
        if (!recv[i].bytes) continue;
        if (recv[i].bytes > INT32_MAX) {
            if (!st) st = tess__fail(TESS_EINVAL, "dpanel: a piece past MPI's int count");
            continue;
        }
        int s2 = TESS__MPI(MPI_Irecv(recv[i].ptr, (int)recv[i].bytes, MPI_BYTE, recv[i].rank,
                                     TAG_NODE, g->comm, &req[nreq]));
        if (!s2) nreq++;
        if (!st) st = s2;
    }
    for (int i = 0; i < ns; i++) {
        if (!send[i].bytes || send[i].bytes > INT32_MAX) continue;
        int s2 = TESS__MPI(MPI_Isend(send[i].ptr, (int)send[i].bytes, MPI_BYTE, send[i].rank,
                                     TAG_NODE, g->comm, &req[nreq]));
        if (!s2) nreq++;
        if (!st) st = s2;
    }
    if (MPI_Waitall(nreq, req, MPI_STATUSES_IGNORE) != MPI_SUCCESS && !st)
        st = tess__fail(TESS_ECOMM, "dpanel: MPI_Waitall failed");
    free(req);
    return st;
}

/* Units follow TESSERA_PGEMM_CHUNK down to 64 KiB, so that the tests run several. */
const struct tess__xdev_hw tess__xdev_emu = {
    .name = "emulated",
    .lose_on_error = false,
    .int_counts = true,
    .min_unit = (int64_t)64 << 10,
    .open = emu_open,
    .opened = emu_opened,
    .close = emu_close,
    .setdev = emu_setdev,
    .copy = emu_copy,
    .record = emu_record,
    .stream_wait = emu_stream_wait,
    .sync = emu_sync,
    .drain = emu_drain,
    .exchange = emu_exchange,
    .pieces = emu_pieces,
    .time = emu_time,
};
