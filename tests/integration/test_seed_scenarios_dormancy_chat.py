"""Scenarios of the auto-dormancy specification that no other file drives
end to end, run as an outside checker would: only what topics/ and the
READMEs tell a user to publish (retained persona metas, room messages,
persona commands, room/{r}/autopilot decisions), with the thresholds shrunk
by the documented VIGIL_DORMANCY_* variables, and the outputs checked on
their topics, texts byte for byte with real emoji.

Covered here: the dormancy autopilot's decisions as dormancy-monitor applies
them (suggest-mention-only as a yes/no suggestion, auto-sleep, wake, and the
guard "High participation rate (10+ messages/hour)" flowing from
wake-evaluator's autopilot into a suggestion), adaptive thresholds (3/5/7 of
the no-human threshold by conversation velocity), the per-persona
DormancyConfig switches and thresholds read from a meta's `dormancy`, the
pile-on window (a responder after the window is not counted), the
specified "Emergency: production is down!" integration scenario with both
services (each tier, and the per-persona LLM wake settings), presence
(idle and away readers do not block, an active one does until away), the
15-minute hard stop holding while wake-evaluator's autopilot runs, and
the specified unit scenario "auto-wakes on human message" taken literally
(setDormancy('sleep') as a `dormant` command).

The seed's chat scenarios (003: forwarding, pause/resume with the queue,
depth 100, the chat commands) are driven end to end by
test_chat_router.py and test_cli.py already."""

import json
import time

from conftest import ai, command, human, uid, validate_outputs, wake_levels
from fake_servers import FakeLLM, running
from harness import now_ms, scaled, wait_until

SUGGEST_TEXT = "\U0001F4A4 No human activity for {}. Switch to mention-only? [Yes] [No] [Snooze {}]"
SLEEP_TEXT = ("\U0001F4A4 Auto-sleeping due to extended AI-only discussion. "
              "You'll wake when a human sends any message.")
SLEEP_TEXT_NO_AUTO_WAKE = ("\U0001F4A4 Auto-sleeping due to extended AI-only discussion. "
                           "You'll wake when mentioned or woken by a wake decision or command.")
WAKE_TEXT = "\u2728 Human activity detected. Waking from dormancy."
REDUNDANT_TEXT = "\U0001F4A4 Multiple AIs already responded. Switch to mention-only? [Yes] [No]"
AP_SUGGEST_TEXT = "\U0001F4A4 The dormancy autopilot suggests stepping back. Switch to mention-only? [Yes] [No]"
AP_YES_TEXT = "\U0001F4A4 Switching to mention-only on the dormancy autopilot's suggestion."
AP_SLEEP_TEXT = "\U0001F4A4 Auto-sleeping on the dormancy autopilot's decision."
AP_WAKE_TEXT = "\u2728 The dormancy autopilot wakes you."
DOMINATING_REASON = "High participation rate (10+ messages/hour), letting others contribute"


def publish_meta(pub, persona, room, **extra):
    """A persona runner's retained meta, as the README's example writes it."""
    body = {"persona": persona, "name": persona.capitalize(), "rooms": [room], "role": "helper",
            "expertise_domains": [], "confidence_levels": {}, "availability": 1}
    body.update(extra)
    pub.publish(f"persona/{persona}/meta", json.dumps(body).encode(), retain=True)


def wait_members(col, room, personas, timeout=10):
    return col.wait_event(f"room/{room}/state", lambda s: all(p in s["personas"] for p in personas),
                          timeout=timeout, what=f"{personas} members of {room}")


def with_rules_autopilot(stack, room_prefix, personas, dormancy_env, interval_ms):
    """dormancy-monitor with dormancy_env, and wake-evaluator without an LLM
    running the autopilot (rules and guards only) every interval_ms, never
    early; basic-tier personas, members of a new room by their metas.
    Returns (collector, publisher, room)."""
    stack.service("dormancy-monitor", env=dormancy_env)
    stack.service("wake-evaluator", env={"VIGIL_LLM_URL": "", "VIGIL_AUTOPILOT": 1,
                                         "VIGIL_AUTOPILOT_INTERVAL_MS": interval_ms,
                                         "VIGIL_AUTOPILOT_JUMP_RATIO": 1e6,
                                         "VIGIL_AUTOPILOT_JUMP_VELOCITY": 1e6})
    col = stack.collector()
    pub = stack.publisher()
    room = uid(room_prefix)
    for p in personas:
        publish_meta(pub, p, room, tier="basic")
    wait_members(col, room, personas)
    return col, pub, room


