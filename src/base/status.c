/* src/base/status.c: status messages, this thread's last-error detail, logging and the clock.
 * Owns the thread-local message buffer and the verbosity level; nothing else. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "internal.h"

int tess__verbose = 0;
static _Thread_local char last_error[512];

const char *tess_strerror(int status) {
    switch (status) {
#define TESS_X_(name, value, msg) \
    case value: return msg;
        TESS_STATUS_MAP(TESS_X_)
#undef TESS_X_
    default: return "unknown tessera status";
    }
}

const char *tess_last_error(void) { return last_error; }

void tess__clear_error(void) { last_error[0] = '\0'; }

int tess__fail(int status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    tess__log(TESS__LOG_INFO, "%s (%s)", last_error, tess_strerror(status));
    return status;
}

void tess__log(int level, const char *fmt, ...) {
    if (level > tess__verbose) return;
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    fprintf(stderr, "tessera: %s\n", buf);
}

double tess__now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
