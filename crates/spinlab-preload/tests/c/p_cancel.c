/* pthread_cancel of a thread blocked in pthread_cond_wait or pthread_cond_timedwait, as glibc
 * does it: the wait ends at once, the thread takes the mutex again, and its cleanup handlers
 * run holding it. Cancelled while asleep and while still in the spin phase, with cancellation
 * disabled (the wait goes on until signalled, and the request acts later), and beside another
 * waiter that must still be woken. The condition variable is destroyed after each case, which
 * waits for ever if a cancelled waiter is still counted inside it. A wait that pthread_cancel
 * does not end is caught by the alarm. */
#define _GNU_SOURCE
#include "preloaded.h"
#include <signal.h>

enum { SECONDS = 60 };

static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond;
static int waiting, signalled, returned, cleanups, held_in_cleanup;

static void sleep_ns(long ns) {
  struct timespec pause = {ns / 1000000000, ns % 1000000000};
  CHECK_EQ(nanosleep(&pause, NULL), 0);
}

/* Runs during cancellation: the mutex must be held again (by this thread: nobody else can
 * take it until this handler releases it). */
static void cleanup(void *unused) {
  (void)unused;
  held_in_cleanup += pthread_mutex_trylock(&mutex) == EBUSY;
  cleanups++;
  CHECK_EQ(pthread_mutex_unlock(&mutex), 0);
}

enum how { UNTIMED, TIMED };

static void *waiter(void *how) {
  CHECK_EQ(pthread_mutex_lock(&mutex), 0);
  pthread_cleanup_push(cleanup, NULL);
  waiting++;
  while (!signalled) {
    if ((enum how)(long)how == TIMED) {
      struct timespec far = in_ns(CLOCK_REALTIME, 3600LL * 1000000000);
      CHECK_EQ(pthread_cond_timedwait(&cond, &mutex, &far), 0);
    } else {
      CHECK_EQ(pthread_cond_wait(&cond, &mutex), 0);
    }
  }
  returned++;
  pthread_cleanup_pop(0);
  CHECK_EQ(pthread_mutex_unlock(&mutex), 0);
  return NULL;
}

/* Starts a waiter and returns once it is inside its wait (it released the mutex there). */
static pthread_t waiting_thread(enum how how) {
  int before;
  CHECK_EQ(pthread_mutex_lock(&mutex), 0);
  before = waiting;
  CHECK_EQ(pthread_mutex_unlock(&mutex), 0);
  pthread_t thread = start(waiter, (void *)(long)how);
  for (;;) {
    CHECK_EQ(pthread_mutex_lock(&mutex), 0);
    int in = waiting > before;
    CHECK_EQ(pthread_mutex_unlock(&mutex), 0);
    if (in) return thread;
    sched_yield();
  }
}

static void fresh(void) {
  CHECK_EQ(pthread_cond_init(&cond, NULL), 0);
  waiting = signalled = returned = cleanups = held_in_cleanup = 0;
}

static void cancelled(pthread_t thread) {
  CHECK_EQ(pthread_cancel(thread), 0);
  CHECK(join(thread) == PTHREAD_CANCELED);
}

/* Cancelled after `ns` inside the wait: 0 cancels in the spin phase (if the policy has one),
 * 50 ms while asleep. */
static void cancel_inside(enum how how, long ns) {
  fresh();
  pthread_t thread = waiting_thread(how);
  if (ns) sleep_ns(ns);
  cancelled(thread);
  CHECK_EQ(cleanups, 1);
  CHECK_EQ(held_in_cleanup, 1);
  CHECK_EQ(returned, 0);
  CHECK_EQ(pthread_mutex_trylock(&mutex), 0); /* the cleanup handler released it */
  CHECK_EQ(pthread_mutex_unlock(&mutex), 0);
  CHECK_EQ(pthread_cond_destroy(&cond), 0);
}

static void *waiter_not_cancellable(void *unused) {
  int old;
  CHECK_EQ(pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old), 0);
  waiter(unused);
  CHECK_EQ(pthread_setcancelstate(old, &old), 0);
  pthread_testcancel();
  return NULL; /* not reached: the request is pending */
}

static void cancel_while_disabled(void) {
  fresh();
  pthread_t thread = start(waiter_not_cancellable, (void *)(long)UNTIMED);
  for (;;) {
    CHECK_EQ(pthread_mutex_lock(&mutex), 0);
    int in = waiting;
    CHECK_EQ(pthread_mutex_unlock(&mutex), 0);
    if (in) break;
    sched_yield();
  }
  sleep_ns(50000000);
  CHECK_EQ(pthread_cancel(thread), 0);
  sleep_ns(50000000);
  CHECK_EQ(pthread_mutex_lock(&mutex), 0);
  CHECK_EQ(returned, 0); /* still waiting: cancellation is disabled */
  signalled = 1;
  CHECK_EQ(pthread_cond_signal(&cond), 0);
  CHECK_EQ(pthread_mutex_unlock(&mutex), 0);
  CHECK(join(thread) == PTHREAD_CANCELED);
  CHECK_EQ(returned, 1);
  CHECK_EQ(cleanups, 0);
  CHECK_EQ(pthread_cond_destroy(&cond), 0);
}

/* One of two waiters is cancelled; a signal must still wake the other. */
static void the_other_waiter_still_wakes(void) {
  fresh();
  pthread_t first = waiting_thread(UNTIMED);
  pthread_t second = waiting_thread(UNTIMED);
  sleep_ns(50000000);
  cancelled(first);
  CHECK_EQ(pthread_mutex_lock(&mutex), 0);
  signalled = 1;
  CHECK_EQ(pthread_cond_signal(&cond), 0);
  CHECK_EQ(pthread_mutex_unlock(&mutex), 0);
  CHECK(join(second) == NULL);
  CHECK_EQ(returned, 1);
  CHECK_EQ(cleanups, 1);
  CHECK_EQ(pthread_cond_destroy(&cond), 0);
}

int main(void) {
  say_preloaded();
  alarm(SECONDS);
  for (int round = 0; round < 5; round++) {
    cancel_inside(UNTIMED, 0);
    cancel_inside(TIMED, 0);
  }
  cancel_inside(UNTIMED, 50000000);
  cancel_inside(TIMED, 50000000);
  cancel_while_disabled();
  the_other_waiter_still_wakes();
  printf("ok\n");
  return 0;
}
