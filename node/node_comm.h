/* node/node_comm.h: what the distributed layer (comm/) may use of the node runtime and its
 * cache, and nothing else: a call reference and a pin on the runtime, the knobs the
 * runtime was started with, the facts of one runtime device (kind, backend, streams kept
 * for comm/, heap), work memory from a device's heap, the transport's tracks on the
 * timeline, and the launcher's environment. comm/ includes this header and no other of
 * node/ or cache/; its local GEMM jobs come through src/level3/level3.h. The runtime stays
 * opaque here: the bodies are in node/node_comm.c.
 */
#ifndef TESS_NODE_COMM_H
#define TESS_NODE_COMM_H

#include <stdbool.h>
#include <stddef.h>

#include "backend.h"
#include "launcher.h"

struct tess__rt;

/* A call reference on the runtime, started on first use; tess__rt_put ends it (NULL:
 * nothing). A pin keeps a runtime for an object that outlives the call that made it (a
 * grid's transport); the last unpin of a finalized runtime stops it (node.h says more). */
int tess__rt_get(struct tess__rt **rt);
void tess__rt_put(struct tess__rt *rt);
void tess__rt_pin(struct tess__rt *rt);
void tess__rt_unpin(struct tess__rt *rt);

/* The knobs the runtime was started with. */
const struct tess__config *tess__node_config(const struct tess__rt *rt);

/* One runtime device as comm/ sees it. */
struct tess__node_dev {
    tess_dev_kind_t kind;            /* TESS_DEV_CUDA, TESS_DEV_EMULATED, ... */
    const struct tess__dev_ops *ops; /* its backend (emulated devices: comm/ queues on it) */
    void *bd;
    int comm_stream;   /* emulated devices: the first of TESS_COMM_STREAMS backend streams
                          kept for comm/; -1 elsewhere */
    size_t heap_bytes; /* its tile heap */
};

/* The runtime's device count, and device d (0 <= d < that count). */
int tess__node_ndev(const struct tess__rt *rt);
struct tess__node_dev tess__node_dev(const struct tess__rt *rt, int d);

#ifdef TESS_HAVE_CUDA
/* The CUDA ordinal of the runtime's i-th CUDA device (its runtime index when the GPUs come
 * first, as they do), -1 if none. */
int tess__node_cuda_ordinal(const struct tess__rt *rt, int i);
#endif

/* Work memory of `bytes` on device d, from the heap the tiles use (counted against it, never
 * evicted): *ptr its address, *handle for tess__node_work_free. TESS_EAGAIN when no room. */
int tess__node_work_alloc(struct tess__rt *rt, int d, size_t bytes, void **ptr, void **handle);
void tess__node_work_free(struct tess__rt *rt, void *handle);

/* Whether the timeline is on (TESSERA_TRACE), and an interval [t0, t1] (tess__now() clock)
 * on device d's comm track k: 0 the transfer stream, 1 the pack stream, 2 the caller. */
bool tess__node_tracing(const struct tess__rt *rt);
void tess__node_trace_comm(struct tess__rt *rt, int d, int k, double t0, double t1,
                           const char *name);

#endif
