// rxvoice serve: the microphone to the server, the bot's voice back, and what the server decided, drawn live.
"use strict";

const RATE = 16000;
const WINDOW = 12; // seconds shown on the timeline
const $ = (id) => document.getElementById(id);

const state = {
  ws: null, ctx: null, stream: null, node: null,
  t: 0,                 // seconds of audio sent (the timeline's clock, shared with the server)
  audio: [],            // {t, level, vad}
  speech: [],           // [start, end|null]
  bot: [],              // [start, end|null]
  verdicts: [],         // {t, p, complete}
  turns: [],            // {t, kind: "start"|"end", reason}
  chunks: [],           // Int16Array chunks sent (the session's recording)
  segments: [],         // {text, start, end, turn_end}
  playhead: 0, sources: new Set(), paused: null,
  counts: { turnEnds: 0, botTurns: 0, botSpoke: 0, verdicts: 0, finals: 0, errors: 0 },
};
window.rxvoice = state; // for people poking around (and the browser test)

function log(text, cls) {
  const li = document.createElement("li");
  li.textContent = `${state.t.toFixed(2)} s  ${text}`;
  if (cls) li.className = cls;
  $("log").appendChild(li);
  $("log").scrollTop = $("log").scrollHeight;
}

// -- the connection --------------------------------------------------------------------------------

async function start() {
  $("start").disabled = true;
  $("status").textContent = "asking for the microphone…";
  if (!window.isSecureContext || !navigator.mediaDevices) {
    // Browsers give the microphone only to https pages and to localhost.
    $("status").textContent = "no microphone: this page is not a secure context (open it over https: " +
      "rxvoice serve --self-signed or --tls CERT KEY, or on localhost through an SSH tunnel)";
    $("start").disabled = false;
    return;
  }
  try {
    state.stream = await navigator.mediaDevices.getUserMedia({
      audio: { channelCount: 1, echoCancellation: true, noiseSuppression: true, autoGainControl: true },
    });
  } catch (err) {
    $("status").textContent = `no microphone: ${err.name}`;
    $("start").disabled = false;
    return;
  }
  state.ctx = new AudioContext();
  await state.ctx.audioWorklet.addModule("/static/mic-worklet.js");
  const token = new URLSearchParams(location.search).get("token");
  const url = `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/ws` +
    (token ? `?token=${encodeURIComponent(token)}` : "");
  const ws = new WebSocket(url);
  ws.binaryType = "arraybuffer";
  state.ws = ws;
  ws.onopen = () => {
    ws.send(JSON.stringify({ type: "start", sample_rate: RATE }));
    const source = state.ctx.createMediaStreamSource(state.stream);
    state.node = new AudioWorkletNode(state.ctx, "rxvoice-mic");
    state.node.port.onmessage = (e) => {
      const pcm = new Int16Array(e.data.pcm);
      if (ws.readyState === WebSocket.OPEN) ws.send(pcm.buffer);
      state.chunks.push(pcm);
      state.t += pcm.length / RATE;
    };
    source.connect(state.node);
    $("status").textContent = "listening: speak";
    $("stop").disabled = false;
    $("download").disabled = false;
    requestAnimationFrame(draw);
  };
  ws.onmessage = (e) => (typeof e.data === "string" ? onEvent(JSON.parse(e.data)) : play(e.data));
  ws.onclose = (e) => {
    if (e.code === 1013) {
      $("status").textContent = `server full: ${e.reason.replace(/^server full: /, "")}`;
      log(`server full: ${e.reason}`);
    } else {
      $("status").textContent = e.code === 1000 || e.code === 1005 ? "disconnected" : `disconnected (${e.code} ${e.reason})`;
    }
    $("start").disabled = false;
    $("stop").disabled = true;
  };
}

function stop() {
  if (state.ws) state.ws.close(1000);
  if (state.node) state.node.disconnect();
  if (state.stream) state.stream.getTracks().forEach((tr) => tr.stop());
}

// -- what the server says -----------------------------------------------------------------------------

