"""The Theater page in headless Chromium against a real stack (mosquitto,
Redis, presence-gateway, dormancy-monitor): it loads after /login, a
message published with mosquitto_pub appears, a persona's badge follows
dormancy-monitor's level changes with the reason, a reload restores
badges and messages (kept states + the room log), the viewer's presence
heartbeats reach room/{r}/presence (a hidden tab goes idle, then away, by
the times since its last activity), answering a question reaches
council/{session}/answer, a dormancy suggestion's card answered with its
buttons reaches persona/{p}/command, floor-control's decision for a room
(room/{r}/floor) shows who has the floor and who is held, and a screenshot of a busy room is saved as a
test artifact (VIGIL_TEST_ARTIFACTS, default build/test-artifacts)."""

import json
import os
import subprocess
import time

import pytest

import theater_browser
from conftest import uid
from gateway_client import start_gateway
from harness import BUILD_DIR, scaled, wait_until

pytestmark = pytest.mark.skipif(not theater_browser.available(),
                                reason="chromium, chromium-driver and python3-selenium are needed (scripts/install-deps)")

ARTIFACTS = os.environ.get("VIGIL_TEST_ARTIFACTS") or os.path.join(BUILD_DIR, "..", "test-artifacts")


def mosquitto_pub(port, topic, payload, retain=False):
    cmd = ["mosquitto_pub", "-h", "127.0.0.1", "-p", str(port), "-q", "1", "-t", topic, "-m", json.dumps(payload)]
    if retain:
        cmd.append("-r")
    subprocess.run(cmd, check=True, timeout=10)


def now():
    return int(time.time() * 1000)


