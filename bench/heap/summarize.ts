// Scope: reads a V8 heap snapshot (`.heapsnapshot`, the JSON format of `v8.writeHeapSnapshot`) and
// summarizes what holds the memory of the thread it was taken in: bytes and count by node kind,
// the AsyncLocalStorage tags (`kResourceStore` symbol properties) carried by promises, and the
// bytes of the promises' out-of-object property arrays. bench/heap/run.ts runs it on the worker's
// workflow thread; bench/perf-notes.md §Where the worker's memory goes reads its figures.
// The file is read in chunks by a small state machine, never as one string: a snapshot of a worker
// with 1,000 cached runs is larger than the longest string V8 allows.
import { closeSync, openSync, readSync } from 'node:fs';

/** The parts of a heap snapshot the summary needs (node and edge tables, strings, field layout). */
export interface HeapSnapshotTables {
  nodeFields: string[];
  nodeTypes: string[];
  edgeFields: string[];
  edgeTypes: string[];
  /** Flat node table: `nodeFields.length` numbers per node. */
  nodes: Uint32Array;
  /** Flat edge table: `edgeFields.length` numbers per edge, in node order. */
  edges: Uint32Array;
  strings: string[];
}

/** One row of the by-kind table: bytes (self size, summed) and count of nodes of one kind. */
export interface KindRow {
  /** `<node type> <constructor or name>`; every string is `string (string)`, code is grouped by type. */
  kind: string;
  bytes: number;
  count: number;
}

/** What {@link summarizeHeapSnapshot} reports. Sizes in bytes. */
export interface HeapSummary {
  /** Sum of the self sizes of all nodes, bytes (close to the heap in use at the snapshot). */
  totalBytes: number;
  nodeCount: number;
  /** The `top` kinds by bytes, largest first. */
  byKind: KindRow[];
  /**
   * Who holds the `(object properties)` arrays (the property dictionaries of objects with many or
   * deleted properties), by owner kind, the `top` largest first: bytes and count of the arrays.
   */
  propertyArrayOwners: KindRow[];
  promises: {
    /** Promise objects in the snapshot. */
    count: number;
    /** Promises looked at for tags (every `count / sampled`-th one). */
    sampled: number;
    /**
     * `kResourceStore` symbol properties per sampled promise: one per AsyncLocalStorage that was
     * enabled in the thread when the promise was created (Node 20 `AsyncLocalStorage._propagate`).
     */
    resourceStoreTags: { min: number; median: number; max: number; mean: number };
    /** Bytes of the `(object properties)` arrays that promises hold (their dictionary-mode properties). */
    propertyArrayBytes: number;
    /** Self size of the promise objects themselves, bytes. */
    selfBytes: number;
  };
}

/**
 * Read a `.heapsnapshot` file into typed tables.
 * Throws if the file is not a V8 heap snapshot (no `snapshot.meta` header) or is truncated.
 */
export function readHeapSnapshot(file: string): HeapSnapshotTables {
  const fd = openSync(file, 'r');
  try {
    return parse(fd);
  } finally {
    closeSync(fd);
  }
}

