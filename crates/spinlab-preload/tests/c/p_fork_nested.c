/* fork, and many mutexes held at once, with statically initialised pthread mutexes. The
 * child gets every mutex in its state at fork: one the forking thread held it may release,
 * one another thread held stays held. One thread holds 64 mutexes, released in either order;
 * threads walk a chain of 64 hand over hand. */
#define _GNU_SOURCE
#include "preloaded.h"
#include <sys/wait.h>

enum { LOCKS = 64, MOST_WALKERS = 4, WALKS = 200 };

static pthread_mutex_t chain[LOCKS]; /* zero: PTHREAD_MUTEX_INITIALIZER */
static long visits[LOCKS];
static pthread_mutex_t held_by_main = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t held_by_other = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t unheld = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int go_on[2], holding[2];

static void *walk(void *unused) {
  (void)unused;
  for (int round = 0; round < WALKS; round++) {
    CHECK_EQ(pthread_mutex_lock(&chain[0]), 0);
    for (int i = 1; i < LOCKS; i++) {
      CHECK_EQ(pthread_mutex_lock(&chain[i]), 0);
      visits[i - 1]++;
      CHECK_EQ(pthread_mutex_unlock(&chain[i - 1]), 0);
    }
    visits[LOCKS - 1]++;
    CHECK_EQ(pthread_mutex_unlock(&chain[LOCKS - 1]), 0);
  }
  return NULL;
}

static void *all_busy(void *unused) {
  (void)unused;
  for (int i = 0; i < LOCKS; i++) CHECK_EQ(pthread_mutex_trylock(&chain[i]), EBUSY);
  return NULL;
}

static void nested(void) {
  for (int order = 0; order < 2; order++) {
    for (int i = 0; i < LOCKS; i++) CHECK_EQ(pthread_mutex_lock(&chain[i]), 0);
    join(start(all_busy, NULL));
    for (int i = 0; i < LOCKS; i++) CHECK_EQ(pthread_mutex_unlock(&chain[order ? i : LOCKS - 1 - i]), 0);
  }
  int walkers = cpus_at_most(MOST_WALKERS);
  pthread_t walker[MOST_WALKERS];
  for (int i = 0; i < walkers; i++) walker[i] = start(walk, NULL);
  for (int i = 0; i < walkers; i++) join(walker[i]);
  for (int i = 0; i < LOCKS; i++) CHECK_EQ(visits[i], walkers * WALKS);
}

static void *hold_until_told(void *unused) {
  (void)unused;
  char byte = 0;
  CHECK_EQ(pthread_mutex_lock(&held_by_other), 0);
  CHECK(write(holding[1], &byte, 1) == 1);
  CHECK(read(go_on[0], &byte, 1) == 1);
  CHECK_EQ(pthread_mutex_unlock(&held_by_other), 0);
  return NULL;
}

static int child(void) {
  CHECK_EQ(pthread_mutex_trylock(&held_by_other), EBUSY);
  CHECK_EQ(pthread_mutex_trylock(&held_by_main), EBUSY);
  CHECK_EQ(pthread_mutex_unlock(&held_by_main), 0);
  CHECK_EQ(pthread_mutex_lock(&held_by_main), 0);
  struct timespec deadline = in_ns(CLOCK_REALTIME, 1000000);
  int status;
  do status = pthread_cond_timedwait(&cond, &held_by_main, &deadline);
  while (status == 0);
  CHECK_EQ(status, ETIMEDOUT);
  CHECK_EQ(pthread_mutex_unlock(&held_by_main), 0);
  CHECK_EQ(pthread_mutex_trylock(&unheld), 0);
  CHECK_EQ(pthread_mutex_unlock(&unheld), 0);
  nested(); /* a thread in the child takes and releases many locks */
  return 0;
}

int main(void) {
  say_preloaded();
  nested();
  for (int i = 0; i < LOCKS; i++) visits[i] = 0;

  char byte = 0;
  CHECK(pipe(go_on) == 0 && pipe(holding) == 0);
  pthread_t other = start(hold_until_told, NULL);
  CHECK(read(holding[0], &byte, 1) == 1);
  CHECK_EQ(pthread_mutex_lock(&held_by_main), 0);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) _exit(child());
  int wstatus;
  CHECK(waitpid(pid, &wstatus, 0) == pid);
  CHECK(WIFEXITED(wstatus));
  CHECK_EQ(WEXITSTATUS(wstatus), 0);
  CHECK_EQ(pthread_mutex_trylock(&held_by_main), EBUSY); /* the child's release was its own */
  CHECK_EQ(pthread_mutex_unlock(&held_by_main), 0);
  CHECK(write(go_on[1], &byte, 1) == 1);
  join(other);
  printf("ok\n");
  return 0;
}
