/* src/backend/cuda_check.h: the one check of a CUDA runtime call's result, for every file
 * that calls CUDA (cuda.c, stage.c, comm/'s GPU transport). On an error it clears CUDA's
 * last error (a non-sticky one is not reported twice), writes "call at file:line: name
 * (message)" and hands that message to the caller's failure hook, which decides what the
 * error means (mark a device failed, end a transfer) and returns the status.
 *
 *   return TESS_CUDA_CHECK(call, fail, ctx);   fail(ctx, msg), or with fail NULL
 *                                              tess__fail(TESS_EDEVICE, "%s", msg)
 */
#ifndef TESS_BACKEND_CUDA_CHECK_H
#define TESS_BACKEND_CUDA_CHECK_H

#include <stdio.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "internal.h"

/* A failure hook: record msg, return the status the failed call answers. */
typedef int (*tess__cuda_fail_fn)(void *ctx, const char *msg);

/* file relative to the source tree ("src/backend/cuda.c", "comm/xport_nccl.c"). */
static inline const char *tess__src_file(const char *file) {
    const char *best = file;
    for (const char *p = file; (p = strchr(p, '/')); p++)
        if (!strncmp(p, "/src/", 5) || !strncmp(p, "/comm/", 6)) best = p + 1;
    return best;
}

static inline int tess__cuda_check(cudaError_t e, const char *call, const char *file, int line,
                                   tess__cuda_fail_fn fail, void *ctx) {
    if (e == cudaSuccess) return TESS_OK;
    (void)cudaGetLastError();
    char msg[320];
    snprintf(msg, sizeof msg, "%s at %s:%d: %s (%s)", call, tess__src_file(file), line,
             cudaGetErrorName(e), cudaGetErrorString(e));
    return fail ? fail(ctx, msg) : tess__fail(TESS_EDEVICE, "%s", msg);
}

#define TESS_CUDA_CHECK(call, fail, ctx) \
    tess__cuda_check((call), #call, __FILE__, __LINE__, (fail), (ctx))

#endif /* TESS_BACKEND_CUDA_CHECK_H */
