/* comm/pgemm.h: what the distributed GEMM's files share (pgemm.c: the entry, the checks
 * and the budget; pgemm_statc.c: stationary C; pgemm_split.c: stationary A / B and the
 * choice among the three), and the grid's host work buffer the MPI transport lands its
 * panels in. Every function here is collective over the grid unless said otherwise and
 * returns the same status on every rank. The call itself (struct tess__pgemm_call) is
 * comm.h's.
 */
#ifndef TESS_PGEMM_H
#define TESS_PGEMM_H

#include "redist.h"

/* Bytes per rank the gathered panels may take (TESSERA_PGEMM_MEM, at most `cap` where
 * cap > 0, e.g. the device panels' cap; else cap, or 40% of RAM shared by the ranks of a
 * node), the minimum over the grid. */
int tess__pgemm_budget(const struct tess__comm_grid *g, int64_t cap, int64_t *out);
/* The device panels' cap on a heap of heap bytes beside an in-place operand of inplace
 * bytes and nbuf exchange buffers of at most unit bytes each (and at most the panels'
 * bytes). Local. */
int64_t tess__pgemm_panel_cap(int64_t heap, int64_t inplace, int nbuf, int64_t unit);
/* The grid's host work buffer (g->pgemm.ws), grown to at least bytes (TESS_ENOMEM with a
 * message when it cannot be). Local. */
int tess__pgemm_ws(struct tess__comm_grid *g, size_t bytes);
/* Bytes a rank receives per pipelined exchange (TESSERA_PGEMM_CHUNK, default 128 MiB),
 * the minimum over the grid, so every rank cuts the same units. */
int tess__pgemm_chunk(const struct tess__comm_grid *g, int64_t *out);

/* The variant of call c (m, n, k >= 1, alpha != 0; real precisions with 'C' turned to
 * 'T'): 'C' (stationary C), 'A' or 'B'. ops: c's operands for stationary C (planned;
 * in_place set). */
int tess__pgemm_pick(struct tess__comm_grid *g, const struct tess__pgemm_call *c,
                     const struct tess__redist_op ops[2], char *var);
/* Run call c as stationary C on its planned operands ops, or as variant var ('A' or 'B'). */
int tess__pgemm_statc(struct tess__comm_grid *g, const struct tess__pgemm_call *c,
                      struct tess__redist_op ops[2]);
int tess__pgemm_split(struct tess__comm_grid *g, char var, const struct tess__pgemm_call *c);

#endif
