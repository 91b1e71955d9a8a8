// The split/merge demo page (lesson_page.hpp): X = arange(12) as [B=1,T=3,D=4], split into
// 2 heads and merged back, drawn from the engine's own tensors; and first the lesson's
// opening, one row of weights against two heads, as a picture with a slider.
//
// What a browser test can drive (these names are a contract; keep them):
//   #single-row-plot       an <svg>: the segment one row of weights [a, 1-a] reaches, the
//                          target (.target), the two heads' result (.two-heads) and the point
//                          for the slider's a (.moving, with data-a and data-x data-y)
//   #row-a                 the slider (range 0..100: a = value / 100)
//   #row-a-output          "a = 0.80: one row gives [0.8, 0.4]; ..." for the slider's a
//   #demo                  the page's root; data-forget-transpose="true|false" (the switch's
//                          state) and data-selected="<value>" (the selected element of X, ""
//                          when none: X holds its flat indices, so the value names the element;
//                          4 when the page opens, as the lesson follows the number 4)
//   #forget-transpose      the switch (checkbox): on = draw reshape(X, [1,2,3,2]) and
//                          merge_heads of it instead of split_heads(X, 2) and merge_heads of that
//   #grid-x, #grid-features, #grid-split, #grid-merged   the four grids, one per step:
//                          X; reshape(X, [1,3,2,2]) (the feature axis split, [B,T,H,d]: one
//                          .position[data-t] per position, each an H×d grid; empty while the
//                          switch is on, as the wrong layout skips it); the heads after the
//                          swap of head and position axes (one .head[data-h] per head, each a
//                          T×d grid); the merge
//   .cell                  a <button> per element, with
//                            data-tensor="x|features|split|merged" (split and merged draw the
//                              wrong layout's tables while the switch is on),
//                            data-b data-t data-i   on x and merged cells (sample, position, feature),
//                            data-b data-t data-h data-j   on features cells,
//                            data-b data-h data-t data-j   on split cells (head, position, feature),
//                            data-value (the number it shows), data-from="b,t,i" (the cell of X
//                              it holds);
//                          clicking one selects the element of X it holds
//   .cell.selected         the clicked cell (exactly one while something is selected)
//   .cell.landed           every other cell holding the same element of X (one per other grid)
//   .cell.question         the cells of head 0, position 1 (the lesson's check question)
//   #where                 a sentence: the selected element's index at each step
//   #head0-position1-split, #head0-position1-wrong   the check question's two answers
//                          ("[4, 5]" and "[2, 3]"), written here from the engine's tensors
//   #head0-position1-current   what head 0, position 1 holds in the layout drawn now
//   #merged-check          "<the merge drawn now> == X: yes" or "... == X: no, ..." 
//   script#lesson-tables   the engine's tables (split_merge_tables) as JSON
//   script#single-row-table   the engine's numbers for the single row (single_row_table)
#include <string>

#include "tinyformer/lesson/lesson_page.hpp"