# --------------------------------------------------------------------------
# The dormancy autopilot, as dormancy-monitor applies its decisions


def test_autopilot_decisions_become_a_suggestion_a_sleep_and_a_wake(stack):
    """room/{r}/autopilot published by hand, as the README's "Try each rule"
    does: suggest-mention-only is a yes/no suggestion whose "Yes" switches
    to mention-only; auto-sleep is forced (and chosen: a human message met
    by enough awake personas does not undo it); wake wakes; a persona with
    enableAutoSleep false is asked instead of put to sleep."""
    stack.service(env={"VIGIL_DORMANCY_SUGGESTION_TIMEOUT_MS": 60000, "VIGIL_DORMANCY_MIN_AWAKE": 2})
    col = stack.collector()
    pub = stack.publisher()
    room = uid("ap")
    personas = ["ann", "bob", "cy", "dee"]
    for p in personas:
        publish_meta(pub, p, room, **({"dormancy": {"enableAutoSleep": False}} if p == "dee" else {}))
    wait_members(col, room, personas)
    mark = col.mark()
    pub.publish(f"room/{room}/autopilot", {"id": uid("ap"), "ts": now_ms(), "room": room, "source": "rules",
                                           "decisions": [
        {"persona": "ann", "action": "suggest-mention-only", "reason": "chatty"},
        {"persona": "bob", "action": "auto-sleep", "reason": "meta-loop"},
        {"persona": "cy", "action": "keep", "reason": "fine"},
        {"persona": "dee", "action": "auto-sleep", "reason": "meta-loop"},
        {"persona": "ghost", "action": "wake", "reason": "not in the room"}]})

    s = col.wait_event("persona/ann/suggestion", timeout=10, since=mark)
    assert s["trigger"] == "autopilot" and s["suggest"] == "mention-only", s
    assert s["text"] == AP_SUGGEST_TEXT and s["options"] == ["yes", "no"] and s["default"] == "yes", s
    assert "snooze_ms" not in s and "chatty" in s["reason"], s

    e = col.wait_event("persona/bob/dormancy", timeout=10, since=mark)
    assert (e["level"], e["previous"], e["trigger"]) == ("sleep", "active", "autopilot"), e
    assert e["text"] == AP_SLEEP_TEXT and "meta-loop" in e["reason"], e

    # auto-sleep switched off for dee: the same suggestion instead
    s_dee = col.wait_event("persona/dee/suggestion", timeout=10, since=mark)
    assert s_dee["trigger"] == "autopilot" and s_dee["text"] == AP_SUGGEST_TEXT, s_dee
    assert not col.find("persona/dee/dormancy", since=mark), "dee was put to sleep with auto-sleep off"
    assert not col.find("persona/cy/dormancy", since=mark) and not col.find("persona/cy/suggestion")
    assert not col.find("persona/ghost/#"), "a persona of no room was acted on"

    # "Yes", as the button reads
    pub.publish(*command("ann", "answer", room=room, suggestion_id=s["id"], answer="Yes", by="ann"))
    e = col.wait_event("persona/ann/dormancy", timeout=10, since=mark)
    assert (e["level"], e["previous"]) == ("mention-only", "active"), e
    assert e["trigger"] == "autopilot" and e["text"] == AP_YES_TEXT, e

    # the autopilot's sleep is a chosen one: cy and dee still answer
    # the human, so bob stays asleep
    mark = col.mark()
    pub.publish(*human(room, "joel", "quick question", mid="hq-ap"))
    col.wait_event(f"room/{room}/state", lambda st: st["last_human_ts"] is not None, timeout=10, since=mark)
    time.sleep(scaled(0.3))
    assert not col.find("persona/bob/dormancy", since=mark), "a chosen sleep was undone by a human message"

    pub.publish(f"room/{room}/autopilot", {"id": uid("ap"), "ts": now_ms(), "room": room, "source": "llm",
                                           "decisions": [
        {"persona": "bob", "action": "wake", "reason": "the human needs him"}]})
    e = col.wait_event("persona/bob/dormancy", timeout=10, since=mark)
    assert (e["level"], e["previous"], e["trigger"]) == ("active", "sleep", "autopilot"), e
    assert e["text"] == AP_WAKE_TEXT and e["reason"] == "autopilot (llm): the human needs him", e
    assert not col.find("sys/dormancy-monitor/error"), col.events("sys/dormancy-monitor/error")
    validate_outputs(col)


