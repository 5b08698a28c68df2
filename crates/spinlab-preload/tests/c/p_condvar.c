/* pthread condition variables as programs use them: a statically initialised one and one on
 * CLOCK_MONOTONIC, a bounded buffer between producers and consumers, timed waits on each
 * clock, a condition variable freed right after the broadcast that woke its waiters, waits
 * with mutexes glibc keeps (recursive, error-checking), and a waiter cancelled. */
#define _GNU_SOURCE
#include "preloaded.h"

enum { SLOTS = 4, ITEMS = 2000, PRODUCERS = 2, CONSUMERS = 2 };

struct queue {
  pthread_mutex_t mutex;
  pthread_cond_t not_empty, not_full;
  long items[SLOTS];
  int head, count, producers_done;
  long sum;
};

static struct queue statically = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER,
                                  {0}, 0, 0, 0, 0};

static void *produce(void *arg) {
  struct queue *q = arg;
  for (long item = 1; item <= ITEMS; item++) {
    CHECK_EQ(pthread_mutex_lock(&q->mutex), 0);
    while (q->count == SLOTS) CHECK_EQ(pthread_cond_wait(&q->not_full, &q->mutex), 0);
    q->items[(q->head + q->count) % SLOTS] = item;
    q->count++;
    CHECK_EQ(pthread_mutex_unlock(&q->mutex), 0);
    CHECK_EQ(pthread_cond_signal(&q->not_empty), 0);
  }
  return NULL;
}

static void *consume(void *arg) {
  struct queue *q = arg;
  CHECK_EQ(pthread_mutex_lock(&q->mutex), 0);
  for (;;) {
    while (q->count == 0 && !q->producers_done) CHECK_EQ(pthread_cond_wait(&q->not_empty, &q->mutex), 0);
    if (q->count == 0) break;
    q->sum += q->items[q->head];
    q->head = (q->head + 1) % SLOTS;
    q->count--;
    CHECK_EQ(pthread_cond_signal(&q->not_full), 0);
  }
  CHECK_EQ(pthread_mutex_unlock(&q->mutex), 0);
  return NULL;
}

static void pass_items(struct queue *q) {
  pthread_t producers[PRODUCERS], consumers[CONSUMERS];
  for (int i = 0; i < CONSUMERS; i++) consumers[i] = start(consume, q);
  for (int i = 0; i < PRODUCERS; i++) producers[i] = start(produce, q);
  for (int i = 0; i < PRODUCERS; i++) join(producers[i]);
  CHECK_EQ(pthread_mutex_lock(&q->mutex), 0);
  q->producers_done = 1;
  CHECK_EQ(pthread_mutex_unlock(&q->mutex), 0);
  CHECK_EQ(pthread_cond_broadcast(&q->not_empty), 0);
  for (int i = 0; i < CONSUMERS; i++) join(consumers[i]);
  CHECK_EQ(q->sum, (long)PRODUCERS * ITEMS * (ITEMS + 1) / 2);
}

static void *must_be_held(void *arg) {
  CHECK_EQ(pthread_mutex_trylock(arg), EBUSY);
  return NULL;
}

/* A wait nobody signals times out on `clock`, never early, with the mutex held again.
 * `attribute_clock`: the clock of the condition's attribute, for pthread_cond_timedwait. */
static void time_out(pthread_cond_t *cond, pthread_mutex_t *mutex, clockid_t attribute_clock) {
  clockid_t clocks[] = {CLOCK_REALTIME, CLOCK_MONOTONIC};
  CHECK_EQ(pthread_mutex_lock(mutex), 0);
  for (int timed = 0; timed < 3; timed++) {
    clockid_t clock = timed == 2 ? attribute_clock : clocks[timed];
    struct timespec deadline = in_ns(clock, 2000000);
    int status;
    do { /* a spurious wake-up returns 0 before the deadline: wait again */
      status = timed == 2 ? pthread_cond_timedwait(cond, mutex, &deadline)
                          : pthread_cond_clockwait(cond, mutex, clock, &deadline);
    } while (status == 0);
    CHECK_EQ(status, ETIMEDOUT);
    CHECK(reached(clock, deadline));
    join(start(must_be_held, mutex));
  }
  struct timespec bad = {0, -1}, past = {0, 0};
  CHECK_EQ(pthread_cond_timedwait(cond, mutex, &bad), EINVAL);
  CHECK_EQ(pthread_cond_clockwait(cond, mutex, CLOCK_THREAD_CPUTIME_ID, &past), EINVAL);
  join(start(must_be_held, mutex));
  CHECK_EQ(pthread_mutex_unlock(mutex), 0);
}

