// microtrain's backend interface (py_facade/microtrain/backend/__init__.py) on the core compiled
// to wasm32 (CMake preset wasm32-wasi), for MicroPython running in JavaScript.
//
//   const core = await loadCore("build/presets/wasm32-wasi/micro_core/microtrain.wasm");
//   mp.registerJsModule("_microtrain_js", core.module(mp));
//   # MicroPython: microtrain.backend.js_backend wraps _microtrain_js.create()
//
// Every backend object gets its own instance of the module (its own linear memory), laid out
// like a firmware's RAM: the core never allocates, so this file places everything from
// __heap_base up and grows memory to fit:
//
//   __heap_base | scratch: out-params, config, mask | image (16-aligned) | arena (16-aligned)
//               | transfer area (checkpoints, export, properties), placed after the arena per call
//
// JavaScript exceptions do not become Python exceptions, so no method throws for a failing
// core call: each sets `status` (an mt_status, 0 when fine), `message`, `function` and, when
// the failure concerns an op, `op_index` / `op_type`; microtrain.backend.js_backend raises
// MicrotrainError from them.

import { readFile } from "node:fs/promises";

const MT_ABI_VERSION = 11;
const ARENA_ALIGN = 16;
const SCRATCH_BYTES = 1024;         // out-params, mt_train_config, op mask
const MASK_OFFSET = 512;            // trainable_op_mask bytes (MT_MAX_OPS = 256) in scratch
const PAGE = 65536;
const KIND_INPUT = 0;
const KIND_TARGET = 1;
const PROPERTY_INT = 1, PROPERTY_FLOAT = 2, PROPERTY_STRING = 3;

// wasm32 layouts of the public structs (checked against mt_struct_size at load).
const STRUCT_SIZES = { 0: 64, 1: 92, 2: 44, 3: 32, 4: 24, 5: 40, 7: 64, 8: 16 };
const CONFIG_OFFSETS = {
  optimizer: [0, "i32"], loss: [4, "i32"], reduction: [8, "i32"], batch_size: [12, "i32"],
  num_trainable_ops: [16, "i32"], biases_only: [20, "i32"], learning_rate: [24, "f32"],
  beta1: [28, "f32"], beta2: [32, "f32"], epsilon: [36, "f32"], momentum: [40, "f32"],
  weight_decay: [44, "f32"], accumulate_gradients: [52, "i32"], guard_gradients: [56, "i32"],
  proximal_mu: [60, "f32"],
};
const CONFIG_MASK_OFFSET = 48;
const PLAN_FIELDS = [
  "total_bytes", "metadata_bytes", "weight_bytes", "gradient_bytes", "optimizer_bytes",
  "reference_bytes", "activation_bytes", "activation_grad_bytes", "io_bytes", "scratch_bytes", "reuse_bytes",
  "lower_bound_bytes", "num_trained_params", "first_trained_op", "fused_update", "placement_order",
  "int8_activation_bytes",
];

const alignUp = (value, alignment) => Math.ceil(value / alignment) * alignment;

class CoreError extends Error {
  constructor(status, message, fn) {
    super(message);
    this.status = status;
    this.fn = fn;
  }
}

class WasmBackend {
  constructor(wasmModule, toJs) {
    this.instance = new WebAssembly.Instance(wasmModule, {});
    this.core = this.instance.exports;
    this.toJs = toJs;
    this.scratch = alignUp(this.core.__heap_base.value, ARENA_ALIGN);
    this.image = 0;
    this.imageBytes = 0;
    this.arenaEnd = 0;
    this.session = 0;
    this.status = 0;
    this.message = "";
    this.function = "";
    this.op_index = -1;
    this.op_type = 0;
    this.loss = 0;
    if (this.core.mt_abi_version() !== MT_ABI_VERSION) {
      throw new Error(`microtrain.wasm has ABI ${this.core.mt_abi_version()}, this file ${MT_ABI_VERSION}`);
    }
    for (const [which, size] of Object.entries(STRUCT_SIZES)) {
      if (this.core.mt_struct_size(Number(which)) !== size) {
        throw new Error(`struct ${which}: ${this.core.mt_struct_size(Number(which))} bytes in microtrain.wasm, ${size} here`);
      }
    }
  }

  // ------------------------------------------------------------ memory

