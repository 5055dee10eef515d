/* comm/xport_dev.c: the device transport (xport.h), for grids whose ranks each drive a
 * device: panels land in device memory (runtime device 0), where the node runtime reads
 * them as tiles homed on the device. Among the ranks of one node the packed pieces travel
 * device to device (GPUs: NCCL, NVLink where there is one); with ranks of other nodes over
 * MPI through host memory (xport_remote.c). The node is MPI_COMM_TYPE_SHARED, or with
 * TESSERA_PGEMM_NODE_RANKS=r every r consecutive ranks of the grid (to run the multi-node
 * path on one node). A unit is built in xport_unit.c on the primitives of the device's
 * kind (xdev_hw, fixed when opened): xport_nccl.c on GPUs, xport_emu.c on emulated
 * devices (TESSERA_PGEMM_NCCL=2, the tests: the same units through the same code, the
 * backend's copies, MPI standing in for NCCL). This file owns the opening (who takes
 * part, the node's group), the pin on the runtime it was opened on (kept while the grid
 * keeps the transport; tess_finalize does not wait for it; a call on another runtime
 * reopens), the panels and the closing.
 */
#include <stdlib.h>
#include <string.h>

#include "xport_dev.h"

enum { KIND_NONE = 0, KIND_GPU = 1, KIND_EMU = 2 };

/* What this rank can take part with: KIND_GPU (the knob, a CUDA device as runtime device 0,
 * NCCL in the build), KIND_EMU (TESSERA_PGEMM_NCCL=2, an emulated device 0) or KIND_NONE.
 * *rt: a call reference on the runtime (nested in the caller's), NULL if none. */
static int local_kind(struct tess__rt **rt) {
    struct tess__config cfg;
    if (tess__config_load(&cfg) || !cfg.pgemm_nccl) return KIND_NONE;
    if (tess__rt_get(rt) || tess__node_ndev(*rt) == 0) return KIND_NONE;
    const struct tess__node_dev d = tess__node_dev(*rt, 0);
#ifdef TESS_HAVE_NCCL
    if (d.kind == TESS_DEV_CUDA) return KIND_GPU;
#endif
    if (cfg.pgemm_nccl == 2 && d.kind == TESS_DEV_EMULATED && d.comm_stream >= 0) return KIND_EMU;
    return KIND_NONE;
}

static const struct tess__xdev_hw *kind_hw(int kind) {
#ifdef TESS_HAVE_NCCL
    if (kind == KIND_GPU) return &tess__xdev_gpu;
#endif
    return kind == KIND_EMU ? &tess__xdev_emu : NULL;
}

static bool dev_stale(const struct tess__xport *x) {
    const struct tess__xdev *n = (const struct tess__xdev *)x;
    struct tess__rt *cur = NULL;
    bool stale = tess__rt_get(&cur) || cur != n->rt;
    tess__rt_put(cur);
    return stale;
}

static int dev_alloc(struct tess__xport *x, size_t bytes, void **ptr, void **handle) {
    struct tess__xdev *n = (struct tess__xdev *)x;
    *ptr = *handle = NULL;
    if (!bytes) return TESS_OK;
    if (tess__node_work_alloc(n->rt, x->dev, bytes, ptr, handle))
        return tess__fail(TESS_ENOMEM, "pgemm: %zu bytes of device memory for the panels", bytes);
    return TESS_OK;
}

static void dev_free(struct tess__xport *x, void *handle) {
    struct tess__xdev *n = (struct tess__xdev *)x;
    /* a pass that stopped early may leave remote requests posted: finish them (the peers
     * posted the same units) before their buffers and types go */
    tess__xremote_drop(n);
    if (!handle) return;
    (void)n->hw->setdev(n);
    (void)n->hw->drain(n);
    tess__node_work_free(n->rt, handle);
}

static int dev_begin(struct tess__xport *x, struct tess__redist_op *ops, int nops) {
    (void)nops; /* both operands, always */
    ((struct tess__xdev *)x)->ops = ops;
    return TESS_OK;
}

static void dev_end(struct tess__xport *x) { ((struct tess__xdev *)x)->ops = NULL; }

static void dev_close(struct tess__xport *x) {
    struct tess__xdev *n = (struct tess__xdev *)x;
    if (!n) return;
    if (n->rt && n->hw->opened(n)) (void)n->hw->setdev(n), (void)n->hw->drain(n);
    if (n->rt) tess__xdev_unit_free(n);
    tess__xlost_close(n);
    n->hw->close(n);
    tess__xremote_free(n);
    tess__rt_unpin(n->rt); /* last: the events above were the runtime's device's */
    free(n->nrank);
    tess__xport_base_free(x);
    free(n);
}

