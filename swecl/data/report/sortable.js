// swecl's report page: click a column's header (or press Enter on it) to sort the table's rows by it, again to reverse.
// Numbers sort as numbers, with their units: $1,234, 57.8%, 1/5 (a ratio), 12 s, 4.5 min, 2.3 h, 0.600 [0.2, 1.0];
// words sort after them either way ("undefined", "?", "-"), in natural order (b-2 before b-10). No network, no library.
var UNITS = { s: 1, min: 60, h: 3600 };
var NUMBER = /^([-+\u2212]?)\$?\s*((?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:e[-+]?\d+)?)\s*(min|s|h|%)?(?=$|[\s\[(])/i;
var COLLATOR = new Intl.Collator(undefined, { numeric: true, sensitivity: "base" });

function sortKey(text) {
  var t = String(text).trim().replace(/^[<>\u2264\u2265~]\s*/, "");
  var ratio = t.match(/^(\d+)\s*\/\s*(\d+)$/);
  if (ratio) return Number(ratio[2]) ? Number(ratio[1]) / Number(ratio[2]) : -1;
  var m = t.match(NUMBER);
  if (!m) return null;
  var sign = m[1] === "-" || m[1] === "\u2212" ? -1 : 1;
  return sign * Number(m[2].replace(/,/g, "")) * (UNITS[(m[3] || "").toLowerCase()] || 1);
}

function sortOrder(texts, descending) {
  var idx = texts.map(function (t, i) { return i; });
  return idx.sort(function (i, j) {
    var a = texts[i], b = texts[j], ka = sortKey(a), kb = sortKey(b);
    if ((ka === null) !== (kb === null)) return ka === null ? 1 : -1;
    var c = ka !== null ? ka - kb : COLLATOR.compare(a.trim(), b.trim());
    return (descending ? -c : c) || i - j;
  });
}

function makeSortable(table) {
  var heads = table.tHead ? table.tHead.rows[0].cells : [];
  Array.prototype.forEach.call(heads, function (th, col) {
    th.tabIndex = 0;
    th.title = "sort by this column";
    var sort = function () {
      var body = table.tBodies[0];
      if (!body) return;
      var rows = Array.prototype.slice.call(body.rows);
      var descending = th.getAttribute("aria-sort") === "ascending";
      Array.prototype.forEach.call(heads, function (h) { h.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", descending ? "descending" : "ascending");
      var texts = rows.map(function (r) { return r.cells[col] ? r.cells[col].textContent : ""; });
      sortOrder(texts, descending).forEach(function (i) { body.appendChild(rows[i]); });
    };
    th.addEventListener("click", sort);
    th.addEventListener("keydown", function (e) {
      if (e.key === "Enter" || e.key === " ") { e.preventDefault(); sort(); }
    });
  });
}

if (typeof document !== "undefined") document.querySelectorAll("table").forEach(makeSortable);
if (typeof module !== "undefined") module.exports = { sortKey: sortKey, sortOrder: sortOrder };