  view() { return new DataView(this.core.memory.buffer); }
  bytes(pointer, length) { return new Uint8Array(this.core.memory.buffer, pointer, length); }

  reserve(end) {
    const memory = this.core.memory;
    if (end > memory.buffer.byteLength) memory.grow(Math.ceil((end - memory.buffer.byteLength) / PAGE));
  }

  cString(pointer) {
    const bytes = new Uint8Array(this.core.memory.buffer, pointer);
    let end = 0;
    while (bytes[end] !== 0) end++;
    return new TextDecoder().decode(bytes.subarray(0, end));
  }

  check(status, fn) {
    if (status !== 0) throw new CoreError(status, this.cString(this.core.mt_status_str(status)), fn);
  }

  // A Python bytes object (a proxy: iterate it) or a JS Uint8Array, as a Uint8Array.
  asBytes(value) {
    return value instanceof Uint8Array ? value : Uint8Array.from(value);
  }

  // The image at a 16-aligned address after the scratch area; a probe (describe, plan) while
  // a session is open goes to the transfer area instead, so the session's image and arena
  // stay as they are. Returns [address, bytes].
  placeImage(image, probe = false) {
    const bytes = this.asBytes(image);
    const at = probe && this.session ? this.transfer(bytes.length)
                                     : alignUp(this.scratch + SCRATCH_BYTES, ARENA_ALIGN);
    this.reserve(at + bytes.length);
    this.bytes(at, bytes.length).set(bytes);
    if (!(probe && this.session)) {
      this.image = at;
      this.imageBytes = bytes.length;
    }
    return [at, bytes.length];
  }

  // A transfer area of `length` bytes after everything else, for one call.
  transfer(length) {
    const start = alignUp(Math.max(this.arenaEnd, this.image + this.imageBytes), ARENA_ALIGN);
    this.reserve(start + length);
    return start;
  }

  writeConfig(config) {
    const cfg = this.toJs(config);
    const pointer = this.scratch + 256;
    this.core.mt_train_config_init(pointer);
    const view = this.view();
    for (const [name, [offset, type]] of Object.entries(CONFIG_OFFSETS)) {
      if (cfg[name] === undefined || cfg[name] === null) continue;
      if (type === "i32") view.setInt32(pointer + offset, Number(cfg[name]), true);
      else view.setFloat32(pointer + offset, Number(cfg[name]), true);
    }
    const mask = cfg.trainable_op_mask;
    if (mask !== undefined && mask !== null) {
      const bytes = this.bytes(this.scratch + MASK_OFFSET, 256);
      bytes.fill(0);
      mask.forEach((bit, op) => { bytes[op] = bit ? 1 : 0; });
      view.setInt32(pointer + CONFIG_MASK_OFFSET, this.scratch + MASK_OFFSET, true);
    }
    return pointer;
  }

  // Run `body`, turning failures into status/message/function; returns its value or null.
  guard(body) {
    this.status = 0;
    this.message = "";
    this.function = "";
    this.op_index = -1;
    this.op_type = 0;
    try {
      return body();
    } catch (error) {
      this.status = error instanceof CoreError ? error.status : -1;
      this.message = error.message;
      this.function = error instanceof CoreError ? error.fn : "microtrain_wasm.mjs";
      this.noteOp(error);
      return null;
    }
  }

  // The op a failure concerns, from mt_model_diagnose / mt_session_last_error when present.
  noteOp(error) {
    if (!(error instanceof CoreError)) return;
    const detail = this.scratch + 192;   // mt_error_detail (16 bytes)
    if (error.fn.startsWith("mt_session_") || error.fn.startsWith("mt_checkpoint")) {
      if (!this.session) return;
      this.core.mt_session_last_error(this.session, detail);
    } else {
      const [image, imageBytes] = this.probe || [this.image, this.imageBytes];
      if (!image) return;
      this.core.mt_model_diagnose(image, imageBytes, this.lastConfig || 0, detail);
    }
    const v = this.view();
    if (v.getInt32(detail, true) === error.status) {
      this.op_index = v.getInt32(detail + 4, true);
      this.op_type = v.getInt32(detail + 8, true);
    }
  }

  requireSession() {
    if (!this.session) throw new CoreError(-4, "the backend has no session: call open() first", "open");
  }

  // ------------------------------------------------------------ model

