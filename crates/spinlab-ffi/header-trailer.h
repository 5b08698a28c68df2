/*
 * Static initialisers, as PTHREAD_MUTEX_INITIALIZER and PTHREAD_COND_INITIALIZER: a mutex of
 * the default lock ("adaptive:pause-yield-park"), unlocked, and a condition variable of the default
 * policy ("spin-park"), with no init call at run time:
 *
 *   static spinlab_mutex_t lock = SPINLAB_MUTEX_INITIALIZER;
 *   static spinlab_cond_t ready = SPINLAB_COND_INITIALIZER;
 *
 * Both are all-zero bytes, so a zero-filled object (a global without an initialiser, calloc,
 * memset 0) is the same, and `destroy` leaves them so. Such an object may be destroyed, and
 * re-initialised with any name, like one made by init.
 */
#define SPINLAB_MUTEX_INITIALIZER { { 0 } }
#define SPINLAB_COND_INITIALIZER { { 0 } }

/*
 * The sizes and alignments of the opaque objects are part of the ABI: the library was built
 * for exactly these, so a compiler that lays the structs out differently (a packing pragma in
 * effect, say) must stop here rather than corrupt memory at run time.
 */
#if defined(__cplusplus) && __cplusplus >= 201103L
#define SPINLAB_ASSERT_LAYOUT(type, size, align) \
  static_assert(sizeof(type) == (size) && alignof(type) == (align), #type " has the layout libspinlab was built for")
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define SPINLAB_ASSERT_LAYOUT(type, size, align) \
  _Static_assert(sizeof(type) == (size) && _Alignof(type) == (align), #type " has the layout libspinlab was built for")
#else
#define SPINLAB_ASSERT_LAYOUT(type, size, align) \
  typedef char type##_has_the_layout_libspinlab_was_built_for[sizeof(type) == (size) ? 1 : -1]
#endif
SPINLAB_ASSERT_LAYOUT(spinlab_mutex_t, SPINLAB_MUTEX_SIZE, SPINLAB_MUTEX_ALIGN);
SPINLAB_ASSERT_LAYOUT(spinlab_cond_t, SPINLAB_COND_SIZE, SPINLAB_COND_ALIGN);
SPINLAB_ASSERT_LAYOUT(spinlab_barrier_t, SPINLAB_BARRIER_SIZE, SPINLAB_BARRIER_ALIGN);
SPINLAB_ASSERT_LAYOUT(spinlab_rwlock_t, SPINLAB_RWLOCK_SIZE, SPINLAB_RWLOCK_ALIGN);
#undef SPINLAB_ASSERT_LAYOUT

/*
 * ThreadSanitizer. libspinlab is not instrumented, so ThreadSanitizer cannot see that a
 * spinlab mutex orders the accesses it protects, and would report each of them as a data
 * race. When a translation unit is compiled with -fsanitize=thread (gcc or clang), the calls
 * below are routed through inline wrappers that tell it, with its mutex annotations (and, for
 * barriers, a release before the wait and an acquire after it), what each call did. Define
 * SPINLAB_NO_TSAN_ANNOTATIONS to turn this off. Calls through a function pointer
 * (&spinlab_mutex_lock) bypass the wrappers.
 *
 * What stays visible of the library is its own bookkeeping, through the allocator and memcpy
 * interceptors (the queue locks' node pool grows vectors under the library's own futex
 * mutex), which ThreadSanitizer would report as races too. So the header also defines,
 * weakly, ThreadSanitizer's default-suppressions hook in the program (also with
 * SPINLAB_NO_TSAN_ANNOTATIONS), telling it to ignore the interceptors libspinlab calls. A
 * program that defines its own hook replaces this one and should add
 * "called_from_lib:libspinlab.so" to what it returns.
 */
#if defined(__SANITIZE_THREAD__)
#define SPINLAB_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SPINLAB_TSAN 1
#endif
#endif

#if defined(SPINLAB_TSAN)
#ifdef __cplusplus
extern "C"
#endif
__attribute__((weak)) const char *__tsan_default_suppressions(void) {
  return "called_from_lib:libspinlab.so\n";
}
#endif

#if defined(SPINLAB_TSAN) && !defined(SPINLAB_NO_TSAN_ANNOTATIONS)
#include <sanitizer/tsan_interface.h>

static inline int spinlab_tsan_mutex_init_(spinlab_mutex_t *mutex, const char *name) {
  int status = (spinlab_mutex_init)(mutex, name);
  if (status == SPINLAB_OK) __tsan_mutex_create(mutex, 0);
  return status;
}

static inline int spinlab_tsan_mutex_destroy_(spinlab_mutex_t *mutex) {
  int status = (spinlab_mutex_destroy)(mutex);
  if (status == SPINLAB_OK) __tsan_mutex_destroy(mutex, 0);
  return status;
}

static inline int spinlab_tsan_mutex_lock_(spinlab_mutex_t *mutex) {
  __tsan_mutex_pre_lock(mutex, 0);
  int status = (spinlab_mutex_lock)(mutex);
  __tsan_mutex_post_lock(mutex, 0, 0);
  return status;
}

/* A trylock or timed lock that fails acquires nothing. */
static inline unsigned spinlab_tsan_try_flags_(int status) {
  return status == SPINLAB_OK ? __tsan_mutex_try_lock : __tsan_mutex_try_lock | __tsan_mutex_try_lock_failed;
}

static inline int spinlab_tsan_mutex_trylock_(spinlab_mutex_t *mutex) {
  __tsan_mutex_pre_lock(mutex, __tsan_mutex_try_lock);
  int status = (spinlab_mutex_trylock)(mutex);
  __tsan_mutex_post_lock(mutex, spinlab_tsan_try_flags_(status), 0);
  return status;
}

static inline int spinlab_tsan_mutex_clocklock_(spinlab_mutex_t *mutex, clockid_t clock, const struct timespec *abstime) {
  __tsan_mutex_pre_lock(mutex, __tsan_mutex_try_lock);
  int status = (spinlab_mutex_clocklock)(mutex, clock, abstime);
  __tsan_mutex_post_lock(mutex, spinlab_tsan_try_flags_(status), 0);
  return status;
}

static inline int spinlab_tsan_mutex_timedlock_(spinlab_mutex_t *mutex, const struct timespec *abstime) {
  __tsan_mutex_pre_lock(mutex, __tsan_mutex_try_lock);
  int status = (spinlab_mutex_timedlock)(mutex, abstime);
  __tsan_mutex_post_lock(mutex, spinlab_tsan_try_flags_(status), 0);
  return status;
}

static inline int spinlab_tsan_mutex_unlock_(spinlab_mutex_t *mutex) {
  __tsan_mutex_pre_unlock(mutex, 0);
  int status = (spinlab_mutex_unlock)(mutex);
  __tsan_mutex_post_unlock(mutex, 0);
  return status;
}

/* A condition wait releases the mutex and takes it again before it returns. */
static inline void spinlab_tsan_cond_release_(spinlab_mutex_t *mutex) {
  __tsan_mutex_pre_unlock(mutex, 0);
  __tsan_mutex_post_unlock(mutex, 0);
}

static inline void spinlab_tsan_cond_reacquire_(spinlab_mutex_t *mutex) {
  __tsan_mutex_pre_lock(mutex, 0);
  __tsan_mutex_post_lock(mutex, 0, 0);
}

static inline int spinlab_tsan_cond_wait_(spinlab_cond_t *cond, spinlab_mutex_t *mutex) {
  spinlab_tsan_cond_release_(mutex);
  int status = (spinlab_cond_wait)(cond, mutex);
  spinlab_tsan_cond_reacquire_(mutex);
  return status;
}

static inline int spinlab_tsan_cond_clockwait_(spinlab_cond_t *cond, spinlab_mutex_t *mutex, clockid_t clock,
                                               const struct timespec *abstime) {
  spinlab_tsan_cond_release_(mutex);
  int status = (spinlab_cond_clockwait)(cond, mutex, clock, abstime);
  spinlab_tsan_cond_reacquire_(mutex);
  return status;
}

static inline int spinlab_tsan_cond_timedwait_(spinlab_cond_t *cond, spinlab_mutex_t *mutex,
                                               const struct timespec *abstime) {
  spinlab_tsan_cond_release_(mutex);
  int status = (spinlab_cond_timedwait)(cond, mutex, abstime);
  spinlab_tsan_cond_reacquire_(mutex);
  return status;
}

static inline int spinlab_tsan_barrier_wait_(spinlab_barrier_t *barrier) {
  __tsan_release(barrier);
  int status = (spinlab_barrier_wait)(barrier);
  __tsan_acquire(barrier);
  return status;
}

static inline int spinlab_tsan_rwlock_init_(spinlab_rwlock_t *rwlock, const char *name) {
  int status = (spinlab_rwlock_init)(rwlock, name);
  if (status == SPINLAB_OK) __tsan_mutex_create(rwlock, 0);
  return status;
}

static inline int spinlab_tsan_rwlock_destroy_(spinlab_rwlock_t *rwlock) {
  int status = (spinlab_rwlock_destroy)(rwlock);
  if (status == SPINLAB_OK) __tsan_mutex_destroy(rwlock, 0);
  return status;
}

static inline int spinlab_tsan_rwlock_rdlock_(spinlab_rwlock_t *rwlock) {
  __tsan_mutex_pre_lock(rwlock, __tsan_mutex_read_lock);
  int status = (spinlab_rwlock_rdlock)(rwlock);
  __tsan_mutex_post_lock(rwlock, __tsan_mutex_read_lock, 0);
  return status;
}

static inline int spinlab_tsan_rwlock_wrlock_(spinlab_rwlock_t *rwlock) {
  __tsan_mutex_pre_lock(rwlock, 0);
  int status = (spinlab_rwlock_wrlock)(rwlock);
  __tsan_mutex_post_lock(rwlock, 0, 0);
  return status;
}

static inline int spinlab_tsan_rwlock_tryrdlock_(spinlab_rwlock_t *rwlock) {
  __tsan_mutex_pre_lock(rwlock, __tsan_mutex_try_read_lock);
  int status = (spinlab_rwlock_tryrdlock)(rwlock);
  __tsan_mutex_post_lock(rwlock, __tsan_mutex_read_lock | spinlab_tsan_try_flags_(status), 0);
  return status;
}

static inline int spinlab_tsan_rwlock_trywrlock_(spinlab_rwlock_t *rwlock) {
  __tsan_mutex_pre_lock(rwlock, __tsan_mutex_try_lock);
  int status = (spinlab_rwlock_trywrlock)(rwlock);
  __tsan_mutex_post_lock(rwlock, spinlab_tsan_try_flags_(status), 0);
  return status;
}

static inline int spinlab_tsan_rwlock_clockrdlock_(spinlab_rwlock_t *rwlock, clockid_t clock,
                                                   const struct timespec *abstime) {
  __tsan_mutex_pre_lock(rwlock, __tsan_mutex_try_read_lock);
  int status = (spinlab_rwlock_clockrdlock)(rwlock, clock, abstime);
  __tsan_mutex_post_lock(rwlock, __tsan_mutex_read_lock | spinlab_tsan_try_flags_(status), 0);
  return status;
}

static inline int spinlab_tsan_rwlock_clockwrlock_(spinlab_rwlock_t *rwlock, clockid_t clock,
                                                   const struct timespec *abstime) {
  __tsan_mutex_pre_lock(rwlock, __tsan_mutex_try_lock);
  int status = (spinlab_rwlock_clockwrlock)(rwlock, clock, abstime);
  __tsan_mutex_post_lock(rwlock, spinlab_tsan_try_flags_(status), 0);
  return status;
}

static inline int spinlab_tsan_rwlock_timedrdlock_(spinlab_rwlock_t *rwlock, const struct timespec *abstime) {
  __tsan_mutex_pre_lock(rwlock, __tsan_mutex_try_read_lock);
  int status = (spinlab_rwlock_timedrdlock)(rwlock, abstime);
  __tsan_mutex_post_lock(rwlock, __tsan_mutex_read_lock | spinlab_tsan_try_flags_(status), 0);
  return status;
}

static inline int spinlab_tsan_rwlock_timedwrlock_(spinlab_rwlock_t *rwlock, const struct timespec *abstime) {
  __tsan_mutex_pre_lock(rwlock, __tsan_mutex_try_lock);
  int status = (spinlab_rwlock_timedwrlock)(rwlock, abstime);
  __tsan_mutex_post_lock(rwlock, spinlab_tsan_try_flags_(status), 0);
  return status;
}

/* Which side is released is known before the call only: ask the lock. */
static inline int spinlab_tsan_rwlock_unlock_(spinlab_rwlock_t *rwlock) {
  unsigned flags = spinlab_rwlock_wrheld(rwlock) ? 0 : __tsan_mutex_read_lock;
  __tsan_mutex_pre_unlock(rwlock, flags);
  int status = (spinlab_rwlock_unlock)(rwlock);
  __tsan_mutex_post_unlock(rwlock, flags);
  return status;
}

#define spinlab_mutex_init(mutex, name) spinlab_tsan_mutex_init_(mutex, name)
#define spinlab_mutex_destroy(mutex) spinlab_tsan_mutex_destroy_(mutex)
#define spinlab_mutex_lock(mutex) spinlab_tsan_mutex_lock_(mutex)
#define spinlab_mutex_trylock(mutex) spinlab_tsan_mutex_trylock_(mutex)
#define spinlab_mutex_clocklock(mutex, clock, abstime) spinlab_tsan_mutex_clocklock_(mutex, clock, abstime)
#define spinlab_mutex_timedlock(mutex, abstime) spinlab_tsan_mutex_timedlock_(mutex, abstime)
#define spinlab_mutex_unlock(mutex) spinlab_tsan_mutex_unlock_(mutex)
#define spinlab_cond_wait(cond, mutex) spinlab_tsan_cond_wait_(cond, mutex)
#define spinlab_cond_clockwait(cond, mutex, clock, abstime) spinlab_tsan_cond_clockwait_(cond, mutex, clock, abstime)
#define spinlab_cond_timedwait(cond, mutex, abstime) spinlab_tsan_cond_timedwait_(cond, mutex, abstime)
#define spinlab_barrier_wait(barrier) spinlab_tsan_barrier_wait_(barrier)
#define spinlab_rwlock_init(rwlock, name) spinlab_tsan_rwlock_init_(rwlock, name)
#define spinlab_rwlock_destroy(rwlock) spinlab_tsan_rwlock_destroy_(rwlock)
#define spinlab_rwlock_rdlock(rwlock) spinlab_tsan_rwlock_rdlock_(rwlock)
#define spinlab_rwlock_wrlock(rwlock) spinlab_tsan_rwlock_wrlock_(rwlock)
#define spinlab_rwlock_tryrdlock(rwlock) spinlab_tsan_rwlock_tryrdlock_(rwlock)
#define spinlab_rwlock_trywrlock(rwlock) spinlab_tsan_rwlock_trywrlock_(rwlock)
#define spinlab_rwlock_clockrdlock(rwlock, clock, abstime) spinlab_tsan_rwlock_clockrdlock_(rwlock, clock, abstime)
#define spinlab_rwlock_clockwrlock(rwlock, clock, abstime) spinlab_tsan_rwlock_clockwrlock_(rwlock, clock, abstime)
#define spinlab_rwlock_timedrdlock(rwlock, abstime) spinlab_tsan_rwlock_timedrdlock_(rwlock, abstime)
#define spinlab_rwlock_timedwrlock(rwlock, abstime) spinlab_tsan_rwlock_timedwrlock_(rwlock, abstime)
#define spinlab_rwlock_unlock(rwlock) spinlab_tsan_rwlock_unlock_(rwlock)
#endif /* SPINLAB_TSAN */

#endif /* SPINLAB_H */
