/* C11 <threads.h> waiting as a standard C program uses it: mtx_t of each type (exact count
 * from threads made with thrd_create, trylock, timed lock on TIME_UTC, recursion), cnd_t
 * (a bounded buffer with an exact item count, a broadcast that must wake every waiter, a
 * timed wait), and call_once (eight threads, one initialiser run, every caller returning
 * after it finished; a child forked while another thread runs an initialiser runs its own).
 * The same program runs without the preload library, where glibc must pass it too. */
#define _GNU_SOURCE
#include "preloaded.h"
#include <stdatomic.h>
#include <sys/wait.h>
#include <threads.h>

enum { MOST_THREADS = 4, ROUNDS = 5000, ITEMS = 20000, SLOTS = 4, BROADCAST_WAITERS = 4, ONCE_CALLERS = 8 };

static thrd_t spawn(thrd_start_t body, void *arg) {
  thrd_t thread;
  CHECK_EQ(thrd_create(&thread, body, arg), thrd_success);
  return thread;
}

static int finish(thrd_t thread) {
  int result;
  CHECK_EQ(thrd_join(thread, &result), thrd_success);
  return result;
}

/* `TIME_UTC`'s time `ns` nanoseconds from now: C11's deadlines are on it, which glibc
 * reads as CLOCK_REALTIME (so `reached(CLOCK_REALTIME, …)` checks them). */
static struct timespec utc_in_ns(long ns) {
  struct timespec t;
  CHECK_EQ(timespec_get(&t, TIME_UTC), TIME_UTC);
  t.tv_nsec += ns;
  t.tv_sec += t.tv_nsec / 1000000000L;
  t.tv_nsec %= 1000000000L;
  return t;
}

/* Whether glibc locked `mutex` (held by the calling thread), read from a copy of its bytes as
 * the pthread_mutex_t it is laid out as. */
static int glibc_owns_mtx(mtx_t *mutex) {
  pthread_mutex_t bytes;
  _Static_assert(sizeof bytes == sizeof *mutex, "mtx_t is laid out as pthread_mutex_t");
  memcpy(&bytes, mutex, sizeof bytes);
  return glibc_owns(&bytes);
}

/* ---- mutexes ---- */

/* Locked by exclusion() alone, so the statistics must count exactly what it reports. */
static mtx_t tallied;
static long counter;

static int hammer(void *arg) {
  mtx_t *mutex = arg;
  for (int i = 0; i < ROUNDS; i++) {
    CHECK_EQ(mtx_lock(mutex), thrd_success);
    long seen = counter;
    if (i % 128 == 0) thrd_yield(); /* a second thread inside would lose an update */
    counter = seen + 1;
    CHECK_EQ(mtx_unlock(mutex), thrd_success);
  }
  return 0;
}

static long exclusion(mtx_t *mutex) {
  int threads = cpus_at_most(MOST_THREADS);
  thrd_t thread[MOST_THREADS];
  counter = 0;
  for (int i = 0; i < threads; i++) thread[i] = spawn(hammer, mutex);
  for (int i = 0; i < threads; i++) finish(thread[i]);
  CHECK_EQ(counter, (long)threads * ROUNDS);
  return counter;
}

static int busy_and_timing_out(void *arg) { /* while the main thread holds the mutex */
  mtx_t *mutex = arg;
  CHECK_EQ(mtx_trylock(mutex), thrd_busy);
  struct timespec deadline = utc_in_ns(2000000);
  CHECK_EQ(mtx_timedlock(mutex, &deadline), thrd_timedout);
  CHECK(reached(CLOCK_REALTIME, deadline)); /* never early */
  return 0;
}

static int take_and_release(void *arg) {
  mtx_t *mutex = arg;
  CHECK_EQ(mtx_lock(mutex), thrd_success);
  CHECK_EQ(mtx_unlock(mutex), thrd_success);
  return 0;
}

