/* config_vars.c - joined --help tables (see vigil/config_vars.h). */
#include "vigil/config_vars.h"

const vigil_config_var *vigil_config_vars_join(vigil_config_var *out, size_t cap,
                                               const vigil_config_var *a,
                                               const vigil_config_var *b)
{
    size_t n = 0;
    if (cap == 0)
        return out;
    for (size_t i = 0; a && a[i].name && n + 1 < cap; i++)
        out[n++] = a[i];
    for (size_t i = 0; b && b[i].name && n + 1 < cap; i++)
        out[n++] = b[i];
    out[n] = (vigil_config_var){NULL, NULL, NULL};
    return out;
}
