/* Locks made in different functions, for the lock profiler: a hot mutex that four threads
 * contend, a cold one locked a few times, an array of mutexes made in one loop and each locked
 * a few times, a statically initialised mutex that one thread is made to wait for (its site is
 * that first contended acquisition), a condition variable with timed waits that time out and
 * waits that are signalled, and a rwlock with readers and writers. The program prints its own
 * counts, which the profile must match exactly. Then a forked child locks the cold mutex and
 * exits, and another forked child locks it and execs this program again ("exec-child"), which
 * makes and locks a mutex of its own: each writes its own profile. "nothing" locks nothing.
 * Each init call's line carries a "site:" comment, which the test finds its line by. */
#define _GNU_SOURCE
#include "preloaded.h"
#include <stdatomic.h>
#include <string.h>
#include <sys/wait.h>

enum { THREADS = 4, HOT_ROUNDS = 20000, COLD_ROUNDS = 3, ARRAY = 1000, PER_ELEMENT = 5 };
enum { TIMEOUTS = 3, SIGNALLED = 10, READERS = 2, READS = 5000, WRITERS = 2, WRITES = 3000 };
enum { FORK_CHILD_ROUNDS = 7, EXEC_CHILD_BEFORE = 2, EXEC_CHILD_ROUNDS = 11 };

static pthread_mutex_t hot, cold, array[ARRAY], tick_lock;
static pthread_mutex_t waited_for = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ticking;
static pthread_rwlock_t table;
static long hot_count, table_value;
static atomic_int about_to_lock;
static int ticks, waits, timed_waits, timed_out;

__attribute__((noinline)) static void make_hot(void) {
  CHECK_EQ(pthread_mutex_init(&hot, NULL), 0); /* site: hot */
}

__attribute__((noinline)) static void make_cold(void) {
  CHECK_EQ(pthread_mutex_init(&cold, NULL), 0); /* site: cold */
}

__attribute__((noinline)) static void make_array(void) {
  for (int i = 0; i < ARRAY; i++) CHECK_EQ(pthread_mutex_init(&array[i], NULL), 0); /* site: array */
}

__attribute__((noinline)) static void make_cond(void) {
  CHECK_EQ(pthread_mutex_init(&tick_lock, NULL), 0);
  CHECK_EQ(pthread_cond_init(&ticking, NULL), 0); /* site: cond */
}

__attribute__((noinline)) static void make_table(void) {
  CHECK_EQ(pthread_rwlock_init(&table, NULL), 0); /* site: rwlock */
}

static void *hammer_hot(void *arg) {
  (void)arg;
  for (int i = 0; i < HOT_ROUNDS; i++) {
    CHECK_EQ(pthread_mutex_lock(&hot), 0);
    long seen = hot_count;
    if (i % 512 == 0) sched_yield(); /* hold it a while now and then: the others contend */
    hot_count = seen + 1;
    CHECK_EQ(pthread_mutex_unlock(&hot), 0);
  }
  return NULL;
}

__attribute__((noinline)) static void *wait_for_static(void *arg) {
  (void)arg;
  atomic_store(&about_to_lock, 1);
  CHECK_EQ(pthread_mutex_lock(&waited_for), 0); /* site: contended */
  CHECK_EQ(pthread_mutex_unlock(&waited_for), 0);
  return NULL;
}

static void *tick(void *arg) {
  (void)arg;
  for (int i = 0; i < SIGNALLED; i++) {
    CHECK_EQ(pthread_mutex_lock(&tick_lock), 0);
    ticks++;
    CHECK_EQ(pthread_cond_signal(&ticking), 0);
    CHECK_EQ(pthread_mutex_unlock(&tick_lock), 0);
    usleep(1000);
  }
  return NULL;
}

static void *read_table(void *arg) {
  (void)arg;
  for (int i = 0; i < READS; i++) {
    CHECK_EQ(pthread_rwlock_rdlock(&table), 0);
    CHECK(table_value >= 0);
    CHECK_EQ(pthread_rwlock_unlock(&table), 0);
  }
  return NULL;
}

static void *write_table(void *arg) {
  (void)arg;
  for (int i = 0; i < WRITES; i++) {
    CHECK_EQ(pthread_rwlock_wrlock(&table), 0);
    table_value++;
    CHECK_EQ(pthread_rwlock_unlock(&table), 0);
  }
  return NULL;
}

