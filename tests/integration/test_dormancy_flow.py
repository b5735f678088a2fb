"""The specified integration flow, driven only by
publishes and observed on the topics, with thresholds in milliseconds:
AI-only talk gets each persona one mention-only suggestion, continued AI-only
talk auto-sleeps them all, and a human's "I'm back" wakes them. Plus the
suggestion answers, the suggest-don't-force default, the refined human
re-entry rule, @mention and pile-on detection, and a restart of the service
in the middle of a quiet period (the pending deadline fires exactly once)."""

import threading
import time

import pytest

import harness
from conftest import ai, command, human, uid, validate_outputs
from harness import scaled

# The notifications end with their options, as shown to the persona; {} are
# the threshold and the snooze length in force.
SUGGEST_TEXT = "\U0001F4A4 No human activity for {}. Switch to mention-only? [Yes] [No] [Snooze {}]"
SLEEP_TEXT = ("\U0001F4A4 Auto-sleeping due to extended AI-only discussion. "
              "You'll wake when a human sends any message.")
WAKE_TEXT = "\u2728 Human activity detected. Waking from dormancy."
REDUNDANT_TEXT = "\U0001F4A4 Multiple AIs already responded. Switch to mention-only? [Yes] [No]"


def duration_text(ms):
    """How the service writes a threshold: 5min, 90s, 1500ms."""
    if ms > 0 and ms % 60000 == 0:
        return f"{ms // 60000}min"
    if ms > 0 and ms % 1000 == 0:
        return f"{ms // 1000}s"
    return f"{ms}ms"


class Chatter:
    """AI personas talking in a room every `every` seconds until stopped."""

    def __init__(self, pub, room, personas, every=0.2):
        self.pub, self.room, self.personas, self.every = pub, room, personas, every
        self.stop_ev = threading.Event()
        self.sent = 0
        self.t = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        i = 0
        while not self.stop_ev.is_set():
            p = self.personas[i % len(self.personas)]
            self.pub.publish(*ai(self.room, p, f"{p}: point {i} about the design"))
            self.sent += 1
            i += 1
            self.stop_ev.wait(self.every)

    def __enter__(self):
        self.t.start()
        return self

    def __exit__(self, *exc):
        self.stop_ev.set()
        self.t.join(timeout=10)


def test_flow_suggest_then_auto_sleep_then_wake_on_im_back(stack):
    no_human, ai_only = 2000, 5000
    stack.service(env={
        "VIGIL_DORMANCY_NO_HUMAN_MS": no_human,
        "VIGIL_DORMANCY_AI_ONLY_MS": ai_only,
        "VIGIL_DORMANCY_SUGGESTION_TIMEOUT_MS": 60000,
        # Three AIs answering "Starting AI discussion" would be a pile-on
        # (rule 4, tested below): keep it out of this flow.
        "VIGIL_DORMANCY_REDUNDANT_KEEP": 100,
    })
    col = stack.collector()
    pub = stack.publisher()
    room = uid("general")
    personas = ["helper", "teacher", "codereview"]

    pub.publish(*human(room, "joel", "Starting AI discussion"))
    t_human = time.monotonic()
    with Chatter(pub, room, personas):
        # Rule 1: one suggestion each, not before the threshold.
        sugg = {}
        for p in personas:
            s = col.wait_event(f"persona/{p}/suggestion", timeout=no_human / 1000 + 10)
            sugg[p] = s
        t_sugg = min(m.t for p in personas for m in col.find(f"persona/{p}/suggestion"))
        assert t_sugg - t_human >= no_human / 1000 - 0.3, "suggested before the no-human threshold"
        for p, s in sugg.items():
            assert s["persona"] == p and s["room"] == room
            assert s["suggest"] == "mention-only"
            assert s["trigger"] == "no-human"
            assert s["text"] == SUGGEST_TEXT.format(duration_text(no_human), "5min")
            assert s["options"] == ["yes", "no", "snooze"]
            assert s["default"] == "yes" and s["default_after_ms"] == 60000

        # Rule 2: the AI-only discussion goes on: everyone is put to sleep.
        slept = {}
        for p in personas:
            slept[p] = col.wait_event(f"persona/{p}/dormancy", lambda e: e["level"] == "sleep",
                                      timeout=ai_only / 1000 + 10)
        t_sleep = min(m.t for p in personas for m in col.find(f"persona/{p}/dormancy"))
        # The AI-only stretch began with the first AI message, after t_human.
        assert t_sleep - t_human >= ai_only / 1000 - 0.3, "auto-slept before the AI-only threshold"
    for p, e in slept.items():
        assert e["trigger"] == "ai-only" and e["text"] == SLEEP_TEXT and e["previous"] == "active", e
        assert e["reason"] == f"Extended AI-only discussion ({duration_text(ai_only)})", e
        # Never a stream of suggestions: exactly one per persona per quiet period.
        assert len({s["id"] for s in col.events(f"persona/{p}/suggestion")}) == 1

    # Rule 3: a human is back: every persona wakes, naming the message.
    mark = col.mark()
    pub.publish(*human(room, "joel", "I'm back", mid="im-back"))
    for p in personas:
        e = col.wait_event(f"persona/{p}/dormancy", lambda e: e["level"] == "active", timeout=10, since=mark)
        assert e["previous"] == "sleep" and e["trigger"] == "human-reentry"
        assert e["message_id"] == "im-back" and e["text"] == WAKE_TEXT
    rs = col.wait_event(f"room/{room}/state", lambda s: all(s["personas"].get(p) == "active" for p in personas),
                        timeout=10, since=mark)
    assert rs["ai_only_since"] is None and rs["last_human_ts"] is not None
    validate_outputs(col)


