// Runs in the page on an object result (`this`): a JSON-safe copy that survives cycles,
// DOM nodes, BigInts, Maps, huge arrays and throwing getters. Only ancestors count as
// "seen", so an object referenced twice is not mistaken for a cycle.
function () {
  'use strict';  // keeps a primitive `this` (a Symbol) unboxed
  const MAX_ITEMS = 10000, MAX_DEPTH = 32;
  const stack = new Set();
  const node = (n) => {
    if (n.nodeType !== 1) return '[' + n.nodeName + ']';
    let s = '<' + n.localName;
    if (n.id) s += '#' + n.id;
    if (typeof n.className === 'string' && n.className.trim())
      s += '.' + n.className.trim().split(/\s+/).join('.');
    return s + '>';
  };
  const walk = (v, depth) => {
    const t = typeof v;
    if (v === null || t === 'string' || t === 'boolean') return v;
    if (t === 'number') return Number.isFinite(v) ? v : String(v);
    if (t === 'bigint') return v.toString() + 'n';
    if (t === 'undefined') return null;
    if (t === 'symbol') return v.toString();
    if (t === 'function') return '[Function ' + (v.name || 'anonymous') + ']';
    if (typeof Node !== 'undefined' && v instanceof Node) return node(v);
    if (stack.has(v)) return '[Circular]';
    if (depth >= MAX_DEPTH) return Array.isArray(v) ? '[Array]' : '[Object]';
    stack.add(v);
    try {
      if (v instanceof Error) return {name: v.name, message: v.message, stack: v.stack};
      if (v instanceof Date) return isNaN(v) ? 'Invalid Date' : v.toISOString();
      if (v instanceof RegExp) return v.toString();
      if (v instanceof Map) v = Object.fromEntries(Array.from(v).slice(0, MAX_ITEMS)
                                  .map(([k, x]) => [String(k), x]));
      else if (v instanceof Set) v = Array.from(v);
      else if (typeof NodeList !== 'undefined' &&
               (v instanceof NodeList || v instanceof HTMLCollection)) v = Array.from(v);
      if (Array.isArray(v) || ArrayBuffer.isView(v)) {
        const out = [];
        const n = Math.min(v.length, MAX_ITEMS);
        for (let i = 0; i < n; i++) out.push(walk(v[i], depth + 1));
        if (v.length > n) out.push('… ' + (v.length - n) + ' more items');
        return out;
      }
      const out = {};
      let count = 0;
      for (const k in v) {
        if (count++ >= MAX_ITEMS) { out['…'] = 'more keys'; break; }
        let x;
        try { x = v[k]; } catch (e) { x = '[throws: ' + e + ']'; }
        out[k] = walk(x, depth + 1);
      }
      return out;
    } finally {
      stack.delete(v);
    }
  };
  return walk(this, 0);
}