/* Timed waits nobody signals (each times out), then waits for each of `tick`'s signals. */
static void condition_waits(void) {
  CHECK_EQ(pthread_mutex_lock(&tick_lock), 0);
  for (int i = 0; i < TIMEOUTS; i++) {
    struct timespec soon = in_ns(CLOCK_REALTIME, 1000000);
    int status;
    do {
      status = pthread_cond_timedwait(&ticking, &tick_lock, &soon);
      waits++, timed_waits++;
    } while (status == 0);
    CHECK_EQ(status, ETIMEDOUT);
    timed_out++;
  }
  pthread_t ticker = start(tick, NULL);
  int seen = 0;
  while (seen < SIGNALLED) {
    while (ticks == seen) {
      CHECK_EQ(pthread_cond_wait(&ticking, &tick_lock), 0);
      waits++;
    }
    seen = ticks;
  }
  CHECK_EQ(pthread_mutex_unlock(&tick_lock), 0);
  join(ticker);
}

static void lock_cold(int times) {
  for (int i = 0; i < times; i++) {
    CHECK_EQ(pthread_mutex_lock(&cold), 0);
    CHECK_EQ(pthread_mutex_unlock(&cold), 0);
  }
}

__attribute__((noinline)) static void exec_child_locks(void) {
  pthread_mutex_t own;
  CHECK_EQ(pthread_mutex_init(&own, NULL), 0); /* site: exec-child */
  for (int i = 0; i < EXEC_CHILD_ROUNDS; i++) {
    CHECK_EQ(pthread_mutex_lock(&own), 0);
    CHECK_EQ(pthread_mutex_unlock(&own), 0);
  }
  CHECK_EQ(pthread_mutex_destroy(&own), 0);
}

static void wait_for(pid_t child) {
  int status;
  CHECK_EQ(waitpid(child, &status, 0), child);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "nothing") == 0) return 0;
  if (argc > 1 && strcmp(argv[1], "exec-child") == 0) {
    exec_child_locks();
    printf("exec child %d locked its mutex %d times\n", (int)getpid(), EXEC_CHILD_ROUNDS);
    return 0;
  }
  say_preloaded();
  make_hot();
  make_cold();
  make_array();
  make_cond();
  make_table();

  pthread_t thread[THREADS + READERS + WRITERS];
  for (int i = 0; i < THREADS; i++) thread[i] = start(hammer_hot, NULL);
  for (int i = 0; i < THREADS; i++) join(thread[i]);
  CHECK_EQ(hot_count, (long)THREADS * HOT_ROUNDS);
  printf("hot mutex acquired %ld times\n", hot_count);

  lock_cold(COLD_ROUNDS);
  printf("cold mutex acquired %d times\n", COLD_ROUNDS);

  for (int k = 0; k < PER_ELEMENT; k++) {
    for (int i = 0; i < ARRAY; i++) {
      CHECK_EQ(pthread_mutex_lock(&array[i]), 0);
      CHECK_EQ(pthread_mutex_unlock(&array[i]), 0);
    }
  }
  printf("array of %d mutexes acquired %d times\n", ARRAY, ARRAY * PER_ELEMENT);

  CHECK_EQ(pthread_mutex_lock(&waited_for), 0);
  pthread_t waiter = start(wait_for_static, NULL);
  while (!atomic_load(&about_to_lock)) sched_yield();
  usleep(20000); /* the waiter is inside pthread_mutex_lock by now */
  CHECK_EQ(pthread_mutex_unlock(&waited_for), 0);
  join(waiter);
  printf("static mutex acquired 2 times\n");

  condition_waits();
  printf("cond waited %d times, %d timed, %d timed out\n", waits, timed_waits, timed_out);

  for (int i = 0; i < READERS; i++) thread[i] = start(read_table, NULL);
  for (int i = 0; i < WRITERS; i++) thread[READERS + i] = start(write_table, NULL);
  for (int i = 0; i < READERS + WRITERS; i++) join(thread[i]);
  printf("rwlock read %d times, written %d times\n", READERS * READS, WRITERS * WRITES);
  fflush(stdout);

  pid_t forked = fork();
  CHECK(forked >= 0);
  if (forked == 0) {
    lock_cold(FORK_CHILD_ROUNDS);
    printf("fork child %d locked the cold mutex %d times\n", (int)getpid(), FORK_CHILD_ROUNDS);
    exit(0);
  }
  wait_for(forked);
  pid_t execed = fork();
  CHECK(execed >= 0);
  if (execed == 0) {
    lock_cold(EXEC_CHILD_BEFORE);
    printf("exec child %d locked the cold mutex %d times before its exec\n", (int)getpid(), EXEC_CHILD_BEFORE);
    fflush(stdout);
    char *child_argv[] = {argv[0], "exec-child", NULL};
    execv("/proc/self/exe", child_argv);
    CHECK(!"execv failed");
  }
  wait_for(execed);
  printf("parent %d\n", (int)getpid());
  printf("ok\n");
  return 0;
}