function onEvent(ev) {
  switch (ev.type) {
    case "hello": {
      const s = ev.setup;
      $("setup").textContent = `stt ${s.stt} · tts ${s.tts} · stop ${s.stop} · model ${s.llm} · VAD stop ${s.vad_stop_secs} s`;
      break;
    }
    case "audio": state.audio.push({ t: ev.t, level: ev.level, vad: ev.vad }); break;
    case "vad":
      if (ev.speaking) state.speech.push([ev.at, null]);
      else if (state.speech.length) state.speech[state.speech.length - 1][1] = ev.at;
      break;
    case "interim": $("interim").textContent = ev.text; break;
    case "final":
      state.counts.finals++;
      $("interim").textContent = `“${ev.text}”`;
      {
        const prev = state.segments[state.segments.length - 1];
        const start = prev ? Math.max(ev.start, prev.end) : ev.start;
        state.segments.push({ text: ev.text, start, end: Math.max(start, ev.end), turn_end: false });
      }
      break;
    case "verdict":
      state.counts.verdicts++;
      state.verdicts.push({ t: ev.t, p: ev.probability, complete: ev.complete });
      log(`Smart Turn: ${ev.complete ? "complete" : "incomplete"}, p=${ev.probability.toFixed(2)} (${ev.ms.toFixed(0)} ms)`, "verdict");
      break;
    case "turn_start":
      state.turns.push({ t: ev.t, kind: "start" });
      log(`turn ${ev.index} started`, "turn-start");
      break;
    case "turn_end": {
      state.counts.turnEnds++;
      state.turns.push({ t: ev.t, kind: "end", reason: ev.reason });
      const after = ev.latency == null ? "" : ` ${ev.latency.toFixed(2)} s after speech stopped`;
      const reopens = ev.recovered_from == null ? "" : ` (reopens turn ${ev.recovered_from}: you went on before the bot spoke)`;
      log(`turn ${ev.index} ended${after}: ${ev.reason}${reopens} — “${ev.text}”`, "turn-end");
      const last = state.segments[state.segments.length - 1];
      if (last) last.turn_end = true;
      $("botwords").textContent = "";
      break;
    }
    case "bot":
      if (ev.speaking) { state.bot.push([ev.t, null]); state.counts.botSpoke++; }
      else if (state.bot.length) state.bot[state.bot.length - 1][1] = ev.t;
      break;
    case "bot_word": $("botwords").textContent += (($("botwords").textContent ? " " : "") + ev.text); break;
    case "bot_turn":
      state.counts.botTurns++;
      log(`bot ${ev.interrupted ? "was interrupted after" : "said"}: “${ev.text}”`);
      break;
    case "interrupted": {
      const last = state.bot[state.bot.length - 1];
      if (last && last[1] === null) log("barge-in: the bot stops");
      break;
    }
    case "interrupt": stopPlayback(); break;
    case "pause": pausePlayback(); break;
    case "resume": resumePlayback(); break;
    case "context": showConversation(ev.messages); break;
    case "fallback":
      state.counts.fallbacks = (state.counts.fallbacks || 0) + 1;
      log(`${ev.question === "turn" ? "Smart Turn" : "speech-to-text"} on ${ev.backend}: ${ev.reason}; decided without it`, "verdict");
      break;
    case "error":
      state.counts.errors++;
      log(`server: ${ev.message}`);
      break;
    default: break;
  }
}

function showConversation(messages) {
  const box = $("conversation");
  box.replaceChildren();
  for (const m of messages) {
    if (m.role === "system") continue;
    const div = document.createElement("div");
    div.className = `msg ${m.role}`;
    const role = document.createElement("div");
    role.className = "role";
    role.textContent = m.role;
    div.append(role, document.createTextNode(m.content));
    box.appendChild(div);
  }
  box.scrollTop = box.scrollHeight;
}

// -- the bot's voice ------------------------------------------------------------------------------------

function play(buffer) {
  const ctx = state.ctx;
  if (!ctx || buffer.byteLength <= 4) return;
  const rate = new DataView(buffer).getUint32(0, true);
  const pcm = new Int16Array(buffer, 4);
  const audio = ctx.createBuffer(1, pcm.length, rate);
  const out = audio.getChannelData(0);
  for (let i = 0; i < pcm.length; i++) out[i] = pcm[i] / 32768;
  if (state.paused) { state.paused.push({ audio, offset: 0 }); return; }  // held until the resume
  schedule(audio, 0);
}

function schedule(audio, offset) {
  const ctx = state.ctx;
  const src = ctx.createBufferSource();
  src.buffer = audio;
  src.connect(ctx.destination);
  const at = Math.max(ctx.currentTime + 0.02, state.playhead);
  src.start(at, offset);
  state.playhead = at + audio.duration - offset;
  const item = { src, audio, at, offset };
  state.sources.add(item);
  src.onended = () => state.sources.delete(item);
}

function stopPlayback() {
  for (const { src } of state.sources) { try { src.stop(); } catch (_) { /* already stopped */ } }
  state.sources.clear();
  state.playhead = 0;
  state.paused = null;
}

// The user began to speak over the bot: silence it now, keeping what is left (the server resumes or interrupts).
function pausePlayback() {
  if (!state.ctx || state.paused) return;
  const now = state.ctx.currentTime;
  const left = [...state.sources].sort((a, b) => a.at - b.at)
    .filter(({ at, audio, offset }) => at + audio.duration - offset > now)
    .map(({ at, audio, offset }) => ({ audio, offset: offset + Math.max(0, now - at) }));
  stopPlayback();
  state.paused = left;
  log("the bot pauses (is it a backchannel?)");
}

function resumePlayback() {
  const left = state.paused;
  if (!left) return;
  state.paused = null;
  for (const { audio, offset } of left) schedule(audio, offset);
  log("the bot goes on");
}

