/* src/knobs.c: the one table of TESSERA_* environment knobs: name, type, default, meaning,
 * and where each lands in struct tess__config. docs/knobs.md mirrors this table and
 * tessera-info prints it with the live values. Owns parsing only; nothing is opened here. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "blas/defaults.h"  /* the drop-in model's defaults */

enum knob_type { K_INT, K_BYTES, K_DOUBLE, K_STR, K_AUTO01 };

struct knob {
    const char *name;
    enum knob_type type;
    const char *def;
    size_t off;
    size_t size;  /* K_STR: buffer size */
    const char *help;
};

#define OFF(f) offsetof(struct tess__config, f)
static const struct knob knobs[] = {
    {"TESSERA_DEVICES", K_STR, "all", OFF(devices), sizeof(((struct tess__config *)0)->devices),
     "GPUs to use: all, none, or CUDA ordinals such as 0,1"},
    {"TESSERA_TILE", K_INT, "0", OFF(tile), 0,
     "tile edge in elements; 0 = automatic from the devices and the problem"},
    {"TESSERA_TUNE", K_INT, "1", OFF(tune), 0,
     "automatic GEMM tile on GPUs: 1 = model from tile-kernel rates measured once per machine (kept in TESSERA_TUNE_FILE), 2 = measure again (emulated devices too), 0 = fixed rule"},
    {"TESSERA_TUNE_FILE", K_STR, "", OFF(tune_file), sizeof(((struct tess__config *)0)->tune_file),
     "file of the measured rates; empty = $XDG_CACHE_HOME/tessera/tune or ~/.cache/tessera/tune"},
    {"TESSERA_STREAMS", K_INT, "8", OFF(streams), 0,
     "streams per GPU, each running one task (1..8)"},
    {"TESSERA_DEVICE_MEM", K_BYTES, "0", OFF(dev_mem), 0,
     "heap bytes per GPU (suffix K, M, G); 0 = all free memory but a margin"},
    {"TESSERA_STAGING", K_BYTES, "2G", OFF(staging), 0,
     "pinned staging bytes per GPU for pageable operands, taken on demand; 0 = copy directly"},
    {"TESSERA_STAGING_THREADS", K_INT, "0", OFF(staging_threads), 0,
     "threads copying pageable operands to and from staging (all GPUs); 0 = min(8, cores/2)"},
    {"TESSERA_CPU_WORKER", K_AUTO01, "auto", OFF(cpu_worker), 0,
     "CPU cores as a device: auto (only when no other device), 0, 1"},
    {"TESSERA_RS", K_INT, "8", OFF(rs_size), 0,
     "reservation-station slots per device (tasks pulled ahead and ranked)"},
    {"TESSERA_BALANCE", K_INT, "1", OFF(balance), 0,
     "end game: with the queue empty a device leaves a station task to a peer that would finish it sooner (measured rates); 0 = every device starts what it holds"},
    {"TESSERA_P2P", K_INT, "1", OFF(p2p), 0,
     "fetch tiles from peer devices (L2 cache hits); 0 = always from the host"},
    {"TESSERA_RECOVER", K_INT, "0", OFF(recover), 0,
     "1 = whatever a failing device held can be redone: C tiles the call reads are written back through a host buffer, peers fetch only finished copies"},
    {"TESSERA_PIN", K_INT, "1", OFF(pin_threads), 0,
     "pin each device worker thread to its own core, inside the process's binding (spread by node-local rank)"},
    {"TESSERA_EMULATE", K_INT, "0", OFF(emulate), 0,
     "emulated host devices to add (separate capped arenas, stream threads)"},
    {"TESSERA_EMULATE_MEM", K_BYTES, "256M", OFF(emu_mem), 0,
     "arena bytes per emulated device (its memory cap)"},
    {"TESSERA_EMULATE_LINK", K_DOUBLE, "0", OFF(emu_link_gbs), 0,
     "emulated link bandwidth in GB/s per copy; 0 = unthrottled"},
    {"TESSERA_EMULATE_GFLOPS", K_STR, "", OFF(emu_gflops),
     sizeof(((struct tess__config *)0)->emu_gflops),
     "emulated kernel rate in GFLOP/s, one value or a list per device; 0 = unthrottled"},
    {"TESSERA_FAULT", K_STR, "", OFF(emu_fault),
     sizeof(((struct tess__config *)0)->emu_fault),
     "inject faults: dev:k[,dev:k] makes device index dev fail at its k-th copy or kernel; pin:N fails the N-th staging slab of each GPU (cudaHostAlloc); xport:U loses this rank's device at unit U of each pass of the GPU transport"},
    {"TESSERA_EMULATE_JITTER", K_INT, "0", OFF(emu_jitter_us), 0,
     "random delay up to this many microseconds before each emulated op"},
    {"TESSERA_EMULATE_STREAMS", K_INT, "2", OFF(emu_streams), 0,
     "streams per emulated device"},
    {"TESSERA_EMULATE_SHARED", K_INT, "0", OFF(emu_shared), 0,
     "1 = an emulated device's streams take turns on one compute engine of TESSERA_EMULATE_GFLOPS (a GPU's model); 0 = each stream computes at that rate"},
    {"TESSERA_VERBOSE", K_INT, "0", OFF(verbose), 0,
     "0 silent, 1 warnings (device failures), 2 info, 3 debug"},
    {"TESSERA_TRACE", K_STR, "", OFF(trace), sizeof(((struct tess__config *)0)->trace),
     "write a Chrome/Perfetto trace (one track per device stream and worker) to this file; %r in the name: the launcher's rank"},
    {"TESSERA_SUMMARY", K_INT, "0", OFF(summary), 0,
     "1: print each device's counters (bytes, hits, steals, busy %) when the runtime stops"},
    {"TESSERA_CPU_BLAS", K_STR, "libopenblas.so.0", OFF(cpu_blas),
     sizeof(((struct tess__config *)0)->cpu_blas),
     "CPU BLAS library (CBLAS level 3) for host kernels and the drop-in's CPU path"},
    {"TESSERA_BLAS_FORCE", K_INT, "0", OFF(blas_force), 0,
     "drop-in: 1 = every level-3 call to the runtime, whatever its shape or devices (testing)"},
    /* the drop-in's crossover model (src/blas/model.h; defaults in src/blas/defaults.h) */
    {"TESSERA_BLAS_CPU_GFLOPS", K_STR, TESS__BLAS_DEF_CPU_GFLOPS, OFF(blas_cpu_gflops),
     sizeof(((struct tess__config *)0)->blas_cpu_gflops),
     "drop-in model: CPU BLAS GFLOP/s, one value or s,d,c,z (tessera-crossover measures it)"},
    {"TESSERA_BLAS_DEV_GFLOPS", K_STR, TESS__BLAS_DEF_DEV_GFLOPS, OFF(blas_dev_gflops),
     sizeof(((struct tess__config *)0)->blas_dev_gflops),
     "drop-in model: all GPUs' GFLOP/s on large operands, one value or s,d,c,z"},
    {"TESSERA_BLAS_DEV_HALF", K_DOUBLE, TESS__BLAS_DEF_DEV_HALF, OFF(blas_dev_half), 0,
     "drop-in model: min(m, n, k) at which the GPUs reach half their rate"},
    {"TESSERA_BLAS_LINK_GBS", K_DOUBLE, TESS__BLAS_DEF_LINK_GBS, OFF(blas_link_gbs), 0,
     "drop-in model: host <-> GPUs GB/s for pageable operands"},
    {"TESSERA_BLAS_OVERHEAD_US", K_DOUBLE, TESS__BLAS_DEF_OVERHEAD_US, OFF(blas_overhead_us), 0,
     "drop-in model: fixed cost of one tessera call, microseconds"},
    {"TESSERA_BLAS_MARGIN", K_DOUBLE, TESS__BLAS_DEF_MARGIN, OFF(blas_margin), 0,
     "drop-in model: a call goes to the GPUs when margin * GPU time < CPU time"},
    {"TESSERA_BLAS_EMULATED", K_INT, "0", OFF(blas_emulated), 0,
     "drop-in: 1 = emulated devices count as GPUs for the model (testing the routing)"},
    {"TESSERA_BLAS_VERBOSE", K_INT, "0", OFF(blas_verbose), 0,
     "drop-in: 1 = one summary line on stderr at exit (calls, flops: runtime vs CPU)"},
    {"TESSERA_PGEMM_MEM", K_BYTES, "0", OFF(pgemm_mem), 0,
     "distributed GEMM: bytes per rank for gathered panels (host memory; with the GPU transport at most half the device heap); 0 = 40% of RAM / ranks per node"},
    {"TESSERA_PGEMM_CHUNK", K_BYTES, "128M", OFF(pgemm_chunk), 0,
     "distributed GEMM: bytes a rank receives per pipelined exchange step (look-ahead unit)"},
    {"TESSERA_PGEMM_NCCL", K_INT, "1", OFF(pgemm_nccl), 0,
     "distributed GEMM: 1 = panels into device memory when every rank has a GPU (NCCL within a node, MPI then H2D across nodes); 2 = also on emulated devices (MPI in place of NCCL: tests); 0 = MPI through host memory"},
    {"TESSERA_PGEMM_NCCL_STREAMS", K_INT, "1", OFF(pgemm_nccl_streams), 0,
     "distributed GEMM, NCCL: 2 = pack (H2D) on a second stream, overlapping the previous unit's transfer"},
    {"TESSERA_PGEMM_PACK_D2D", K_INT, "1", OFF(pgemm_pack_d2d), 0,
     "distributed GEMM, GPU transport: 1 = what a peer needs and this rank holds in its own panel is packed D2D from there, not H2D again; 0 = always H2D"},
    {"TESSERA_PGEMM_NODE_RANKS", K_INT, "0", OFF(pgemm_node_ranks), 0,
     "distributed GEMM, GPU transport: NCCL among every r consecutive ranks, MPI between such groups (testing the multi-node path on one node); 0 = NCCL within each real node"},
    {"TESSERA_PGEMM_VARIANT", K_STR, "auto", OFF(pgemm_variant),
     sizeof(((struct tess__config *)0)->pgemm_variant),
     "distributed GEMM: auto (by shape), c (stationary C), a / b (stationary A / B: k split, partial products summed into C)"},
};
#undef OFF
#define NKNOBS (sizeof knobs / sizeof knobs[0])

