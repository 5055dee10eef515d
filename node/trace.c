/* node/trace.c: the timeline (TESSERA_TRACE=file.json) and the end-of-run summary
 * (TESSERA_SUMMARY=1). Owns the trace buffer and its lock (a leaf). Workers add intervals:
 * one track per device worker (the tasks it ran) and one per stream (host-to-device,
 * peer and device-to-host copies, kernels, each named after its tile), with times taken
 * from the backend's event timestamps; the file is written in the Chrome trace-event
 * format (chrome://tracing, ui.perfetto.dev) when the runtime stops. "%r" in the file
 * name stands for the launcher's rank (mpirun, Slurm; 0 without one), so that the ranks
 * of a distributed job write one file each; "%%" is a "%". The distributed GEMM's GPU
 * transport (comm/xport_nccl.c) adds its units' phases on three more tracks of its device. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "node.h"

struct tess__trace_rec {
    double t0, t1;
    int16_t dev, tid;
    char name[44];
};

void tess__trace_add(struct tess__rt *rt, int dev, int tid, double t0, double t1,
                     const char *fmt, ...) {
    struct tess__trace *tr = &rt->trace;
    if (!tr->on) return;
    if (t1 < t0) t1 = t0;
    pthread_mutex_lock(&tr->mu);
    if (tr->n == tr->cap) {
        size_t cap = tr->cap ? 2 * tr->cap : 4096;
        struct tess__trace_rec *r = realloc(tr->rec, cap * sizeof *r);
        if (!r) {
            tr->dropped++;
            pthread_mutex_unlock(&tr->mu);
            return;
        }
        tr->rec = r;
        tr->cap = cap;
    }
    struct tess__trace_rec *r = &tr->rec[tr->n++];
    r->t0 = t0;
    r->t1 = t1;
    r->dev = (int16_t)dev;
    r->tid = (int16_t)tid;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->name, sizeof r->name, fmt, ap);
    va_end(ap);
    pthread_mutex_unlock(&tr->mu);
}

void tess__trace_start(struct tess__rt *rt) {
    struct tess__trace *tr = &rt->trace;
    pthread_mutex_init(&tr->mu, NULL);
    tr->on = rt->cfg.trace[0] != '\0';
    tr->origin = tess__now();
}

/* TESSERA_TRACE with "%r" replaced by the rank and "%%" by "%". */
void tess__trace_path(const char *spec, char *out, size_t len) {
    size_t o = 0;
    for (const char *p = spec; *p && o + 1 < len; p++) {
        if (p[0] == '%' && p[1] == 'r') {
            int w = snprintf(out + o, len - o, "%ld", tess__launch_rank(0));
            o = w < 0 ? o : TESS__MIN(len - 1, o + (size_t)w);
            p++;
        } else {
            if (p[0] == '%' && p[1] == '%') p++;
            out[o++] = *p;
        }
    }
    out[o] = '\0';
}

static void write_trace(struct tess__rt *rt) {
    struct tess__trace *tr = &rt->trace;
    char path[sizeof rt->cfg.trace + 32];
    tess__trace_path(rt->cfg.trace, path, sizeof path);
    FILE *f = fopen(path, "w");
    if (!f) {
        tess__log(TESS__LOG_WARN, "TESSERA_TRACE: cannot write %s", path);
        return;
    }
    fprintf(f, "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n");
    static const char *const comm_track[3] = {"comm: transfer stream", "comm: pack stream",
                                              "comm: pgemm caller"};
    int comm_used[TESS_MAX_DEVICES] = {0}; /* the GPU transport's tracks a device has */
    pthread_mutex_lock(&tr->mu);
    for (size_t i = 0; i < tr->n; i++) {
        const struct tess__trace_rec *r = &tr->rec[i];
        if (r->dev >= 0 && r->dev < rt->ndev && r->tid > rt->dev[r->dev]->nstreams)
            comm_used[r->dev] = 1;
    }
    pthread_mutex_unlock(&tr->mu);
    for (int d = 0; d < rt->ndev; d++) {
        fprintf(f, "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": %d, \"args\": {\"name\": "
                   "\"%d: %s\"}},\n", d, d, rt->dev[d]->desc.name);
        for (int k = 0; k < 3 && comm_used[d]; k++)
            fprintf(f, "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": %d, \"tid\": %d, "
                       "\"args\": {\"name\": \"%s\"}},\n", d, TESS__TRACE_COMM_TID(rt->dev[d], k),
                    comm_track[k]);
        fprintf(f, "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": %d, \"tid\": 0, "
                   "\"args\": {\"name\": \"worker (tasks)\"}},\n", d);
        for (int s = 0; s < rt->dev[d]->nstreams; s++)
            fprintf(f, "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": %d, \"tid\": %d, "
                       "\"args\": {\"name\": \"stream %d\"}},\n", d, s + 1, s);
    }
    pthread_mutex_lock(&tr->mu);
    for (size_t i = 0; i < tr->n; i++) {
        const struct tess__trace_rec *r = &tr->rec[i];
        fprintf(f, "{\"ph\": \"X\", \"name\": \"%s\", \"pid\": %d, \"tid\": %d, \"ts\": %.3f, "
                   "\"dur\": %.3f}%s\n", r->name, r->dev, r->tid, (r->t0 - tr->origin) * 1e6,
                (r->t1 - r->t0) * 1e6, i + 1 < tr->n ? "," : "");
    }
    pthread_mutex_unlock(&tr->mu);
    fprintf(f, "]}\n");
    fclose(f);
    if (tr->dropped)
        tess__log(TESS__LOG_WARN, "TESSERA_TRACE: %zu intervals dropped (out of memory)", tr->dropped);
}

static void print_summary(struct tess__rt *rt) {
    double wall = tess__now() - rt->trace.origin;
    fprintf(stderr, "tessera summary (%.3f s since start):\n", wall);
    fprintf(stderr, "  %-3s %-36s %7s %6s %9s %9s %9s %8s %8s %8s %7s %6s\n", "id", "device",
            "tasks", "stolen", "H2D GB", "D2H GB", "P2P GB", "L1 hit", "L2 hit", "miss",
            "evict", "busy%");
    for (int i = 0; i < rt->ndev; i++) {
        tess_dev_stats_t s;
        tess__dev_stats(rt->dev[i], &s);
        fprintf(stderr, "  %-3d %-36.36s %7llu %6llu %9.3f %9.3f %9.3f %8llu %8llu %8llu %7llu %6.1f%s\n",
                i, s.name, (unsigned long long)s.tasks, (unsigned long long)s.stolen,
                s.bytes_h2d * 1e-9, s.bytes_d2h * 1e-9, s.bytes_p2p * 1e-9,
                (unsigned long long)s.l1_hits, (unsigned long long)s.l2_hits,
                (unsigned long long)s.misses, (unsigned long long)s.evictions,
                wall > 0 ? 100.0 * s.busy_s / wall : 0.0, s.failed ? " FAILED" : "");
    }
}

void tess__trace_stop(struct tess__rt *rt) {
    struct tess__trace *tr = &rt->trace;
    if (tr->origin == 0) return; /* never started */
    if (rt->cfg.summary) print_summary(rt);
    if (tr->on) write_trace(rt);
    free(tr->rec);
    tr->rec = NULL;
    tr->n = tr->cap = 0;
    pthread_mutex_destroy(&tr->mu);
}
