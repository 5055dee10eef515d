/* src/autostart.h: the runtime's lazy start for a library face that sits in front of
 * another library (the drop-in BLAS in front of a CPU BLAS, the ScaLAPACK glue in front of
 * a ScaLAPACK): started by the first call that wants it, kept only when it has a device
 * worth the detour, released at exit, never touched by a process forked after the first
 * call. Each library carries its own runtime and so its own copy of this state.
 */
#ifndef TESS_AUTOSTART_H
#define TESS_AUTOSTART_H

#include <stdbool.h>

/* What the face wants of the runtime. */
struct tess__autostart {
    const char *who;      /* prefix of its messages: "tessera-blas", "tessera-scalapack: rank 0" */
    const char *fallback; /* where its calls go instead: "the CPU BLAS" */
    bool emulated; /* emulated devices are worth it (GPUs always are, the CPU worker never) */
    bool force;    /* any device is worth it */
    int verbose;   /* 1: say why the runtime is not used when it fails to start; 2: and
                              when it has no device worth it */
};

/* At the face's first call (idempotent): from now on a forked child is marked forked. */
void tess__autostart_init(void);
/* Start the runtime once (tess_init) at the first call of the process; true while it is up
 * and worth sending calls to. False in a child forked after the first call. */
bool tess__autostart_ready(const struct tess__autostart *a);
/* A call into the runtime begins / ends: the release at exit is skipped while any is in
 * flight on another thread (exit does not wait for them). */
void tess__autostart_enter(void);
void tess__autostart_leave(void);
/* The runtime reported no device left: every later call goes to the fallback. */
void tess__autostart_off(void);
/* "not started", "in use", "off", "released"; "not used in a forked child". */
const char *tess__autostart_state(void);
/* This process was forked after tess__autostart_init. */
bool tess__autostart_forked(void);

#endif /* TESS_AUTOSTART_H */