static int parse_bytes(const char *s, int64_t *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno || v < 0) return -1;
    while (isspace((unsigned char)*end)) end++;
    switch (toupper((unsigned char)*end)) {
    case 'K': v *= 1024.0; end++; break;
    case 'M': v *= 1024.0 * 1024.0; end++; break;
    case 'G': v *= 1024.0 * 1024.0 * 1024.0; end++; break;
    case 'T': v *= 1024.0 * 1024.0 * 1024.0 * 1024.0; end++; break;
    default: break;
    }
    if (toupper((unsigned char)*end) == 'I') end++;  /* KiB, MiB */
    if (toupper((unsigned char)*end) == 'B') end++;
    if (*end) return -1;
    *out = (int64_t)v;
    return 0;
}

static int set_knob(struct tess__config *cfg, const struct knob *k, const char *val) {
    char *p = (char *)cfg + k->off, *end;
    switch (k->type) {
    case K_INT: {
        errno = 0;
        long long v = strtoll(val, &end, 10);
        if (end == val || *end || errno) return -1;
        if (k->off == offsetof(struct tess__config, tile)) *(int64_t *)p = v;
        else *(int *)p = (int)v;
        return 0;
    }
    case K_BYTES: return parse_bytes(val, (int64_t *)p);
    case K_DOUBLE: {
        errno = 0;
        double v = strtod(val, &end);
        if (end == val || *end || errno) return -1;
        *(double *)p = v;
        return 0;
    }
    case K_STR:
        if (strlen(val) >= k->size) return -1;
        strcpy(p, val);
        return 0;
    case K_AUTO01:
        if (!strcmp(val, "auto")) *(int *)p = -1;
        else if (!strcmp(val, "0") || !strcmp(val, "off")) *(int *)p = 0;
        else if (!strcmp(val, "1") || !strcmp(val, "on")) *(int *)p = 1;
        else return -1;
        return 0;
    }
    return -1;
}

