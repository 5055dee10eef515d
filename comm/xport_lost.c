/* comm/xport_lost.c: a device lost during a unit of the device transport. A rank whose
 * device fails after a unit's agreement (a device error while queueing or waiting, or
 * TESSERA_FAULT=xport:U) may be unable to run its part of the node's exchange at all: its
 * sends and receives never run, and its peers would wait forever in theirs. So it tells
 * every peer of its node (TAG_LOST on ctl, with the pass number) and stops its exchange
 * (hw->abort: ncclCommAbort on GPUs). Each peer, while it waits on the transport (polling
 * its events and streams, or the emulated exchange's MPI requests), takes the notice,
 * stops its own part (GPU: aborts its communicator; emulated: cancels its receives from the
 * lost rank, its sends to it are drained there) and returns TESS_EDEVICE. The pass's
 * agreements then carry the error to every rank, and tess__xport_after_failure closes the
 * transport everywhere, to be opened afresh by the next call. Notices of an earlier pass
 * are taken and dropped. Owns ctl (a copy of the grid's communicator), the pass number
 * and the injected fault's unit; base.dead says the exchange is over.
 */
#include "xport_dev.h"

int tess__xlost_open(struct tess__xdev *n) {
    return TESS__MPI(MPI_Comm_dup(n->base.g->comm, &n->lost.ctl));
}

void tess__xlost_close(struct tess__xdev *n) {
    if (n->lost.ctl != MPI_COMM_NULL) MPI_Comm_free(&n->lost.ctl);
}

void tess__xlost_pass(struct tess__xdev *n) {
    struct tess__config cfg;
    n->lost.gen++;
    n->lost.fault_unit = tess__config_load(&cfg) ? 0 : (int)tess__fault_at(cfg.emu_fault, "xport");
}

int tess__xlost_peer(struct tess__xdev *n) {
    int who = -1;
    for (;;) {
        int flag = 0, gen = -1;
        MPI_Status s;
        if (MPI_Iprobe(MPI_ANY_SOURCE, TAG_LOST, n->lost.ctl, &flag, &s) != MPI_SUCCESS || !flag)
            break;
        if (MPI_Recv(&gen, 1, MPI_INT, s.MPI_SOURCE, TAG_LOST, n->lost.ctl, MPI_STATUS_IGNORE) !=
            MPI_SUCCESS)
            break;
        if (gen == n->lost.gen) who = s.MPI_SOURCE;
    }
    return who;
}

int tess__xlost_lose(struct tess__xdev *n, int st, bool tell) {
    if (n->base.dead) return st;
    n->base.dead = true;
    for (int j = 0; tell && n->posted && j < n->base.size; j++)
        if (j != n->base.g->rank && n->nrank[j] >= 0)
            (void)MPI_Send(&n->lost.gen, 1, MPI_INT, j, TAG_LOST, n->lost.ctl); /* one int: eager */
    if (n->hw->abort) n->hw->abort(n);
    return st;
}

int tess__xlost_peer_status(struct tess__xdev *n, int who) {
    return tess__xlost_lose(n,
                            tess__fail(TESS_EDEVICE,
                                       "pgemm: the device of rank %d was lost "
                                       "during the exchange",
                                       who),
                            false);
}

int tess__xlost_injected(struct tess__xdev *n, int slot) {
    if (n->lost.fault_unit <= 0 || slot + 1 != n->lost.fault_unit) return TESS_OK;
    return tess__xlost_lose(n,
                            tess__fail(TESS_EDEVICE,
                                       "pgemm: injected: this rank's device "
                                       "lost at unit %d of the pass (TESSERA_FAULT=xport:%d)",
                                       slot + 1, n->lost.fault_unit),
                            true);
}
