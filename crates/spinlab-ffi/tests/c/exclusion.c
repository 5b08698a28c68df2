/* Every mutex the library names (or those named on the command line): mutual exclusion with
 * a non-atomic counter, trylock, timed locks on both clocks, and the status codes of the
 * calls that must fail. */
#define _GNU_SOURCE
#include "check.h"
#include <spinlab.h>

enum { MOST_THREADS = 4, ROUNDS = 2000 };

struct shared {
  spinlab_mutex_t mutex;
  long counter;
};

static void *hammer(void *arg) {
  struct shared *shared = arg;
  for (int i = 0; i < ROUNDS; i++) {
    CHECK_EQ(spinlab_mutex_lock(&shared->mutex), SPINLAB_OK);
    long seen = shared->counter;
    /* Giving the CPU away inside the critical section makes a second thread inside it all
     * but certain to overwrite an update. */
    if (i % 128 == 0) sched_yield();
    shared->counter = seen + 1;
    CHECK_EQ(spinlab_mutex_unlock(&shared->mutex), SPINLAB_OK);
  }
  return NULL;
}

struct timed {
  spinlab_mutex_t *mutex;
  clockid_t clock;
};

/* Runs while the main thread holds the mutex. */
static void *time_out(void *arg) {
  struct timed *timed = arg;
  CHECK_EQ(spinlab_mutex_trylock(timed->mutex), SPINLAB_BUSY);
  struct timespec deadline = in_ns(timed->clock, 2000000);
  CHECK_EQ(spinlab_mutex_clocklock(timed->mutex, timed->clock, &deadline), SPINLAB_TIMEDOUT);
  CHECK(reached(timed->clock, deadline)); /* never before the deadline */
  deadline = in_ns(CLOCK_REALTIME, 1000000);
  CHECK_EQ(spinlab_mutex_timedlock(timed->mutex, &deadline), SPINLAB_TIMEDOUT);
  CHECK(reached(CLOCK_REALTIME, deadline));
  return NULL;
}

static void test_lock(const char *name) {
  struct shared shared = {.counter = 0};
  CHECK_EQ(spinlab_mutex_init(&shared.mutex, name), SPINLAB_OK);
  CHECK(strcmp(spinlab_mutex_name(&shared.mutex), name) == 0);

  int threads = cpus_at_most(MOST_THREADS);
  pthread_t thread[MOST_THREADS];
  for (int i = 0; i < threads; i++) thread[i] = start(hammer, &shared);
  for (int i = 0; i < threads; i++) join(thread[i]);
  CHECK_EQ(shared.counter, threads * ROUNDS);

  CHECK_EQ(spinlab_mutex_lock(&shared.mutex), SPINLAB_OK);
  CHECK_EQ(spinlab_mutex_destroy(&shared.mutex), SPINLAB_BUSY);
  struct timed monotonic = {&shared.mutex, CLOCK_MONOTONIC}, realtime = {&shared.mutex, CLOCK_REALTIME};
  join(start(time_out, &monotonic));
  join(start(time_out, &realtime));
  CHECK_EQ(spinlab_mutex_unlock(&shared.mutex), SPINLAB_OK);

  /* A free lock is taken whatever the deadline; bad arguments are refused first. */
  struct timespec past = {0, 0}, bad = {0, 1000000000L};
  CHECK_EQ(spinlab_mutex_clocklock(&shared.mutex, CLOCK_PROCESS_CPUTIME_ID, &past), SPINLAB_INVALID);
  CHECK_EQ(spinlab_mutex_timedlock(&shared.mutex, &bad), SPINLAB_INVALID);
  CHECK_EQ(spinlab_mutex_timedlock(&shared.mutex, &past), SPINLAB_OK);
  CHECK_EQ(spinlab_mutex_unlock(&shared.mutex), SPINLAB_OK);
  CHECK_EQ(spinlab_mutex_destroy(&shared.mutex), SPINLAB_OK);
}

int main(int argc, char **argv) {
  if (argc > 1) {
    for (int i = 1; i < argc; i++) test_lock(argv[i]);
    printf("tested %d locks\n", argc - 1);
    return 0;
  }
  size_t count = spinlab_list(SPINLAB_KIND_MUTEX, NULL, 0);
  CHECK(count > 0);
  const char **names = calloc(count, sizeof *names);
  CHECK(names != NULL);
  CHECK_EQ(spinlab_list(SPINLAB_KIND_MUTEX, names, count), count);
  size_t tested = 0;
  for (size_t i = 0; i < count; i++) {
    int status = spinlab_check(SPINLAB_KIND_MUTEX, names[i]);
    if (status == SPINLAB_UNAVAILABLE) {
      spinlab_mutex_t mutex;
      CHECK_EQ(spinlab_mutex_init(&mutex, names[i]), SPINLAB_UNAVAILABLE);
      printf("unavailable here: %s\n", names[i]);
      continue;
    }
    CHECK_EQ(status, SPINLAB_OK);
    test_lock(names[i]);
    tested++;
  }
  free(names);

  spinlab_mutex_t mutex;
  CHECK_EQ(spinlab_mutex_init(&mutex, NULL), SPINLAB_OK);
  CHECK(strcmp(spinlab_mutex_name(&mutex), "adaptive:pause-yield-park") == 0);
  CHECK_EQ(spinlab_mutex_destroy(&mutex), SPINLAB_OK);
  CHECK_EQ(spinlab_mutex_init(&mutex, "ttas:sleepy"), SPINLAB_UNKNOWN_NAME);
  CHECK_EQ(spinlab_check(SPINLAB_KIND_MUTEX, "ttas:sleepy"), SPINLAB_UNKNOWN_NAME);
  CHECK_EQ(spinlab_mutex_init(NULL, NULL), SPINLAB_INVALID);
  CHECK(strstr(spinlab_strerror(SPINLAB_UNKNOWN_NAME), "unknown name") != NULL);
  printf("tested %zu locks\n", tested);
  return 0;
}
