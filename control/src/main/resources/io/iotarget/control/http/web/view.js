/*
 * The web view: polls the endpoint and draws what it reads. Everything is a GET the session
 * cookie admits (WebView.java):
 *   /metrics every second      rates (metrics.js), info metrics for exports and namespaces
 *   /v1/list, /v1/read         every 5 s: the group tree, each group's io.max, io.max.per_host (what
 *                              the children made for hosts under cgroup_per_host start with),
 *                              io.weight, io.latency, io.min, io.max.burst.stat, iotarget.host (a
 *                              host's group under cgroup_per_host, and whether it is automatic)
 *   /v1/devices                every 5 s: names, sizes and types of the devices
 * Charts keep the last WINDOW_S seconds, one line per leaf group (a parent's counters are the sum
 * of its children's, so its line would only repeat them; the table shows every level).
 * Charts are drawn on canvases by drawChart below; no library.
 */
"use strict";

(() => {
  const POLL_MS = 1000, TREE_MS = 5000, WINDOW_S = 120;
  const COLORS = ["#2f6fde", "#e0583a", "#1f9d6b", "#9b51c9", "#d99a0b", "#0f9fb4", "#d24c8f", "#5c6f2b", "#7b5c3c", "#56657f"];
  const M = IotargetMetrics;

  let previous = null;                  // the last scrape
  let rates = null;                     // IotargetMetrics.rates of the last two scrapes
  let metrics = new Map();              // the last scrape's metrics
  let tree = [];                        // [{group, depth, files: {io.max, io.max.per_host, io.weight, io.latency, io.min, io.max.burst.stat, iotarget.host}}], parents first
  let devices = [];                     // [{name, number, size, type}]
  const history = new Map();            // group -> [{t, iops, bps, latencyAvg, latencyP99, throttled}]
  const colors = new Map();
  let updates = 0;

  const $ = id => document.getElementById(id);

  async function get(url) {
    const reply = await fetch(url, { credentials: "same-origin", cache: "no-store" });
    if (reply.status === 401) throw new Error("logged out: run bin/iotarget web for a new login");
    if (!reply.ok) throw Object.assign(new Error(url + ": " + reply.status + " " + (await reply.text()).trim()), { status: reply.status });
    return reply.text();
  }

  /** get, or null when the file or group is gone (removed between a list and a read). */
  async function getIfThere(url) {
    try {
      return await get(url);
    } catch (e) {
      if (e.status === 404) return null;
      throw e;
    }
  }

  /** Runs f unless its previous run is still going (a slow endpoint must not pile requests up). */
  function single(f) {
    let running = false;
    return async () => {
      if (running) return;
      running = true;
      try {
        await f();
      } finally {
        running = false;
      }
    };
  }

  async function poll() {
    try {
      const now = M.sample(await get("/metrics"), Date.now());
      metrics = now.metrics;
      if (previous) {
        rates = M.rates(previous, now);
        remember(now.timeMs, rates);
      }
      previous = now;
      updates++;
      document.body.dataset.updates = String(updates);
      status("updated " + new Date(now.timeMs).toLocaleTimeString() + " · every " + POLL_MS / 1000 + " s", false);
      render();
    } catch (e) {
      status(e.message, true);
    }
  }

  function status(text, error) {
    const s = $("status");
    s.textContent = text;
    s.classList.toggle("error", error);
  }

  function remember(t, r) {
    for (const [group, v] of r.groups) {
      if (!history.has(group)) history.set(group, []);
      const h = history.get(group);
      h.push({ t, iops: v.iops.total, bps: v.bps.total, latencyAvg: v.latencyAvg, latencyP99: v.latencyP99,
               throttled: v.throttled ? v.throttled.total : null });
      while (h.length > 0 && h[0].t < t - WINDOW_S * 1000) h.shift();
    }
  }

  /** The group tree, walked with list; a group's path as /metrics names it (/, /tenants/a). */
  async function refreshTree() {
    try {
      const groups = [];
      await walk("", 0, groups);
      tree = groups;
      devices = (await get("/v1/devices")).trim().split("\n").slice(1).filter(l => l.trim()).map(l => {
        const f = l.trim().split(/\s+/);
        return { name: f[0], number: f[1], size: Number(f[2]), type: f[3] };
      });
      render();
    } catch (e) {
      status(e.message, true);
    }
  }

  async function walk(path, depth, out) {
    const listing = await getIfThere("/v1/list?path=" + encodeURIComponent(path));
    if (listing === null) return;
    const entries = listing.split("\n").filter(e => e);
    const node = { group: "/" + path, depth, files: {} };
    out.push(node);
    for (const file of ["io.max", "io.max.per_host", "io.weight", "io.latency", "io.min", "io.max.burst.stat", "iotarget.host"]) {
      const text = entries.includes(file) ? await getIfThere("/v1/read?path=" + encodeURIComponent(join(path, file))) : null;
      if (text !== null) node.files[file] = text.trim();
    }
    for (const e of entries.filter(e => e.endsWith("/")).sort()) await walk(join(path, e.slice(0, -1)), depth + 1, out);
  }

  const join = (a, b) => a === "" ? b : a + "/" + b;

  /** Groups with no child group (in the tree or in the metrics, whichever came first), or the root alone. */
  function leaves() {
    const all = [...new Set([...tree.map(n => n.group), ...(rates ? rates.groups.keys() : [])])].sort();
    if (all.length === 0) return [];
    const parents = new Set(all.map(g => g.slice(0, g.lastIndexOf("/")) || "/"));
    const l = all.filter(g => g !== "/" && !parents.has(g));
    return l.length ? l : ["/"];
  }

  function color(group) {
    if (!colors.has(group)) colors.set(group, COLORS[colors.size % COLORS.length]);
    return colors.get(group);
  }

  function render() {
    const charted = leaves();
    const series = (field, dash) => charted.map(g => ({
      label: g, color: color(g), dash, points: (history.get(g) || []).map(p => ({ t: p.t, v: p[field] })) }));
    const now = Date.now();
    drawChart($("chart-iops"), series("iops"), { now, format: count, noData: "waiting for two scrapes" });
    drawChart($("chart-bps"), series("bps"), { now, format: bytes, unit: "/s", noData: "waiting for two scrapes" });
    drawChart($("chart-latency"), rates && rates.hasLatency ? [...series("latencyAvg"), ...series("latencyP99", true)] : [],
      { now, format: seconds, noData: rates ? "no data: the server exports no iotarget_io_latency_seconds" : "waiting for two scrapes" });
    drawChart($("chart-throttled"), rates && rates.hasThrottled ? series("throttled") : [],
      { now, format: v => fixed(v) + " s/s", noData: rates ? "no data: the server exports no iotarget_io_throttled_seconds_total" : "waiting for two scrapes" });
    legend(charted);
    groupTable(new Set(charted));
    deviceTable();
  }

  function legend(charted) {
    const ul = $("legend");
    ul.replaceChildren(...charted.map(g => {
      const li = document.createElement("li");
      const swatch = document.createElement("i");
      swatch.style.background = color(g);
      li.append(swatch, g);
      return li;
    }));
  }

  function groupTable(charted) {
    const body = $("groups").tBodies[0];
    const rows = tree.length ? tree : [...(rates ? rates.groups.keys() : [])].sort().map(g => ({ group: g, depth: 0, files: {} }));
    body.replaceChildren(...rows.map(node => {
      const v = rates && rates.groups.get(node.group);
      const tr = document.createElement("tr");
      tr.dataset.group = node.group;
      tr.dataset.iops = v ? String(Math.round(v.iops.total)) : "";
      const name = cell(tr, "", "name");
      name.style.paddingLeft = (10 + 18 * node.depth) + "px";
      if (charted.has(node.group)) {
        const swatch = document.createElement("i");
        swatch.style.background = color(node.group);
        name.append(swatch);
      }
      name.append(node.group === "/" ? "/ (root)" : node.group.slice(node.group.lastIndexOf("/") + 1));
      name.title = node.group;
      if (node.files["iotarget.host"] !== undefined) hostMark(tr, name, node.files["iotarget.host"]);
      const spark = document.createElement("canvas");
      spark.className = "spark";
      cell(tr, "", "").append(spark);
      cell(tr, v ? count(v.iops.read) : "—", "num iops-read");
      cell(tr, v ? count(v.iops.write) : "—", "num iops-write");
      cell(tr, v ? bytes(v.bps.read) : "—", "num");
      cell(tr, v ? bytes(v.bps.write) : "—", "num");
      cell(tr, v && v.latencyAvg !== null ? seconds(v.latencyAvg) : "—", "num");
      cell(tr, v && v.latencyP99 !== null ? seconds(v.latencyP99) : "—", "num");
      cell(tr, v && v.throttled ? fixed(v.throttled.total) + " s/s" : "—", "num");
      cell(tr, ioMax(node.files["io.max"]), "limits");
      cell(tr, ioMax(node.files["io.max.per_host"]), "limits");
      cell(tr, node.files["io.weight"] ?? "", "limits");
      cell(tr, node.files["io.latency"] ?? "", "limits");
      cell(tr, ioMin(node.files["io.min"], node.group), "limits");
      cell(tr, burstCredit(node.files["io.max.burst.stat"]), "limits");
      for (const td of tr.cells) if (td.textContent === "—" || td.textContent === "") td.classList.add("none");
      queueMicrotask(() => drawSpark(spark, history.get(node.group) || [], charted.has(node.group) ? color(node.group) : "#8a93a5"));
      return tr;
    }));
  }

  /**
   * A host's group under cgroup_per_host (iotarget.host): "host · auto" while a connect made it
   * and nobody used it (saves leave it out; removed once idle when too many such are), "host"
   * once it is an ordinary group.
   */
  function hostMark(tr, name, text) {
    const automatic = /^automatic 1$/m.test(text);
    tr.dataset.host = automatic ? "auto" : "kept";
    const mark = document.createElement("span");
    mark.className = "host";
    mark.textContent = automatic ? "host · auto" : "host";
    mark.title = automatic ? "a host's group, made by its connect (cgroup_per_host): not saved, removed once idle if more than 256 such are"
                           : "a host's group (cgroup_per_host), used by the operator: saved, removed only by rmdir";
    name.append(mark);
  }

  /** io.max without its "max" entries; bandwidth limits in binary units. */
  function ioMax(text) {
    if (text === undefined) return "";
    return text.split("\n").map(line => {
      const [device, ...limits] = line.trim().split(/\s+/);
      const set = limits.filter(l => !l.endsWith("=max")).map(l => {
        const [k, n] = l.split("=");
        return k.endsWith("bps") ? k + "=" + bytes(Number(n)) : l;
      });
      return set.length ? device + " " + set.join(" ") : "";
    }).filter(l => l).join("\n");
  }

  /**
   * io.min without its 0 entries, bandwidth in binary units, and whether it is met now
   * (iotarget_io_min_granted_ratio: "met", or the share given while minimums overcommit the device).
   */
  function ioMin(text, group) {
    if (text === undefined) return "";
    const granted = new Map((metrics.get("iotarget_io_min_granted_ratio") || [])
      .filter(s => s.labels.group === group).map(s => [s.labels.device, s.value]));
    return text.split("\n").map(line => {
      const [device, ...minimums] = line.trim().split(/\s+/);
      const set = minimums.filter(m => !m.endsWith("=0")).map(m => {
        const [k, n] = m.split("=");
        return k.endsWith("bps") ? k + "=" + bytes(Number(n)) : m;
      });
      if (!set.length) return "";
      const g = granted.get(device);
      return device + " " + set.join(" ") + (g === undefined ? "" : g >= 1 ? " · met" : " · " + Math.floor(g * 100) + "%");
    }).filter(l => l).join("\n");
  }

  /** io.max.burst.stat's credit left per limit as a percentage of a full credit: "259:0 riops 80%". */
  function burstCredit(text) {
    if (!text) return "";
    return text.split("\n").map(line => {
      const [device, ...credits] = line.trim().split(/\s+/);
      return device + " " + credits.map(c => {
        const [k, v] = c.split("=");
        const [left, full] = v.split("/").map(Number);
        return k + " " + Math.round(100 * left / full) + "%";
      }).join(" ");
    }).join("\n");
  }

  function deviceTable() {
    const exports = M.info(metrics, "iotarget_export_info").map(l => ({ device: l.device, text: "nbd " + l.export + " → " + l.group }));
    const namespaces = M.info(metrics, "iotarget_nvmet_namespace_info").map(l => ({
      device: l.device, text: "nvme " + l.subsystem + " ns " + l.nsid + " → " + l.group }));
    const known = devices.length ? devices : M.info(metrics, "iotarget_device_info").map(l => ({ name: l.name, number: l.device, type: l.type }));
    const body = $("devices").tBodies[0];
    body.replaceChildren(...known.map(d => {
      const v = rates && rates.pairs.get("/\u0000" + d.number);
      const tr = document.createElement("tr");
      tr.dataset.device = d.number;
      cell(tr, d.number, "name");
      cell(tr, d.name, "");
      cell(tr, d.type ?? "", "");
      cell(tr, d.size !== undefined ? bytes(d.size) : "", "num");
      cell(tr, v ? count(v.iops.total) : "—", "num");
      cell(tr, v ? bytes(v.bps.total) : "—", "num");
      const users = [...exports, ...namespaces].filter(u => u.device === d.number).map(u => u.text);
      cell(tr, users.length ? users.join("\n") : "none", users.length ? "limits" : "none");
      return tr;
    }));
  }

  function cell(tr, text, cls) {
    const td = document.createElement("td");
    td.className = cls;
    td.textContent = text;
    tr.append(td);
    return td;
  }

  // ---- formats ----
  function count(v) {
    if (v >= 1e6) return (v / 1e6).toFixed(1) + "M";
    if (v >= 1e4) return (v / 1e3).toFixed(1) + "k";
    if (v < 10 && v % 1 !== 0) return v.toFixed(v < 1 ? 2 : 1);
    return String(Math.round(v));
  }

  function bytes(v) {
    const units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let i = 0;
    while (v >= 1024 && i < units.length - 1) {
      v /= 1024;
      i++;
    }
    return (i === 0 ? String(Math.round(v)) : v.toFixed(v < 10 ? 1 : 0)) + " " + units[i];
  }

  function seconds(v) {
    if (v >= 1) return v.toFixed(2) + " s";
    if (v >= 1e-3) return (v * 1e3).toFixed(v < 1e-2 ? 2 : 1) + " ms";
    return Math.round(v * 1e6) + " µs";
  }

  function fixed(v) {
    return v.toFixed(v < 10 ? 2 : 1);
  }

  // ---- charts ----
  /** A canvas at the device's pixel ratio, sized to its CSS box; its 2D context in CSS pixels. */
  function context(canvas) {
    const ratio = window.devicePixelRatio || 1;
    const w = canvas.clientWidth, h = canvas.clientHeight;
    if (canvas.width !== Math.round(w * ratio) || canvas.height !== Math.round(h * ratio)) {
      canvas.width = Math.round(w * ratio);
      canvas.height = Math.round(h * ratio);
    }
    const c = canvas.getContext("2d");
    c.setTransform(ratio, 0, 0, ratio, 0, 0);
    c.clearRect(0, 0, w, h);
    return { c, w, h };
  }

  /**
   * The y axis for values up to v: a round step (1, 2, 2.5 or 5 times a power of ten, times a
   * power of 1024 for bytes) that divides it into at most four parts, and the top, a whole
   * number of steps at or above v.
   */
  function axis(v, binary) {
    if (!(v > 0)) return { step: 0.25, top: 1 };
    const unit = binary && v >= 1024 ? 1024 ** Math.floor(Math.log(v) / Math.log(1024)) : 1;
    const rough = v / unit / 4, power = 10 ** Math.floor(Math.log10(rough));
    const step = unit * power * [1, 2, 2.5, 5, 10].find(m => m * power >= rough);
    return { step, top: step * Math.ceil(v / step - 1e-9) };
  }

  /**
   * Lines of [{color, dash, points: [{t, v}]}] over the last WINDOW_S seconds up to `now`;
   * a null v breaks its line. Four grid lines labelled by `format`; "no data" when nothing is set.
   */
  function drawChart(canvas, series, { now, format, noData }) {
    const { c, w, h } = context(canvas);
    const left = 64, right = 10, top = 8, bottom = 20;
    const plotW = w - left - right, plotH = h - top - bottom;
    const t0 = now - WINDOW_S * 1000;
    const values = series.flatMap(s => s.points.filter(p => p.t >= t0 && p.v !== null).map(p => p.v));
    c.font = "11px system-ui, sans-serif";
    c.strokeStyle = "#e3e6ec";
    c.fillStyle = "#6b7385";
    c.lineWidth = 1;
    c.strokeRect(left + 0.5, top + 0.5, plotW, plotH);
    c.textAlign = "center";
    c.textBaseline = "top";
    for (const s of [120, 90, 60, 30, 0]) {
      const x = left + plotW * (1 - s / WINDOW_S);
      c.fillText(s === 0 ? "now" : "−" + s + " s", Math.min(Math.max(x, left + 12), w - right - 12), top + plotH + 5);
    }
    if (values.length === 0) {
      c.textBaseline = "middle";
      c.font = "13px system-ui, sans-serif";
      c.fillText(noData || "no data", left + plotW / 2, top + plotH / 2);
      return;
    }
    const { step, top: max } = axis(Math.max(...values), format === bytes);
    c.textAlign = "right";
    c.textBaseline = "middle";
    for (let i = 0; i * step <= max * (1 + 1e-9); i++) {
      const y = Math.round(top + plotH * (1 - i * step / max)) + 0.5;
      if (i > 0 && i * step < max) {
        c.beginPath();
        c.moveTo(left, y);
        c.lineTo(left + plotW, y);
        c.stroke();
      }
      c.fillText(format(i * step), left - 6, y);
    }
    c.save();
    c.beginPath();
    c.rect(left, top, plotW, plotH);
    c.clip();
    for (const s of series) {
      c.strokeStyle = s.color;
      c.lineWidth = 2;
      c.lineJoin = "round";
      c.setLineDash(s.dash ? [5, 4] : []);
      c.beginPath();
      let drawing = false;
      for (const p of s.points) {
        if (p.v === null) {
          drawing = false;
          continue;
        }
        const x = left + plotW * (p.t - t0) / (WINDOW_S * 1000);
        const y = top + plotH * (1 - p.v / max);
        if (drawing) c.lineTo(x, y);
        else c.moveTo(x, y);
        drawing = true;
      }
      c.stroke();
    }
    c.restore();
  }

  /** The last minute of a group's IOPS as a small area, its own peak at three quarters of the height. */
  function drawSpark(canvas, points, stroke) {
    const { c, w, h } = context(canvas);
    const recent = points.slice(-60);
    if (recent.length < 2) return;
    const max = Math.max(1, ...recent.map(p => p.iops)) / 0.75;
    const x = i => w - w * (recent.length - 1 - i) / 59;
    c.beginPath();
    recent.forEach((p, i) => {
      const y = h - 1 - (h - 2) * p.iops / max;
      if (i === 0) c.moveTo(x(i), y);
      else c.lineTo(x(i), y);
    });
    c.strokeStyle = stroke;
    c.lineWidth = 1.5;
    c.stroke();
    c.lineTo(x(recent.length - 1), h);
    c.lineTo(x(0), h);
    c.closePath();
    c.globalAlpha = 0.18;
    c.fillStyle = stroke;
    c.fill();
    c.globalAlpha = 1;
  }

  $("endpoint").textContent = location.host;
  const pollOnce = single(poll), treeOnce = single(refreshTree);
  treeOnce();
  pollOnce();
  setInterval(pollOnce, POLL_MS);
  setInterval(treeOnce, TREE_MS);
  window.addEventListener("resize", render);
})();