def test_theater_page_in_chromium(stack):
    from selenium.webdriver.common.by import By
    gw = start_gateway(stack)
    stack.service("dormancy-monitor")
    stack.service("chat-router")  # the room log the page loads after a reload
    col = stack.collector(["room/+/presence", "council/+/answer", "persona/+/dormancy"])
    port = stack.broker.port
    room = uid("theater")
    ada, bo = f"ada-{room[-6:]}", f"bo-{room[-6:]}"
    b = theater_browser.Browser()
    d = b.driver
    try:
        d.get(f"http://127.0.0.1:{gw.http_port}/login?token=tok-joel-0123456789")
        # redirected to the page, logged in by the cookie
        wait_until(lambda: "watching as joel" in d.find_element(By.ID, "who").text, scaled(15), "the page logged in")
        assert d.current_url.rstrip("/").endswith(str(gw.http_port))
        wait_until(lambda: d.find_element(By.ID, "conn").text == "live", scaled(15), "the stream connected")

        # a message published with mosquitto_pub appears
        mosquitto_pub(port, f"room/{room}/message", {"id": uid(), "room": room, "sender": ada, "sender_type": "ai",
                                                     "text": "hello from mosquitto_pub", "ts": now()})
        wait_until(lambda: "hello from mosquitto_pub" in d.find_element(By.ID, f"room-{room}").text,
                   scaled(15), "the message on the page")

        # the viewer's own presence heartbeats (the page now shows the room)
        col.wait_event(f"room/{room}/presence", lambda j: j["user"] == "joel" and j["status"] == "active",
                       timeout=scaled(15))
        wait_until(lambda: d.find_elements(By.CSS_SELECTOR, f'#room-{room} .human[data-user="joel"][data-status="active"]'),
                   scaled(15), "joel shown present")

        # dormancy-monitor changes ada's level: the badge follows, with the reason
        mosquitto_pub(port, f"room/{room}/message", {"id": uid(), "room": room, "sender": ada, "sender_type": "ai",
                                                     "text": "@self dormant sleep", "ts": now()})
        col.wait_event(f"persona/{ada}/dormancy", lambda j: j["level"] == "sleep", timeout=scaled(15))
        badge = f'#room-{room} .badge[data-persona="{ada}"]'
        wait_until(lambda: d.find_elements(By.CSS_SELECTOR, badge + '[data-level="sleep"]'), scaled(15),
                   "ada's badge says sleep")
        assert d.find_element(By.CSS_SELECTOR, badge).get_attribute("data-reason")
        mosquitto_pub(port, f"room/{room}/message", {"id": uid(), "room": room, "sender": "joel",
                                                     "sender_type": "human", "text": "I am back, ada", "ts": now()})
        wait_until(lambda: d.find_elements(By.CSS_SELECTOR, badge + '[data-level="active"]'), scaled(15),
                   "ada's badge back to active")

        # a council question: answered on the page, reaches council/{session}/answer
        session = uid("s")
        mosquitto_pub(port, f"council/{session}/event", {"id": f"{session}:deliberation:1", "type": "deliberation",
                                                         "session": session, "text": "Polaris, Aurora, Vega and Sol deliberate", "ts": now()})
        mosquitto_pub(port, f"council/{session}/event", {"id": f"{session}:question:2", "type": "question",
                                                         "session": session, "question_id": f"{session}:question:2",
                                                         "priority": 8, "text": "Ship the uploader fix today?", "ts": now()})
        q = f'#questions li[data-question="{session}:question:2"]'
        wait_until(lambda: d.find_elements(By.CSS_SELECTOR, q), scaled(15), "the question on the page")
        assert "Polaris" in d.find_element(By.ID, "council").text
        d.find_element(By.CSS_SELECTOR, q + " input").send_keys("Yes, ship it")
        d.find_element(By.CSS_SELECTOR, q + " button").click()
        ans = col.wait_event(f"council/{session}/answer", timeout=scaled(15))
        assert ans["answer"] == "Yes, ship it" and ans["question_id"] == f"{session}:question:2" and ans["by"] == "joel"
        wait_until(lambda: not d.find_elements(By.CSS_SELECTOR, q), scaled(10), "the answered question removed")

        # a busy room for the screenshot: several personas, levels, humans, services
        lines = ["The deploy went out at 14:02.", "Latency is back under 120 ms.", "Can someone confirm the rollback plan?",
                 "Rollback plan: flip the flag, then drain.", "Queue depth is flat.", "I'll watch the error budget."]
        for i, t in enumerate(lines):
            who = [ada, bo, "joel"][i % 3]
            mosquitto_pub(port, f"room/{room}/message", {"id": uid(), "room": room, "sender": who,
                                                         "sender_type": "human" if who == "joel" else "ai", "text": t, "ts": now()})
        wait_until(lambda: lines[-1] in d.find_element(By.ID, f"room-{room}").text, scaled(15), "the busy room")
        mosquitto_pub(port, f"room/{room}/message", {"id": uid(), "room": room, "sender": bo, "sender_type": "ai",
                                                     "text": "@self dormant mention-only", "ts": now()})
        wait_until(lambda: d.find_elements(By.CSS_SELECTOR, f'#room-{room} .badge[data-persona="{bo}"][data-level="mention-only"]'),
                   scaled(15), "bo's badge says mention-only")
        # floor-control's decision for the last human message: who has the floor, who is held, and why
        mosquitto_pub(port, f"room/{room}/floor", {
            "id": f"m-floor-{room}:{room}:0", "room": room, "message_id": f"m-floor-{room}", "k": 1,
            "granted": [ada], "held": [bo], "source": "rules", "ts": now(),
            "reasons": {ada: "expertise 'deploy' (confidence 0.90) in the message", bo: "floor full (K=1)"}})
        fl = f"#room-{room} .floor"
        wait_until(lambda: d.find_elements(By.CSS_SELECTOR, f'{fl} .granted[data-persona="{ada}"]'), scaled(15),
                   "the floor decision on the page")
        held = d.find_element(By.CSS_SELECTOR, f'{fl} .held[data-persona="{bo}"]')
        assert held.get_attribute("title") == "floor full (K=1)"
        assert d.find_element(By.CSS_SELECTOR, fl).get_attribute("data-message") == f"m-floor-{room}"
        wait_until(lambda: d.find_elements(By.CSS_SELECTOR, f'#health td.state[data-state="ready"]'), scaled(10),
                   "service health shown")
        os.makedirs(ARTIFACTS, exist_ok=True)
        shot = os.path.join(ARTIFACTS, "theater-busy-room.png")
        d.find_element(By.TAG_NAME, "body")  # the layout is settled
        time.sleep(0.3)
        assert d.save_screenshot(shot)
        assert os.path.getsize(shot) > 10000
        print(f"\nscreenshot: {os.path.abspath(shot)}")
        # a reload starts from the kept states and the room log, not a replay
        d.refresh()
        wait_until(lambda: d.find_elements(By.CSS_SELECTOR, f'#room-{room} .badge[data-persona="{bo}"][data-level="mention-only"]'),
                   scaled(15), "bo's badge restored after a reload")
        wait_until(lambda: all(t in d.find_element(By.ID, f"room-{room}").text for t in lines), scaled(15),
                   "the room's messages restored after a reload")
        assert d.find_elements(By.CSS_SELECTOR, '#health td.state[data-state="ready"]')
        logs = [e for e in d.get_log("browser") if e.get("level") == "SEVERE"]
        assert not logs, logs
    finally:
        b.close()


