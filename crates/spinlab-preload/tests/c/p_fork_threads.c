/* fork() in a multithreaded program, as programs do it: worker threads hammer a mutex and a
 * condition variable; the main thread takes the mutex, lets the workers queue (and sleep)
 * behind it, and forks while holding it, while the fork handlers of a library it links
 * (p_fork_early.c) hold a second mutex across the fork and release it in parent and child.
 * It holds both kinds of rwlock too, while workers and two more threads wait to write them.
 * The child has one thread: it must be able to release what it held, and then use every lock
 * and condition variable with threads of its own (exact counts), and fork again. A child that
 * hangs is killed by its alarm, and the parent sees the signal. */
#define _GNU_SOURCE
#include "preloaded.h"
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/wait.h>

/* At most one worker per CPU: the spin-only queue locks among the settings (ticket:pause)
 * serve one waiter per time slice once threads outnumber CPUs. */
enum { MOST_WORKERS = 4, CHILD_ROUNDS = 20000, FORKS = 3, CHILD_SECONDS = 30 };
static int workers;
/* Rounds of each of the child's workers: CHILD_ROUNDS, or P_FORK_CHILD_ROUNDS. The test asks
 * for fewer under the spin-only queue locks (which the registry calls fair: they hand over in
 * order): where other programs load the same CPUs, each of their hand-overs to a preempted
 * waiter waits out a time slice, and CHILD_ROUNDS of them can outlast the child's alarm. */
static long child_rounds = CHILD_ROUNDS;

static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
extern pthread_mutex_t early_mutex; /* p_fork_early.c */
#define around_fork early_mutex
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static pthread_rwlock_t rwlock = PTHREAD_RWLOCK_INITIALIZER;
static pthread_rwlock_t writers_first = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;
/* Written under the write lock of rwlock and of writers_first. */
static long written[2];
/* Whether the rwlocks are spinlab's: glibc's own can hang in a child forked while writers
 * wait (a waiting writer of the parent stays counted), so the rwlock part runs only with
 * spinlab's. */
static int use_rwlocks;
static long count, items, handed_over;
static int stop;
/* Set by the main thread while a child it forked runs (see parent_worker). */
static atomic_int child_running;

static void sleep_ns(long ns) {
  struct timespec pause = {ns / 1000000000, ns % 1000000000};
  CHECK_EQ(nanosleep(&pause, NULL), 0);
}

/* Round `round` of a worker: one of the two rwlocks, for writing every third round. */
static void take_rwlock(long round) {
  int which = round % 2;
  pthread_rwlock_t *rw = which ? &writers_first : &rwlock;
  if (round % 3 == 0) {
    CHECK_EQ(pthread_rwlock_wrlock(rw), 0);
    written[which]++;
  } else {
    CHECK_EQ(pthread_rwlock_rdlock(rw), 0);
  }
  CHECK_EQ(pthread_rwlock_unlock(rw), 0);
}

/* Until told to stop: the mutex, a short timed wait on the condition variable now and then
 * (so some workers sleep in it at the fork), and the atfork mutex. */
static void *parent_worker(void *unused) {
  (void)unused;
  for (long round = 0;; round++) {
    CHECK_EQ(pthread_mutex_lock(&mutex), 0);
    int done = stop;
    count++;
    if (round % 16 == 0) {
      struct timespec deadline = in_ns(CLOCK_REALTIME, 200000);
      int status = pthread_cond_timedwait(&cond, &mutex, &deadline);
      CHECK(status == 0 || status == ETIMEDOUT);
    }
    CHECK_EQ(pthread_mutex_unlock(&mutex), 0);
    CHECK_EQ(pthread_mutex_lock(&around_fork), 0);
    CHECK_EQ(pthread_mutex_unlock(&around_fork), 0);
    if (use_rwlocks) take_rwlock(round);
    if (done) return NULL;
    /* While a child runs, the parent's workers sleep: otherwise the two processes together
     * would have twice the CPUs' worth of threads on a lock, and a spin-only queue lock among
     * the settings (clh:pause) would hand it to preempted waiters for long enough to reach
     * the child's alarm. */
    while (atomic_load(&child_running)) sleep_ns(1000000);
  }
}

/* The child's threads: exact counts on both mutexes. */
static void *child_worker(void *unused) {
  (void)unused;
  for (long i = 0; i < child_rounds; i++) {
    CHECK_EQ(pthread_mutex_lock(&mutex), 0);
    count++;
    CHECK_EQ(pthread_mutex_unlock(&mutex), 0);
    CHECK_EQ(pthread_mutex_lock(&around_fork), 0);
    items++;
    CHECK_EQ(pthread_mutex_unlock(&around_fork), 0);
    if (use_rwlocks) take_rwlock(i);
  }
  return NULL;
}

/* Waits on the condition variable while `*value == unchanged`. The waits are timed: glibc's
 * own condition variable can send a child's signal to the waiter group of threads that exist
 * only in the parent, and its child then never wakes. */
static void wait_while(long *value, long unchanged) {
  while (*value == unchanged) {
    struct timespec deadline = in_ns(CLOCK_REALTIME, 10000000);
    int status = pthread_cond_timedwait(&cond, &mutex, &deadline);
    CHECK(status == 0 || status == ETIMEDOUT);
  }
}

static void *receive(void *unused) {
  (void)unused;
  CHECK_EQ(pthread_mutex_lock(&mutex), 0);
  wait_while(&handed_over, 0);
  handed_over++;
  CHECK_EQ(pthread_cond_broadcast(&cond), 0);
  CHECK_EQ(pthread_mutex_unlock(&mutex), 0);
  return NULL;
}

