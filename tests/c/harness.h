/*
 * A tiny test framework for tessera's C tests.
 *
 * A case is a line starting with TEST(name) followed by a body; CMake greps those lines to
 * make one ctest per case, so keep `TEST(` at the start of the line and the name [a-z0-9_]+.
 *
 *     TEST(spawn_gives_distinct_handles) {
 *         CHECK_EQ(1 + 1, 2);
 *     }
 *
 * A failed check prints file:line and the values, then leaves the case (longjmp); the process
 * keeps running the other cases. Resources a case registers with harness_defer() are released
 * after the case whether it passed or failed, so a failing case does not also report leaks.
 *
 * The runner (harness.c) runs every case, or only argv[1]; it prints one line per case and a
 * final "N passed, N failed" line, and exits non-zero on any failure or unknown case name.
 */
#ifndef TESSERA_TEST_HARNESS_H
#define TESSERA_TEST_HARNESS_H

#include "tessera.h"

#include <stdbool.h>
#include <stdio.h>

typedef void (*harness_case_fn)(void);

/* Called by TEST's constructor. */
void harness_register(const char *name, harness_case_fn fn);

/* Reports a failed check and leaves the current case. */
_Noreturn void harness_fail(const char *file, int line, const char *format, ...)
    __attribute__((format(printf, 3, 4)));

/* Runs fn(arg) after the current case, last registered first, pass or fail. */
void harness_defer(void (*fn)(void *), void *arg);

/* Runs the latest pending harness_defer(fn, arg) now and forgets it (no-op if none). */
void harness_run_deferred_now(void (*fn)(void *), void *arg);

/* True once a check of the current case failed (useful inside deferred functions). */
bool harness_case_failed(void);

#define TEST(name)                                                        \
    static void test_case_##name(void);                                   \
    __attribute__((constructor)) static void test_register_##name(void) { \
        harness_register(#name, test_case_##name);                        \
    }                                                                     \
    static void test_case_##name(void)

#define CHECK(cond)                                                               \
    do {                                                                          \
        if (!(cond)) harness_fail(__FILE__, __LINE__, "CHECK(%s) failed", #cond); \
    } while (0)

/* Integers (any width up to 64 bits, signed or unsigned); each side is evaluated once. */
#define CHECK_EQ(a, b)                                                                        \
    do {                                                                                      \
        long long check_a_ = (long long)(a), check_b_ = (long long)(b);                       \
        if (check_a_ != check_b_)                                                             \
            harness_fail(__FILE__, __LINE__, "CHECK_EQ(%s, %s) failed: %lld != %lld", #a, #b, \
                         check_a_, check_b_);                                                 \
    } while (0)

#define CHECK_NE(a, b)                                                                     \
    do {                                                                                   \
        long long check_a_ = (long long)(a), check_b_ = (long long)(b);                    \
        if (check_a_ == check_b_)                                                          \
            harness_fail(__FILE__, __LINE__, "CHECK_NE(%s, %s) failed: both %lld", #a, #b, \
                         check_a_);                                                        \
    } while (0)

/* Doubles compared exactly (NaN equals NaN; 0.0 and -0.0 are equal). */
#define CHECK_NUM_EQ(a, b)                                                                      \
    do {                                                                                        \
        double check_a_ = (double)(a), check_b_ = (double)(b);                                  \
        if (!(check_a_ == check_b_ || (check_a_ != check_a_ && check_b_ != check_b_)))          \
            harness_fail(__FILE__, __LINE__, "CHECK_NUM_EQ(%s, %s) failed: %.17g != %.17g", #a, \
                         #b, check_a_, check_b_);                                               \
    } while (0)

#define CHECK_OK(expr)                                                         \
    do {                                                                       \
        tes_result_t check_r_ = (expr);                                        \
        if (check_r_ != TES_OK)                                                \
            harness_fail(__FILE__, __LINE__, "CHECK_OK(%s) failed: %s", #expr, \
                         tes_result_name(check_r_));                           \
    } while (0)

#define CHECK_ERR(expr, expected)                                                                \
    do {                                                                                         \
        tes_result_t check_r_ = (expr), check_e_ = (expected);                                   \
        if (check_r_ != check_e_)                                                                \
            harness_fail(__FILE__, __LINE__, "CHECK_ERR(%s) failed: expected %s, got %s", #expr, \
                         tes_result_name(check_e_), tes_result_name(check_r_));                  \
    } while (0)

#endif /* TESSERA_TEST_HARNESS_H */