  describe(image) {
    return this.guard(() => {
      this.lastConfig = 0;
      const [image_, imageBytes] = this.placeImage(image, true);
      this.probe = [image_, imageBytes];
      const info = this.scratch;          // mt_model_info (32 bytes)
      const index = this.scratch + 128;
      this.check(this.core.mt_model_check(image_, imageBytes, info), "mt_model_check");
      const view = this.view();
      const numTensors = view.getInt32(info + 4, true);
      const numOps = view.getInt32(info + 8, true);
      // the whole tables in one call each, past the probed image (a call per entry validated
      // the whole image per entry): mt_tensor_info 44 bytes, mt_op_info 64
      const tensors = alignUp(image_ + imageBytes, ARENA_ALIGN);
      const opTable = alignUp(tensors + 44 * numTensors, ARENA_ALIGN);
      this.reserve(opTable + 64 * numOps);
      this.check(this.core.mt_model_tensors(image_, imageBytes, 0, numTensors, tensors), "mt_model_tensors");
      this.check(this.core.mt_model_ops(image_, imageBytes, 0, numOps, opTable), "mt_model_ops");
      const readTensor = (i) => {
        const tensor = tensors + 44 * i;
        const v = this.view();
        const ndim = v.getInt32(tensor + 12, true);
        const dims = [];
        for (let d = 0; d < ndim; d++) dims.push(v.getInt32(tensor + 16 + 4 * d, true));
        return { dims, dtype: v.getInt32(tensor + 4, true), flags: v.getInt32(tensor + 8, true),
                 offset: v.getInt32(tensor + 40, true) };
      };
      const io = (isOutput, count) => {
        const entries = [];
        for (let p = 0; p < count; p++) {
          this.check(this.core.mt_model_io(image_, imageBytes, isOutput, p, index), "mt_model_io");
          const t = this.view().getInt32(index, true);
          entries.push({ tensor: t, dims: readTensor(t).dims });
        }
        return entries;
      };
      const params = [];
      const trainable = new Set();
      for (let i = 0; i < numTensors; i++) {
        const t = readTensor(i);
        if ((t.flags & 1) && t.dtype === 1) {      // CONST, F32
          params.push({ tensor: i, dims: t.dims, offset: t.offset, trainable: Boolean(t.flags & 2) });
          if (t.flags & 2) trainable.add(i);
        }
      }
      const ops = [];
      for (let o = 0; o < numOps; o++) {
        const op = opTable + 64 * o;
        const v = this.view();
        const inputs = [], outputs = [];
        for (let k = 0; k < v.getInt32(op + 8, true); k++) inputs.push(v.getInt32(op + 16 + 4 * k, true));
        for (let k = 0; k < v.getInt32(op + 12, true); k++) outputs.push(v.getInt32(op + 32 + 4 * k, true));
        ops.push({ type: v.getInt32(op + 4, true), layer: v.getInt32(op + 56, true), inputs, outputs,
                   weights: inputs.some((i) => trainable.has(i)) });
      }
      return { num_ops: numOps, num_tensors: numTensors, inputs: io(0, view.getInt32(info + 12, true)),
               outputs: io(1, view.getInt32(info + 16, true)), params, ops };
    });
  }

  plan(image, config) {
    return this.guard(() => {
      const [image_, imageBytes] = this.placeImage(image, true);
      this.probe = [image_, imageBytes];
      const plan = this.scratch;          // mt_memory_plan (68 bytes)
      this.lastConfig = this.writeConfig(config);
      this.check(this.core.mt_plan(image_, imageBytes, this.lastConfig, plan), "mt_plan");
      const view = this.view();
      const result = {};
      PLAN_FIELDS.forEach((name, i) => { result[name] = view.getInt32(plan + 4 * i, true); });
      return result;
    });
  }

  // ------------------------------------------------------------ session

