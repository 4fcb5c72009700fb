/* The test runner: see harness.h. Standard C only, so it also runs as wasm under Node. */
#include "harness.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_CASES    512
#define MAX_DEFERRED 4096

typedef struct test_case_t {
    const char *name;
    harness_case_fn fn;
} test_case_t;

typedef struct deferred_t {
    void (*fn)(void *);
    void *arg;
} deferred_t;

static test_case_t cases[MAX_CASES];
static int case_count;
static bool registration_overflow;

static deferred_t deferred[MAX_DEFERRED];
static int deferred_count;

static jmp_buf case_exit;
static bool case_running;
static bool case_failed;
static const char *current_case;

void harness_register(const char *name, harness_case_fn fn) {
    if (case_count == MAX_CASES) {
        registration_overflow = true;
        return;
    }
    cases[case_count].name = name;
    cases[case_count].fn = fn;
    case_count++;
}

void harness_fail(const char *file, int line, const char *format, ...) {
    va_list args;
    printf("  %s:%d: ", file, line);
    va_start(args, format);
    vprintf(format, args);
    va_end(args);
    printf("  [case %s]\n", current_case ? current_case : "?");
    fflush(stdout);
    case_failed = true;
    if (case_running) longjmp(case_exit, 1);
    /* A check outside any case (should not happen): still never abort silently. */
    exit(2);
}

void harness_defer(void (*fn)(void *), void *arg) {
    if (deferred_count == MAX_DEFERRED) {
        /* Release it now rather than leak, then fail the case. */
        fn(arg);
        harness_fail(__FILE__, __LINE__, "harness_defer: more than %d deferred releases",
                     MAX_DEFERRED);
    }
    deferred[deferred_count].fn = fn;
    deferred[deferred_count].arg = arg;
    deferred_count++;
}

void harness_run_deferred_now(void (*fn)(void *), void *arg) {
    for (int i = deferred_count - 1; i >= 0; i--) {
        if (deferred[i].fn == fn && deferred[i].arg == arg) {
            memmove(&deferred[i], &deferred[i + 1],
                    (size_t)(deferred_count - i - 1) * sizeof deferred[0]);
            deferred_count--;
            fn(arg);
            return;
        }
    }
}

bool harness_case_failed(void) {
    return case_failed;
}

static void run_deferred(void) {
    /* A check failing inside a deferred function jumps back here and the rest still run. */
    while (deferred_count > 0) {
        deferred_count--;
        deferred_t d = deferred[deferred_count];
        case_running = true;
        if (setjmp(case_exit) == 0) d.fn(d.arg);
        case_running = false;
    }
}

static bool run_case(const test_case_t *test) {
    current_case = test->name;
    case_failed = false;
    deferred_count = 0;
    clock_t start = clock();
    case_running = true;
    if (setjmp(case_exit) == 0) test->fn();
    case_running = false;
    run_deferred();
    double seconds = (double)(clock() - start) / CLOCKS_PER_SEC;
    printf("%s %s (%.2f s)\n", case_failed ? "FAIL" : "PASS", test->name, seconds);
    fflush(stdout);
    current_case = NULL;
    return !case_failed;
}

int main(int argc, char **argv) {
    int passed = 0, failed = 0;
    if (registration_overflow) {
        printf("harness: more than %d cases registered\n", MAX_CASES);
        failed++;
    }
    if (argc > 2) {
        printf("usage: %s [case-name]\n", argv[0]);
        return 2;
    }
    if (argc == 2) {
        const test_case_t *found = NULL;
        for (int i = 0; i < case_count; i++) {
            if (strcmp(cases[i].name, argv[1]) == 0) found = &cases[i];
        }
        if (found == NULL) {
            printf("FAIL %s (no such case; known cases:", argv[1]);
            for (int i = 0; i < case_count; i++)
                printf(" %s", cases[i].name);
            printf(")\n");
            failed++;
        } else if (run_case(found)) {
            passed++;
        } else {
            failed++;
        }
    } else {
        for (int i = 0; i < case_count; i++) {
            if (run_case(&cases[i])) {
                passed++;
            } else {
                failed++;
            }
        }
    }
    printf("%d passed, %d failed\n", passed, failed);
    fflush(stdout);
    return failed == 0 ? 0 : 1;
}
