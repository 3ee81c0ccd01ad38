/* mulligan_export.h — visibility and deprecation macros of the mulligan C ABI.
 *
 * MULLIGAN_API marks every exported function of the mulligan_<part>.h headers:
 *   - building the shared library (MULLIGAN_BUILDING_LIBRARY, set privately by
 *     CMake): dllexport on Windows, default visibility elsewhere;
 *   - consuming it: dllimport on Windows, default visibility elsewhere;
 *   - with MULLIGAN_STATIC defined (a static build linked into the consumer):
 *     nothing.
 * Everything not marked MULLIGAN_API is hidden (CMake builds with
 * -fvisibility=hidden and a linker version script, see capi/abi/).
 *
 * MULLIGAN_DEPRECATED(msg) marks a function that has a replacement (a _v2);
 * it stays exported until the next major version. MULLIGAN_DEPRECATED_FIELD
 * (msg) marks a struct field kept under an old spelling next to its new one
 * (compilers without field attributes get nothing). Defining
 * MULLIGAN_DISABLE_DEPRECATION_WARNINGS silences both.
 *
 * MULLIGAN_EXPERIMENTAL marks a function of mulligan_experimental.h (none
 * yet): exported like MULLIGAN_API but outside the ABI promise, and declared
 * only when the consumer defines MULLIGAN_EXPERIMENTAL_API.
 */
#ifndef MULLIGAN_EXPORT_H_
#define MULLIGAN_EXPORT_H_

#if defined(MULLIGAN_STATIC)
#  define MULLIGAN_API
#elif defined(_WIN32) || defined(__CYGWIN__)
#  if defined(MULLIGAN_BUILDING_LIBRARY)
#    define MULLIGAN_API __declspec(dllexport)
#  else
#    define MULLIGAN_API __declspec(dllimport)
#  endif
#elif defined(__GNUC__) || defined(__clang__)
#  define MULLIGAN_API __attribute__((visibility("default")))
#else
#  define MULLIGAN_API
#endif

#if defined(MULLIGAN_DISABLE_DEPRECATION_WARNINGS)
#  define MULLIGAN_DEPRECATED(msg)
#elif defined(__GNUC__) || defined(__clang__)
#  define MULLIGAN_DEPRECATED(msg) __attribute__((deprecated(msg)))
#elif defined(_MSC_VER)
#  define MULLIGAN_DEPRECATED(msg) __declspec(deprecated(msg))
#else
#  define MULLIGAN_DEPRECATED(msg)
#endif

#if defined(MULLIGAN_DISABLE_DEPRECATION_WARNINGS)
#  define MULLIGAN_DEPRECATED_FIELD(msg)
#elif defined(__GNUC__) || defined(__clang__)
#  define MULLIGAN_DEPRECATED_FIELD(msg) __attribute__((deprecated(msg)))
#else
#  define MULLIGAN_DEPRECATED_FIELD(msg)
#endif

#define MULLIGAN_EXPERIMENTAL MULLIGAN_API

#endif /* MULLIGAN_EXPORT_H_ */
