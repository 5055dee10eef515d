/* node/trace.c: the timeline (TESSERA_TRACE=file.json) and the end-of-run summary
 * (TESSERA_SUMMARY=1). Owns the trace buffer and its lock (a leaf). Workers add intervals:
 * one track per device worker (the tasks it ran) and one per stream (host-to-device,
 * peer and device-to-host copies, kernels, each named after its tile), with times taken
 * from the backend's event timestamps; the file is written in the Chrome trace-event
 * format (chrome://tracing, ui.perfetto.dev) when the runtime stops. "%r" in the file
 * name stands for the launcher's rank (mpirun, Slurm; 0 without one), so that the ranks
 * of a distributed job write one file each; "%%" is a "%". The distributed GEMM's GPU
 * transport (comm/) adds its units' phases on three more tracks of its device. A slot's
 * stream intervals (struct tess__slot_trace) are written here, at the worker's calls. */
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

void tess__trace_add(struct tess__rt *rt, int dev, int tid, double t0, double t1, const char *fmt,
                     ...) {
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

/* ---- a slot's intervals (struct tess__slot_trace), from the backend's event times ------ */

int tess__trace_slot_open(struct tess__dev *d, struct tess__slot *sl) {
    return d->ops->event_create(d->bd, &sl->tr.cl);
}

void tess__trace_slot_close(struct tess__dev *d, struct tess__slot *sl) {
    if (sl->tr.cl) d->ops->event_destroy(d->bd, sl->tr.cl);
    sl->tr.cl = NULL;
}

void tess__trace_slot_start(struct tess__slot *sl) {
    sl->tr.t_act = tess__now();
    sl->tr.cl_rec = 0;
}

void tess__trace_slot_load(struct tess__dev *d, struct tess__slot *sl) {
    if (d->rt->trace.on && !d->ops->event_record(d->bd, sl->stream, sl->tr.cl)) sl->tr.cl_rec = 1;
}

void tess__trace_slot_issue(struct tess__slot *sl, int s, int kind, int fill_a, int fill_b) {
    sl->tr.kind[s % TESS__DEPTH] = (int8_t)kind;
    sl->tr.fill[2 * (s % TESS__DEPTH)] = (int8_t)fill_a;
    sl->tr.fill[2 * (s % TESS__DEPTH) + 1] = (int8_t)fill_b;
}

static double ev_time(struct tess__dev *d, tess__event *ev) {
    double t;
    return d->ops->event_time && d->ops->event_time(d->bd, ev, &t) == TESS_OK ? t : tess__now();
}

/* One interval ending when ev was reached, starting when the stream finished its previous
 * traced operation (or when this one was issued, if the stream was idle in between). */
static void slot_op(struct tess__dev *d, struct tess__slot *sl, tess__event *ev, double issued,
                    const char *what, const char *kernel) {
    double t1 = ev_time(d, ev), t0 = TESS__MAX(sl->tr.last_t, issued);
    tess__trace_add(d->rt, d->id, sl->stream + 1, t0, t1, "%s C(%d,%d)%s%s", what, sl->t->i,
                    sl->t->j, kernel ? " " : "", kernel ? kernel : "");
    sl->tr.last_t = TESS__MAX(sl->tr.last_t, t1);
}

void tess__trace_slot_step(struct tess__dev *d, struct tess__slot *sl, int s) {
    static const char *fill_name[2][4] = {{"", "H2D a", "P2P a", "D2D a"},
                                          {"", "H2D b", "P2P b", "D2D b"}};
    if (!d->rt->trace.on) return;
    int r = s % TESS__DEPTH;
    double issued = sl->ring.t_issue[r];
    if (s == 0 && sl->tr.cl_rec) {
        slot_op(d, sl, sl->tr.cl, issued, "H2D load", NULL);
        sl->tr.cl_rec = 0;
    }
    for (int h = 0; h < 2; h++) {
        struct tess__blk *b = sl->ring.held[2 * r + h];
        int f = sl->tr.fill[2 * r + h];
        if (b && f) slot_op(d, sl, b->ready, issued, fill_name[h][f], NULL);
    }
    static const char *kernel_name[] = {"gemm",  "symm", "hemm", "syrk",  "herk",  "syr2k",
                                        "her2k", "trmm", "trsm", "potrf", "getrf", "laswp"};
    int k = sl->tr.kind[r];
    const char *kn = k >= 0 && k < (int)(sizeof kernel_name / sizeof *kernel_name) ? kernel_name[k]
                                                                                   : "kernel";
    slot_op(d, sl, sl->ring.done[r], issued, sl->t->job->ops->name, kn);
}

void tess__trace_slot_wb(struct tess__dev *d, struct tess__slot *sl) {
    if (d->rt->trace.on) slot_op(d, sl, sl->out.wb, sl->tr.last_t, "D2H", NULL);
}

void tess__trace_slot_end(struct tess__dev *d, struct tess__slot *sl) {
    const struct tess__task *t = sl->t;
    tess__trace_add(d->rt, d->id, 0, sl->tr.t_act, tess__now(), "task %s C(%d,%d)%s",
                    t->job->ops->name, t->i, t->j, sl->out.cancelled ? " cancelled" : "");
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
        fprintf(f,
                "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": %d, \"args\": {\"name\": "
                "\"%d: %s\"}},\n",
                d, d, rt->dev[d]->desc.name);
        for (int k = 0; k < 3 && comm_used[d]; k++)
            fprintf(f,
                    "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": %d, \"tid\": %d, "
                    "\"args\": {\"name\": \"%s\"}},\n",
                    d, TESS__TRACE_COMM_TID(rt->dev[d], k), comm_track[k]);
        fprintf(f,
                "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": %d, \"tid\": 0, "
                "\"args\": {\"name\": \"worker (tasks)\"}},\n",
                d);
        for (int s = 0; s < rt->dev[d]->nstreams; s++)
            fprintf(f,
                    "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": %d, \"tid\": %d, "
                    "\"args\": {\"name\": \"stream %d\"}},\n",
                    d, s + 1, s);
    }
    pthread_mutex_lock(&tr->mu);
    for (size_t i = 0; i < tr->n; i++) {
        const struct tess__trace_rec *r = &tr->rec[i];
        fprintf(f,
                "{\"ph\": \"X\", \"name\": \"%s\", \"pid\": %d, \"tid\": %d, \"ts\": %.3f, "
                "\"dur\": %.3f}%s\n",
                r->name, r->dev, r->tid, (r->t0 - tr->origin) * 1e6, (r->t1 - r->t0) * 1e6,
                i + 1 < tr->n ? "," : "");
    }
    pthread_mutex_unlock(&tr->mu);
    fprintf(f, "]}\n");
    fclose(f);
    if (tr->dropped)
        tess__log(TESS__LOG_WARN, "TESSERA_TRACE: %zu intervals dropped (out of memory)",
                  tr->dropped);
}

