/* src/api.c: the public statistics calls (device count, per-device counters, reset).
 * Owns nothing; reads the counters the workers and the cache keep, each call under a call
 * reference on the runtime (tess__rt_get ... tess__rt_put). */
#include <string.h>

#include "node.h"

void tess__dev_stats(const struct tess__dev *d, tess_dev_stats_t *out) {
    const struct tess__counters *c = &d->ctr;
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "%s", d->desc.name);
    out->kind = d->desc.kind;
    out->failed = atomic_load(&d->failed);
    out->tasks = atomic_load(&c->tasks);
    out->stolen = atomic_load(&c->stolen);
    out->steps = atomic_load(&c->steps);
    out->flops = 1000.0 * (double)atomic_load(&c->flops_x1k);
    out->bytes_h2d = atomic_load(&c->bytes_h2d);
    out->bytes_d2h = atomic_load(&c->bytes_d2h);
    out->bytes_p2p = atomic_load(&c->bytes_p2p);
    out->l1_hits = atomic_load(&c->l1_hits);
    out->l2_hits = atomic_load(&c->l2_hits);
    out->misses = atomic_load(&c->misses);
    out->evictions = atomic_load(&c->evictions);
    out->writebacks = atomic_load(&c->writebacks);
    out->busy_s = 1e-9 * (double)atomic_load(&c->busy_ns);
    out->mem_capacity = d->heap_bytes;
    out->mem_peak = atomic_load(&c->mem_peak);
}

int tess_device_count(void) {
    struct tess__rt *rt;
    if (tess__rt_get(&rt)) return 0;
    int n = rt->ndev;
    tess__rt_put(rt);
    return n;
}

int tess_device_stats(int dev, tess_dev_stats_t *out) {
    struct tess__rt *rt;
    tess__clear_error();
    int rc = tess__rt_get(&rt);
    if (rc) return rc;
    if (!out)
        rc = tess__fail(TESS_EINVAL, "tess_device_stats: argument 2 (out) must not be NULL");
    else if (dev < 0 || dev >= rt->ndev)
        rc = tess__fail(TESS_EINVAL, "tess_device_stats: argument 1 (dev = %d) must be in 0..%d",
                        dev, rt->ndev - 1);
    else
        tess__dev_stats(rt->dev[dev], out);
    tess__rt_put(rt);
    return rc;
}

void tess_reset_stats(void) {
    struct tess__rt *rt;
    if (tess__rt_get(&rt)) return;
    for (int i = 0; i < rt->ndev; i++) {
        struct tess__counters *c = &rt->dev[i]->ctr;
        atomic_store(&c->tasks, 0);
        atomic_store(&c->stolen, 0);
        atomic_store(&c->steps, 0);
        atomic_store(&c->flops_x1k, 0);
        atomic_store(&c->bytes_h2d, 0);
        atomic_store(&c->bytes_d2h, 0);
        atomic_store(&c->bytes_p2p, 0);
        atomic_store(&c->l1_hits, 0);
        atomic_store(&c->l2_hits, 0);
        atomic_store(&c->misses, 0);
        atomic_store(&c->evictions, 0);
        atomic_store(&c->writebacks, 0);
        atomic_store(&c->busy_ns, 0);
        atomic_store(&c->mem_peak, 0);
    }
    tess__rt_put(rt);
}
