/*
 * What the web view computes from /metrics, with no DOM: parsing Prometheus' text exposition
 * and turning two scrapes into rates. Pure functions, so a test can feed them a sample
 * exposition (ControlWebTest runs them in Chromium).
 *
 * Rates are per group, summed over devices (each group's counters already hold its
 * descendants', as io.stat's do), and per (group, device):
 *   IOPS, bytes/s      Δ iotarget_io_ops_total, Δ iotarget_io_bytes_total over Δt, per op
 *                      (Δt from iotarget_clock_seconds, the server's clock at each scrape)
 *   latency            average Δ_sum / Δ_count of iotarget_io_latency_seconds; p99 from the
 *                      Δ of its cumulative buckets, interpolated inside the bucket as
 *                      Prometheus' histogram_quantile does; null when no IO completed
 *   throttled          Δ iotarget_io_throttled_seconds_total / Δt per policy (throttle,
 *                      latency, cost): seconds held per second, so 2.0 is two requests held
 *                      all the time
 * A metric absent from the scrape gives null (the page shows "no data"), never 0. A counter
 * that went down (the server restarted) gives no rate for that interval.
 */
"use strict";

const IotargetMetrics = (() => {
  const OPS = ["read", "write", "discard"];
  const POLICIES = ["throttle", "latency", "cost"];
  const LATENCY = "iotarget_io_latency_seconds";
  const THROTTLED = "iotarget_io_throttled_seconds_total";

  /** Parses the text format: a Map from metric name to [{labels, value}]; comments skipped. */
  function parse(text) {
    const metrics = new Map();
    for (const raw of text.split("\n")) {
      const line = raw.trim();
      if (line === "" || line.startsWith("#")) continue;
      let i = 0;
      while (i < line.length && line[i] !== "{" && line[i] !== " " && line[i] !== "\t") i++;
      const name = line.slice(0, i);
      const labels = {};
      if (line[i] === "{") {
        i++;
        while (line[i] !== "}") {
          if (line[i] === "," || line[i] === " ") { i++; continue; }
          const eq = line.indexOf("=", i);
          if (eq < 0 || line[eq + 1] !== "\"") throw new Error("bad labels: " + line);
          const key = line.slice(i, eq).trim();
          let value = "";
          i = eq + 2;
          while (line[i] !== "\"") {
            if (i >= line.length) throw new Error("unterminated label value: " + line);
            if (line[i] === "\\") {
              i++;
              value += line[i] === "n" ? "\n" : line[i];
            } else {
              value += line[i];
            }
            i++;
          }
          labels[key] = value;
          i++;
        }
        i++;
      }
      const fields = line.slice(i).trim().split(/\s+/);
      const value = number(fields[0]);
      if (!metrics.has(name)) metrics.set(name, []);
      metrics.get(name).push({ labels, value });
    }
    return metrics;
  }

  function number(s) {
    if (s === "+Inf") return Infinity;
    if (s === "-Inf") return -Infinity;
    return Number(s);
  }

  /**
   * One scrape: its time (ms, the page's clock, for display), its metrics, and the server's
   * clock when it read them (ms; the page's clock where the server gives none), which rates
   * divide by: the page's clock would also count how long each response took to arrive.
   */
  function sample(text, timeMs) {
    const metrics = parse(text);
    const clock = metrics.get("iotarget_clock_seconds");
    return { timeMs, clockMs: clock && clock.length ? clock[0].value * 1000 : timeMs, metrics };
  }

  /** Series of `name` keyed by group and device, each a map from `key(labels)` to the value. */
  function byGroupDevice(metrics, name, key) {
    const out = new Map();
    for (const s of metrics.get(name) || []) {
      const id = s.labels.group + "\u0000" + s.labels.device;
      if (!out.has(id)) out.set(id, new Map());
      out.get(id).set(key(s.labels), s.value);
    }
    return out;
  }

  /** Every (group, device) pair in a scrape's io counters, in order of appearance. */
  function pairs(metrics) {
    const seen = new Map();
    for (const s of metrics.get("iotarget_io_ops_total") || []) {
      const id = s.labels.group + "\u0000" + s.labels.device;
      if (!seen.has(id)) seen.set(id, { group: s.labels.group, device: s.labels.device });
    }
    return [...seen.values()];
  }

  function emptyRates() {
    return {
      iops: { read: 0, write: 0, discard: 0 }, bps: { read: 0, write: 0, discard: 0 },
      latency: { count: 0, sum: 0, buckets: new Map() },
      throttled: { throttle: 0, latency: 0, cost: 0 },
    };
  }

  /**
   * Rates between two samples: {seconds, hasLatency, hasThrottled, groups: Map(group ->
   * view), pairs: Map(group NUL device -> view)}, where a view is {iops: {read, write,
   * discard, total}, bps: {...}, latencyAvg, latencyP99 (seconds or null), throttled: {throttle,
   * latency, cost, total} or null}. A pair absent from `before` is left out.
   */
  function rates(before, now) {
    const seconds = (now.clockMs - before.clockMs) / 1000;
    const hasLatency = now.metrics.has(LATENCY + "_count");
    const hasThrottled = now.metrics.has(THROTTLED);
    const cur = counters(now.metrics), old = counters(before.metrics);
    const groups = new Map(), perPair = new Map();
    for (const { group, device } of pairs(now.metrics)) {
      const id = group + "\u0000" + device;
      if (!old.ops.has(id)) continue;
      const r = emptyRates();
      let reset = false;
      const delta = (a, b) => {
        const d = (a ?? 0) - (b ?? 0);
        if (d < 0) reset = true;
        return d;
      };
      for (const op of OPS) {
        r.iops[op] = delta(cur.ops.get(id).get(op), old.ops.get(id).get(op)) / seconds;
        r.bps[op] = delta(cur.bytes.get(id)?.get(op), old.bytes.get(id)?.get(op)) / seconds;
      }
      if (hasLatency) {
        r.latency.count = delta(cur.count.get(id)?.get(""), old.count.get(id)?.get(""));
        r.latency.sum = delta(cur.sum.get(id)?.get(""), old.sum.get(id)?.get(""));
        for (const [le, n] of cur.buckets.get(id) || []) {
          r.latency.buckets.set(le, delta(n, old.buckets.get(id)?.get(le)));
        }
      }
      if (hasThrottled) {
        for (const p of POLICIES) r.throttled[p] = delta(cur.throttled.get(id)?.get(p), old.throttled.get(id)?.get(p)) / seconds;
      }
      if (reset) continue;
      perPair.set(id, view(r, hasLatency, hasThrottled));
      if (!groups.has(group)) groups.set(group, emptyRates());
      add(groups.get(group), r);
    }
    const groupViews = new Map();
    for (const [g, r] of groups) groupViews.set(g, view(r, hasLatency, hasThrottled));
    return { seconds, hasLatency, hasThrottled, groups: groupViews, pairs: perPair };
  }

  function counters(metrics) {
    const op = l => l.op;
    return {
      ops: byGroupDevice(metrics, "iotarget_io_ops_total", op),
      bytes: byGroupDevice(metrics, "iotarget_io_bytes_total", op),
      count: byGroupDevice(metrics, LATENCY + "_count", () => ""),
      sum: byGroupDevice(metrics, LATENCY + "_sum", () => ""),
      buckets: byGroupDevice(metrics, LATENCY + "_bucket", l => l.le),
      throttled: byGroupDevice(metrics, THROTTLED, l => l.policy),
    };
  }

  function add(into, r) {
    for (const op of OPS) {
      into.iops[op] += r.iops[op];
      into.bps[op] += r.bps[op];
    }
    into.latency.count += r.latency.count;
    into.latency.sum += r.latency.sum;
    for (const [le, n] of r.latency.buckets) into.latency.buckets.set(le, (into.latency.buckets.get(le) || 0) + n);
    for (const p of POLICIES) into.throttled[p] += r.throttled[p];
  }

  function view(r, hasLatency, hasThrottled) {
    const total = o => Object.assign({}, o, { total: OPS.reduce((s, op) => s + o[op], 0) });
    const done = hasLatency && r.latency.count > 0;
    return {
      iops: total(r.iops), bps: total(r.bps),
      latencyAvg: done ? r.latency.sum / r.latency.count : null,
      latencyP99: done ? quantile(0.99, r.latency.buckets) : null,
      throttled: hasThrottled ? Object.assign({}, r.throttled, { total: POLICIES.reduce((s, p) => s + r.throttled[p], 0) }) : null,
    };
  }

  /**
   * The q-quantile of a histogram given as a Map from `le` (text, "+Inf" last) to cumulative
   * counts: the bucket holding rank q × count, linearly inside it from the previous bound
   * (0 for the first); in the +Inf bucket, the largest finite bound. Null for no observations.
   */
  function quantile(q, buckets) {
    const sorted = [...buckets].map(([le, n]) => [number(le), n]).sort((a, b) => a[0] - b[0]);
    if (sorted.length === 0) return null;
    const count = sorted[sorted.length - 1][1];
    if (!(count > 0)) return null;
    const rank = q * count;
    let lower = 0, below = 0;
    for (const [le, n] of sorted) {
      if (n >= rank) {
        if (le === Infinity) return lower;
        return n === below ? le : lower + (le - lower) * (rank - below) / (n - below);
      }
      lower = le;
      below = n;
    }
    return lower;
  }

  /** Info metrics: [{labels}] of `name` (exports, namespaces, devices). */
  function info(metrics, name) {
    return (metrics.get(name) || []).map(s => s.labels);
  }

  return { parse, sample, rates, quantile, info };
})();

if (typeof module !== "undefined") module.exports = IotargetMetrics;