def test_dominating_persona_is_suggested_mention_only_through_both_services(stack):
    """The specified coordination rule 3 end to end: wake-evaluator's
    autopilot (rules only, no LLM) sees a persona with more than 10 messages
    in the last hour and decides suggest-mention-only with the specified
    reason; dormancy-monitor turns it into a yes/no suggestion to that
    persona alone."""
    col, pub, room = with_rules_autopilot(stack, "dom", ["chatty", "quiet"],
                                          {"VIGIL_DORMANCY_SUGGESTION_TIMEOUT_MS": 60000,
                                           "VIGIL_DORMANCY_REDUNDANT_KEEP": 100}, 1000)
    pub.publish(*human(room, "joel", "what do you two think about the plan?"))
    pub.publish(*ai(room, "quiet", "one thought"))
    for i in range(12):
        pub.publish(*ai(room, "chatty", f"point {i} about the plan"))
    ap = col.wait_event(f"room/{room}/autopilot",
                        lambda e: any(d["persona"] == "chatty" and d["action"] == "suggest-mention-only"
                                      for d in e["decisions"]),
                        timeout=20, what="the autopilot's suggest-mention-only for chatty")
    d = [d for d in ap["decisions"] if d["persona"] == "chatty"][0]
    assert d["reason"] == DOMINATING_REASON, d
    assert all(d["persona"] != "quiet" or d["action"] == "keep" for d in ap["decisions"]), ap

    s = col.wait_event("persona/chatty/suggestion", lambda s: s["trigger"] == "autopilot", timeout=10)
    assert s["text"] == AP_SUGGEST_TEXT and s["options"] == ["yes", "no"], s
    assert s["reason"] == f"autopilot (rules): {DOMINATING_REASON}", s
    assert not col.find("persona/quiet/suggestion"), "the quiet persona was asked to step back"
    pub.publish(*command("chatty", "answer", room=room, suggestion_id=s["id"], answer="yes", by="chatty"))
    e = col.wait_event("persona/chatty/dormancy", timeout=10)
    assert e["level"] == "mention-only" and e["text"] == AP_YES_TEXT, e
    validate_outputs(col)


# --------------------------------------------------------------------------
# Adaptive thresholds (rule 7)


