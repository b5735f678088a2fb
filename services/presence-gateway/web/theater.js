// Vigil Theater: rooms with their messages, persona dormancy badges with
// their reasons, dormancy suggestions to answer (Yes / No / Snooze), human
// presence, council deliberations and questions, service health, all live
// from /api/events (Server-Sent Events); and the presence heartbeats of the
// person viewing the page.
"use strict";

const params = new URLSearchParams(location.search);
const BEAT_MS = Number(params.get("beat_ms")) || 30000; // every 30 s while active, as specified
const SESSION = "tab-" + Math.random().toString(36).slice(2, 10);
const MAX_MESSAGES = 200; // shown per room; older ones stay in the room log
const MAX_PRESENCE_ROOMS = 32; // the gateway's rooms a session (README, Limits)
const STREAM_RETRY_MS = 5000; // after the gateway refused the stream (it said Retry-After: 5)
// how long a user who went away stays listed (as away) before leaving the list
const AWAY_LINGER_MS = Number(params.get("away_linger_ms")) || 60000;
const state = { user: null, rooms: new Map(), lastActivity: Date.now(), es: null, questions: new Map(), seen: new Set(),
  lastId: null, notices: new Map(), skew: 0 };

// The id a topic level names (room/{r}/..., council/{s}/...): what a frame
// is filed under, whatever its payload says.
function topicId(d, fallback) {
  const parts = (d.topic || "").split("/");
  return parts.length > 2 && parts[1] ? parts[1] : fallback;
}

// The gateway's clock, as its `connected` frame told it (expiry times are
// the council's, not this browser's).
function serverNow() { return Date.now() + state.skew; }

// What a limit cut, in the header until it no longer holds (key: which).
function setNotice(key, text) {
  if (text) state.notices.set(key, text); else state.notices.delete(key);
  const n = document.getElementById("notice");
  n.textContent = [...state.notices.values()].join(" · ");
  n.hidden = state.notices.size === 0;
}

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "dataset") Object.assign(e.dataset, v);
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const k of kids) e.append(k);
  return e;
}

async function api(method, path, body) {
  const r = await fetch(path, {
    method, credentials: "include",
    headers: body ? { "Content-Type": "application/json" } : {},
    body: body ? JSON.stringify(body) : undefined,
  });
  let data = null;
  try { data = await r.json(); } catch (e) { /* empty body */ }
  if (!r.ok) throw new Error((data && data.detail) || r.statusText);
  return data;
}

// ---- rooms --------------------------------------------------------------

function room(name) {
  let r = state.rooms.get(name);
  if (r) return r;
  const messages = el("ul", { class: "messages" });
  const badges = el("div", { class: "badges" });
  const suggestions = el("div", { class: "suggestions" });
  const humans = el("div", { class: "humans" });
  const floor = el("div", { class: "floor" });
  const input = el("input", { name: "text", placeholder: "Say something in " + name, autocomplete: "off" });
  const form = el("form", {
    onsubmit: async (ev) => {
      ev.preventDefault();
      const text = input.value.trim();
      if (!text) return;
      input.value = "";
      // the same id for a send tried again after an error: a message the
      // gateway committed before its answer was lost is not posted twice
      if (!r.unsent || r.unsent.text !== text)
        r.unsent = { text, id: "web-" + Date.now().toString(36) + "-" + Math.random().toString(36).slice(2, 10) };
      try {
        await api("POST", `/api/rooms/${encodeURIComponent(name)}/messages`, { text, id: r.unsent.id });
        r.unsent = null;
      }
      catch (e) { input.value = text; alert(e.message); }
    },
  }, input, el("button", { type: "submit" }, "Send"));
  const card = el("article", { class: "room", id: "room-" + name, dataset: { room: name } },
    el("h3", {}, "#" + name), badges, floor, suggestions, humans, messages, form);
  document.getElementById("rooms").append(card);
  r = { name, card, messages, badges, humans, suggestions, floor, personas: new Map(), people: new Map(), asked: new Map() };
  state.rooms.set(name, r);
  soonBeat(); // a new room the viewer now sees
  loadHistory(r);
  return r;
}