  open(image, config) {
    return this.guard(() => {
      this.session = 0;
      this.probe = null;
      this.placeImage(image);
      const cfgPointer = this.writeConfig(config);
      this.lastConfig = cfgPointer;
      const planPointer = this.scratch;
      this.check(this.core.mt_plan(this.image, this.imageBytes, cfgPointer, planPointer), "mt_plan");
      const totalBytes = this.view().getUint32(planPointer, true);
      const arena = alignUp(this.image + this.imageBytes, ARENA_ALIGN);
      this.reserve(arena + totalBytes);
      this.bytes(arena, totalBytes).fill(0);
      this.arena = arena;
      this.arenaBytes = totalBytes;
      this.arenaEnd = arena + totalBytes;
      const sessionOut = this.scratch + 128;
      this.check(this.core.mt_session_init(sessionOut, this.image, this.imageBytes, cfgPointer,
                                           arena, totalBytes), "mt_session_init");
      this.session = this.view().getUint32(sessionOut, true);
      this.batchSize = this.view().getInt32(cfgPointer + 12, true);
      const buffers = (getter) => {
        const list = [];
        for (let p = 0; getter(this.session, p, this.scratch, this.scratch + 4) === 0; p++) {
          const v = this.view();
          list.push({ pointer: v.getUint32(this.scratch, true), count: v.getInt32(this.scratch + 4, true) });
        }
        return list;
      };
      this.inputs = buffers(this.core.mt_session_input);
      // rows are written as floats: an int8 input (image version 3: B·D bytes) is refused
      for (let p = 0; this.core.mt_model_io(this.image, this.imageBytes, 0, p, this.scratch) === 0; p++) {
        const tensor = this.view().getInt32(this.scratch, true);
        if (this.core.mt_model_tensor(this.image, this.imageBytes, tensor, this.scratch + 8) === 0 &&
            this.view().getInt32(this.scratch + 12, true) === 3) {
          throw new Error("input " + p + " is int8 (a quantized image): the wasm backend writes float rows; use the ctypes backend or the C API");
        }
      }
      this.outputs = buffers(this.core.mt_session_output);
      this.check(this.core.mt_session_target(this.session, this.scratch, this.scratch + 4), "mt_session_target");
      const v = this.view();
      this.target = { pointer: v.getUint32(this.scratch, true), count: v.getInt32(this.scratch + 4, true) / 4 };
      this.sparse = this.toJs(config).loss === 3;
      return null;
    });
  }

  close() {
    this.session = 0;
    this.inputs = this.outputs = this.target = null;
    this.arenaEnd = 0;
    return null;
  }

  // ------------------------------------------------------------ rows

  // values: a Python array('f') / array('i') / list (a proxy: iterate it) or a JS array.
  write_rows(kind, position, firstRow, values) {
    return this.guard(() => {
      this.requireSession();
      if (kind !== KIND_INPUT && kind !== KIND_TARGET) throw new Error(`unknown row kind ${kind}`);
      const buffer = kind === KIND_INPUT ? this.inputs[position] : this.target;
      if (!buffer) throw new Error(`no input ${position}`);
      const rowWidth = buffer.count / this.batchSize;
      const Typed = kind === KIND_TARGET && this.sparse ? Int32Array : Float32Array;
      const target = new Typed(this.core.memory.buffer, buffer.pointer, buffer.count);
      let i = firstRow * rowWidth;
      for (const value of values) {
        if (i >= buffer.count) throw new Error(`rows from ${firstRow} overflow a buffer of ${buffer.count} values`);
        target[i++] = value;
      }
      return i - firstRow * rowWidth;
    });
  }

  read_rows(output, n) {
    return this.guard(() => {
      this.requireSession();
      const buffer = this.outputs[output];
      const values = (buffer.count / this.batchSize) * n;
      return Array.from(new Float32Array(this.core.memory.buffer, buffer.pointer, values));
    });
  }

  // ------------------------------------------------------------ steps

  step(name, n) {
    return this.guard(() => {
      this.requireSession();
      const loss = this.scratch + 8;
      this.view().setFloat32(loss, NaN, true);
      const status = this.core[name](this.session, n, loss);
      this.loss = this.view().getFloat32(loss, true);
      this.check(status, name);
      return this.loss;
    });
  }

  train_step(n) { return this.step("mt_session_train_step", n); }
  accumulate(n) { return this.step("mt_session_accumulate", n); }
  eval_step(n) { return this.step("mt_session_eval_step", n); }

  call(name, ...args) {
    return this.guard(() => {
      this.requireSession();
      this.check(this.core[name](this.session, ...args), name);
      return null;
    });
  }

  zero_grad() { return this.call("mt_session_zero_grad"); }
  optimizer_step() { return this.call("mt_session_optimizer_step"); }
  infer(n) { return this.call("mt_session_infer", n); }
  set_learning_rate(rate) { return this.call("mt_session_set_learning_rate", rate); }
  set_epoch(epoch) { return this.call("mt_session_set_epoch", BigInt(epoch)); }