static void print_summary(struct tess__rt *rt) {
    double wall = tess__now() - rt->trace.origin;
    fprintf(stderr, "tessera summary (%.3f s since start):\n", wall);
    fprintf(stderr, "  %-3s %-36s %7s %6s %9s %9s %9s %8s %8s %8s %7s %6s\n", "id", "device",
            "tasks", "stolen", "H2D GB", "D2H GB", "P2P GB", "L1 hit", "L2 hit", "miss", "evict",
            "busy%");
    for (int i = 0; i < rt->ndev; i++) {
        tess_dev_stats_t s;
        tess__dev_stats(rt->dev[i], &s);
        fprintf(stderr,
                "  %-3d %-36.36s %7llu %6llu %9.3f %9.3f %9.3f %8llu %8llu %8llu %7llu %6.1f%s\n",
                i, s.name, (unsigned long long)s.tasks, (unsigned long long)s.stolen,
                s.bytes_h2d * 1e-9, s.bytes_d2h * 1e-9, s.bytes_p2p * 1e-9,
                (unsigned long long)s.l1_hits, (unsigned long long)s.l2_hits,
                (unsigned long long)s.misses, (unsigned long long)s.evictions,
                wall > 0 ? 100.0 * s.busy_s / wall : 0.0, s.failed ? " FAILED" : "");
    }
}

void tess__trace_detached(struct tess__rt *rt) {
    struct tess__trace *tr = &rt->trace;
    if (tr->origin == 0 || !tr->on) return;
    write_trace(rt); /* takes the buffer's lock */
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
