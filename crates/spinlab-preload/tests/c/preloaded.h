/* What the preload test programs share: which lock the preload library put in place (if it
 * is loaded), and whether a normal mutex holds a spinlab lock rather than glibc's. */
#ifndef SPINLAB_TEST_PRELOADED_H
#define SPINLAB_TEST_PRELOADED_H

#include "check.h"
#include <dlfcn.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The lock libspinlab_preload.so uses, or "none" when it is not loaded. */
static inline const char *preloaded_lock(void) {
  const char *(*lock)(void) = (const char *(*)(void))dlsym(RTLD_DEFAULT, "spinlab_preload_lock");
  return lock ? lock() : "none";
}

/* What the preload library's `symbol` function (`spinlab_preload_spin`, …) names, or "none"
 * when the library is not loaded. */
static inline const char *preloaded_name(const char *symbol) {
  const char *(*name)(void) = (const char *(*)(void))dlsym(RTLD_DEFAULT, symbol);
  return name ? name() : "none";
}

/* Prints the line the test harness checks first: which lock this run uses. */
static inline void say_preloaded(void) {
  printf("preload: %s\n", preloaded_lock());
  fflush(stdout);
}

/* Whether glibc locked `mutex` (held by the calling thread): glibc writes the owner's thread
 * id into __owner; a spinlab lock keeps its own state in those bytes. */
static inline int glibc_owns(pthread_mutex_t *mutex) {
  return mutex->__data.__owner == (int)syscall(SYS_gettid);
}

#endif
