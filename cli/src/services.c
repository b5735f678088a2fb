/* services.c - the services of a deployment as the CLI knows them: their
 * names (what `vigil deadletter` accepts) and their default HTTP ports
 * (what `vigil status` probes), in one table. */
#include <string.h>
#include "cli.h"

const cli_service CLI_SERVICES[] = {
    { "dormancy-monitor", 9101 }, { "wake-evaluator", 9102 }, { "chat-router", 9103 },
    { "heartbeat", 9104 },        { "council", 9105 },        { "stall-resumer", 9106 },
    { "presence-gateway", 8080 }, { "floor-control", 9108 },
};
const size_t CLI_SERVICES_N = sizeof CLI_SERVICES / sizeof CLI_SERVICES[0];

bool cli_service_known(const char *name)
{
    for (size_t i = 0; i < CLI_SERVICES_N; i++)
        if (strcmp(CLI_SERVICES[i].name, name) == 0)
            return true;
    return false;
}

void cli_service_names(char *out, size_t outlen)
{
    size_t used = 0;
    if (outlen)
        out[0] = '\0';
    for (size_t i = 0; i < CLI_SERVICES_N && used < outlen; i++) {
        int w = snprintf(out + used, outlen - used, "%s%s", i ? ", " : "", CLI_SERVICES[i].name);
        if (w < 0)
            break;
        used += (size_t)w;
    }
}