function messageItem(m) {
  return el("li", { dataset: { type: m.sender_type || "ai", id: m.id || "" } },
    el("span", { class: "sender" }, m.sender || "?"), m.text || "");
}

// The room's recent log (chat-router's, through the gateway), placed
// before whatever arrived live meanwhile.
async function loadHistory(r) {
  try {
    const b = await api("GET", `/api/rooms/${encodeURIComponent(r.name)}/messages?limit=50`);
    const first = r.messages.firstChild;
    for (const m of b.messages || []) {
      if (m.id && state.seen.has("m:" + m.id)) continue;
      if (m.id) state.seen.add("m:" + m.id);
      r.messages.insertBefore(messageItem(m), first);
    }
    r.messages.scrollTop = r.messages.scrollHeight;
  } catch (e) { /* no log (chat-router not running): live messages only */ }
}

function addMessage(m) {
  const name = topicId(m, m.room); // the topic's room, where the gateway logged it
  if (!name || (m.id && state.seen.has("m:" + m.id))) return;
  if (m.id) state.seen.add("m:" + m.id);
  const r = room(name);
  r.messages.append(messageItem(m));
  while (r.messages.children.length > MAX_MESSAGES) r.messages.firstChild.remove();
  r.messages.scrollTop = r.messages.scrollHeight;
}

function setBadge(roomName, persona, level, reason) {
  const r = room(roomName);
  let b = r.personas.get(persona);
  if (!b) {
    b = el("span", { class: "badge", dataset: { persona } });
    r.personas.set(persona, b);
    r.badges.append(b);
  }
  // a new level without a reason (room.state) leaves no stale reason behind
  if (reason !== undefined) b.dataset.reason = reason || "";
  else if (b.dataset.level !== level) b.dataset.reason = "";
  b.dataset.level = level;
  b.textContent = `${persona} · ${level}`;
  b.title = b.dataset.reason ? `${level}: ${b.dataset.reason}` : level;
}

// floor-control's latest decision for the room (room/{r}/floor): who was
// given the floor for the last human message and who was held back, each
// persona's reason in its tooltip. Only the latest is kept: it is a
// decision per message, not a state.
function setFloor(d) {
  const name = topicId(d, d.room);
  if (!name) return;
  const r = room(name);
  const reasons = d.reasons || {};
  const who = (list, cls) => (list || []).map((p) =>
    el("span", { class: cls, dataset: { persona: p }, title: reasons[p] || "" }, p));
  const granted = who(d.granted, "granted"), held = who(d.held, "held");
  r.floor.replaceChildren(el("span", { class: "label" }, "floor"),
    ...(granted.length ? granted : [el("span", { class: "none" }, "nobody")]),
    ...(held.length ? [el("span", { class: "label" }, "held"), ...held] : []));
  r.floor.dataset.message = d.message_id || "";
}

// A user's status in a room; one who went away leaves the list after
// AWAY_LINGER_MS unless they come back meanwhile.
function setPresence(p) {
  if (!p.room || !p.user) return;
  const r = room(p.room);
  let h = r.people.get(p.user);
  if (!h) {
    if (p.status === "away") return; // nothing to show of someone not here
    h = el("span", { class: "human", dataset: { user: p.user } });
    r.people.set(p.user, h);
    r.humans.append(h);
  }
  clearTimeout(h.leave);
  h.dataset.status = p.status;
  h.textContent = `${p.user} (${p.status})`;
  if (p.status === "away") {
    h.leave = setTimeout(() => {
      if (r.people.get(p.user) !== h) return;
      h.remove();
      r.people.delete(p.user);
    }, AWAY_LINGER_MS);
  }
}

// ---- dormancy suggestions (suggest, don't force) --------------------------

// A duration as dormancy-monitor writes it in its suggestion text: whole
// minutes as "5min", else whole seconds as "3s", else "1500ms".
function duration(ms) {
  if (ms % 60000 === 0) return `${ms / 60000}min`;
  if (ms % 1000 === 0) return `${ms / 1000}s`;
  return `${ms}ms`;
}

