/* Every reader-writer lock the library names (or those named on the command line): writers
 * exclude everyone (readers never see a half-done update), readers share, try and timed
 * acquisitions on both clocks, destroy of a held lock. */
#define _GNU_SOURCE
#include "check.h"
#include <spinlab.h>

enum { MOST_THREADS = 4, ROUNDS = 2000 };

struct shared {
  spinlab_rwlock_t lock;
  long first, second; /* equal whenever no writer is inside */
};

static void *write_often(void *arg) {
  struct shared *s = arg;
  for (int i = 0; i < ROUNDS; i++) {
    CHECK_EQ(spinlab_rwlock_wrlock(&s->lock), SPINLAB_OK);
    s->first++;
    if (i % 128 == 0) sched_yield(); /* a reader or writer inside now would see it */
    s->second++;
    CHECK_EQ(spinlab_rwlock_unlock(&s->lock), SPINLAB_OK);
  }
  return NULL;
}

static void *read_often(void *arg) {
  struct shared *s = arg;
  for (int i = 0; i < ROUNDS; i++) {
    CHECK_EQ(spinlab_rwlock_rdlock(&s->lock), SPINLAB_OK);
    CHECK_EQ(s->first, s->second);
    CHECK_EQ(spinlab_rwlock_unlock(&s->lock), SPINLAB_OK);
  }
  return NULL;
}

static void *while_written(void *arg) { /* the main thread holds the lock exclusively */
  spinlab_rwlock_t *lock = arg;
  CHECK_EQ(spinlab_rwlock_tryrdlock(lock), SPINLAB_BUSY);
  CHECK_EQ(spinlab_rwlock_trywrlock(lock), SPINLAB_BUSY);
  struct timespec deadline = in_ns(CLOCK_REALTIME, 2000000);
  CHECK_EQ(spinlab_rwlock_timedrdlock(lock, &deadline), SPINLAB_TIMEDOUT);
  CHECK(reached(CLOCK_REALTIME, deadline));
  deadline = in_ns(CLOCK_MONOTONIC, 2000000);
  CHECK_EQ(spinlab_rwlock_clockwrlock(lock, CLOCK_MONOTONIC, &deadline), SPINLAB_TIMEDOUT);
  CHECK(reached(CLOCK_MONOTONIC, deadline));
  CHECK_EQ(spinlab_rwlock_wrheld(lock), 0);
  return NULL;
}

static void *while_read(void *arg) { /* the main thread holds the lock shared */
  spinlab_rwlock_t *lock = arg;
  CHECK_EQ(spinlab_rwlock_trywrlock(lock), SPINLAB_BUSY);
  struct timespec deadline = in_ns(CLOCK_MONOTONIC, 2000000);
  CHECK_EQ(spinlab_rwlock_clockwrlock(lock, CLOCK_MONOTONIC, &deadline), SPINLAB_TIMEDOUT);
  CHECK_EQ(spinlab_rwlock_tryrdlock(lock), SPINLAB_OK); /* readers share */
  CHECK_EQ(spinlab_rwlock_unlock(lock), SPINLAB_OK);
  return NULL;
}

static void test_rwlock(const char *name) {
  struct shared s = {.first = 0, .second = 0};
  CHECK_EQ(spinlab_rwlock_init(&s.lock, name), SPINLAB_OK);
  CHECK(strcmp(spinlab_rwlock_name(&s.lock), name) == 0);
  int threads = cpus_at_most(MOST_THREADS), writers = threads / 2;
  pthread_t thread[MOST_THREADS];
  for (int i = 0; i < threads; i++) thread[i] = start(i < writers ? write_often : read_often, &s);
  for (int i = 0; i < threads; i++) join(thread[i]);
  CHECK_EQ(s.first, (long)writers * ROUNDS);
  CHECK_EQ(s.second, s.first);

  CHECK_EQ(spinlab_rwlock_wrlock(&s.lock), SPINLAB_OK);
  CHECK_EQ(spinlab_rwlock_wrheld(&s.lock), 1);
  CHECK_EQ(spinlab_rwlock_destroy(&s.lock), SPINLAB_BUSY);
  join(start(while_written, &s.lock));
  CHECK_EQ(spinlab_rwlock_unlock(&s.lock), SPINLAB_OK);
  CHECK_EQ(spinlab_rwlock_rdlock(&s.lock), SPINLAB_OK);
  CHECK_EQ(spinlab_rwlock_wrheld(&s.lock), 0);
  join(start(while_read, &s.lock));
  CHECK_EQ(spinlab_rwlock_unlock(&s.lock), SPINLAB_OK);
  struct timespec bad = {0, 1000000000L};
  CHECK_EQ(spinlab_rwlock_timedwrlock(&s.lock, &bad), SPINLAB_INVALID);
  CHECK_EQ(spinlab_rwlock_destroy(&s.lock), SPINLAB_OK);
}

int main(int argc, char **argv) {
  size_t tested = 0;
  if (argc > 1) {
    for (int i = 1; i < argc; i++, tested++) test_rwlock(argv[i]);
  } else {
    size_t count = spinlab_list(SPINLAB_KIND_RWLOCK, NULL, 0);
    const char **names = calloc(count, sizeof *names);
    CHECK(names != NULL);
    CHECK_EQ(spinlab_list(SPINLAB_KIND_RWLOCK, names, count), count);
    for (size_t i = 0; i < count; i++) {
      if (spinlab_check(SPINLAB_KIND_RWLOCK, names[i]) == SPINLAB_UNAVAILABLE) continue;
      test_rwlock(names[i]);
      tested++;
    }
    free(names);
  }
  spinlab_rwlock_t lock;
  CHECK_EQ(spinlab_rwlock_init(&lock, "rw-phase:nap"), SPINLAB_UNKNOWN_NAME);
  CHECK_EQ(spinlab_rwlock_init(&lock, NULL), SPINLAB_OK);
  CHECK(strcmp(spinlab_rwlock_name(&lock), "rw-phase:spin-park") == 0);
  CHECK_EQ(spinlab_rwlock_destroy(&lock), SPINLAB_OK);
  printf("tested %zu reader-writer locks\n", tested);
  return 0;
}
