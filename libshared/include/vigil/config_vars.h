/* config_vars.h - --help tables built from several parts (e.g. the LLM
 * variables every LLM-using service shares, then the service's own). */
#ifndef VIGIL_CONFIG_VARS_H
#define VIGIL_CONFIG_VARS_H
#include <stddef.h>
#include "config.h"

/* Fills out[0..cap) with the entries of a, then of b (either may be NULL),
 * and a NULL entry after them; entries that do not fit are left out. Returns
 * out, for vigil_service_def.config_vars (give it storage that outlives the
 * service: a static array). */
const vigil_config_var *vigil_config_vars_join(vigil_config_var *out, size_t cap,
                                               const vigil_config_var *a,
                                               const vigil_config_var *b);

#endif
