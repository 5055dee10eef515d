/* src/backend/host.c: the host backend's two ops tables and its devices' life.
 *   tess__cpu_ops  the CPU worker of BLASX: one device, TESS__CAP_UNIFIED: kernels run the
 *                  CPU BLAS on the operands in place in host memory; no arena.
 *   tess__emu_ops  TESSERA_EMULATE devices "emulated:i", TESS__CAP_P2P: each with its own
 *                  arena (its device memory), copies that really move bytes, operands
 *                  checked to lie where a GPU's would (host_arena.c), and the emulation
 *                  knobs: link GB/s, kernel GFLOP/s (per stream or one shared engine),
 *                  jitter, an injected fault (host_stream.c).
 * Owns: open and close of a device (its stream threads), the fork handlers. Does not own
 * what lives in the arenas (cache/heap.c) nor counters (the cache and workers count).
 * Fork: the process-wide locks are held across fork (the runtime's handlers): a parent's
 * stream thread may hold ev_mu or sleep on ev_cv; the child gets them released and ev_cv
 * without waiters, and never uses the parent's devices, events or arenas.
 * Lock order: host_dev.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host_dev.h"
#include "hostblas.h" /* the CPU BLAS table: the CPU worker's name */

#define EMU_DEFAULT_MEM ((size_t)256 << 20)

struct tess__hostdev_shared tess__hostdev = {
    .ev_mu = PTHREAD_MUTEX_INITIALIZER,
    .ev_cv = PTHREAD_COND_INITIALIZER,
    .arena_mu = PTHREAD_MUTEX_INITIALIZER,
};

void tess__host_fork_prepare(void) {
    pthread_mutex_lock(&tess__hostdev.ev_mu);
    pthread_mutex_lock(&tess__hostdev.arena_mu);
}

void tess__host_fork_parent(void) {
    pthread_mutex_unlock(&tess__hostdev.arena_mu);
    pthread_mutex_unlock(&tess__hostdev.ev_mu);
}

void tess__host_fork_child(void) {
    tess__hostdev.ev_waiters = 0; /* the parent's stream threads: not in the child */
    pthread_cond_init(&tess__hostdev.ev_cv, NULL);
    pthread_mutex_unlock(&tess__hostdev.arena_mu);
    pthread_mutex_unlock(&tess__hostdev.ev_mu);
}

/* ---- open / close ------------------------------------------------------------------ */

static void stop_streams(struct dev *d) {
    for (int i = 0; i < d->nstreams; i++) {
        pthread_mutex_lock(&d->s[i].mu);
        d->s[i].stop = 1;
        pthread_cond_signal(&d->s[i].cv);
        pthread_mutex_unlock(&d->s[i].mu);
    }
    for (int i = 0; i < d->nstreams; i++) {
        pthread_join(d->s[i].thread, NULL);
        pthread_mutex_destroy(&d->s[i].mu);
        pthread_cond_destroy(&d->s[i].cv);
    }
    d->nstreams = 0;
}

static int host_open(int emu, const struct tess__dev_params *p, void **bd,
                     struct tess__dev_desc *desc) {
    const char *tab = emu ? "emulated" : "cpu";
    if (!p || !bd || !desc) return tess__fail(TESS_EINVAL, "%s: open: NULL argument", tab);
    if (p->nstreams < 1 || p->nstreams > HOST_STREAMS)
        return tess__fail(TESS_EINVAL, "%s: open: nstreams = %d must be in 1..%d", tab, p->nstreams,
                          HOST_STREAMS);
    if (p->ordinal < 0 || p->link_gbs < 0 || p->gflops < 0 || p->jitter_us < 0 || p->fault_at < 0)
        return tess__fail(TESS_EINVAL, "%s: open: negative ordinal or emulation knob", tab);
    struct dev *d = calloc(1, sizeof *d);
    if (!d) return tess__fail(TESS_ENOMEM, "%s: open: out of memory", tab);
    d->emu = emu;
    d->p = *p;
    d->mem_default = p->mem_cap ? p->mem_cap : EMU_DEFAULT_MEM;
    atomic_init(&d->failing, 0);
    atomic_init(&d->failed, 0);
    atomic_init(&d->nops, 0);
    memset(desc, 0, sizeof *desc);
    if (emu) {
        snprintf(d->name, sizeof d->name, "emulated:%d", p->ordinal);
        desc->kind = TESS_DEV_EMULATED;
        desc->caps = TESS__CAP_P2P | (p->shared_engine ? TESS__CAP_SHARED : 0);
        desc->mem_total = d->mem_default;
        desc->link_gbs = p->link_gbs;
    } else {
        const struct tess__hostblas *hb = tess__hostblas();
        if (!hb) {
            int rc = tess__hostblas_load(); /* the message naming the library and knob */
            free(d);
            return rc;
        }
        if (hb->get_num_threads)
            snprintf(d->name, sizeof d->name, "cpu (OpenBLAS, %d cores)", hb->get_num_threads());
        else /* the library's file name, without its directory */
            snprintf(d->name, sizeof d->name, "cpu (%.40s)",
                     strrchr(hb->name, '/') ? strrchr(hb->name, '/') + 1 : hb->name);
        desc->kind = TESS_DEV_CPU;
        desc->caps = TESS__CAP_UNIFIED | TESS__CAP_SHARED; /* its kernels share the cores */
        long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
        desc->mem_total = pages > 0 && psz > 0 ? (size_t)pages * (size_t)psz : 0;
    }
    snprintf(desc->name, sizeof desc->name, "%s", d->name);
    desc->pci_bus = -1;

    pthread_mutex_init(&d->engine_mu, NULL);
    for (int i = 0; i < p->nstreams; i++) {
        struct stream *s = &d->s[i];
        s->dev = d;
        s->idx = i;
        s->seed = 0x9e3779b9u ^ (unsigned)(p->ordinal * 131 + i * 7 + 1);
        pthread_mutex_init(&s->mu, NULL);
        pthread_cond_init(&s->cv, NULL);
        int rc = pthread_create(&s->thread, NULL, tess__hostdev_stream_main, s);
        if (rc) {
            pthread_mutex_destroy(&s->mu);
            pthread_cond_destroy(&s->cv);
            stop_streams(d);
            pthread_mutex_destroy(&d->engine_mu);
            free(d);
            return tess__fail(TESS_ENOMEM, "%s: open: cannot start stream thread %d: %s", tab, i,
                              strerror(rc));
        }
        char tname[32]; /* Linux keeps 15 characters */
        snprintf(tname, sizeof tname, "tess-%c%d.s%d", emu ? 'e' : 'c', p->ordinal, i);
        tname[15] = '\0';
        pthread_setname_np(s->thread, tname);
        d->nstreams = i + 1;
    }
    tess__log(TESS__LOG_DEBUG, "%s: opened, %d streams", d->name, d->nstreams);
    *bd = d;
    return TESS_OK;
}

