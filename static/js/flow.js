/* Messages that travel (issue 17): every request and answer the engine's simulated network
 * carried in a frame becomes a token moving on the cluster picture from its sender to its
 * receiver, labelled with what it carries (offsets, HW, epoch, error). Tokens are drawn
 * from the engine's own events -- a fetch_sent is a Fetch leaving the follower, a
 * fetch_answered its answer leaving the leader, a message_dropped a message that falls
 * where it was lost -- and played in the order of their virtual times (events at the same
 * virtual millisecond leave together, but one sender's leave one after another). Each event is also a line of the timeline, which is
 * the text for every token. Under prefers-reduced-motion a token appears at its receiver,
 * without motion. While shown, a token is <g data-flow="<message kind>">. */
(function () {
  "use strict";
  const FLIGHT_MS = 750, SLOT_MS = 260, MAX_SPAN_MS = 3200, REST_MS = 1100, MAX_TOKENS = 30;
  // Tokens resting at the same time take rows away from their receiver's box, so no label
  // covers another (at its receiver or a neighbour's); at most MAX_QUEUE rows (without
  // motion, only the newest token of each kind per link, and the newest MAX_QUEUE per
  // receiver, are shown).
  const ROW_PX = 20, MAX_QUEUE = 4;
  const held = {};
  // The schedule across frames: a step's later frames (a long command cut into phases) play
  // after its earlier ones, in virtual-time order; a new step (a click) drops what the old
  // step had not started yet, so its own first token moves at once.
  const chain = { step: undefined, next: 0 };
  const LAYER_MAX = 2 * MAX_TOKENS;

  function notStarted(node) {
    const a = node.getAnimations()[0];
    return !!a && (a.currentTime || 0) < a.effect.getTiming().delay;
  }
  const el = KV.el;
  const $ = function (id) { return document.getElementById(id); };
  // Who coordinates a group or a transactional id, and who leads a partition: learned from
  // the events that say so, since the answer events do not all repeat it.
  const coordinators = {};
  // The transaction coordinator's requests, by Kafka's names.
  const TXN_API = { init_producer_id: "InitProducerId", add_partitions: "AddPartitionsToTxn", end_txn: "EndTxn", add_offsets: "AddOffsetsToTxn",
    txn_offset_commit: "TxnOffsetCommit" };
  const leaders = {};

  // Labels are Kafka's request names and the values they carry (no English sentence: the
  // words a label adds, like "committed", come from KV.t).
  function range(a, b) { return a === null || a === undefined ? "∅" : a + (b !== a ? "–" + b : ""); }
  function kebab(api) { return String(api).replace(/([a-z])([A-Z])/g, "$1-$2").replace(/_/g, "-").toLowerCase(); }

  function tokensOf(frame) {
    const st = frame.state || {};
    const controller = (st.controller || {}).active;
    if (st.partition && st.partition.leader !== null) leaders[st.partition.topic + "-" + st.partition.partition] = st.partition.leader;
    (st.partitions || []).forEach(function (p) { leaders[(st.topic || "") + "-" + p.partition] = p.leader; });
    const out = [];
    function add(ev, from, to, flow, label, extra) {
      if (from === undefined || to === undefined || from === null || to === null || from === to) return;
      out.push(Object.assign({ t: ev.time_ms, seq: ev.seq, from: from, to: to, flow: flow, label: label, cls: "" }, extra || {}));
    }
    const answer = { cls: "flow-answer" }, error = { cls: "flow-answer flow-error" };
    // KRaft (lesson 17): a metadata Fetch travels when its answer carries records (the quorum's
    // idle fetches, one per node every 500 ms, would bury the votes); an answer with an error
    // travels alone. Keyed fetcher > target @ fetch offset.
    const carrying = {};
    (frame.events || []).forEach(function (ev) {
      if (ev.kind === "raft_fetch_answered" && !ev.error && (ev.records || ev.snapshot_end_offset >= 0)) carrying[ev.to + ">" + ev.node + "@" + ev.fetch_offset] = true;
    });
    (frame.events || []).forEach(function (ev) {
      if (ev.group !== undefined && ev.coordinator !== undefined) coordinators["g:" + ev.group] = ev.coordinator;
      if (ev.transactional_id !== undefined && ev.coordinator !== undefined) coordinators["t:" + ev.transactional_id] = ev.coordinator;
      switch (ev.kind) {
        case "leader_elected":
          leaders[ev.topic + "-" + ev.partition] = ev.chosen;
          // Under KRaft nothing is pushed: the decision is a record that the brokers fetch.
          if (!st.quorum) add(ev, ev.controller, ev.chosen, "metadata", "leader " + ev.chosen + " · e" + ev.leader_epoch + " · ISR [" + ev.isr.join(",") + "]");
          break;
        case "raft_vote_sent":
          add(ev, ev.node, ev.to, ev.pre_vote ? "pre-vote" : "vote", (ev.pre_vote ? "PreVote" : "Vote") + " e" + ev.epoch); break;
        case "raft_vote_answered":
          add(ev, ev.node, ev.to, (ev.pre_vote ? "pre-vote" : "vote") + "-response", (ev.granted ? "✓ " : "✗ ") + (ev.pre_vote ? "PreVote" : "Vote") + " e" + ev.epoch,
            ev.granted ? answer : error); break;
        case "raft_begin_epoch_sent":
          add(ev, ev.node, ev.to, "begin-quorum-epoch", "BeginQuorumEpoch e" + ev.epoch); break;
        case "raft_end_epoch_sent":
          add(ev, ev.node, ev.to, "end-quorum-epoch", "EndQuorumEpoch e" + ev.epoch); break;
        case "raft_fetch_sent":
          if (carrying[ev.node + ">" + ev.to + "@" + ev.fetch_offset]) add(ev, ev.node, ev.to, "metadata-fetch", "Fetch " + ev.fetch_offset + " · e" + ev.last_fetched_epoch);
          break;
        case "raft_fetch_answered":
          if (ev.error) add(ev, ev.node, ev.to, "metadata-fetch-response", ev.error, error);
          // Below the leader's log start (or an empty log): the answer names the snapshot to download.
          else if (ev.snapshot_end_offset >= 0) add(ev, ev.node, ev.to, "fetch-snapshot-id", "SnapshotId " + ev.snapshot_end_offset + "-" + ev.snapshot_epoch, answer);
          else if (ev.records) add(ev, ev.node, ev.to, "metadata-fetch-response", range(ev.fetch_offset, ev.fetch_offset + ev.records - 1) + " · HW " + ev.high_watermark, answer);
          // No records, answered before the leader's 500 ms wait ran out: the HW moved, so the
          // fetcher may now apply what it holds (an idle answer waits the full 500 ms).
          else if (ev.parked_ms < RAFT_FETCH_WAIT_MS) add(ev, ev.node, ev.to, "metadata-fetch-response", "HW " + ev.high_watermark, answer);
          break;
        case "raft_snapshot_fetch_sent":
          add(ev, ev.node, ev.to, "fetch-snapshot", "FetchSnapshot " + ev.end_offset + "-" + ev.snapshot_epoch + " @" + ev.position); break;
        case "raft_snapshot_fetch_answered":
          add(ev, ev.node, ev.to, "fetch-snapshot-response", ev.error ? ev.error : ev.bytes + " B @" + ev.position, ev.error ? error : answer); break;
        case "fetch_sent":
          add(ev, ev.broker, ev.leader, "fetch", "Fetch " + ev.fetch_offset + " · e" + ev.last_fetched_epoch); break;
        case "fetch_answered":
          add(ev, ev.broker, ev.follower, "fetch-response", (ev.error ? ev.error : ev.records ? range(ev.first_offset, ev.last_offset) : "∅") +
            " · HW " + ev.high_watermark, ev.error ? error : answer); break;
        case "epoch_request_sent":
          add(ev, ev.broker, ev.leader, "offsets-for-leader-epoch", "OffsetsForLeaderEpoch e" + ev.epoch); break;
        case "epoch_request_answered":
          add(ev, ev.broker, ev.follower, "offsets-for-leader-epoch-response", "e" + ev.epoch + " → " + ev.end_offset, answer); break;
        case "alter_partition_sent":
          add(ev, ev.broker, controller, "alter-partition", ["AlterPartition", "ISR", "[" + ev.proposed_isr.join(",") + "]", "e" + ev.leader_epoch].join(" ")); break;
        case "produce_received":
          add(ev, -1, ev.broker, "produce", "Produce " + ev.records + " · acks=" + (ev.acks === -1 ? "all" : ev.acks)); break;
        case "produce_acked":
          if (ev.broker !== null) add(ev, ev.broker, -1, "produce-response", "ok " + range(ev.base_offset, ev.last_offset), answer);
          break;
        case "produce_failed":
          if (ev.broker !== null) add(ev, ev.broker, -1, "produce-response", ev.error, error);
          break;
        case "produce_duplicate":
          add(ev, ev.broker, -1, "produce-response", "dup → " + range(ev.base_offset, ev.last_offset), answer); break;
        case "consumer_read":
          add(ev, -1, ev.broker, "fetch", "Fetch " + ev.offset);
          add(ev, ev.broker, -1, "fetch-response", (ev.records ? range(ev.offset, ev.next_offset - 1) : "∅") + " · HW " + ev.high_watermark, Object.assign({ t: ev.time_ms + 0.5 }, answer));
          break;
        case "consumer_fetched": {
          const leader = leaders[ev.topic + "-" + ev.partition];
          add(ev, -1, leader, "fetch", "Fetch " + ev.topic + "-" + ev.partition + " " + ev.offset);
          add(ev, leader, -1, "fetch-response", (ev.records ? range(ev.offset, ev.next_offset - 1) : "∅") + " · HW " + ev.high_watermark, Object.assign({ t: ev.time_ms + 0.5 }, answer));
          break;
        }
        case "coordinator_found":
          add(ev, ev.coordinator, -1, "find-coordinator-response", "FindCoordinator → " + ev.coordinator, answer); break;
        case "join_group_sent":
          add(ev, -1, ev.coordinator, "join-group", "JoinGroup " + ev.member); break;
        case "join_group_completed":
          add(ev, ev.coordinator, -1, "join-group-response", "gen " + ev.generation + " · leader " + ev.leader, answer); break;
        case "sync_group_sent":
          add(ev, -1, coordinators["g:" + ev.group], "sync-group", ["SyncGroup", "gen", ev.generation].join(" ")); break;
        case "sync_group_completed":
          add(ev, ev.coordinator, -1, "sync-group-response", KV.t("fl_assignment", { g: ev.generation }), answer); break;
        case "heartbeat_answered":
          add(ev, coordinators["g:" + ev.group], -1, "heartbeat-response", "Heartbeat " + (ev.error === "NONE" ? "ok" : ev.error), ev.error === "NONE" ? answer : error); break;
        case "offset_commit_sent":
          add(ev, -1, coordinators["g:" + ev.group], "offset-commit", "OffsetCommit " + ev.offsets.map(function (o) { return o[1] + ":" + o[2]; }).join(" ")); break;
        case "offset_committed":
          add(ev, ev.coordinator, -1, "offset-commit-response", KV.t("fl_committed", { p: ev.partition, offset: ev.offset }), answer); break;
        case "offset_commit_failed":
          add(ev, coordinators["g:" + ev.group], -1, "offset-commit-response", ev.error, error); break;
        case "txn_request":
          add(ev, -1, ev.coordinator, kebab(TXN_API[ev.api] || ev.api), TXN_API[ev.api] || ev.api);
          add(ev, ev.coordinator, -1, kebab(TXN_API[ev.api] || ev.api) + "-response", ev.error === "NONE" ? "ok" : ev.error,
            Object.assign({ t: ev.time_ms + 0.5 }, ev.error === "NONE" ? answer : error));
          break;
        case "txn_marker_written":
          add(ev, coordinators["t:" + ev.transactional_id], ev.broker, "write-txn-markers", (ev.commit ? "COMMIT" : "ABORT") + " @" + ev.offset); break;
        case "client_request":        // a real client's connection (a node from 1000) is drawn as the client
          add(ev, -1, ev.broker, "client-" + kebab(ev.api), ev.api + " v" + ev.version + " #" + ev.correlation_id); break;
        case "client_response":
          add(ev, ev.broker, -1, "client-" + kebab(ev.api) + "-response", ev.api + " #" + ev.correlation_id + " " + (ev.error === "NONE" ? "ok" : ev.error),
            ev.error === "NONE" ? answer : error); break;
        case "message_dropped":
          add(ev, ev.src >= 1000 ? -1 : ev.src, ev.dst >= 1000 ? -1 : ev.dst, kebab(ev.api), "✗ " + ev.api, { cls: "flow-dropped", drop: ev.reason === "destination_down" ? 1 : ev.reason === "source_crashed" ? 0.15 : 0.5 });
          break;
        default:
      }
    });
    if (out.length <= MAX_TOKENS) return out;
    // Too many for one frame: an election's few messages (lesson 17) are kept before the
    // heartbeats and fetches around them; the rest keep the newest, as ever.
    const rare = out.filter(function (t) { return RARE[t.flow]; }).slice(-MAX_TOKENS);
    const room = MAX_TOKENS - rare.length;
    const rest = room > 0 ? out.filter(function (t) { return !RARE[t.flow]; }).slice(-room) : [];
    const keep = new Set(rare.concat(rest));
    return out.filter(function (t) { return keep.has(t); });
  }
  const RAFT_FETCH_WAIT_MS = 500;      // Kafka's hard-coded raft fetch max wait (engine/kraft/node.py)
  const RARE = { "pre-vote": 1, "pre-vote-response": 1, "vote": 1, "vote-response": 1, "begin-quorum-epoch": 1,
    "end-quorum-epoch": 1, "fetch-snapshot": 1, "fetch-snapshot-response": 1, "fetch-snapshot-id": 1 };

  function at(r, f) {
    // The point a fraction f along the quadratic the cluster draws for a link.
    const cx = 2 * r[1].x - (r[0].x + r[2].x) / 2, cy = 2 * r[1].y - (r[0].y + r[2].y) / 2, g = 1 - f;
    return { x: g * g * r[0].x + 2 * g * f * cx + f * f * r[2].x, y: g * g * r[0].y + 2 * g * f * cy + f * f * r[2].y };
  }
  function tr(p) { return "translate(" + p.x.toFixed(1) + "px," + p.y.toFixed(1) + "px)"; }

  function tokenWidth(tok) { return Math.round(tok.label.length * 6.7 + 10); }

  // Without motion every token rests at once: the newest of each kind on each link, then the
  // newest MAX_QUEUE per receiver (virtual-time order is kept).
  function newestOnly(tokens) {
    const seen = {}, perTo = {}, keep = [];
    for (let i = tokens.length - 1; i >= 0; i--) {
      const t = tokens[i], key = t.from + ">" + t.to + ":" + t.flow;
      if (t.drop === undefined && (seen[key] || (perTo[t.to] || 0) >= MAX_QUEUE)) continue;
      seen[key] = true;
      if (t.drop === undefined) perTo[t.to] = (perTo[t.to] || 0) + 1;
      keep.push(t);
    }
    return keep.reverse();
  }

  // Where a token rests at its receiver: the nearest row just off its box (a row each, away
  // from the box) whose label covers no other label resting at the same time -- at this
  // receiver or a neighbour (a wide label under one broker reaches under the next). `held`
  // keeps every resting label's rectangle and its [arrive, leave] in wall-clock ms. With no
  // free row within MAX_QUEUE the token does not rest (null): it fades as it arrives.
  function firstClear(points, w, arrive, leave, peek) {
    const live = (held.all || (held.all = [])).filter(function (h) { return h.arrive < leave && arrive < h.leave; });
    for (let i = 0; i < points.length; i++) {
      const p = points[i];
      const clear = live.every(function (h) {
        return Math.abs(h.x - p.x) >= (h.w + w) / 2 + 2 || Math.abs(h.y - p.y) >= ROW_PX - 1;
      });
      if (clear) {
        if (!peek) held.all.push({ x: p.x, y: p.y, w: w, arrive: arrive, leave: leave });
        return p;
      }
    }
    return null;
  }
  function restPoint(tok, end, w, arrive, leave, peek) {
    const rows = [];
    for (let row = 0; row < MAX_QUEUE; row++) {
      const p = inside(rowPoint(end, tok.to, row), w);
      if (!onABox(p, w)) rows.push(p);
    }
    return firstClear(rows, w, arrive, leave, peek);
  }
  // Whether a label resting at p would cover a node's box (lesson 17's controllers stand a
  // short gap above the brokers: their tokens keep to the gap).
  let boxesNow = null;      // the nodes' boxes, read once per frame played
  function onABox(p, w) {
    const boxes = boxesNow || (boxesNow = KV.clusterBoxes ? KV.clusterBoxes() : []);
    return boxes.some(function (b) {
      return p.x + w / 2 > b.x && p.x - w / 2 < b.x + b.w && p.y + ROW_PX / 2 > b.y && p.y - ROW_PX / 2 < b.y + b.h;
    });
  }

  // Tokens in flight on the picture (this page, any frame): each one's path in wall-clock
  // time, so a new token can take another lane or wait until its label covers no other label
  // on its way -- two tokens on one link (a request and its answer crossing, two fetches in a
  // row) or on links that meet at a broker (lesson 14's three brokers side by side, their
  // links short). A path is its keyframes (offset, point) over [start, start + duration].
  const flying = [];
  const SAMPLE_MS = 40, WAIT_STEP_MS = 90, MAX_WAITS = 24, LANE_PX = 21;
  function pointAt(f, t) {
    const u = (t - f.start) / f.duration, k = f.keys;
    if (u <= 0) return k[0].p;
    for (let i = 1; i < k.length; i++) {
      if (u <= k[i].o) {
        const a = k[i - 1], b = k[i], g = b.o > a.o ? (u - a.o) / (b.o - a.o) : 1;
        return { x: a.p.x + (b.p.x - a.p.x) * g, y: a.p.y + (b.p.y - a.p.y) * g };
      }
    }
    return k[k.length - 1].p;
  }
  // Whether path f's label covers another's at some moment both are on their way (the first
  // 60 % of a path; resting labels keep apart by their rows, see restPoint).
  // A path's box: every point it passes (it moves straight between keyframes), grown by half
  // its label; paths whose boxes do not meet never cover each other (most pairs, cheaply).
  function boxOf(f) {
    let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
    f.keys.forEach(function (k, i) {
      if (i > 4) return;           // the flight: up to the rest point (offset 0.6)
      x0 = Math.min(x0, k.p.x); x1 = Math.max(x1, k.p.x); y0 = Math.min(y0, k.p.y); y1 = Math.max(y1, k.p.y);
    });
    return { x0: x0 - f.w / 2 - 2, x1: x1 + f.w / 2 + 2, y0: y0 - ROW_PX / 2, y1: y1 + ROW_PX / 2 };
  }
  function crosses(f) {
    const fEnd = f.start + f.duration * 0.6, fb = f.box || (f.box = boxOf(f));
    return flying.some(function (g) {
      const from = Math.max(f.start, g.start), to = Math.min(fEnd, g.start + g.duration * 0.6);
      if (from > to) return false;
      const gb = g.box || (g.box = boxOf(g));
      if (fb.x1 < gb.x0 || gb.x1 < fb.x0 || fb.y1 < gb.y0 || gb.y1 < fb.y0) return false;
      for (let t = from; t <= to; t += SAMPLE_MS) {
        const a = pointAt(f, t), b = pointAt(g, t);
        if (Math.abs(a.x - b.x) < (f.w + g.w) / 2 + 2 && Math.abs(a.y - b.y) < ROW_PX - 1) return true;
      }
      return false;
    });
  }
  // Where a dropped token lies without motion: where it fell, or a row above or below it when
  // a label is there already.
  function fallPoint(p, w, arrive) {
    const near = [0, 1, -1, 2, -2].map(function (k) { return inside({ x: p.x, y: p.y + k * ROW_PX }, w); });
    return firstClear(near, w, arrive, Infinity) || p;
  }

  // The rest point: just off the receiver's box, `row` rows further (down under a broker, up
  // above the client), and every point kept inside the picture so no label is cut off.
  function rowPoint(p, to, row) {
    const box = KV.clusterNode && KV.clusterNode(to);
    if (!box) return p;
    const away = p.y >= box.y + box.h / 2 ? 1 : -1;
    return { x: p.x, y: p.y + away * (ROW_PX / 2 + 1 + row * ROW_PX) };   // just off the box, then row by row
  }
  function inside(p, w) {
    const W = KV.clusterWidth || 0;
    if (!W) return p;
    return { x: Math.max(w / 2 + 2, Math.min(W - w / 2 - 2, p.x)), y: p.y };
  }

  function tokenNode(tok) {
    const w = tokenWidth(tok);
    const g = el("g", { class: "flow-token " + tok.cls, "data-flow": tok.flow, "data-from": tok.from, "data-to": tok.to, "data-time": tok.t });
    g.append(el("rect", { x: -w / 2, y: -9, width: w, height: 18, rx: 9 }), el("text", { x: 0, y: 4, "text-anchor": "middle" }, tok.label));
    return g;
  }

  function play(frame) {
    const layer = $("cl-flow");
    if (!layer || !KV.clusterRoute) return;
    const reduced = KV.reducedMotion();
    boxesNow = null;
    const all = tokensOf(frame);
    const tokens = reduced ? newestOnly(all) : all;
    const now = performance.now();
    const step = ((frame.state || {}).run || {}).step;
    if (step !== undefined && step !== chain.step) {
      // ... and what rested without motion: a step that sends nothing shows no token.
      Array.prototype.slice.call(layer.children).forEach(function (n) { if (notStarted(n) || n.classList.contains("flow-still")) n.remove(); });
      // The old step's tokens still on their way finish, and the new step's first token does
      // not wait for them: it moves at once (click -> first token moving, issue 17).
      chain.fresh = true;
      held.all = (held.all || []).filter(function (h) { return h.leave !== Infinity; });
      chain.step = step;
      chain.next = now;
      chain.free = {};
    }
    if (!tokens.length) return;
    // Tokens still in flight finish (a step's frames can follow each other within 30 ms);
    // those resting without motion give way to the new ones; never more than LAYER_MAX.
    layer.querySelectorAll(".flow-still").forEach(function (n) { n.remove(); });
    held.all = (held.all || []).filter(function (h) { return h.leave !== Infinity; });
    while (layer.children.length > LAYER_MAX) layer.firstChild.remove();
    const base = Math.max(0, chain.next - now);
    // Rows held at each receiver, by wall-clock time, across frames (a step's frames can
    // follow each other within 30 ms, and their tokens rest together).
    held.all = held.all.filter(function (h) { return h.leave > now; });
    for (let i = flying.length - 1; i >= 0; i--) {
      const f = flying[i];
      if (!f.node.isConnected || f.start + f.duration <= now) flying.splice(i, 1);
    }
    const speed = Number(($("speed") || {}).value || 1);
    // Slots in virtual-time order: tokens of one virtual millisecond leave together, except
    // that a sender sends its own one after another (they would start on the same point).
    const sent = {};
    tokens.forEach(function (t) { const k = t.t + ">" + t.from; t.slotKey = t.t + ":" + (sent[k] = (sent[k] || 0) + 1); });
    const times = Array.from(new Set(tokens.map(function (t) { return t.slotKey; }))).sort(function (a, b) {
      const x = a.split(":"), y = b.split(":");
      return Number(x[0]) - Number(y[0]) || Number(x[1]) - Number(y[1]);
    });
    const slot = Math.min(SLOT_MS, MAX_SPAN_MS / Math.max(times.length, 1)) / speed;
    const flight = FLIGHT_MS / speed;
    tokens.forEach(function (tok) {
      const r0 = KV.clusterRoute(tok.from, tok.to);
      if (!r0) return;
      // Requests and answers keep to either side of their link, so a fetch and its answer
      // crossing each other stay readable.
      const dx = r0[2].x - r0[0].x, dy = r0[2].y - r0[0].y, len = Math.hypot(dx, dy) || 1;
      // A busy link has a second lane each way, further out (LANE_PX), for a token that would
      // otherwise wait for the one ahead of it.
      const sign = (tok.cls.indexOf("flow-answer") >= 0 ? 1 : -1) * (tok.from < tok.to ? 1 : -1);
      const laneRoute = function (lane) {
        const side = sign * (10 + lane * LANE_PX);
        return r0.map(function (q) { return { x: q.x - dy / len * side, y: q.y + dx / len * side }; });
      };
      const r = laneRoute(0);
      const node = tokenNode(tok), w = tokenWidth(tok);
      const fin = function (p) { return inside(p, w); };
      let end = at(r, tok.drop === undefined ? 1 : tok.drop);
      layer.append(node);
      // At rest a token leaves its side of the link for a row of the receiver's queue.
      if (reduced) {
        // No motion: the token is at its receiver (or where it fell) until the next frame.
        end = tok.drop === undefined ? restPoint(tok, r0[2], w, now, Infinity) : fallPoint(fin(end), w, now);
        if (!end) { node.remove(); return; }        // no free row: the timeline still lists it
        node.style.transform = tr(fin(end));
        node.classList.add("flow-still");
        return;
      }
      const total = flight / 0.6;     // the flight is the first 60 %; then it rests (or falls) and fades
      const full = total + (tok.drop !== undefined ? 0 : REST_MS / speed);
      // A sender's next token leaves once the one before it is a label's width away (0.45 of
      // the duration covers 0.75 of the way), so two tokens on one link never overlap.
      const free = chain.free || (chain.free = {});
      const first = Math.max(base + times.indexOf(tok.slotKey) * slot, (free[tok.from] || 0) - now);
      const OFFS = [0, 0.15, 0.3, 0.45, 0.6, 1];
      const alongOf = function (rl) { return [0, 0.25, 0.5, 0.75].map(function (f) { return fin(at(rl, f * (tok.drop === undefined ? 1 : tok.drop))); }); };
      const lanes = [alongOf(r), alongOf(laneRoute(1))];
      // Its path if it leaves after `delay` on `lane`: to its rest row (or where it falls), then it fades.
      const plan = function (delay, peek, lane) {
        const along = lanes[lane || 0];
        let duration = full, fades = false, stop = tok.drop === undefined ? end : at(lane ? laneRoute(lane) : r, tok.drop);
        if (tok.drop === undefined) {
          const rest = restPoint(tok, r0[2], w, now + delay + 0.45 * duration, now + delay + duration, peek);
          if (rest) stop = rest;
          else { duration = total; fades = true; }   // no free row: it fades out as it arrives
        }
        const pts = along.concat([fin(stop), fin(tok.drop !== undefined ? { x: stop.x, y: stop.y + 46 } : stop)]);
        return { start: now + delay, duration: duration, fades: fades, stop: stop, w: w, node: node, along: along,
          keys: pts.map(function (p, i) { return { o: OFFS[i], p: p }; }) };
      };
      // It takes the inner lane, or the outer one, whichever lets its label cover no other
      // token's on the way; else it waits (a tenth of a second at a time, MAX_WAITS at most,
      // then it goes all the same).
      let delay = first, lane = 0, path = plan(delay, true, 0);
      const waits = chain.fresh ? 0 : MAX_WAITS;
      chain.fresh = false;
      for (let i = 0; i < waits && crosses(path); i++) {
        const outer = plan(delay, true, 1);
        if (!crosses(outer)) { lane = 1; path = outer; break; }
        delay += WAIT_STEP_MS / speed;
        path = plan(delay, true, 0);
      }
      path = plan(delay, false, lane);
      flying.push(path);
      const along = path.along;
      const duration = path.duration, fades = path.fades;
      end = path.stop;
      const away = (w + 12) / (0.75 * (Math.hypot(r0[2].x - r0[0].x, r0[2].y - r0[0].y) || 1)) * 0.45 * duration;
      free[tok.from] = Math.max(free[tok.from] || 0, now + delay + Math.min(away, 0.6 * duration));
      chain.next = Math.max(chain.next, now + delay + slot);
      const frames = along.map(function (p) { return { transform: tr(p), opacity: 1 }; });
      frames.push({ transform: tr(fin(end)), opacity: fades ? 0 : 1 });
      if (tok.drop !== undefined) frames.push({ transform: tr(fin({ x: end.x, y: end.y + 46 })), opacity: 0 });
      else frames.push({ transform: tr(fin(end)), opacity: 0 });
      OFFS.forEach(function (o, i) { frames[i].offset = o; });
      node.style.transform = tr(fin(r[0]));
      node.style.opacity = "0";
      // "forwards", not "both": a token waiting for its slot stays unseen (opacity 0) rather
      // than sitting on its sender's box over the ones leaving before it.
      const anim = node.animate(frames, { duration: duration, delay: delay, easing: "linear", fill: "forwards" });
      anim.onfinish = function () { node.remove(); };
    });
  }

  KV.register("flow", {
    update: function (_node, frame) {
      if (frame.snapshot || frame.reset) {
        const layer = $("cl-flow");
        if (layer) layer.replaceChildren();
        held.all = [];
        flying.length = 0;
        chain.step = undefined;
        chain.next = 0;
        chain.free = {};
        return;
      }
      play(frame);
    },
  });
})();