def test_adaptive_threshold_is_3_5_or_7_by_velocity(stack):
    """VIGIL_DORMANCY_ADAPTIVE=1 with a 5 s no-human threshold: a room
    running above 5 messages a minute, mostly AI, is suggested after 3 s; a
    room of 1-5 messages a minute after 5 s; a room below 1 after 7 s. Each
    suggestion says the threshold in force. The velocity window is 10 min,
    so a young room is measured over at least 2 minutes."""
    no_human = 5000
    stack.service(env={"VIGIL_DORMANCY_ADAPTIVE": 1, "VIGIL_DORMANCY_NO_HUMAN_MS": no_human,
                       "VIGIL_DORMANCY_VELOCITY_WINDOW_MS": 600000,
                       "VIGIL_DORMANCY_SUGGESTION_TIMEOUT_MS": 60000,
                       "VIGIL_DORMANCY_AI_ONLY_MS": 600000, "VIGIL_DORMANCY_REDUNDANT_KEEP": 100})
    col = stack.collector()
    pub = stack.publisher()
    fast, mid, slow = uid("fast"), uid("mid"), uid("slow")
    rooms = {fast: ("fa", "fb"), mid: ("ma", "mb"), slow: ("sa",)}
    for room, ps in rooms.items():
        for p in ps:
            publish_meta(pub, p, room)
    for room, ps in rooms.items():
        wait_members(col, room, ps)
    t0 = {}
    # fast: 1 human + 12 AI messages = 6.5 a minute over 2 min, ratio 12
    pub.publish(*human(fast, "joel", "go ahead without me"))
    t0[fast] = time.monotonic()
    for i in range(12):
        pub.publish(*ai(fast, rooms[fast][i % 2], f"point {i}"))
    # middle: 1 human + 2 AI = 1.5 a minute
    pub.publish(*human(mid, "joel", "thoughts?"))
    t0[mid] = time.monotonic()
    pub.publish(*ai(mid, "ma", "one"))
    pub.publish(*ai(mid, "mb", "two"))
    # slow: 1 human message = 0.5 a minute
    pub.publish(*human(slow, "joel", "I will read along"))
    t0[slow] = time.monotonic()

    want = {fast: (3000, "3s"), mid: (5000, "5s"), slow: (7000, "7s")}
    for room, (ms, text) in want.items():
        for p in rooms[room]:
            s = col.wait_event(f"persona/{p}/suggestion", timeout=ms / 1000 + 10)
            assert s["room"] == room and s["trigger"] == "no-human", s
            assert s["text"] == SUGGEST_TEXT.format(text, "5min"), (room, s["text"])
            t = col.find(f"persona/{p}/suggestion")[0].t
            assert t - t0[room] >= ms / 1000 - 0.3, f"{p} asked {t - t0[room]:.2f}s after the human ({text})"
    t_fast = min(m.t for p in rooms[fast] for m in col.find(f"persona/{p}/suggestion"))
    t_mid = min(m.t for p in rooms[mid] for m in col.find(f"persona/{p}/suggestion"))
    assert t_fast - t0[fast] < t_mid - t0[mid], "the busy room was not asked sooner"
    validate_outputs(col)


# --------------------------------------------------------------------------
# DormancyConfig: per-persona overrides read from the meta's `dormancy`


def test_per_persona_dormancy_config_switches_and_threshold(stack):
    """One room, each persona with its own DormancyConfig:
    ann enableAutoWake false (auto-slept with the text that does not promise
    a human wake, and a human does not wake her; an @mention does), bob
    enableAutoSleep false (never forced to sleep), dee
    enableAutoSuggestions false (never asked), eve noHumanActivityThreshold
    of her own (asked later, her threshold in the text), cy the defaults."""
    no_human, eve_no_human, ai_only = 1000, 2000, 4000
    stack.service(env={"VIGIL_DORMANCY_NO_HUMAN_MS": no_human, "VIGIL_DORMANCY_AI_ONLY_MS": ai_only,
                       "VIGIL_DORMANCY_SUGGESTION_TIMEOUT_MS": 60000, "VIGIL_DORMANCY_MIN_AWAKE": 2})
    col = stack.collector()
    pub = stack.publisher()
    room = uid("cfg")
    cfg = {"ann": {"enableAutoWake": False}, "bob": {"enableAutoSleep": False},
           "cy": {}, "dee": {"enableAutoSuggestions": False},
           "eve": {"noHumanActivityThreshold": eve_no_human}}
    for p, d in cfg.items():
        publish_meta(pub, p, room, dormancy=d)
    wait_members(col, room, list(cfg))
    pub.publish(*ai(room, "cy", "Starting AI discussion"))
    t0 = time.monotonic()

    for p in ("ann", "bob", "cy"):
        s = col.wait_event(f"persona/{p}/suggestion", timeout=10)
        assert s["text"] == SUGGEST_TEXT.format("1s", "5min"), s
    s = col.wait_event("persona/eve/suggestion", timeout=10)
    assert s["text"] == SUGGEST_TEXT.format("2s", "5min"), s
    t_eve = col.find("persona/eve/suggestion")[0].t
    assert t_eve - t0 >= eve_no_human / 1000 - 0.3, "eve asked before her own threshold"

    for p in ("ann", "cy", "dee", "eve"):
        e = col.wait_event(f"persona/{p}/dormancy", lambda e: e["level"] == "sleep", timeout=10)
        assert e["trigger"] == "ai-only", e
        assert e["text"] == (SLEEP_TEXT_NO_AUTO_WAKE if p == "ann" else SLEEP_TEXT), (p, e["text"])
    assert not col.find("persona/dee/suggestion"), "asked with enableAutoSuggestions false"
    assert not col.find("persona/bob/dormancy"), "forced to sleep with enableAutoSleep false"

    mark = col.mark()
    pub.publish(*human(room, "joel", "I'm back", mid="back-1"))
    for p in ("cy", "dee", "eve"):
        e = col.wait_event(f"persona/{p}/dormancy", lambda e: e["level"] == "active", timeout=10, since=mark)
        assert e["trigger"] == "human-reentry" and e["text"] == WAKE_TEXT and e["message_id"] == "back-1", e
    time.sleep(scaled(0.3))
    assert not col.find("persona/ann/dormancy", since=mark), "a human woke ann with enableAutoWake false"

    pub.publish(*ai(room, "bob", "@Ann your view?", mid="mn-ann"))
    e = col.wait_event("persona/ann/dormancy", timeout=10, since=mark)
    assert (e["level"], e["trigger"], e["message_id"]) == ("active", "mention", "mn-ann"), e
    assert e["text"] == "\u2728 Mentioned by bob. Waking from sleep.", e
    validate_outputs(col)


