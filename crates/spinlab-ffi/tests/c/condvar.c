/* Condition variables of every wait policy the library names (or those named on the command
 * line), each with a few kinds of mutex: a bounded buffer between two producers and two
 * consumers, and timed waits on both clocks. */
#define _GNU_SOURCE
#include "check.h"
#include <spinlab.h>

enum { SLOTS = 4, ITEMS = 1000, PRODUCERS = 2, CONSUMERS = 2 };

struct queue {
  spinlab_mutex_t mutex;
  spinlab_cond_t not_empty, not_full;
  long items[SLOTS];
  int head, count, producers_done;
  long sum;
};

static void *produce(void *arg) {
  struct queue *q = arg;
  for (long item = 1; item <= ITEMS; item++) {
    spinlab_mutex_lock(&q->mutex);
    while (q->count == SLOTS) CHECK_EQ(spinlab_cond_wait(&q->not_full, &q->mutex), SPINLAB_OK);
    q->items[(q->head + q->count) % SLOTS] = item;
    q->count++;
    spinlab_mutex_unlock(&q->mutex);
    /* Signalled after the unlock: the waiter re-checks under the mutex, so nothing is lost. */
    spinlab_cond_signal(&q->not_empty);
  }
  return NULL;
}

static void *consume(void *arg) {
  struct queue *q = arg;
  spinlab_mutex_lock(&q->mutex);
  for (;;) {
    while (q->count == 0 && !q->producers_done) CHECK_EQ(spinlab_cond_wait(&q->not_empty, &q->mutex), SPINLAB_OK);
    if (q->count == 0) break;
    q->sum += q->items[q->head];
    q->head = (q->head + 1) % SLOTS;
    q->count--;
    spinlab_cond_signal(&q->not_full); /* signalled under the mutex this time */
  }
  spinlab_mutex_unlock(&q->mutex);
  return NULL;
}

static void *must_be_held(void *arg) {
  CHECK_EQ(spinlab_mutex_trylock(arg), SPINLAB_BUSY);
  return NULL;
}

static void test_timed(struct queue *q, clockid_t clock) {
  spinlab_mutex_lock(&q->mutex);
  struct timespec deadline = in_ns(clock, 2000000);
  int status = clock == CLOCK_REALTIME ? spinlab_cond_timedwait(&q->not_empty, &q->mutex, &deadline)
                                       : spinlab_cond_clockwait(&q->not_empty, &q->mutex, clock, &deadline);
  /* Nobody signals: the wait times out, but never early (a spurious wake-up would return 0
   * before the deadline; retry then). */
  while (status == SPINLAB_OK) status = spinlab_cond_clockwait(&q->not_empty, &q->mutex, clock, &deadline);
  CHECK_EQ(status, SPINLAB_TIMEDOUT);
  CHECK(reached(clock, deadline));
  join(start(must_be_held, &q->mutex)); /* and the mutex is held again */
  struct timespec bad = {0, -1};
  CHECK_EQ(spinlab_cond_timedwait(&q->not_empty, &q->mutex, &bad), SPINLAB_INVALID);
  join(start(must_be_held, &q->mutex));
  spinlab_mutex_unlock(&q->mutex);
}

static void test_pair(const char *policy, const char *lock) {
  struct queue q = {.head = 0, .count = 0, .producers_done = 0, .sum = 0};
  CHECK_EQ(spinlab_mutex_init(&q.mutex, lock), SPINLAB_OK);
  CHECK_EQ(spinlab_cond_init(&q.not_empty, policy), SPINLAB_OK);
  CHECK_EQ(spinlab_cond_init(&q.not_full, policy), SPINLAB_OK);
  pthread_t producers[PRODUCERS], consumers[CONSUMERS];
  for (int i = 0; i < CONSUMERS; i++) consumers[i] = start(consume, &q);
  for (int i = 0; i < PRODUCERS; i++) producers[i] = start(produce, &q);
  for (int i = 0; i < PRODUCERS; i++) join(producers[i]);
  spinlab_mutex_lock(&q.mutex);
  q.producers_done = 1;
  spinlab_mutex_unlock(&q.mutex);
  spinlab_cond_broadcast(&q.not_empty);
  for (int i = 0; i < CONSUMERS; i++) join(consumers[i]);
  CHECK_EQ(q.sum, (long)PRODUCERS * ITEMS * (ITEMS + 1) / 2);
  test_timed(&q, CLOCK_REALTIME);
  test_timed(&q, CLOCK_MONOTONIC);
  CHECK_EQ(spinlab_cond_destroy(&q.not_empty), SPINLAB_OK);
  CHECK_EQ(spinlab_cond_destroy(&q.not_full), SPINLAB_OK);
  CHECK_EQ(spinlab_mutex_destroy(&q.mutex), SPINLAB_OK);
}

static const char *const locks[] = {"ttas:spin-park", "mcs:futex", "pthread"};

int main(int argc, char **argv) {
  size_t tested = 0;
  if (argc > 1) {
    for (int i = 1; i < argc; i++, tested++) test_pair(argv[i], locks[i % 3]);
  } else {
    size_t count = spinlab_list(SPINLAB_KIND_COND, NULL, 0);
    const char **names = calloc(count, sizeof *names);
    CHECK(names != NULL);
    CHECK_EQ(spinlab_list(SPINLAB_KIND_COND, names, count), count);
    for (size_t i = 0; i < count; i++) {
      if (spinlab_check(SPINLAB_KIND_COND, names[i]) == SPINLAB_UNAVAILABLE) continue;
      for (size_t l = 0; l < sizeof locks / sizeof *locks; l++, tested++) test_pair(names[i], locks[l]);
    }
    free(names);
  }
  spinlab_cond_t cond;
  CHECK_EQ(spinlab_cond_init(&cond, "ttas:futex"), SPINLAB_UNKNOWN_NAME);
  CHECK_EQ(spinlab_cond_init(&cond, NULL), SPINLAB_OK);
  CHECK_EQ(spinlab_cond_destroy(&cond), SPINLAB_OK);
  printf("tested %zu condition variable and mutex pairs\n", tested);
  return 0;
}
