/* node/node_comm.h: what the distributed layer (comm/) may use of the node runtime and its
 * cache, and nothing else: a call reference and a pin on the runtime, the knobs the
 * runtime was started with, the facts of one runtime device (kind, backend, streams kept
 * for comm/, heap), work memory from a device's heap, the transport's tracks on the
 * timeline, and the launcher's environment. comm/ includes this header and no other of
 * node/ or cache/; its local GEMM jobs come through src/level3/level3.h.
 * The bodies below read the runtime's structures (node.h); comm/ calls only the names
 * declared or defined here.
 */
#ifndef TESS_NODE_COMM_H
#define TESS_NODE_COMM_H

#include "launcher.h"
#include "node.h"

/* From node.h, for comm/: tess__rt_get / tess__rt_put (a call reference on the runtime,
 * started on first use), tess__rt_pin / tess__rt_unpin (an object that outlives the call,
 * such as a grid's transport, keeps its runtime). */

/* The knobs the runtime was started with. */
static inline const struct tess__config *tess__node_config(const struct tess__rt *rt) {
    return &rt->cfg;
}

/* One runtime device as comm/ sees it. */
struct tess__node_dev {
    tess_dev_kind_t kind;            /* TESS_DEV_CUDA, TESS_DEV_EMULATED, ... */
    const struct tess__dev_ops *ops; /* its backend (emulated devices: comm/ queues on it) */
    void *bd;
    int comm_stream;   /* emulated devices: the first of TESS_COMM_STREAMS
                                          backend streams kept for comm/; -1 elsewhere */
    size_t heap_bytes; /* its tile heap */
};

/* The runtime's device count, and device d (0 <= d < that count). */
static inline int tess__node_ndev(const struct tess__rt *rt) { return rt->ndev; }
static inline struct tess__node_dev tess__node_dev(const struct tess__rt *rt, int d) {
    const struct tess__dev *x = rt->dev[d];
    return (struct tess__node_dev){.kind = x->desc.kind,
                                   .ops = x->ops,
                                   .bd = x->bd,
                                   .comm_stream = x->comm_stream,
                                   .heap_bytes = x->heap_bytes};
}

#ifdef TESS_HAVE_CUDA
/* The CUDA ordinal of the runtime's i-th CUDA device (its runtime index when the GPUs come
 * first, as they do), -1 if none. */
static inline int tess__node_cuda_ordinal(const struct tess__rt *rt, int i) {
    return tess__cuda_ordinal(&rt->cfg, i);
}
#endif

/* Work memory of `bytes` on device d, from the heap the tiles use (counted against it, never
 * evicted): *ptr its address, *handle for tess__node_work_free. TESS_EAGAIN when no room. */
static inline int tess__node_work_alloc(struct tess__rt *rt, int d, size_t bytes, void **ptr,
                                        void **handle) {
    struct tess__blk *b = NULL;
    int rc = tess__cache_alloc_work(&rt->cache, d, bytes, &b);
    *ptr = rc ? NULL : b->ptr;
    *handle = rc ? NULL : b;
    return rc;
}
static inline void tess__node_work_free(struct tess__rt *rt, void *handle) {
    tess__cache_free_work(&rt->cache, handle);
}

/* Whether the timeline is on (TESSERA_TRACE), and an interval [t0, t1] (tess__now() clock)
 * on device d's comm track k: 0 the transfer stream, 1 the pack stream, 2 the caller. */
static inline bool tess__node_tracing(const struct tess__rt *rt) { return rt->trace.on; }
static inline void tess__node_trace_comm(struct tess__rt *rt, int d, int k, double t0, double t1,
                                         const char *name) {
    tess__trace_add(rt, d, TESS__TRACE_COMM_TID(rt->dev[d], k), t0, t1, "%s", name);
}

#endif
