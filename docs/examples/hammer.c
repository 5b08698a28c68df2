// 16 threads, one pthread mutex, 2 000 000 increments each with nothing between: a program
// whose threads do nothing but take and release one lock, for `spinlab app` (docs/app.md).
// gcc -O2 -Wall -Werror -pthread docs/examples/hammer.c -o hammer
// cargo run --release -- app --locks default,parking_lot,ttas:spin-park --reps 3 -- ./hammer
// -DHAMMER_THREADS=N and -DHAMMER_ITERS=N change the counts (scripts/device/prepare).
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static volatile unsigned long counter;
#ifndef HAMMER_THREADS
#define HAMMER_THREADS 16
#endif
#ifndef HAMMER_ITERS
#define HAMMER_ITERS 2000000
#endif
enum { THREADS = HAMMER_THREADS, ITERS = HAMMER_ITERS };
static void *work(void *arg) {
  (void)arg;
  for (int i = 0; i < ITERS; i++) {
    pthread_mutex_lock(&m);
    counter = counter + 1;
    pthread_mutex_unlock(&m);
  }
  return NULL;
}
int main(void) {
  pthread_t t[THREADS];
  for (int i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, work, NULL);
  for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
  if (counter != (unsigned long)THREADS * ITERS) { fprintf(stderr, "lost updates: %lu\n", counter); return 1; }
  return 0;
}
