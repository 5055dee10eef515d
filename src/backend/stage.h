/* src/backend/stage.h: staging of 2D copies whose host side is pageable (plain malloc), for
 * the CUDA backend (cuda.c). A copy from or to pageable memory through cudaMemcpy2DAsync
 * runs at the driver's pageable rate and blocks the calling thread; here it goes through
 * pinned pages instead, the CPU side done by a pool of staging threads, the GPU side ordered
 * on the caller's stream, and the calling (worker) thread never waits for a CPU memcpy.
 * The protocol and its guarantees: docs/design.md, "Pageable operands: staging".
 */
#ifndef TESS_BACKEND_STAGE_H
#define TESS_BACKEND_STAGE_H

#include <cuda_runtime_api.h>

#include "internal.h"

struct tess__stage; /* the staging state of one opened GPU */

struct tess__stage_params {
    int ord;            /* CUDA device number (current when tess__stage_open is called) */
    int64_t budget;     /* TESSERA_STAGING: pinned bytes at most, in whole pages (>= 1 page) */
    int threads;        /* TESSERA_STAGING_THREADS: threads of the shared pool, 0 = automatic */
    int summary;        /* print one line of statistics at close */
    cudaStream_t probe; /* an idle stream of the device, to probe cuStreamWaitValue32 */
    int fail_slab;      /* TESSERA_FAULT "pin:N": the N-th slab's cudaHostAlloc fails (0 never) */
    /* A CUDA call failed: mark the device failed (sticky) with msg; returns TESS_EDEVICE. */
    int (*fail)(void *ctx, const char *msg);
    void *ctx;
};

/* Set up staging for one device (flag words, the probe, a reference on the thread pool).
 * Pages come later, on demand. TESS_OK, or an error after which the device simply has no
 * staging (nothing is left allocated). */
int tess__stage_open(const struct tess__stage_params *p, struct tess__stage **out);

/* After the device's streams were synchronized (streams_ok: every sync succeeded): wait for
 * the staging threads to finish this device's pieces, free its pages, events and flags, and
 * drop the pool reference. With !streams_ok, groups that may still be referenced by stream
 * work are left allocated (leaked) rather than freed under it. The device must be current. */
void tess__stage_close(struct tess__stage *st, int streams_ok);

/* The device failed: staging threads skip the memcpy of its pieces from now on (they still
 * release the stream waits), so a failed device stops touching the user's memory. */
void tess__stage_dead(struct tess__stage *st);

/* Queue a copy of `height` rows of `width` bytes on stream s (h2d: host src -> device dst;
 * else device src -> host dst) through the staging pages when the host side is pageable and
 * the copy qualifies. *staged = 1: queued (the return value is its status); *staged = 0:
 * nothing queued, the caller copies directly (host memory pinned or managed, a small copy,
 * or no free page). nowait: where no page is free, TESS_EAGAIN and nothing queued (no
 * wait for a page, no direct copy, which would block on pageable memory). Called by the
 * device's worker thread, device current. */
int tess__stage_copy2d(struct tess__stage *st, cudaStream_t s, int h2d, int nowait, void *dst,
                       size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
                       size_t max_pitch, int *staged);

/* Process totals over every device ever opened (monotonic, never reset). */
struct tess__cuda_staging {
    uint64_t h2d_bytes, d2h_bytes;   /* bytes copied through the staging pages */
    uint64_t h2d_copies, d2h_copies; /* staged copies */
    uint64_t ring_copies;            /* of these: with fewer pages than segments (pool short) */
    uint64_t direct_copies, direct_bytes; /* pageable copies sent direct: no page, none pending */
    uint64_t page_waits;                  /* times the worker waited for a pending copy's pages */
    uint64_t pool_bytes;                  /* pinned staging bytes allocated now, all devices */
    int memops; /* last device set up: 1 cuStreamWaitValue32, 0 host fns */
};
void tess__cuda_staging_stats(struct tess__cuda_staging *out);

#endif /* TESS_BACKEND_STAGE_H */