# --------------------------------------------------------------------------
# Redundant responses: the window


def test_a_responder_after_the_window_is_not_a_pile_on(stack):
    """Rule 4 with the window shrunk to 1.5 s (the specified 30 s): two
    answers at once, a third after the window is not counted (no
    suggestion), while a persona whose own redundantResponseWindow is 60 s
    answering at the same time is the third responder within its window."""
    window = 1500
    stack.service(env={"VIGIL_DORMANCY_REDUNDANT_WINDOW_MS": window, "VIGIL_DORMANCY_REDUNDANT_KEEP": 2,
                       "VIGIL_DORMANCY_SUGGESTION_TIMEOUT_MS": 60000})
    col = stack.collector()
    pub = stack.publisher()
    room = uid("pile")
    personas = ["r1", "r2", "late", "patient"]
    for p in personas:
        publish_meta(pub, p, room, **({"dormancy": {"redundantResponseWindow": 60000}}
                                      if p == "patient" else {}))
    wait_members(col, room, personas)
    pub.publish(*human(room, "joel", "How do I reverse a list?", mid="q-w"))
    t_q = time.monotonic()
    pub.publish(*ai(room, "r1", "like this", reply_to="q-w"))
    pub.publish(*ai(room, "r2", "or like this", reply_to="q-w"))
    time.sleep(max(0.0, window / 1000 + 0.5 - (time.monotonic() - t_q)))
    mark = col.mark()
    pub.publish(*ai(room, "late", "also this", reply_to="q-w", mid="late-1"))
    pub.publish(*ai(room, "patient", "and this", reply_to="q-w"))
    s = col.wait_event("persona/patient/suggestion", timeout=10, since=mark)
    assert s["text"] == REDUNDANT_TEXT and s["trigger"] == "redundant" and s["message_id"] == "q-w", s
    time.sleep(scaled(0.3))
    for p in ("r1", "r2", "late"):
        assert not col.find(f"persona/{p}/suggestion"), f"{p} was asked to step back"
    validate_outputs(col)


# --------------------------------------------------------------------------
# The specified "LLM wake decision" integration scenario, both services


