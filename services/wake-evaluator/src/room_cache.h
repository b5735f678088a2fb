/* room_cache.h - the last few room records seen, parsed: a commit usually
 * decides on the record the previous commit wrote (the runtime hands the
 * exact text back), and parsing a 200-persona record cost more than the
 * decision itself. Keyed by the exact record text, so a hit is always the
 * same room; thread-safe; a miss just parses. */
#ifndef WAKE_ROOM_CACHE_H
#define WAKE_ROOM_CACHE_H
#include "wake.h"

/* A private copy of the room the record `json` holds (parsed on a miss);
 * NULL on out of memory. *corrupt as wake_room_from_json. */
wake_room *wake_room_cache_get(const char *room_id, const char *json, bool *corrupt);
/* Remembers r as the room record `json` (takes both; json is malloc'd). */
void wake_room_cache_put(const char *room_id, char *json, wake_room *r);

#endif
