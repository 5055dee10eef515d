/* cache/cache.h: the tile caches of a node: per device a pre-allocated heap (heap.c, BLASX
 * Fig. 6; working blocks are fixed segments, the room planning admission uses), an
 * approximate LRU of cached copies (alru.c, Alg. 2: a copy with readers is never a victim,
 * nor one whose fill has not completed), the MESI-X directory of which devices hold a valid
 * copy of each tile (mesix.c, Fig. 3), and the facade the workers call (cache.c): acquire a
 * tile on a device (L1 hit, L2 hit from a peer, or a copy from its home), release it at a
 * sync point, working blocks for output tiles, purge a job's tiles.
 * MESI-X of a tile on a device: I no valid copy; E the only valid device copy; S one of
 * several; M written, ephemeral (written back, then every copy I). Fill I -> E or S (other
 * holders E -> S); eviction E -> I or S -> I (a last holder S -> E); write: others -> I.
 * Lock order: the cache lock (struct tess__cache.lock; alru.c and mesix.c run under it)
 * before a device heap's lock. The backend is called under the cache lock only for hooks
 * that queue work or query events (never event_sync).
 */
#ifndef TESS_CACHE_H
#define TESS_CACHE_H

#include <pthread.h>
#include <stdbool.h>

#include "backend.h"

/* ---- heap.c ----------------------------------------------------------------------- */

struct tess__heap;
/* Manage [base, base + size) with the given alignment (a power of two). */
struct tess__heap *tess__heap_create(void *base, size_t size, size_t align);
void tess__heap_destroy(struct tess__heap *h);
/* First fit; the chosen free segment is split. NULL when no free segment is large enough.
 * The segment is not fixed (a cached copy, evictable). */
void *tess__heap_alloc(struct tess__heap *h, size_t bytes);
/* The same, fixed or not. A fixed segment is kept until a task ends (a working block); the
 * room planning below counts only fixed segments as used. */
void *tess__heap_alloc_fixed(struct tess__heap *h, size_t bytes, bool fixed);
/* Exactly [at, at + bytes) (rounded up to the alignment) if that range is free now; NULL
 * otherwise. */
void *tess__heap_alloc_at(struct tess__heap *h, void *at, size_t bytes, bool fixed);
/* A used segment becomes fixed or not (a working block kept as a cached copy). */
void tess__heap_set_fixed(struct tess__heap *h, void *p, bool fixed);
/* Return a segment; it merges with free neighbours. p must come from an alloc above. */
void tess__heap_free(struct tess__heap *h, void *p);
size_t tess__heap_capacity(const struct tess__heap *h);
size_t tess__heap_used(struct tess__heap *h);
size_t tess__heap_largest_free(struct tess__heap *h);
size_t tess__heap_segments(struct tess__heap *h); /* free + used segments (tests) */
/* bytes as a segment holds them (rounded up to the alignment); 0 if they never fit. */
size_t tess__heap_round(const struct tess__heap *h, size_t bytes);
/* Room planning (B7). The runs are the ranges between fixed segments: what is free once
 * every evictable copy is gone. tess__heap_fixed_room: how many blocks of `bytes` first fit
 * would place in the runs. tess__heap_plan_fixed: where a new fixed block of `bytes` can go
 * so that afterwards, for every i, `copies` blocks of room[i] bytes still fit in the runs
 * (nroom <= 64); preferred, a range that is free now (*now = true), lowest first; else the
 * start or end of a run, lowest run first (the caller evicts the copies there, then
 * tess__heap_alloc_at). NULL when no place keeps that room. */
size_t tess__heap_fixed_room(struct tess__heap *h, size_t bytes);
void *tess__heap_plan_fixed(struct tess__heap *h, size_t bytes, const size_t *room, int nroom,
                            int copies, bool *now);

/* ---- tiles ------------------------------------------------------------------------ */

/* Identity of one stored block of one operand: what the directory is keyed by. Two keys are
 * the same tile iff every field is equal. space separates jobs (a host tile cached for one
 * call is never reused by another call, whose data may have changed) and lets a later
 * layer keep tiles across calls by sharing a space. */
struct tess__tile_key {
    uint64_t space;     /* job or session id */
    uintptr_t addr;     /* host address of element (0,0) of the block, or a synthetic id */
    int64_t ld;         /* leading dimension of the home storage */
    int32_t rows, cols; /* stored block shape (before any op) */
    uint32_t esize;     /* bytes per element */
};