EMERGENCY = "Emergency: production is down!"
LLM_RULES = [
    {"regex": r'Text: "Emergency: production is down',
     "reply": {"shouldWake": True, "reason": "production outage, a human needs help now", "confidence": 0.9}},
    {"regex": r'New message: "Emergency: production is down',
     "reply": {"shouldWake": True, "reason": "urgent"}},
    {"match": "You are the Dormancy Autopilot", "reply": []},
    {"reply": {"shouldWake": False, "reason": "not relevant", "confidence": 0.6}},
]


def test_emergency_from_a_human_makes_the_sleepers_evaluate_and_wake(stack, tmp_path):
    """"Emergency: production is down!" sent by a human while the AIs sleep
    by choice (so human re-entry does not wake them, and
    VIGIL_DORMANCY_MIN_AWAKE=0 keeps its guarantee out): each sleeper is
    evaluated at its tier and woken by the decision. The DormancyConfig's
    LLM wake settings apply per persona: `strict`'s wakeConfidenceThreshold
    0.95 is above the model's 0.9, so it stays asleep; `plain` has
    enableLLMWakeDecisions false, so the rules decide (a human asked)."""
    with running(FakeLLM, tmp_path, rules=LLM_RULES) as llm:
        stack.service("dormancy-monitor", env={"VIGIL_DORMANCY_MIN_AWAKE": 0})
        stack.service("wake-evaluator", env={"VIGIL_LLM_URL": llm.url, "VIGIL_LLM_TIMEOUT_MS": 5000,
                                             "VIGIL_LLM_RETRIES": 0, "VIGIL_AUTOPILOT": 0})
        col = stack.collector()
        pub = stack.publisher()
        room = uid("emerg")
        metas = {"sre": {"tier": "smart"}, "dev": {"tier": "mid"}, "tiny": {"tier": "basic"},
                 "strict": {"tier": "smart", "dormancy": {"wakeConfidenceThreshold": 0.95}},
                 "plain": {"tier": "smart", "dormancy": {"enableLLMWakeDecisions": False}}}
        for p, extra in metas.items():
            publish_meta(pub, p, room, **extra)
        wait_members(col, room, list(metas))
        for p in metas:
            pub.publish(*ai(room, p, "@self dormant sleep"))
        col.wait_event(f"room/{room}/state", lambda s: all(s["personas"].get(p) == "sleep" for p in metas),
                       timeout=10, what="everyone asleep by choice")
        # wake-evaluator learns the levels from the retained persona/{p}/state:
        # the message must find them in its room record, or it evaluates nobody
        wait_until(lambda: all(wake_levels(stack, room).get(p) == "sleep" for p in metas),
                   10, "wake-evaluator holds everyone asleep", interval=0.05)

        mark = col.mark()
        pub.publish(*human(room, "joel", EMERGENCY, mid="emerg-1"))
        decisions = {}
        for p in metas:
            decisions[p] = col.wait_event(f"persona/{p}/wake", lambda w: w["message_id"] == "emerg-1",
                                          timeout=20, since=mark)
        assert decisions["sre"]["should_wake"] and decisions["sre"]["via"] == "llm", decisions["sre"]
        assert decisions["sre"]["confidence"] > 0.8 and decisions["sre"]["tier"] == "smart"
        assert decisions["dev"]["should_wake"] and decisions["dev"]["tier"] == "mid", decisions["dev"]
        assert decisions["tiny"]["should_wake"] and decisions["tiny"]["via"] == "rules", decisions["tiny"]
        assert not decisions["strict"]["should_wake"] and decisions["strict"]["confidence"] == 0.9, \
            decisions["strict"]
        assert decisions["plain"]["should_wake"] and decisions["plain"]["via"] == "rules", decisions["plain"]

        for p in ("sre", "dev", "tiny", "plain"):
            e = col.wait_event(f"persona/{p}/dormancy", lambda e: e["level"] == "active", timeout=10, since=mark)
            assert e["trigger"] == "wake-decision" and e["message_id"] == "emerg-1", e
            assert e["text"] == f"\u2728 Waking: {decisions[p]['reason']}", e
        time.sleep(scaled(0.3))
        assert not col.find("persona/strict/dormancy", since=mark), "woken below its own confidence threshold"
        validate_outputs(col)