function parse(fd: number): HeapSnapshotTables {
  const chunk = Buffer.allocUnsafe(16 * 2 ** 20);
  let header = '';
  let meta: { meta: Record<string, unknown>; node_count: number; edge_count: number } | undefined;
  let nodes = new Uint32Array(0);
  let edges = new Uint32Array(0);
  const strings: string[] = [];
  // sections: 'header' (until `"nodes":[`), 'between' (a key up to its `[`), 'numbers' (nodes,
  // edges), 'skip' (other number arrays, possibly nested), 'strings'
  let state: 'header' | 'between' | 'numbers' | 'skip' | 'strings' = 'header';
  let between = '';
  let target: Uint32Array | null = null;
  let filled = 0;
  let acc = 0;
  let inNumber = false;
  let depth = 0;
  let inString = false;
  let escaped = false;
  let strParts: Buffer[] = [];
  let strStart = 0;
  let done = false;
  for (;;) {
    const n = readSync(fd, chunk, 0, chunk.length, null);
    if (n === 0) break;
    let i = 0;
    if (state === 'strings' && inString) strStart = 0;
    while (i < n && !done) {
      if (state === 'header') {
        // the header is small (the field layout); collect it as text until the node table opens
        const text = chunk.toString('latin1', i, n);
        const at = (header + text).indexOf('"nodes":[');
        if (at < 0) {
          header += text;
          if (header.length > 2 ** 20) throw new Error('not a V8 heap snapshot: no "nodes" table in the first MiB');
          i = n;
          continue;
        }
        const consumed = at + '"nodes":['.length - header.length;
        const head = (header + text).slice(0, at).replace(/,\s*$/, '');
        meta = (JSON.parse(`${head}}`) as { snapshot: typeof meta }).snapshot;
        if (!meta?.meta) throw new Error('not a V8 heap snapshot: no snapshot.meta');
        const nf = (meta.meta.node_fields as string[]).length;
        const ef = (meta.meta.edge_fields as string[]).length;
        nodes = new Uint32Array(meta.node_count * nf);
        edges = new Uint32Array(meta.edge_count * ef);
        target = nodes;
        filled = 0;
        state = 'numbers';
        i += consumed;
        continue;
      }
      const c = chunk[i]!;
      if (state === 'numbers') {
        if (c >= 48 && c <= 57) {
          acc = acc * 10 + (c - 48);
          inNumber = true;
        } else {
          if (inNumber) {
            if (filled >= target!.length) throw new Error('heap snapshot has more entries than its header counts');
            target![filled++] = acc;
            acc = 0;
            inNumber = false;
          }
          if (c === 93 /* ] */) {
            if (filled !== target!.length) throw new Error(`heap snapshot table has ${filled} of ${target!.length} entries`);
            state = 'between';
            between = '';
          }
        }
      } else if (state === 'between') {
        if (c === 91 /* [ */) {
          const key = /"(\w+)"\s*:\s*$/.exec(between)?.[1];
          if (key === 'edges') {
            target = edges;
            filled = 0;
            state = 'numbers';
          } else if (key === 'strings') {
            state = 'strings';
            inString = false;
          } else {
            state = 'skip';
            depth = 1;
          }
        } else if (c === 125 /* } */ && !between.includes('"')) {
          done = true;
        } else {
          between += String.fromCharCode(c);
        }
      } else if (state === 'skip') {
        if (c === 91) depth++;
        else if (c === 93 && --depth === 0) {
          state = 'between';
          between = '';
        }
      } else {
        // strings: JSON string tokens separated by commas, up to `]`
        if (inString) {
          if (escaped) escaped = false;
          else if (c === 92 /* \ */) escaped = true;
          else if (c === 34 /* " */) {
            strParts.push(Buffer.from(chunk.subarray(strStart, i)));
            strings.push(JSON.parse(`"${Buffer.concat(strParts).toString('utf8')}"`) as string);
            strParts = [];
            inString = false;
          }
        } else if (c === 34) {
          inString = true;
          strStart = i + 1;
        } else if (c === 93) {
          state = 'between';
          between = '';
        }
      }
      i++;
    }
    if (state === 'strings' && inString) strParts.push(Buffer.from(chunk.subarray(strStart, n)));
    if (done) break;
  }
  if (!meta) throw new Error('not a V8 heap snapshot: no snapshot.meta');
  if (filled !== edges.length || state === 'numbers') throw new Error('heap snapshot is truncated');
  const m = meta.meta as { node_fields: string[]; node_types: [string[]]; edge_fields: string[]; edge_types: [string[]] };
  return {
    nodeFields: m.node_fields,
    nodeTypes: m.node_types[0],
    edgeFields: m.edge_fields,
    edgeTypes: m.edge_types[0],
    nodes,
    edges,
    strings,
  };
}

/**
 * Summarize a heap snapshot: totals, the `top` node kinds by bytes, and the promises'
 * AsyncLocalStorage tags (over about `promiseSample` promises, evenly spread) and property arrays.
 */