# A plain EventSource client as the Theater stream is specified for: only
# onmessage, JSON.parse, switch on data.type (recording what it sees).
ONMESSAGE_CLIENT = """
window.onmessageSeen = [];
const eventSource = new EventSource('/api/autonomous/deliberations/live', {withCredentials: true});
eventSource.onmessage = (event) => {
  const data = JSON.parse(event.data);
  window.onmessageSeen.push({type: data.type, id: event.lastEventId, session: data.session || null});
};
window.onmessageSource = eventSource;
"""


def test_onmessage_client_on_deliberations_live(stack):
    """An onmessage-only EventSource client gets every council event type on
    /api/autonomous/deliberations/live through onmessage (with its log
    position as lastEventId), while the page's named /api/events stream
    shows the same events."""
    from selenium.webdriver.common.by import By
    gw = start_gateway(stack, VIGIL_GATEWAY_PING_MS=500)
    b = theater_browser.Browser()
    d = b.driver
    try:
        d.get(f"http://127.0.0.1:{gw.http_port}/login?token=tok-joel-0123456789")
        wait_until(lambda: d.find_element(By.ID, "conn").text == "live", scaled(15), "the page's stream connected")
        d.execute_script(ONMESSAGE_CLIENT)
        wait_until(lambda: d.execute_script("return window.onmessageSource.readyState") == 1, scaled(15),
                   "the onmessage client connected")
        # connected, then pings, reach onmessage as JSON with a type
        wait_until(lambda: [x["type"] for x in d.execute_script("return window.onmessageSeen")][:2] == ["connected", "ping"],
                   scaled(10), "connected and a ping through onmessage")
        session = uid("s")
        types = ["deliberation", "phase", "action", "question", "session_paused", "session_ended"]
        for i, t in enumerate(types):
            mosquitto_pub(stack.broker.port, f"council/{session}/event",
                          {"id": f"{session}:{t}:{i}", "type": t, "session": session, "text": f"onmessage {t}", "ts": now()})

        def council():
            return [x for x in d.execute_script("return window.onmessageSeen") if x["session"] == session]
        wait_until(lambda: len(council()) == len(types), scaled(15), "the six council events through onmessage")
        got = council()
        assert [x["type"] for x in got] == types, got
        assert all(x["id"] for x in got)  # lastEventId: the log position, for Last-Event-ID resume
        assert all(x["type"] in ("connected", "ping") for x in d.execute_script("return window.onmessageSeen")
                   if x["session"] != session)
        # the page (named events on /api/events) shows them too
        wait_until(lambda: "onmessage session_ended" in d.find_element(By.ID, "council").text, scaled(10),
                   "the page's council list")
        d.execute_script("window.onmessageSource.close()")
        logs = [e for e in d.get_log("browser") if e.get("level") == "SEVERE"]
        assert not logs, logs
    finally:
        b.close()


def suggestion_cards(d, room, persona):
    from selenium.webdriver.common.by import By
    return d.find_elements(By.CSS_SELECTOR, f'#room-{room} .suggestion[data-persona="{persona}"]')


def suggestion_click(d, room, persona, answer):
    from selenium.webdriver.common.by import By
    d.find_element(By.CSS_SELECTOR,
                   f'#room-{room} .suggestion[data-persona="{persona}"] button[data-answer="{answer}"]').click()


def suggestion_labels(d, room, persona):
    return [b.text for c in suggestion_cards(d, room, persona) for b in c.find_elements("css selector", "button")]


