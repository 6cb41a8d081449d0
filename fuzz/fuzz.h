#ifndef TLBSIM_FUZZ_H
#define TLBSIM_FUZZ_H
/*
 * Shared by the libFuzzer targets in fuzz/: each target turns the fuzzer's
 * bytes into what one loader reads and checks the loader's contract (a
 * result, or NULL with a GError that has a message; never both, never
 * neither).  Crashes, leaks and undefined behaviour are ASan's and UBSan's to
 * report; a broken contract aborts through g_assert.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include <glib.h>

/* libFuzzer's entry points, declared for -Wmissing-prototypes. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* @data as a NUL-terminated string (g_free); an embedded NUL ends it early. */
char *fuzz_text(const uint8_t *data, size_t size);

/* @data parsed like an input file (config_parse_string); NULL when it is not
 * valid JSON, after checking the parser's error. */
cJSON *fuzz_parse(const uint8_t *data, size_t size);

/* Abort unless a call that returned @ok set @error exactly when it failed,
 * with a non-empty message in the TLBSIM_ERROR domain; then free @error. */
void fuzz_check_result(bool ok, GError *error);

#endif