def test_unanswered_suggestion_defaults_to_mention_only(stack):
    stack.service(env={
        "VIGIL_DORMANCY_NO_HUMAN_MS": 1000,
        "VIGIL_DORMANCY_SUGGESTION_TIMEOUT_MS": 800,
        "VIGIL_DORMANCY_AI_ONLY_MS": 600000,
    })
    col = stack.collector()
    pub = stack.publisher()
    room = uid("quiet")
    pub.publish(*ai(room, "ada", "anyone?"))
    s = col.wait_event("persona/ada/suggestion", timeout=15)
    e = col.wait_event("persona/ada/dormancy", timeout=15)
    assert e["level"] == "mention-only" and e["previous"] == "active"
    assert e["trigger"] == "suggestion-default", e
    t_s = col.find("persona/ada/suggestion")[0].t
    t_e = col.find("persona/ada/dormancy")[0].t
    assert t_e - t_s >= 0.8 - 0.2, f"defaulted {t_e - t_s:.2f}s after the suggestion (timeout 0.8s)"
    assert s["default_after_ms"] == 800
    validate_outputs(col)


def suggesting_stack(stack, no_human, snooze, timeout):
    """dormancy-monitor with the no-human rule shrunk (rule 2 out of the
    way), a collector of everything and a publisher."""
    stack.service(env={
        "VIGIL_DORMANCY_NO_HUMAN_MS": no_human,
        "VIGIL_DORMANCY_SUGGESTION_TIMEOUT_MS": timeout,
        "VIGIL_DORMANCY_SNOOZE_MS": snooze,
        "VIGIL_DORMANCY_AI_ONLY_MS": 600000,
    })
    return stack.collector(), stack.publisher()


def test_suggestion_answers_yes_no_snooze(stack):
    no_human, snooze = 1000, 2000
    col, pub = suggesting_stack(stack, no_human, snooze, 60000)
    room = uid("answers")
    personas = ("yes-p", "no-p", "snooze-p", "label-p")
    for p in personas:
        pub.publish(*ai(room, p, "hello"))
    sugg = {p: col.wait_event(f"persona/{p}/suggestion", timeout=15) for p in personas}
    # the text offers the snooze in force, byte for byte
    assert {s["text"] for s in sugg.values()} == {SUGGEST_TEXT.format("1s", "2s")}, sugg

    def answer(p, a):
        pub.publish(*command(p, "answer", room=room, suggestion_id=sugg[p]["id"], answer=a, by=p))

    answer("yes-p", "yes")
    answer("no-p", "no")
    answer("snooze-p", "snooze")
    # the seed's option value, the button's whole label: a snooze of the
    # length in force, whatever duration the label names
    answer("label-p", "Snooze 5min")
    t_answer = time.monotonic()

    e = col.wait_event("persona/yes-p/dormancy", timeout=10)
    assert e["level"] == "mention-only" and e["previous"] == "active"

    again = col.wait_event("persona/snooze-p/suggestion", lambda s: s["id"] != sugg["snooze-p"]["id"],
                           timeout=snooze / 1000 + 10, what="the snoozed suggestion asked again")
    t_again = [m.t for m in col.find("persona/snooze-p/suggestion") if m.json()["id"] == again["id"]][0]
    assert t_again - t_answer >= snooze / 1000 - 0.3, "asked again before the snooze ended"
    col.wait_event("persona/label-p/suggestion", lambda s: s["id"] != sugg["label-p"]["id"],
                   timeout=snooze / 1000 + 10, what="the suggestion snoozed by its label asked again")
    assert not col.find("sys/dormancy-monitor/error"), "an answer was refused"

    # "no": stays active and is not asked again in this quiet period.
    time.sleep(scaled(2 * no_human / 1000))
    assert not col.find("persona/no-p/dormancy"), "answering no changed the level"
    assert len(col.find("persona/no-p/suggestion")) == 1, "asked again after answering no"
    validate_outputs(col)


