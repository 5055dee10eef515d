/* node/node_comm.c: the bodies of node_comm.h, the distributed layer's view of the node
 * runtime: each reads the runtime's structures (node.h) so that comm/ never does.
 */
#include "node_comm.h"

#include "node.h"

const struct tess__config *tess__node_config(const struct tess__rt *rt) { return &rt->cfg; }

int tess__node_ndev(const struct tess__rt *rt) { return rt->ndev; }

struct tess__node_dev tess__node_dev(const struct tess__rt *rt, int d) {
    const struct tess__dev *x = rt->dev[d];
    return (struct tess__node_dev){.kind = x->desc.kind,
                                   .ops = x->ops,
                                   .bd = x->bd,
                                   .comm_stream = x->comm_stream,
                                   .heap_bytes = x->heap_bytes};
}

#ifdef TESS_HAVE_CUDA
int tess__node_cuda_ordinal(const struct tess__rt *rt, int i) {
    return tess__cuda_ordinal(&rt->cfg, i);
}
#endif

int tess__node_work_alloc(struct tess__rt *rt, int d, size_t bytes, void **ptr, void **handle) {
    struct tess__blk *b = NULL;
    int rc = tess__cache_alloc_work(&rt->cache, d, bytes, &b);
    *ptr = rc ? NULL : b->ptr;
    *handle = rc ? NULL : b;
    return rc;
}

void tess__node_work_free(struct tess__rt *rt, void *handle) {
    tess__cache_free_work(&rt->cache, handle);
}

bool tess__node_tracing(const struct tess__rt *rt) { return rt->trace.on; }

void tess__node_trace_comm(struct tess__rt *rt, int d, int k, double t0, double t1,
                           const char *name) {
    tess__trace_add(rt, d, TESS__TRACE_COMM_TID(rt->dev[d], k), t0, t1, "%s", name);
}