/* POSIX lets a program destroy a condition variable as soon as the threads blocked on it
 * have been woken, and free it: destroy must wait for them to finish leaving the wait. */
struct rendezvous {
  pthread_mutex_t *mutex;
  pthread_cond_t *cond;
  int *arrived, *released;
};

static void *wait_for_release(void *arg) {
  struct rendezvous *r = arg;
  CHECK_EQ(pthread_mutex_lock(r->mutex), 0);
  (*r->arrived)++;
  while (!*r->released) CHECK_EQ(pthread_cond_wait(r->cond, r->mutex), 0);
  CHECK_EQ(pthread_mutex_unlock(r->mutex), 0);
  return NULL;
}

static void destroy_after_broadcast(void) {
  for (int round = 0; round < 200; round++) {
    pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t *cond = malloc(sizeof *cond);
    CHECK(cond != NULL);
    CHECK_EQ(pthread_cond_init(cond, NULL), 0);
    int arrived = 0, released = 0;
    struct rendezvous r = {&mutex, cond, &arrived, &released};
    pthread_t waiters[2] = {start(wait_for_release, &r), start(wait_for_release, &r)};
    for (;;) {
      CHECK_EQ(pthread_mutex_lock(&mutex), 0);
      int all = arrived == 2;
      if (all) released = 1;
      CHECK_EQ(pthread_mutex_unlock(&mutex), 0);
      if (all) break;
      sched_yield();
    }
    CHECK_EQ(pthread_cond_broadcast(cond), 0);
    CHECK_EQ(pthread_cond_destroy(cond), 0);
    memset(cond, 0xa5, sizeof *cond); /* a waiter still inside would now misbehave */
    free(cond);
    join(waiters[0]);
    join(waiters[1]);
  }
}

/* Condition waits with mutexes glibc keeps. */
static pthread_mutex_t recursive = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static pthread_cond_t recursive_cond = PTHREAD_COND_INITIALIZER;
static int recursive_flag;

static void *set_recursive_flag(void *unused) {
  (void)unused;
  CHECK_EQ(pthread_mutex_lock(&recursive), 0);
  recursive_flag = 1;
  CHECK_EQ(pthread_mutex_unlock(&recursive), 0);
  CHECK_EQ(pthread_cond_signal(&recursive_cond), 0);
  return NULL;
}

static void with_mutexes_glibc_keeps(void) {
  CHECK_EQ(pthread_mutex_lock(&recursive), 0);
  CHECK(glibc_owns(&recursive));
  pthread_t setter = start(set_recursive_flag, NULL);
  while (!recursive_flag) CHECK_EQ(pthread_cond_wait(&recursive_cond, &recursive), 0);
  CHECK(glibc_owns(&recursive)); /* relocked by glibc's own lock */
  CHECK_EQ(pthread_mutex_unlock(&recursive), 0);
  join(setter);

  pthread_mutexattr_t attr;
  pthread_mutex_t checking;
  CHECK_EQ(pthread_mutexattr_init(&attr), 0);
  CHECK_EQ(pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ERRORCHECK), 0);
  CHECK_EQ(pthread_mutex_init(&checking, &attr), 0);
  struct timespec soon = in_ns(CLOCK_REALTIME, 1000000);
  /* Waiting with an error-checking mutex the thread does not hold: glibc's EPERM. */
  CHECK_EQ(pthread_cond_timedwait(&recursive_cond, &checking, &soon), EPERM);
  CHECK_EQ(pthread_cond_wait(&recursive_cond, &checking), EPERM);
  CHECK_EQ(pthread_mutex_lock(&checking), 0);
  int status;
  do status = pthread_cond_timedwait(&recursive_cond, &checking, &soon);
  while (status == 0);
  CHECK_EQ(status, ETIMEDOUT);
  CHECK_EQ(pthread_mutex_unlock(&checking), 0);
  CHECK_EQ(pthread_mutex_destroy(&checking), 0);
  CHECK_EQ(pthread_mutexattr_destroy(&attr), 0);
}

