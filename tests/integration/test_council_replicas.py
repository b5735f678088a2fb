"""council as two replicas (VIGIL_SHARD 0/2 and 1/2) sharing one loop job
stream, with a kill -9 of a replica while deliberations are in flight:
no session is lost, no action runs twice, no question is asked twice."""

import json
import time

import pytest

import harness
from conftest import uid, validate_outputs
from council_support import OUTPUTS, SERVICE, FakeLLM, control, events, rules, sol
from fake_servers import running

LOOPS = 5


@pytest.fixture
def llm(tmp_path):
    with running(FakeLLM, tmp_path) as f:
        yield f


def pending_of(c, key, consumer):
    """Loop jobs the consumer holds unacknowledged on the job stream."""
    try:
        rows = c.xpending_range(key, "workers", min="-", max="+", count=1000, consumername=consumer)
    except Exception:  # the group is made at the first job
        return 0
    return len(rows)


@pytest.mark.parametrize("down_s", [0.0, 3.0], ids=["restarted-at-once", "down-past-the-lease"])
def test_two_replicas_lose_no_session_and_repeat_nothing_across_a_kill9(stack, llm, down_s):
    """Eight users, four in each replica's shard, each running a session of
    five loops (a question at loop 2, answered by the test, a search request
    at loop 4, notes between) while the model takes 800 ms an answer. While
    the replica of shard 1 holds loop jobs in flight it is killed with
    kill -9 and started again: at once (its own pending jobs run again), or
    after 3 s, past the 1.5 s job lease, so the other replica takes its
    jobs over and the restarted one finds them claimed or decided.
    Every session still runs its five loops and ends once; each loop has one
    action (one event id, one payload per id), each session one question
    and one search request, and the records say so."""
    llm.control(rules=rules(sol("ask user: [p7] Shall I keep going?", regex=r"loop 2 of"),
                            sol("search: deep work", regex=r"loop 4 of"),
                            sol("note: progress noted")), delay_ms=800)
    env = {"VIGIL_LLM_URL": llm.url, "VIGIL_LLM_TIMEOUT_MS": 10000, "VIGIL_LLM_RETRIES": 0,
           "VIGIL_COUNCIL_LOOP_MS": 300, "VIGIL_COUNCIL_MAX_LOOPS": LOOPS,
           "VIGIL_COUNCIL_JOB_LEASE_MS": 1500, "VIGIL_COUNCIL_AUTO_START": 0}
    replicas = [stack.service(SERVICE, instance=f"council-r{i}-{uid()[:4]}",
                              env=dict(env, VIGIL_SHARD=f"{i}/2")) for i in range(2)]
    col = stack.collector()
    pub = stack.publisher()
    tag = uid()[:6]
    users = harness.balanced_ids(lambda n: f"u-{tag}-{n}", 4)
    sessions = {u: f"s-{u}" for u in users}
    for u in users:
        pub.publish(*control(u, "start", session=sessions[u]))

    answered = set()

    def answer_questions():
        for s in sessions.values():
            for q in events(col, s, "question"):
                if q["question_id"] not in answered:
                    answered.add(q["question_id"])
                    pub.publish(f"council/{s}/answer", {"id": f"a-{q['question_id']}",
                                                         "question_id": q["question_id"],
                                                         "answer": "yes, keep going",
                                                         "ts": harness.now_ms()})

    key = f"{stack.prefix}{SERVICE}:jobs"
    victim = f"{replicas[1].instance}-w0"
    c = stack.redis.client()
    try:
        col.wait_for(lambda cl: all(events(cl, s) for s in sessions.values()), 30,
                     "every session's first event")
        # the victim holds loop jobs whose model calls are in flight
        harness.wait_until(lambda: (answer_questions(), pending_of(c, key, victim))[1] >= 1
                           and llm.stats()["in_flight"] >= 1, 30,
                           "replica 1 holding a loop job in flight", interval=0.05)
        replicas[1].kill9()
        time.sleep(down_s)
        replicas[1].start()

        def all_ended(cl):
            answer_questions()
            return all(any(e["type"] == "session_ended" for e in events(cl, s))
                       for s in sessions.values())

        col.wait_for(all_ended, 90, "every session to end")
        time.sleep(harness.scaled(0.5))  # a late copy would show now
        payloads = {}
        for m in col.find("council/+/event"):
            payloads.setdefault(m.json()["id"], set()).add(m.payload)
        assert all(len(p) == 1 for p in payloads.values())  # a copy is the same event
        for u, s in sessions.items():
            raw = [m.json() for m in col.find(f"council/{s}/event")]
            ids_per_loop = {}
            for e in raw:
                if e["type"] in ("action", "question", "deliberation"):
                    ids_per_loop.setdefault((e["type"], e["loop"]), set()).add(e["id"])
            assert all(len(v) == 1 for v in ids_per_loop.values()), (s, ids_per_loop)
            acts = events(col, s, "action")
            assert sorted(a["loop"] for a in acts) == list(range(1, LOOPS + 1)), (s, acts)
            assert [a["action"] for a in sorted(acts, key=lambda a: a["loop"])] == \
                ["note", "ask user", "note", "search", "note"], (s, acts)
            qs = events(col, s, "question")
            assert [q["question_id"] for q in qs] == [f"{s}.L2.q"], (s, qs)
            assert len(events(col, s, "session_ended")) == 1
            assert "loop limit" in events(col, s, "session_ended")[0]["reason"]
            assert len({m["id"] for m in col.events(f"council/{s}/request")}) == 1
            rec = json.loads(c.get(f"{stack.prefix}council:rec:{s}"))
            assert rec["actions"] == LOOPS and rec["status"] == "completed", rec
            assert [(q["id"], q["status"]) for q in rec["questions"]] == [(f"{s}.L2.q", "answered")]
            assert len(rec["notes"]) == 3, rec
            loops = [json.loads(m[b"m"])["loop"] for _, m in c.xrange(f"{stack.prefix}council:delib:{s}")]
            assert loops == list(range(1, LOOPS + 1)), (s, loops)
        # the path the kill meant to take was taken: the victim's jobs run
        # again by itself after the restart, or taken over by its peer
        if down_s:
            assert (replicas[0].metric("vigil_council_jobs_reclaimed_total") or 0) >= 1
        else:
            assert (replicas[1].metric("vigil_council_jobs_resumed_total") or 0) >= 1
        # nothing left unfinished on the job stream
        harness.wait_until(lambda: c.xlen(key) == 0, 20, "the job stream drained")
    finally:
        c.close()
    for r in replicas:
        r.wait_ready(timeout=30)
    validate_outputs(col, OUTPUTS)