static int cpu_open(const struct tess__dev_params *p, void **bd, struct tess__dev_desc *desc) {
    return host_open(0, p, bd, desc);
}

static int emu_open(const struct tess__dev_params *p, void **bd, struct tess__dev_desc *desc) {
    return host_open(1, p, bd, desc);
}

/* Drain (the stream threads exit once their FIFO is empty; a failed device discards what
 * is left), join, detach the events still alive, drop the arena. */
static void host_close(void *bd) {
    struct dev *d = bd;
    if (!d) return;
    stop_streams(d);
    pthread_mutex_lock(&tess__hostdev.ev_mu);
    for (tess__event *ev = d->events, *next; ev; ev = next) {
        next = ev->next;
        ev->owner = NULL;
        ev->prev = ev->next = NULL;
    }
    d->events = NULL;
    pthread_mutex_unlock(&tess__hostdev.ev_mu);
    pthread_mutex_lock(&tess__hostdev.arena_mu);
    struct arena *a = d->arena;
    d->arena = NULL;
    pthread_mutex_unlock(&tess__hostdev.arena_mu);
    tess__hostdev_arena_unref(a);
    pthread_mutex_destroy(&d->engine_mu);
    tess__log(TESS__LOG_DEBUG, "%s: closed", d->name);
    free(d);
}

/* ---- tables ------------------------------------------------------------------------ */

static int cpu_count(const struct tess__config *cfg) {
    (void)cfg;
    return 1;
}

static int emu_count(const struct tess__config *cfg) {
    return cfg && cfg->emulate > 0 ? cfg->emulate : 0;
}

static int cpu_can_peer(void *bd, void *peer) {
    (void)bd;
    (void)peer;
    return 0;
}

static int emu_can_peer(void *bd, void *peer) {
    struct dev *d = bd, *pd = peer;
    return d && pd && d != pd && d->emu && pd->emu;
}

/* The hooks both tables share. */
#define HOST_HOOKS                                                                            \
    .close = host_close, .kernel = tess__hostdev_kernel, .copy2d = tess__hostdev_copy2d,      \
    .gemm = tess__hostdev_gemm, .event_create = tess__hostdev_event_create,                   \
    .event_destroy = tess__hostdev_event_destroy, .event_record = tess__hostdev_event_record, \
    .event_query = tess__hostdev_event_query, .event_sync = tess__hostdev_event_sync,         \
    .event_time = tess__hostdev_event_time, .stream_wait = tess__hostdev_stream_wait

const struct tess__dev_ops tess__cpu_ops = {
    .name = "cpu",
    .count = cpu_count,
    .open = cpu_open,
    .arena = tess__hostdev_cpu_arena,
    .can_peer = cpu_can_peer,
    HOST_HOOKS,
};

const struct tess__dev_ops tess__emu_ops = {
    .name = "emulated",
    .count = emu_count,
    .open = emu_open,
    .arena = tess__hostdev_emu_arena,
    .can_peer = emu_can_peer,
    HOST_HOOKS,
};