# --------------------------------------------------------------------------
# Presence (rule 6): idle and away readers do not hold dormancy back


def test_idle_or_away_readers_do_not_block_and_an_active_one_does_until_away(stack):
    """The specified presence check with VIGIL_DORMANCY_PRESENCE=1: "If any
    human is actively present, don't suggest dormancy; if all humans are
    idle/away, suggest dormancy". Heartbeats as a browser sends them on
    room/{r}/presence, with fresh last_activity: a session reported idle
    (one room) or away (another) counts as such at once, so the suggestion
    comes at the threshold; an active one holds it back until the same
    session reports away, when the suggestion that came due meanwhile is
    made."""
    no_human = 1500
    stack.service(env={"VIGIL_DORMANCY_PRESENCE": 1, "VIGIL_DORMANCY_NO_HUMAN_MS": no_human,
                       "VIGIL_DORMANCY_SUGGESTION_TIMEOUT_MS": 60000, "VIGIL_DORMANCY_AI_ONLY_MS": 600000})
    col = stack.collector()
    pub = stack.publisher()
    rooms = {"idle": uid("pi"), "away": uid("pa"), "active": uid("pr")}
    persona = {k: f"helper-{k}" for k in rooms}
    for k, room in rooms.items():
        publish_meta(pub, persona[k], room)
    for k, room in rooms.items():
        wait_members(col, room, [persona[k]])
    t0 = time.monotonic()
    for k, room in rooms.items():
        pub.publish(*human(room, "joel", "reading along"))
        pub.publish(f"room/{room}/presence", {"user": "joel", "session": f"tab-{k}", "status": k,
                                              "last_activity": now_ms()})
    st = col.wait_event(f"room/{rooms['active']}/state", lambda s: "joel" in s["humans_present"], timeout=10)
    assert st["humans_present"] == ["joel"], st
    for k in ("idle", "away"):
        s = col.wait_event(f"persona/{persona[k]}/suggestion", timeout=10)
        assert s["trigger"] == "no-human" and s["text"] == SUGGEST_TEXT.format("1500ms", "5min"), s
        st = col.events(f"room/{rooms[k]}/state")[-1]
        assert "joel" not in st["humans_present"], (k, st)
    # well past the threshold: the active reader still holds it back
    time.sleep(max(0.0, t0 + no_human / 1000 + scaled(1.0) - time.monotonic()))
    assert not col.find(f"persona/{persona['active']}/suggestion"), "suggested while a human is active"

    mark = col.mark()
    pub.publish(f"room/{rooms['active']}/presence", {"userId": "joel", "sessionId": "tab-active",
                                                     "status": "away", "lastActivity": now_ms()})
    s = col.wait_event(f"persona/{persona['active']}/suggestion", timeout=10, since=mark)
    assert s["trigger"] == "no-human" and s["text"] == SUGGEST_TEXT.format("1500ms", "5min"), s
    col.wait_event(f"room/{rooms['active']}/state", lambda s: "joel" not in s["humans_present"],
                   timeout=10, since=mark)
    validate_outputs(col)


# --------------------------------------------------------------------------
# The specified unit scenario "auto-wakes on human message", literally


def test_set_dormancy_sleep_then_a_human_message_wakes_it(stack):
    """setDormancy('sleep') is the `dormant` command; then a human message:
    the persona is active again. It slept by choice, so what wakes it is the
    guarantee that a human never meets fewer than VIGIL_DORMANCY_MIN_AWAKE
    (2) personas able to answer: alone in the room, it is woken, with the
    re-entry text."""
    stack.service()
    col = stack.collector()
    pub = stack.publisher()
    room = uid("lit")
    publish_meta(pub, "ada", room)
    wait_members(col, room, ["ada"])
    pub.publish(*command("ada", "dormant", level="sleep", room=room, by="ada"))
    e = col.wait_event("persona/ada/dormancy", timeout=10)
    assert e["level"] == "sleep" and e["text"] == "\U0001F4A4 Switching to sleep (requested by ada).", e
    mark = col.mark()
    pub.publish(*human(room, "joel", "simulated human message", mid="h-lit"))
    e = col.wait_event("persona/ada/dormancy", timeout=10, since=mark)
    assert (e["level"], e["previous"], e["trigger"]) == ("active", "sleep", "human-reentry"), e
    assert e["text"] == WAKE_TEXT and e["message_id"] == "h-lit", e
    st = col.wait_event("persona/ada/state", lambda s: s["rooms"][room]["level"] == "active", timeout=10,
                        since=mark)
    assert st["rooms"][room]["trigger"] == "human-reentry", st
    validate_outputs(col)