def test_retained_state_carries_the_suggestion_text(stack):
    """A client that subscribes after a no-human suggestion was made finds
    it in the retained persona/{p}/state as `pending`, with the text the
    persona was shown word for word (the seed's wording, real emoji, the
    threshold and snooze in force), not something made up from the reason."""
    snooze = 2000
    col, pub = suggesting_stack(stack, 1500, snooze, 600000)
    room, p = uid("late"), uid("p")
    pub.publish(*ai(room, p, "anyone here?"))
    sugg = col.wait_event(f"persona/{p}/suggestion", timeout=15)
    assert sugg["text"] == SUGGEST_TEXT.format("1500ms", "2s"), sugg
    col.wait_event(f"persona/{p}/state", lambda m: "pending" in m["rooms"].get(room, {}), timeout=10)
    state = harness.retained(stack.broker.port, f"persona/{p}/state")[f"persona/{p}/state"]
    pending = state["rooms"][room]["pending"]
    assert pending["text"] == sugg["text"], pending
    assert pending["reason"] == sugg["reason"] and pending["trigger"] == "no-human"
    assert pending["snooze_ms"] == snooze
    validate_outputs(col)


def test_chosen_dormancy_survives_a_human_message_while_enough_are_awake(stack):
    """Refined rule 3: a persona that stepped back by choice stays dormant
    when the human still meets VIGIL_DORMANCY_MIN_AWAKE personas able to
    answer; absence-caused dormancy would wake."""
    stack.service(env={"VIGIL_DORMANCY_MIN_AWAKE": 2})
    col = stack.collector()
    pub = stack.publisher()
    room = uid("choice")
    for p in ("ada", "bo", "cy"):
        pub.publish(*ai(room, p, "hi"))
    pub.publish(*ai(room, "ada", "@self dormant sleep"))
    col.wait_event("persona/ada/dormancy", lambda e: e["level"] == "sleep", timeout=10)
    mark = col.mark()
    pub.publish(*human(room, "joel", "question for the room", mid="q-1"))
    col.wait_event(f"room/{room}/state", lambda s: s["last_human_ts"] is not None, timeout=10, since=mark)
    time.sleep(0.3)
    assert not col.find("persona/ada/dormancy", since=mark), "chosen sleep was undone with 2 others awake"

    # bo and cy step back too: now the human would meet nobody, so the
    # guarantee wakes two of them.
    pub.publish(*ai(room, "bo", "@self dormant sleep"))
    pub.publish(*ai(room, "cy", "@self dormant mention-only"))
    col.wait_event("persona/cy/dormancy", lambda e: e["level"] == "mention-only", timeout=10)
    mark = col.mark()
    pub.publish(*human(room, "joel", "hello?", mid="q-2"))
    woken = col.wait_for(lambda c: len({e["persona"] for e in c.events("persona/+/dormancy", since=mark)
                                        if e["level"] == "active"}) >= 2 or None,
                         10, "two personas woken by the minimum-awake guarantee")
    assert woken
    for e in col.events("persona/+/dormancy", since=mark):
        assert e["level"] == "active" and e["message_id"] == "q-2", e
    validate_outputs(col)