// One card per persona and room, for a suggestion waiting for an answer:
// from a persona.suggestion frame (its id, text, options, snooze_ms), or
// from the `pending` entry of the persona's state when the page opened
// after the suggestion was made (no id then: the answer is for whatever is
// pending). The buttons replace the "[Yes] [No] ..." the text ends with.
function showSuggestion(roomName, persona, s) {
  const r = room(roomName);
  dropSuggestion(roomName, persona); // a newer suggestion replaces the card
  const labels = { yes: "Yes", no: "No", snooze: s.snooze_ms > 0 ? `Snooze ${duration(s.snooze_ms)}` : "Snooze" };
  const options = (Array.isArray(s.options) ? s.options : ["yes", "no", "snooze"]).filter((o) => labels[o]);
  const status = el("span", { class: "status" });
  const buttons = options.map((o) => el("button", { type: "button", dataset: { answer: o }, onclick: () => answer(o) }, labels[o]));
  async function answer(a) {
    for (const b of buttons) b.disabled = true;
    status.textContent = "";
    const body = { room: roomName, answer: a };
    if (s.id) body.suggestion_id = s.id;
    try {
      await api("POST", `/api/personas/${encodeURIComponent(persona)}/suggestion`, body);
      dropSuggestion(roomName, persona);
    } catch (e) {
      status.textContent = e.message;
      for (const b of buttons) b.disabled = false;
    }
  }
  const text = (s.text || "").replace(/(\s*\[[^\]]*\])+\s*$/, "");
  const card = el("div", { class: "suggestion", dataset: { persona, id: s.id || "" }, title: s.title || s.reason || "" },
    el("p", {}, el("span", { class: "sender" }, persona), text), el("div", { class: "choices" }, ...buttons, status));
  r.suggestions.append(card);
  r.asked.set(persona, card);
}

function dropSuggestion(roomName, persona) {
  const r = state.rooms.get(roomName);
  const card = r && r.asked.get(persona);
  if (!card) return;
  card.remove();
  r.asked.delete(persona);
}

// The persona's state says what is still pending: a card for a pending
// suggestion the page has none for, none where nothing is pending. The card
// shows the suggestion's own text (`pending.text`); a state written before
// dormancy-monitor kept it has none, and then the card asks the rule's
// question without the figures it cannot know (the reason as its tooltip).
const PENDING_QUESTION = {
  "no-human": "No human activity",
  redundant: "Multiple AIs already responded",
  autopilot: "The dormancy autopilot suggests stepping back",
};
function pendingText(p) {
  if (p.text) return p.text;
  const why = PENDING_QUESTION[p.trigger];
  return `💤 ${why ? why + ". " : ""}Switch to ${p.level || "mention-only"}?`;
}

function followPending(d) {
  const rooms = d.rooms || {};
  for (const [name, r] of state.rooms) {
    if (r.asked.has(d.persona) && !(rooms[name] && rooms[name].pending)) dropSuggestion(name, d.persona);
  }
  for (const [name, v] of Object.entries(rooms)) {
    const p = v.pending;
    if (!p || (state.rooms.get(name) && state.rooms.get(name).asked.has(d.persona))) continue;
    showSuggestion(name, d.persona, {
      text: pendingText(p),
      options: p.trigger === "no-human" ? ["yes", "no", "snooze"] : ["yes", "no"],
      snooze_ms: p.snooze_ms,
      title: p.reason,
    });
  }
}

// ---- council ------------------------------------------------------------

function councilEvent(type, d) {
  // a question that ended unanswered says why beside its text
  const ended = type === "question" && d.status === "expired" && d.reason ? `${d.question || ""} (${d.reason})` : "";
  const text = ended || d.text || d.question || d.decision || d.content || d.result || d.reason || d.action || d.phase || "";
  const list = document.getElementById("council");
  list.append(el("li", { dataset: { type } }, el("span", { class: "type" }, type), `[${d.session || "?"}] ${text}`));
  while (list.children.length > 100) list.firstChild.remove();
  list.scrollTop = list.scrollHeight;
  if (type === "question") addQuestion(d);
  if (type === "session_ended") endSession(topicId(d, d.session));
}

function endSession(session) {
  for (const [qid, q] of state.questions) if (q.session === session) removeQuestion(qid);
}