static void trylock_and_timed(mtx_t *mutex) {
  CHECK_EQ(mtx_lock(mutex), thrd_success);
  finish(spawn(busy_and_timing_out, mutex));
  CHECK_EQ(mtx_unlock(mutex), thrd_success);
  struct timespec deadline = utc_in_ns(2000000);
  CHECK_EQ(mtx_timedlock(mutex, &deadline), thrd_success); /* free: taken */
  CHECK_EQ(mtx_unlock(mutex), thrd_success);
  struct timespec past = {0, 0};
  CHECK_EQ(mtx_timedlock(mutex, &past), thrd_success); /* free: taken whatever the deadline */
  CHECK_EQ(mtx_unlock(mutex), thrd_success);
  CHECK_EQ(mtx_trylock(mutex), thrd_success);
  CHECK_EQ(mtx_unlock(mutex), thrd_success);
}

static void recursion(int type) {
  mtx_t mutex;
  CHECK_EQ(mtx_init(&mutex, type), thrd_success);
  CHECK_EQ(mtx_lock(&mutex), thrd_success);
  CHECK_EQ(mtx_lock(&mutex), thrd_success);
  CHECK_EQ(mtx_trylock(&mutex), thrd_success);
  CHECK(glibc_owns_mtx(&mutex)); /* recursive mutexes stay glibc's */
  finish(spawn(busy_and_timing_out, &mutex));
  CHECK_EQ(mtx_unlock(&mutex), thrd_success);
  CHECK_EQ(mtx_unlock(&mutex), thrd_success);
  finish(spawn(busy_and_timing_out, &mutex)); /* still held once */
  CHECK_EQ(mtx_unlock(&mutex), thrd_success);
  finish(spawn(take_and_release, &mutex)); /* free */
  mtx_destroy(&mutex);
}

static void mutexes(void) {
  CHECK_EQ(mtx_init(&tallied, mtx_plain), thrd_success);
  long acquired = exclusion(&tallied);
  printf("tallied mtx %p acquired %ld times\n", (void *)&tallied, acquired);
  mtx_destroy(&tallied);

  /* Which implementation a plain mtx_t has: the harness checks this line. */
  mtx_t probed;
  CHECK_EQ(mtx_init(&probed, mtx_plain), thrd_success);
  CHECK_EQ(mtx_lock(&probed), thrd_success);
  printf("C11 mutexes are %s\n", glibc_owns_mtx(&probed) ? "glibc's" : "replaced");
  CHECK_EQ(mtx_unlock(&probed), thrd_success);
  trylock_and_timed(&probed);
  mtx_destroy(&probed);

  mtx_t timed;
  CHECK_EQ(mtx_init(&timed, mtx_timed), thrd_success);
  exclusion(&timed);
  trylock_and_timed(&timed);
  mtx_destroy(&timed);
  CHECK_EQ(mtx_init(&timed, mtx_timed), thrd_success); /* again after destroy */
  trylock_and_timed(&timed);
  mtx_destroy(&timed);

  recursion(mtx_plain | mtx_recursive);
  recursion(mtx_timed | mtx_recursive);
  /* glibc reads only the recursive types and makes any other a plain mutex. */
  mtx_t odd;
  CHECK_EQ(mtx_init(&odd, 4), thrd_success);
  trylock_and_timed(&odd);
  mtx_destroy(&odd);
}

/* ---- condition variables ---- */

struct buffer {
  mtx_t lock;
  cnd_t not_empty, not_full;
  long slot[SLOTS];
  int head, count;
  long taken, sum;
};

static int produce(void *arg) {
  struct buffer *b = arg;
  for (long item = 1; item <= ITEMS; item++) {
    CHECK_EQ(mtx_lock(&b->lock), thrd_success);
    while (b->count == SLOTS) CHECK_EQ(cnd_wait(&b->not_full, &b->lock), thrd_success);
    b->slot[(b->head + b->count) % SLOTS] = item;
    b->count++;
    CHECK_EQ(cnd_signal(&b->not_empty), thrd_success);
    CHECK_EQ(mtx_unlock(&b->lock), thrd_success);
  }
  return 0;
}