int tess__config_load(struct tess__config *cfg) {
    memset(cfg, 0, sizeof *cfg);
    for (size_t i = 0; i < NKNOBS; i++) set_knob(cfg, &knobs[i], knobs[i].def);
    for (size_t i = 0; i < NKNOBS; i++) {
        const char *v = getenv(knobs[i].name);
        if (!v || !*v) continue;
        if (set_knob(cfg, &knobs[i], v))
            return tess__fail(TESS_EINVAL, "%s=\"%s\" cannot be parsed (%s)", knobs[i].name,
                              v, knobs[i].help);
    }
    if (cfg->streams < 1 || cfg->streams > TESS_MAX_STREAMS)
        return tess__fail(TESS_EINVAL, "TESSERA_STREAMS=%d must be in 1..%d", cfg->streams,
                          TESS_MAX_STREAMS);
    if (cfg->emu_streams < 1 || cfg->emu_streams > TESS_MAX_STREAMS)
        return tess__fail(TESS_EINVAL, "TESSERA_EMULATE_STREAMS=%d must be in 1..%d",
                          cfg->emu_streams, TESS_MAX_STREAMS);
    if (cfg->tile < 0) return tess__fail(TESS_EINVAL, "TESSERA_TILE must be >= 0");
    if (cfg->tune < 0 || cfg->tune > 2) return tess__fail(TESS_EINVAL, "TESSERA_TUNE must be 0, 1 or 2");
    if (cfg->rs_size < 1) return tess__fail(TESS_EINVAL, "TESSERA_RS must be >= 1");
    if (cfg->balance != 0 && cfg->balance != 1)
        return tess__fail(TESS_EINVAL, "TESSERA_BALANCE must be 0 or 1");
    if (cfg->emu_shared != 0 && cfg->emu_shared != 1)
        return tess__fail(TESS_EINVAL, "TESSERA_EMULATE_SHARED must be 0 or 1");
    if (cfg->staging_threads < 0 || cfg->staging_threads > 256)
        return tess__fail(TESS_EINVAL, "TESSERA_STAGING_THREADS must be in 0..256");
    if (cfg->emulate < 0 || cfg->emulate > TESS_MAX_DEVICES - 1)
        return tess__fail(TESS_EINVAL, "TESSERA_EMULATE must be in 0..%d", TESS_MAX_DEVICES - 1);
    return TESS_OK;
}

