/* node/rs.c: the reservation station of one device (BLASX Alg. 1): the few tasks a worker
 * has pulled from the queue, ranked by expected cache hits when it picks the next one, and
 * the tasks other workers may steal.
 * Owns the slot array and its order (t[0] is the oldest task); does not own the tasks (the
 * job's) nor compute priorities (the owner's prio callback, Eq. 3).
 * Lock order: the station lock is taken first; the prio callback runs with it held and may
 * take the cache lock (node/node.h). One station lock is never held with another's.
 */
#include <stdlib.h>

#include "node.h"

int tess__rs_init(struct tess__rs *rs, int cap) {
    rs->cap = 0;
    rs->count = 0;
    rs->t = NULL;
    if (cap < 1) return TESS_EINVAL;
    rs->t = calloc((size_t)cap, sizeof *rs->t);
    if (!rs->t) return TESS_ENOMEM;
    if (pthread_mutex_init(&rs->lock, NULL) != 0) {
        free(rs->t);
        rs->t = NULL;
        return TESS_ENOMEM;
    }
    rs->cap = cap;
    return TESS_OK;
}

void tess__rs_destroy(struct tess__rs *rs) {
    if (!rs->t) return;
    pthread_mutex_destroy(&rs->lock);
    free(rs->t);
    rs->t = NULL;
    rs->cap = rs->count = 0;
}

bool tess__rs_push(struct tess__rs *rs, struct tess__task *t) {
    pthread_mutex_lock(&rs->lock);
    bool ok = rs->count < rs->cap;
    if (ok) rs->t[rs->count++] = t;
    pthread_mutex_unlock(&rs->lock);
    return ok;
}

/* Remove slot i, keeping the others in insertion order. Lock held. */
static struct tess__task *take(struct tess__rs *rs, int i) {
    struct tess__task *t = rs->t[i];
    for (int j = i + 1; j < rs->count; j++) rs->t[j - 1] = rs->t[j];
    rs->t[--rs->count] = NULL;
    return t;
}

/* Every task's prio is recomputed (and stored in t->prio, which steal reads); the first
 * strictly highest wins, so ties go to the oldest. A NULL prio keeps the stored values. */
struct tess__task *tess__rs_pop_best(struct tess__rs *rs, int (*prio)(struct tess__task *, void *),
                                     void *arg) {
    pthread_mutex_lock(&rs->lock);
    if (rs->count == 0) {
        pthread_mutex_unlock(&rs->lock);
        return NULL;
    }
    int best = 0;
    for (int i = 0; i < rs->count; i++) {
        struct tess__task *t = rs->t[i];
        if (prio) t->prio = prio(t, arg);
        if (t->prio > rs->t[best]->prio) best = i;
    }
    struct tess__task *t = take(rs, best);
    pthread_mutex_unlock(&rs->lock);
    return t;
}

/* The lowest stored prio (as of the owner's last pop_best, or as pushed); ties go to the
 * newest, the task the owner would reach last. */
struct tess__task *tess__rs_steal(struct tess__rs *rs) {
    pthread_mutex_lock(&rs->lock);
    if (rs->count == 0) {
        pthread_mutex_unlock(&rs->lock);
        return NULL;
    }
    int worst = 0;
    for (int i = 1; i < rs->count; i++)
        if (rs->t[i]->prio <= rs->t[worst]->prio) worst = i;
    struct tess__task *t = take(rs, worst);
    pthread_mutex_unlock(&rs->lock);
    return t;
}

int tess__rs_count(struct tess__rs *rs) {
    pthread_mutex_lock(&rs->lock);
    int n = rs->count;
    pthread_mutex_unlock(&rs->lock);
    return n;
}
