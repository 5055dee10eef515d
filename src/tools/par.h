/* src/tools/par.h: a parallel for of the tools and their oracle: fn(ctx, i) for every i in
 * [0, n) on up to `threads` threads (the caller's among them), items handed out in order by
 * one atomic counter. A thread that cannot start leaves its share to the others. */
#ifndef TESS_TOOLS_PAR_H
#define TESS_TOOLS_PAR_H

#define PAR_MAX_THREADS 256

void par_run(int threads, int n, void (*fn)(void *ctx, int i), void *ctx);

#endif
