"""presence-gateway and dormancy-monitor together through a real broker:
a person who keeps reading (browser beats with fresh activity, no
messages) keeps dormancy-monitor's presence rule blocking the no-human
suggestion, because the gateway republishes the room's presence while the
session stays active (dormancy-monitor ages the last_activity it was sent
itself); once the beats stop the suggestion comes. Thresholds shrunk:
gateway idle 4 s / away 10 s (refresh every 1 s), dormancy-monitor active
4 s / away 10 s / no-human 6 s."""

import time

from conftest import ai, human, uid
from gateway_client import auth, request, start_gateway
from harness import scaled

JOEL = auth()
IDLE_MS = 4000
REFRESH_S = IDLE_MS / 4 / 1000  # the gateway's refresh interval: a quarter of the idle time
BEAT_S = 0.2
BEATS_FOR_S = 16  # well past the no-human threshold (6 s) and the active time (4 s)


def test_active_reader_blocks_the_suggestion_until_beats_stop(stack):
    gw = start_gateway(stack, VIGIL_GATEWAY_PRESENCE_IDLE_MS=IDLE_MS, VIGIL_GATEWAY_PRESENCE_AWAY_MS=10000)
    stack.service("dormancy-monitor", env={
        "VIGIL_DORMANCY_PRESENCE": "1", "VIGIL_DORMANCY_PRESENCE_ACTIVE_MS": "4000",
        "VIGIL_DORMANCY_PRESENCE_AWAY_MS": "10000", "VIGIL_DORMANCY_NO_HUMAN_MS": "6000"})
    col = stack.collector(["room/+/presence", "room/+/state", "persona/+/suggestion"])
    room = uid("rp")
    persona = f"helper-{room[-6:]}"
    pub = stack.publisher()
    pub.publish(*ai(room, persona, "anyone there?"))
    pub.publish(*human(room, "joel", "reading along"))
    col.wait_event(f"room/{room}/state", lambda j: persona in j.get("personas", {}), timeout=scaled(10))

    # two tabs of the same reader, each beating every 0.4 s with fresh activity
    mark = col.mark()
    start = time.monotonic()
    n = 0
    while time.monotonic() - start < BEATS_FOR_S:
        st, _, body = request(gw.http_port, "POST", "/api/presence",
                              {"session": f"tab{n % 2}", "rooms": [room], "last_activity": int(time.time() * 1000)},
                              JOEL)
        assert st == 200, body
        n += 1
        assert not col.events(f"persona/{persona}/suggestion"), \
            f"suggested {time.monotonic() - start:.1f}s into the beats: {col.events(f'persona/{persona}/suggestion')}"
        time.sleep(BEAT_S)
    elapsed = time.monotonic() - start
    assert not col.events(f"persona/{persona}/suggestion")
    # dormancy-monitor still counts joel present
    states = col.events(f"room/{room}/state", since=mark)
    assert states and "joel" in states[-1]["humans_present"], states[-1:]
    # the gateway refreshed the room while joel stayed active, at most once
    # per refresh interval (not once per beat: n beats from two tabs)
    pres = col.events(f"room/{room}/presence", since=mark)
    assert all(p["status"] == "active" and p["user"] == "joel" for p in pres), pres
    assert 3 <= len(pres) <= elapsed / REFRESH_S + 2, (len(pres), n)
    assert len(pres) < n / 3

    # the beats stop: idle for both, and the suggestion goes ahead
    stop = col.mark()
    sug = col.wait_event(f"persona/{persona}/suggestion", timeout=scaled(20), since=stop)
    assert sug["room"] == room and sug["trigger"] == "no-human"
    col.wait_event(f"room/{room}/presence", lambda j: j["status"] in ("idle", "away"), timeout=scaled(10),
                   since=stop)
    from conftest import validate_outputs
    assert validate_outputs(col, ("room/+/presence",)) >= 3
