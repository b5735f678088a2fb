"""A cleared persona/{p}/meta (an empty retained message, how MQTT deletes
one) is the meta that says nothing: the persona leaves every room it was in
through its meta alone, and where it spoke it stays, without its meta name
and with the default thresholds again. The clear publishes what a meta
listing no room publishes; a second clear, or the clear of a persona never
seen, changes nothing and is no error; the cleared meta published again
byte for byte takes the persona back; an empty payload on any other topic
is still refused as not_json."""

import json

import harness
from conftest import SERVICE, ai, command, uid, validate_outputs

NO_HUMAN_MS = 1500  # the default a persona gets back when its meta goes
DAY_MS = 86400000
ENV = {
    "VIGIL_DORMANCY_NO_HUMAN_MS": NO_HUMAN_MS,
    "VIGIL_DORMANCY_AI_ONLY_MS": DAY_MS,
    "VIGIL_DORMANCY_SUGGESTION_TIMEOUT_MS": 600000,
}


def meta(persona, room, name):
    """A retained meta listing room, with a no-human threshold of a day."""
    return (f"persona/{persona}/meta",
            {"persona": persona, "name": name, "rooms": [room],
             "dormancy": {"noHumanActivityThreshold": DAY_MS}})


def parts(stack, room):
    """The personas of room's record, as stored (one part each)."""
    c = stack.redis.client()
    try:
        h = c.hgetall(f"{stack.prefix}{SERVICE}:state:{room}")
    finally:
        c.close()
    return {k[2:].decode(): json.loads(v) for k, v in h.items() if k.startswith(b"p:")}


def rooms_of(col, persona, since):
    """The rooms of the last persona/{persona}/state since the mark, or None."""
    states = col.events(f"persona/{persona}/state", since=since)
    return states[-1]["rooms"] if states else None


def test_a_cleared_meta_is_a_meta_that_says_nothing(stack):
    stack.service(env=ENV)
    col = stack.collector()
    pub = stack.publisher()
    store = stack.store()
    room, witness_room = uid("clear"), uid("witness")
    # mia and lea are in the room through their metas alone; kim spoke
    # there too; wit, without a meta, has the default threshold
    for p, name in (("mia", "Mia"), ("lea", "Lea"), ("kim", "Kim")):
        pub.publish(*meta(p, room, name), retain=True)
    pub.publish(*ai(room, "kim", "I am here"))
    pub.publish(*ai(room, "wit", "me too"))
    col.wait_event(f"room/{room}/state",
                   lambda s: set(s["personas"]) == {"mia", "lea", "kim", "wit"}, timeout=10)
    held = parts(stack, room)
    assert held["kim"]["name"] == "Kim" and held["kim"]["meta"] is True, held["kim"]
    assert held["kim"]["cfg"] == {"noHumanActivityThreshold": DAY_MS}, held["kim"]
    # the default threshold passes: wit is asked, the others (a day) are not
    col.wait_event("persona/wit/suggestion", timeout=10)
    assert not [m for p in ("mia", "lea", "kim") for m in col.find(f"persona/{p}/suggestion")]

    # lea's meta lists no room any more; mia's is cleared: both leave alike
    mark = col.mark()
    pub.publish("persona/lea/meta", {"persona": "lea", "rooms": []}, retain=True)
    pub.publish("persona/mia/meta", b"", retain=True)
    col.wait_event(f"room/{room}/state", lambda s: set(s["personas"]) == {"kim", "wit"},
                   timeout=10, since=mark)
    harness.wait_until(lambda: rooms_of(col, "mia", mark) == rooms_of(col, "lea", mark) == {},
                       10, "mia's and lea's persona/{p}/state without the room")
    held = harness.retained(stack.broker.port, "persona/+/state")
    assert held["persona/mia/state"]["rooms"] == held["persona/lea/state"]["rooms"] == {}
    assert "persona/mia/meta" not in harness.retained(stack.broker.port, "persona/+/meta")
    assert set(parts(stack, room)) == {"kim", "wit"}

    # kim's meta cleared: kim stays (it spoke), without its name and its
    # day-long threshold; the default one has passed, so the clear itself
    # asks kim, with an event id of its own (a clear has none)
    pub.publish("persona/kim/meta", b"", retain=True)
    s = col.wait_event("persona/kim/suggestion", timeout=10, since=mark)
    assert s["room"] == room and s["trigger"] == "no-human", s
    assert s["id"].startswith("meta-clear.kim.") and s["id"].endswith(f":{room}:0"), s
    kim = parts(stack, room)["kim"]
    assert kim["joined"] is True, kim
    assert "name" not in kim and "meta" not in kim and "cfg" not in kim, kim
    # that id is answered like any other
    pub.publish(*command("kim", "answer", suggestion_id=s["id"], answer="yes"))
    e = col.wait_event("persona/kim/dormancy", timeout=10, since=mark)
    assert e["level"] == "mention-only" and e["trigger"] == "no-human", e
    col.wait_event(f"room/{room}/state",
                   lambda st: st["personas"] == {"kim": "mention-only", "wit": "active"},
                   timeout=10, since=mark)
    col.wait_event("persona/kim/state", lambda st: st["rooms"][room]["level"] == "mention-only",
                   timeout=10, since=mark)

    # cleared again, and the meta of a persona never seen: nothing changes.
    # The witness, published after them on the same connection, is taken
    # after them.
    records = store.states()
    snapshots = {p: store.snapshot(f"persona:{p}") for p in ("kim", "mia")}
    again = col.mark()
    ghost = uid("ghost")
    for p in ("kim", "mia", ghost):
        pub.publish(f"persona/{p}/meta", b"", retain=True)
    pub.publish(*ai(witness_room, "wit", "still here"))
    col.wait_event(f"room/{witness_room}/state", timeout=10, since=again)
    after = store.states()
    assert after.pop(witness_room) and after == records, "a second clear changed a record"
    assert {p: store.snapshot(f"persona:{p}") for p in ("kim", "mia")} == snapshots
    assert not store.snapshot(f"persona:{ghost}")
    outputs = ("persona/kim/#", "persona/mia/#", f"persona/{ghost}/#", f"room/{room}/#")
    changed = [m for f in outputs for m in col.find(f, since=again)
               if not m.topic.endswith("/meta")]
    assert not changed, changed
    assert not col.find(f"sys/{SERVICE}/error", since=mark)

    # mia's very meta, published again byte for byte, takes it back in
    back = col.mark()
    pub.publish(*meta("mia", room, "Mia"), retain=True)
    col.wait_event(f"room/{room}/state", lambda s: "mia" in s["personas"], timeout=10,
                   since=back)
    assert parts(stack, room)["mia"]["name"] == "Mia"

    # an empty payload anywhere else is still a bad input
    for topic in ("persona/kim/command", f"room/{room}/message"):
        err_mark = col.mark()
        pub.publish(topic, b"")
        err = col.wait_event(f"sys/{SERVICE}/error", timeout=10, since=err_mark)
        assert err["reason"] == "not_json" and err["topic"] == topic, err
    validate_outputs(col)