/* Cancelling a thread that waits on a condition variable: the thread acts on the request
 * with the mutex held again, so its cleanup handler can release it. The canceller keeps
 * broadcasting until the cleanup has run, so this case checks the cleanup alone; p_cancel.c
 * checks that the request by itself ends a blocked wait. */
static pthread_mutex_t cancel_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cancel_cond = PTHREAD_COND_INITIALIZER;
static int cancel_waiting, cleaned_up;

static void release_on_cancel(void *unused) {
  (void)unused;
  __atomic_store_n(&cleaned_up, 1, __ATOMIC_RELEASE);
  CHECK_EQ(pthread_mutex_unlock(&cancel_mutex), 0); /* held again: this succeeds */
}

static void *wait_forever(void *unused) {
  (void)unused;
  CHECK_EQ(pthread_mutex_lock(&cancel_mutex), 0);
  pthread_cleanup_push(release_on_cancel, NULL);
  cancel_waiting = 1;
  for (;;) pthread_cond_wait(&cancel_cond, &cancel_mutex);
  pthread_cleanup_pop(1);
  return NULL;
}

static void cancel_a_waiter(void) {
  pthread_t waiter = start(wait_forever, NULL);
  for (int waiting = 0; !waiting; sched_yield()) {
    CHECK_EQ(pthread_mutex_lock(&cancel_mutex), 0);
    waiting = cancel_waiting;
    CHECK_EQ(pthread_mutex_unlock(&cancel_mutex), 0);
  }
  CHECK_EQ(pthread_cancel(waiter), 0);
  while (!__atomic_load_n(&cleaned_up, __ATOMIC_ACQUIRE)) {
    CHECK_EQ(pthread_cond_broadcast(&cancel_cond), 0);
    sched_yield();
  }
  CHECK(join(waiter) == PTHREAD_CANCELED);
  CHECK_EQ(pthread_mutex_trylock(&cancel_mutex), 0);
  CHECK_EQ(pthread_mutex_unlock(&cancel_mutex), 0);
}

int main(void) {
  say_preloaded();
  pass_items(&statically);
  time_out(&statically.not_empty, &statically.mutex, CLOCK_REALTIME);

  struct queue monotonic = {.head = 0, .count = 0, .producers_done = 0, .sum = 0};
  pthread_condattr_t attr;
  CHECK_EQ(pthread_condattr_init(&attr), 0);
  CHECK_EQ(pthread_condattr_setclock(&attr, CLOCK_MONOTONIC), 0);
  CHECK_EQ(pthread_mutex_init(&monotonic.mutex, NULL), 0);
  CHECK_EQ(pthread_cond_init(&monotonic.not_empty, &attr), 0);
  CHECK_EQ(pthread_cond_init(&monotonic.not_full, &attr), 0);
  CHECK_EQ(pthread_condattr_destroy(&attr), 0);
  pass_items(&monotonic);
  time_out(&monotonic.not_empty, &monotonic.mutex, CLOCK_MONOTONIC);
  CHECK_EQ(pthread_cond_destroy(&monotonic.not_empty), 0);
  CHECK_EQ(pthread_cond_destroy(&monotonic.not_full), 0);
  CHECK_EQ(pthread_mutex_destroy(&monotonic.mutex), 0);

  destroy_after_broadcast();
  with_mutexes_glibc_keeps();
  cancel_a_waiter();
  printf("ok\n");
  return 0;
}
