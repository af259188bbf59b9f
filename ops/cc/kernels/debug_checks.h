// WORKBENCH_DCHECK(condition, message): in debug builds (NDEBUG not defined,
// as in the sanitizer build of `make test-sanitize`) a false condition prints
// the message with its file and line and aborts, so that a bug shows where it
// happens instead of as a corrupted heap later; in release builds it costs
// nothing. For invariants the code guarantees by construction (a writer
// staying inside its buffer), never for checking user input: inputs are
// refused with an InvalidArgument error before any work starts.
#ifndef WORKBENCH_OPS_KERNELS_DEBUG_CHECKS_H_
#define WORKBENCH_OPS_KERNELS_DEBUG_CHECKS_H_

#include <cstdio>
#include <cstdlib>

#ifdef NDEBUG
#define WORKBENCH_DCHECK(condition, message) \
  do {                                       \
  } while (false)
#else
#define WORKBENCH_DCHECK(condition, message)                                                           \
  do {                                                                                                 \
    if (!(condition)) {                                                                                \
      std::fprintf(stderr, "%s:%d: check failed: %s (%s)\n", __FILE__, __LINE__, #condition, message); \
      std::abort();                                                                                    \
    }                                                                                                  \
  } while (false)
#endif

#endif  // WORKBENCH_OPS_KERNELS_DEBUG_CHECKS_H_