def test_hidden_tab_goes_idle_then_away_by_the_activity_times(stack):
    """Presence follows the time since the viewer's last activity: active
    within the idle time (2 min), idle until the away time (5 min), away
    after, a hidden tab included (a glance at another tab is a pause, not
    an absence), and coming back to the tab is activity again. Shrunk here
    to 3 s and 7 s, the page beating every 500 ms."""
    gw = start_gateway(stack, VIGIL_GATEWAY_PRESENCE_IDLE_MS=3000, VIGIL_GATEWAY_PRESENCE_AWAY_MS=7000)
    col = stack.collector(["room/+/presence"])
    room = uid("hid")
    b = theater_browser.Browser()
    d = b.driver
    try:
        d.get(f"http://127.0.0.1:{gw.http_port}/login?token=tok-joel-0123456789")
        d.get(f"http://127.0.0.1:{gw.http_port}/?rooms={room}&beat_ms=500")
        col.wait_event(f"room/{room}/presence", lambda j: j["user"] == "joel" and j["status"] == "active",
                       timeout=scaled(15))
        mark = col.mark()
        hid = time.monotonic()
        # the viewer moves the mouse, then switches to another tab
        d.execute_script("window.dispatchEvent(new Event('mousemove'));"
                         "Object.defineProperty(document, 'hidden', {configurable: true, get: () => true});"
                         "document.dispatchEvent(new Event('visibilitychange'));")
        idle = col.wait_event(f"room/{room}/presence", lambda j: j["status"] != "active", since=mark,
                              timeout=scaled(15))
        assert idle["status"] == "idle", idle
        assert time.monotonic() - hid > 2.5, "idle before the idle time"
        away = col.wait_event(f"room/{room}/presence", lambda j: j["status"] == "away", since=mark,
                              timeout=scaled(15))
        assert abs(away["last_activity"] - idle["last_activity"]) < 1000, (idle, away)
        assert time.monotonic() - hid > 6.5, "away before the away time"
        # back to the tab: active again at once
        mark = col.mark()
        d.execute_script("Object.defineProperty(document, 'hidden', {configurable: true, get: () => false});"
                         "document.dispatchEvent(new Event('visibilitychange'));")
        col.wait_event(f"room/{room}/presence", lambda j: j["status"] == "active", since=mark, timeout=scaled(5))
    finally:
        b.close()


def test_suggestion_card_yes_applied_by_dormancy_monitor(stack):
    """dormancy-monitor's no-human suggestion (suggest, don't force) shows
    as a card in its room with [Yes] [No] [Snooze ...]; clicking Yes
    publishes the answer on persona/{p}/command, the card goes, and
    dormancy-monitor applies it (the badge turns mention-only)."""
    from selenium.webdriver.common.by import By
    gw = start_gateway(stack)
    stack.service("dormancy-monitor", env={"VIGIL_DORMANCY_NO_HUMAN_MS": "1500",
                                           "VIGIL_DORMANCY_SUGGESTION_TIMEOUT_MS": "120000"})
    col = stack.collector(["persona/+/command", "persona/+/suggestion", "persona/+/dormancy"])
    port = stack.broker.port
    room = uid("sg")
    ada = f"ada-{room[-6:]}"
    b = theater_browser.Browser()
    d = b.driver
    try:
        d.get(f"http://127.0.0.1:{gw.http_port}/login?token=tok-joel-0123456789")
        wait_until(lambda: d.find_element(By.ID, "conn").text == "live", scaled(15), "the stream connected")
        # dormancy-monitor suggests mention-only to ada 1.5 s after the human's message
        mosquitto_pub(port, f"room/{room}/message", {"id": uid(), "room": room, "sender": ada, "sender_type": "ai",
                                                     "text": "anyone?", "ts": now()})
        mosquitto_pub(port, f"room/{room}/message", {"id": uid(), "room": room, "sender": "joel",
                                                     "sender_type": "human", "text": "brb", "ts": now()})
        sug = col.wait_event(f"persona/{ada}/suggestion", timeout=scaled(15))
        wait_until(lambda: suggestion_cards(d, room, ada), scaled(15), "the suggestion card")
        c = suggestion_cards(d, room, ada)[0]
        assert c.get_attribute("data-id") == sug["id"]
        assert "Switch to mention-only?" in c.text and "[Yes]" not in c.text, c.text
        got = suggestion_labels(d, room, ada)
        assert got[:2] == ["Yes", "No"] and len(got) == 3 and got[2].startswith("Snooze"), got
        suggestion_click(d, room, ada, "yes")
        cmd = col.wait_event(f"persona/{ada}/command", timeout=scaled(15))
        assert {k: cmd[k] for k in ("cmd", "room", "suggestion_id", "answer", "by")} == \
            {"cmd": "answer", "room": room, "suggestion_id": sug["id"], "answer": "yes", "by": "joel"}, cmd
        wait_until(lambda: not suggestion_cards(d, room, ada), scaled(10), "the answered card removed")
        dm = col.wait_event(f"persona/{ada}/dormancy", timeout=scaled(15))
        assert dm["level"] == "mention-only" and dm["trigger"] == "no-human", dm
        wait_until(lambda: d.find_elements(
            By.CSS_SELECTOR, f'#room-{room} .badge[data-persona="{ada}"][data-level="mention-only"]'),
            scaled(15), "ada's badge says mention-only")
        from conftest import validate_outputs
        assert validate_outputs(col, ("persona/+/command",)) == 1
        logs = [e for e in d.get_log("browser") if e.get("level") == "SEVERE"]
        assert not logs, logs
    finally:
        b.close()


