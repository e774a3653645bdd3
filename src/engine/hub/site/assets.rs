//! The site's stylesheet and script (one file each, no external resources).

/// `style.css`: readable from a phone's 360 px to a desktop's 1920 px.
pub const STYLE_CSS: &str = r#"*{box-sizing:border-box}
[hidden]{display:none!important}
html{-webkit-text-size-adjust:100%}
body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1d2127;background:#f3f4f6}
a{color:#1f6fd6}
header.top{background:#fff;border-bottom:1px solid #c9ced6}
header.top nav{max-width:1280px;margin:0 auto;padding:.6rem 1rem;display:flex;flex-wrap:wrap;gap:.4rem 1.2rem;align-items:center}
header.top .brand{font-weight:700;color:#1d2127;text-decoration:none;margin-right:auto}
main{max-width:1280px;margin:0 auto;padding:1rem}
h1{font-size:1.6rem;line-height:1.25;margin:.4rem 0}
h2{font-size:1.25rem;margin:1.6rem 0 .6rem}
.muted{color:#5b626d}
.id{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;color:#5b626d;word-break:break-all}
.tags{display:flex;flex-wrap:wrap;gap:.3rem;padding:0;margin:.4rem 0;list-style:none}
.tag{display:inline-block;padding:.05rem .55rem;border:1px solid #c9ced6;border-radius:999px;background:#fff;font-size:.85rem;text-decoration:none;color:#1d2127}
.tag.on{background:#1f6fd6;border-color:#1f6fd6;color:#fff}
.cards{list-style:none;padding:0;margin:0;display:grid;grid-template-columns:repeat(auto-fill,minmax(300px,1fr));gap:.8rem}
.card{background:#fff;border:1px solid #c9ced6;border-radius:6px;padding:.8rem 1rem;border-top:4px solid #5a8cd6}
.card h2{font-size:1.1rem;margin:0}
.card p{margin:.3rem 0}
.search{width:100%;max-width:32rem;font-size:1rem;padding:.5rem .7rem;border:1px solid #c9ced6;border-radius:6px;margin:.4rem 0}
.panel{background:#fff;border:1px solid #c9ced6;border-radius:6px;padding:.8rem 1rem;margin:.8rem 0;overflow-x:auto}
.meta{display:grid;grid-template-columns:max-content 1fr;gap:.2rem 1rem;margin:.5rem 0}
.meta dt{color:#5b626d}
.meta dd{margin:0}
pre{background:#fafbfc;border:1px solid #e1e4e8;border-radius:6px;padding:.7rem;overflow-x:auto;font-size:.85rem;line-height:1.45}
code{font-family:ui-monospace,SFMono-Regular,Menlo,monospace}
.yaml .k{color:#1f6fd6}.yaml .s{color:#1f8a4c}.yaml .n{color:#a86a00}.yaml .b{color:#8e7cc9}.yaml .c{color:#5b626d;font-style:italic}
.diff .da{color:#1f8a4c;background:#eafbef}.diff .dd{color:#c42b2b;background:#fdeeee}.diff .dh{color:#5b626d}
.diff span{display:block;white-space:pre}
.actions{display:flex;gap:.5rem;flex-wrap:wrap;margin:.4rem 0}
.button{display:inline-block;padding:.35rem .8rem;border:1px solid #c9ced6;border-radius:6px;background:#fff;color:#1d2127;font:inherit;font-size:.9rem;cursor:pointer;text-decoration:none}
.button:hover{background:#eaf1fb}
svg.blocks{width:100%;height:auto;display:block;max-width:900px}
.blocks-wrap{overflow-x:auto}
.blocks-wrap svg{min-width:560px}
table{border-collapse:collapse;width:100%;background:#fff}
table.wide{min-width:760px}
td.model{min-width:15rem;max-width:24rem;font-size:.85rem}
th,td{padding:.4rem .6rem;border-bottom:1px solid #e1e4e8;text-align:left;vertical-align:top}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
th button{all:unset;cursor:pointer;font-weight:700}
th button:focus-visible{outline:2px solid #1f6fd6}
th[aria-sort=ascending] button::after{content:" \25B2"}
th[aria-sort=descending] button::after{content:" \25BC"}
.readme img{max-width:100%}
.readme table{display:block;overflow-x:auto}
footer{max-width:1280px;margin:2rem auto;padding:0 1rem;color:#5b626d;font-size:.85rem}
@media (max-width:600px){body{font-size:15px}main{padding:.6rem}h1{font-size:1.35rem}.meta{grid-template-columns:1fr}.meta dt{margin-top:.3rem}th,td{padding:.35rem .4rem}}
"#;

/// `site.js`: search on the index, Copy buttons, sortable tables (it turns
/// their headings into buttons). The pages work without it (but for search,
/// Copy and sorting, whose controls only it shows).
pub const SITE_JS: &str = r##""use strict";
(function () {
  document.querySelectorAll(".js-only").forEach(function (el) { el.hidden = false; });

  var search = document.getElementById("search");
  if (search) {
    var items = Array.prototype.slice.call(document.querySelectorAll("#cards > li"));
    var count = document.getElementById("count");
    var run = function () {
      var words = search.value.toLowerCase().split(/\s+/).filter(Boolean);
      var shown = 0;
      items.forEach(function (li) {
        var text = li.getAttribute("data-search") || "";
        var ok = words.every(function (w) { return text.indexOf(w) >= 0; });
        li.hidden = !ok;
        if (ok) { shown += 1; }
      });
      if (count) { count.textContent = shown + " of " + items.length + " cards"; }
    };
    search.addEventListener("input", run);
    run();
  }

  document.querySelectorAll("button[data-copy]").forEach(function (button) {
    button.addEventListener("click", function () {
      var source = document.getElementById(button.getAttribute("data-copy"));
      if (!source) { return; }
      var done = function (ok) {
        button.textContent = ok ? "Copied" : "Select the text to copy";
        setTimeout(function () { button.textContent = "Copy"; }, 1500);
      };
      if (navigator.clipboard && navigator.clipboard.writeText) {
        navigator.clipboard.writeText(source.textContent).then(function () { done(true); }, function () { done(false); });
      } else {
        done(false);
      }
    });
  });

  document.querySelectorAll("table.sortable").forEach(function (table) {
    var heads = Array.prototype.slice.call(table.querySelectorAll("thead th"));
    heads.forEach(function (th, col) {
      // a heading becomes a button here: without the script it is text
      var button = document.createElement("button");
      button.type = "button";
      while (th.firstChild) { button.appendChild(th.firstChild); }
      th.appendChild(button);
      button.addEventListener("click", function () {
        var descending = th.getAttribute("aria-sort") !== "descending";
        heads.forEach(function (h) { h.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", descending ? "descending" : "ascending");
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        var key = function (row) {
          var cell = row.cells[col];
          var v = cell.getAttribute("data-value");
          if (v !== null && v !== "" && !isNaN(Number(v))) { return Number(v); }
          return v === "" ? null : cell.textContent.trim().toLowerCase();
        };
        rows.sort(function (a, b) {
          var x = key(a), y = key(b);
          if (x === y) { return 0; }
          if (x === null) { return 1; }
          if (y === null) { return -1; }
          var c = x < y ? -1 : 1;
          return descending ? -c : c;
        });
        rows.forEach(function (row) { body.appendChild(row); });
      });
    });
  });
})();
"##;