  // ------------------------------------------------------------ weights and state

  // Each weight tensor in mt_session_param order: where it lies, how many floats, trained?
  params() {
    this.requireSession();
    const count = this.scratch;
    this.check(this.core.mt_session_param_count(this.session, count), "mt_session_param_count");
    const list = [];
    const info = this.scratch + 64;      // mt_param_info (24 bytes)
    for (let p = 0; p < this.view().getInt32(count, true); p++) {
      this.check(this.core.mt_session_param(this.session, p, info), "mt_session_param");
      const v = this.view();
      const trained = v.getInt32(info + 8, true);
      list.push({ pointer: v.getUint32(info + (trained ? 16 : 20), true), count: v.getInt32(info + 4, true),
                  trained: Boolean(trained) });
    }
    return list;
  }

  trained() {
    return this.guard(() => this.params().map((p) => p.trained));
  }

  read_param(position) {
    return this.guard(() => {
      const p = this.params()[position];
      return Array.from(new Float32Array(this.core.memory.buffer, p.pointer, p.count));
    });
  }

  write_param(position, values) {
    return this.guard(() => {
      const p = this.params()[position];
      const target = new Float32Array(this.core.memory.buffer, p.pointer, p.count);
      let i = 0;
      for (const value of values) {
        if (i >= p.count) throw new Error(`weight ${position} has ${p.count} values`);
        target[i++] = value;
      }
      if (i !== p.count) throw new Error(`weight ${position} has ${p.count} values, got ${i}`);
      return null;
    });
  }

  weights() {
    return this.guard(() => {
      const params = this.params();
      const out = new Uint8Array(params.reduce((sum, p) => sum + 4 * p.count, 0));
      let offset = 0;
      for (const p of params) {
        out.set(this.bytes(p.pointer, 4 * p.count), offset);
        offset += 4 * p.count;
      }
      return out;
    });
  }

  // zlib.crc32 of weights(), by the core's own mt_crc32_update. Returned as a signed int32
  // (MicroPython's proxy passes JS integers as int32); js_backend masks it.
  weights_crc32() {
    return this.guard(() => {
      let crc = 0;
      for (const p of this.params()) crc = this.core.mt_crc32_update(crc, p.pointer, 4 * p.count);
      return crc | 0;
    });
  }

  get_learning_rate() {
    return this.guard(() => {
      this.requireSession();
      this.check(this.core.mt_session_get_learning_rate(this.session, this.scratch), "mt_session_get_learning_rate");
      return this.view().getFloat32(this.scratch, true);
    });
  }

  base_learning_rate() {
    return this.guard(() => {
      this.requireSession();
      this.check(this.core.mt_session_get_base_learning_rate(this.session, this.scratch),
                 "mt_session_get_base_learning_rate");
      return this.view().getFloat32(this.scratch, true);
    });
  }

  set_reference() {
    return this.guard(() => {
      this.requireSession();
      this.check(this.core.mt_session_set_reference(this.session), "mt_session_set_reference");
    });
  }

  counters() {
    return this.guard(() => {
      this.requireSession();
      this.check(this.core.mt_session_counters(this.session, this.scratch, this.scratch + 8), "mt_session_counters");
      const v = this.view();
      return [Number(v.getBigInt64(this.scratch, true)), Number(v.getBigInt64(this.scratch + 8, true))];
    });
  }

  numeric_errors() {
    return this.guard(() => {
      this.requireSession();
      this.check(this.core.mt_session_numeric_errors(this.session, this.scratch), "mt_session_numeric_errors");
      return Number(this.view().getBigInt64(this.scratch, true));
    });
  }

  // ------------------------------------------------------------ checkpoints and export