/* Where the valid master copy of a tile lives when no device holds it. */
enum tess__home_kind {
    TESS__HOME_HOST = 0, /* host memory at key.addr with leading dimension key.ld */
    TESS__HOME_DEV = 1   /* device memory: arrived from another rank, or produced earlier */
};

/* A tile as a task names it: its key and its home. */
struct tess__tile {
    struct tess__tile_key key;
    enum tess__home_kind home;
    int home_dev;            /* HOME_DEV: device index holding it */
    void *home_ptr;          /* HOME_DEV: device pointer of element (0,0) */
    int64_t home_ld;         /* HOME_DEV: its leading dimension */
    tess__event *home_ready; /* HOME_DEV: event after which home_ptr is valid, or NULL */
    bool home_stable;        /* HOME_DEV: unchanged until every task reading it is done, so its
                         own device reads it in place (no copy, no directory entry) */
};

/* ---- alru.c ----------------------------------------------------------------------- */

struct tess__dentry;

/* One tile copy in one device's memory. */
struct tess__blk {
    struct tess__blk *prev, *next; /* ALRU links; front = most recently used */
    struct tess__dentry *entry;    /* directory entry, NULL for working blocks */
    int dev;                       /* device index owning the memory */
    int in_alru;                   /* 1 while linked in the device's ALRU */
    void *ptr;                     /* device address (host address on UNIFIED devices) */
    int64_t ld;                    /* leading dimension of the copy (elements) */
    size_t bytes;                  /* bytes reserved in the heap */
    int readers;                   /* users not yet released (tasks, peers copying from it) */
    tess__event *ready;            /* recorded after the fill; valid while !ready_done */
    int ready_done;                /* the fill is known complete */
    int wb_recorded;               /* a write-back re-recorded ready: only the event says */
    int stale;                     /* dropped from the directory, freed at readers == 0 */
    struct tess__blk *pinned_src;  /* peer copy this block was filled from (its reader) */
    int peer_waited;               /* the fill waited for the peer copy's own fill */
    int torn;                      /* its device failed before its fill was known complete */
    int suspect;                   /* its fill copied a torn copy, or one filled from one */
    int in_place;                  /* a stable device home used as it is (recycled at release) */
    double t_put;                  /* held tiles: when a task last put it back (write-behind) */
    uint64_t space;                /* key.space of the tile (kept when the entry goes) */
};

struct tess__alru {
    struct tess__blk *head, *tail;
    size_t count;
};

void tess__alru_init(struct tess__alru *a);
void tess__alru_push_front(struct tess__alru *a, struct tess__blk *b);
/* A use: move b to the front. */
void tess__alru_touch(struct tess__alru *a, struct tess__blk *b);
void tess__alru_remove(struct tess__alru *a, struct tess__blk *b);
/* Scan from the least recently used end for the first block with readers == 0 that may
 * leave: is_done(b, arg) returns true (the caller queries its fill's event and may refuse
 * more), or without is_done, ready_done. NULL when every block is in use. Does not unlink
 * it. */
struct tess__blk *tess__alru_victim(struct tess__alru *a,
                                    bool (*is_done)(struct tess__blk *b, void *arg), void *arg);

/* ---- mesix.c ---------------------------------------------------------------------- */

enum tess__mesix { TESS__MESIX_I = 0, TESS__MESIX_S, TESS__MESIX_E, TESS__MESIX_M };

/* Per tile: which devices hold a valid copy, and which one writes it (M). Held tiles (a
 * space of node/hold.c) add: dirty, the home is stale (the holders' copies, or the writer's
 * working block, are the only current contents: the last holder is written back before it
 * leaves); wb, a holder's write-back to the home in flight (the home is current once its
 * ready event completed); lost, the only current contents were on a device that failed;
 * dirty_r0, while dirty: the home's rows above it are current (a write-back copies rows
 * dirty_r0.. only). An entry that is dirty or lost stays while no device holds the tile. */
struct tess__dentry {
    struct tess__tile_key key;
    uint32_t holders;                         /* bit d: device d holds a valid copy */
    int writer;                               /* device holding it in M, or -1 */
    uint8_t dirty, lost;                      /* held tiles: see above */
    int32_t dirty_r0;                         /* held tiles: see above */
    struct tess__blk *wb;                     /* held tiles: write-back in flight, or NULL */
    struct tess__blk *copy[TESS_MAX_DEVICES]; /* the copy on each device, NULL if none */
    struct tess__dentry *hnext;               /* hash chain */
};

