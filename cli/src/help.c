/* help.c - every --help text of the `vigil` command in one place. */
#include <stdio.h>
#include <string.h>
#include "help.h"

static const char ENV_HELP[] =
    CLI_HELP_ENV_HEAD CLI_HELP_ENV_MQTT CLI_HELP_ENV_REDIS
    "  VIGIL_USER                 your name in messages and controls (default: $USER)\n"
    "  VIGIL_CLI_TIMEOUT_MS       how long to wait for the broker, Redis and chat-router (5000)\n"
    "  VIGIL_CHAT_LOG_MAX_AGE_MS  message age `cleanup` removes (604800000 = 7 days)\n"
    CLI_HELP_ENV_LOG;

/* vigil agents reads the broker only; vigil deadletter Redis only. */
static const char AGENTS_ENV_HELP[] =
    CLI_HELP_ENV_HEAD CLI_HELP_ENV_MQTT
    "  VIGIL_CLI_TIMEOUT_MS       how long to wait for the broker (5000)\n"
    "  VIGIL_STALL_WARNING_MS, VIGIL_STALL_CRITICAL_MS, VIGIL_STALL_AUTORESUME_MS,\n"
    "  VIGIL_STALL_SCAN_MS        stall-resumer's thresholds and scan period (above)\n"
    CLI_HELP_ENV_LOG;

static const char DEADLETTER_ENV_HELP[] =
    CLI_HELP_ENV_HEAD CLI_HELP_ENV_REDIS
    "  VIGIL_CLI_TIMEOUT_MS       how long to wait for Redis (5000)\n"
    CLI_HELP_ENV_LOG;

static const char EXIT_HELP[] =
    "Exit status: 0 ok, 1 runtime error (broker or Redis unreachable, chat-router did not\n"
    "confirm in time), 2 usage error (bad arguments, bad room name), 3 room not found,\n"
    "4 room already exists (chat new).\n";

/* Every status a command uses, each command's help saying which are its. */
static const char VIGIL_EXIT_HELP[] =
    "Exit status: 0 ok, 1 runtime error (broker or Redis unreachable, no answer in time),\n"
    "2 usage error (bad arguments or configuration), 3 not found (room, persona, council\n"
    "session), 4 room already exists (chat new), 5 persona command refused (persona\n"
    "sleep|wake|level), 6 not ready (status). Each command's --help lists its own.\n";

static const char AGENTS_EXIT_HELP[] =
    "Exit status: 0 ok, 1 runtime error (broker unreachable), 2 usage error or\n"
    "configuration error (a threshold out of range, or not VIGIL_STALL_WARNING_MS <=\n"
    "VIGIL_STALL_CRITICAL_MS <= VIGIL_STALL_AUTORESUME_MS, as stall-resumer refuses).\n";

static const char DEADLETTER_EXIT_HELP[] =
    "Exit status: 0 ok, 1 runtime error (Redis unreachable or its command failed), 2 usage\n"
    "error (bad arguments, a SERVICE it does not know).\n";

