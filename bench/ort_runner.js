#!/usr/bin/env node
// ort_runner.js — time one ONNX model in ONNX Runtime (the npm package
// onnxruntime-node, CPU execution provider), the peer that
// bench/compare_ort.sh sets beside `berth bench`.
//
//   node bench/ort_runner.js MODEL --ort DIR [--input NAME=PATH]...
//        [--threads N] [--warmup N] [--iters N] [--output-dir DIR]
//
// DIR is the folder whose node_modules holds onnxruntime-node (compare_ort.sh
// installs it under ~/.cache/berth/ort/VERSION). Inputs are .npy files
// (float32, float64, float16, int64, int32, int16, int8, uint64, uint32,
// uint16, uint8, bool; C order; a 0-d array is a scalar); every graph input
// must be given. The session uses intraOpNumThreads = interOpNumThreads = N,
// sequential execution and graph optimisation level 'all'; every other
// session option (CPU memory arena, memory pattern, spinning) keeps ORT's
// default. It runs the model --warmup times untimed, then --iters times,
// timing each session.run, and prints one JSON object on stdout:
// median_ms, min_ms, p90_ms, mean_ms, runs_ms (every timed run), load_ms,
// peak_rss_mb (this process, from getrusage) and the settings used. With
// --output-dir it writes each output of the last run to DIR/<name>.npy,
// <name> sanitised as berth's CLI does (every character outside
// [A-Za-z0-9._-] becomes '_').
'use strict';

const fs = require('fs');
const path = require('path');

// ---------------------------------------------------------------------------
// .npy files
// ---------------------------------------------------------------------------

// NPY_TYPES maps a numpy descr (byte order stripped) to ORT's tensor type
// name and the typed array that holds it.
const NPY_TYPES = {
  f4: { type: 'float32', Array: Float32Array },
  f8: { type: 'float64', Array: Float64Array },
  // float16 travels as its raw bits, which ORT's Node.js binding takes
  // (and gives back) as a Uint16Array.
  f2: { type: 'float16', Array: Uint16Array },
  i8: { type: 'int64', Array: BigInt64Array },
  i4: { type: 'int32', Array: Int32Array },
  i2: { type: 'int16', Array: Int16Array },
  i1: { type: 'int8', Array: Int8Array },
  u8: { type: 'uint64', Array: BigUint64Array },
  u4: { type: 'uint32', Array: Uint32Array },
  u2: { type: 'uint16', Array: Uint16Array },
  u1: { type: 'uint8', Array: Uint8Array },
  b1: { type: 'bool', Array: Uint8Array },
};

// readNpy parses a C-order, little-endian .npy file into
// {type, shape, data}, data being a typed array of its own.
function readNpy(file) {
  const buf = fs.readFileSync(file);
  const magic = Buffer.from([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59]); // \x93NUMPY
  if (buf.length < 10 || !buf.subarray(0, 6).equals(magic)) {
    throw new Error(`${file}: not a .npy file`);
  }
  const major = buf[6];
  let headerLen;
  let start;
  if (major === 1) {
    headerLen = buf.readUInt16LE(8);
    start = 10;
  } else if (major === 2 || major === 3) {
    headerLen = buf.readUInt32LE(8);
    start = 12;
  } else {
    throw new Error(`${file}: unsupported .npy version ${major}`);
  }
  const header = buf.subarray(start, start + headerLen).toString('latin1');
  const descr = /'descr'\s*:\s*'([<>|=])([a-z]\d+)'/.exec(header);
  const fortran = /'fortran_order'\s*:\s*(True|False)/.exec(header);
  const shapeM = /'shape'\s*:\s*\(([^)]*)\)/.exec(header);
  if (!descr || !fortran || !shapeM) {
    throw new Error(`${file}: malformed .npy header ${JSON.stringify(header)}`);
  }
  if (descr[1] === '>') {
    throw new Error(`${file}: big-endian data is not supported`);
  }
  if (fortran[1] === 'True') {
    throw new Error(`${file}: Fortran-order data is not supported`);
  }
  const kind = NPY_TYPES[descr[2]];
  if (!kind) {
    throw new Error(`${file}: dtype ${descr[2]} is not supported (want one of ${Object.keys(NPY_TYPES).join(', ')})`);
  }
  const shape = shapeM[1].split(',').map((s) => s.trim()).filter((s) => s !== '').map(Number);
  const count = shape.reduce((a, b) => a * b, 1);
  const off = start + headerLen;
  const bytes = count * kind.Array.BYTES_PER_ELEMENT;
  if (buf.length - off < bytes) {
    throw new Error(`${file}: ${buf.length - off} data bytes for shape [${shape}] (want ${bytes})`);
  }
  // Copy into a fresh buffer: the data offset need not be aligned for the
  // typed array.
  const ab = buf.buffer.slice(buf.byteOffset + off, buf.byteOffset + off + bytes);
  return { type: kind.type, shape, data: new kind.Array(ab) };
}

// writeNpy writes a typed array as a version-1.0 .npy file, the header
// padded so the data starts at a multiple of 64 bytes, as numpy does.
function writeNpy(file, type, shape, data) {
  const descrs = {
    float32: '<f4', float64: '<f8', float16: '<f2', int64: '<i8', int32: '<i4', int16: '<i2', int8: '|i1',
    uint64: '<u8', uint32: '<u4', uint16: '<u2', uint8: '|u1', bool: '|b1',
  };
  const descr = descrs[type];
  if (!descr) {
    throw new Error(`${file}: cannot write tensor type ${type}`);
  }
  const dims = shape.length === 1 ? `${shape[0]},` : shape.join(', ');
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': (${dims}), }`;
  const pad = 64 - ((10 + header.length + 1) % 64);
  header += ' '.repeat(pad % 64) + '\n';
  const pre = Buffer.alloc(10);
  Buffer.from([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0]).copy(pre);
  pre.writeUInt16LE(header.length, 8);
  const body = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  fs.writeFileSync(file, Buffer.concat([pre, Buffer.from(header, 'latin1'), body]));
}

