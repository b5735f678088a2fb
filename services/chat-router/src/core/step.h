/* step.h - the core's internal pieces shared by engine.c, message.c and
 * control.c (not part of the core's interface, chat.h). */
#ifndef CHAT_STEP_H
#define CHAT_STEP_H
#include "chat.h"


/* Moves the room's queue to the outbox (queued notifications go out before
 * anything this input publishes, see effects.h) and forgets the count. */
int chat_flush_queue(chat_room *r, chat_result *out);

/* Makes r a new room (created now, in the set of rooms): a first message
 * or pause, or a person's message after a delete. */
int chat_room_start(chat_room *r, int64_t now, chat_result *out);

/* Decisions per input kind; r is the loaded room (exists or not). */
int chat_on_message(const chat_config *cfg, chat_room *r, const chat_input *in, int64_t now,
                    chat_result *out);
int chat_on_control(const chat_config *cfg, chat_room *r, const chat_input *in, int64_t now,
                    chat_result *out, bool *deleted);

#endif