struct tess__dir;
struct tess__dir *tess__dir_create(int ndev);
void tess__dir_destroy(struct tess__dir *d);
uint64_t tess__key_hash(const struct tess__tile_key *k);
bool tess__key_eq(const struct tess__tile_key *a, const struct tess__tile_key *b);
/* Entry of key, or NULL (state I on every device). */
struct tess__dentry *tess__dir_find(struct tess__dir *d, const struct tess__tile_key *key);
/* Entry of key, created in state I everywhere if absent. NULL only when out of memory. */
struct tess__dentry *tess__dir_get(struct tess__dir *d, const struct tess__tile_key *key);
/* State of the tile on device dev. */
enum tess__mesix tess__dir_state(const struct tess__dentry *e, int dev);
/* Device dev now holds a valid copy blk: I -> E or S (others E -> S). */
void tess__dir_fill(struct tess__dir *d, struct tess__dentry *e, int dev, struct tess__blk *blk);
/* Device dev dropped its copy: -> I; a sole remaining holder becomes E. The entry is freed
 * when no device holds the tile and none writes it; returns true then. */
bool tess__dir_evict(struct tess__dir *d, struct tess__dentry *e, int dev);
/* Device dev writes the tile: dev -> M. Returns the mask of other devices whose copies are
 * now invalid (the caller drops them: their state is already I). */
uint32_t tess__dir_write(struct tess__dir *d, struct tess__dentry *e, int dev);
/* The M copy of dev was written back to the home: M -> I. Returns true if the entry was
 * freed. */
bool tess__dir_writeback(struct tess__dir *d, struct tess__dentry *e, int dev);
/* Free e if no device holds or writes it and it is neither dirty nor lost; true then. */
bool tess__dir_release(struct tess__dir *d, struct tess__dentry *e);
/* A device other than dev holding a valid copy, preferring those in peer_mask (devices dev
 * can copy from directly); -1 if none in peer_mask holds it. */
int tess__dir_peer(const struct tess__dentry *e, int dev, uint32_t peer_mask);
/* Call fn on every entry whose key.space == space (fn may evict, freeing the entry). */
void tess__dir_foreach_space(struct tess__dir *d, uint64_t space,
                             void (*fn)(struct tess__dentry *e, void *arg), void *arg);
size_t tess__dir_count(const struct tess__dir *d);

/* ---- cache.c: the facade ---------------------------------------------------------- */

/* One device as the cache sees it. */
struct tess__cdev {
    const struct tess__dev_ops *ops;
    void *bd;
    unsigned caps;
    struct tess__heap *heap; /* NULL on UNIFIED devices */
    struct tess__alru alru;
    uint32_t peer_mask; /* devices this one can copy from directly */
    struct tess__counters *ctr;
    struct tess__blk *free_blks; /* recycled block records (with their events) */
    int failed;
};

struct tess__cache {
    int p2p;            /* peer fetches allowed (TESSERA_P2P) */
    int peer_done_only; /* ... only from copies whose fill is complete (TESSERA_RECOVER) */
    /* Called (with the cache lock held) with the space of a tile whose copy may hold
     * garbage: it was filled from a peer that failed before its own fill was known to be
     * complete. The runtime fails the job of that space (it cannot be redone safely). */
    void (*poison)(void *arg, uint64_t space);
    void *poison_arg;
    /* Called (with the cache lock held, if set) when a held tile is written back to its
     * home: the contract checker records its host contents anew (node/hold.c). */
    void (*written_back)(void *arg, const struct tess__tile_key *key);
    void *written_back_arg;
    /* Called (with the cache lock held, if set) by write-behind's scan for an idle dirty
     * held tile: whether a task that has not finished will write it again (node/hold.c),
     * so that writing it back now would be wasted. Final tiles (tess__cache_behind with a
     * key) do not ask. */
    bool (*rewrite_pending)(void *arg, const struct tess__tile_key *key);
    void *rewrite_pending_arg;
    pthread_mutex_t lock;
    struct tess__dir *dir;
    int ndev;
    struct tess__cdev dev[TESS_MAX_DEVICES];
};