static const cli_help_entry HELP[] = {
    { "vigil",
      "usage: vigil [--help] [--version] <command> [<args>]\n"
      "\n"
      "Commands:\n"
      "  chat      rooms, messages, pause/resume of AI conversations (vigil chat --help)\n"
      "  persona   dormancy of AI personas: status, sleep, wake, level (vigil persona --help)\n"
      "  status    every service instance and HTTP port: ready or not (vigil status --help)\n"
      "  errors    the inputs services refuse, from sys/+/error (vigil errors --help)\n"
      "  council   autonomous council sessions, deliberations, questions (vigil council --help)\n"
      "  agents    agent stall status from stall-resumer (vigil agents --help)\n"
      "  deadletter  outputs a service could not publish: list, replay (vigil deadletter --help)\n",
      VIGIL_EXIT_HELP, NULL },
    { "council",
      "usage: vigil council sessions [--limit N] [--json]   recent sessions, newest first\n"
      "       vigil council show SESSION [--json]           one session: state, questions, notes,\n"
      "                                                    and every deliberation\n"
      "       vigil council questions [--all] [--limit N] [--json]\n"
      "                                                    pending questions, most urgent first\n"
      "\n"
      "Reads the council's durable records (services/council). Start, pause, resume or\n"
      "end a session and answer a question by publishing on council/USER/control and\n"
      "council/SESSION/answer (services/council/README.md).\n", NULL, NULL },
    { "council-sessions",
      "usage: vigil council sessions [--limit N] [--json]\n"
      "\n"
      "The N most recent council sessions (default 20), newest first: session, user,\n"
      "status (active, paused, completed), loops, actions, start time, reason.\n"
      "--json prints each session's record as one JSON object per line.\n", NULL, NULL },
    { "council-show",
      "usage: vigil council show SESSION [--json]\n"
      "\n"
      "One session's record (status, loops, questions with answers, notes) and its\n"
      "deliberations, oldest first: the four personas' inputs, the decision, the\n"
      "result. Exit status 3 when there is no such session. --json prints the record\n"
      "and then one JSON object per deliberation.\n", NULL, NULL },
    { "council-questions",
      "usage: vigil council questions [--all] [--limit N] [--json]\n"
      "\n"
      "The pending questions of the N most recent sessions (default 50), highest\n"
      "priority first (ties: oldest first); --all includes answered and expired ones.\n",
      NULL, NULL },
    { "chat",
      "usage: vigil chat [--json]                      list rooms\n"
      "       vigil chat new [NAME] [--no-join]        create a room and join it\n"
      "       vigil chat join ROOM [--pause] [--history N]\n"
      "                                                chat interactively\n"
      "       vigil chat send ROOM MESSAGE [--as NAME] [--ai] [--reply-to ID] [--depth N]\n"
      "                                                post one message and exit\n"
      "       vigil chat view ROOM [--limit N] [--since ID] [--json]\n"
      "                                                print the room log\n"
      "       vigil chat pause ROOM | --all            queue notifications\n"
      "       vigil chat resume ROOM | --all           deliver the queue, go live\n"
      "       vigil chat delete ROOM                   delete log, queue and state\n"
      "       vigil chat cleanup                       drop expired messages and empty rooms\n"
      "\n"
      "`vigil chat` lists every room with its message count, paused flag (\"all\" while the\n"
      "global pause is on), queued notifications and last activity; --json prints one\n"
      "JSON object per room.\n"
      "Each subcommand has --help.\n", NULL, NULL },
    { "new",
      "usage: vigil chat new [NAME] [--no-join]\n"
      "\n"
      "Creates room NAME (default: chat-YYYYMMDD-HHMMSS) by posting a system message\n"
      "\"room created\", waits until chat-router has it, then joins it like `vigil chat\n"
      "join` (--no-join: print the name and exit). Fails with status 4 if it exists.\n",
      NULL, NULL },
    { "join",
      "usage: vigil chat join ROOM [--pause] [--history N]\n"
      "\n"
      "Interactive: prints the last N messages (--history, default 10), then every new\n"
      "message as it arrives; each line you type is sent as a human message. /quit,\n"
      "end of input (Ctrl-D) or Ctrl-C leaves.\n"
      "Joining does not pause the room: AI personas keep talking while you type.\n"
      "--pause pauses the room while you are joined (notifications are queued) and\n"
      "resumes it when you leave; a room that was paused already when you joined\n"
      "(by anyone) stays paused when you leave. It says which it did.\n", NULL, NULL },
    { "send",
      "usage: vigil chat send ROOM MESSAGE... [--as NAME] [--ai] [--reply-to ID] [--depth N]\n"
      "\n"
      "Posts one message to room/ROOM/message and exits (fire and forget: chat-router logs\n"
      "it and notifies the personas it @mentions). Several MESSAGE words are joined with\n"
      "spaces; put -- before a message that starts with '-'. Prints the message id.\n"
      "  --as NAME       sender (default: VIGIL_USER or $USER)\n"
      "  --ai            send as an AI persona (sender_type \"ai\") instead of a human\n"
      "  --reply-to ID   the message this one answers (its id)\n"
      "  --depth N       chain depth of an AI message (notification depth + 1); only\n"
      "                  with --ai: a human message always starts a chain at 0\n", NULL, NULL },
    { "view",
      "usage: vigil chat view ROOM [--limit N] [--since ID] [--json]\n"
      "\n"
      "Prints the room log, oldest first, one line per message:\n"
      "  ID|TIMESTAMP|FROM|CONTENT\n"
      "ID is the log id (pass it back as --since), TIMESTAMP is ISO 8601 UTC, CONTENT has\n"
      "backslash, newline, CR, tab and other control characters escaped (\\\\ \\n \\r \\t\n"
      "\\xNN) so a message is one line; split on the first three '|'.\n"
      "  --json      one JSON object per line instead: the message as posted plus\n"
      "              \"log_id\"\n"
      "  --limit N   the last N messages (with --since: the first N after ID)\n"
      "  --since ID  only messages logged after ID (stateless paging: remember the last ID);\n"
      "              ID may also be a message id as send prints it: the messages logged\n"
      "              after that message (waits for chat-router to log it; 3 if it is not\n"
      "              in the log)\n", NULL, NULL },
    { "pause",
      "usage: vigil chat pause ROOM | --all\n"
      "\n"
      "Pauses a room (or, with --all, every room): messages are still logged, but\n"
      "notifications to personas are queued until resume. Waits until chat-router has\n"
      "applied it.\n", NULL, NULL },
    { "resume",
      "usage: vigil chat resume ROOM | --all\n"
      "\n"
      "Resumes a room: its queued notifications are delivered in order, then new ones\n"
      "go out live. A room stays held while the global pause is on; --all lifts the\n"
      "global pause and resumes every paused room.\n", NULL, NULL },
    { "delete",
      "usage: vigil chat delete ROOM\n"
      "\n"
      "Deletes the room's log, notification queue and state, and ends its conversation:\n"
      "a persona's late answer to the room is refused (sys/chat-router/error, reason\n"
      "room_deleted), not logged. Only a person starts it afresh: vigil chat new ROOM\n"
      "(or a human message posted to the room).\n", NULL, NULL },
    { "agents",
      "usage: vigil agents status [--no-activity-check] [--json]\n"
      "\n"
      "The status checker: one line per agent, worst first, from the retained\n"
      "agent/+/assessment (stall-resumer) and agent/+/status topics:\n"
      "  🟢 FRESH        status younger than VIGIL_STALL_WARNING_MS (2 h), or activity detected\n"
      "  🟡 WARNING      up to VIGIL_STALL_CRITICAL_MS (6 h)\n"
      "  🟠 CRITICAL     up to VIGIL_STALL_AUTORESUME_MS (12 h)\n"
      "  🔴 AUTO-RESUME  older: stall-resumer sends it a resume prompt\n"
      "with its confidence, active/inactive, status age (or activity age without a\n"
      "status), state and activity sources. An agent with detected activity is not\n"
      "escalated, whatever its status age; one with neither a status nor any activity\n"
      "known is 🔴, as stall-resumer fails open for it. An assessment older than three scans\n"
      "(VIGIL_STALL_SCAN_MS, 60 s) is from a stall-resumer that no longer scans: its\n"
      "activity is not trusted and the line says how old it is.\n"
      "  --no-activity-check  categories by status age alone (legacy mode)\n"
      "  --json               one JSON object per agent instead\n"
      "Thresholds: VIGIL_STALL_WARNING_MS, VIGIL_STALL_CRITICAL_MS, VIGIL_STALL_AUTORESUME_MS\n"
      "and VIGIL_STALL_SCAN_MS (as stall-resumer's, checked as it checks them).\n",
      AGENTS_EXIT_HELP, AGENTS_ENV_HELP },
    { "cleanup",
      "usage: vigil chat cleanup\n"
      "\n"
      "Removes log entries older than VIGIL_CHAT_LOG_MAX_AGE_MS from every room, then\n"
      "deletes the rooms left without messages, except one that gets a message meanwhile\n"
      "and a paused one still holding queued notifications (resume delivers them).\n", NULL, NULL },
    { "deadletter",
      "usage: vigil deadletter list SERVICE\n"
      "       vigil deadletter replay SERVICE [--shard I]\n"
      "\n"
      "A service's outbox moves an output it can never publish (an entry it cannot\n"
      "decode, or one the broker refused VIGIL_OUTBOX_DEAD_LETTER_AFTER times in a row,\n"
      "e.g. by an ACL) to the Redis list <VIGIL_REDIS_PREFIX>SERVICE:deadletter, oldest\n"
      "first, instead of deleting it. `list` prints one line per dead letter: index,\n"
      "topic (or \"(undecodable)\") and payload, escaped to one line; the count goes to\n"
      "stderr. After fixing the cause, `replay` moves them all, in order and atomically,\n"
      "to the tail of the outbox of shard I (default 0), which the running service\n"
      "publishes within half a second.\n"
      "SERVICE is one of dormancy-monitor, wake-evaluator, chat-router, heartbeat, council,\n"
      "stall-resumer, presence-gateway, floor-control.\n",
      DEADLETTER_EXIT_HELP, DEADLETTER_ENV_HELP },
};

