// The script of `allocprof html`'s page (embedded in every page). It
// reads the data block the command wrote (#ap-data) and draws the views.
// Every number comes from the C side: per stack its seven values, per
// granularity the nodes each stack counts in (flat first), the flame
// graph's tree with each stack's leaf, the timeline's buckets and per
// bucket and stack what was allocated and what changed hands. The script
// only sums those for the sample index and the stretch of time chosen.
"use strict";
(function () {
	const D = JSON.parse(document.getElementById("ap-data").textContent);
	const NS = D.indexes.length;
	const NSTACKS = D.stacks.length / NS;
	const SVGNS = "http://www.w3.org/2000/svg";
	const st = {
		si: Math.max(0, D.indexes.findIndex((x) => x.name === D.sample_index)),
		gran: D.granularity,
		range: null, // [first bucket, last bucket]
		sort: "flat",
		asc: false,
		all_rows: false,
		zoom: 0,
		search: null,
		sandwich: null,
	};

	// ---- helpers ----------------------------------------------------------

	function el(tag, attrs, text) {
		const e = document.createElement(tag);
		for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
		if (text !== undefined) e.textContent = text;
		return e;
	}
	function sel(tag, attrs) {
		const e = document.createElementNS(SVGNS, tag);
		for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
		return e;
	}
	const $ = (id) => document.getElementById(id);

	// As the CLI's ap_format_bytes (pprof's ScaledLabel): the value
	// rounded, in its own 1024-based unit, "%.2f" without ".00".
	const UNITS = ["B", "kB", "MB", "GB", "TB", "PB"];
	function fmtBytes(v) {
		const r = Math.round(v), a = Math.abs(r);
		let u = 0;
		while (u + 1 < UNITS.length && a >= Math.pow(2, 10 * (u + 1))) u++;
		let s = (r / Math.pow(2, 10 * u)).toFixed(2);
		if (s.endsWith(".00")) s = s.slice(0, -3);
		if (s === "0" || s === "-0") return "0";
		return s + UNITS[u];
	}
	function fmt(si, v) {
		return D.indexes[si].bytes ? fmtBytes(v) : String(Math.round(v));
	}
	function fmtNs(ns) {
		const a = Math.abs(ns);
		if (a < 1e3) return Math.round(ns) + "ns";
		if (a < 1e6) return +(ns / 1e3).toPrecision(3) + "µs";
		if (a < 1e9) return +(ns / 1e6).toPrecision(3) + "ms";
		return +(ns / 1e9).toPrecision(3) + "s";
	}
	// C's "%.3g": 3 significant digits, trailing zeros dropped, the
	// exponent form below 1e-4 and from 1e3 (diff's delta%)
	function fmtG(x) {
		if (x === 0) return "0";
		const [m, e] = x.toExponential(2).split("e");
		const ex = +e;
		const strip = (t) => t.includes(".") ? t.replace(/\.?0+$/, "") : t;
		if (ex < -4 || ex >= 3)
			return strip(m) + "e" + (ex < 0 ? "-" : "+") + String(Math.abs(ex)).padStart(2, "0");
		return strip(x.toFixed(2 - ex));
	}
	function pct(v, total) {
		return total ? (100 * v / total).toFixed(2) + "%" : "0.00%";
	}
	function fmtX(x) {
		if (D.timeline.x_unit === "B") return fmtBytes(x);
		if (x === 0) return "0";
		if (D.timeline.xspan < 1e-3) return +(x * 1e6).toPrecision(3) + "µs";
		if (D.timeline.xspan < 1) return +(x * 1e3).toPrecision(3) + "ms";
		return +x.toPrecision(3) + "s";
	}

	// The CLI's regexes are PCRE2's; leading inline flags ((?i), (?s),
	// (?m), (?is)...) become the JS regex's flags. Throws with the
	// browser's message on what it cannot read.
	function cliRegex(src) {
		let flags = "u";
		let m;
		while ((m = /^\(\?([imsU]+)\)/.exec(src))) {
			for (const f of m[1]) {
				if (f === "U") throw new Error("(?U) has no JavaScript equivalent");
				if (!flags.includes(f)) flags += f;
			}
			src = src.slice(m[0].length);
		}
		return new RegExp(src, flags);
	}

	// ---- the values of the view: per stack -----------------------------------

	const RANGE_KIND = { 0: "alloc", 1: "alloc", 2: "live", 3: "live" };
	function stackValues() {
		const si = st.si, v = new Float64Array(NSTACKS);
		if (!st.range) {
			for (let s = 0; s < NSTACKS; s++) v[s] = D.stacks[s * NS + si];
			return v;
		}
		// alloc_*: allocated in the range; inuse_*: live at its end
		const [b0, b1] = st.range;
		const alloc = RANGE_KIND[si] === "alloc";
		const k = (alloc ? 1 : 3) + (D.indexes[si].bytes ? 1 : 0);
		const cells = D.timeline.cells;
		for (let b = alloc ? b0 : 0; b <= b1; b++) {
			const c = cells[b];
			for (let i = 0; i < c.length; i += 5) v[c[i]] += c[i + k];
		}
		return v;
	}

	// ---- header and controls ----------------------------------------------

	function header() {
		const exe = D.program.replace(/.*\//, "");
		document.title = "allocprof: " + exe;
		const h = el("div", { id: "head" });
		h.appendChild(el("h1", {}, "allocprof: " + exe));
		if (D.cmdline) h.appendChild(el("div", { class: "sub mono" }, D.cmdline));
		if (D.truncated) h.appendChild(el("div", { class: "sub warn", id: "truncated" },
			"Truncated trace (" + D.truncated + "): the page shows its complete part"));
		h.appendChild(el("div", { class: "sub" }, D.rate <= 1 ? "every allocation recorded" :
			"sampled every " + fmtBytes(D.rate) + " on average: the values are estimates"));
		const pk = D.peak;
		h.appendChild(el("div", { class: "sub", id: "peak", "data-v": pk.bytes },
			"Peak in-use: " + fmtBytes(pk.bytes) + " (" + pk.says + ")"));
		const f = Object.keys(D.filters).map((k) => k + "=" + D.filters[k]).join(", ");
		if (f) h.appendChild(el("div", { class: "sub" }, "Filters: " + f));
		document.body.appendChild(h);

		const c = el("div", { id: "controls" });
		const lab = el("label", {}, "Sample index ");
		const s = el("select", { id: "si" });
		// temporaries need the events between an allocation and its
		// free: a sampled trace has no value for them (as top says)
		const noTemp = D.rate > 1;
		D.indexes.forEach((x, i) => {
			const o = el("option", { value: i }, x.name + (noTemp && x.name === "temporary"
				? " (needs --all)" : ""));
			if (noTemp && x.name === "temporary") { o.disabled = true; o.setAttribute("data-never", "1"); }
			s.appendChild(o);
		});
		s.value = st.si;
		s.addEventListener("change", () => { st.si = +s.value; st.zoom = 0; redraw(); });
		lab.appendChild(s);
		c.appendChild(lab);
		const lab2 = el("label", {}, "Table by ");
		const g = el("select", { id: "gran" });
		for (const n of ["functions", "lines", "files"]) g.appendChild(el("option", { value: n }, n));
		g.value = st.gran;
		g.addEventListener("change", () => { st.gran = g.value; drawTable(); });
		lab2.appendChild(g);
		c.appendChild(lab2);
		c.appendChild(el("span", { id: "range-status" }, "whole run"));
		c.appendChild(el("span", { id: "range-sum", class: "note" }));
		const clr = el("button", { id: "range-clear", style: "display:none" }, "Whole run");
		clr.addEventListener("click", () => setRange(null));
		c.appendChild(clr);
		c.appendChild(el("span", { id: "index-note", class: "note" }));
		document.body.appendChild(c);
	}

	function setRange(r) {
		st.range = r;
		st.zoom = 0;
		if (r && !(st.si in RANGE_KIND)) {
			st.si = 1;
			$("si").value = 1;
		}
		for (const o of $("si").options)
			o.disabled = !!o.getAttribute("data-never") || (!!r && !(+o.value in RANGE_KIND));
		redraw();
	}

	function rangeText() {
		if (!st.range) return "whole run";
		const T = D.timeline, w = T.xspan / T.buckets;
		const [b0, b1] = st.range;
		const what = RANGE_KIND[st.si] === "alloc"
			? "allocated from " + fmtX(b0 * w) + " to " + fmtX((b1 + 1) * w)
			: "live at " + fmtX((b1 + 1) * w);
		return "Showing " + D.indexes[st.si].name + ": " + what +
			(D.timeline.x_unit === "B" ? " allocated and freed" : "");
	}

	// Both sides of a stretch at once: what was allocated in it and
	// what was live at its end, in blocks and bytes.
	function rangeSum() {
		if (!st.range) return "";
		const [b0, b1] = st.range, cells = D.timeline.cells, v = [0, 0, 0, 0];
		for (let b = 0; b <= b1; b++) {
			const c = cells[b];
			for (let i = 0; i < c.length; i += 5)
				for (let k = 0; k < 4; k++) if (k >= 2 || b >= b0) v[k] += c[i + 1 + k];
		}
		const blocks = (n) => Math.round(n) + (Math.round(n) === 1 ? " block, " : " blocks, ");
		return "(allocated in it: " + blocks(v[0]) + fmtBytes(v[1]) +
			"; live at its end: " + blocks(v[2]) + fmtBytes(v[3]) + ")";
	}

	// ---- the top table --------------------------------------------------------

	function tableModel(vals) {
		const T = D.tables[st.gran];
		const flat = new Float64Array(T.names.length), cum = new Float64Array(T.names.length);
		const seen = new Uint8Array(T.names.length);
		let total = 0, kept = 0;
		for (let s = 0; s < NSTACKS; s++) {
			const v = vals[s];
			if (!v) continue;
			total += v;
			const p = T.paths[s];
			if (p.length < 2) continue;
			kept += v;
			if (p[0] >= 0) flat[p[0]] += v;
			for (let k = 1; k < p.length; k++) { cum[p[k]] += v; seen[p[k]] = 1; }
		}
		const rows = [];
		for (let i = 0; i < T.names.length; i++)
			if (seen[i]) rows.push({ name: T.names[i], flat: flat[i], cum: cum[i] });
		return { rows, total, kept };
	}

	function cmpName(a, b) { return a < b ? -1 : a > b ? 1 : 0; }

	function drawTable() {
		const m = tableModel(stackValues());
		const key = st.sort;
		const dir = st.asc ? 1 : -1;
		m.rows.sort((a, b) => {
			if (key === "name") return dir * cmpName(a.name, b.name);
			if (a[key] !== b[key]) return dir * (a[key] < b[key] ? -1 : 1);
			return cmpName(a.name, b.name);
		});
		const si = st.si, sec = $("top");
		sec.textContent = "";
		sec.appendChild(el("h2", {}, "Top " + st.gran));
		sec.appendChild(el("div", { class: "note", id: "top-total", "data-v": m.total },
			(st.range ? rangeText() + ". " : "") + "Total: " + fmt(si, m.total) + (m.kept !== m.total ? ", kept by the filters: " +
			fmt(si, m.kept) + " (" + pct(m.kept, m.total) + ")" : "") + "; " +
			m.rows.length + " nodes. Click a column to sort" +
			(st.gran === "functions" ? ", a name for its callers and callees." : ".")));
		const t = el("table", { id: "top-table" });
		const hr = el("tr");
		const cols = [["flat", "flat"], ["flat%", "flat"], ["sum%", null], ["cum", "cum"],
			["cum%", "cum"], ["name", "name"]];
		for (const [label, k] of cols) {
			const th = el("th", { class: (k === "name" ? "name " : "") +
				(k === key && label !== "flat%" && label !== "cum%" ? "sorted" + (st.asc ? " asc" : "") : ""),
				"data-sort": k || "" }, label);
			if (k) th.addEventListener("click", () => {
				if (st.sort === k) st.asc = !st.asc;
				else { st.sort = k; st.asc = k === "name"; }
				drawTable();
			});
			hr.appendChild(th);
		}
		const th = el("thead");
		th.appendChild(hr);
		t.appendChild(th);
		const tb = el("tbody");
		let sum = 0;
		const n = st.all_rows ? m.rows.length : Math.min(m.rows.length, 300);
		for (let i = 0; i < n; i++) {
			const r = m.rows[i];
			sum += r.flat;
			const tr = el("tr", { "data-name": r.name });
			tr.appendChild(el("td", { class: "flat", "data-v": r.flat }, fmt(si, r.flat)));
			tr.appendChild(el("td", {}, pct(r.flat, m.total)));
			tr.appendChild(el("td", {}, pct(sum, m.total)));
			tr.appendChild(el("td", { class: "cum", "data-v": r.cum }, fmt(si, r.cum)));
			tr.appendChild(el("td", {}, pct(r.cum, m.total)));
			const td = el("td", { class: "name" + (st.gran === "functions" ? " link" : "") }, r.name);
			if (st.gran === "functions") td.addEventListener("click", () => showSandwich(r.name));
			tr.appendChild(td);
			tb.appendChild(tr);
		}
		t.appendChild(tb);
		sec.appendChild(t);
		if (n < m.rows.length) {
			const b = el("button", { id: "top-more" }, "Show all " + m.rows.length + " rows");
			b.addEventListener("click", () => { st.all_rows = true; drawTable(); });
			sec.appendChild(b);
		}
	}

	// ---- flame graphs ------------------------------------------------------

	const F = D.flame;
	const FN = F.nodes.length / 3;
	const fname = new Array(FN), fparent = new Int32Array(FN), fdepth = new Int32Array(FN);
	const fend = new Int32Array(FN); // last node of the subtree (preorder)
	for (let i = 0; i < FN; i++) {
		fname[i] = F.names[F.nodes[3 * i]];
		fparent[i] = F.nodes[3 * i + 1];
		fdepth[i] = i ? fdepth[fparent[i]] + 1 : 0;
		fend[i] = i;
	}
	for (let i = FN - 1; i > 0; i--) fend[fparent[i]] = Math.max(fend[fparent[i]], fend[i]);

	// The tree of the view: per node its value and self, summed from the
	// stacks' leaves, and x as the C side lays it out (siblings in name
	// order, left to right).
	function flameTree(vals) {
		const val = new Float64Array(FN), self = new Float64Array(FN);
		for (let s = 0; s < NSTACKS; s++) {
			const l = F.leaf[s];
			if (l >= 0 && vals[s]) { val[l] += vals[s]; self[l] += vals[s]; }
		}
		for (let i = FN - 1; i > 0; i--) val[fparent[i]] += val[i];
		const x = new Float64Array(FN), next = new Float64Array(FN);
		for (let i = 1; i < FN; i++) {
			if (!val[i]) continue;
			const p = fparent[i];
			x[i] = next[p];
			next[p] += val[i];
			next[i] = x[i];
		}
		return { n: FN, name: fname, parent: fparent, depth: fdepth, end: fend, val, self, x };
	}

	function colour(name, unsym) {
		if (unsym) return "rgb(190,190,190)";
		let h = 2166136261;
		for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 16777619) >>> 0;
		return "rgb(" + (205 + Math.floor((h & 0xff) * 50 / 255)) + "," +
			Math.floor((h >>> 8 & 0xff) * 230 / 255) + "," + Math.floor((h >>> 16 & 0xff) * 55 / 255) + ")";
	}

	const ROW = 18, CHAR_W = 7.2;
	function fit(name, w) {
		const n = Math.floor((w - 6) / CHAR_W);
		if (n < 3) return "";
		return name.length <= n ? name : name.slice(0, n - 2) + "..";
	}

	// Draws tree `t` into svg (cleared), zoomed on node z (its ancestors
	// full width above it), icicle-wise: the root on top. `details` is
	// the element the hovered node is described in; `onclick(i)`.
	function drawTree(svg, t, z, total, details, onclick, flags) {
		svg.textContent = "";
		const W = Math.max(400, svg.parentNode.clientWidth - 4);
		const zx = t.x[z], zv = t.val[z] || 1;
		let maxd = 0;
		const frag = document.createDocumentFragment();
		let matched = 0;
		const boxes = [];
		// z and its callers full width, its subtree scaled to it (nothing
		// when the filters kept nothing)
		for (let i = z; i >= 0 && t.val[z]; i = t.parent[i]) boxes.push([i, 0, W]);
		for (let i = z + 1; i <= t.end[z]; i++) {
			if (!t.val[i]) continue;
			const w = t.val[i] / zv * W;
			if (w < 0.5) continue;
			boxes.push([i, (t.x[i] - zx) / zv * W, w]);
		}
		for (const [i, px, w] of boxes) {
			const y = t.depth[i] * ROW;
			maxd = Math.max(maxd, t.depth[i]);
			const g = sel("g", { class: "node", "data-name": t.name[i], "data-v": t.val[i], "data-i": i,
				"data-d": t.depth[i] });
			const isMatch = st.search && i > 0 && st.search.test(t.name[i]);
			if (isMatch) g.classList.add("match");
			const r = sel("rect", { x: px.toFixed(2), y: y, width: Math.max(w - 0.5, 0.5).toFixed(2),
				height: ROW - 1, fill: colour(t.name[i], flags && flags[i] & 2), rx: 2 });
			const tx = sel("text", { x: (px + 3).toFixed(2), y: y + ROW - 5 });
			tx.textContent = fit(t.name[i], w);
			g.appendChild(r);
			g.appendChild(tx);
			g.addEventListener("mouseover", () => {
				details.textContent = t.name[i] + ": " + fmt(st.si, t.val[i]) + " (" +
					pct(t.val[i], total) + ")" + (t.self[i] > 0 && t.self[i] < t.val[i]
					? ", self " + fmt(st.si, t.self[i]) + " (" + pct(t.self[i], total) + ")" : "") +
					(flags && flags[i] & 1 ? ", inlined" : "");
			});
			g.addEventListener("click", () => onclick(i));
			frag.appendChild(g);
		}
		// the share of the matched (the outermost match of each path)
		if (st.search)
			for (let i = 1; i < t.n; i++) {
				if (!t.val[i] || !st.search.test(t.name[i])) continue;
				matched += t.val[i];
				i = t.end[i];
			}
		svg.appendChild(frag);
		svg.setAttribute("width", W);
		svg.setAttribute("height", (maxd + 1) * ROW + 2);
		return matched;
	}

	function isAncestor(t, a, b) {
		for (let i = b; i >= 0; i = t.parent[i]) if (i === a) return true;
		return false;
	}

	const fflags = new Int32Array(FN);
	for (let i = 0; i < FN; i++) fflags[i] = F.nodes[3 * i + 2];

	function drawFlame(vals) {
		const t = flameTree(vals);
		if (st.zoom && !t.val[st.zoom]) st.zoom = 0;
		const total = t.val[0];
		$("fg-title").textContent = D.indexes[st.si].name + ", total " + fmt(st.si, total) +
			(st.range ? " (" + rangeText().replace(/^Showing [a-z_]+: /, "") + ")" : "");
		$("zoom-reset").style.display = st.zoom ? "" : "none";
		const m = drawTree($("fg-svg"), t, st.zoom, total, $("fg-details"), (i) => {
			st.zoom = i;
			st.sandwich_pick = t.name[i];
			$("sw-pick").textContent = i ? "Callers and callees of " + t.name[i] : "";
			$("sw-pick").style.display = i ? "" : "none";
			drawFlame(vals);
		}, fflags);
		$("search-status").textContent = st.search ? "matched " + fmt(st.si, m) + " (" +
			pct(m, total) + ")" : "";
		$("search-status").setAttribute("data-v", m);
		if (!total)
			$("fg-details").textContent = "nothing to draw: " + (vals.some((v) => v)
				? "no stack passes the filters" : "the total is 0");
	}

	// The sandwich: the paths through the function merged into a tree of
	// its callers (it on top, the callers below) and one of its callees,
	// each path counted once, at its outermost call of the function.
	function mergeTree(paths) {
		const root = { name: "", val: 0, self: 0, kids: new Map() };
		for (const [names, v, self] of paths) {
			let n = root;
			n.val += v;
			for (let k = 0; k < names.length; k++) {
				let c = n.kids.get(names[k]);
				if (!c) { c = { name: names[k], val: 0, self: 0, kids: new Map() }; n.kids.set(names[k], c); }
				c.val += v;
				n = c;
			}
			n.self += self;
		}
		// flattened preorder, children by name
		const t = { name: [], parent: [], depth: [], val: [], self: [], x: [], end: [] };
		(function walk(n, p, d, x) {
			const i = t.name.length;
			t.name.push(n.name); t.parent.push(p); t.depth.push(d); t.val.push(n.val);
			t.self.push(n.self); t.x.push(x); t.end.push(i);
			let cx = x;
			for (const k of [...n.kids.keys()].sort(cmpName)) {
				walk(n.kids.get(k), i, d + 1, cx);
				cx += n.kids.get(k).val;
			}
			t.end[i] = t.name.length - 1;
		})(root.kids.size === 1 ? [...root.kids.values()][0] : root, -1, 0, 0);
		t.n = t.name.length;
		return t;
	}

	function showSandwich(name) {
		st.sandwich = name;
		drawSandwich(stackValues());
		$("sandwich").scrollIntoView();
	}

	function drawSandwich(vals) {
		const sec = $("sandwich");
		if (!st.sandwich) { sec.style.display = "none"; return; }
		sec.style.display = "";
		const name = st.sandwich;
		const t = flameTree(vals);
		const callers = [], callees = [];
		for (let i = 1; i < FN; i++) {
			if (!t.val[i] || fname[i] !== name) continue;
			// callers: up to the root (not "all"), the function first
			const up = [];
			for (let p = i; p > 0; p = fparent[p]) up.push(fname[p]);
			callers.push([up, t.val[i], t.val[i]]);
			// callees: the subtree's paths, each leaf's self
			for (let k = i; k <= fend[i]; k++) {
				if (!t.self[k]) continue;
				const down = [];
				for (let p = k; p !== fparent[i]; p = fparent[p]) down.unshift(fname[p]);
				callees.push([down, t.self[k], t.self[k]]);
			}
			i = fend[i];
		}
		const total = callers.reduce((a, c) => a + c[1], 0);
		$("sw-title").textContent = name + ": " + fmt(st.si, total) + " (" +
			pct(total, t.val[0]) + " of " + fmt(st.si, t.val[0]) + ")";
		sec.setAttribute("data-v", total);
		const tc = mergeTree(callers), te = mergeTree(callees);
		drawTree($("sw-callers"), tc, 0, total, $("sw-details"), (i) => showSandwich(tc.name[i]));
		drawTree($("sw-callees"), te, 0, total, $("sw-details"), (i) => showSandwich(te.name[i]));
	}

	function flameSection() {
		const sec = el("section", { id: "flame" });
		sec.appendChild(el("h2", {}, "Flame graph"));
		sec.appendChild(el("div", { class: "note" }, "The root on top, the call sites below " +
			"their callers; click a box to zoom, then 'Callers and callees' for the sandwich " +
			"view. Search takes the CLI's regexes ((?i) works)."));
		const bar = el("div", { class: "bar" });
		bar.appendChild(el("b", { id: "fg-title" }));
		bar.appendChild(document.createTextNode(" "));
		const rz = el("button", { id: "zoom-reset", style: "display:none" }, "Reset zoom");
		rz.addEventListener("click", () => { st.zoom = 0; drawFlame(stackValues()); });
		bar.appendChild(rz);
		const sw = el("button", { id: "sw-pick", style: "display:none" });
		sw.addEventListener("click", () => showSandwich(st.sandwich_pick));
		bar.appendChild(sw);
		bar.appendChild(document.createTextNode(" Search: "));
		const inp = el("input", { id: "search", size: 30, placeholder: "regex, e.g. (?i)alloc" });
		inp.addEventListener("change", () => {
			const v = inp.value;
			$("search-error").textContent = "";
			if (!v) st.search = null;
			else try { st.search = cliRegex(v); } catch (e) {
				st.search = null;
				$("search-error").textContent = "bad regex '" + v + "': " + e.message;
			}
			drawFlame(stackValues());
		});
		bar.appendChild(inp);
		bar.appendChild(document.createTextNode(" "));
		bar.appendChild(el("span", { id: "search-status" }));
		bar.appendChild(el("span", { id: "search-error", class: "error" }));
		sec.appendChild(bar);
		const wrap = el("div", { id: "fg-wrap" });
		wrap.appendChild(sel("svg", { id: "fg-svg" }));
		sec.appendChild(wrap);
		sec.appendChild(el("div", { id: "fg-details" }, " "));
		document.body.appendChild(sec);

		const sw2 = el("section", { id: "sandwich", style: "display:none" });
		sw2.appendChild(el("h2", {}, "Callers and callees"));
		const b2 = el("div", {});
		b2.appendChild(el("b", { id: "sw-title" }));
		const close = el("button", { id: "sw-close" }, "Close");
		close.addEventListener("click", () => { st.sandwich = null; drawSandwich(null); });
		b2.appendChild(document.createTextNode(" "));
		b2.appendChild(close);
		sw2.appendChild(b2);
		sw2.appendChild(el("div", { class: "note" }, "Callers (the function on top, who called it below):"));
		const w1 = el("div");
		w1.appendChild(sel("svg", { id: "sw-callers" }));
		sw2.appendChild(w1);
		sw2.appendChild(el("div", { class: "note" }, "Callees (the function on top, what it called below):"));
		const w2 = el("div");
		w2.appendChild(sel("svg", { id: "sw-callees" }));
		sw2.appendChild(w2);
		sw2.appendChild(el("div", { id: "sw-details" }, " "));
		document.body.appendChild(sw2);
	}

	// ---- the timeline --------------------------------------------------------

	const PALETTE = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#9c755f"];
	const OTHER = "#bab0ac";

	// 1, 2 or 5 times a power of ten (of 1024 for bytes above 1 kB)
	function ticks(max, n, bytes) {
		if (!(max > 0)) return [0];
		let base = 10, scale = 1;
		if (bytes && max >= 1024) { scale = Math.pow(1024, Math.floor(Math.log(max) / Math.log(1024))); }
		const m = max / scale;
		const raw = m / n, p = Math.pow(base, Math.floor(Math.log10(raw)));
		let step = [1, 2, 5, 10].map((k) => k * p).find((s) => s >= raw) * scale;
		// (bytes come whole: no tick at a fraction of one)
		if (bytes) step = Math.max(step, 1);
		const out = [];
		for (let v = 0; v <= max * 1.0000001; v += step) out.push(v);
		return out;
	}

	function timelineSection() {
		const T = D.timeline, nb = T.buckets, w = T.sites.length + 1;
		const sec = el("section", { id: "timeline" });
		sec.appendChild(el("h2", {}, "Timeline: in-use bytes"));
		let says = "Per stretch of the run (" + nb + "), the highest in-use bytes reached in it, " +
			"split by the top call sites at that moment; the peak is " + fmtBytes(T.peak) +
			(D.rate > 1 ? " ± " + fmtBytes(T.peak_sd) + " (estimate from samples)" : "") +
			". Drag across the chart to pick a stretch of time (a click picks one): the " +
			"flame graph and the table then show what was allocated in it (alloc_*) or live " +
			"at its end (inuse_*).";
		if (T.x_unit === "B") says += " The x axis is bytes allocated and freed (massif's --time-unit=B).";
		sec.appendChild(el("div", { class: "note" }, says));
		const wrap = el("div", { id: "tl-wrap" });
		const W = Math.max(500, Math.min(document.body.clientWidth - 40, 1400)), H = 220;
		const X0 = 70, Y0 = 10, PW = W - X0 - 20;
		const svg = sel("svg", { id: "tl-svg", width: W, height: Y0 + H + 40 });
		const top = T.peak > 0 ? T.peak : 1;
		const xs = (b) => X0 + PW * b / nb, ys = (v) => Y0 + H - H * v / top;
		const base = new Float64Array(nb);
		for (let s = 0; s < w; s++) {
			let pts = [];
			for (let b = 0; b < nb; b++) {
				const v = base[b] + T.at_max[b * w + s];
				pts.push(xs(b).toFixed(1) + "," + ys(v).toFixed(1), xs(b + 1).toFixed(1) + "," + ys(v).toFixed(1));
			}
			for (let b = nb - 1; b >= 0; b--)
				pts.push(xs(b + 1).toFixed(1) + "," + ys(base[b]).toFixed(1), xs(b).toFixed(1) + "," + ys(base[b]).toFixed(1));
			svg.appendChild(sel("polygon", { points: pts.join(" "), fill: s < w - 1 ? PALETTE[s % 8] : OTHER,
				"fill-opacity": 0.85 }));
			for (let b = 0; b < nb; b++) base[b] += T.at_max[b * w + s];
		}
		// axes with ticks
		const ax = sel("g", { class: "axis" });
		ax.appendChild(sel("line", { x1: X0, y1: Y0 + H, x2: X0 + PW, y2: Y0 + H, stroke: "#000" }));
		ax.appendChild(sel("line", { x1: X0, y1: Y0, x2: X0, y2: Y0 + H, stroke: "#000" }));
		for (const v of ticks(T.peak, 5, true)) {
			const y = ys(v);
			ax.appendChild(sel("line", { x1: X0 - 4, y1: y, x2: X0 + PW, y2: y, stroke: "#000", "stroke-opacity": v ? 0.12 : 0 }));
			ax.appendChild(sel("line", { x1: X0 - 4, y1: y, x2: X0, y2: y, stroke: "#000" }));
			const t = sel("text", { x: X0 - 6, y: y + 4, "text-anchor": "end", class: "ytick" });
			t.textContent = fmtBytes(v);
			ax.appendChild(t);
		}
		for (const v of ticks(T.xspan, 8, T.x_unit === "B")) {
			const x = X0 + PW * v / (T.xspan || 1);
			ax.appendChild(sel("line", { x1: x, y1: Y0 + H, x2: x, y2: Y0 + H + 4, stroke: "#000" }));
			const t = sel("text", { x: x, y: Y0 + H + 16, "text-anchor": "middle", class: "xtick" });
			t.textContent = fmtX(v);
			ax.appendChild(t);
		}
		const xl = sel("text", { x: X0 + PW, y: Y0 + H + 32, "text-anchor": "end" });
		xl.textContent = T.x_unit === "B" ? "bytes allocated and freed" : "time since the start";
		ax.appendChild(xl);
		svg.appendChild(ax);
		// the peak
		const px = X0 + PW * (T.peak_bucket + 0.5) / nb;
		svg.appendChild(sel("line", { x1: px, y1: Y0, x2: px, y2: Y0 + H, stroke: "#000", "stroke-dasharray": "4,3" }));
		const selRect = sel("rect", { id: "tl-sel", x: 0, y: Y0, width: 0, height: H, fill: "#1e64c8",
			"fill-opacity": 0.18, stroke: "#1e64c8", display: "none" });
		svg.appendChild(selRect);
		const hover = sel("line", { x1: 0, y1: Y0, x2: 0, y2: Y0 + H, stroke: "#333", display: "none" });
		svg.appendChild(hover);
		const catcher = sel("rect", { id: "tl-catch", x: X0, y: Y0, width: PW, height: H, fill: "transparent",
			style: "cursor: crosshair" });
		svg.appendChild(catcher);
		wrap.appendChild(svg);
		const tip = el("div", { id: "tl-tip" });
		wrap.appendChild(tip);
		sec.appendChild(wrap);
		const leg = el("div", { class: "legend" });
		for (let s = 0; s < w; s++) {
			const it = el("span", { class: "mono" });
			it.appendChild(el("span", { class: "sw", style: "background:" + (s < w - 1 ? PALETTE[s % 8] : OTHER) }));
			it.appendChild(document.createTextNode(s < w - 1 ? T.sites[s] : "(other sites)"));
			leg.appendChild(it);
		}
		sec.appendChild(leg);
		document.body.appendChild(sec);

		const bucketAt = (ev) => {
			const r = svg.getBoundingClientRect();
			const b = Math.floor((ev.clientX - r.left - X0) / PW * nb);
			return Math.max(0, Math.min(nb - 1, b));
		};
		const showTip = (b, ev) => {
			const bw = T.xspan / nb;
			tip.textContent = "";
			tip.setAttribute("data-bucket", b);
			tip.appendChild(el("div", {}, fmtX(b * bw) + " to " + fmtX((b + 1) * bw)));
			const tb = el("table");
			const row = (c, name, v, cls) => {
				const tr = el("tr", { class: cls });
				const td0 = el("td");
				if (c) td0.appendChild(el("span", { class: "sw", style: "display:inline-block;width:9px;height:9px;background:" + c }));
				tr.appendChild(td0);
				tr.appendChild(el("td", { "data-v": v }, fmtBytes(v)));
				tr.appendChild(el("td", { class: "name mono" }, name));
				tb.appendChild(tr);
			};
			row(null, "highest in-use bytes in it", T.max[b], "tip-total");
			for (let s = 0; s < w; s++)
				row(s < w - 1 ? PALETTE[s % 8] : OTHER, s < w - 1 ? T.sites[s] : "(other sites)",
					T.at_max[b * w + s], "tip-site");
			tip.appendChild(tb);
			tip.style.display = "block";
			const wr = wrap.getBoundingClientRect();
			let left = ev.clientX - wr.left + 14;
			if (left + 380 > wr.width) left = Math.max(0, ev.clientX - wr.left - 394);
			tip.style.left = left + "px";
			tip.style.top = (Y0 + 10) + "px";
			hover.setAttribute("x1", xs(b + 0.5));
			hover.setAttribute("x2", xs(b + 0.5));
			hover.setAttribute("display", "");
		};
		let drag = null;
		const showSel = (a, b) => {
			const lo = Math.min(a, b), hi = Math.max(a, b);
			selRect.setAttribute("x", xs(lo));
			selRect.setAttribute("width", xs(hi + 1) - xs(lo));
			selRect.setAttribute("display", "");
		};
		catcher.addEventListener("mousemove", (ev) => {
			const b = bucketAt(ev);
			showTip(b, ev);
			if (drag !== null) showSel(drag, b);
		});
		catcher.addEventListener("mouseleave", () => { tip.style.display = "none"; hover.setAttribute("display", "none"); });
		catcher.addEventListener("mousedown", (ev) => { drag = bucketAt(ev); showSel(drag, drag); ev.preventDefault(); });
		window.addEventListener("mouseup", (ev) => {
			if (drag === null) return;
			const b = bucketAt(ev), lo = Math.min(drag, b), hi = Math.max(drag, b);
			drag = null;
			setRange([lo, hi]);
		});
		st.hideSel = () => selRect.setAttribute("display", "none");
		st.showSel = showSel;
	}

	// ---- the advisor ---------------------------------------------------------

	function adviseSection() {
		const sec = el("section", { id: "advise" });
		sec.appendChild(el("h2", {}, "Advice: where a pool would pay"));
		const A = D.advise;
		if (!A) {
			sec.appendChild(el("div", { class: "note" }, "No advice: " + D.advise_why + "."));
			document.body.appendChild(sec);
			return;
		}
		sec.appendChild(el("div", { class: "note" }, "As allocprof advise --no-measure gives them: " +
			"the times saved are the cost model's; run allocprof advise for measured ones. " +
			A.sites.length + " sites" +
			(A.hidden_sites ? ", " + A.hidden_sites + " under the share shown" : "") +
			(A.estimates ? "; sampled: estimates" : "") + "."));
		if (A.advised_process)
			sec.appendChild(el("div", { class: "note", id: "advised-process" }, "A run of " +
				A.advised_process.processes + " processes: advised is pid " +
				A.advised_process.pid + " (" + A.advised_process.exe + "), the one with " +
				"the most allocation calls (a pool does not cross processes; allocprof " +
				"advise advises each)."));
		const t = el("table", { id: "advise-table" });
		const hr = el("tr");
		for (const h of ["site", "verdict", "allocs", "bytes", "share", "hit rate", "time saved",
			"p50 size", "reasons"])
			hr.appendChild(el("th", { class: h === "site" || h === "reasons" ? "name" : "" }, h));
		const th = el("thead");
		th.appendChild(hr);
		t.appendChild(th);
		const tb = el("tbody");
		for (const s of A.sites) {
			const tr = el("tr", { "data-site": s.site });
			tr.appendChild(el("td", { class: "name mono" }, s.site));
			tr.appendChild(el("td", { class: "verdict", "data-verdict": s.verdict },
				s.verdict_text || s.verdict));
			tr.appendChild(el("td", { "data-v": s.alloc_objects }, String(s.alloc_objects)));
			tr.appendChild(el("td", { "data-v": s.alloc_space }, fmtBytes(s.alloc_space)));
			tr.appendChild(el("td", {}, (100 * s.share).toFixed(1) + "%"));
			tr.appendChild(el("td", {}, (100 * s.hit_rate).toFixed(1) + "%"));
			const ns = s.time_saved_ns !== undefined ? s.time_saved_ns : s.model_time_saved_ns;
			tr.appendChild(el("td", { "data-v": ns }, fmtNs(ns) + " (" + s.time_source + ")"));
			tr.appendChild(el("td", {}, fmtBytes(s.p50_size)));
			tr.appendChild(el("td", { class: "reasons" }, s.reasons || ""));
			tb.appendChild(tr);
		}
		t.appendChild(tb);
		sec.appendChild(t);
		document.body.appendChild(sec);
	}

	// ---- the diff --------------------------------------------------------------

	function diffSection() {
		if (!D.diff) return;
		const sec = el("section", { id: "diff" });
		sec.appendChild(el("h2", {}, "Diff: " + D.diff.base + " → " + D.diff.new));
		sec.appendChild(el("div", { id: "diff-body" }));
		document.body.appendChild(sec);
	}

	function drawDiff() {
		if (!D.diff) return;
		const name = D.indexes[st.si].name, d = D.diff[name], body = $("diff-body"), si = st.si;
		body.textContent = "";
		if (!d) {
			body.appendChild(el("div", { class: "note" }, "No diff of " + name + " (it needs --all traces)."));
			return;
		}
		// as diff prints it: "%+.3g%%"
		const chg = (b, delta) => b === 0 ? (delta !== 0 ? "new" : "0%") :
			(delta >= 0 ? "+" : "") + fmtG(100 * delta / b) + "%";
		const signed = (v) => (v < 0 ? "-" : v > 0 ? "+" : "") + fmt(si, Math.abs(v));
		body.appendChild(el("div", { class: "note", id: "diff-total" }, name + " (flat): total " +
			fmt(si, d.base_total) + " → " + fmt(si, d.new_total) + " (" +
			signed(d.new_total - d.base_total) + ", " + chg(d.base_total, d.new_total - d.base_total) +
			"), as allocprof diff computes it; the index follows the selector above."));
		const t = el("table", { id: "diff-table" });
		const hr = el("tr");
		for (const h of ["base", "new", "delta", "delta%", "name"])
			hr.appendChild(el("th", { class: h === "name" ? "name" : "" }, h));
		const th = el("thead");
		th.appendChild(hr);
		t.appendChild(th);
		const tb = el("tbody");
		let shown = 0;
		for (const r of d.rows) {
			if (r.base_flat === r.new_flat) continue;
			if (++shown > 300) break;
			const tr = el("tr", { "data-name": r.name });
			tr.appendChild(el("td", { "data-v": r.base_flat }, fmt(si, r.base_flat)));
			tr.appendChild(el("td", { "data-v": r.new_flat }, fmt(si, r.new_flat)));
			tr.appendChild(el("td", { class: r.delta_flat > 0 ? "pos" : "neg", "data-v": r.delta_flat },
				signed(r.delta_flat)));
			tr.appendChild(el("td", {}, chg(r.base_flat, r.delta_flat)));
			tr.appendChild(el("td", { class: "name mono" }, r.name));
			tb.appendChild(tr);
		}
		t.appendChild(tb);
		body.appendChild(t);
		if (!shown) body.appendChild(el("div", { class: "note" }, "(no node changed)"));
	}

	// ---- all together ----------------------------------------------------------

	function redraw() {
		const vals = stackValues();
		$("range-status").textContent = rangeText();
		$("range-sum").textContent = rangeSum();
		$("range-clear").style.display = st.range ? "" : "none";
		if (st.range) st.showSel(st.range[0], st.range[1]);
		else st.hideSel();
		const note = D.notes[D.indexes[st.si].name];
		$("index-note").textContent = note && !st.range ? note
			: st.range && RANGE_KIND[st.si] === "live" ? "Live blocks as the timeline counts " +
			"them: the leak suppressions (the runtimes' own memory by default) do not apply." : "";
		drawFlame(vals);
		drawSandwich(vals);
		drawTable();
		drawDiff();
	}

	header();
	timelineSection();
	flameSection();
	document.body.appendChild(el("section", { id: "top" }));
	adviseSection();
	diffSection();
	redraw();
	document.addEventListener("keydown", (e) => {
		if (e.key === "Escape" && st.zoom) { st.zoom = 0; drawFlame(stackValues()); }
	});
	document.body.setAttribute("data-ready", "1");
})();