static const struct tess__xport_ops dev_ops = {
    .name = "device",
    .stale = dev_stale,
    .alloc = dev_alloc,
    .free = dev_free,
    .begin = dev_begin,
    .post = tess__xdev_post,
    .wait = tess__xdev_wait,
    .end = dev_end,
    .close = dev_close,
};

/* This rank's node group: shared memory, or groups of TESSERA_PGEMM_NODE_RANKS consecutive
 * ranks; every grid rank's rank in my group (n->nrank, -1 elsewhere). */
static int node_group(struct tess__xdev *n, MPI_Comm *node, int *lrank, int *lsize) {
    const struct tess__comm_grid *g = n->base.g;
    const int size = n->base.size, per = tess__node_config(n->rt)->pgemm_node_ranks;
    int st, leader = g->rank;
    if (per > 0)
        st = TESS__MPI(MPI_Comm_split(g->comm, g->rank / per, g->rank, node));
    else
        st = TESS__MPI(MPI_Comm_split_type(g->comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, node));
    if (!st) {
        MPI_Comm_rank(*node, lrank);
        MPI_Comm_size(*node, lsize);
        st = TESS__MPI(MPI_Allreduce(&g->rank, &leader, 1, MPI_INT, MPI_MIN, *node));
    }
    int *who = calloc((size_t)size * 2, sizeof(int)); /* (leader, lrank) of every rank */
    n->nrank = calloc((size_t)size, sizeof(int));
    if (!st && (!who || !n->nrank)) st = tess__fail(TESS_ENOMEM, "pgemm: out of host memory");
    if (!st) {
        int me[2] = {leader, *lrank};
        st = TESS__MPI(MPI_Allgather(me, 2, MPI_INT, who, 2, MPI_INT, g->comm));
    }
    for (int j = 0; j < size && !st; j++) {
        n->nrank[j] = who[2 * j] == leader ? who[2 * j + 1] : -1;
        n->remote |= n->nrank[j] < 0;
    }
    free(who);
    return st;
}

int tess__xport_open_dev(struct tess__comm_grid *g, struct tess__xport **out) {
    *out = NULL;
    /* eligible only if every rank can, in the same kind (the same answer everywhere) */
    struct tess__rt *rt = NULL;
    int kind = local_kind(&rt), mm[2] = {kind, -kind}, all[2] = {0, 0};
    if (TESS__MPI(MPI_Allreduce(mm, all, 2, MPI_INT, MPI_MIN, g->comm)) || all[0] == KIND_NONE ||
        all[0] != -all[1]) {
        tess__rt_put(rt);
        return TESS_ENOSYS;
    }
    struct tess__xdev *n = calloc(1, sizeof *n);
    MPI_Comm node = MPI_COMM_NULL;
    int lrank = 0, lsize = 1;
    int st = n ? tess__xport_base_init(&n->base, g)
               : tess__fail(TESS_ENOMEM, "pgemm: out of host memory");
    if (n) {
        n->base.ops = &dev_ops;
        n->hw = kind_hw(kind);
        n->rt = rt;
        tess__rt_pin(rt); /* unpinned by dev_close */
        n->lost.ctl = MPI_COMM_NULL;
        n->rem.elem = MPI_DATATYPE_NULL;
    }
    if (!st) st = node_group(n, &node, &lrank, &lsize);
    if (!st) {
        const struct tess__config *cfg = tess__node_config(rt);
        n->base.dev = 0;
        n->base.heap = tess__node_dev(rt, 0).heap_bytes;
        n->base.in_flight = n->remote ? 2 : NEV; /* remote: each unit holds a pinned buffer */
        n->two = cfg->pgemm_nccl_streams == 2;
        n->base.unit_buffers = n->two ? 3 : 2; /* send (two with a pack stream), receive */
        n->base.min_unit = n->hw->min_unit;
        n->pack_d2d = cfg->pgemm_pack_d2d != 0;
        n->timed = tess__node_tracing(rt);
    }
    if (!st)
        st = n->hw->open(n, node, lrank, lsize); /* agrees once inside */
    else
        st = tess__comm_agree(g, st);
    if (!st) st = tess__xlost_open(n); /* collective: every rank got here */
    if (node != MPI_COMM_NULL) MPI_Comm_free(&node);
    st = tess__comm_agree(g, st);
    tess__rt_put(rt);
    if (st) {
        if (n) dev_close(&n->base);
        return st;
    }
    *out = &n->base;
    return TESS_OK;
}