int tess__cache_init(struct tess__cache *c, int ndev);
/* Register device i (its heap is created by the caller from the backend's arena). */
void tess__cache_set_dev(struct tess__cache *c, int i, const struct tess__dev_ops *ops, void *bd,
                         unsigned caps, struct tess__heap *heap, struct tess__counters *ctr);
void tess__cache_set_peers(struct tess__cache *c, int i, uint32_t peer_mask);
void tess__cache_destroy(struct tess__cache *c);

/* Make tile t available on device dev for work queued next on `stream`, and take one
 * reader on it. On return *out is the copy (ptr, ld) and the stream has been made to wait
 * for its fill, wherever the fill runs:
 *   L1 hit  the device holds it (counted in l1_hits);
 *   L2 hit  a peer holds it: copied over P2P (l2_hits, bytes_p2p), the peer copy pinned
 *           (one reader) until this copy is released;
 *   miss    copied from the home (misses, bytes_h2d; or bytes_p2p from a HOME_DEV).
 * *how (if not NULL) says which copy this call queued on `stream` (NONE for a hit).
 * alloc_bytes is the size to reserve (>= the tile's bytes; jobs pass their full-tile size
 * so that the heap does not fragment). TESS_EAGAIN: no room now (every block has readers
 * or an unfinished fill); nothing was taken. UNIFIED devices return the home in place. */
enum tess__fill { TESS__FILL_NONE = 0, TESS__FILL_HOST, TESS__FILL_PEER, TESS__FILL_HOME };
int tess__cache_acquire(struct tess__cache *c, int dev, int stream, const struct tess__tile *t,
                        size_t alloc_bytes, struct tess__blk **out, enum tess__fill *how);
/* Drop the reader taken by acquire; call only after work using the copy has completed
 * (a sync point): the fill is then known complete, and a peer copy it came from is
 * released too. */
void tess__cache_release(struct tess__cache *c, struct tess__blk *b);
/* A working block (an output tile, a transport buffer) of `bytes` on dev, not in the
 * directory, fixed in the heap (never evicted; counts in the room planning). EAGAIN when no
 * room even after evicting every idle cached copy. */
int tess__cache_alloc_work(struct tess__cache *c, int dev, size_t bytes, struct tess__blk **out);
/* A working block for the output tile of a task about to run (B7): placed where, with it,
 * `copies` blocks of each room[i] bytes (the operand tiles of every running task, this one
 * included) still fit around the working blocks of dev once its idle copies are evicted
 * (tess__heap_plan_fixed); idle copies lying there are evicted. EAGAIN: no such place now
 * (wait for a running task to end) or a copy in use lies there; *evicted (if not NULL) says
 * whether copies had to be evicted to make the place. */
int tess__cache_alloc_planned(struct tess__cache *c, int dev, int stream, size_t bytes,
                              const size_t *room, int nroom, int copies, struct tess__blk **out,
                              bool *evicted);
/* Evict every idle copy on dev (no readers, fill complete): what a worker does when a step
 * finds no room while nothing of its own is in flight, before it tries again. Returns how
 * many copies were evicted; *queued: write-backs of last copies of dirty held tiles queued
 * on `stream` instead (evictable once they complete). A place (alloc_planned) or a new copy
 * (acquire) that finds only such copies queues their write-backs on the stream given and
 * returns TESS_EAGAIN. */
int tess__cache_flush_dev(struct tess__cache *c, int dev, int stream, int *queued);
void tess__cache_free_work(struct tess__cache *c, struct tess__blk *b);
/* Device dev wrote the tile `key` and its write-back to the home completed (MESI-X:
 * M -> written back). Every cached copy of the old contents is dropped (others -> I). If
 * keep is a working block holding the new contents, it becomes dev's cached copy (E), so
 * later readers hit it (L1) or fetch it from dev (L2); otherwise dev's state is I. */
void tess__cache_written(struct tess__cache *c, int dev, const struct tess__tile_key *key,
                         struct tess__blk *keep);
/* Drop every cached tile of a space (all their readers must be released). */
void tess__cache_purge(struct tess__cache *c, uint64_t space);
/* Drop every copy held by device dev (it failed; its worker released its own readers
 * first). Copies still pinned by peers are freed when those release them. */