  // properties: [[name, kind, value], ...] with int values as decimal strings (64-bit safe).
  // Lays out the mt_property array (40 bytes each on wasm32) and its strings; returns
  // [pointer, count, bytes used].
  placeProperties(properties, start) {
    const list = this.toJs(properties);
    const encoder = new TextEncoder();
    const structs = alignUp(start, 8);
    let strings = structs + 40 * list.length;
    const need = strings + list.reduce((sum, [name, kind, value]) =>
      sum + encoder.encode(name).length + 1 + (kind === PROPERTY_STRING ? encoder.encode(value).length + 1 : 0), 0);
    this.reserve(need);
    const cString = (text) => {
      const bytes = encoder.encode(text);
      this.bytes(strings, bytes.length).set(bytes);
      this.bytes(strings + bytes.length, 1)[0] = 0;
      const pointer = strings;
      strings += bytes.length + 1;
      return pointer;
    };
    list.forEach(([name, kind, value], k) => {
      const entry = structs + 40 * k;
      this.bytes(entry, 40).fill(0);
      const v = this.view();
      v.setUint32(entry, cString(name), true);
      v.setInt32(entry + 4, kind, true);
      if (kind === PROPERTY_INT) v.setBigInt64(entry + 16, BigInt(value), true);
      else if (kind === PROPERTY_FLOAT) v.setFloat64(entry + 24, Number(value), true);
      else v.setUint32(entry + 32, cString(value), true);
    });
    return [structs, list.length, need - start];
  }

  checkpoint_bytes(includeOptimizer, properties) {
    return this.guard(() => {
      this.requireSession();
      const [pointer, count] = this.placeProperties(properties, this.transfer(0));
      this.check(this.core.mt_checkpoint_bytes(this.session, includeOptimizer ? 1 : 0, pointer, count,
                                               this.scratch), "mt_checkpoint_bytes");
      return this.view().getUint32(this.scratch, true);
    });
  }

  checkpoint_save(includeOptimizer, properties) {
    return this.guard(() => {
      this.requireSession();
      const start = this.transfer(0);
      const [pointer, count, used] = this.placeProperties(properties, start);
      this.check(this.core.mt_checkpoint_bytes(this.session, includeOptimizer ? 1 : 0, pointer, count,
                                               this.scratch), "mt_checkpoint_bytes");
      const size = this.view().getUint32(this.scratch, true);
      const out = alignUp(start + used, ARENA_ALIGN);
      this.reserve(out + size);
      this.check(this.core.mt_checkpoint_save_buffer(this.session, includeOptimizer ? 1 : 0, pointer, count,
                                                     out, size, this.scratch), "mt_checkpoint_save");
      return this.bytes(out, this.view().getUint32(this.scratch, true)).slice();
    });
  }

  // Returns [[name, kind, value], ...] (int values as decimal strings).
  checkpoint_load(data) {
    return this.guard(() => {
      this.requireSession();
      const bytes = this.asBytes(data);
      const at = this.transfer(2 * bytes.length + 16);
      this.bytes(at, bytes.length).set(bytes);
      const props = alignUp(at + bytes.length, ARENA_ALIGN);
      this.check(this.core.mt_wasm_checkpoint_load(this.session, at, bytes.length, props, bytes.length,
                                                   this.scratch), "mt_checkpoint_load");
      const used = this.view().getUint32(this.scratch, true);
      const decoder = new TextDecoder();
      const result = [];
      for (let p = props; p < props + used;) {
        const v = this.view();
        const kind = v.getUint8(p), nameBytes = v.getUint8(p + 1), valueBytes = v.getUint16(p + 2, true);
        const name = decoder.decode(this.bytes(p + 4, nameBytes));
        const value = p + 4 + nameBytes;
        if (kind === PROPERTY_INT) result.push([name, kind, v.getBigInt64(value, true).toString()]);
        else if (kind === PROPERTY_FLOAT) result.push([name, kind, v.getFloat64(value, true)]);
        else result.push([name, kind, decoder.decode(this.bytes(value, valueBytes))]);
        p = value + valueBytes;
      }
      return result;
    });
  }

  export_image() {
    return this.guard(() => {
      this.requireSession();
      const out = this.transfer(this.imageBytes);
      this.check(this.core.mt_session_export_image_buffer(this.session, out, this.imageBytes, this.scratch),
                 "mt_session_export_image");
      return this.bytes(out, this.view().getUint32(this.scratch, true)).slice();
    });
  }
}

// The compiled module, and the object to register under "_microtrain_js".
export async function loadCore(wasmPath) {
  const wasmModule = await WebAssembly.compile(await readFile(wasmPath));
  return {
    wasmModule,
    module(mp) {
      return { create: () => new WasmBackend(wasmModule, (value) => mp.PyProxy.toJs(value)) };
    },
  };
}
