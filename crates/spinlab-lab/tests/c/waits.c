// Four threads on one hot mutex and a cold one, each made by pthread_mutex_init in a function
// of its own, so that a profile can name them: `spinlab profile` and `spinlab app --profile`
// must find the hot site, by function and line, with the acquisitions the program counts.
// Prints "hot N cold M".
#include <pthread.h>
#include <stdio.h>

#define THREADS 4
#define ROUNDS 20000

static pthread_mutex_t hot, cold;
static long hot_count, cold_count;

static void make_hot(void) {
  pthread_mutex_init(&hot, NULL); // site: make_hot
}

static void make_cold(void) {
  pthread_mutex_init(&cold, NULL); // site: make_cold
}

static void *worker(void *arg) {
  (void)arg;
  for (int i = 0; i < ROUNDS; i++) {
    pthread_mutex_lock(&hot);
    hot_count++;
    for (volatile int k = 0; k < 50; k++) {
    }
    pthread_mutex_unlock(&hot);
    if (i % 1000 == 0) {
      pthread_mutex_lock(&cold);
      cold_count++;
      pthread_mutex_unlock(&cold);
    }
  }
  return NULL;
}

int main(void) {
  make_hot();
  make_cold();
  pthread_t t[THREADS];
  for (int i = 0; i < THREADS; i++) {
    pthread_create(&t[i], NULL, worker, NULL);
  }
  for (int i = 0; i < THREADS; i++) {
    pthread_join(t[i], NULL);
  }
  printf("hot %ld cold %ld\n", hot_count, cold_count);
  return hot_count == (long)THREADS * ROUNDS ? 0 : 1;
}