// A pending question with its answer box, until it is answered (here or
// elsewhere: council.answer), its session ends, or its expires_at passes.
// A question event for one already ended (status expired, or an expires_at
// already past: council dropped it for a newer one) takes it away.
function addQuestion(d) {
  const qid = d.question_id || d.id;
  const session = topicId(d, d.session); // the answer goes to council/{this}/answer
  if (!qid || !session) return;
  const left = typeof d.expires_at === "number" ? d.expires_at - serverNow() : Infinity;
  if (d.status === "expired" || left <= 0) {
    removeQuestion(qid);
    return;
  }
  if (state.questions.has(qid)) return;
  const input = el("input", { name: "answer", placeholder: "Your answer", autocomplete: "off" });
  const status = el("span", { class: "status" });
  const li = el("li", { dataset: { question: qid, session } },
    el("span", { class: "prio" }, "P" + (d.priority || 5)), d.text || d.question || qid,
    el("form", {
      onsubmit: async (ev) => {
        ev.preventDefault();
        const answer = input.value.trim();
        if (!answer) return;
        try {
          await api("POST", `/api/council/${encodeURIComponent(session)}/answers`,
            { question_id: qid, answer });
          removeQuestion(qid);
        } catch (e) { status.textContent = e.message; }
      },
    }, input, el("button", { type: "submit" }, "Answer"), status));
  // higher priority first
  const list = document.getElementById("questions");
  const before = [...list.children].find((x) => Number(x.dataset.priority) < (d.priority || 5));
  li.dataset.priority = d.priority || 5;
  list.insertBefore(li, before || null);
  const expiry = left < 2147483647 ? setTimeout(() => removeQuestion(qid), left) : null;
  state.questions.set(qid, { session, li, expiry });
  document.getElementById("q-count").textContent = state.questions.size;
}

function removeQuestion(qid) {
  const q = state.questions.get(qid);
  if (!q) return;
  clearTimeout(q.expiry);
  q.li.remove();
  state.questions.delete(qid);
  document.getElementById("q-count").textContent = state.questions.size;
}

// ---- service health -----------------------------------------------------

function setHealth(s) {
  const tbody = document.querySelector("#health tbody");
  const key = `${s.service}/${s.instance}`;
  let row = tbody.querySelector(`tr[data-key="${CSS.escape(key)}"]`);
  if (!row) {
    row = el("tr", { dataset: { key } }, el("td", {}, s.service), el("td", {}, s.instance), el("td", { class: "state" }));
    tbody.append(row);
  }
  const st = row.querySelector(".state");
  st.dataset.state = s.state;
  st.textContent = s.state;
}

// ---- the live stream ----------------------------------------------------

const HANDLERS = {
  "room.message": addMessage,
  "room.presence": (d) => setPresence({ ...d, room: topicId(d, d.room) }),
  // ?snapshot=1: each user's latest presence in a room (active or idle)
  "room.floor": setFloor,
  "room.humans": (d) => {
    for (const h of d.humans || []) setPresence({ ...h, room: topicId(d, d.room) });
  },
  "room.state": (d) => {
    const name = topicId(d, d.room);
    for (const [p, level] of Object.entries(d.personas || {})) setBadge(name, p, level);
    // users with an active presence the page has not heard of (yet)
    for (const u of d.humans_present || []) {
      if (!room(name).people.has(u)) setPresence({ room: name, user: u, status: "active" });
    }
  },
  "persona.state": (d) => {
    for (const [r, v] of Object.entries(d.rooms || {})) {
      setBadge(r, d.persona, v.level, v.reason || v.trigger || "");
    }
    followPending(d);
  },
  "persona.dormancy": (d) => { setBadge(d.room, d.persona, d.level, d.reason || d.text); dropSuggestion(d.room, d.persona); },
  "persona.suggestion": (d) => { if (d.room && d.persona) showSuggestion(d.room, d.persona, d); },
  "sys.status": setHealth,
  // ?snapshot=1: the questions of a session still waiting for an answer
  "council.questions": (d) => { for (const q of d.questions || []) addQuestion(q); },
  "council.answer": (d) => removeQuestion(d.question_id),
  "council.state": (d) => { if (d.status === "completed") endSession(topicId(d, d.session)); },
};
for (const t of ["deliberation", "phase", "action", "question", "session_paused", "session_ended"]) {
  HANDLERS[t] = (d) => councilEvent(t, d);
}

