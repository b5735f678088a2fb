"""The Theater page in headless Chromium, opened after things happened:
it shows the council questions still pending (not those answered
elsewhere, expired or of an ended session; an expiring one leaves on
time, one council ends early with a question event of status expired at
once), answers one whose payload has no `session` to its topic's session,
shows each badge's reason (not its trigger code), lists the humans idle or
active in a room (an away one leaves the list), and files a message by its
topic's room."""

import time

import pytest

import theater_browser
from conftest import uid
from gateway_client import start_gateway
from harness import scaled, wait_until
from test_gateway_browser import mosquitto_pub, now

pytestmark = pytest.mark.skipif(not theater_browser.available(),
                                reason="chromium, chromium-driver and python3-selenium are needed (scripts/install-deps)")


def test_page_opened_late_starts_from_what_is_pending(stack):
    from selenium.webdriver.common.by import By
    gw = start_gateway(stack)
    col = stack.collector(["council/+/answer"])
    port = stack.broker.port
    room, s, s2 = uid("late"), uid("s"), uid("s")
    ann, bob, cy = f"ann-{room[-6:]}", f"bob-{room[-6:]}", f"cy-{room[-6:]}"

    def q(session, n, expires_at, with_session=True):
        qid = f"{session}:question:{n}"
        body = {"id": qid, "type": "question", "question_id": qid, "question": f"late question {n}?",
                "priority": 5, "expires_at": expires_at, "ts": now()}
        if with_session:
            body["session"] = session
        mosquitto_pub(port, f"council/{session}/event", body)
        return qid
    # before the page opens: questions, a badge with its reason, humans
    q1 = q(s, 1, now() + 600000)
    q2 = q(s, 2, now() + 15000)  # expires while the page is open
    q3 = q(s, 3, now() + 600000)  # answered elsewhere once the page is open
    q4 = q(s2, 1, now() + 600000, with_session=False)  # answered on the page
    q5 = q(s, 5, now() + 600000)  # ended by council while the page is open
    mosquitto_pub(port, f"persona/{cy}/state", {"persona": cy, "rooms": {room: {
        "level": "sleep", "since": now(), "trigger": "manual", "reason": "asked to sleep by joel"}}, "ts": now()})
    mosquitto_pub(port, f"room/{room}/presence", {"user": ann, "session": "a", "status": "idle",
                                                  "last_activity": now() - 1000, "ts": now()})
    mosquitto_pub(port, f"room/{room}/presence", {"user": bob, "session": "b", "status": "active",
                                                  "last_activity": now(), "ts": now()})
    time.sleep(scaled(1))
    b = theater_browser.Browser()
    d = b.driver
    try:
        d.get(f"http://127.0.0.1:{gw.http_port}/login?token=tok-joel-0123456789")
        wait_until(lambda: d.find_element(By.ID, "conn").text == "live", scaled(15), "the stream connected")
        d.get(f"http://127.0.0.1:{gw.http_port}/?away_linger_ms=1000")
        wait_until(lambda: d.find_element(By.ID, "conn").text == "live", scaled(15), "the stream connected")

        def shown():
            return {e.get_attribute("data-question") for e in d.find_elements(By.CSS_SELECTOR, "#questions li")}
        wait_until(lambda: {q1, q2, q3, q4, q5} <= shown(), scaled(15), "the questions asked before the page opened")
        # the badge's reason is the reason, not the trigger code
        badge = f'#room-{room} .badge[data-persona="{cy}"]'
        wait_until(lambda: d.find_elements(By.CSS_SELECTOR, badge + '[data-level="sleep"]'), scaled(15), "cy's badge")
        assert d.find_element(By.CSS_SELECTOR, badge).get_attribute("data-reason") == "asked to sleep by joel"
        # a new level from room.state (no reason) leaves no stale reason
        mosquitto_pub(port, f"room/{room}/state", {"room": room, "last_human_ts": None, "ai_only_since": None,
                                                   "humans_present": [bob], "velocity_per_min": 0,
                                                   "ai_to_human_ratio": None, "paused": False,
                                                   "personas": {cy: "active"}, "ts": now()})
        wait_until(lambda: d.find_elements(By.CSS_SELECTOR, badge + '[data-level="active"]'), scaled(15), "active")
        assert d.find_element(By.CSS_SELECTOR, badge).get_attribute("data-reason") == ""
        # the humans idle or active in the room before the page opened
        people = f"#room-{room} .human"
        wait_until(lambda: {(e.get_attribute("data-user"), e.get_attribute("data-status"))
                            for e in d.find_elements(By.CSS_SELECTOR, people)} >= {(ann, "idle"), (bob, "active")},
                   scaled(15), "ann idle and bob active")
        # ann goes away: listed as away, then gone
        mosquitto_pub(port, f"room/{room}/presence", {"user": ann, "session": "a", "status": "away",
                                                      "last_activity": now() - 1000, "ts": now()})
        wait_until(lambda: not d.find_elements(By.CSS_SELECTOR, f'{people}[data-user="{ann}"]'), scaled(15),
                   "ann left the list")
        # answered elsewhere: gone; expired: gone
        mosquitto_pub(port, f"council/{s}/answer", {"id": uid(), "question_id": q3, "answer": "done", "ts": now()})
        wait_until(lambda: q3 not in shown(), scaled(15), "q3 answered elsewhere")
        wait_until(lambda: q2 not in shown(), scaled(25), "q2 expired")
        # ended early by council (a 17th pending question took its place):
        # its question event says expired, expires_at now: gone at once
        mosquitto_pub(port, f"council/{s}/event", {
            "id": f"{q5}:ended", "type": "question", "session": s, "question_id": q5,
            "question": "late question 5?", "priority": 5, "expires_at": now(), "status": "expired",
            "reason": "dropped: more than 16 questions pending", "ts": now()})
        wait_until(lambda: q5 not in shown(), scaled(10), "q5 ended by council")
        assert q1 in shown()
        # a question without `session` in its payload is answered to its topic's session
        li = f'#questions li[data-question="{q4}"]'
        d.find_element(By.CSS_SELECTOR, li + " input").send_keys("from the page")
        d.find_element(By.CSS_SELECTOR, li + " button").click()
        ans = col.wait_event(f"council/{s2}/answer", timeout=scaled(15))
        assert ans["question_id"] == q4 and ans["answer"] == "from the page", ans
        wait_until(lambda: q4 not in shown(), scaled(10), "q4 answered")
        # the session ends: its last question goes
        mosquitto_pub(port, f"council/{s}/event", {"id": f"{s}:end", "type": "session_ended", "session": s,
                                                   "reason": "done", "ts": now()})
        wait_until(lambda: q1 not in shown(), scaled(15), "q1 gone with its session")
        # a reload: nothing of it pending any more
        d.refresh()
        wait_until(lambda: d.find_element(By.ID, "conn").text == "live", scaled(15), "the stream connected")
        time.sleep(scaled(1.5))
        assert not ({q1, q2, q3, q4, q5} & shown())
        logs = [e for e in d.get_log("browser") if e.get("level") == "SEVERE"]
        assert not logs, logs
    finally:
        b.close()