bool cli_help_print(const cli_help_entry *table, size_t n, const char *name, const char *env,
                    const char *exits, FILE *f)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(table[i].name, name) == 0) {
            fputs(table[i].text, f);
            fputc('\n', f);
            fputs(table[i].env ? table[i].env : env, f);
            fputc('\n', f);
            fputs(table[i].exits ? table[i].exits : exits, f);
            return true;
        }
    }
    return false;
}

void cli_help(const char *name, FILE *f)
{
    cli_help_print(HELP, sizeof HELP / sizeof HELP[0], name, ENV_HELP, EXIT_HELP, f);
}

int cli_usage_error(const char *name, const char *msg)
{
    fprintf(stderr, "vigil: %s\n", msg);
    if (strcmp(name, "vigil") == 0)
        fprintf(stderr, "Try 'vigil --help'.\n");
    else if (strcmp(name, "chat") == 0)
        fprintf(stderr, "Try 'vigil chat --help'.\n");
    else if (strcmp(name, "deadletter") == 0)
        fprintf(stderr, "Try 'vigil deadletter --help'.\n");
    else if (strcmp(name, "agents") == 0)
        fprintf(stderr, "Try 'vigil agents --help'.\n");
    else if (strncmp(name, "council", 7) == 0)
        fprintf(stderr, "Try 'vigil council --help'.\n");
    else
        fprintf(stderr, "Try 'vigil chat %s --help'.\n", name);
    return 2;
}
