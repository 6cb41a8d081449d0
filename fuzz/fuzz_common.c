/* Helpers shared by the fuzz targets (fuzz.h). */
#include <string.h>
#include "fuzz.h"
#include "tlbsim/util/config.h"
#include "tlbsim/util/error.h"

char *fuzz_text(const uint8_t *data, size_t size)
{
	char *text = g_malloc(size + 1);
	if (size > 0)
		memcpy(text, data, size);
	text[size] = '\0';
	return text;
}

cJSON *fuzz_parse(const uint8_t *data, size_t size)
{
	GError *error = NULL;
	char *text = fuzz_text(data, size);
	cJSON *json = config_parse_string(text, "fuzz", &error);
	fuzz_check_result(json != NULL, error);
	g_free(text);
	return json;
}

void fuzz_check_result(bool ok, GError *error)
{
	if (ok) {
		g_assert(error == NULL);
		return;
	}
	g_assert(error != NULL);
	g_assert(error->domain == TLBSIM_ERROR);
	g_assert(error->message != NULL && error->message[0] != '\0');
	g_error_free(error);
}