long long tess__fault_at(const char *spec, const char *key) {
    size_t kl = strlen(key);
    for (const char *p = spec; p && *p;) {
        while (isspace((unsigned char)*p)) p++;
        if (!strncmp(p, key, kl) && p[kl] == ':') return strtoll(p + kl + 1, NULL, 10);
        p = strchr(p, ',');
        if (p) p++;
    }
    return 0;
}

double tess__list_double(const char *list, int i, double def) {
    const char *p = list;
    if (!p || !*p) return def;
    for (int at = 0; at < i; at++) {
        p = strchr(p, ',');
        if (!p) {
            /* a single value applies to every device */
            return strchr(list, ',') ? def : strtod(list, NULL);
        }
        p++;
    }
    return strtod(p, NULL);
}

static void knob_value(const struct tess__config *cfg, const struct knob *k, char *buf,
                       size_t n) {
    const char *p = (const char *)cfg + k->off;
    switch (k->type) {
    case K_INT:
        if (k->off == offsetof(struct tess__config, tile))
            snprintf(buf, n, "%lld", (long long)*(const int64_t *)p);
        else snprintf(buf, n, "%d", *(const int *)p);
        break;
    case K_BYTES: snprintf(buf, n, "%lld", (long long)*(const int64_t *)p); break;
    case K_DOUBLE: snprintf(buf, n, "%g", *(const double *)p); break;
    case K_STR: snprintf(buf, n, "%s", p); break;
    case K_AUTO01: {
        int v = *(const int *)p;
        snprintf(buf, n, "%s", v < 0 ? "auto" : v ? "1" : "0");
        break;
    }
    }
}

void tess_print_knobs(FILE *f) {
    struct tess__config cfg;
    int st = tess__config_load(&cfg);
    fprintf(f, "%-24s %-10s %-8s %s\n", "knob", "value", "default", "meaning");
    for (size_t i = 0; i < NKNOBS; i++) {
        char val[160];
        knob_value(&cfg, &knobs[i], val, sizeof val);
        fprintf(f, "%-24s %-10s %-8s %s\n", knobs[i].name, val[0] ? val : "\"\"",
                knobs[i].def[0] ? knobs[i].def : "\"\"", knobs[i].help);
    }
    if (st) fprintf(f, "error: %s\n", tess_last_error());
}
