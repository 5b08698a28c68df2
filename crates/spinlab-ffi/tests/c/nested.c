/* Many locks held by one thread: 64 nested acquisitions released in either order, and threads
 * walking a chain of 64 locks hand over hand (each takes the next lock before it releases the
 * one it holds). The queue locks keep one node per held lock; this is where a per-thread node
 * cache that is too small, or a node reused while still queued, would show. */
#define _GNU_SOURCE
#include "check.h"
#include <spinlab.h>

enum { LOCKS = 64, MOST_WALKERS = 4, WALKS = 200 };

static spinlab_mutex_t chain[LOCKS];
static long visits[LOCKS];

static void *walk(void *unused) {
  (void)unused;
  for (int round = 0; round < WALKS; round++) {
    spinlab_mutex_lock(&chain[0]);
    for (int i = 1; i < LOCKS; i++) {
      spinlab_mutex_lock(&chain[i]);
      visits[i - 1]++; /* protected by chain[i - 1], still held */
      spinlab_mutex_unlock(&chain[i - 1]);
    }
    visits[LOCKS - 1]++;
    spinlab_mutex_unlock(&chain[LOCKS - 1]);
  }
  return NULL;
}

static void *all_busy(void *unused) {
  (void)unused;
  for (int i = 0; i < LOCKS; i++) CHECK_EQ(spinlab_mutex_trylock(&chain[i]), SPINLAB_BUSY);
  return NULL;
}

static void *all_free(void *unused) {
  (void)unused;
  for (int i = 0; i < LOCKS; i++) CHECK_EQ(spinlab_mutex_trylock(&chain[i]), SPINLAB_OK);
  for (int i = 0; i < LOCKS; i++) CHECK_EQ(spinlab_mutex_unlock(&chain[i]), SPINLAB_OK);
  return NULL;
}

static void test_lock(const char *name) {
  for (int i = 0; i < LOCKS; i++) {
    CHECK_EQ(spinlab_mutex_init(&chain[i], name), SPINLAB_OK);
    visits[i] = 0;
  }
  /* Nested, released last-in first-out, then first-in first-out. */
  for (int order = 0; order < 2; order++) {
    for (int i = 0; i < LOCKS; i++) CHECK_EQ(spinlab_mutex_lock(&chain[i]), SPINLAB_OK);
    join(start(all_busy, NULL));
    for (int i = 0; i < LOCKS; i++) CHECK_EQ(spinlab_mutex_unlock(&chain[order ? i : LOCKS - 1 - i]), SPINLAB_OK);
    join(start(all_free, NULL));
  }
  int walkers = cpus_at_most(MOST_WALKERS);
  pthread_t walker[MOST_WALKERS];
  for (int i = 0; i < walkers; i++) walker[i] = start(walk, NULL);
  for (int i = 0; i < walkers; i++) join(walker[i]);
  for (int i = 0; i < LOCKS; i++) CHECK_EQ(visits[i], walkers * WALKS);
  for (int i = 0; i < LOCKS; i++) CHECK_EQ(spinlab_mutex_destroy(&chain[i]), SPINLAB_OK);
}

int main(int argc, char **argv) {
  CHECK(argc > 1);
  for (int i = 1; i < argc; i++) test_lock(argv[i]);
  printf("tested %d locks\n", argc - 1);
  return 0;
}