def test_page_opened_after_the_suggestion_shows_its_text(stack):
    """A page opened after dormancy-monitor's no-human suggestion (seen then
    only as `pending` in the retained persona/{p}/state) shows the
    suggestion's own text, word for word without its [..] options, and a
    snooze button of the length in force; not a text made up from the
    reason ("no human message for 1503 ms ...")."""
    from selenium.webdriver.common.by import By
    gw = start_gateway(stack)
    stack.service("dormancy-monitor", env={"VIGIL_DORMANCY_NO_HUMAN_MS": "1500",
                                           "VIGIL_DORMANCY_SNOOZE_MS": "2000",
                                           "VIGIL_DORMANCY_SUGGESTION_TIMEOUT_MS": "120000",
                                           "VIGIL_DORMANCY_AI_ONLY_MS": "600000"})
    col = stack.collector(["persona/+/suggestion", "persona/+/state"])
    room = uid("late")
    ada = f"ada-{room[-6:]}"
    mosquitto_pub(stack.broker.port, f"room/{room}/message", {"id": uid(), "room": room, "sender": ada,
                                                              "sender_type": "ai", "text": "anyone?", "ts": now()})
    sug = col.wait_event(f"persona/{ada}/suggestion", timeout=scaled(15))
    assert sug["text"] == "💤 No human activity for 1500ms. Switch to mention-only? [Yes] [No] [Snooze 2s]", sug
    col.wait_event(f"persona/{ada}/state", lambda m: "pending" in m["rooms"].get(room, {}), timeout=scaled(10))
    b = theater_browser.Browser()
    d = b.driver
    try:
        d.get(f"http://127.0.0.1:{gw.http_port}/login?token=tok-joel-0123456789")
        wait_until(lambda: suggestion_cards(d, room, ada), scaled(15), "the pending suggestion's card")
        card = suggestion_cards(d, room, ada)[0]
        # the card's question: the text after the persona's name
        question = d.execute_script("return arguments[0].lastChild.textContent",
                                    card.find_element(By.TAG_NAME, "p"))
        assert question == "💤 No human activity for 1500ms. Switch to mention-only?", question
        assert "no human message for" not in card.text, card.text
        assert suggestion_labels(d, room, ada) == ["Yes", "No", "Snooze 2s"]
        logs = [e for e in d.get_log("browser") if e.get("level") == "SEVERE"]
        assert not logs, logs
    finally:
        b.close()