void tess__cache_drop_dev(struct tess__cache *c, int dev);
/* BLASX Eq. 3b for one tile on dev: 2 if dev holds it (L1), 1 if a peer it can copy from
 * holds it (L2), 0 otherwise. Call with the lock held (tess__cache_lock). */
int tess__cache_locality(struct tess__cache *c, int dev, const struct tess__tile_key *key);
void tess__cache_lock(struct tess__cache *c);
void tess__cache_unlock(struct tess__cache *c);
/* Drop the reader taken by acquire when the work that would have used the copy was never
 * queued: unlike release, it does not claim that the fill completed. */
void tess__cache_unacquire(struct tess__cache *c, struct tess__blk *b);

/* ---- held tiles (node/hold.c) -------------------------------------------------------
 * A held tile (its space is a hold's) is kept across calls; a task writing it takes the
 * tile itself as its working block and puts it back dirty (the home stale) when done. */

/* Internal statuses of acquire/take: the tile was lost with a failed device (its job fails
 * TESS_EDEVICE), or a running task writes it (a read outside the contract). */
#define TESS__ELOST (-64)
#define TESS__ECONFLICT (-65)

/* Take held tile t as the working block of a task on dev (M: dev writes it; every other
 * copy is dropped): dev's own idle copy in place when fixing it keeps the admission's room,
 * else a block placed as tess__cache_alloc_planned does, filled on `stream` from a current
 * copy (own, a peer's) or the home. *was_dirty: the home was stale (then the working block
 * holds the only current contents until tess__cache_put). TESS_EAGAIN: no room now. */
int tess__cache_take(struct tess__cache *c, int dev, int stream, const struct tess__tile *t,
                     size_t bytes, const size_t *room, int nroom, int copies,
                     struct tess__blk **out, bool *was_dirty);
/* The task's work on b completed: b becomes dev's cached copy of key, dirty (written from
 * row r0 on: the rows above are as the tile was taken) or clean. */
void tess__cache_put(struct tess__cache *c, int dev, const struct tess__tile_key *key,
                     struct tess__blk *b, bool dirty, int64_t r0);
/* The task will not complete (its job failed, its device failed): intact (no kernel wrote b
 * and dev is alive) puts b back as it was; otherwise b is freed and a tile whose home was
 * stale is lost. */
void tess__cache_abandon(struct tess__cache *c, int dev, const struct tess__tile_key *key,
                         struct tess__blk *b, bool was_dirty, bool intact);
/* A rectangle of a held matrix (base, ld and element size es: its host layout): rows
 * [r0, r1), columns [c0, c1). */
struct tess__wb_range {
    uintptr_t base;
    int64_t ld;
    size_t es;
    int64_t r0, r1, c0, c1;
};
/* Device dev's share of a sync of space (on its worker: stream and ev are its own): write
 * back each dirty tile of space it is the lowest holder of (not with TESS__WB_WAIT), wait
 * for its write-backs of the space in flight; TESS__WB_DROP: then drop its copies of the
 * space. rg (not NULL): only the tiles that meet rg. Blocks. */
enum { TESS__WB_SYNC = 0, TESS__WB_DROP = 1, TESS__WB_WAIT = 2 };
int tess__cache_writeback(struct tess__cache *c, int dev, int stream, uint64_t space, int mode,
                          const struct tess__wb_range *rg, tess__event *ev);
/* Write-behind (dev's worker, while its write-back stream idles): queue on `stream` the
 * write-back of dev's least recently used idle dirty held tile it is the lowest holder of
 * (key NULL), or of tile key if it is such a tile (idle or only read: a final tile), holding
 * one reader on it; NULL if there is none. Once the copy has landed (an event the caller
 * recorded after it), tess__cache_behind_done: the tile is clean if nothing took it
 * meanwhile (a task writing it takes it elsewhere or drops this copy: it stays dirty). */
struct tess__blk *tess__cache_behind(struct tess__cache *c, int dev, int stream,
                                     const struct tess__tile_key *key);
void tess__cache_behind_done(struct tess__cache *c, struct tess__blk *b, bool landed);
/* Tiles of space lost with a failed device (the first one's key in *first). */
size_t tess__cache_lost(struct tess__cache *c, uint64_t space, struct tess__tile_key *first);
/* Forget space: every copy dropped, lost and dirty marks cleared (the home is what counts). */
void tess__cache_forget(struct tess__cache *c, uint64_t space);

#endif /* TESS_CACHE_H */
