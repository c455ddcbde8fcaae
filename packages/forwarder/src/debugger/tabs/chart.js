// @ts-check
/* The charts of "Last hour", drawn as SVG by the page itself: no chart library. */
import { clear, time } from '../dom.js';

const SVG = 'http://www.w3.org/2000/svg';

/** @typedef {import('../api.js').Overview['chart'][number]} Point */
/** @typedef {'accepted' | 'delivered' | 'failed' | 'queueDepth'} Series */

/**
 * @param {string} tag
 * @param {Record<string, string | number>} attributes
 * @param {string | number} [text]
 */
function svg(tag, attributes, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, String(value));
  if (text !== undefined) node.textContent = String(text);
  return node;
}

/**
 * A line per series over the points, drawn by hand.
 * @param {HTMLElement} container
 * @param {readonly Point[]} points
 * @param {ReadonlyArray<readonly [Series, string]>} series each with its color
 */
export function drawChart(container, points, series) {
  const width = 900;
  const height = 200;
  const left = 40;
  const bottom = 20;
  let max = 1;
  for (const p of points) {
    for (const [name] of series) {
      const value = p[name];
      if (value !== null && value > max) max = value;
    }
  }
  /** @param {number} i */
  const x = (i) => left + (i * (width - left - 10)) / Math.max(1, points.length - 1);
  /** @param {number} v */
  const y = (v) => height - bottom - (v * (height - bottom - 10)) / max;
  const chart = svg('svg', { viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-label': series.map(([n]) => n).join(', ') });
  chart.appendChild(svg('line', { x1: left, y1: height - bottom, x2: width - 10, y2: height - bottom, stroke: '#d8dde2' }));
  chart.appendChild(svg('line', { x1: left, y1: 10, x2: left, y2: height - bottom, stroke: '#d8dde2' }));
  chart.appendChild(svg('text', { x: left - 4, y: 14, 'text-anchor': 'end', 'font-size': 11, fill: '#66707a' }, max));
  chart.appendChild(svg('text', { x: left - 4, y: height - bottom, 'text-anchor': 'end', 'font-size': 11, fill: '#66707a' }, 0));
  const first = points[0];
  if (first !== undefined) {
    chart.appendChild(svg('text', { x: left, y: height - 4, 'font-size': 11, fill: '#66707a' }, time(new Date(first.at).toISOString())));
    chart.appendChild(svg('text', { x: width - 10, y: height - 4, 'text-anchor': 'end', 'font-size': 11, fill: '#66707a' }, 'now'));
  }
  for (const [name, color] of series) {
    /** @type {string[]} */
    const coords = [];
    points.forEach((p, i) => {
      const value = p[name];
      if (value !== null) coords.push(`${x(i).toFixed(1)},${y(value).toFixed(1)}`);
    });
    if (coords.length > 0) chart.appendChild(svg('polyline', { points: coords.join(' '), fill: 'none', stroke: color, 'stroke-width': 2, 'data-series': name }));
    // A dot per minute with a value, so that a lone sample shows too.
    for (const xy of coords) {
      const [cx = '', cy = ''] = xy.split(',');
      chart.appendChild(svg('circle', { cx, cy, r: 2.5, fill: color }));
    }
  }
  clear(container);
  container.appendChild(chart);
}
