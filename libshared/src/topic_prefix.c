/* topic_prefix.c - VIGIL_TOPIC_PREFIX (see vigil/topic_prefix.h). */
#include "vigil/topic_prefix.h"

#include <stdio.h>
#include <string.h>

static bool prefix_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '.' || c == '_' || c == '-' || c == '/';
}

int vigil_topic_prefix_check(const char *prefix, char *err, size_t errlen)
{
    const char *why = NULL;
    size_t n = prefix ? strlen(prefix) : 0;
    if (n == 0)
        return 0;
    if (n > VIGIL_TOPIC_PREFIX_MAX)
        why = "longer than 100 bytes";
    else if (prefix[0] == '$')
        why = "starts with '$' (the broker's own topics)";
    else if (prefix[0] == '/')
        why = "starts with '/'";
    else if (prefix[n - 1] == '/')
        why = "ends with '/' (it is added)";
    else if (strstr(prefix, "//"))
        why = "has an empty level ('//')";
    else if (strpbrk(prefix, "+#"))
        why = "holds a wildcard ('+' or '#')";
    for (size_t i = 0; !why && i < n; i++)
        if (!prefix_char(prefix[i]))
            why = "holds a character other than A-Z a-z 0-9 . _ - /";
    if (!why)
        return 0;
    if (err && errlen)
        snprintf(err, errlen, "VIGIL_TOPIC_PREFIX: '%.*s' %s", n > 100 ? 100 : (int)n, prefix, why);
    return -1;
}

int vigil_topic_prefix_apply(const char *prefix, const char *topic, char *out, size_t outlen)
{
    static const char share[] = "$share/";
    int n;
    if (!prefix || !prefix[0]) {
        n = snprintf(out, outlen, "%s", topic);
    } else if (strncmp(topic, share, sizeof share - 1) == 0 &&
               strchr(topic + sizeof share - 1, '/')) {
        /* $share/<group>/<filter>: the prefix belongs to the filter */
        const char *filter = strchr(topic + sizeof share - 1, '/') + 1;
        n = snprintf(out, outlen, "%.*s%s/%s", (int)(filter - topic), topic, prefix, filter);
    } else {
        n = snprintf(out, outlen, "%s/%s", prefix, topic);
    }
    return n < 0 || (size_t)n >= outlen ? -1 : n;
}

const char *vigil_topic_prefix_strip(const char *prefix, const char *topic)
{
    if (!prefix || !prefix[0])
        return topic;
    size_t n = strlen(prefix);
    if (strncmp(topic, prefix, n) != 0 || topic[n] != '/')
        return NULL;
    return topic + n + 1;
}

int vigil_client_id(const char *prefix, const char *service, int shard, char *out, size_t outlen)
{
    bool pre = prefix && prefix[0];
    int n = snprintf(out, outlen, "%s%svigil-%s-%d", pre ? prefix : "", pre ? "/" : "", service,
                     shard);
    return n < 0 || (size_t)n >= outlen ? -1 : n;
}