def test_suggestion_card_follows_state_and_dormancy(stack):
    """Made-up suggestions (no dormancy-monitor): `snooze_ms` names the
    snooze button and the [..] options leave the text; the persona's state
    showing nothing pending removes the card; a suggestion seen only as
    `pending` in the state gets a card, answered without suggestion_id; a
    dormancy event for the persona in the room removes its card."""
    from selenium.webdriver.common.by import By
    gw = start_gateway(stack)
    col = stack.collector(["persona/+/command"])
    port = stack.broker.port
    room = uid("sg")
    cy = f"cy-{room[-6:]}"
    b = theater_browser.Browser()
    d = b.driver
    try:
        d.get(f"http://127.0.0.1:{gw.http_port}/login?token=tok-joel-0123456789")
        wait_until(lambda: d.find_element(By.ID, "conn").text == "live", scaled(15), "the stream connected")
        text = "💤 No human activity for 5min. Switch to mention-only? [Yes] [No] [Snooze 5min]"
        mosquitto_pub(port, f"persona/{cy}/suggestion", {
            "id": f"t.{room}:0", "persona": cy, "room": room, "suggest": "mention-only", "trigger": "no-human",
            "text": text, "options": ["yes", "no", "snooze"], "default": "yes", "default_after_ms": 30000,
            "snooze_ms": 300000, "ts": now()})
        wait_until(lambda: suggestion_labels(d, room, cy) == ["Yes", "No", "Snooze 5min"], scaled(15),
                   "cy's card with Snooze 5min")
        shown = suggestion_cards(d, room, cy)[0].text
        assert "No human activity for 5min. Switch to mention-only?" in shown and "[Snooze" not in shown, shown
        mosquitto_pub(port, f"persona/{cy}/state", {"persona": cy, "rooms": {
            room: {"level": "active", "since": now(), "trigger": "manual"}}, "ts": now()})
        wait_until(lambda: not suggestion_cards(d, room, cy), scaled(10), "the card gone once nothing is pending")

        # pending in the state only: a card, answered without suggestion_id
        def pending():  # a fresh ts each time: the gateway logs an identical payload once
            return {"persona": cy, "rooms": {room: {"level": "active", "since": now(), "trigger": "manual", "pending": {
                "level": "mention-only", "trigger": "redundant", "reason": "3 AIs answered",
                "expires": now() + 30000}}}, "ts": now()}
        mosquitto_pub(port, f"persona/{cy}/state", pending())
        wait_until(lambda: suggestion_labels(d, room, cy) == ["Yes", "No"], scaled(15),
                   "a card from the pending suggestion")
        # a state without the suggestion's text (written before it was kept):
        # the rule's question, the reason as the card's tooltip
        card = suggestion_cards(d, room, cy)[0]
        assert "💤 Multiple AIs already responded. Switch to mention-only?" in card.text, card.text
        assert card.get_attribute("title") == "3 AIs answered"
        suggestion_click(d, room, cy, "no")
        cmd = col.wait_event(f"persona/{cy}/command", timeout=scaled(15))
        assert cmd["answer"] == "no" and cmd["room"] == room and "suggestion_id" not in cmd, cmd
        wait_until(lambda: not suggestion_cards(d, room, cy), scaled(10), "the answered card removed")

        # a dormancy event for the persona in the room removes its card
        mosquitto_pub(port, f"persona/{cy}/state", pending())
        wait_until(lambda: suggestion_cards(d, room, cy), scaled(15), "the pending card again")
        mosquitto_pub(port, f"persona/{cy}/dormancy", {
            "id": f"d.{room}:0", "persona": cy, "room": room, "level": "sleep", "previous": "active",
            "trigger": "manual", "reason": "sleep requested", "text": "💤 sleeping", "ts": now()})
        wait_until(lambda: not suggestion_cards(d, room, cy), scaled(10), "the card gone on a dormancy event")

        # a no-human suggestion seen only as pending: its snooze button has
        # the length the state carries
        mosquitto_pub(port, f"persona/{cy}/state", {
            "persona": cy, "rooms": {room: {"level": "active", "since": now(), "trigger": "manual", "pending": {
                "level": "mention-only", "trigger": "no-human", "reason": "No human activity for 5min",
                "expires": now() + 30000, "snooze_ms": 300000}}}, "ts": now()})
        wait_until(lambda: suggestion_labels(d, room, cy) == ["Yes", "No", "Snooze 5min"], scaled(15),
                   "a pending no-human card with Snooze 5min")
        from conftest import validate_outputs
        assert validate_outputs(col, ("persona/+/command",)) == 1
        logs = [e for e in d.get_log("browser") if e.get("level") == "SEVERE"]
        assert not logs, logs
    finally:
        b.close()