static int consume(void *arg) {
  struct buffer *b = arg;
  for (;;) {
    CHECK_EQ(mtx_lock(&b->lock), thrd_success);
    while (b->count == 0 && b->taken < ITEMS) CHECK_EQ(cnd_wait(&b->not_empty, &b->lock), thrd_success);
    if (b->taken == ITEMS) { /* the other consumer took the last item */
      CHECK_EQ(mtx_unlock(&b->lock), thrd_success);
      return 0;
    }
    b->sum += b->slot[b->head];
    b->head = (b->head + 1) % SLOTS;
    b->count--;
    if (++b->taken == ITEMS) CHECK_EQ(cnd_broadcast(&b->not_empty), thrd_success);
    CHECK_EQ(cnd_signal(&b->not_full), thrd_success);
    CHECK_EQ(mtx_unlock(&b->lock), thrd_success);
  }
}

static void bounded_buffer(void) {
  struct buffer b = {0};
  CHECK_EQ(mtx_init(&b.lock, mtx_plain), thrd_success);
  CHECK_EQ(cnd_init(&b.not_empty), thrd_success);
  CHECK_EQ(cnd_init(&b.not_full), thrd_success);
  thrd_t producer = spawn(produce, &b), first = spawn(consume, &b), second = spawn(consume, &b);
  finish(producer);
  finish(first);
  finish(second);
  CHECK_EQ(b.taken, ITEMS);
  CHECK_EQ(b.count, 0);
  CHECK_EQ(b.sum, (long)ITEMS * (ITEMS + 1) / 2); /* every item once */
  cnd_destroy(&b.not_empty);
  cnd_destroy(&b.not_full);
  mtx_destroy(&b.lock);
}

struct gate {
  mtx_t lock;
  cnd_t opened;
  int waiting, open, woken;
};

static int wait_at_gate(void *arg) {
  struct gate *g = arg;
  CHECK_EQ(mtx_lock(&g->lock), thrd_success);
  g->waiting++;
  while (!g->open) CHECK_EQ(cnd_wait(&g->opened, &g->lock), thrd_success);
  g->woken++;
  CHECK_EQ(mtx_unlock(&g->lock), thrd_success);
  return 0;
}

/* One broadcast, sent once every waiter is inside cnd_wait (each counted itself with the
 * mutex held, and releases it only inside the wait), and nothing after it: a broadcast that
 * woke fewer than all leaves a thread waiting for ever, and the harness's watchdog fails the
 * run. */
static void broadcast(void) {
  struct gate g = {.waiting = 0};
  CHECK_EQ(mtx_init(&g.lock, mtx_plain), thrd_success);
  CHECK_EQ(cnd_init(&g.opened), thrd_success);
  thrd_t waiter[BROADCAST_WAITERS];
  for (int i = 0; i < BROADCAST_WAITERS; i++) waiter[i] = spawn(wait_at_gate, &g);
  for (;;) {
    CHECK_EQ(mtx_lock(&g.lock), thrd_success);
    if (g.waiting == BROADCAST_WAITERS) break;
    CHECK_EQ(mtx_unlock(&g.lock), thrd_success);
    thrd_yield();
  }
  g.open = 1;
  CHECK_EQ(cnd_broadcast(&g.opened), thrd_success);
  CHECK_EQ(mtx_unlock(&g.lock), thrd_success);
  for (int i = 0; i < BROADCAST_WAITERS; i++) finish(waiter[i]);
  CHECK_EQ(g.woken, BROADCAST_WAITERS);
  cnd_destroy(&g.opened);
  mtx_destroy(&g.lock);
}

