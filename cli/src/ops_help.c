/* ops_help.c - the --help texts and usage errors of the operators'
 * commands (`vigil persona`, `vigil status`, `vigil errors`). */
#include <stdio.h>
#include <string.h>
#include "help.h"
#include "opts.h"
#include "ops.h"

static const char OPS_ENV_HELP[] =
    CLI_HELP_ENV_HEAD CLI_HELP_ENV_MQTT
    "  VIGIL_CLI_TIMEOUT_MS       how long to wait for the broker and for answers (5000)\n"
    "  VIGIL_USER                 your name in commands (`by`; default: $USER)\n"
    CLI_HELP_ENV_LOG
    "These commands read topics only (retained state and events), never Redis.\n";

static const cli_help_entry OPS_HELP[] = {
    { "persona",
      "usage: vigil persona status [ROOM | PERSONA] [--json]\n"
      "       vigil persona sleep PERSONA ROOM [--for DURATION | --until TIME] [--json]\n"
      "       vigil persona wake PERSONA ROOM [--json]\n"
      "       vigil persona level PERSONA ROOM LEVEL [--for DURATION | --until TIME] [--json]\n"
      "\n"
      "The dormancy of AI personas, as dormancy-monitor keeps it. Each subcommand has --help.\n",
      "Exit status: 0 ok, 1 runtime error (broker unreachable, no answer in time), 2 usage\n"
      "error, 3 persona or room not found (status), 5 the command was refused (an error event\n"
      "of dormancy-monitor).\n", NULL },
    { "persona status",
      "usage: vigil persona status [ROOM | PERSONA] [--json]\n"
      "\n"
      "Each persona's dormancy level in each room: since when, the trigger and the reason\n"
      "of the last change, the end of a timed dormancy, the snooze of suggestions and the\n"
      "suggestion pending (level, trigger, reason, when its default yes applies); per room\n"
      "whether it is paused, the last human message, the AI-only stretch and the humans\n"
      "present. Read from the retained persona/+/state and room/+/state topics. ROOM or\n"
      "PERSONA limits the output to that room or persona (a name that is both shows both).\n"
      "  --json   one JSON object: {\"personas\": [{persona, room, level, since, trigger,\n"
      "           reason?, until?, snoozed_until?, pending?: {level, trigger, reason,\n"
      "           text?, expires, snooze_ms?}}], \"rooms\": [room/{r}/state payloads]}\n",
      "Exit status: 0 ok, 1 runtime error (broker unreachable), 2 usage error, 3 the ROOM or\n"
      "PERSONA given has no retained state.\n", NULL },
    { "persona sleep",
      "usage: vigil persona sleep PERSONA ROOM [--for DURATION | --until TIME] [--json]\n"
      "\n"
      "Puts PERSONA to sleep in ROOM: publishes {\"cmd\": \"dormant\", \"level\": \"sleep\"} on\n"
      "persona/PERSONA/command, waits for the resulting persona/PERSONA/dormancy event (or\n"
      "dormancy-monitor's error event about the command) and prints it.\n"
      "  --for DURATION   back to active after DURATION (90s, 30m, 1h30m, 1.5h, 2d)\n"
      "  --until TIME     back to active at the next TIME of day, local time (17:00, 5pm)\n"
      "  --json           print the event as received (one JSON line)\n"
      "When the persona is already at that level with the same end (or none for none),\n"
      "nothing is sent. A new end at the same level (or none instead of one) is sent; its\n"
      "answer may be dormancy-monitor's new persona/PERSONA/state instead of an event:\n"
      "\"P is now sleep in R until T (no level change)\" (--json: {persona, room, level,\n"
      "until?, unchanged: true, sent: true}; sent is false when nothing was sent).\n"
      "A persona without an entry in ROOM is added to it by the command; when the level\n"
      "does not change the answer is its new state: \"P is now active in R (added to the\n"
      "room)\" (--json: {persona, room, level, until?, added: true, sent: true}). A persona\n"
      "without any state (a typo?) gets a warning on stderr that it has now been added.\n",
      "Exit status: 0 applied (or nothing to do), 1 runtime error (broker unreachable, no\n"
      "answer within VIGIL_CLI_TIMEOUT_MS: is dormancy-monitor running? The retained state\n"
      "alone is no answer), 2 usage error,\n"
      "5 refused (dormancy-monitor published an error event; its reason is printed).\n", NULL },
    { "persona wake",
      "usage: vigil persona wake PERSONA ROOM [--json]\n"
      "\n"
      "Wakes PERSONA in ROOM (back to active): publishes {\"cmd\": \"awake\"} on\n"
      "persona/PERSONA/command and waits for the resulting dormancy event, as `sleep`\n"
      "(a persona new in ROOM: its new state).\n"
      "  --json   print the event as received (one JSON line)\n",
      "Exit status: 0 applied (or nothing to do), 1 runtime error (broker unreachable, no\n"
      "answer within VIGIL_CLI_TIMEOUT_MS), 2 usage error, 5 refused (error event).\n", NULL },
    { "persona level",
      "usage: vigil persona level PERSONA ROOM LEVEL [--for DURATION | --until TIME] [--json]\n"
      "\n"
      "Sets PERSONA's level in ROOM: active, mention-only, human-only or sleep (active is\n"
      "`wake`), and waits for the resulting dormancy event, as `sleep` (a persona new in\n"
      "ROOM at the level it is added at: its new state). --for, --until and --json as\n"
      "`sleep`.\n",
      "Exit status: 0 applied (or nothing to do), 1 runtime error (broker unreachable, no\n"
      "answer within VIGIL_CLI_TIMEOUT_MS), 2 usage error, 5 refused (error event).\n", NULL },
    { "status",
      "usage: vigil status [--json] [--host HOST] [--port SERVICE=PORT]... [--no-default-ports]\n"
      "                    [--no-http]\n"
      "\n"
      "Every service instance's retained sys/<service>/<instance>/status (state, version,\n"
      "shard, since) and, for each HTTP port that answers, GET /readyz. Ports probed on HOST\n"
      "(default 127.0.0.1): dormancy-monitor 9101, wake-evaluator 9102, chat-router 9103,\n"
      "heartbeat 9104, council 9105, stall-resumer 9106, presence-gateway 8080,\n"
      "floor-control 9108; --port SERVICE=PORT adds or replaces one (repeatable). A default\n"
      "port where nothing listens is shown as unreachable and is no failure; a port given\n"
      "with --port must answer.\n"
      "Instance states: ready, disconnected (stopped cleanly: no failure while another\n"
      "instance runs), lost (the broker published its last will: the process died or lost\n"
      "the network).\n"
      "  --json     one JSON object: {\"instances\": [status payloads], \"http\": [{service,\n"
      "             host, port, reachable, status, ready}], \"ready\": bool}\n"
      "  --no-http  only the retained statuses\n"
      "  --no-default-ports  probe only the --port ones\n",
      "Exit status: 0 everything ready, 1 runtime error (broker unreachable), 2 usage error,\n"
      "6 not ready: an instance is lost (and no later instance of its service and shard is\n"
      "ready: then it shows as \"lost (replaced)\"), a /readyz answered other than 200, a\n"
      "--port did not answer, nothing reports at all (no retained status, no port\n"
      "answering: a wrong VIGIL_MQTT_URL or VIGIL_TOPIC_PREFIX, or nothing deployed), or\n"
      "no instance is running (every one that reports is disconnected or lost, and no port\n"
      "answers /readyz with 200: the deployment is stopped).\n", NULL },
    { "errors",
      "usage: vigil errors [--follow] [--service SERVICE] [--json]\n"
      "\n"
      "The error events services publish on sys/<service>/error for every input they refuse:\n"
      "one line each, TIME SERVICE REASON TOPIC DETAIL, then the sample of the input.\n"
      "Without --follow, prints what arrives within VIGIL_CLI_TIMEOUT_MS (error events are not\n"
      "retained: only the ones published meanwhile) and exits; with --follow, prints until\n"
      "interrupted (Ctrl-C), reconnecting by itself when the broker goes away: stderr says\n"
      "\"connection to the broker lost; reconnecting\" and then \"... is back\", so silence\n"
      "means no errors, not no connection. The sample is printed as the service escaped it.\n"
      "  --service S   only sys/S/error\n"
      "  --json        each event as published, one JSON line\n",
      "Exit status: 0 ok, 1 runtime error (broker unreachable), 2 usage error.\n", NULL },
};

bool ops_help(const char *name, FILE *f)
{
    return cli_help_print(OPS_HELP, sizeof OPS_HELP / sizeof OPS_HELP[0], name, OPS_ENV_HELP, "",
                          f);
}

int ops_usage_error(const char *name, const char *msg)
{
    fprintf(stderr, "vigil: %s\nTry 'vigil %s --help'.\n", msg, name);
    return CLI_ERR_USAGE;
}

int ops_opt_error(const char *name, int opt, int optopt_value, char **argv)
{
    char msg[160];
    cli_opt_message(opt, optopt_value, argv, msg, sizeof msg);
    return ops_usage_error(name, msg);
}
