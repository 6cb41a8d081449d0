/* Fuzz target: bytes -> config_parse_string -> policy_from_json. */
#include "fuzz.h"
#include "tlbsim/kernel/policy.h"
#include "tlbsim/util/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	GError *error = NULL;
	cJSON *json = fuzz_parse(data, size);
	if (json == NULL)
		return 0;
	struct policy *p = policy_from_json(json, "fuzz", &error);
	fuzz_check_result(p != NULL, error);
	if (p != NULL) {
		g_assert(p->name != NULL && p->description != NULL);
		g_assert(p->range != NULL && p->targets != NULL);
		(void)policy_flushall_shift(p, 6);
	}
	policy_free(p);
	cJSON_Delete(json);
	return 0;
}