def test_human_wakes_all_restores_the_literal_rule(stack):
    stack.service(env={"VIGIL_DORMANCY_HUMAN_WAKES": "all"})
    col = stack.collector()
    pub = stack.publisher()
    room = uid("literal")
    for p in ("ada", "bo", "cy"):
        pub.publish(*ai(room, p, "hi"))
    pub.publish(*ai(room, "ada", "@self dormant sleep"))
    col.wait_event("persona/ada/dormancy", lambda e: e["level"] == "sleep", timeout=10)
    mark = col.mark()
    pub.publish(*human(room, "joel", "hi all", mid="w-1"))
    e = col.wait_event("persona/ada/dormancy", lambda e: e["level"] == "active", timeout=10, since=mark)
    assert e["trigger"] == "human-reentry" and e["message_id"] == "w-1"


def test_mention_wakes_a_sleeping_persona(stack):
    stack.service()
    col = stack.collector()
    pub = stack.publisher()
    room = uid("mention")
    pub.publish(*ai(room, "ada", "@self dormant sleep"))
    col.wait_event("persona/ada/dormancy", lambda e: e["level"] == "sleep", timeout=10)
    mark = col.mark()
    pub.publish(*ai(room, "bo", "@ada what do you think?", mid="mn-1"))
    e = col.wait_event("persona/ada/dormancy", lambda e: e["level"] == "active", timeout=10, since=mark)
    assert e["trigger"] == "mention" and e["message_id"] == "mn-1"
    validate_outputs(col)


def test_pile_on_gets_third_and_later_responders_a_suggestion(stack):
    stack.service(env={"VIGIL_DORMANCY_REDUNDANT_WINDOW_MS": 30000, "VIGIL_DORMANCY_REDUNDANT_KEEP": 2})
    col = stack.collector()
    pub = stack.publisher()
    room = uid("pile")
    pub.publish(*human(room, "joel", "How do I reverse a list in C?", mid="hq"))
    for p in ("r1", "r2", "r3", "r4"):
        pub.publish(*ai(room, p, f"{p} answers", reply_to="hq"))
    for p in ("r3", "r4"):
        s = col.wait_event(f"persona/{p}/suggestion", timeout=10)
        assert s["text"] == REDUNDANT_TEXT and s["trigger"] == "redundant"
        assert s["options"] == ["yes", "no"]
    time.sleep(0.3)
    assert not col.find("persona/r1/suggestion") and not col.find("persona/r2/suggestion")
    validate_outputs(col)


@pytest.mark.parametrize("how,down_s", [("sigterm", 1.0), ("kill9", 1.0), ("kill9", 4.0)],
                         ids=["sigterm-before-deadline", "kill9-before-deadline", "kill9-past-deadline"])
def test_restart_in_a_quiet_period_fires_the_deadline_once(stack, how, down_s):
    no_human = 3000
    env = {
        "VIGIL_DORMANCY_NO_HUMAN_MS": no_human,
        "VIGIL_DORMANCY_SUGGESTION_TIMEOUT_MS": 60000,
        "VIGIL_DORMANCY_AI_ONLY_MS": 600000,
    }
    svc = stack.service(env=env)
    col = stack.collector()
    pub = stack.publisher()
    room = uid("restart")
    pub.publish(*human(room, "joel", "brb"))
    pub.publish(*ai(room, "ada", "ok, I will wait"))
    t0 = time.monotonic()
    col.wait_event(f"room/{room}/state", lambda s: "ada" in s["personas"], timeout=10)
    time.sleep(max(0.0, 0.8 - (time.monotonic() - t0)))
    if how == "sigterm":
        assert svc.terminate() == 0
    else:
        svc.kill9()
    time.sleep(down_s)
    assert not col.find("persona/ada/suggestion"), "suggested while the service was down?"
    svc.start()
    s = col.wait_event("persona/ada/suggestion", timeout=no_human / 1000 + 15)
    t_s = col.find("persona/ada/suggestion")[0].t
    assert t_s - t0 >= no_human / 1000 - 0.3, "fired before the deadline"
    assert s["trigger"] == "no-human"
    # Exactly once: wait well past the deadline (and a timer lease).
    time.sleep(scaled(3.0))
    assert len({x["id"] for x in col.events("persona/ada/suggestion")}) == 1, col.events("persona/ada/suggestion")
    validate_outputs(col)
