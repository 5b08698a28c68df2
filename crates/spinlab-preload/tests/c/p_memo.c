/* Mutexes whose bytes a profile's memo (the index of the mutex's row, kept in the mutex) does
 * not describe: a mutex copied with memcpy, which carries its original's memo, and the
 * original overwritten by its copy; a copy that a second thread waits for before its first
 * acquisition of its own; trylock and timedlock of a copy; and one piece of memory that is a
 * normal mutex, then a recursive one (glibc's), then a normal one again. The program prints
 * each object's acquisitions, which the profile must count exactly, each in the object's own
 * row. */
#define _GNU_SOURCE
#include "preloaded.h"
#include <stdatomic.h>
#include <string.h>

enum { ORIGINAL_FIRST = 70, COPIED = 40, ORIGINAL_AGAIN = 5, NORMAL = 2, RECURSIVE = 3, NORMAL_AGAIN = 4 };

static pthread_mutex_t original, copied, waited_copy, reused;
static atomic_int about_to_lock;

static void lock_times(pthread_mutex_t *mutex, int times) {
  for (int i = 0; i < times; i++) {
    CHECK_EQ(pthread_mutex_lock(mutex), 0);
    CHECK_EQ(pthread_mutex_unlock(mutex), 0);
  }
}

static void *lock_waited_copy(void *arg) {
  (void)arg;
  atomic_store(&about_to_lock, 1);
  CHECK_EQ(pthread_mutex_lock(&waited_copy), 0);
  CHECK_EQ(pthread_mutex_unlock(&waited_copy), 0);
  return NULL;
}

int main(void) {
  say_preloaded();
  CHECK_EQ(pthread_mutex_init(&original, NULL), 0);
  lock_times(&original, ORIGINAL_FIRST);

  /* A free normal mutex copied: glibc's is a word and a type, which copy. */
  memcpy(&copied, &original, sizeof original);
  lock_times(&copied, COPIED);
  CHECK_EQ(pthread_mutex_trylock(&copied), 0);
  CHECK_EQ(pthread_mutex_unlock(&copied), 0);
  struct timespec later = in_ns(CLOCK_REALTIME, 1000000000);
  CHECK_EQ(pthread_mutex_timedlock(&copied, &later), 0);
  CHECK_EQ(pthread_mutex_unlock(&copied), 0);
  memcpy(&original, &copied, sizeof copied);
  lock_times(&original, ORIGINAL_AGAIN);

  /* A copy whose first acquisition of its own is a wait. */
  memcpy(&waited_copy, &original, sizeof original);
  CHECK_EQ(pthread_mutex_lock(&waited_copy), 0);
  pthread_t waiter;
  CHECK_EQ(pthread_create(&waiter, NULL, lock_waited_copy, NULL), 0);
  while (!atomic_load(&about_to_lock)) sched_yield();
  usleep(20000);
  CHECK_EQ(pthread_mutex_unlock(&waited_copy), 0);
  CHECK_EQ(pthread_join(waiter, NULL), 0);

  /* One piece of memory, three mutexes, one after another: one row. */
  CHECK_EQ(pthread_mutex_init(&reused, NULL), 0);
  lock_times(&reused, NORMAL);
  CHECK_EQ(pthread_mutex_destroy(&reused), 0);
  pthread_mutexattr_t recursive;
  CHECK_EQ(pthread_mutexattr_init(&recursive), 0);
  CHECK_EQ(pthread_mutexattr_settype(&recursive, PTHREAD_MUTEX_RECURSIVE), 0);
  CHECK_EQ(pthread_mutex_init(&reused, &recursive), 0);
  CHECK_EQ(pthread_mutexattr_destroy(&recursive), 0);
  CHECK(!glibc_owns(&reused));
  CHECK_EQ(pthread_mutex_lock(&reused), 0);
  CHECK(glibc_owns(&reused));
  lock_times(&reused, RECURSIVE - 1);
  CHECK_EQ(pthread_mutex_unlock(&reused), 0);
  CHECK_EQ(pthread_mutex_destroy(&reused), 0);
  CHECK_EQ(pthread_mutex_init(&reused, NULL), 0);
  lock_times(&reused, NORMAL_AGAIN);

  printf("object original %p acquired %d times\n", (void *)&original, ORIGINAL_FIRST + ORIGINAL_AGAIN);
  printf("object copied %p acquired %d times\n", (void *)&copied, COPIED + 2);
  printf("object waited_copy %p acquired %d times\n", (void *)&waited_copy, 2);
  printf("object reused %p acquired %d times\n", (void *)&reused, NORMAL + RECURSIVE + NORMAL_AGAIN);
  puts("ok");
  return 0;
}
