/* pthread mutexes as an unmodified program uses them: statically initialised, initialised
 * with and without attributes, adaptive; mutual exclusion, trylock, timed locks on both
 * clocks, destroy. The same program runs without the preload library, where glibc must pass
 * it too. */
#define _GNU_SOURCE
#include "preloaded.h"
#include <stdatomic.h>

enum { MOST_THREADS = 4, ROUNDS = 5000 };

/* Statically initialised, never by a call. `tallied` is locked by exclusion() alone, so the
 * statistics must count exactly the acquisitions it reports. */
static pthread_mutex_t tallied = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t probed = PTHREAD_MUTEX_INITIALIZER;
static long counter;

static void *hammer(void *arg) {
  pthread_mutex_t *mutex = arg;
  for (int i = 0; i < ROUNDS; i++) {
    CHECK_EQ(pthread_mutex_lock(mutex), 0);
    long seen = counter;
    if (i % 128 == 0) sched_yield(); /* a second thread inside would lose an update */
    counter = seen + 1;
    CHECK_EQ(pthread_mutex_unlock(mutex), 0);
  }
  return NULL;
}

static void exclusion(pthread_mutex_t *mutex) {
  int threads = cpus_at_most(MOST_THREADS);
  pthread_t thread[MOST_THREADS];
  counter = 0;
  for (int i = 0; i < threads; i++) thread[i] = start(hammer, mutex);
  for (int i = 0; i < threads; i++) join(thread[i]);
  CHECK_EQ(counter, (long)threads * ROUNDS);
}

struct timed {
  pthread_mutex_t *mutex;
  clockid_t clock;
};

static void *time_out(void *arg) { /* while the main thread holds the mutex */
  struct timed *timed = arg;
  CHECK_EQ(pthread_mutex_trylock(timed->mutex), EBUSY);
  struct timespec deadline = in_ns(timed->clock, 2000000);
  int status = timed->clock == CLOCK_REALTIME ? pthread_mutex_timedlock(timed->mutex, &deadline)
                                              : pthread_mutex_clocklock(timed->mutex, timed->clock, &deadline);
  CHECK_EQ(status, ETIMEDOUT);
  CHECK(reached(timed->clock, deadline)); /* never early */
  struct timespec bad = {0, 1000000000L};
  CHECK_EQ(pthread_mutex_timedlock(timed->mutex, &bad), EINVAL);
  return NULL;
}

static void timed_and_trylock(pthread_mutex_t *mutex) {
  CHECK_EQ(pthread_mutex_lock(mutex), 0);
  CHECK_EQ(pthread_mutex_destroy(mutex), EBUSY);
  struct timed realtime = {mutex, CLOCK_REALTIME}, monotonic = {mutex, CLOCK_MONOTONIC};
  join(start(time_out, &realtime));
  join(start(time_out, &monotonic));
  CHECK_EQ(pthread_mutex_unlock(mutex), 0);
  struct timespec past = {0, 0};
  CHECK_EQ(pthread_mutex_clocklock(mutex, CLOCK_PROCESS_CPUTIME_ID, &past), EINVAL);
  CHECK_EQ(pthread_mutex_clocklock(mutex, CLOCK_MONOTONIC, &past), 0); /* free: taken */
  CHECK_EQ(pthread_mutex_trylock(mutex), EBUSY);
  CHECK_EQ(pthread_mutex_unlock(mutex), 0);
  CHECK_EQ(pthread_mutex_trylock(mutex), 0);
  CHECK_EQ(pthread_mutex_unlock(mutex), 0);
}

/* Locked by handed_over() alone. Each round a second thread is inside pthread_mutex_lock (it
 * said it was about to call it, then had 20 ms to get there) when the main thread unlocks, so
 * the statistics must show hand-overs, on any number of CPUs. */
static pthread_mutex_t handed = PTHREAD_MUTEX_INITIALIZER;
static atomic_int about_to_lock;

static void *lock_handed(void *unused) {
  (void)unused;
  atomic_store(&about_to_lock, 1);
  CHECK_EQ(pthread_mutex_lock(&handed), 0);
  CHECK_EQ(pthread_mutex_unlock(&handed), 0);
  return NULL;
}

static void handed_over(void) {
  enum { HANDS = 10 };
  for (int i = 0; i < HANDS; i++) {
    atomic_store(&about_to_lock, 0);
    CHECK_EQ(pthread_mutex_lock(&handed), 0);
    pthread_t waiter = start(lock_handed, NULL);
    while (!atomic_load(&about_to_lock)) sched_yield();
    struct timespec pause = {0, 20000000};
    CHECK_EQ(nanosleep(&pause, NULL), 0);
    CHECK_EQ(pthread_mutex_unlock(&handed), 0);
    join(waiter);
  }
  printf("handed mutex %p handed over %d times\n", (void *)&handed, HANDS);
}

static void *unlock_elsewhere(void *arg) {
  CHECK_EQ(pthread_mutex_unlock(arg), 0);
  return NULL;
}

int main(void) {
  say_preloaded();
  exclusion(&tallied);
  printf("tallied mutex %p acquired %ld times\n", (void *)&tallied, counter);

  /* Which implementation a normal mutex has: the harness checks this line. */
  CHECK_EQ(pthread_mutex_lock(&probed), 0);
  printf("normal mutexes are %s\n", glibc_owns(&probed) ? "glibc's" : "replaced");
  CHECK_EQ(pthread_mutex_unlock(&probed), 0);
  exclusion(&probed);
  timed_and_trylock(&probed);

  pthread_mutex_t plain;
  CHECK_EQ(pthread_mutex_init(&plain, NULL), 0);
  exclusion(&plain);
  timed_and_trylock(&plain);
  CHECK_EQ(pthread_mutex_destroy(&plain), 0);
  CHECK_EQ(pthread_mutex_init(&plain, NULL), 0); /* re-initialised after destroy */
  CHECK_EQ(pthread_mutex_lock(&plain), 0);
  /* A thread other than the locker may unlock a normal mutex (glibc allows it; programs do it). */
  join(start(unlock_elsewhere, &plain));
  CHECK_EQ(pthread_mutex_trylock(&plain), 0);
  CHECK_EQ(pthread_mutex_unlock(&plain), 0);
  CHECK_EQ(pthread_mutex_destroy(&plain), 0);

  pthread_mutexattr_t attr;
  int kinds[] = {PTHREAD_MUTEX_DEFAULT, PTHREAD_MUTEX_NORMAL, PTHREAD_MUTEX_ADAPTIVE_NP};
  for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
    CHECK_EQ(pthread_mutexattr_init(&attr), 0);
    CHECK_EQ(pthread_mutexattr_settype(&attr, kinds[k]), 0);
    pthread_mutex_t typed;
    CHECK_EQ(pthread_mutex_init(&typed, &attr), 0);
    CHECK_EQ(pthread_mutexattr_destroy(&attr), 0);
    exclusion(&typed);
    timed_and_trylock(&typed);
    CHECK_EQ(pthread_mutex_destroy(&typed), 0);
  }
  static pthread_mutex_t adaptive = PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP;
  exclusion(&adaptive);
  timed_and_trylock(&adaptive);
  handed_over();
  printf("ok\n");
  return 0;
}