namespace tinyformer {

namespace {

// A tensor of the demo as the page draws it; see split_merge_tables in lesson_page.hpp.
nlohmann::json table_json(const Tensor& tensor, const Shape& x_shape) {
    const int64_t T = x_shape[1], D = x_shape[2];
    nlohmann::json from = nlohmann::json::array();
    const std::vector<double> values = tensor.to_vector();
    for (double value : values) {
        const int64_t flat = static_cast<int64_t>(value);  // X holds its own flat indices
        from.push_back({flat / (T * D), flat / D % T, flat % D});
    }
    return {{"shape", tensor.shape()}, {"values", values}, {"from", from}};
}

const char* kStyle = R"CSS(
body { font-family: 'DejaVu Sans', 'Noto Sans', sans-serif; margin: 24px; color: #222; }
p { max-width: 1100px; }
h1 { font-size: 22px; } h2 { font-size: 15px; margin: 0 0 8px 0; font-weight: normal; }
code { background: #f3f3f3; padding: 0 3px; }
.stages { display: flex; flex-wrap: wrap; gap: 28px; align-items: flex-start; margin-top: 16px; }
.stage { border: 1px solid #ddd; border-radius: 6px; padding: 12px; }
.heads { display: flex; gap: 16px; }
.head h3 { font-size: 13px; margin: 0 0 4px 0; text-align: center; }
.grid { display: grid; gap: 4px; align-items: center; justify-content: start; }
.label { font-size: 12px; color: #666; text-align: center; }
.cell { width: 6.2em; height: 3.4em; border: 1px solid #999; border-radius: 4px; cursor: pointer;
        font: inherit; padding: 2px; }
.cell .value { display: block; font-size: 18px; font-weight: bold; }
.cell .index { display: block; font-size: 10px; color: #444; white-space: nowrap; }
.cell.from-t0 { background: #e3f2fd; } .cell.from-t1 { background: #e8f5e9; } .cell.from-t2 { background: #fce4ec; }
.cell.question { border: 2px dashed #555; }
.cell.landed { outline: 3px solid #f57c00; background: #ffe0b2; }
.cell.selected { outline: 3px solid #c62828; background: #ffcdd2; }
#where { min-height: 1.5em; font-size: 15px; margin-top: 16px; }
#check-question, .switch { font-size: 15px; }
.switch { display: inline-block; margin-top: 8px; padding: 6px 10px; border: 1px solid #ccc; border-radius: 6px; }
.wrong { color: #c62828; }
.positions { display: flex; gap: 12px; }
.position h3 { font-size: 13px; margin: 0 0 4px 0; text-align: center; }
.skipped { color: #888; font-style: italic; max-width: 16em; }
#single-row { border: 1px solid #ddd; border-radius: 6px; padding: 12px; margin: 16px 0; max-width: 1100px; }
#single-row-plot { background: #fafafa; border: 1px solid #eee; }
#single-row-plot .segment { stroke: #1565c0; stroke-width: 4; }
#single-row-plot .target { fill: none; stroke: #c62828; stroke-width: 3; }
#single-row-plot .two-heads { fill: #2e7d32; }
#single-row-plot .moving { fill: #1565c0; }
#single-row-plot text { font-size: 12px; fill: #333; }
#row-a { width: 320px; vertical-align: middle; }
#row-a-output { font-size: 15px; margin-left: 8px; }
)CSS";

// Draws the three grids from the embedded tables and moves the highlights; computes nothing.
const char* kScript = R"JS(
(function () {
  'use strict';
  var tables = JSON.parse(document.getElementById('lesson-tables').textContent);
  var demo = document.getElementById('demo');
  var forget = document.getElementById('forget-transpose');
  var selected = null;  // {tensor: 'x' | 'split' | 'merged', value: the element of X}

  function splitTable() { return forget.checked ? tables.wrong : tables.split; }
  var singleRow = JSON.parse(document.getElementById('single-row-table').textContent);
  function mergedTable() { return forget.checked ? tables.wrong_merged : tables.merged; }
  function shortNumber(v) { return String(Number(Number(v).toPrecision(6))); }  // 0.19999999999999996 → 0.2
  function listText(values) { return '[' + values.map(shortNumber).join(', ') + ']'; }

  // The indices of flat position n in a row-major shape.
  function unravel(n, shape) {
    var index = [];
    for (var axis = shape.length - 1; axis >= 0; axis--) { index.unshift(n % shape[axis]); n = Math.floor(n / shape[axis]); }
    return index;
  }

  function makeCell(tensor, table, n, names) {
    var index = unravel(n, table.shape), button = document.createElement('button');
    button.type = 'button';
    button.className = 'cell from-t' + table.from[n][1];
    button.dataset.tensor = tensor;
    var label = [];
    for (var k = 0; k < names.length; k++) { button.dataset[names[k]] = index[k]; label.push(names[k] + '=' + index[k]); }
    button.dataset.value = table.values[n];
    button.dataset.from = table.from[n].join(',');
    var value = document.createElement('span'), indices = document.createElement('span');
    value.className = 'value'; value.textContent = table.values[n];
    indices.className = 'index'; indices.textContent = label.join(' ');
    button.appendChild(value); button.appendChild(indices);
    button.title = tensor + '[' + label.join(', ') + '] holds X[' + table.from[n].join(', ') + ']';
    button.addEventListener('click', function () { select(tensor, table.values[n]); });
    return button;
  }

  function makeLabel(text) {
    var div = document.createElement('div');
    div.className = 'label'; div.textContent = text;
    return div;
  }

  // A grid of rows × columns cells from flat positions first .. first + rows·columns − 1.
  function makeGrid(tensor, table, first, rows, columns, names, columnName, rowName) {
    var grid = document.createElement('div');
    grid.className = 'grid';
    grid.style.gridTemplateColumns = 'auto repeat(' + columns + ', 6.2em)';
    grid.appendChild(makeLabel(''));
    for (var c = 0; c < columns; c++) grid.appendChild(makeLabel(columnName + '=' + c));
    for (var r = 0; r < rows; r++) {
      grid.appendChild(makeLabel((rowName || 't') + '=' + r));
      for (var c2 = 0; c2 < columns; c2++) grid.appendChild(makeCell(tensor, table, first + r * columns + c2, names));
    }
    return grid;
  }

  function drawPositions(container, tensor, table) {  // [B=1,T,D]
    container.textContent = '';
    container.appendChild(makeGrid(tensor, table, 0, table.shape[1], table.shape[2], ['b', 't', 'i'], 'i'));
  }

  // A 4-axis table [B=1, blocks, rows, columns] as one titled grid per block: the heads of
  // [B,H,T,d] (rows: positions) or the positions of [B,T,H,d] (rows: heads).
  function drawBlocks(container, tensor, table, kind, names) {
    var blocks = table.shape[1], rows = table.shape[2], columns = table.shape[3];
    var row = document.createElement('div');
    row.className = kind + 's';
    for (var k = 0; k < blocks; k++) {
      var block = document.createElement('div'), title = document.createElement('h3');
      block.className = kind; block.dataset[names[1]] = k;
      title.textContent = kind + ' ' + k;
      block.appendChild(title);
      block.appendChild(makeGrid(tensor, table, k * rows * columns, rows, columns, names, 'j', names[2]));
      row.appendChild(block);
    }
    container.appendChild(row);
  }

  function drawHeads(container, table) {  // [B=1,H,T,d]: a grid per head
    container.textContent = '';
    drawBlocks(container, 'split', table, 'head', ['b', 'h', 't', 'j']);
  }

  function drawFeatures(container) {  // [B=1,T,H,d]: a grid per position (rows: heads)
    container.textContent = '';
    if (forget.checked) {
      var note = document.createElement('p');
      note.className = 'skipped';
      note.textContent = 'skipped: the wrong layout reshapes X straight to [1,2,3,2], with no swap of axes';
      container.appendChild(note);
      return;
    }
    drawBlocks(container, 'features', tables.features, 'position', ['b', 't', 'h', 'j']);
  }

  // Where element `value` of X sits in a table, as "name=index, ...".
  function whereIn(table, value, names) {
    var n = table.values.indexOf(value), index = unravel(n, table.shape), parts = [];
    for (var k = 0; k < names.length; k++) parts.push(names[k] + '=' + index[k]);
    return parts.join(', ');
  }

  function highlight() {
    var cells = document.querySelectorAll('.cell');
    for (var n = 0; n < cells.length; n++) {
      var cell = cells[n], holds = selected !== null && Number(cell.dataset.value) === selected.value;
      cell.classList.toggle('selected', holds && cell.dataset.tensor === selected.tensor);
      cell.classList.toggle('landed', holds && cell.dataset.tensor !== selected.tensor);
      cell.classList.toggle('question', cell.dataset.tensor === 'split' && cell.dataset.h === '0' && cell.dataset.t === '1');
    }
    demo.dataset.selected = selected === null ? '' : String(selected.value);
    var where = document.getElementById('where');
    if (selected === null) { where.textContent = 'Click any cell to see where its number goes.'; return; }
    var v = selected.value;
    where.textContent = 'X[' + whereIn(tables.x, v, ['b', 't', 'i']) + '] = ' + v +
      (forget.checked ? '  →  reshape to [1,2,3,2] without the swap: [' :
       '  →  split the feature axis: [' + whereIn(tables.features, v, ['b', 't', 'h', 'j']) +
       ']  →  swap head and position: [') +
      whereIn(splitTable(), v, ['b', 'h', 't', 'j']) + ']  →  merge_heads: [' +
      whereIn(mergedTable(), v, ['b', 't', 'i']) + ']';
  }

  function select(tensor, value) {
    selected = {tensor: tensor, value: value};
    highlight();
  }

  function draw() {
    var split = splitTable(), merged = mergedTable(), wrong = forget.checked;
    demo.dataset.forgetTranspose = wrong ? 'true' : 'false';
    drawPositions(document.getElementById('grid-x'), 'x', tables.x);
    drawFeatures(document.getElementById('grid-features'));
    drawHeads(document.getElementById('grid-split'), split);
    drawPositions(document.getElementById('grid-merged'), 'merged', merged);
    document.getElementById('split-title').textContent = wrong
      ? 'reshape(X, [1,2,3,2]), the transpose forgotten: [B,H,T,d]'
      : 'split_heads(X, 2), the head and position axes swapped: [B,H,T,d] = [1,2,3,2]';
    document.getElementById('merged-title').textContent = wrong
      ? 'merge_heads(reshape(X, [1,2,3,2])): [B,T,D]'
      : 'merge_heads(split_heads(X, 2)): [B,T,D]';
    var equal = wrong ? tables.wrong_merged_equals_x : tables.merged_equals_x;
    var check = document.getElementById('merged-check');
    check.textContent = (wrong ? 'merge_heads(reshape(X, [1,2,3,2]))' : 'merge_heads(split_heads(X, 2))') +
      ' == X: ' + (equal ? 'yes' : 'no, the numbers come back in the wrong places');
    check.className = equal ? '' : 'wrong';
    var d = split.shape[3];  // head 0, position 1: flat positions d .. 2d-1 of [1,H,T,d]
    document.getElementById('head0-position1-current').textContent = listText(split.values.slice(d, 2 * d));
    highlight();
  }

  // The single row of weights: the engine's 101 outputs for a = 0 .. 1, drawn in the plane of
  // the two output coordinates; the slider picks one of them.
  var plot = document.getElementById('single-row-plot'), svgNS = plot.namespaceURI;  // the page names no URL
  var size = 300, margin = 30, top = 2.2;  // both axes run from 0 to `top`
  function px(x) { return margin + x / top * (size - 2 * margin); }
  function py(y) { return size - margin - y / top * (size - 2 * margin); }
  function shape(name, attributes) {
    var element = document.createElementNS(svgNS, name);
    for (var key in attributes) element.setAttribute(key, attributes[key]);
    plot.appendChild(element);
    return element;
  }
  function label(x, y, text) { shape('text', {x: x, y: y}).textContent = text; }
  shape('line', {x1: px(0), y1: py(0), x2: px(top), y2: py(0), stroke: '#999'});
  shape('line', {x1: px(0), y1: py(0), x2: px(0), y2: py(top), stroke: '#999'});
  label(px(top) - 70, py(0) + 20, 'coordinate 0');
  label(px(0) + 4, py(top) + 4, 'coordinate 1');
  var first = singleRow.segment[0], last = singleRow.segment[singleRow.segment.length - 1];
  shape('line', {'class': 'segment', x1: px(first[0]), y1: py(first[1]), x2: px(last[0]), y2: py(last[1])});
  label(px(first[0]) + 8, py(first[1]), 'a=0 ' + listText(first));
  label(px(last[0]) + 8, py(last[1]) - 6, 'a=1 ' + listText(last));
  var target = singleRow.target, both = singleRow.two_heads.values;
  shape('circle', {'class': 'two-heads', cx: px(both[0]), cy: py(both[1]), r: 5});
  shape('circle', {'class': 'target', cx: px(target[0]), cy: py(target[1]), r: 9});
  label(px(target[0]) + 12, py(target[1]) - 10, 'target ' + listText(target) + ' = two heads');
  var moving = shape('circle', {'class': 'moving', r: 7});
  var slider = document.getElementById('row-a'), output = document.getElementById('row-a-output');
  function moveRow() {
    var step = Number(slider.value), point = singleRow.segment[step], a = singleRow.a_steps[step];
    moving.setAttribute('cx', px(point[0])); moving.setAttribute('cy', py(point[1]));
    moving.dataset.a = a; moving.dataset.x = point[0]; moving.dataset.y = point[1];
    output.textContent = 'a = ' + a.toFixed(2) + ': one row gives ' + listText(point) + '; the target ' +
      listText(target) + ' needs a = ' + singleRow.a_needed.map(shortNumber).join(' for coordinate 0 and a = ') +
      ' for coordinate 1';
  }
  slider.addEventListener('input', moveRow);
  moveRow();

  forget.addEventListener('change', draw);
  draw();
  select('x', 4);  // the lesson follows the number 4 through the steps
})();
)JS";

}  // namespace

nlohmann::json split_merge_tables(const SplitMerge& split_merge) {
    const Shape& x_shape = split_merge.x.shape();
    return {
        {"n_heads", split_merge.split.dim(1)},
        {"x", table_json(split_merge.x, x_shape)},
        {"features", table_json(split_merge.features, x_shape)},
        {"split", table_json(split_merge.split, x_shape)},
        {"merged", table_json(split_merge.merged, x_shape)},
        {"wrong", table_json(split_merge.wrong, x_shape)},
        {"wrong_merged", table_json(split_merge.wrong_merged, x_shape)},
        {"merged_equals_x", split_merge.merged_equals_x},
        {"wrong_merged_equals_x", split_merge.wrong_merged_equals_x},
        {"head0_position1", {{"split", split_merge.split_head0_position1}, {"wrong", split_merge.wrong_head0_position1}}},
    };
}

nlohmann::json single_row_table(const SingleRowLimit& limit) {
    return {{"a_steps", limit.a_steps},       {"segment", limit.segment},   {"target", limit.target},
            {"a_needed", limit.a_needed},     {"closest", limit.closest},   {"distance", limit.distance},
            {"head_weights", limit.head_weights},
            {"two_heads", {{"shape", limit.two_heads.shape()}, {"values", limit.two_heads.to_vector()}}}};
}

// JSON to embed in a <script>: "</" could end the element early; JSON reads "<\/" as the same "</".
static std::string script_safe(std::string json) {
    for (size_t at = json.find("</"); at != std::string::npos; at = json.find("</", at + 3)) json.replace(at, 2, "<\\/");
    return json;
}

std::string split_merge_html() {
    const SplitMerge split_merge = split_merge_example();
    const SingleRowLimit limit = single_row_limit();
    const std::string tables = script_safe(split_merge_tables(split_merge).dump());
    const std::string heads = std::to_string(split_merge.split.dim(1));
    const std::string d = std::to_string(split_merge.split.dim(3));

    std::string html = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                       "<title>split_heads and merge_heads: where does each number go?</title>\n"
                       "<style>" + std::string(kStyle) + "</style>\n</head>\n<body>\n";
    html += "<main id=\"demo\" data-forget-transpose=\"false\" data-selected=\"\">\n";
    html += "<section id=\"single-row\"><h1>Why more than one head?</h1>\n"
            "<p>Two positions hold the values V = [1, 0] and [0, 2]. One row of attention weights [a, 1&minus;a] "
            "(a from 0 to 1) gives [a, 2(1&minus;a)]: the blue segment. The target [0.8, 1.6] (red ring) is off it: "
            "its first coordinate needs a = 0.8, its second a = 0.2. Two heads, each reading one coordinate with "
            "a row of its own (set by hand: [0.8, 0.2] and [0.2, 0.8]), reach it exactly (green). "
            "The numbers are the engine's.</p>\n"
            "<svg id=\"single-row-plot\" width=\"400\" height=\"300\" viewBox=\"0 0 400 300\" role=\"img\" "
            "aria-label=\"the segment one row of weights reaches, and the target off it\"></svg>\n"
            "<p><label>a <input type=\"range\" id=\"row-a\" min=\"0\" max=\"100\" value=\"50\"></label>"
            "<span id=\"row-a-output\"></span></p></section>\n";
    html += "<h1>split_heads and merge_heads: where does each number go?</h1>\n";
    html += "<p>X = <code>arange(12)</code> as [B=1, T=3, D=4]: position t holds features 4t .. 4t+3. "
            "<code>split_heads(X, " + heads + ")</code> gives each of the " + heads + " heads its own " + d +
            " features at every position ([B,H,T,d]); <code>merge_heads</code> puts them back side by side. "
            "Click any cell: the same number is outlined wherever it lands. Colours say which position of X "
            "a number came from. Every layout below was computed by tinyformer's own ops.</p>\n";
    html += "<label class=\"switch\"><input type=\"checkbox\" id=\"forget-transpose\"> forget the transpose "
            "(<code>reshape(X, [1,2,3,2])</code> straight away)</label>\n";
    html += "<p id=\"check-question\">Check question: at head 0, position 1, what does the split hold? "
            "The split holds <strong id=\"head0-position1-split\">" + integers_text(split_merge.split_head0_position1) +
            "</strong>; with the transpose forgotten it holds <strong id=\"head0-position1-wrong\" class=\"wrong\">" +
            integers_text(split_merge.wrong_head0_position1) + "</strong>. Drawn now: "
            "<strong id=\"head0-position1-current\"></strong> (the dashed cells).</p>\n";
    html += "<div class=\"stages\">\n"
            "<section class=\"stage\" id=\"stage-x\"><h2>X: [B,T,D] = " + shape_str(split_merge.x.shape()) +
            "</h2><div id=\"grid-x\"></div></section>\n"
            "<section class=\"stage\" id=\"stage-features\"><h2>reshape(X, [1,3,2,2]), the feature axis split: "
            "[B,T,H,d]</h2><div id=\"grid-features\"></div></section>\n"
            "<section class=\"stage\" id=\"stage-split\"><h2 id=\"split-title\"></h2><div id=\"grid-split\"></div></section>\n"
            "<section class=\"stage\" id=\"stage-merged\"><h2 id=\"merged-title\"></h2><div id=\"grid-merged\"></div>"
            "<p id=\"merged-check\"></p></section>\n</div>\n";
    html += "<p id=\"where\"></p>\n</main>\n";
    html += "<noscript><p>This demo draws its grids with JavaScript; the tables are in the page's source.</p></noscript>\n";
    html += "<script id=\"lesson-tables\" type=\"application/json\">" + tables + "</script>\n";
    html += "<script id=\"single-row-table\" type=\"application/json\">" +
            script_safe(single_row_table(limit).dump()) + "</script>\n";
    html += "<script>" + std::string(kScript) + "</script>\n</body>\n</html>\n";
    return html;
}

}  // namespace tinyformer