function connect() {
  const conn = document.getElementById("conn");
  // snapshot=1: the current states first (rooms, badges, services), then
  // live; each room's recent messages come from its log (loadHistory).
  // EventSource resends Last-Event-ID itself when it reconnects; a stream
  // opened again after a refusal resumes with since= instead.
  const since = state.lastId ? "&since=" + encodeURIComponent(state.lastId) : "";
  const es = new EventSource("/api/events?topics=rooms,personas,council,sys&snapshot=1" + since, { withCredentials: true });
  state.es = es;
  es.addEventListener("connected", (ev) => {
    // its id is where this stream starts: resume from there even if no entry comes
    if (ev.lastEventId) state.lastId = ev.lastEventId;
    try { state.skew = JSON.parse(ev.data).ts - Date.now() || 0; } catch (e) { /* keep */ }
    conn.className = "conn on"; conn.textContent = "live"; setNotice("stream", "");
  });
  // the gateway's limits, told in the stream (README, Limits)
  es.addEventListener("dropped", () => setNotice("stream", "the stream fell behind and starts again from where it was"));
  es.addEventListener("trimmed", () => setNotice("trimmed", "events logged while this page was away are no longer kept: reload the page to be complete"));
  es.addEventListener("ahead", () => setNotice("trimmed", "the gateway's log was reset or lost its latest events (while this page was away, or under it): reload the page to be complete"));
  es.onerror = () => {
    conn.className = "conn off";
    conn.textContent = "reconnecting";
    if (es.readyState !== EventSource.CLOSED) return;
    // refused (too many streams, starting, rate limited): EventSource gives up, we do not
    setNotice("stream", `the live stream was refused; trying again every ${STREAM_RETRY_MS / 1000} s`);
    setTimeout(connect, STREAM_RETRY_MS);
  };
  for (const [type, fn] of Object.entries(HANDLERS)) {
    es.addEventListener(type, (ev) => {
      if (ev.lastEventId) state.lastId = ev.lastEventId;
      try { fn(JSON.parse(ev.data)); } catch (e) { console.error(type, e); }
    });
  }
}

// ---- presence heartbeats --------------------------------------------------

for (const ev of ["mousemove", "keydown", "scroll", "click", "touchstart"]) {
  addEventListener(ev, () => { state.lastActivity = Date.now(); }, { passive: true });
}
// Coming back to the tab is activity; leaving it is not absence yet: the
// statuses follow the time since the last activity (idle after 2 min, away
// after 5), so a glance at another tab is a thinking pause, not "away".
document.addEventListener("visibilitychange", () => {
  if (!document.hidden) state.lastActivity = Date.now();
  beat();
});

let beatTimer = null;
let soon = null;
function soonBeat() { // one beat for a burst of new rooms
  if (!soon) soon = setTimeout(() => { soon = null; beat(); }, 300);
}
async function beat() {
  if (!state.user) return;
  clearTimeout(beatTimer);
  beatTimer = setTimeout(beat, BEAT_MS);
  const all = [...state.rooms.keys()];
  const rooms = all.slice(0, MAX_PRESENCE_ROOMS);
  setNotice("rooms", all.length > MAX_PRESENCE_ROOMS
    ? `present in the first ${MAX_PRESENCE_ROOMS} of ${all.length} rooms (the gateway keeps ${MAX_PRESENCE_ROOMS} a session)` : "");
  try {
    await api("POST", "/api/presence", {
      session: SESSION, rooms,
      // no status claimed: the gateway derives it from how long ago the
      // last activity was, by this browser's clock (dated by its own)
      idle_ms: Math.max(0, Date.now() - state.lastActivity),
    });
  } catch (e) { console.warn("presence", e.message); }
}

async function main() {
  for (const r of (params.get("rooms") || "").split(",").filter(Boolean)) room(r);
  try {
    const me = await api("GET", "/api/whoami");
    state.user = me.user;
  } catch (e) {
    document.getElementById("who").textContent = "not logged in";
    document.getElementById("login").hidden = false;
    return;
  }
  document.getElementById("who").textContent = "watching as " + state.user;
  document.getElementById("app").hidden = false;
  connect();
  beat();
}
main();
