// The script of `allocprof flamegraph`'s SVG: click to zoom, search, the
// hovered box's details. Embedded in every SVG (cli/cmd-flamegraph.c); no
// network, no library. Contract with the C side, which draws the boxes
// unzoomed: the <svg> element carries data-pad (left edge, px),
// data-width (px of the full width) and data-cw (px per character of the
// labels); the boxes are the <g class="f"> in #frames, the root first,
// then in preorder, each with data-x, data-v, data-s (offset, value and
// self value in the sample index's unit), data-d (depth), a <title> whose first line is the
// function, a <rect> and a <text>; a zoom changes only x and width.
"use strict";

var ap = { boxes: [], zoomed: null, matched: null };

function ap_num(el, name) {
	return parseFloat(el.getAttribute(name));
}

function ap_name(g) {
	return g.getElementsByTagName("title")[0].textContent.split("\n")[0];
}

// The label that fits `w` px: the name, cut with "..", or nothing.
function ap_fit(name, w) {
	var n = Math.floor((w - 6) / ap.cw);
	if (n < 3)
		return "";
	if (name.length <= n)
		return name;
	return name.substring(0, n - 2) + "..";
}

// Draws box b at pixel offset px, width w (display none when w is null),
// faded when it is an ancestor of the zoomed box (not to scale).
function ap_place(b, px, w, faded) {
	if (w === null) {
		b.g.style.display = "none";
		return;
	}
	b.g.style.display = "";
	b.g.style.opacity = faded ? "0.6" : "";
	b.rect.setAttribute("x", px.toFixed(2));
	b.rect.setAttribute("width", w.toFixed(2));
	b.text.setAttribute("x", (px + 3).toFixed(2));
	b.text.textContent = ap_fit(b.name, w);
}

// z contains b (b is z or below it).
function ap_contains(z, b) {
	var eps = ap.total * 1e-9;
	return b.d >= z.d && b.x >= z.x - eps && b.x + b.v <= z.x + z.v + eps;
}

// Zooms on box z: it and its subtree fill the width, its ancestors span
// it below, everything else is hidden. z = the root resets the zoom.
function zoom(z) {
	for (var i = 0; i < ap.boxes.length; i++) {
		var b = ap.boxes[i];
		if (ap_contains(z, b))
			ap_place(b, ap.pad + (b.x - z.x) / z.v * ap.width, b.v / z.v * ap.width);
		else if (ap_contains(b, z))
			ap_place(b, ap.pad, ap.width, true);
		else
			ap_place(b, 0, null);
	}
	ap.zoomed = z === ap.root ? null : z;
	ap.unzoom.style.display = ap.zoomed ? "" : "none";
}

function unzoom() {
	zoom(ap.root);
}

function ap_set_matched(text) {
	ap.matchedText.textContent = text;
}

// Highlights the boxes whose function matches the regex `term` and prints
// their share of the root: boxes inside another matched box count once.
// Returns the share (0..1), or null for a bad regex.
function search(term) {
	var re;
	try {
		re = new RegExp(term);
	} catch (e) {
		ap_set_matched("Bad regex: " + term);
		return null;
	}
	reset_search();
	var hits = [];
	for (var i = 0; i < ap.boxes.length; i++) {
		var b = ap.boxes[i];
		if (re.test(b.name)) {
			b.rect.setAttribute("fill", "rgb(230,0,230)");
			hits.push(b);
		}
	}
	// preorder: an outer match comes before the ones inside it
	var sum = 0, outer = null;
	for (var k = 0; k < hits.length; k++) {
		if (outer && ap_contains(outer, hits[k]))
			continue;
		outer = hits[k];
		sum += outer.v;
	}
	var share = ap.total > 0 ? sum / ap.total : 0;
	ap.matched = term;
	ap.searchBtn.textContent = "Reset search";
	ap_set_matched("Matched: " + (share * 100).toFixed(2) + "% (" + hits.length +
		       (hits.length == 1 ? " box)" : " boxes)"));
	return share;
}

function reset_search() {
	for (var i = 0; i < ap.boxes.length; i++)
		ap.boxes[i].rect.setAttribute("fill", ap.boxes[i].fill);
	ap.matched = null;
	ap.searchBtn.textContent = "Search";
	ap_set_matched(" ");
}

function search_prompt() {
	if (ap.matched !== null) {
		reset_search();
		return;
	}
	var term = window.prompt("Search for a function (regular expression):", "");
	if (term)
		search(term);
}

function ap_box(g) {
	while (g && !(g.getAttribute && g.getAttribute("class") === "f"))
		g = g.parentNode;
	return g ? g.ap : null;
}

function ap_init() {
	var svg = document.documentElement;
	ap.pad = ap_num(svg, "data-pad");
	ap.width = ap_num(svg, "data-width");
	ap.cw = ap_num(svg, "data-cw");
	ap.details = document.getElementById("details");
	ap.unzoom = document.getElementById("unzoom");
	ap.searchBtn = document.getElementById("search");
	ap.matchedText = document.getElementById("matched");
	var gs = document.getElementById("frames").getElementsByTagName("g");
	for (var i = 0; i < gs.length; i++) {
		var g = gs[i];
		var b = {
			g: g,
			rect: g.getElementsByTagName("rect")[0],
			text: g.getElementsByTagName("text")[0],
			name: ap_name(g),
			x: ap_num(g, "data-x"),
			v: ap_num(g, "data-v"),
			d: ap_num(g, "data-d"),
		};
		b.fill = b.rect.getAttribute("fill");
		g.ap = b;
		ap.boxes.push(b);
	}
	if (!ap.boxes.length)
		return; // nothing drawn
	ap.root = ap.boxes[0];
	ap.total = ap.root.v;
	var frames = document.getElementById("frames");
	frames.addEventListener("click", function (e) {
		var b = ap_box(e.target);
		if (b)
			zoom(b);
	});
	frames.addEventListener("mouseover", function (e) {
		var b = ap_box(e.target);
		if (b)
			ap.details.textContent = b.g.getElementsByTagName("title")[0]
				.textContent.replace(/\n/g, " \u2014 ");
	});
	frames.addEventListener("mouseout", function () {
		ap.details.textContent = " ";
	});
	ap.unzoom.addEventListener("click", unzoom);
	ap.searchBtn.addEventListener("click", search_prompt);
	window.addEventListener("keydown", function (e) {
		if ((e.ctrlKey || e.metaKey) && (e.key === "f" || e.key === "F")) {
			e.preventDefault();
			search_prompt();
		} else if (e.key === "Escape") {
			reset_search();
			unzoom();
		}
	});
}

window.addEventListener("load", ap_init);