export function summarizeHeapSnapshot(t: HeapSnapshotTables, opts: { top?: number; promiseSample?: number } = {}): HeapSummary {
  const N = t.nodeFields.length;
  const E = t.edgeFields.length;
  const iType = t.nodeFields.indexOf('type');
  const iName = t.nodeFields.indexOf('name');
  const iSize = t.nodeFields.indexOf('self_size');
  const iEdges = t.nodeFields.indexOf('edge_count');
  const eType = t.edgeFields.indexOf('type');
  const eName = t.edgeFields.indexOf('name_or_index');
  const eTo = t.edgeFields.indexOf('to_node');
  const { nodes, edges, strings: S } = t;
  const objectType = t.nodeTypes.indexOf('object');
  const arrayType = t.nodeTypes.indexOf('array');
  const stringTypes = new Set(['string', 'concatenated string', 'sliced string'].map((s) => t.nodeTypes.indexOf(s)));
  const codeType = t.nodeTypes.indexOf('code');
  const propertyEdge = t.edgeTypes.indexOf('property');
  const internalEdge = t.edgeTypes.indexOf('internal');
  const symbolType = t.nodeTypes.indexOf('symbol');
  const promiseName = S.indexOf('Promise');
  const propsArrayName = S.indexOf('(object properties)');
  const tagString = S.indexOf('kResourceStore');
  const tagEdgeName = S.indexOf('<symbol kResourceStore>');
  const nameString = S.indexOf('name');
  const propertiesString = S.indexOf('properties');
  const firstEdge = new Uint32Array(nodes.length / N + 1);

  const kinds = new Map<string, { bytes: number; count: number }>();
  let totalBytes = 0;
  const promises: number[] = [];
  // the kResourceStore symbols: symbol nodes whose internal `name` edge points at "kResourceStore"
  const tagSymbols = new Set<number>();
  for (let n = 0, e = 0; n < nodes.length; n += N) {
    firstEdge[n / N] = e;
    const ty = nodes[n + iType]!;
    const size = nodes[n + iSize]!;
    totalBytes += size;
    const kind = stringTypes.has(ty)
      ? 'string (string)'
      : ty === codeType
        ? 'code (code)'
        : `${t.nodeTypes[ty]} ${S[nodes[n + iName]!]!.slice(0, 80)}`;
    const row = kinds.get(kind) ?? { bytes: 0, count: 0 };
    row.bytes += size;
    row.count++;
    kinds.set(kind, row);
    if (ty === objectType && nodes[n + iName] === promiseName) promises.push(n);
    if (ty === symbolType && tagString >= 0)
      for (let k = 0, x = e; k < nodes[n + iEdges]!; k++, x += E)
        if (edges[x + eType] === internalEdge && edges[x + eName] === nameString && nodes[edges[x + eTo]! + iName] === tagString)
          tagSymbols.add(n);
    e += nodes[n + iEdges]! * E;
  }

  const owners = new Map<string, { bytes: number; count: number }>();
  for (let n = 0, e = 0; n < nodes.length; n += N) {
    for (let k = 0; k < nodes[n + iEdges]!; k++, e += E) {
      const to = edges[e + eTo]!;
      if (edges[e + eType] !== internalEdge || edges[e + eName] !== propertiesString) continue;
      if (nodes[to + iType] !== arrayType || nodes[to + iName] !== propsArrayName) continue;
      const kind = `${t.nodeTypes[nodes[n + iType]!]} ${S[nodes[n + iName]!]!.slice(0, 80)}`;
      const row = owners.get(kind) ?? { bytes: 0, count: 0 };
      row.bytes += nodes[to + iSize]!;
      row.count++;
      owners.set(kind, row);
    }
  }

  const sampleEvery = Math.max(1, Math.floor(promises.length / (opts.promiseSample ?? 1000)));
  const tags: number[] = [];
  let propertyArrayBytes = 0;
  let selfBytes = 0;
  for (let p = 0; p < promises.length; p++) {
    const n = promises[p]!;
    selfBytes += nodes[n + iSize]!;
    // A promise with many properties keeps them in a dictionary, the `(object properties)` array:
    // its edges reach every key, so each tag counts whatever its store (undefined included). With
    // few properties (fast mode) the keys live in the shared hidden class, and only the tags whose
    // store is an object show, as property edges named `<symbol kResourceStore>`.
    let named = 0;
    let dictionary = -1;
    for (let k = 0, e = firstEdge[n / N]!; k < nodes[n + iEdges]!; k++, e += E) {
      const to = edges[e + eTo]!;
      if (edges[e + eType] === propertyEdge && edges[e + eName] === tagEdgeName) named++;
      if (
        edges[e + eType] === internalEdge &&
        edges[e + eName] === propertiesString &&
        nodes[to + iType] === arrayType &&
        nodes[to + iName] === propsArrayName
      ) {
        propertyArrayBytes += nodes[to + iSize]!;
        dictionary = to;
      }
    }
    if (p % sampleEvery !== 0) continue;
    if (dictionary < 0) {
      tags.push(named);
      continue;
    }
    let keys = 0;
    for (let k = 0, e = firstEdge[dictionary / N]!; k < nodes[dictionary + iEdges]!; k++, e += E)
      if (tagSymbols.has(edges[e + eTo]!)) keys++;
    tags.push(keys);
  }
  tags.sort((a, b) => a - b);
  return {
    totalBytes,
    nodeCount: nodes.length / N,
    byKind: [...kinds]
      .map(([kind, r]) => ({ kind, ...r }))
      .sort((a, b) => b.bytes - a.bytes)
      .slice(0, opts.top ?? 15),
    propertyArrayOwners: [...owners]
      .map(([kind, r]) => ({ kind, ...r }))
      .sort((a, b) => b.bytes - a.bytes)
      .slice(0, opts.top ?? 15),
    promises: {
      count: promises.length,
      sampled: tags.length,
      resourceStoreTags: {
        min: tags[0] ?? 0,
        median: tags[Math.floor(tags.length / 2)] ?? 0,
        max: tags.at(-1) ?? 0,
        mean: tags.length ? Math.round((tags.reduce((a, b) => a + b, 0) / tags.length) * 10) / 10 : 0,
      },
      propertyArrayBytes,
      selfBytes,
    },
  };
}