// -- drawing ----------------------------------------------------------------------------------------------

function draw() {
  const c = $("timeline");
  const g = c.getContext("2d");
  const W = c.width, H = c.height, top = 16, band = H - 40;
  const t1 = Math.max(WINDOW, state.t), t0 = t1 - WINDOW;
  const x = (t) => ((t - t0) / WINDOW) * W;
  const y = (v) => top + band * (1 - v);
  g.clearRect(0, 0, W, H);
  g.fillStyle = "#fafbff";
  g.fillRect(0, top, W, band);
  const spans = (list, color, end) => {
    g.fillStyle = color;
    for (const [a, b] of list) if ((b ?? end) >= t0) g.fillRect(x(a), top, x(b ?? end) - x(a), band);
  };
  spans(state.speech, "#cfe0ff", state.t);
  spans(state.bot, "rgba(170,130,230,.3)", state.t);
  g.fillStyle = "#b8bfd6";
  for (const a of state.audio) if (a.t >= t0) { const h = Math.min(1, a.level * 6) * band * 0.8; g.fillRect(x(a.t) - 2, top + band - h, 3, h); }
  g.strokeStyle = "#2f6fde"; g.lineWidth = 2; g.beginPath();
  let first = true;
  for (const a of state.audio) if (a.t >= t0) { if (first) { g.moveTo(x(a.t), y(a.vad)); first = false; } else g.lineTo(x(a.t), y(a.vad)); }
  g.stroke();
  g.strokeStyle = "#d0d4e4"; g.lineWidth = 1; g.setLineDash([4, 4]);
  g.beginPath(); g.moveTo(0, y(0.5)); g.lineTo(W, y(0.5)); g.stroke(); g.setLineDash([]);
  g.font = "12px system-ui, sans-serif";
  for (const tr of state.turns) {
    if (tr.t < t0) continue;
    g.strokeStyle = tr.kind === "start" ? "#1a7f37" : "#b3261e"; g.lineWidth = 2;
    g.beginPath(); g.moveTo(x(tr.t), top); g.lineTo(x(tr.t), top + band); g.stroke();
    if (tr.kind === "end") { g.fillStyle = "#b3261e"; g.fillText("turn end", x(tr.t) + 3, top + band + 14); }
  }
  for (const v of state.verdicts) {
    if (v.t < t0) continue;
    g.fillStyle = v.complete ? "#1a7f37" : "#e0a800";
    g.beginPath(); g.arc(x(v.t), y(v.p), 6, 0, 2 * Math.PI); g.fill();
    g.fillStyle = "#1d2230";
    g.fillText(`p=${v.p.toFixed(2)}`, x(v.t) + 8, Math.max(top + 12, y(v.p) - 6));
  }
  g.fillStyle = "#5b6280";
  for (let s = Math.ceil(t0); s <= t1; s += 2) g.fillText(`${s}s`, x(s) + 2, 12);
  if (state.ws && state.ws.readyState <= WebSocket.OPEN) requestAnimationFrame(draw);
}

// -- download this session ----------------------------------------------------------------------------------

function wavBlob(chunks) {
  const n = chunks.reduce((a, c) => a + c.length, 0);
  const buf = new ArrayBuffer(44 + 2 * n);
  const v = new DataView(buf);
  const str = (o, s) => { for (let i = 0; i < s.length; i++) v.setUint8(o + i, s.charCodeAt(i)); };
  str(0, "RIFF"); v.setUint32(4, 36 + 2 * n, true); str(8, "WAVE"); str(12, "fmt ");
  v.setUint32(16, 16, true); v.setUint16(20, 1, true); v.setUint16(22, 1, true);
  v.setUint32(24, RATE, true); v.setUint32(28, 2 * RATE, true); v.setUint16(32, 2, true); v.setUint16(34, 16, true);
  str(36, "data"); v.setUint32(40, 2 * n, true);
  let o = 44;
  for (const c of chunks) { new Int16Array(buf, o, c.length).set(c); o += 2 * c.length; }
  return new Blob([buf], { type: "audio/wav" });
}

function save(blob, name) {
  const a = document.createElement("a");
  a.href = URL.createObjectURL(blob);
  a.download = name;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 10000);
}

function download() {
  const samples = state.chunks.reduce((a, c) => a + c.length, 0);
  const transcript = { sample_rate: RATE, duration: +(samples / RATE).toFixed(3), segments: state.segments };
  save(wavBlob(state.chunks), "rxvoice-session.wav");
  save(new Blob([JSON.stringify(transcript, null, 2)], { type: "application/json" }), "rxvoice-session.transcript.json");
  log("saved rxvoice-session.wav and rxvoice-session.transcript.json: `rxvoice turns rxvoice-session.wav` replays them");
}

$("start").onclick = start;
$("stop").onclick = stop;
$("download").onclick = download;