# --------------------------------------------------------------------------
# The 15-minute hard stop with the autopilot running


def test_the_autopilot_does_not_undo_the_ai_only_hard_stop(stack):
    """Rule 2 is forced ("hard stop for perpetual motion loops"), and the
    human's next message ends it. With wake-evaluator's autopilot running,
    its guard "a present human never meets an all-asleep room" must not
    wake a persona the hard stop just put to sleep: the human who started
    the discussion wrote within VIGIL_AUTOPILOT_HUMAN_PRESENT_MS (5 min,
    left at its default as an outside tester shrinking only the documented
    VIGIL_DORMANCY_* thresholds would), yet the AIs have talked alone for
    the AI-only threshold. "I'm back" then wakes them all."""
    ai_only = 3000
    personas = ["ann", "bob"]
    col, pub, room = with_rules_autopilot(stack, "stop", personas,
                                          {"VIGIL_DORMANCY_AI_ONLY_MS": ai_only,
                                           "VIGIL_DORMANCY_NO_HUMAN_MS": 600000,
                                           "VIGIL_DORMANCY_REDUNDANT_KEEP": 100}, 500)
    pub.publish(*human(room, "joel", "Starting AI discussion"))
    i = 0
    deadline = time.monotonic() + ai_only / 1000 + scaled(10)
    while not all(col.find(f"persona/{p}/dormancy") for p in personas):
        assert time.monotonic() < deadline, "the AI-only sleep did not come"
        pub.publish(*ai(room, personas[i % 2], f"point {i} about the design"))
        i += 1
        time.sleep(0.3)
    for p in personas:
        e = col.wait_event(f"persona/{p}/dormancy", timeout=1)
        assert (e["level"], e["trigger"], e["text"]) == ("sleep", "ai-only", SLEEP_TEXT), e
    # The AIs keep talking (their runners do not know they sleep), so the
    # autopilot runs on, with both asleep and the human "present": three
    # runs after wake-evaluator holds both asleep (it learns the levels
    # from the retained persona/{p}/state), and none may wake anyone
    # (nor any run before: nothing woke anyone since the test began).
    slept = 0
    woken = lambda: ([e for e in col.events("persona/+/dormancy", since=slept) if e["level"] == "active"] +  # noqa: E731
                     [d for e in col.events(f"room/{room}/autopilot", since=slept)
                      for d in e["decisions"] if d["action"] == "wake"])
    seen = None
    deadline = time.monotonic() + scaled(15)
    while not woken() and (seen is None or len(col.find(f"room/{room}/autopilot", since=seen)) < 3):
        assert time.monotonic() < deadline, f"the autopilot did not run with both asleep: {wake_levels(stack, room)}"
        if seen is None and all(wake_levels(stack, room).get(p) == "sleep" for p in personas):
            seen = col.mark()
        pub.publish(*ai(room, personas[i % 2], f"point {i} about the design"))
        i += 1
        time.sleep(0.3)
    time.sleep(scaled(0.3))
    assert not woken(), f"woken during the AI-only hard stop: {woken()}"

    mark = col.mark()
    pub.publish(*human(room, "joel", "I'm back", mid="back-stop"))
    for p in personas:
        e = col.wait_event(f"persona/{p}/dormancy", timeout=10, since=mark)
        assert (e["level"], e["previous"], e["trigger"]) == ("active", "sleep", "human-reentry"), e
        assert e["text"] == WAKE_TEXT and e["message_id"] == "back-stop", e
    validate_outputs(col)
