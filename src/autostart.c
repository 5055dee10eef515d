/* src/autostart.c: the runtime's lazy start, keep-or-stop, release at exit and fork rule
 * for the faces in front of another library (src/blas/route.c, scalapack_glue/). Owns the
 * process's start state (one per library: each carries its own runtime).
 *
 * Invariants: tess_init runs at most once, under start_mu, at the first call that wants the
 * runtime; kept (state READY) only with a device the face finds worth it, else stopped
 * again (OFF). The exit handler that releases it is registered right after that start, so
 * it runs before the CUDA runtime's own exit handlers; it is skipped while a call is in
 * flight on another thread, and in a forked child. A child forked after
 * tess__autostart_init never touches the runtime (its worker threads are the parent's):
 * every call there goes to the fallback, and nothing is released at its exit.
 *
 * Lock order: start_mu is a leaf (held around tess_init/tess_finalize only).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "tessera.h"
#include "autostart.h"

enum { NOT_STARTED, READY, OFF, RELEASED };
static const char *const state_name[] = {"not started", "in use", "off", "released"};

static _Atomic int state = NOT_STARTED;
static pthread_mutex_t start_mu = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int forked;    /* a child forked after tess__autostart_init */
static _Atomic int in_flight; /* calls inside the runtime right now */
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

static void child_after_fork(void) {
    atomic_store(&forked, 1);
    atomic_store(&in_flight, 0);
}

static void register_fork(void) { pthread_atfork(NULL, NULL, child_after_fork); }

void tess__autostart_init(void) { pthread_once(&fork_once, register_fork); }

bool tess__autostart_forked(void) { return atomic_load(&forked); }

static void release(void) {
    if (atomic_load(&forked) || atomic_load(&in_flight) > 0) return;
    pthread_mutex_lock(&start_mu);
    if (atomic_load(&state) == READY) {
        atomic_store(&state, RELEASED);
        tess_finalize();
    }
    pthread_mutex_unlock(&start_mu);
}

/* A device that makes the runtime worth a call. */
static int worth(const struct tess__autostart *a) {
    int n = tess_device_count(), found = 0;
    for (int i = 0; i < n; i++) {
        tess_dev_stats_t s;
        if (tess_device_stats(i, &s) == TESS_OK &&
            (s.kind == TESS_DEV_CUDA || (a->emulated && s.kind == TESS_DEV_EMULATED)))
            found++;
    }
    return found || a->force;
}

bool tess__autostart_ready(const struct tess__autostart *a) {
    tess__autostart_init();
    if (atomic_load(&forked)) return false;
    int st = atomic_load(&state);
    if (st != NOT_STARTED) return st == READY;
    pthread_mutex_lock(&start_mu);
    if ((st = atomic_load(&state)) == NOT_STARTED) {
        st = OFF;
        int rc = tess_init();
        if (rc) {
            if (a->verbose)
                fprintf(stderr, "%s: runtime does not start (%s: %s); every call goes to %s\n",
                        a->who, tess_strerror(rc), tess_last_error(), a->fallback);
        } else if (worth(a)) {
            st = READY;
            atexit(release); /* after the runtime (and CUDA) started: runs before them */
        } else {
            tess_finalize(); /* the library underneath runs on the same cores: as good */
            if (a->verbose >= 2)
                fprintf(stderr, "%s: no GPU%s; every call goes to %s\n", a->who,
                        a->emulated ? " and no emulated device" : "", a->fallback);
        }
        atomic_store(&state, st);
    }
    pthread_mutex_unlock(&start_mu);
    return st == READY;
}

void tess__autostart_enter(void) { atomic_fetch_add(&in_flight, 1); }
void tess__autostart_leave(void) { atomic_fetch_sub(&in_flight, 1); }
void tess__autostart_off(void) { atomic_store(&state, OFF); }

const char *tess__autostart_state(void) {
    return atomic_load(&forked) ? "not used in a forked child" : state_name[atomic_load(&state)];
}