// fileName maps an output name to <name>.npy the way berth's CLI does.
function fileName(name) {
  return name.replace(/[^A-Za-z0-9._-]/g, '_') + '.npy';
}

// ---------------------------------------------------------------------------
// Timing
// ---------------------------------------------------------------------------

// stats returns the median, minimum, 90th percentile and mean, with the
// same definitions as `berth bench`.
function stats(ms) {
  const s = [...ms].sort((a, b) => a - b);
  const n = s.length;
  const median = n % 2 === 1 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
  const p90 = s[Math.min(n - 1, Math.ceil(0.9 * n) - 1)];
  const mean = s.reduce((a, b) => a + b, 0) / n;
  return { median, min: s[0], p90, mean };
}

function usage(msg) {
  process.stderr.write(`ort_runner: ${msg}\n` +
    'usage: node ort_runner.js MODEL --ort DIR [--input NAME=PATH]... [--threads N] [--warmup N] [--iters N] [--output-dir DIR]\n');
  process.exit(2);
}

function parseArgs(argv) {
  const a = { inputs: [], threads: 2, warmup: 3, iters: 20, ort: '', outputDir: '', model: '' };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i];
    const val = () => {
      if (i + 1 >= argv.length) usage(`${k} needs a value`);
      return argv[++i];
    };
    const int = (lo) => {
      const v = val();
      if (!/^\d+$/.test(v) || Number(v) < lo) usage(`${k} wants an integer ≥ ${lo}, not ${JSON.stringify(v)}`);
      return Number(v);
    };
    switch (k) {
      case '--input': a.inputs.push(val()); break;
      case '--threads': a.threads = int(1); break;
      case '--warmup': a.warmup = int(0); break;
      case '--iters': a.iters = int(1); break;
      case '--ort': a.ort = val(); break;
      case '--output-dir': a.outputDir = val(); break;
      default:
        if (k.startsWith('-')) usage(`unknown flag ${k}`);
        if (a.model) usage(`unexpected argument ${k}`);
        a.model = k;
    }
  }
  if (!a.model) usage('missing MODEL');
  if (!a.ort) usage('missing --ort DIR');
  return a;
}

async function main() {
  const a = parseArgs(process.argv.slice(2));
  let ort;
  const pkgDir = path.join(path.resolve(a.ort), 'node_modules', 'onnxruntime-node');
  try {
    ort = require(pkgDir);
  } catch (e) {
    throw new Error(`cannot load onnxruntime-node from ${pkgDir}: ${e.message.split('\n')[0]}`);
  }
  const version = JSON.parse(fs.readFileSync(path.join(pkgDir, 'package.json'), 'utf8')).version;

  const options = {
    executionProviders: ['cpu'],
    intraOpNumThreads: a.threads,
    interOpNumThreads: a.threads,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
  };
  const t0 = process.hrtime.bigint();
  const session = await ort.InferenceSession.create(a.model, options);
  const loadMS = Number(process.hrtime.bigint() - t0) / 1e6;

  const feeds = {};
  for (const spec of a.inputs) {
    const eq = spec.indexOf('=');
    if (eq < 0) usage(`--input wants NAME=PATH, not ${JSON.stringify(spec)}`);
    const name = spec.slice(0, eq);
    if (!session.inputNames.includes(name)) {
      throw new Error(`--input ${spec}: the model has no input ${JSON.stringify(name)} (its inputs: ${session.inputNames.join(', ')})`);
    }
    const t = readNpy(spec.slice(eq + 1));
    feeds[name] = new ort.Tensor(t.type, t.data, t.shape);
  }
  const missing = session.inputNames.filter((n) => !(n in feeds));
  if (missing.length > 0) {
    throw new Error(`missing input(s) ${missing.join(', ')}: pass --input NAME=PATH for each`);
  }

  let out;
  for (let i = 0; i < a.warmup; i++) {
    out = await session.run(feeds);
  }
  const runs = [];
  for (let i = 0; i < a.iters; i++) {
    const s = process.hrtime.bigint();
    out = await session.run(feeds);
    runs.push(Number(process.hrtime.bigint() - s) / 1e6);
  }
  if (a.outputDir) {
    fs.mkdirSync(a.outputDir, { recursive: true });
    for (const name of session.outputNames) {
      const t = out[name];
      writeNpy(path.join(a.outputDir, fileName(name)), t.type, t.dims, t.data);
    }
  }
  const st = stats(runs);
  const res = {
    runtime: 'onnxruntime-node',
    version,
    model: a.model,
    threads: a.threads,
    session_options: options,
    warmup: a.warmup,
    iters: a.iters,
    median_ms: st.median,
    min_ms: st.min,
    p90_ms: st.p90,
    mean_ms: st.mean,
    runs_ms: runs,
    load_ms: loadMS,
    peak_rss_mb: process.resourceUsage().maxRSS / 1024, // KiB → MiB, as berth bench
  };
  await session.release();
  process.stdout.write(JSON.stringify(res) + '\n');
}

if (require.main === module) {
  main().catch((e) => {
    process.stderr.write(`ort_runner: ${e.message.split('\n')[0]}\n`);
    process.exit(1);
  });
}

module.exports = { readNpy, writeNpy, fileName, stats };
