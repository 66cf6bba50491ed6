#pragma once

// Clang's thread-safety analysis (-Wthread-safety): which mutex guards which member, and which
// functions must be called with it held. The compiler then checks every access, not only the
// ones a test happens to race on (ThreadSanitizer's view). Other compilers read these as
// nothing. scripts/check-thread-safety runs the analysis (the test architecture.thread_safety).
#if defined(__clang__)
#define DTRAIN_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define DTRAIN_THREAD_ANNOTATION(x)
#endif

// A type that is a lock (Mutex below).
#define DTRAIN_CAPABILITY(name) DTRAIN_THREAD_ANNOTATION(capability(name))
// An object that holds a lock for its scope (MutexLock below).
#define DTRAIN_SCOPED_CAPABILITY DTRAIN_THREAD_ANNOTATION(scoped_lockable)
// A member read or written only with the given mutex held.
#define DTRAIN_GUARDED_BY(mutex) DTRAIN_THREAD_ANNOTATION(guarded_by(mutex))
// A function called only with the given mutexes held (and returning with them held).
#define DTRAIN_REQUIRES(...) DTRAIN_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
// A function called only without the given mutexes held (it takes them itself).
#define DTRAIN_EXCLUDES(...) DTRAIN_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
// A function that takes or gives back the given mutexes (or its own object, without arguments).
#define DTRAIN_ACQUIRE(...) DTRAIN_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define DTRAIN_RELEASE(...) DTRAIN_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define DTRAIN_TRY_ACQUIRE(...) DTRAIN_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