static void timed_wait(void) {
  mtx_t lock;
  cnd_t never;
  CHECK_EQ(mtx_init(&lock, mtx_timed), thrd_success);
  CHECK_EQ(cnd_init(&never), thrd_success);
  CHECK_EQ(mtx_lock(&lock), thrd_success);
  struct timespec deadline = utc_in_ns(2000000);
  int status;
  /* Nobody signals: only spurious wake-ups (thrd_success) may come before thrd_timedout. */
  while ((status = cnd_timedwait(&never, &lock, &deadline)) == thrd_success) {
  }
  CHECK_EQ(status, thrd_timedout);
  CHECK(reached(CLOCK_REALTIME, deadline)); /* never early */
  CHECK_EQ(mtx_trylock(&lock), thrd_busy);  /* the wait returned with the mutex held again */
  CHECK_EQ(mtx_unlock(&lock), thrd_success);
  cnd_destroy(&never);
  mtx_destroy(&lock);
}

/* ---- call_once ---- */

static once_flag once = ONCE_FLAG_INIT;
static atomic_int initialiser_runs;
static int initialised; /* plain: call_once's return must make the initialiser's write visible */

static void slow_initialiser(void) {
  atomic_fetch_add(&initialiser_runs, 1);
  struct timespec pause = {0, 20000000}; /* 20 ms: the other callers arrive and wait */
  thrd_sleep(&pause, NULL);
  initialised = 1;
}

static atomic_int at_the_line;

static int call_it_once(void *arg) {
  (void)arg;
  atomic_fetch_add(&at_the_line, 1);
  while (atomic_load(&at_the_line) < ONCE_CALLERS) thrd_yield(); /* all start together */
  call_once(&once, slow_initialiser);
  CHECK_EQ(initialised, 1); /* returned only after the initialiser finished */
  return 0;
}

static void once_from_many_threads(void) {
  thrd_t caller[ONCE_CALLERS];
  for (int i = 0; i < ONCE_CALLERS; i++) caller[i] = spawn(call_it_once, NULL);
  for (int i = 0; i < ONCE_CALLERS; i++) finish(caller[i]);
  CHECK_EQ(atomic_load(&initialiser_runs), 1);
  call_once(&once, slow_initialiser); /* done: returns without running it */
  CHECK_EQ(atomic_load(&initialiser_runs), 1);
  /* Whose call_once ran: glibc's marks a finished flag 2 (its pthread_once's DONE). */
  int word;
  memcpy(&word, &once, sizeof word);
  printf("once flags are %s\n", word == 2 ? "glibc's" : "replaced");
}

static once_flag held_once = ONCE_FLAG_INIT;
static atomic_int held_started, held_release;
static int ran_in_child;

static void held_initialiser(void) {
  atomic_store(&held_started, 1);
  struct timespec pause = {0, 1000000};
  while (!atomic_load(&held_release)) thrd_sleep(&pause, NULL);
}

static void child_initialiser(void) { ran_in_child = 1; }

static int hold_the_once(void *arg) {
  (void)arg;
  call_once(&held_once, held_initialiser);
  return 0;
}

/* A child forked while a thread of its parent runs an initialiser has no such thread: its own
 * call runs the initialiser it is given, where waiting would wait for ever. */
static void once_across_fork(void) {
  thrd_t holder = spawn(hold_the_once, NULL);
  while (!atomic_load(&held_started)) thrd_yield();
  fflush(stdout);
  pid_t child = fork();
  CHECK(child >= 0);
  if (child == 0) {
    call_once(&held_once, child_initialiser);
    _exit(ran_in_child == 1 ? 0 : 1);
  }
  int status;
  CHECK_EQ(waitpid(child, &status, 0), child);
  CHECK(WIFEXITED(status));
  CHECK_EQ(WEXITSTATUS(status), 0);
  atomic_store(&held_release, 1);
  finish(holder);
  call_once(&held_once, child_initialiser); /* done in this process: not run */
  CHECK_EQ(ran_in_child, 0);
}

int main(void) {
  say_preloaded();
  mutexes();
  bounded_buffer();
  broadcast();
  timed_wait();
  once_from_many_threads();
  once_across_fork();
  printf("ok\n");
  return 0;
}
