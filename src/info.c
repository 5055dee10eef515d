/* src/info.c: what tessera-info prints: the build configuration, the devices the runtime
 * opened with their memory and links, the peer (P2P) matrix, the GEMM tile tuning's
 * measurements, and the knob table. */
#include <stdio.h>

#include "node.h"

#ifndef TESS_BUILD_CONFIG
#define TESS_BUILD_CONFIG "unknown"
#endif

const char *tess_build_config(void) { return TESS_BUILD_CONFIG; }

static const char *kind_name(tess_dev_kind_t k) {
    return k == TESS_DEV_CUDA ? "cuda" : k == TESS_DEV_CPU ? "cpu" : "emulated";
}

void tess_print_info(FILE *f) {
    fprintf(f, "tessera %d.%d.%d  build: %s\n", TESS_VERSION_MAJOR, TESS_VERSION_MINOR,
            TESS_VERSION_PATCH, tess_build_config());
    struct tess__rt *rt;
    int rc = tess__rt_get(&rt);
    if (rc) {
        fprintf(f, "runtime: %s (%s)\n", tess_strerror(rc), tess_last_error());
    } else {
        fprintf(f, "\ndevices (%d):\n", rt->ndev);
        fprintf(f, "  %-3s %-9s %-44s %10s %10s %7s %s\n", "id", "kind", "name", "mem MiB",
                "heap MiB", "streams", "link GB/s");
        for (int i = 0; i < rt->ndev; i++) {
            const struct tess__dev *d = rt->dev[i];
            fprintf(f, "  %-3d %-9s %-44s %10zu %10zu %7d %.1f\n", i, kind_name(d->desc.kind),
                    d->desc.name, d->desc.mem_total >> 20, d->heap_bytes >> 20, d->nstreams,
                    d->desc.link_gbs);
        }
        fprintf(f, "\npeer fetches (row copies from column: P = direct P2P, . = via host):\n     ");
        for (int j = 0; j < rt->ndev; j++) fprintf(f, "%3d", j);
        fprintf(f, "\n");
        for (int i = 0; i < rt->ndev; i++) {
            fprintf(f, "  %-3d", i);
            for (int j = 0; j < rt->ndev; j++)
                fprintf(f, "%3s", i == j ? "-" : (rt->cache.dev[i].peer_mask >> j) & 1 ? "P" : ".");
            fprintf(f, "\n");
        }
        const struct tess__tune *tu = &rt->tune;
        int any = tu->have[0] | tu->have[1] | tu->have[2] | tu->have[3];
        fprintf(f, "\nGEMM tile tuning (TESSERA_TUNE): %s\n", any ? tu->key : "none (fixed rule)");
        if (any) {
            fprintf(f, "  prec  link GB/s   GFLOP/s at edge");
            for (int i = 0; i < TESS__TUNE_NCAND; i++)
                fprintf(f, " %8lld", (long long)tu->edges[i]);
            fprintf(f, "\n");
            for (int dt = 0; dt < 4; dt++) {
                if (!tu->have[dt]) continue;
                fprintf(f, "  %-4s  %9.1f   %15s", tess__dtypes[dt].name, tu->link[dt] * 1e-9, "");
                for (int i = 0; i < TESS__TUNE_NCAND; i++)
                    fprintf(f, " %8.0f", tu->rate[dt][i] * 1e-9);
                fprintf(f, "\n");
            }
        }
    }
    tess__rt_put(rt); /* NULL when it did not start */
    fprintf(f, "\nknobs:\n");
    tess_print_knobs(f);
}
