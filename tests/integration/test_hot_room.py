"""A busy room: the inputs of one room that a service reads together are
each decided on the one before's result and committed in one transaction
(the runtime's batched intake: a commit follows the previous one of its
record). The service is frozen while the room's messages queue at the
broker, so it reads them in large batches when it resumes:

- dormancy-monitor: 200 alternating "@self dormant sleep" / "hi" in one
  room give 200 events, once each, in input order, levels alternating, and
  the retained persona state is the last input's; the inputs shared
  transactions (vigil_commits_pipelined_total), each decided on the room
  as the service keeps it in memory (vigil_record_cache_lookups_total);
- chat-router: 300 messages in one room are logged once each, in input
  order, and the room's count is 300.
"""

import os
import signal

from chat_personas import CHAT, log_entries, room_state
from conftest import ai, human, uid
from harness import wait_until

SERVICE = "dormancy-monitor"
DORMANCY_ENV = {
    # every input is a manual sleep or a wake, none a timed rule
    "VIGIL_DORMANCY_NO_HUMAN_MS": "86400000", "VIGIL_DORMANCY_AI_ONLY_MS": "86400000",
    "VIGIL_DORMANCY_HUMAN_WAKES": "all",
}


def queued_while_frozen(svc, pub, items):
    """Publishes items while svc is stopped (the broker queues them for its
    session), then lets it run: it reads them in large batches."""
    os.kill(svc.proc.pid, signal.SIGSTOP)
    try:
        pub.publish_many(items, timeout=60)
    finally:
        os.kill(svc.proc.pid, signal.SIGCONT)


def assert_decided_in_memory(svc):
    """Every input was decided on the room's record as the service keeps it
    decoded: none was decided, refused by the store (it could not join its
    room's transaction) and decided again, which left a record never
    committed in that memory and made the next input decode the stored one
    (vigil_record_cache_lookups_total{result="miss"})."""
    assert svc.metric("vigil_record_cache_lookups_total", result="hit") >= 1
    assert svc.metric("vigil_record_cache_lookups_total", result="miss") in (None, 0)


def test_dormancy_keeps_a_busy_rooms_order(stack):
    svc = stack.service(SERVICE, env=DORMANCY_ENV)
    col = stack.collector(topics=("persona/+/dormancy", "persona/+/state"))
    pub = stack.publisher()
    room, persona = uid("room"), uid("p")
    # the room and its persona exist before the burst
    pub.publish(*ai(room, persona, "hello", mid="m-init"))
    wait_until(lambda: svc.metric("vigil_commits_total") >= 1, 20, "the first commit")
    n = 200
    items = [ai(room, persona, "@self dormant sleep", mid=f"m-{i}") if i % 2 == 0
             else human(room, "joel", "hi", mid=f"m-{i}") for i in range(n)]
    queued_while_frozen(svc, pub, items)
    topic = f"persona/{persona}/dormancy"
    events = col.wait_for(lambda c: (lambda e: e if len(e) >= n else None)(c.events(topic)), 60,
                          f"{n} dormancy events")
    ids = [e["message_id"] for e in events]
    assert ids == [f"m-{i}" for i in range(n)], ids[:20]
    levels = [e["level"] for e in events]
    assert levels[0::2] == ["sleep"] * (n // 2), levels[:20]
    assert "sleep" not in levels[1::2], levels[:20]
    state = col.wait_for(lambda c: [m for m in c.events(f"persona/{persona}/state")
                                    if m["rooms"].get(room, {}).get("level") == levels[-1]
                                    and m["ts"] >= events[-1]["ts"]], 20, "the last state")
    assert state[-1]["rooms"][room]["level"] == levels[-1]
    assert svc.metric("vigil_commits_pipelined_total") >= n / 2
    assert svc.metric("vigil_commit_conflicts_total") in (None, 0)
    assert_decided_in_memory(svc)


def test_chat_router_logs_a_busy_room_in_order(stack):
    svc = stack.service(CHAT)
    pub = stack.publisher()
    room = uid("room")
    pub.publish(*human(room, "joel", "first", mid="c-init"))
    wait_until(lambda: room_state(stack, room), 20, "the room's record")
    n = 300
    queued_while_frozen(svc, pub, [human(room, "joel", f"m{i}", mid=f"c-{i}") for i in range(n)])
    wait_until(lambda: (room_state(stack, room) or {}).get("count") == n + 1, 60,
               f"{n + 1} messages counted")
    ids = [m["id"] for _, m in log_entries(stack, room)]
    assert ids == ["c-init"] + [f"c-{i}" for i in range(n)], ids[:20]
    assert svc.metric("vigil_commits_pipelined_total") >= n / 2
    assert_decided_in_memory(svc)
