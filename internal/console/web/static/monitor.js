// Coffer console: the Metrics page's live charts.
//
// Reads GET /monitoring/data (columns of samples: see
// metrics.Sampler.WriteJSON), first the last hour, then every sampling
// interval only the samples after the newest it has, keeps an hour of
// them and redraws six SVG line charts and the last-minute table. No
// library, no build step; the page works without it (the table as
// rendered by the server).
(function () {
  "use strict";

  const root = document.getElementById("charts");
  if (!root) {
    return;
  }
  const SVG = "http://www.w3.org/2000/svg";
  const WINDOW_MS = 3600 * 1000;
  const SUMMARY_MS = 60 * 1000;
  const W = 560, H = 170, LEFT = 58, RIGHT = 8, TOP = 8, BOTTOM = 20;
  const intervalMs = Math.max(100, Number(root.dataset.interval) * 1000 || 5000);
  const select = document.getElementById("op");
  const updated = document.getElementById("updated");

  // data holds the columns of the samples kept: time (Unix ms) and the
  // totals' columns, and ops[name] with the columns of one operation.
  const TOTALS = ["requests", "clientErrors", "serverErrors", "p50", "p99", "bytesIn", "bytesOut", "objects", "bytes"];
  const OPCOLS = ["requests", "errors", "p50", "p99"];
  const data = {time: [], ops: {}};
  TOTALS.forEach(function (k) { data[k] = []; });

  // merge appends a fetched document's samples and drops those older
  // than the window.
  function merge(doc) {
    const n = data.time.length, m = doc.time.length;
    data.time = data.time.concat(doc.time);
    TOTALS.forEach(function (k) { data[k] = data[k].concat(doc[k] || new Array(m).fill(null)); });
    const names = new Set(Object.keys(data.ops).concat(Object.keys(doc.ops || {})));
    names.forEach(function (name) {
      let cols = data.ops[name];
      if (!cols) {
        cols = {};
        OPCOLS.forEach(function (k) { cols[k] = new Array(n).fill(k === "p50" || k === "p99" ? null : 0); });
        data.ops[name] = cols;
      }
      const add = (doc.ops || {})[name];
      OPCOLS.forEach(function (k) {
        cols[k] = cols[k].concat(add ? add[k] : new Array(m).fill(k === "p50" || k === "p99" ? null : 0));
      });
    });
    const last = data.time.length ? data.time[data.time.length - 1] : 0;
    let drop = 0;
    while (drop < data.time.length && data.time[drop] < last - WINDOW_MS) {
      drop++;
    }
    if (drop > 0) {
      data.time = data.time.slice(drop);
      TOTALS.forEach(function (k) { data[k] = data[k].slice(drop); });
      Object.keys(data.ops).forEach(function (name) {
        const cols = data.ops[name];
        OPCOLS.forEach(function (k) { cols[k] = cols[k].slice(drop); });
        if (cols.requests.every(function (v) { return !v; })) {
          delete data.ops[name];
        }
      });
    }
  }

  // The charts: for the operation chosen ("" for all), the series to
  // draw, each a name and a column, and how to label values.
  function series(chart, op) {
    const o = op && data.ops[op];
    const ms = function (col) { return col.map(function (v) { return v === null ? null : v * 1000; }); };
    switch (chart) {
    case "requests":
      return {fmt: rate, lines: [{name: op || "all operations", values: o ? o.requests : data.requests}]};
    case "errors":
      return o ? {fmt: rate, lines: [{name: "4xx and 5xx", values: o.errors}]}
        : {fmt: rate, lines: [{name: "4xx", values: data.clientErrors}, {name: "5xx", values: data.serverErrors}]};
    case "latency":
      return {fmt: millis, lines: [{name: "p50", values: ms(o ? o.p50 : data.p50)}, {name: "p99", values: ms(o ? o.p99 : data.p99)}]};
    case "bytes":
      return {fmt: size, lines: [{name: "in", values: data.bytesIn}, {name: "out", values: data.bytesOut}]};
    case "objects":
      return {fmt: count, lines: [{name: "objects", values: data.objects}]};
    case "stored":
      return {fmt: size, lines: [{name: "bytes", values: data.bytes}]};
    }
    return {fmt: count, lines: []};
  }

  function ago(ms) {
    const s = Math.round(ms / 1000);
    return "−" + (s >= 120 ? Math.round(s / 60) + " min" : s + " s");
  }
  function rate(v) { return v >= 100 ? v.toFixed(0) : v >= 0.1 || v === 0 ? v.toFixed(1) : v.toFixed(3); }
  function millis(v) { return v >= 100 ? v.toFixed(0) + " ms" : v.toFixed(1) + " ms"; }
  function count(v) { return v >= 1e6 ? (v / 1e6).toFixed(1) + "M" : v >= 1e4 ? (v / 1e3).toFixed(0) + "k" : v.toFixed(0); }
  function size(v) {
    const units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let i = 0;
    while (v >= 1024 && i < units.length - 1) {
      v /= 1024;
      i++;
    }
    return (i === 0 ? v.toFixed(0) : v.toFixed(1)) + " " + units[i];
  }

  function el(name, attrs, text) {
    const e = document.createElementNS(SVG, name);
    Object.keys(attrs).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (text !== undefined) {
      e.textContent = text;
    }
    return e;
  }

  // draw renders one chart into its figure: a grid with the value axis
  // from 0 to a little above the largest value, the last hour along the
  // time axis, one path per series broken where a value is null.
  function draw(fig, op) {
    const s = series(fig.dataset.chart, op);
    // The last hour, or since the first sample of a younger server.
    const end = data.time.length ? data.time[data.time.length - 1] : Date.now();
    const span = Math.max(Math.min(WINDOW_MS, end - (data.time.length ? data.time[0] : end)), 10 * intervalMs);
    const start = end - span;
    let top = 0;
    s.lines.forEach(function (l) { l.values.forEach(function (v) { if (v !== null && v > top) { top = v; } }); });
    top = top > 0 ? top * 1.1 : 1;
    const x = function (t) { return LEFT + (W - LEFT - RIGHT) * (t - start) / span; };
    const y = function (v) { return TOP + (H - TOP - BOTTOM) * (1 - v / top); };
    const svg = el("svg", {viewBox: "0 0 " + W + " " + H, role: "img", "aria-label": fig.dataset.chart});
    [0, 0.5, 1].forEach(function (f) {
      svg.appendChild(el("line", {"class": "grid-line", x1: LEFT, x2: W - RIGHT, y1: y(top * f), y2: y(top * f)}));
      svg.appendChild(el("text", {"class": "axis", x: LEFT - 4, y: y(top * f) + 4, "text-anchor": "end"}, s.fmt(top * f)));
    });
    [[start, ago(span)], [start + span / 2, ago(span / 2)], [end, "now"]].forEach(function (p, i) {
      svg.appendChild(el("text", {"class": "axis", x: x(p[0]), y: H - 4, "text-anchor": ["start", "middle", "end"][i]}, p[1]));
    });
    s.lines.forEach(function (l, i) {
      let d = "", pen = false;
      l.values.forEach(function (v, j) {
        if (v === null || data.time[j] < start) {
          pen = false;
          return;
        }
        d += (pen ? "L" : "M") + x(data.time[j]).toFixed(1) + " " + y(v).toFixed(1);
        pen = true;
      });
      svg.appendChild(el("path", {"class": "series s" + i, d: d, "data-name": l.name}));
    });
    const legend = document.createElement("div");
    legend.className = "legend";
    s.lines.forEach(function (l, i) {
      const item = document.createElement("span");
      item.className = "s" + i;
      item.textContent = l.name;
      legend.appendChild(item);
    });
    const caption = fig.querySelector("figcaption");
    while (fig.lastChild && fig.lastChild !== caption) {
      fig.removeChild(fig.lastChild);
    }
    fig.appendChild(svg);
    fig.appendChild(legend);
  }

  // summary redraws the table of the last minute: rates averaged,
  // latencies and totals the latest known.
  function summary() {
    const end = data.time.length ? data.time[data.time.length - 1] : 0;
    let from = data.time.length;
    while (from > 0 && data.time[from - 1] > end - SUMMARY_MS) {
      from--;
    }
    const mean = function (col) {
      const xs = col.slice(from).filter(function (v) { return v !== null; });
      return xs.length ? xs.reduce(function (a, b) { return a + b; }, 0) / xs.length : null;
    };
    const latest = function (col) {
      for (let i = col.length - 1; i >= from; i--) {
        if (col[i] !== null) {
          return col[i];
        }
      }
      return null;
    };
    const show = function (v, f) { return v === null ? "–" : f(v); };
    const ms = function (v) { return millis(v * 1000); };
    const cells = {
      requests: show(mean(data.requests), rate), clientErrors: show(mean(data.clientErrors), rate),
      serverErrors: show(mean(data.serverErrors), rate), p50: show(latest(data.p50), ms), p99: show(latest(data.p99), ms),
      bytesIn: show(mean(data.bytesIn), size), bytesOut: show(mean(data.bytesOut), size),
      objects: show(latest(data.objects), count), bytes: show(latest(data.bytes), size),
    };
    document.querySelectorAll("#totals [data-v]").forEach(function (td) { td.textContent = cells[td.dataset.v]; });
    const tbody = document.querySelector("#ops tbody");
    if (!tbody) {
      return;
    }
    const rows = Object.keys(data.ops).map(function (name) {
      const o = data.ops[name];
      return {name: name, reqs: mean(o.requests) || 0, errs: mean(o.errors) || 0, p50: latest(o.p50), p99: latest(o.p99)};
    }).filter(function (r) { return r.reqs > 0; });
    rows.sort(function (a, b) { return b.reqs - a.reqs || (a.name < b.name ? -1 : 1); });
    tbody.textContent = "";
    rows.forEach(function (r) {
      const tr = document.createElement("tr");
      tr.dataset.op = r.name;
      [r.name, rate(r.reqs), rate(r.errs), show(r.p50, ms), show(r.p99, ms)].forEach(function (text, i) {
        const td = document.createElement("td");
        td.textContent = text;
        if (i > 0) {
          td.className = "num";
        }
        tr.appendChild(td);
      });
      tbody.appendChild(tr);
    });
    if (!rows.length) {
      const tr = document.createElement("tr");
      const td = document.createElement("td");
      td.colSpan = 5;
      td.className = "empty";
      td.textContent = "No requests in the last minute.";
      tr.appendChild(td);
      tbody.appendChild(tr);
    }
  }

  // options keeps the operation picker in step with the operations seen.
  function options() {
    const have = new Set(Array.from(select.options).map(function (o) { return o.value; }));
    Object.keys(data.ops).sort().forEach(function (name) {
      if (!have.has(name)) {
        const o = document.createElement("option");
        o.value = name;
        o.textContent = name;
        select.appendChild(o);
      }
    });
  }

  function redraw() {
    const op = select.value;
    document.querySelectorAll("#charts figure.chart").forEach(function (fig) { draw(fig, op); });
    root.dataset.samples = String(data.time.length);
    const note = document.getElementById("summary-note");
    if (note) {
      note.textContent = "(rates averaged over the last minute, latencies and totals the latest; live)";
    }
  }

  let busy = false;
  async function refresh() {
    if (busy) {
      return;
    }
    busy = true;
    try {
      const since = data.time.length ? "?since=" + data.time[data.time.length - 1] : "";
      const resp = await fetch("/monitoring/data" + since, {credentials: "same-origin", headers: {"Accept": "application/json"}});
      const type = resp.headers.get("Content-Type") || "";
      if (!resp.ok || type.indexOf("application/json") !== 0) {
        updated.textContent = resp.redirected ? "Signed out: reload the page to sign in again." : "Could not read the metrics (" + resp.status + ").";
        return;
      }
      merge(await resp.json());
      options();
      redraw();
      summary();
      updated.textContent = "Updated " + new Date().toLocaleTimeString() + ", every " + intervalMs / 1000 + " s.";
    } catch (e) {
      updated.textContent = "Could not read the metrics: " + e.message;
    } finally {
      busy = false;
    }
  }

  select.addEventListener("change", redraw);
  refresh();
  setInterval(refresh, Math.max(intervalMs, 1000));
})();