/* A writer of `rwlock` that queues while the forking thread holds it: it exists only in the
 * parent, and the child must not count it (a writer-preferring lock that kept it counted
 * would keep the child's readers out for ever). */
static void *queued_writer(void *rwlock) {
  CHECK_EQ(pthread_rwlock_wrlock(rwlock), 0);
  CHECK_EQ(pthread_rwlock_unlock(rwlock), 0);
  return NULL;
}

/* Takes (1) or releases (0) both rwlocks for writing, when they are in use. */
static void hold_rwlocks(int take) {
  if (!use_rwlocks) return;
  if (take) {
    CHECK_EQ(pthread_rwlock_wrlock(&rwlock), 0);
    CHECK_EQ(pthread_rwlock_wrlock(&writers_first), 0);
  } else {
    CHECK_EQ(pthread_rwlock_unlock(&writers_first), 0);
    CHECK_EQ(pthread_rwlock_unlock(&rwlock), 0);
  }
}

static int in_child(int generation) {
  alarm(CHILD_SECONDS);
  CHECK_EQ(pthread_mutex_unlock(&mutex), 0); /* held by the forking thread */
  if (use_rwlocks) {
    CHECK_EQ(pthread_rwlock_unlock(&rwlock), 0);
    CHECK_EQ(pthread_rwlock_unlock(&writers_first), 0);
    written[0] = written[1] = 0;
  }
  CHECK_EQ(pthread_mutex_lock(&mutex), 0);
  count = 0;
  handed_over = 0;
  CHECK_EQ(pthread_mutex_unlock(&mutex), 0);
  CHECK_EQ(pthread_mutex_lock(&around_fork), 0);
  items = 0;
  CHECK_EQ(pthread_mutex_unlock(&around_fork), 0);

  /* The hand-over through the condition variable first, then the workers: with both at once
   * the mutex would have workers + 2 threads on it, more than the CPUs, and a spin-only queue
   * lock among the settings (ticket:pause) would serve one waiter per time slice, long
   * enough to reach the alarm. */
  pthread_t receiver = start(receive, NULL);
  CHECK_EQ(pthread_mutex_lock(&mutex), 0);
  handed_over = 1;
  CHECK_EQ(pthread_cond_signal(&cond), 0);
  wait_while(&handed_over, 1);
  CHECK_EQ(pthread_mutex_unlock(&mutex), 0);
  join(receiver);
  pthread_t worker[MOST_WORKERS];
  for (int i = 0; i < workers; i++) worker[i] = start(child_worker, NULL);
  for (int i = 0; i < workers; i++) join(worker[i]);
  CHECK_EQ(count, workers * child_rounds);
  CHECK_EQ(items, workers * child_rounds);
  if (use_rwlocks) { /* rounds 0, 6, 12, ... write rwlock; 3, 9, 15, ... writers_first */
    CHECK_EQ(written[0], workers * ((child_rounds + 5) / 6));
    CHECK_EQ(written[1], workers * ((child_rounds + 2) / 6));
  }
  CHECK_EQ(handed_over, 2);

  if (generation == 1) { /* the child forks in turn, holding the locks */
    CHECK_EQ(pthread_mutex_lock(&mutex), 0);
    hold_rwlocks(1);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) _exit(in_child(2));
    hold_rwlocks(0);
    CHECK_EQ(pthread_mutex_unlock(&mutex), 0);
    int wstatus;
    CHECK(waitpid(pid, &wstatus, 0) == pid);
    CHECK(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0);
  }
  return 0;
}

int main(void) {
  say_preloaded();
  const char *rwlocks = preloaded_name("spinlab_preload_rwlock");
  use_rwlocks = strcmp(rwlocks, "none") != 0 && strcmp(rwlocks, "pthread") != 0;
  printf("rwlocks: %s\n", use_rwlocks ? "spinlab's, held across the forks" : "glibc's, left out");
  workers = cpus_at_most(MOST_WORKERS);
  const char *rounds = getenv("P_FORK_CHILD_ROUNDS");
  if (rounds) child_rounds = atol(rounds);
  CHECK(child_rounds > 0);
  pthread_t worker[MOST_WORKERS];
  for (int i = 0; i < workers; i++) worker[i] = start(parent_worker, NULL);
  for (int f = 0; f < FORKS; f++) {
    sleep_ns(20000000);
    CHECK_EQ(pthread_mutex_lock(&mutex), 0);
    hold_rwlocks(1);
    pthread_t writer[2] = {0, 0};
    if (use_rwlocks) {
      writer[0] = start(queued_writer, &rwlock);
      writer[1] = start(queued_writer, &writers_first);
    }
    sleep_ns(20000000); /* the workers and writers queue behind the held locks, and some sleep */
    atomic_store(&child_running, 1);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) _exit(in_child(1));
    hold_rwlocks(0);
    CHECK_EQ(pthread_mutex_unlock(&mutex), 0);
    if (use_rwlocks) {
      join(writer[0]);
      join(writer[1]);
    }
    int wstatus;
    CHECK(waitpid(pid, &wstatus, 0) == pid);
    atomic_store(&child_running, 0);
    if (WIFSIGNALED(wstatus)) {
      printf("fork %d: the child was killed by signal %d%s\n", f, WTERMSIG(wstatus),
             WTERMSIG(wstatus) == SIGALRM ? " (it hung)" : "");
      return 1;
    }
    CHECK(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0);
  }
  CHECK_EQ(pthread_mutex_lock(&mutex), 0);
  stop = 1;
  CHECK_EQ(pthread_cond_broadcast(&cond), 0);
  CHECK_EQ(pthread_mutex_unlock(&mutex), 0);
  for (int i = 0; i < workers; i++) join(worker[i]);
  CHECK(count > 0);
  printf("ok\n");
  return 0;
}
